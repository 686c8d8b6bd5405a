"""Our client library against Apache Kafka (issue 12, item 4).

``TransactionalProducer`` (idempotent, transactional, ``send_offsets_to_transaction``),
``ShareConsumer`` (implicit and explicit) and ``Admin`` work against the reference; the
KIP-1289 calls fail fast with ``Kip1289NotSupportedError`` naming the missing API, and
``share.acknowledgement.mode=transactional`` refuses to start there.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest
from confluent_kafka import Consumer

from coordinator.launcher import LocalBroker
from producer import (
    AcknowledgeType,
    Admin,
    ConsumerGroupMetadata,
    GroupConsumer,
    Record,
    ShareAckBatch,
    ShareAcknowledgements,
    ShareConsumer,
    ShareGroupMetadata,
    TransactionalProducer,
)
from producer.admin import TopicSpec
from producer.protocol.connection import BrokerConnection
from tests.reference.in_transaction import in_transaction
from tests.reference.kafka import ReferenceKafka
from txn.api_keys import ApiKey
from txn.errors import ErrorCode, Kip1289NotSupportedError, ProducerFencedError
from txn.ids import TopicPartition

pytestmark = pytest.mark.reference

TOPIC_CONFIG = 2  # DescribeConfigs / IncrementalAlterConfigs resource type


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def admin(reference_kafka: ReferenceKafka) -> Iterator[Admin]:
    with Admin({"bootstrap.servers": reference_kafka.bootstrap_servers}) as client:
        yield client


def _topic(admin: Admin, partitions: int = 1) -> str:
    name = _name("ref")
    result = admin.create_topics([TopicSpec(name, partitions, 1)])
    assert result[name] == ErrorCode.NONE
    return name


def _read_committed(bootstrap: str, topic: str, want: int, timeout_s: float = 30) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": _name("reader"),
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    values: list[bytes] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout_s
        while len(values) < want and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            values.append(msg.value())
        # anything beyond ``want`` (an aborted record leaking through) shows up here
        extra = consumer.poll(1.0)
        if extra is not None and not extra.error():
            values.append(extra.value())
    finally:
        consumer.close()
    return values


def _share_poll(consumer: ShareConsumer, want: int, timeout_s: float = 30) -> list[Record]:
    got: list[Record] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < want and time.monotonic() < deadline:
        got.extend(consumer.poll(0.5))
    return got


def test_idempotent_and_transactional_produce(
    reference_kafka: ReferenceKafka, admin: Admin
) -> None:
    bootstrap = reference_kafka.bootstrap_servers
    topic = _topic(admin)
    idempotent = TransactionalProducer({"bootstrap.servers": bootstrap})
    try:
        for i in range(3):
            idempotent.send(topic, f"idem-{i}".encode(), partition=0)
        idempotent.flush()
    finally:
        idempotent.close()

    tid = _name("txn")
    producer = TransactionalProducer({"bootstrap.servers": bootstrap, "transactional.id": tid})
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(2):
            producer.send(topic, f"committed-{i}".encode(), partition=0)
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send(topic, b"aborted", partition=0)
        producer.flush()
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send(topic, b"last", partition=0)
        producer.commit_transaction()
    finally:
        producer.close()

    values = _read_committed(bootstrap, topic, 6)
    assert values == [b"idem-0", b"idem-1", b"idem-2", b"committed-0", b"committed-1", b"last"]

    [described] = admin.describe_transactions([tid])
    assert described.state == "CompleteCommit"
    assert tid in {t.transactional_id for t in admin.list_transactions()}
    producers = admin.describe_producers(TopicPartition(topic, 0))
    assert len(producers) == 2  # the idempotent producer and the transactional one


def test_transactional_fencing(reference_kafka: ReferenceKafka, admin: Admin) -> None:
    bootstrap = reference_kafka.bootstrap_servers
    topic = _topic(admin)
    tid = _name("fenced")
    old = TransactionalProducer({"bootstrap.servers": bootstrap, "transactional.id": tid})
    new = TransactionalProducer({"bootstrap.servers": bootstrap, "transactional.id": tid})
    try:
        old.init_transactions()
        old.begin_transaction()
        old.send(topic, b"zombie", partition=0)
        old.flush()
        new.init_transactions()  # aborts the zombie's transaction and fences it
        new.begin_transaction()
        new.send(topic, b"survivor", partition=0)
        new.commit_transaction()
        with pytest.raises(ProducerFencedError):
            old.commit_transaction()
    finally:
        old.close()
        new.close()
    assert _read_committed(bootstrap, topic, 1) == [b"survivor"]


def test_send_offsets_to_transaction(reference_kafka: ReferenceKafka, admin: Admin) -> None:
    bootstrap = reference_kafka.bootstrap_servers
    source, sink = _topic(admin), _topic(admin)
    group = _name("copier")
    with in_transaction(bootstrap, _name("offsets"), sink, b"out") as producer:
        producer.send_offsets_to_transaction(
            {TopicPartition(source, 0): 7}, ConsumerGroupMetadata(group)
        )
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send_offsets_to_transaction(
            {TopicPartition(source, 0): 9}, ConsumerGroupMetadata(group)
        )
        producer.abort_transaction()
    committed = admin.list_consumer_group_offsets(group)
    assert committed[TopicPartition(source, 0)] == 7
    assert _read_committed(bootstrap, sink, 1) == [b"out"]


def test_group_consumer_copies_exactly_once(reference_kafka: ReferenceKafka, admin: Admin) -> None:
    """Our KIP-848 GroupConsumer in a consume-transform-produce copy on Kafka 4.x."""
    bootstrap = reference_kafka.bootstrap_servers
    source, sink = _topic(admin, 2), _topic(admin)
    producer = TransactionalProducer({"bootstrap.servers": bootstrap})
    for i in range(40):
        producer.send(source, f"v{i}".encode(), partition=i % 2)
    producer.close()
    consumer = GroupConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": _name("copier"),
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "max.poll.records": 15,
        }
    )
    copier = TransactionalProducer(
        {"bootstrap.servers": bootstrap, "transactional.id": _name("group-copy")}
    )
    try:
        consumer.subscribe([source])
        copier.init_transactions()
        copied, batches = 0, 0
        deadline = time.monotonic() + 60
        while copied < 40 and time.monotonic() < deadline:
            records = consumer.poll(0.5)
            if not records:
                continue
            batches += 1
            copier.begin_transaction()
            for r in records:
                copier.send(sink, r.value, partition=0)
            copier.send_offsets_to_transaction(consumer.positions(), consumer.group_metadata())
            if batches == 2:  # one aborted batch: back to the committed offsets
                copier.abort_transaction()
                for tp, offset in consumer.committed(consumer.assignment()).items():
                    consumer.seek(tp, offset or 0)
                continue
            copier.commit_transaction()
            copied += len(records)
        committed = consumer.committed([TopicPartition(source, p) for p in range(2)])
    finally:
        copier.close()
        consumer.close()
    assert committed == {TopicPartition(source, 0): 20, TopicPartition(source, 1): 20}
    assert sorted(_read_committed(bootstrap, sink, 40)) == sorted(
        f"v{i}".encode() for i in range(40)
    )


def _share_group(admin: Admin) -> str:
    group = _name("share")
    # Kafka's default is latest: records produced before the group starts are not delivered.
    admin.alter_group_configs(group, {"share.auto.offset.reset": "earliest"})
    return group


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = TransactionalProducer({"bootstrap.servers": bootstrap})
    try:
        for value in values:
            producer.send(topic, value, partition=0)
        producer.flush()
    finally:
        producer.close()


def test_share_consumer_explicit_release_and_delivery_count(
    reference_kafka: ReferenceKafka, admin: Admin
) -> None:
    bootstrap = reference_kafka.bootstrap_servers
    topic = _topic(admin)
    group = _share_group(admin)
    _produce(bootstrap, topic, [b"a", b"b", b"c"])
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
        }
    )
    try:
        consumer.subscribe([topic])
        first = _share_poll(consumer, 3)
        assert [r.value for r in first] == [b"a", b"b", b"c"]
        assert {r.delivery_count for r in first} == {1}
        consumer.acknowledge(first[0], AcknowledgeType.RELEASE)
        consumer.acknowledge(first[1], AcknowledgeType.ACCEPT)
        consumer.acknowledge(first[2], AcknowledgeType.REJECT)
        results = consumer.commit_sync()
        assert all(err is None for err in results.values()), results
        again = _share_poll(consumer, 1)
        assert [(r.offset, r.value, r.delivery_count) for r in again] == [(0, b"a", 2)]
        consumer.acknowledge(again[0], AcknowledgeType.ACCEPT)
        consumer.commit_sync()
    finally:
        consumer.close()
    [offset] = admin.describe_share_group_offsets(group)
    assert (offset.topic, offset.partition, offset.lag) == (topic, 0, 0)


def test_share_consumer_record_limit(reference_kafka: ReferenceKafka, admin: Admin) -> None:
    """``share.acquire.mode=record_limit`` (KIP-1206): no poll returns more than
    ``max.poll.records``, the log batch is split; ``batch_optimized`` takes it whole."""
    bootstrap = reference_kafka.bootstrap_servers
    sizes: dict[str, list[int]] = {}
    for mode in ("record_limit", "batch_optimized"):
        topic = _topic(admin)
        group = _share_group(admin)
        _produce(bootstrap, topic, [f"v{i}".encode() for i in range(10)])
        consumer = ShareConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "share.acknowledgement.mode": "explicit",
                "share.acquire.mode": mode,
                "max.poll.records": 3,
            }
        )
        try:
            consumer.subscribe([topic])
            deadline = time.monotonic() + 30
            while sum(sizes.get(mode, [])) < 10 and time.monotonic() < deadline:
                got = consumer.poll(0.5)
                for r in got:
                    consumer.acknowledge(r, AcknowledgeType.ACCEPT)
                if got:
                    sizes.setdefault(mode, []).append(len(got))
            consumer.commit_sync()
        finally:
            consumer.close()
    assert sizes == {"record_limit": [3, 3, 3, 1], "batch_optimized": [10]}


def test_share_consumer_implicit(reference_kafka: ReferenceKafka, admin: Admin) -> None:
    bootstrap = reference_kafka.bootstrap_servers
    topic = _topic(admin, partitions=2)
    group = _share_group(admin)
    producer = TransactionalProducer({"bootstrap.servers": bootstrap})
    try:
        for i in range(6):
            producer.send(topic, f"v{i}".encode(), partition=i % 2)
        producer.flush()
    finally:
        producer.close()
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        consumer.subscribe([topic])
        got = _share_poll(consumer, 6)
        assert sorted(r.value for r in got if r.value) == [f"v{i}".encode() for i in range(6)]
        [description] = admin.describe_share_groups([group])
        assert description.state == "Stable"
        assert [m.member_id for m in description.members] == [consumer.member_id]
        consumer.commit_sync()  # implicit: accepts the last poll's records
    finally:
        consumer.close()
    lags = {(o.partition, o.lag) for o in admin.describe_share_group_offsets(group)}
    assert lags == {(0, 0), (1, 0)}


T = TypeVar("T")


def _once_applied(read: Callable[[], T], applied: Callable[[T], bool], timeout_s: float = 30) -> T:
    """Kafka's brokers learn a change from the metadata log after the controller has answered
    it: a read right after a create or alter may still show the old state."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = read()
        if applied(value) or time.monotonic() >= deadline:
            return value
        time.sleep(0.1)


