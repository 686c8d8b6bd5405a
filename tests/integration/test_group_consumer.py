"""The client library's GroupConsumer (KIP-848) against the real broker."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from coordinator.launcher import LocalBroker
from producer import GroupConsumer, TransactionalProducer
from tests.interop.test_consumer_groups import topic_with_records
from tests.interop.test_stock_clients import create_topic, read_all
from txn.errors import InvalidConfigError
from txn.ids import TopicPartition

FAST = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.heartbeat.interval.ms": "100",
    "transaction.max.timeout.ms": "60000",
}


@pytest.fixture
def fbroker(tmp_path: Path) -> Iterator[LocalBroker]:
    with LocalBroker(data_dir=tmp_path / "data", config=FAST) as running:
        yield running


def member(b: str, group: str, **extra: object) -> GroupConsumer:
    return GroupConsumer(
        {
            "bootstrap.servers": b,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "fetch.max.wait.ms": 50,
            **extra,
        }
    )


def drain(consumers: list[GroupConsumer], want: int, timeout_s: float = 30) -> list[list[bytes]]:
    """Poll every consumer until ``want`` records were read in all; values per consumer."""
    got: list[list[bytes]] = [[] for _ in consumers]
    deadline = time.monotonic() + timeout_s
    while sum(map(len, got)) < want and time.monotonic() < deadline:
        for k, c in enumerate(consumers):
            got[k] += [r.value or b"" for r in c.poll(0.05)]
    return got


def wait_for(condition: object, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached")


def each_assigned(members: list[GroupConsumer], count: int) -> bool:
    """Polls each member once: whether each now holds ``count`` partitions."""
    for m in members:
        m.poll(0)
    return all(len(m.assignment()) == count for m in members)


def test_two_members_split_the_partitions_and_read_every_record_once(
    fbroker: LocalBroker,
) -> None:
    b = fbroker.bootstrap_servers
    topic = topic_with_records(b, 4, 200)
    a, c = member(b, "split"), member(b, "split")
    try:
        a.subscribe([topic])
        c.subscribe([topic])
        wait_for(lambda: each_assigned([a, c], 2))
        assert a.assignment().isdisjoint(c.assignment())
        # what the balancing polls returned is re-read from the start: seek back
        for consumer in (a, c):
            for tp in consumer.assignment():
                consumer.seek(tp, 0)
        got = drain([a, c], 200)
        values = got[0] + got[1]
        assert sorted(values) == sorted(f"v{i}".encode() for i in range(200))
        assert got[0] and got[1]
    finally:
        a.close()
        c.close()


def test_committed_offsets_are_where_the_next_member_starts(fbroker: LocalBroker) -> None:
    b = fbroker.bootstrap_servers
    topic = topic_with_records(b, 1, 100)
    first = member(b, "resume", **{"max.poll.records": 30})
    first.subscribe([topic])
    got = drain([first], 30)[0]
    assert len(got) == 30
    first.commit_sync()
    tp = TopicPartition(topic, 0)
    assert first.committed([tp]) == {tp: 30}
    first.close()
    second = member(b, "resume")
    second.subscribe([topic])
    rest = drain([second], 70)[0]
    second.close()
    assert rest == [f"v{i}".encode() for i in range(30, 100)]


def test_a_leaving_member_hands_its_partitions_over(fbroker: LocalBroker) -> None:
    b = fbroker.bootstrap_servers
    topic = topic_with_records(b, 2, 10)
    a, c = member(b, "handover"), member(b, "handover")
    a.subscribe([topic])
    c.subscribe([topic])
    wait_for(lambda: each_assigned([a, c], 1))
    a.close()

    def all_to_c() -> bool:
        c.poll(0)
        return len(c.assignment()) == 2

    wait_for(all_to_c)
    c.close()


def test_read_committed_skips_aborted_transactions(fbroker: LocalBroker) -> None:
    b = fbroker.bootstrap_servers
    topic = f"t-{uuid.uuid4().hex[:6]}"
    create_topic(b, topic, 1)
    with TransactionalProducer({"bootstrap.servers": b, "transactional.id": "rc"}) as producer:
        producer.init_transactions()
        for k, commit in enumerate([True, False, True]):
            producer.begin_transaction()
            for i in range(3):
                producer.send(topic, f"t{k}-{i}".encode())
            producer.flush()  # in the log, whatever the outcome
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    committed = member(b, "rc", **{"isolation.level": "read_committed"})
    committed.subscribe([topic])
    seen = drain([committed], 6)[0]
    committed.close()
    assert seen == [f"t{k}-{i}".encode() for k in (0, 2) for i in range(3)]
    everything = member(b, "ru")
    everything.subscribe([topic])
    seen = drain([everything], 9)[0]
    everything.close()
    assert len(seen) == 9


def test_exactly_once_copy_with_send_offsets_to_transaction(fbroker: LocalBroker) -> None:
    b = fbroker.bootstrap_servers
    src = topic_with_records(b, 2, 120)
    dst = f"out-{uuid.uuid4().hex[:6]}"
    create_topic(b, dst, 2)

    def copier(abort_every: int) -> None:
        consumer = member(
            b, "copier", **{"isolation.level": "read_committed", "max.poll.records": 25}
        )
        consumer.subscribe([src])
        producer = TransactionalProducer({"bootstrap.servers": b, "transactional.id": "copy"})
        producer.init_transactions()
        idle, batches = 0, 0
        while idle < 20:
            records = consumer.poll(0.1)
            if not records:
                idle += 1
                continue
            idle = 0
            batches += 1
            producer.begin_transaction()
            for r in records:
                producer.send(dst, r.value)
            producer.send_offsets_to_transaction(consumer.positions(), consumer.group_metadata())
            if abort_every and batches % abort_every == 0:
                producer.abort_transaction()
                for tp, offset in consumer.committed(consumer.assignment()).items():
                    consumer.seek(tp, offset or 0)  # back to the last committed offsets
                continue
            producer.commit_transaction()
        producer.close()
        consumer.close()

    copier(abort_every=3)
    out = read_all(b, dst, 2, "read_committed", expect_at_least=120)
    assert sorted(out) == sorted(f"v{i}".encode() for i in range(120))


def test_configs_are_checked() -> None:
    with pytest.raises(InvalidConfigError, match=r"unknown GroupConsumer config 'group\.idd'"):
        GroupConsumer({"bootstrap.servers": "127.0.0.1:1", "group.idd": "x"})
    with pytest.raises(InvalidConfigError, match=r"group\.protocol"):
        GroupConsumer(
            {"bootstrap.servers": "127.0.0.1:1", "group.id": "x", "group.protocol": "classic"}
        )
    with pytest.raises(InvalidConfigError, match=r"auto\.offset\.reset"):
        GroupConsumer(
            {"bootstrap.servers": "127.0.0.1:1", "group.id": "x", "auto.offset.reset": "oldest"}
        )


def test_stock_producer_records_keep_keys_headers_and_timestamps(fbroker: LocalBroker) -> None:
    b = fbroker.bootstrap_servers
    topic = f"t-{uuid.uuid4().hex[:6]}"
    create_topic(b, topic, 1)
    p = Producer({"bootstrap.servers": b})
    p.produce(topic, b"value", key=b"key", headers=[("h", b"1")], timestamp=1_700_000_000_000)
    p.flush(10)
    c = member(b, "fields")
    c.subscribe([topic])
    deadline = time.monotonic() + 20
    records = []
    while not records and time.monotonic() < deadline:
        records = c.poll(0.2)
    c.close()
    (r,) = records
    assert (r.key, r.value, r.headers, r.timestamp) == (
        b"key",
        b"value",
        (("h", b"1"),),
        1_700_000_000_000,
    )
