"""``sharetxn topics`` / ``sharetxn configs`` and the conventions every command shares,
run as real commands against a real broker: exit codes, stderr and JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from coordinator.launcher import LocalBroker
from tests.integration.test_internal_topics import connect, metadata
from tests.sharetxn_cli import run_cli
from txn.exit_codes import ExitCode

pytestmark = pytest.mark.integration


def sharetxn(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout=90)


def configs(b: str, entity_type: str, name: str, *action: str) -> tuple[str, ...]:
    """The arguments of ``sharetxn configs`` on one entity of the broker at ``b``."""
    entity = ("--entity-type", entity_type, "--entity-name", name)
    return ("configs", *entity, *action, "--bootstrap-server", b)


def topics(b: str, *args: str) -> tuple[str, ...]:
    """The arguments of ``sharetxn topics ARGS`` against the broker at ``b``."""
    return ("topics", *args, "--bootstrap-server", b)


def alter(b: str, entity_type: str, name: str, *changes: str) -> subprocess.CompletedProcess[str]:
    """``sharetxn configs --alter CHANGES`` on one entity."""
    return sharetxn(*configs(b, entity_type, name, "--alter", *changes))


def described(b: str, entity_type: str, name: str) -> dict[str, str]:
    """The configs ``sharetxn configs --describe --json`` shows for one entity, by name."""
    shown = ok_json(*configs(b, entity_type, name, "--describe"))
    return {c["name"]: c["value"] for c in shown["configs"]}


def ok_json(*args: str) -> Any:
    done = sharetxn(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_topics_lifecycle(broker: LocalBroker) -> None:
    b = broker.bootstrap_servers
    create = ("--create", "--topic", "orders", "--partitions", "3")
    created = ok_json(*topics(b, *create, "--config", "cleanup.policy=delete"))
    assert created["result"] == "NONE"
    again = sharetxn("topics", "--create", "--topic", "orders", "--bootstrap-server", b)
    assert again.returncode == ExitCode.FAILED
    assert "TOPIC_ALREADY_EXISTS" in again.stderr and again.stdout == ""
    quiet = sharetxn(
        "topics", "--create", "--topic", "orders", "--if-not-exists", "--bootstrap-server", b
    )
    assert quiet.returncode == 0

    dry = ok_json("topics", "--create", "--topic", "planned", "--dry-run", "--bootstrap-server", b)
    assert dry["dry_run"] is True
    assert "planned" not in ok_json("topics", "--list", "--bootstrap-server", b)

    # options after the action, the way Kafka's tools take them
    (described,) = ok_json("topics", "--describe", "--topic", "orders", "--bootstrap-server", b)
    assert described["partition_count"] == 3
    assert described["configs"] == {"cleanup.policy": "delete"}
    assert described["cleanup_policy"] == "delete"
    assert [p["log_end_offset"] for p in described["partitions"]] == [0, 0, 0]
    assert [p["size_bytes"] for p in described["partitions"]] == [0, 0, 0]

    altered = sharetxn(
        "topics", "--alter", "--topic", "orders", "--partitions", "5", "--bootstrap-server", b
    )
    assert altered.returncode == 0, altered.stderr
    (described,) = ok_json("topics", "--describe", "--topic", "orders", "--bootstrap-server", b)
    assert described["partition_count"] == 5
    shrink = sharetxn(
        "topics", "--alter", "--topic", "orders", "--partitions", "2", "--bootstrap-server", b
    )
    assert shrink.returncode == ExitCode.FAILED and "INVALID_PARTITIONS" in shrink.stdout
    assert "topic orders: INVALID_PARTITIONS" in shrink.stderr  # each failure on stderr too

    illegal = sharetxn("topics", "--create", "--topic", "bad name", "--bootstrap-server", b)
    assert illegal.returncode == ExitCode.FAILED and "Topic name is invalid" in illegal.stderr

    deleted = ok_json("topics", "--delete", "--topic", "ord.*", "--bootstrap-server", b)
    assert deleted == [{"message": "", "result": "NONE", "topic": "orders"}]
    missing = sharetxn("topics", "--delete", "--topic", "orders", "--bootstrap-server", b)
    assert missing.returncode == ExitCode.NOT_FOUND
    assert "does not exist" in missing.stderr
    assert (
        sharetxn(
            "topics", "--delete", "--topic", "orders", "--if-exists", "--bootstrap-server", b
        ).returncode
        == 0
    )


def test_group_configs(broker: LocalBroker) -> None:
    b = broker.bootstrap_servers
    done = alter(
        b,
        "groups",
        "g1",
        "--add-config",
        "share.auto.offset.reset=earliest,share.record.lock.duration.ms=15000",
    )
    assert done.returncode == 0, done.stderr
    assert "Completed updating config for group g1." in done.stdout
    assert described(b, "groups", "g1") == {
        "share.auto.offset.reset": "earliest",
        "share.record.lock.duration.ms": "15000",
    }
    bad = sharetxn(
        *configs(b, "groups", "g1", "--alter", "--add-config", "share.record.lock.duration.ms=1"),
        "--json",
    )
    assert bad.returncode == ExitCode.FAILED
    assert json.loads(bad.stderr)["exit_code"] == ExitCode.FAILED
    removed = alter(b, "groups", "g1", "--delete-config", "share.auto.offset.reset")
    assert removed.returncode == 0, removed.stderr
    assert list(described(b, "groups", "g1")) == ["share.record.lock.duration.ms"]
    everything = ok_json(*configs(b, "brokers", "1", "--describe", "--all"))
    assert any(c["name"] == "transaction.max.timeout.ms" for c in everything["configs"])


def test_dynamic_broker_configs(broker: LocalBroker) -> None:
    """``--entity-type brokers --alter``: this broker's and the cluster default's dynamic
    configs, as kafka-configs.sh sets Kafka's."""
    b = broker.bootstrap_servers
    done = alter(b, "brokers", "1", "--add-config", "log.retention.ms=100000")
    assert done.returncode == 0, done.stderr
    assert described(b, "brokers", "1") == {"log.retention.ms": "100000"}
    default = ("configs", "--entity-type", "brokers", "--entity-default", "--bootstrap-server", b)
    assert (
        sharetxn(*default, "--alter", "--add-config", "log.segment.bytes=2097152").returncode == 0
    )
    shown = {c["name"]: c["value"] for c in ok_json(*default, "--describe")["configs"]}
    assert shown == {"log.segment.bytes": "2097152", "min.insync.replicas": "1"}
    read_only = alter(b, "brokers", "1", "--add-config", "num.partitions=3")
    assert read_only.returncode == ExitCode.FAILED
    assert "Cannot update these configs dynamically: [num.partitions]" in read_only.stderr
    assert alter(b, "brokers", "1", "--delete-config", "log.retention.ms").returncode == 0
    assert sharetxn(*default, "--alter", "--delete-config", "log.segment.bytes").returncode == 0
    assert described(b, "brokers", "1") == {}


