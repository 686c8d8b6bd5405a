"""Apache Kafka's command-line tools, run as their Java main classes, against sharetxn.

Each test runs what an operator types (``kafka-topics.sh`` and friends, 4.4.0) against a
real sharetxn broker and checks the tool's own output.  One broker serves the module.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from coordinator.launcher import LocalBroker
from producer import Admin
from producer.admin import TopicSpec
from producer.protocol.connection import BrokerConnection
from tests.integration.test_internal_topics import metadata
from tests.reference.in_transaction import in_transaction
from tests.reference.kafka import java_available, run_tool
from txn.batch import build_batch
from txn.errors import ErrorCode

pytestmark = pytest.mark.reference


@pytest.fixture(scope="module")
def sharetxn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not java_available():
        pytest.skip("Kafka's tools need a Java runtime: java is not on PATH")
    with LocalBroker(data_dir=tmp_path_factory.mktemp("sharetxn") / "data") as broker:
        yield broker.bootstrap_servers


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def tool(name: str, *args: str, stdin: str | None = None) -> str:
    done = run_tool(name, list(args), input=stdin, timeout=120)
    assert done.returncode == 0, f"{name} {' '.join(args)}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _topic(bootstrap: str, partitions: int = 1) -> str:
    name = _name("tools")
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        assert admin.create_topics([TopicSpec(name, partitions, 1)])[name] == ErrorCode.NONE
    return name


def _rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.splitlines() if line.strip()]


_EARLIEST = "share.auto.offset.reset=earliest"


def _topic_holding(sharetxn: str, lines: str, *more: str) -> str:
    """A new topic, with ``lines`` written to it by ``kafka-console-producer``."""
    topic = _topic(sharetxn)
    producer = ("kafka-console-producer", "--bootstrap-server", sharetxn, "--topic", topic)
    tool(*producer, *more, stdin=lines)
    return topic


def _configs(sharetxn: str, action: str, entity_type: str, name: str, *more: str) -> str:
    """``kafka-configs --alter|--describe`` on one entity."""
    return tool(
        "kafka-configs",
        "--bootstrap-server",
        sharetxn,
        action,
        "--entity-type",
        entity_type,
        "--entity-name",
        name,
        *more,
    )


def _read_committed(sharetxn: str, topic: str, count: int, *more: str) -> str:
    """``kafka-console-consumer`` from the beginning, read_committed, for ``count`` records."""
    return tool(
        "kafka-console-consumer",
        "--bootstrap-server",
        sharetxn,
        "--topic",
        topic,
        "--from-beginning",
        "--max-messages",
        str(count),
        "--timeout-ms",
        "30000",
        "--isolation-level",
        "read_committed",
        *more,
    )


def _reset_then_delete(command: str, sharetxn: str, group: str, topic: str) -> None:
    """``command`` (a groups tool) resets ``group`` to the earliest offsets, then deletes it."""
    reset = _rows(
        tool(
            command,
            "--bootstrap-server",
            sharetxn,
            "--reset-offsets",
            "--to-earliest",
            "--group",
            group,
            "--topic",
            topic,
            "--execute",
        )
    )
    assert [group, topic, "0", "0"] in reset
    deleted = tool(command, "--bootstrap-server", sharetxn, "--delete", "--group", group)
    assert "was successful" in deleted


def _describe_transaction(sharetxn: str, tid: str) -> list[list[str]]:
    return _rows(
        tool(
            "kafka-transactions",
            "--bootstrap-server",
            sharetxn,
            "describe",
            "--transactional-id",
            tid,
        )
    )


def test_kafka_topics(sharetxn: str) -> None:
    name = _name("topics")
    assert f"Created topic {name}." in tool(
        "kafka-topics",
        "--bootstrap-server",
        sharetxn,
        "--create",
        "--topic",
        name,
        "--partitions",
        "2",
    )
    assert name in tool("kafka-topics", "--bootstrap-server", sharetxn, "--list").split()
    tool(
        "kafka-topics",
        "--bootstrap-server",
        sharetxn,
        "--alter",
        "--topic",
        name,
        "--partitions",
        "3",
    )
    described = tool("kafka-topics", "--bootstrap-server", sharetxn, "--describe", "--topic", name)
    assert "PartitionCount: 3" in described
    assert described.count("Leader: 1") == 3
    tool("kafka-topics", "--bootstrap-server", sharetxn, "--delete", "--topic", name)
    assert name not in tool("kafka-topics", "--bootstrap-server", sharetxn, "--list").split()


def test_kafka_topics_shows_internal_topics(sharetxn: str) -> None:
    """Listed and described as on Kafka, left out with --exclude-internal."""
    internal = ["__consumer_offsets", "__share_group_state", "__transaction_state"]
    host, _, port = sharetxn.rpartition(":")
    conn = BrokerConnection(host, int(port))  # Kafka creates them on first use: use them
    try:
        metadata(conn, internal, auto_create=True)
    finally:
        conn.close()
    listed = tool("kafka-topics", "--bootstrap-server", sharetxn, "--list").split()
    assert set(internal) <= set(listed)
    excluded = tool("kafka-topics", "--bootstrap-server", sharetxn, "--list", "--exclude-internal")
    assert not set(internal) & set(excluded.split())
    described = tool("kafka-topics", "--bootstrap-server", sharetxn, "--describe")
    assert "Topic: __consumer_offsets\t" in described
    assert "cleanup.policy=compact" in described
    quiet = tool("kafka-topics", "--bootstrap-server", sharetxn, "--describe", "--exclude-internal")
    assert "__consumer_offsets" not in quiet


def test_kafka_configs_on_topics_and_groups(sharetxn: str) -> None:
    topic = _topic(sharetxn)
    _configs(sharetxn, "--alter", "topics", topic, "--add-config", "retention.ms=3600000")
    described = _configs(sharetxn, "--describe", "topics", topic)
    assert "retention.ms=3600000" in described
    group = _name("cfg")
    _configs(sharetxn, "--alter", "groups", group, "--add-config", _EARLIEST)
    described = _configs(sharetxn, "--describe", "groups", group)
    assert _EARLIEST in described


def test_kafka_configs_on_broker_loggers(sharetxn: str) -> None:
    """``kafka-configs.sh --entity-type broker-loggers``: sharetxn's loggers and levels."""
    described = _configs(sharetxn, "--describe", "broker-loggers", "1")
    assert "  root=INFO sensitive=false synonyms={}" in described.splitlines()
    _configs(sharetxn, "--alter", "broker-loggers", "1", "--add-config", "sharetxn.share=DEBUG")
    described = _configs(sharetxn, "--describe", "broker-loggers", "1")
    assert "  sharetxn.share=DEBUG sensitive=false synonyms={}" in described.splitlines()
    _configs(sharetxn, "--alter", "broker-loggers", "1", "--delete-config", "sharetxn.share")
    described = _configs(sharetxn, "--describe", "broker-loggers", "1")
    assert "  sharetxn.share=INFO sensitive=false synonyms={}" in described.splitlines()