def test_admin_topics_configs_and_share_group_offsets(
    reference_kafka: ReferenceKafka, admin: Admin
) -> None:
    topic = _topic(admin)
    assert admin.create_partitions({topic: 3})[topic].error == ErrorCode.NONE
    [described] = _once_applied(
        lambda: admin.describe_topics([topic]), lambda d: len(d[0].leaders) == 3
    )
    assert sorted(described.leaders) == [0, 1, 2]
    altered = admin.incremental_alter_configs(TOPIC_CONFIG, topic, {"retention.ms": "3600000"})
    assert altered.error == ErrorCode.NONE
    entries = _once_applied(
        lambda: {e.name: e for e in admin.describe_config_entries(TOPIC_CONFIG, topic)},
        lambda e: e["retention.ms"].value == "3600000",
    )
    assert entries["retention.ms"].value == "3600000"
    assert entries["retention.ms"].explicit

    group = _share_group(admin)
    consumer = ShareConsumer(
        {"bootstrap.servers": reference_kafka.bootstrap_servers, "group.id": group}
    )
    try:
        consumer.subscribe([topic])
        consumer.poll(2.0)  # joins; the group gets its share-partition state
    finally:
        consumer.close()
    assert any(g.group_id == group and g.type == "share" for g in admin.list_groups())
    changed = admin.alter_share_group_offsets(group, {TopicPartition(topic, 0): 0})
    assert changed == {TopicPartition(topic, 0): ErrorCode.NONE}
    assert admin.delete_share_group_offsets(group, [topic]) == {topic: ErrorCode.NONE}
    assert admin.delete_groups([group]) == {group: ErrorCode.NONE}
    assert admin.delete_topics([topic])[topic].error == ErrorCode.NONE


