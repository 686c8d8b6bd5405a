"""``sharetxn share-groups`` against a real broker, in-process."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chaos.cli.main import main as sharetxn
from coordinator.launcher import LocalBroker
from tests.interop.test_share_consumer import consumer, poll_until, setup_topic
from tests.share_setup import FAST_LOCKS

pytestmark = pytest.mark.integration


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code = sharetxn(["share-groups", *args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip().startswith(("[", "{")) else out


def reset_offsets(
    capsys: pytest.CaptureFixture[str], bootstrap: str, topic: str, *how: str
) -> tuple[int, Any]:
    """``share-groups --reset-offsets`` of cli-group on ``topic`` (a topic or topic:partition)."""
    where = ("--group", "cli-group", "--topic", topic)
    return run_json(capsys, "--bootstrap-server", bootstrap, "--reset-offsets", *where, *how)


def test_share_groups_cli(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    with LocalBroker(data_dir=tmp_path / "d", config=FAST_LOCKS) as broker:
        b = broker.bootstrap_servers
        topic = setup_topic(b, 2, 10, "cli-group")
        c = consumer(b, "cli-group")
        c.subscribe([topic])
        assert len(poll_until(c, 10)) == 10
        c.commit_sync(10)

        code, groups = run_json(capsys, "--bootstrap-server", b, "--list")
        assert code == 0 and {"group": "cli-group", "state": "Stable"} in groups
        code, members = run_json(
            capsys, "--bootstrap-server", b, "--describe", "--group", "cli-group", "--members"
        )
        assert code == 0 and len(members) == 1
        code, offsets = run_json(
            capsys, "--bootstrap-server", b, "--describe", "--group", "cli-group"
        )
        # As Kafka: the start offset persisted lags one write behind (0: the first write
        # carried the start offset before it), and the lag leaves out the 5 records delivered.
        assert sorted((o["partition"], o["start_offset"], o["lag"]) for o in offsets) == [
            (0, 0, 0),
            (1, 0, 0),
        ]

        # resetting a group with an active member is refused
        code, _ = reset_offsets(capsys, b, topic, "--to-earliest", "--execute")
        assert code == 1
        c.close()

        code, plan = reset_offsets(capsys, b, topic, "--to-earliest", "--dry-run")
        assert code == 0 and [p["new_start_offset"] for p in plan] == [0, 0]
        # without --execute the command only plans; --to-offset is clamped to the log end (5)
        code, plan = reset_offsets(capsys, b, topic, "--to-offset", "999")
        assert code == 0 and [p["new_start_offset"] for p in plan] == [5, 5]
        code, offsets = run_json(
            capsys, "--bootstrap-server", b, "--describe", "--group", "cli-group"
        )
        assert {o["start_offset"] for o in offsets} == {0}  # the plans changed nothing

        code, done = reset_offsets(capsys, b, f"{topic}:0", "--to-earliest", "--execute")
        assert code == 0 and done == [
            {
                "group": "cli-group",
                "topic": topic,
                "partition": 0,
                "new_start_offset": 0,
                "result": "NONE",
            }
        ]
        again = consumer(b, "cli-group")
        again.subscribe([topic])
        redelivered = poll_until(again, 5)
        assert sorted(m.offset() for m in redelivered if m.partition() == 0) == [0, 1, 2, 3, 4]
        again.commit_sync(10)
        again.close()

        code, deleted = run_json(
            capsys,
            "--bootstrap-server",
            b,
            "--delete-offsets",
            "--group",
            "cli-group",
            "--topic",
            topic,
            "--execute",
        )
        assert code == 0 and deleted == [{"topic": topic, "result": "NONE"}]
        code, offsets = run_json(
            capsys, "--bootstrap-server", b, "--describe", "--group", "cli-group"
        )
        assert offsets == [] or all(o["start_offset"] == -1 for o in offsets)

        code, plan = run_json(
            capsys, "--bootstrap-server", b, "--delete", "--group", "cli-group", "--dry-run"
        )
        assert code == 0 and plan[0]["would_delete"] is True
        code, result = run_json(
            capsys, "--bootstrap-server", b, "--delete", "--group", "cli-group", "--execute"
        )
        assert code == 0 and result == [{"group": "cli-group", "result": "NONE"}]
        code, groups = run_json(capsys, "--bootstrap-server", b, "--list")
        assert all(g["group"] != "cli-group" for g in groups)