def test_kafka_configs_on_client_quotas(sharetxn: str) -> None:
    """``kafka-configs.sh --entity-type users|clients``: client quotas (KIP-546)."""
    user, client = _name("quser"), _name("qclient")
    _configs(sharetxn, "--alter", "users", user, "--add-config", "producer_byte_rate=1048576")
    _configs(
        sharetxn,
        "--alter",
        "users",
        user,
        "--entity-type",
        "clients",
        "--entity-name",
        client,
        "--add-config",
        "consumer_byte_rate=2048,request_percentage=50.5",
    )
    described = _configs(sharetxn, "--describe", "users", user)
    assert f"Quota configs for user-principal '{user}' are producer_byte_rate=1048576.0" in (
        described
    )
    both = _configs(
        sharetxn, "--describe", "users", user, "--entity-type", "clients", "--entity-name", client
    )
    assert "consumer_byte_rate=2048.0" in both and "request_percentage=50.5" in both
    defaults = tool(
        "kafka-configs",
        "--bootstrap-server",
        sharetxn,
        "--alter",
        "--entity-type",
        "clients",
        "--entity-default",
        "--add-config",
        "producer_byte_rate=1000000000",
    )
    assert defaults.strip() == "Completed updating default config for clients in the cluster."
    described = tool(
        "kafka-configs",
        "--bootstrap-server",
        sharetxn,
        "--describe",
        "--entity-type",
        "clients",
        "--entity-default",
    )
    assert "producer_byte_rate=1.0E9" in described
    _configs(sharetxn, "--alter", "users", user, "--delete-config", "producer_byte_rate")
    assert "producer_byte_rate" not in _configs(sharetxn, "--describe", "users", user)
    tool(
        "kafka-configs",
        "--bootstrap-server",
        sharetxn,
        "--alter",
        "--entity-type",
        "clients",
        "--entity-default",
        "--delete-config",
        "producer_byte_rate",
    )


def test_console_producer_and_consumers(sharetxn: str) -> None:
    topic = _topic_holding(sharetxn, "a\nb\nc\n", "--command-property", "enable.idempotence=true")
    group = _name("console")
    out = _read_committed(sharetxn, topic, 3, "--group", group)
    assert out.split() == ["a", "b", "c"]

    groups = tool("kafka-consumer-groups", "--bootstrap-server", sharetxn, "--list").split()
    assert group in groups
    described = _rows(
        tool(
            "kafka-consumer-groups", "--bootstrap-server", sharetxn, "--describe", "--group", group
        )
    )
    assert [group, topic, "0", "3", "3", "0"] in [row[:6] for row in described]
    _reset_then_delete("kafka-consumer-groups", sharetxn, group, topic)