def test_broker_logger_levels(broker: LocalBroker) -> None:
    """``--entity-type broker-loggers``: the broker's loggers and their levels, as
    kafka-configs.sh shows and changes Kafka's."""
    b = broker.bootstrap_servers
    levels = described(b, "broker-loggers", "1")
    assert levels["root"] == "INFO" and levels["sharetxn.partition"] == "INFO"
    done = alter(b, "broker-loggers", "1", "--add-config", "sharetxn.partition=DEBUG")
    assert done.returncode == 0, done.stderr
    assert "Completed updating config for broker-logger 1." in done.stdout
    assert described(b, "broker-loggers", "1")["sharetxn.partition"] == "DEBUG"
    shown = sharetxn(*configs(b, "broker-loggers", "1", "--describe")).stdout
    assert "  sharetxn.partition=DEBUG sensitive=false synonyms={}" in shown.splitlines()
    bad = alter(b, "broker-loggers", "1", "--add-config", "sharetxn.partition=LOUD")
    assert bad.returncode == ExitCode.FAILED
    assert "Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN" in bad.stderr
    missing = alter(b, "broker-loggers", "1", "--add-config", "no.such.logger=DEBUG")
    assert "Logger no.such.logger does not exist!" in missing.stderr
    reset = alter(b, "broker-loggers", "1", "--delete-config", "sharetxn.partition")
    assert reset.returncode == 0, reset.stderr
    assert described(b, "broker-loggers", "1")["sharetxn.partition"] == "INFO"


def test_topics_list_and_describe_internal_topics(broker: LocalBroker) -> None:
    """As kafka-topics.sh: internal topics are listed unless --exclude-internal."""
    b = broker.bootstrap_servers
    assert ok_json(*topics(b, "--create", "--topic", "orders"))["result"] == "NONE"
    internal = ["__consumer_offsets", "__share_group_state", "__transaction_state"]
    conn = connect(broker)  # Kafka creates its internal topics on first use: use them
    try:
        metadata(conn, internal, auto_create=True)
    finally:
        conn.close()
    assert ok_json(*topics(b, "--list")) == [*internal, "orders"]
    assert ok_json(*topics(b, "--list", "--exclude-internal")) == ["orders"]
    described = {d["topic"]: d for d in ok_json(*topics(b, "--describe"))}
    assert sorted(described) == [*internal, "orders"]
    offsets = described["__consumer_offsets"]
    assert (offsets["internal"], offsets["partition_count"]) == (True, 50)
    assert offsets["configs"]["cleanup.policy"] == "compact"  # as Kafka creates it
    assert offsets["partitions"][0]["log_end_offset"] is None  # not served
    assert described["orders"]["partitions"][0]["log_end_offset"] == 0
    shown = ok_json(*topics(b, "--describe", "--exclude-internal"))
    assert [d["topic"] for d in shown] == ["orders"]
    # a regex matching internal topics does not delete them
    gone = sharetxn(*topics(b, "--delete", "--topic", "__.*"))
    assert gone.returncode == ExitCode.NOT_FOUND, gone.stderr


