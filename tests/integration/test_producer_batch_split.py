"""The client producer splits a batch the broker refuses as too large, as Kafka's does.

A topic with a small ``max.message.bytes``: records that fit one by one but not together in
one batch are split and all delivered, in order; a single record over the limit fails its
future with MessageTooLargeError (Kafka's producer: Sender, ``splitAndReenqueue``).
"""

from __future__ import annotations

import uuid
from concurrent.futures import Future

import pytest

from coordinator.launcher import LocalBroker
from producer import Admin, RecordMetadata, TransactionalProducer
from producer.admin.client import TopicSpec
from tests.stock_reads import read_messages
from txn.errors import ErrorCode, MessageTooLargeError

pytestmark = pytest.mark.integration

LIMIT = 2000


def _topic(broker: LocalBroker) -> str:
    name = f"split-{uuid.uuid4().hex[:8]}"
    spec = TopicSpec(name, 1, configs={"max.message.bytes": str(LIMIT)})
    with Admin(broker.bootstrap_servers) as admin:
        assert admin.create_topics([spec]) == {name: ErrorCode.NONE}
    return name


def _producer(broker: LocalBroker, **settings: str) -> TransactionalProducer:
    # one long linger: every record sent below goes into one batch
    return TransactionalProducer(
        {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 2000, **settings}
    )


@pytest.mark.parametrize("idempotent", [True, False])
def test_batch_over_the_limit_is_split_and_all_delivered_in_order(
    broker: LocalBroker, idempotent: bool
) -> None:
    topic = _topic(broker)
    values = [f"{i:03d}".encode() + b"x" * 400 for i in range(12)]  # ~5 KB together
    producer = _producer(broker, **{"enable.idempotence": str(idempotent).lower()})
    try:
        futures: list[Future[RecordMetadata]] = [producer.send(topic, v) for v in values]
        producer.flush(30)
        offsets = [f.result(timeout=30).offset for f in futures]
    finally:
        producer.close()
    assert offsets == list(range(len(values)))
    read = read_messages(
        broker.bootstrap_servers,
        topic,
        1,
        "read_uncommitted",
        len(values),
        first_idle_s=10,
        timeout_s=30,
    )
    assert [m.value() for m in read] == values  # each once, in order


def test_one_record_over_the_limit_fails_and_the_others_are_delivered(
    broker: LocalBroker,
) -> None:
    topic = _topic(broker)
    producer = _producer(broker)
    try:
        before = producer.send(topic, b"a" * 100)
        flushed = producer.flush(30)
        assert flushed is None
        too_large = producer.send(topic, b"b" * (LIMIT * 2))
        producer.flush(30)
        with pytest.raises(MessageTooLargeError):
            too_large.result(timeout=30)
        after = producer.send(topic, b"c" * 100)
        producer.flush(30)
        assert (before.result(timeout=30).offset, after.result(timeout=30).offset) == (0, 1)
    finally:
        producer.close()