def test_console_share_consumer_and_share_groups(sharetxn: str) -> None:
    topic = _topic_holding(sharetxn, "x\ny\nz\n")
    group = _name("share")
    _configs(sharetxn, "--alter", "groups", group, "--add-config", _EARLIEST)
    out = tool(
        "kafka-console-share-consumer",
        "--bootstrap-server",
        sharetxn,
        "--topic",
        topic,
        "--group",
        group,
        "--max-messages",
        "3",
        "--timeout-ms",
        "30000",
    )
    assert sorted(out.split()) == ["x", "y", "z"]

    assert group in tool("kafka-share-groups", "--bootstrap-server", sharetxn, "--list").split()
    described = _rows(
        tool("kafka-share-groups", "--bootstrap-server", sharetxn, "--describe", "--group", group)
    )
    assert [group, topic, "0"] in [row[:3] for row in described]
    assert [row[-1] for row in described if row[:2] == [group, topic]] == ["0"]  # no lag
    _reset_then_delete("kafka-share-groups", sharetxn, group, topic)


def test_kafka_share_groups_reset_creates_a_new_group(sharetxn: str) -> None:
    """As on Apache Kafka 4.4: ``--reset-offsets --execute`` on a group that does not exist
    creates it (AlterShareGroupOffsets), empty, at the new start offsets."""
    topic = _topic_holding(sharetxn, "x\ny\n")
    group = _name("new-share")
    share_groups = ("kafka-share-groups", "--bootstrap-server", sharetxn)
    assert group not in tool(*share_groups, "--list").split()
    reset = _rows(
        tool(
            *share_groups,
            "--reset-offsets",
            "--to-latest",
            "--group",
            group,
            "--topic",
            topic,
            "--execute",
        )
    )
    assert [group, topic, "0", "2"] in reset
    assert group in tool(*share_groups, "--list").split()
    described = _rows(tool(*share_groups, "--describe", "--group", group))
    assert [group, topic, "0", "2", "0"] in described


def test_producer_perf_test_and_kafka_transactions(sharetxn: str) -> None:
    topic = _topic(sharetxn)
    tid = _name("perf")
    out = tool(
        "kafka-producer-perf-test",
        "--topic",
        topic,
        "--num-records",
        "500",
        "--record-size",
        "100",
        "--throughput",
        "-1",
        "--command-property",
        f"bootstrap.servers={sharetxn}",
        "acks=all",
        "--transactional-id",
        tid,
        "--transaction-duration-ms",
        "100",
    )
    assert "500 records sent" in out

    listed = _rows(tool("kafka-transactions", "--bootstrap-server", sharetxn, "list"))
    assert [tid, "1"] in [row[:2] for row in listed]
    described = _describe_transaction(sharetxn, tid)
    assert described[1][1] == tid
    assert described[1][4] == "CompleteCommit"
    producers = _rows(
        tool(
            "kafka-transactions",
            "--bootstrap-server",
            sharetxn,
            "describe-producers",
            "--topic",
            topic,
            "--partition",
            "0",
        )
    )
    assert len(producers) == 2  # the header and the perf test's producer
    hanging = _rows(
        tool(
            "kafka-transactions", "--bootstrap-server", sharetxn, "find-hanging", "--broker-id", "1"
        )
    )
    assert len(hanging) == 1  # only the header


