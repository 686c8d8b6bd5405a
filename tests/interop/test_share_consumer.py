"""Stock confluent-kafka ShareConsumer (librdkafka) against the broker's share groups."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer

from coordinator.launcher import LocalBroker
from producer.admin import Admin
from tests.share_setup import fast_lock_broker, share_topic

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    yield from fast_lock_broker(tmp_path_factory, "share")


def setup_topic(
    bootstrap: str, partitions: int, records: int, group: str, **group_configs: str
) -> str:
    topic = share_topic(bootstrap, partitions, group, group_configs)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(records):
        producer.produce(topic, value=f"r{i}".encode(), partition=i % partitions)
    assert producer.flush(30) == 0
    return topic


def consumer(bootstrap: str, group: str, mode: str = "implicit") -> ShareConsumer:
    return ShareConsumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": mode}
    )


def poll_until(c: ShareConsumer, want: int, timeout_s: float = 30) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < want and time.monotonic() < deadline:
        got.extend(m for m in c.poll(0.5) if m.error() is None)
    return got


def explicit_reader(
    bootstrap: str, group: str, records: int
) -> tuple[str, ShareConsumer, list[Any]]:
    """A one-partition topic of ``records``, an explicit-mode member subscribed, and its poll."""
    topic = setup_topic(bootstrap, 1, records, group)
    c = consumer(bootstrap, group, "explicit")
    c.subscribe([topic])
    return topic, c, poll_until(c, records)


def test_implicit_mode_consumes_everything_once(share_broker: LocalBroker) -> None:
    b = share_broker.bootstrap_servers
    topic = setup_topic(b, 2, 50, "implicit")
    c = consumer(b, "implicit")
    c.subscribe([topic])
    got = poll_until(c, 50)
    c.commit_sync(10)
    c.close()
    assert sorted(m.value() for m in got) == sorted(f"r{i}".encode() for i in range(50))
    assert {m.delivery_count() for m in got} == {1}
    with Admin(b) as admin:
        progress = admin.share_group_progress("implicit", [topic])
    assert sorted((tp.partition, o) for tp, o in progress.items()) == [(0, 25), (1, 25)]


def test_explicit_accept_and_release_redelivers(share_broker: LocalBroker) -> None:
    b = share_broker.bootstrap_servers
    _, c, first = explicit_reader(b, "explicit", 10)
    assert len(first) == 10
    for m in first:
        c.acknowledge(m, AcknowledgeType.ACCEPT if m.offset() < 5 else AcknowledgeType.RELEASE)
    c.commit_sync(10)
    again = poll_until(c, 5)
    assert sorted(m.offset() for m in again) == [5, 6, 7, 8, 9]
    assert {m.delivery_count() for m in again} == {2}
    for m in again:
        c.acknowledge(m, AcknowledgeType.ACCEPT)
    c.commit_sync(10)
    assert poll_until(c, 1, timeout_s=2) == []
    c.close()


def test_reject_archives(share_broker: LocalBroker) -> None:
    b = share_broker.bootstrap_servers
    topic, c, got = explicit_reader(b, "reject", 6)
    for m in got:
        c.acknowledge(m, AcknowledgeType.REJECT)
    c.commit_sync(10)
    assert poll_until(c, 1, timeout_s=2) == []
    c.close()
    with Admin(b) as admin:
        (progress,) = admin.share_group_progress("reject", [topic]).values()
    assert progress == 6


def test_delivery_limit_archives(share_broker: LocalBroker) -> None:
    b = share_broker.bootstrap_servers
    topic = setup_topic(b, 1, 3, "limit", **{"share.delivery.count.limit": "2"})
    c = consumer(b, "limit", "explicit")
    c.subscribe([topic])
    counts: Counter[int] = Counter()
    for _ in range(2):
        batch = poll_until(c, 3)
        assert len(batch) == 3
        for m in batch:
            counts[m.offset()] += 1
            c.acknowledge(m, AcknowledgeType.RELEASE)
        c.commit_sync(10)
    assert poll_until(c, 1, timeout_s=2) == []  # archived at the limit of 2 deliveries
    c.close()
    assert counts == Counter({0: 2, 1: 2, 2: 2})


def test_lock_timeout_redelivers_to_another_consumer(share_broker: LocalBroker) -> None:
    b = share_broker.bootstrap_servers
    topic = setup_topic(b, 1, 5, "locks", **{"share.record.lock.duration.ms": "1000"})
    slow = consumer(b, "locks", "explicit")
    slow.subscribe([topic])
    held = poll_until(slow, 5)
    assert len(held) == 5  # acquired and never acknowledged
    fast = consumer(b, "locks", "explicit")
    fast.subscribe([topic])
    redelivered = poll_until(fast, 5, timeout_s=30)
    assert sorted(m.offset() for m in redelivered) == [0, 1, 2, 3, 4]
    assert {m.delivery_count() for m in redelivered} == {2}
    for m in redelivered:
        fast.acknowledge(m, AcknowledgeType.ACCEPT)
    fast.commit_sync(10)
    fast.close()
    slow.close()


def test_three_consumers_two_partitions_every_record_acked_once(share_broker: LocalBroker) -> None:
    b = share_broker.bootstrap_servers
    total = 20_000
    topic = setup_topic(b, 2, total, "many")
    seen: Counter[bytes] = Counter()
    lock = threading.Lock()
    stop = threading.Event()

    def run() -> None:
        c = consumer(b, "many", "explicit")
        c.subscribe([topic])
        while not stop.is_set():
            msgs = [m for m in c.poll(0.5) if m.error() is None]
            for m in msgs:
                c.acknowledge(m, AcknowledgeType.ACCEPT)
            if msgs:
                result = c.commit_sync(30)
                if all(v is None for v in result.values()):
                    with lock:
                        seen.update(m.value() for m in msgs)
        c.close()

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        with lock:
            if len(seen) >= total:
                break
        time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join(60)
    assert len(seen) == total
    assert max(seen.values()) == 1, "a record was acknowledged twice"