def test_command_config_file(broker: LocalBroker, tmp_path: Path) -> None:
    props = tmp_path / "client.properties"
    props.write_text("# client settings\nclient.id = from-file\nrequest.timeout.ms=20000\n")
    listed = sharetxn(*topics(broker.bootstrap_servers, "--list", "--command-config", str(props)))
    assert listed.returncode == 0, listed.stderr
    broken = tmp_path / "broken.properties"
    broken.write_text("no separator here\n")
    bad = sharetxn(*topics(broker.bootstrap_servers, "--list", "--command-config", str(broken)))
    assert bad.returncode == ExitCode.USAGE and "expected key=value" in bad.stderr


def test_shared_conventions() -> None:
    version = sharetxn("--version")
    assert version.returncode == 0 and version.stdout.startswith("sharetxn ")
    no_port = sharetxn("topics", "--list", "--bootstrap-server", "127.0.0.1")
    assert no_port.returncode == ExitCode.USAGE
    assert "HOST:PORT" in no_port.stderr and "Traceback" not in no_port.stderr
    as_json = sharetxn("topics", "--list", "--bootstrap-server", "127.0.0.1", "--json")
    assert json.loads(as_json.stderr)["exit_code"] == ExitCode.USAGE
    unresolvable = sharetxn("topics", "--list", "--bootstrap-server", "no-such-host.invalid:9092")
    assert unresolvable.returncode == ExitCode.UNAVAILABLE
    assert "resolv" in unresolvable.stderr and "Traceback" not in unresolvable.stderr
    for args in (
        ["nosuch"],
        ["topics"],
        ["topics", "--list", "--describe"],
        ["topics", "--create"],
        ["share-groups", "--describe"],
        ["configs", "--entity-type", "topics", "--describe"],
    ):
        usage = sharetxn(*args)
        assert usage.returncode == ExitCode.USAGE, (args, usage.stderr)
        assert usage.stderr and "Traceback" not in usage.stderr


def test_share_group_reset_plans_unless_execute(broker: LocalBroker) -> None:
    b = broker.bootstrap_servers
    ok_json(*topics(b, "--create", "--topic", "t", "--partitions", "1"))
    reset = ("share-groups", "--reset-offsets", "--group", "g", "--topic", "t", "--to-latest")
    plan = sharetxn(*reset, "--bootstrap-server", b)
    assert plan.returncode == 0 and "--execute" in plan.stdout
    assert ok_json("share-groups", "--list", "--bootstrap-server", b) == []
    done = ok_json(*reset, "--execute", "--bootstrap-server", b)
    assert done == [
        {"group": "g", "new_start_offset": 0, "partition": 0, "result": "NONE", "topic": "t"}
    ]
    # as in Kafka 4.4, resetting a new group creates it
    assert ok_json("share-groups", "--list", "--bootstrap-server", b) == [
        {"group": "g", "state": "Empty"}
    ]


def test_ctrl_c_during_retries_exits_130_with_one_line() -> None:
    import signal  # noqa: PLC0415
    import time  # noqa: PLC0415

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chaos.cli",
            "topics",
            "--list",
            "--bootstrap-server",
            "127.0.0.1:9",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    first = proc.stderr.readline()  # the retry warning: the command is inside its retries
    assert "retrying after" in first
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == ExitCode.INTERRUPTED
    assert err.strip().splitlines() == ["error: interrupted"]


def test_topic_configs(broker: LocalBroker) -> None:
    b = broker.bootstrap_servers
    ok_json(*topics(b, "--create", "--topic", "tc", "--config", "retention.ms=1000"))
    done = alter(
        b,
        "topics",
        "tc",
        "--add-config",
        "retention.ms=5000,cleanup.policy=[compact,delete]",
        "--delete-config",
        "nothing.set",
    )
    assert done.returncode == ExitCode.FAILED and "Invalid config(s): nothing.set" in done.stderr
    done = alter(
        b, "topics", "tc", "--add-config", "retention.ms=5000,cleanup.policy=[compact,delete]"
    )
    assert done.returncode == 0, done.stderr
    assert described(b, "topics", "tc") == {
        "retention.ms": "5000",
        "cleanup.policy": "compact,delete",
    }
    bad = sharetxn(*topics(b, "--create", "--topic", "tc2", "--config", "retention.msec=1"))
    assert bad.returncode == ExitCode.FAILED and "Unknown topic config name" in bad.stderr
    broker_alter = alter(b, "brokers", "1", "--add-config", "num.partitions=3")
    assert broker_alter.returncode == ExitCode.FAILED
    assert "Cannot update these configs dynamically: [num.partitions]" in broker_alter.stderr