def _leave_transaction_open(bootstrap: str, topic: str, tid: str) -> None:
    """A producer process that sends in a transaction and dies without ending it."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    worker = [sys.executable, "-m", "tests.reference.open_txn_worker", bootstrap, topic, tid]
    subprocess.run(worker, check=True, env=env, timeout=60)


def test_kafka_transactions_force_terminate(sharetxn: str) -> None:
    topic = _topic(sharetxn)
    tid = _name("open")
    _leave_transaction_open(sharetxn, topic, tid)
    described = _describe_transaction(sharetxn, tid)
    assert described[1][4] == "Ongoing"
    tool(
        "kafka-transactions",
        "--bootstrap-server",
        sharetxn,
        "forceTerminateTransaction",
        "--transactionalId",
        tid,
    )
    described = _describe_transaction(sharetxn, tid)
    assert described[1][4] in ("Empty", "CompleteAbort")
    # the open record was aborted: a read_committed reader sees nothing but what follows
    with in_transaction(sharetxn, tid, topic, b"after") as producer:
        producer.commit_transaction()
    out = _read_committed(sharetxn, topic, 1)
    assert out.split() == ["after"]


def _find_hanging(bootstrap: str) -> list[list[str]]:
    """``find-hanging`` on broker 1, every open transaction counted (no minimum age)."""
    return _rows(
        tool(
            "kafka-transactions",
            "--bootstrap-server",
            bootstrap,
            "find-hanging",
            "--broker-id",
            "1",
            "--max-transaction-timeout",
            "0",
        )
    )


def test_kafka_transactions_find_hanging_then_abort(tmp_path: Path) -> None:
    """A hanging transaction: its producer died with the transaction open, and the
    coordinator's state was lost (``__transaction_state`` removed while the broker was
    down), so no coordinator will ever write its marker.  ``find-hanging`` lists it and
    ``abort`` (Admin.abortTransaction: WriteTxnMarkers from a client) ends it."""
    data = tmp_path / "data"
    tid = _name("hang")
    with LocalBroker(data_dir=data) as broker:
        topic = _topic(broker.bootstrap_servers)
        _leave_transaction_open(broker.bootstrap_servers, topic, tid)
    shutil.rmtree(data / "__transaction_state-0")
    with LocalBroker(data_dir=data) as broker:
        bootstrap = broker.bootstrap_servers
        hanging = _find_hanging(bootstrap)
        assert len(hanging) == 2, hanging  # the header and the transaction
        row = dict(zip(hanging[0], hanging[1], strict=True))
        assert (row["Topic"], row["Partition"], row["StartOffset"]) == (topic, "0", "0")
        tool(
            "kafka-transactions",
            "--bootstrap-server",
            bootstrap,
            "abort",
            "--topic",
            topic,
            "--partition",
            "0",
            "--start-offset",
            row["StartOffset"],
        )
        assert len(_find_hanging(bootstrap)) == 1  # only the header
        # The aborted record is skipped; a read_committed reader sees what follows.
        with in_transaction(bootstrap, _name("next"), topic, b"after") as producer:
            producer.commit_transaction()
        assert _read_committed(bootstrap, topic, 1).split() == ["after"]


def test_consumer_groups_reset_to_datetime_finds_records_inside_a_batch(sharetxn: str) -> None:
    """``--to-datetime`` asks ListOffsets for a time (offsetsForTimes): the first record at or
    after it, inside an out-of-order batch, as Kafka answers; past every record, the end."""
    topic = _topic(sharetxn)
    base = 1_577_836_800_000  # 2020-01-01T00:00:00Z
    batch = build_batch(
        [(None, b"a"), (None, b"b"), (None, b"c")],
        timestamp_ms=base + 3000,
        timestamps=[base + 3000, base + 1000, base + 5000],
    )
    host, _, port = sharetxn.rpartition(":")
    conn = BrokerConnection(host, int(port))
    try:
        body = {
            "transactional_id": None,
            "acks": -1,
            "timeout": 10000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        }
        answer = conn.request(0, 9, body).responses[0].partition_responses[0]
        assert int(answer.error_code) == 0
    finally:
        conn.close()
    group = _name("at")
    for when, offset in (("00:00:04", "2"), ("00:00:02", "0"), ("00:00:06", "3")):
        reset = _rows(
            tool(
                "kafka-consumer-groups",
                "--bootstrap-server",
                sharetxn,
                "--reset-offsets",
                "--to-datetime",
                f"2020-01-01T{when}.000Z",
                "--group",
                group,
                "--topic",
                topic,
                "--execute",
            )
        )
        assert [group, topic, "0", offset] in reset, (when, reset)


FEATURES_TOOL = "org.apache.kafka.tools.FeatureCommand"  # bin/kafka-features.sh


def test_kafka_features_describe_and_upgrade(sharetxn: str) -> None:
    """The features sharetxn implements, each at its one supported level
    (``coordinator.protocol.features``); an upgrade past it is refused as Kafka refuses it."""
    out = tool(FEATURES_TOOL, "--bootstrap-server", sharetxn, "describe")
    levels = {row[1]: (row[3], row[5], row[7]) for row in _rows(out)}
    assert levels == {
        "group.version": ("1", "1", "1"),
        "share.version": ("2", "2", "2"),  # level 2: share-group dead-letter queues
        "transaction.version": ("1", "1", "1"),
        "share.transaction.version": ("1", "1", "1"),
    }
    tool(FEATURES_TOOL, "--bootstrap-server", sharetxn, "upgrade", "--feature", "group.version=1")
    refused = run_tool(
        FEATURES_TOOL,
        ["--bootstrap-server", sharetxn, "upgrade", "--feature", "transaction.version=2"],
        timeout=120,
    )
    assert refused.returncode != 0
    assert "only supports versions 1-1" in refused.stdout + refused.stderr
