"""Every ``sharetxn`` command answers like Kafka's tools (issue 30, item 8), run as a user
would: ``--version`` everywhere, one exit code (66) for an unknown topic, partition, group or
transactional id, unknown partitions failing at once, dry runs reporting what ``--execute``
would meet, per-item failures on stderr, ``--execute`` in ``txn`` too, a reset creating a new
share group, and kafka-configs.sh's ``--describe`` form."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from coordinator.launcher import LocalBroker
from tests.sharetxn_cli import run_cli
from txn.exit_codes import ExitCode

pytestmark = pytest.mark.integration

NOT_FOUND = ExitCode.NOT_FOUND


def sharetxn(b: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, "--bootstrap-server", b, timeout=90)


def as_json(b: str, *args: str) -> tuple[int, Any, list[dict[str, Any]]]:
    """Exit code, the JSON on stdout (or None), the JSON error lines on stderr."""
    done = sharetxn(b, *args, "--json")
    out = json.loads(done.stdout) if done.stdout.strip() else None
    errors = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    return done.returncode, out, errors


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A broker with ``orders`` (3 partitions, 6 records)."""
    data = tmp_path_factory.mktemp("cli-conventions") / "d"
    with LocalBroker(data_dir=data, config={"group.initial.rebalance.delay.ms": "0"}) as broker:
        b = broker.bootstrap_servers
        created = sharetxn(b, "topics", "--create", "--topic", "orders", "--partitions", "3")
        assert created.returncode == 0, created.stderr
        producer = Producer({"bootstrap.servers": b})
        for i in range(6):
            producer.produce("orders", b"x", partition=i % 3)
        producer.flush(10)
        yield b


def test_version_on_every_command() -> None:
    for command in (
        [],
        ["broker"],
        ["topics"],
        ["configs"],
        ["consumer-groups"],
        ["share-groups"],
        ["txn"],
        ["txn", "describe"],
        ["recover"],
        ["sink"],
        ["chaos"],
        ["demo"],
        ["copy-demo"],
    ):
        done = run_cli(*command, "--version", timeout=60)
        assert done.returncode == 0, (command, done.stderr)
        assert done.stdout.startswith("sharetxn "), command


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("topics", "--describe", "--topic", "nosuch"), "does not exist"),
        (("topics", "--delete", "--topic", "nosuch"), "does not exist"),
        (("configs", "--entity-type", "topics", "--entity-name", "nosuch", "--describe"), "nosuch"),
        (("consumer-groups", "--describe", "--group", "nosuch"), "does not exist"),
        (
            (
                "consumer-groups",
                "--reset-offsets",
                "--group",
                "g",
                "--to-earliest",
                "--topic",
                "nosuch",
            ),
            "does not exist",
        ),
        (("share-groups", "--describe", "--group", "nosuch"), "GROUP_ID_NOT_FOUND"),
        (
            (
                "share-groups",
                "--reset-offsets",
                "--group",
                "g",
                "--execute",
                "--to-earliest",
                "--topic",
                "nosuch",
            ),
            "does not exist",
        ),
        (("txn", "describe", "--transactional-id", "nosuch"), "not found"),
        (("txn", "describe-producers", "--topic", "nosuch", "--partition", "0"), "nosuch"),
        (("txn", "find-hanging", "--topic", "nosuch"), "nosuch"),
        (
            ("txn", "abort", "--transactional-id", "nosuch", "--producer-id", "1", "--epoch", "0"),
            "not found",
        ),
    ],
)
def test_not_found_is_one_exit_code(cluster: str, args: tuple[str, ...], said: str) -> None:
    done = sharetxn(cluster, *args)
    assert done.returncode == NOT_FOUND, done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr
    code, _, errors = as_json(cluster, *args)
    assert code == NOT_FOUND and errors[-1]["exit_code"] == NOT_FOUND


@pytest.mark.parametrize(
    "args",
    [
        ("consumer-groups", "--reset-offsets", "--group", "g", "--to-earliest"),
        ("consumer-groups", "--reset-offsets", "--group", "g", "--to-earliest", "--execute"),
        ("consumer-groups", "--delete-offsets", "--group", "g", "--execute"),
        ("share-groups", "--reset-offsets", "--group", "g", "--to-earliest"),
        ("share-groups", "--reset-offsets", "--group", "g", "--to-earliest", "--execute"),
    ],
)
def test_unknown_partition_fails_at_once(cluster: str, args: tuple[str, ...]) -> None:
    started = time.monotonic()
    done = sharetxn(cluster, *args, "--topic", "orders:1,7")
    assert time.monotonic() - started < 15  # no retries until a timeout
    assert done.returncode == NOT_FOUND, done.stderr
    assert "no partition 7" in done.stderr


