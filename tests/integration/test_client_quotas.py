"""Client quotas on a real broker: AlterClientQuotas / DescribeClientQuotas on the wire, and
a producer over its producer_byte_rate is throttled (librdkafka sees the throttle time and its
throughput follows the quota)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Producer

from coordinator.launcher import LocalBroker
from tests.kafka_wire import WireClient
from txn.api_keys import ApiKey
from txn.errors import ErrorCode

pytestmark = pytest.mark.integration

QUOTA = 100 * 1024  # bytes per second


def _alter(bootstrap: str, entity: list[tuple[str, str | None]], **ops: float) -> Any:
    client = WireClient(bootstrap)
    try:
        return client.request(
            ApiKey.ALTER_CLIENT_QUOTAS,
            1,
            {
                "entries": [
                    {
                        "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                        "ops": [{"key": k, "value": v, "remove": False} for k, v in ops.items()],
                    }
                ],
                "validate_only": False,
            },
        )
    finally:
        client.close()


def _describe(bootstrap: str) -> Any:
    client = WireClient(bootstrap)
    try:
        return client.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, {"components": [], "strict": False})
    finally:
        client.close()


def test_quotas_are_recorded_and_survive_a_restart(tmp_path: Any) -> None:
    with LocalBroker(data_dir=tmp_path / "d") as broker:
        answer = _alter(broker.bootstrap_servers, [("client-id", "slow")], producer_byte_rate=1024)
        assert [e.error_code for e in answer.entries] == [ErrorCode.NONE]
        bad = _alter(broker.bootstrap_servers, [("user", "u")], foo=1)
        assert bad.entries[0].error_message == "Invalid configuration key foo"
        broker.restart()
        described = _describe(broker.bootstrap_servers)
        assert described.error_code == ErrorCode.NONE
        assert [
            (
                [(d.entity_type, d.entity_name) for d in e.entity],
                [(v.key, v.value) for v in e.values],
            )
            for e in described.entries
        ] == [([("client-id", "slow")], [("producer_byte_rate", 1024.0)])]


def test_a_producer_over_its_quota_is_throttled(tmp_path: Any) -> None:
    config = {"quota.window.num": "3", "quota.window.size.seconds": "1"}
    with LocalBroker(data_dir=tmp_path / "d", config=config) as broker:
        _alter(broker.bootstrap_servers, [("client-id", "slow")], producer_byte_rate=QUOTA)
        throttles: list[int] = []
        producer = Producer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "client.id": "slow",
                "linger.ms": 5,
                "batch.size": 16384,
                "throttle_cb": lambda event: throttles.append(event.throttle_time),
            }
        )
        payload = b"x" * 1024
        total = 600 * 1024
        started = time.monotonic()
        for _ in range(total // len(payload)):
            while True:
                try:
                    producer.produce("quota-topic", payload)
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
        assert producer.flush(60) == 0
        elapsed = time.monotonic() - started
        producer.poll(0.5)
        assert throttles, "librdkafka saw no throttle time"
        # The first ~two windows' worth goes at once; the rest follows the quota.
        assert total / elapsed < 2.5 * QUOTA, (total, elapsed)
        assert elapsed > (total - 3 * QUOTA) / QUOTA * 0.8, elapsed


def _fetch(bootstrap: str, topic: str, max_bytes: int) -> Any:
    client = WireClient(bootstrap)
    try:
        return client.request(
            ApiKey.FETCH,
            12,
            {
                "replica_id": -1,
                "max_wait": 0,
                "min_bytes": 0,
                "max_bytes": max_bytes,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [
                    {
                        "topic": topic,
                        "partitions": [
                            {
                                "partition": 0,
                                "current_leader_epoch": -1,
                                "fetch_offset": 0,
                                "last_fetched_epoch": -1,
                                "log_start_offset": -1,
                                "partition_max_bytes": max_bytes,
                            }
                        ],
                    }
                ],
                "forgotten_topics_data": [],
                "rack_id": "",
            },
        )
    finally:
        client.close()


def test_a_consumer_over_its_quota_gets_a_throttled_empty_fetch(tmp_path: Any) -> None:
    with LocalBroker(data_dir=tmp_path / "d") as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
        for _ in range(40):
            producer.produce("fetched", b"y" * 1000)
            assert producer.flush(10) == 0  # one batch each
        # WireClient's client id is "tests": 1 KB/s lets 10 KB through per quota window.
        _alter(broker.bootstrap_servers, [("client-id", "tests")], consumer_byte_rate=1024)
        first = _fetch(broker.bootstrap_servers, "fetched", 1 << 20)
        records = first.responses[0].partitions[0].records
        assert 0 < len(records) <= 10 * 1024 + 1100  # capped to the quota window's bytes
        for _ in range(5):
            answer = _fetch(broker.bootstrap_servers, "fetched", 1 << 20)
            if answer.throttle_time.total_seconds() > 0:
                assert answer.responses == ()  # Kafka's throttled response: no data
                break
        else:
            pytest.fail("no Fetch was throttled")


def _create_topic(bootstrap: str, name: str, partitions: int, version: int) -> Any:
    client = WireClient(bootstrap)
    try:
        return client.request(
            ApiKey.CREATE_TOPICS,
            version,
            {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": partitions,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                "timeout": 30000,
                "validate_only": False,
            },
        )
    finally:
        client.close()


def test_controller_mutation_quota_strict_and_permissive(tmp_path: Any) -> None:
    with LocalBroker(data_dir=tmp_path / "d") as broker:
        bootstrap = broker.bootstrap_servers
        _alter(bootstrap, [("client-id", "tests")], controller_mutation_rate=1)
        # A burst of 11 credits (11 windows of 1 s at 1 per second): the first request may
        # take more than there is, the next strict one is refused.
        first = _create_topic(bootstrap, "m1", 20, 7)
        assert first.topics[0].error_code == ErrorCode.NONE
        second = _create_topic(bootstrap, "m2", 1, 7)
        assert second.topics[0].error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
        assert second.topics[0].error_message is None  # Kafka leaves out the generic text
        assert 8000 <= second.throttle_time.total_seconds() * 1000 <= 9000
        # CreateTopics v5 predates KIP-599's strict mode: created, and throttled.
        old = _create_topic(bootstrap, "m3", 1, 5)
        assert old.topics[0].error_code == ErrorCode.NONE
        assert old.throttle_time.total_seconds() > 8


def test_connection_creation_rate_of_an_ip(tmp_path: Any) -> None:
    with LocalBroker(data_dir=tmp_path / "d") as broker:
        bootstrap = broker.bootstrap_servers
        answer = _alter(bootstrap, [("ip", "127.0.0.1")], connection_creation_rate=1)
        assert [e.error_code for e in answer.entries] == [ErrorCode.NONE]
        served = closed = 0
        for _ in range(16):
            client = WireClient(bootstrap, timeout_s=5.0)
            try:
                client.request(ApiKey.API_VERSIONS, 3, {})
                served += 1
            except (ConnectionError, OSError):
                closed += 1  # held unread for the throttle time, then closed
            finally:
                client.close()
        # 1 per second, measured over at least 10 s: the first ten pass (the alter's own
        # connection came before the quota), one more if the closes took over a window.
        assert 10 <= served <= 11 and served + closed == 16, (served, closed)


def test_max_connection_creation_rate_makes_new_connections_wait(tmp_path: Any) -> None:
    # 2 per second measured over at least one window of 1 s: beyond the first connections,
    # each waits (at most one window) before the listener accepts it; none is closed.
    config = {"max.connection.creation.rate": "2", "quota.window.num": "2"}
    with LocalBroker(data_dir=tmp_path / "d", config=config) as broker:
        started = time.monotonic()
        for _ in range(8):
            client = WireClient(broker.bootstrap_servers, timeout_s=10.0)
            try:
                client.request(ApiKey.API_VERSIONS, 3, {})
            finally:
                client.close()
        elapsed = time.monotonic() - started
        assert elapsed > 2.0, elapsed