def test_kip1289_fails_fast_against_kafka(reference_kafka: ReferenceKafka, admin: Admin) -> None:
    bootstrap = reference_kafka.bootstrap_servers
    topic = _topic(admin)
    with in_transaction(bootstrap, _name("kip1289"), topic, b"out") as producer:
        batch = ShareAckBatch(0, 0, AcknowledgeType.ACCEPT)
        acks = ShareAcknowledgements("g", "member", {TopicPartition(topic, 0): (batch,)})
        with pytest.raises(Kip1289NotSupportedError) as raised:
            producer.send_share_acks_to_transaction(acks, ShareGroupMetadata("g", "member", 1))
        assert raised.value.api == "AddShareAcksToTxn"
        assert "AddShareAcksToTxn" in str(raised.value)
        assert "share.transaction.version" in str(raised.value)
        producer.commit_transaction()  # nothing was sent: the transaction is intact
    assert _read_committed(bootstrap, topic, 1) == [b"out"]


def test_transactional_share_consumer_refuses_kafka(reference_kafka: ReferenceKafka) -> None:
    consumer = ShareConsumer(
        {
            "bootstrap.servers": reference_kafka.bootstrap_servers,
            "group.id": _name("txn-share"),
            "share.acknowledgement.mode": "transactional",
        }
    )
    try:
        with pytest.raises(Kip1289NotSupportedError) as raised:
            consumer.subscribe(["anything"])
        assert raised.value.api == "TxnShareAcknowledge"
        assert "TxnShareAcknowledge" in str(raised.value)
        assert consumer.subscription() == set()
    finally:
        consumer.close()


def test_sharetxn_advertises_kip1289(broker: LocalBroker) -> None:
    host, _, port = broker.bootstrap_servers.rpartition(":")
    conn = BrokerConnection(host, int(port))
    try:
        conn.connect()
        # KIP-1289's feature, with the Kafka 4.4 features sharetxn implements (share.version
        # at 2, its dead-letter queues; the others at 1).
        assert conn.features == {
            "share.transaction.version": 1,
            "group.version": 1,
            "share.version": 2,
            "transaction.version": 1,
        }
        conn.require_kip1289(ApiKey.TXN_SHARE_ACKNOWLEDGE)
        conn.require_kip1289(ApiKey.ADD_SHARE_ACKS_TO_TXN)
    finally:
        conn.close()