def test_delete_offsets_plan_reports_what_execute_would(cluster: str) -> None:
    delete = ("consumer-groups", "--delete-offsets", "--group", "nosuch", "--topic", "orders")
    plan, done = sharetxn(cluster, *delete), sharetxn(cluster, *delete, "--execute")
    assert plan.returncode == done.returncode == NOT_FOUND
    assert "The group id does not exist" in plan.stderr
    assert "The group id does not exist" in done.stderr
    assert "would delete" not in plan.stdout

    # as on Kafka 4.4: DeleteShareGroupOffsets of an unknown group is GROUP_ID_NOT_FOUND
    delete = ("share-groups", "--delete-offsets", "--group", "nosuch", "--topic", "orders")
    plan, done = sharetxn(cluster, *delete), sharetxn(cluster, *delete, "--execute")
    assert plan.returncode == done.returncode == NOT_FOUND, (plan.stderr, done.stderr)
    assert "Group nosuch not found" in plan.stderr and "Group nosuch not found" in done.stderr

    for group_tool in ("consumer-groups", "share-groups"):
        gone = (group_tool, "--delete", "--group", "nosuch")
        plan, done = sharetxn(cluster, *gone), sharetxn(cluster, *gone, "--execute")
        assert plan.returncode == done.returncode == NOT_FOUND, (plan.stderr, done.stderr)
        assert "group nosuch: GROUP_ID_NOT_FOUND" in plan.stderr
        assert "group nosuch: GROUP_ID_NOT_FOUND" in done.stderr


def test_per_item_failures_on_stderr(cluster: str) -> None:
    shrink = sharetxn(cluster, "topics", "--alter", "--topic", "orders", "--partitions", "2")
    assert shrink.returncode == ExitCode.FAILED
    assert "INVALID_PARTITIONS" in shrink.stdout and "INVALID_PARTITIONS" in shrink.stderr
    code, result, errors = as_json(cluster, "topics", "--create", "--topic", "orders")
    assert code == ExitCode.FAILED and result["result"] == "TOPIC_ALREADY_EXISTS"
    assert "TOPIC_ALREADY_EXISTS" in errors[0]["error"]
    code, rows, errors = as_json(cluster, "consumer-groups", "--delete", "--group", "nosuch")
    assert code == NOT_FOUND and rows[0]["would_delete"] is False
    assert errors == [{"error": "group nosuch: GROUP_ID_NOT_FOUND", "exit_code": NOT_FOUND}]


def test_share_group_reset_creates_a_new_group(cluster: str) -> None:
    reset = ("share-groups", "--reset-offsets", "--group", "fresh", "--topic", "orders")
    code, plan, _ = as_json(cluster, *reset, "--to-earliest")
    assert code == 0 and [p["new_start_offset"] for p in plan] == [0, 0, 0]
    assert as_json(cluster, "share-groups", "--list")[1] == []  # the plan created nothing
    code, done, _ = as_json(cluster, *reset, "--to-latest", "--execute")
    assert code == 0 and {r["result"] for r in done} == {"NONE"}
    # as Kafka 4.4's AlterShareGroupOffsets: the group exists now, empty, at the offsets
    listed = as_json(cluster, "share-groups", "--list")[1]
    assert listed == [{"group": "fresh", "state": "Empty"}]
    code, offsets, _ = as_json(cluster, "share-groups", "--describe", "--group", "fresh")
    assert code == 0
    assert sorted((o["partition"], o["start_offset"]) for o in offsets) == [(0, 2), (1, 2), (2, 2)]
    assert (
        sharetxn(cluster, "share-groups", "--delete", "--group", "fresh", "--execute").returncode
        == 0
    )


def test_configs_describe_like_kafka_configs(cluster: str) -> None:
    entity = ("configs", "--entity-type", "groups", "--entity-name", "quiet")
    empty = sharetxn(cluster, *entity, "--describe")
    assert empty.returncode == 0 and empty.stdout == "Dynamic configs for group quiet are:\n"
    altered = sharetxn(
        cluster, *entity, "--alter", "--add-config", "share.auto.offset.reset=earliest"
    )
    assert altered.stdout == "Completed updating config for group quiet.\n"
    shown = sharetxn(cluster, *entity, "--describe").stdout.splitlines()
    assert shown[0] == "Dynamic configs for group quiet are:"
    assert shown[1].startswith("  share.auto.offset.reset=earliest sensitive=false synonyms={")


def test_txn_confirms_with_execute(cluster: str, tmp_path: Path) -> None:
    producer = Producer({"bootstrap.servers": cluster, "transactional.id": "stuck"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("orders", b"open", partition=0)
    producer.flush(10)  # left open: an Ongoing transaction
    code, described, _ = as_json(cluster, "txn", "describe", "--transactional-id", "stuck")
    assert code == ExitCode.FOUND and described["transaction"]["state"] == "Ongoing"
    ids = (
        "--transactional-id",
        "stuck",
        "--producer-id",
        str(described["transaction"]["producer_id"]),
        "--epoch",
        str(described["transaction"]["producer_epoch"]),
    )
    more = ("--scan-interval", "0.2", "--operator", "tester", "--audit-log", str(tmp_path / "a"))
    plan = sharetxn(cluster, "txn", "abort", *ids, *more)
    assert plan.returncode == ExitCode.FOUND and "re-run with --execute to act" in plan.stdout
    done = sharetxn(cluster, "txn", "abort", *ids, *more, "--execute")
    assert done.returncode == ExitCode.ACTED, done.stdout + done.stderr
    help_text = run_cli("txn", "abort", "--help", timeout=60).stdout
    assert "--execute, --apply" in help_text
