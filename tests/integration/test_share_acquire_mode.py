"""ShareConsumer's ``share.acquire.mode`` (KIP-1206) against a real broker process.

``batch_optimized`` (Kafka's default) lets the broker round a fetch up to the end of a log
batch; ``record_limit`` asks ShareFetch v2 for at most ``max.poll.records`` records, so a poll
never returns more, and the rest of a split log batch comes in later polls.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer

from coordinator.launcher import LocalBroker
from producer.consumer.share_consumer import ShareConsumer
from producer.protocol.types import AcknowledgeType, Record
from tests.share_setup import fast_lock_broker, share_topic

pytestmark = pytest.mark.integration

BASE = {"bootstrap.servers": "127.0.0.1:1", "group.id": "g"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    yield from fast_lock_broker(tmp_path_factory, "share-acquire-mode")


def one_batch_topic(bootstrap: str, group: str, records: int) -> str:
    """A one-partition topic holding ``records`` records in one log batch, read by ``group``."""
    topic = share_topic(bootstrap, 1, group, {"share.heartbeat.interval.ms": "500"})
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 200})
    for i in range(records):
        producer.produce(topic, value=f"r{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    return topic


def polls(c: ShareConsumer, want: int, timeout_s: float = 30) -> list[list[Record]]:
    """The non-empty polls until ``want`` records came, each record accepted."""
    out: list[list[Record]] = []
    deadline = time.monotonic() + timeout_s
    while sum(map(len, out)) < want and time.monotonic() < deadline:
        batch = c.poll(0.5)
        for r in batch:
            c.acknowledge(r, AcknowledgeType.ACCEPT)
        if batch:
            out.append(batch)
    return out


def consumer(bootstrap: str, group: str, **extra: str) -> ShareConsumer:
    return ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
            "max.poll.records": "3",
            **extra,
        }
    )


def test_config_name_default_and_validation() -> None:
    with ShareConsumer(BASE) as c:
        assert c.acquire_mode == "batch_optimized"
    for value in ("record_limit", "RECORD_LIMIT", " Record_Limit "):
        with ShareConsumer({**BASE, "share.acquire.mode": value}) as c:
            assert c.acquire_mode == "record_limit"
    with ShareConsumer({**BASE, "share.acquire.mode": "BATCH_OPTIMIZED"}) as c:
        assert c.acquire_mode == "batch_optimized"
    with pytest.raises(ValueError, match="must either be 'batch_optimized' or 'record_limit'"):
        ShareConsumer({**BASE, "share.acquire.mode": "bogus"})
    with pytest.raises(ValueError, match="Expected value to be a string"):
        ShareConsumer({**BASE, "share.acquire.mode": 1})


def test_record_limit_never_returns_more_than_max_poll_records(broker: LocalBroker) -> None:
    b = broker.bootstrap_servers
    group = f"g-{uuid.uuid4().hex[:8]}"
    topic = one_batch_topic(b, group, 10)
    with consumer(b, group, **{"share.acquire.mode": "record_limit"}) as c:
        c.subscribe([topic])
        got = polls(c, 10)
        c.commit_sync(10)
    assert [len(p) for p in got] == [3, 3, 3, 1]
    assert [r.offset for p in got for r in p] == list(range(10))
    assert {r.delivery_count for p in got for r in p} == {1}


def test_batch_optimized_rounds_up_to_the_log_batch(broker: LocalBroker) -> None:
    b = broker.bootstrap_servers
    group = f"g-{uuid.uuid4().hex[:8]}"
    topic = one_batch_topic(b, group, 10)
    with consumer(b, group) as c:
        c.subscribe([topic])
        got = polls(c, 10)
        c.commit_sync(10)
    assert [len(p) for p in got] == [10]
