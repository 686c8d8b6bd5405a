"""``sharetxn consumer-groups`` as a real command against a real broker."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from coordinator.launcher import LocalBroker
from tests.integration.test_admin_cli import sharetxn
from txn.exit_codes import ExitCode

pytestmark = pytest.mark.integration


def cg(b: str, *args: str) -> tuple[int, Any, str]:
    done = sharetxn("consumer-groups", *args, "--bootstrap-server", b, "--json")
    out = json.loads(done.stdout) if done.stdout.strip() else None
    return done.returncode, out, done.stderr


def test_consumer_groups_cli(tmp_path: Path) -> None:
    with LocalBroker(
        data_dir=tmp_path / "d", config={"group.initial.rebalance.delay.ms": "0"}
    ) as broker:
        b = broker.bootstrap_servers
        assert (
            sharetxn(
                "topics",
                "--create",
                "--topic",
                "orders",
                "--partitions",
                "2",
                "--bootstrap-server",
                b,
            ).returncode
            == 0
        )
        producer = Producer({"bootstrap.servers": b})
        for i in range(10):
            producer.produce("orders", b"x", partition=i % 2)
        producer.flush(10)
        consumer = Consumer(
            {
                "bootstrap.servers": b,
                "group.id": "readers",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        consumer.subscribe(["orders"])
        seen, deadline = 0, time.monotonic() + 30
        while seen < 10 and time.monotonic() < deadline:
            m = consumer.poll(0.3)
            seen += m is not None and m.error() is None
        consumer.commit(asynchronous=False)

        code, groups, _ = cg(b, "--list", "--state")
        assert code == 0 and groups == [{"group": "readers", "state": "Stable"}]
        code, offsets, _ = cg(b, "--describe", "--group", "readers")
        assert [(o["partition"], o["current_offset"], o["lag"]) for o in offsets] == [
            (0, 5, 0),
            (1, 5, 0),
        ]
        assert all(o["consumer_id"] for o in offsets)
        code, members, _ = cg(b, "--describe", "--group", "readers", "--members")
        assert code == 0 and members[0]["partitions"] == 2

        code, _, err = cg(
            b, "--reset-offsets", "--group", "readers", "--topic", "orders", "--to-earliest"
        )
        assert code == ExitCode.FAILED and "inactive" in json.loads(err)["error"]
        code, _, err = cg(
            b, "--delete-offsets", "--group", "readers", "--topic", "orders", "--execute"
        )
        assert code == ExitCode.FAILED  # subscribed: KIP-496 refuses
        consumer.close()
        code, rows, _ = cg(
            b,
            "--delete-offsets",
            "--group",
            "readers",
            "--topic",
            "orders:0",
            "--topic",
            "missing",
            "--execute",
        )
        assert code == ExitCode.NOT_FOUND  # the one failure: an unknown topic
        assert rows == [
            {
                "partition": "Not Provided",
                "status": "Error: This server does not host this topic-partition.",
                "topic": "missing",
            },
            {"partition": 0, "status": "Successful", "topic": "orders"},
        ]
        code, plan, _ = cg(
            b, "--reset-offsets", "--group", "readers", "--topic", "orders", "--to-offset", "999"
        )
        assert code == 0 and [p["new_offset"] for p in plan] == [5, 5]  # clamped; a plan only
        code, offsets, _ = cg(b, "--describe", "--group", "readers")
        assert [o["current_offset"] for o in offsets] == [5]  # partition 1 only: 0 was deleted
        code, done, _ = cg(
            b,
            "--reset-offsets",
            "--group",
            "readers",
            "--topic",
            "orders",
            "--shift-by",
            "-2",
            "--execute",
        )
        assert code == 0 and [(r["partition"], r["new_offset"], r["result"]) for r in done] == [
            (0, 3, "NONE"),
            (1, 3, "NONE"),
        ]  # partition 0 had no offset: from the end
        code, plan, _ = cg(b, "--delete", "--group", "readers")
        assert code == 0 and plan[0]["would_delete"] is True
        code, done, _ = cg(b, "--delete", "--group", "readers", "--execute")
        assert code == 0 and done == [{"group": "readers", "result": "NONE"}]
        code, _, err = cg(b, "--describe", "--group", "readers")
        assert code == ExitCode.NOT_FOUND and "does not exist" in err
