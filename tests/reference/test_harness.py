"""The reference harness itself: Apache Kafka answers, with share groups and transactions on."""

from __future__ import annotations

import pytest

from producer.protocol.connection import BrokerConnection
from tests.reference.kafka import KAFKA_VERSION, ReferenceKafka, run_tool

pytestmark = pytest.mark.reference


def test_kafka_serves_share_groups_and_transactions(reference_kafka: ReferenceKafka) -> None:
    host, _, port = reference_kafka.bootstrap_servers.rpartition(":")
    conn = BrokerConnection(host, int(port))
    try:
        conn.connect()
        versions = conn.versions
    finally:
        conn.close()
    # ShareGroupHeartbeat, ShareFetch, ShareAcknowledge; InitProducerId, AddPartitionsToTxn, EndTxn
    for key in (76, 78, 79, 22, 24, 26):
        assert key in versions, key


def test_kafka_tools_run_as_main_classes(reference_kafka: ReferenceKafka) -> None:
    done = run_tool("kafka-topics", ["--version"])
    assert done.returncode == 0, done.stderr
    assert KAFKA_VERSION in done.stdout
    bootstrap = reference_kafka.bootstrap_servers
    created = run_tool(
        "kafka-topics",
        ["--bootstrap-server", bootstrap, "--create", "--topic", "harness", "--partitions", "2"],
    )
    assert created.returncode == 0, created.stderr
    listed = run_tool("kafka-topics", ["--bootstrap-server", bootstrap, "--list"])
    assert "harness" in listed.stdout.split()
