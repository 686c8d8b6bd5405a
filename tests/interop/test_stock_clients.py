"""Stock confluent-kafka clients (librdkafka) against the broker."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from coordinator.launcher import LocalBroker
from tests.kafka_wire import WireClient
from tests.stock_reads import read_messages

pytestmark = pytest.mark.interop


def create_topic(bootstrap: str, name: str, partitions: int = 3) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(30)


def read_all(
    bootstrap: str, topic: str, partitions: int, isolation: str, expect_at_least: int = 0
) -> list[bytes]:
    msgs = read_messages(
        bootstrap, topic, partitions, isolation, expect_at_least, first_idle_s=3, timeout_s=30
    )
    return [m.value() for m in msgs]


def open_transaction(config: dict[str, Any], topic: str, value: bytes, **where: int) -> Producer:
    """A stock transactional producer that sent ``value`` in a transaction it leaves open."""
    producer = Producer(config)
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value=value, **where)
    producer.flush(10)
    return producer


def test_idempotent_producer_round_trip(broker: LocalBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "idem")
    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5}
    )
    delivered: list[int] = []

    def on_delivery(err: KafkaError | None, msg: object) -> None:
        assert err is None, err
        delivered.append(1)

    for i in range(1000):
        producer.produce(
            "idem", value=f"v{i}".encode(), key=str(i).encode(), on_delivery=on_delivery
        )
    assert producer.flush(30) == 0
    assert len(delivered) == 1000
    values = read_all(bootstrap, "idem", 3, "read_uncommitted", expect_at_least=1000)
    assert Counter(values) == Counter(f"v{i}".encode() for i in range(1000))


def test_transactions_commit_abort_and_open(broker: LocalBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "txn")
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": "interop-1", "linger.ms": 1}
    )
    producer.init_transactions(30)

    def batch(prefix: str, n: int) -> None:
        producer.begin_transaction()
        for i in range(n):
            producer.produce("txn", value=f"{prefix}{i}".encode(), partition=i % 3)
        producer.flush(10)

    batch("c", 10)
    producer.commit_transaction(30)
    batch("a", 5)
    producer.abort_transaction(30)
    batch("d", 3)
    producer.commit_transaction(30)
    batch("o", 1)  # left open

    committed = read_all(bootstrap, "txn", 3, "read_committed", expect_at_least=13)
    assert len(committed) == 13
    assert not any(v.startswith((b"a", b"o")) for v in committed)
    uncommitted = read_all(bootstrap, "txn", 3, "read_uncommitted", expect_at_least=19)
    assert len(uncommitted) == 19

    producer.commit_transaction(30)
    assert len(read_all(bootstrap, "txn", 3, "read_committed", expect_at_least=14)) == 14


def test_zombie_producer_is_fenced(broker: LocalBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "fence", 1)
    config = {"bootstrap.servers": bootstrap, "transactional.id": "zombie", "linger.ms": 1}
    first = Producer(config)
    first.init_transactions(30)
    first.begin_transaction()
    first.produce("fence", value=b"zombie")
    first.flush(10)

    second = Producer(config)
    second.init_transactions(30)  # fences `first` and aborts its transaction
    second.begin_transaction()
    second.produce("fence", value=b"winner")
    second.commit_transaction(30)

    with pytest.raises(KafkaException) as info:
        first.produce("fence", value=b"late")
        first.flush(10)
        first.commit_transaction(10)
    assert info.value.args[0].fatal() or info.value.args[0].code() in (
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
    )
    assert read_all(bootstrap, "fence", 1, "read_committed", expect_at_least=1) == [b"winner"]


def test_admin_topics_and_cluster(broker: LocalBroker) -> None:
    bootstrap = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic("adm-a", 2, 1), NewTopic("adm-b", 1, 1)]).values():
        future.result(30)
    duplicate = admin.create_topics([NewTopic("adm-a", 2, 1)])["adm-a"]
    with pytest.raises(KafkaException) as info:
        duplicate.result(30)
    assert info.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    topics = admin.list_topics(timeout=30).topics
    assert {"adm-a", "adm-b"} <= set(topics)
    assert len(topics["adm-a"].partitions) == 2

    admin.create_partitions([NewPartitions("adm-b", 3)])["adm-b"].result(30)
    assert len(admin.list_topics(timeout=30).topics["adm-b"].partitions) == 3

    cluster = admin.describe_cluster().result(30)
    assert len(cluster.nodes) == 1

    for future in admin.delete_topics(["adm-a"]).values():
        future.result(30)
    assert "adm-a" not in admin.list_topics(timeout=30).topics


def test_list_and_describe_transactions_on_the_wire(broker: LocalBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "lt", 2)
    producer = open_transaction(
        {"bootstrap.servers": bootstrap, "transactional.id": "listed", "linger.ms": 1},
        "lt",
        b"x",
        partition=1,
    )
    client = WireClient(bootstrap)
    try:
        listing = client.request(
            66, 1, {"state_filters": [], "producer_id_filters": [], "duration_filter": -1}
        )
        states = {t.transactional_id: t.transaction_state for t in listing.transaction_states}
        assert states["listed"] == "Ongoing"
        described = client.request(65, 0, {"transactional_ids": ["listed"]})
        listed = described.transaction_states[0]
        assert listed.transaction_state == "Ongoing"
        assert [(t.topic, tuple(t.partitions)) for t in listed.topics] == [("lt", (1,))]
        # kio's reader refuses the -1 start time Kafka sends for unknown ids: read the code raw.
        client.send_raw(client.encode(65, 0, {"transactional_ids": ["nope"]}))
        frame = client.recv_frame()
        # correlation id (4), header tags (1), throttle (4), array length (1), error code (2)
        assert int.from_bytes(frame[10:12], "big", signed=True) == 105  # TRANSACTIONAL_ID_NOT_FOUND
        producer.commit_transaction(30)
        described = client.request(65, 0, {"transactional_ids": ["listed"]})
        assert described.transaction_states[0].transaction_state == "CompleteCommit"
        producers = client.request(61, 0, {"topics": [{"name": "lt", "partition_indexes": [1]}]})
        active = producers.topics[0].partitions[0].active_producers
        assert len(active) == 1 and int(active[0].current_txn_start_offset) == -1
    finally:
        client.close()


def test_list_offsets_and_delete_records(broker: LocalBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "offs", 1)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
    for i in range(20):
        producer.produce("offs", value=str(i).encode())
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "wm"})
    assert consumer.get_watermark_offsets(TopicPartition("offs", 0), timeout=30) == (0, 20)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    result = admin.delete_records([TopicPartition("offs", 0, 5)])
    for future in result.values():
        future.result(30)
    assert consumer.get_watermark_offsets(TopicPartition("offs", 0), timeout=30) == (5, 20)
    consumer.close()
