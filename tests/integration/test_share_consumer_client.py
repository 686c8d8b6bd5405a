"""sharetxn's ShareConsumer against a real broker process (and next to a stock ShareConsumer)."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka import ShareConsumer as StockShareConsumer

from coordinator.launcher import LocalBroker
from producer.admin import Admin
from producer.consumer.share_consumer import (
    ConcurrentAccessError,
    IllegalStateError,
    ShareConsumer,
    ack_ranges,
    new_member_id,
)
from producer.protocol.types import AcknowledgeType, Record, ShareAckBatch
from tests.share_setup import fast_lock_broker, share_topic
from txn.errors import ClosedError, KafkaProtocolError
from txn.ids import TopicPartition

pytestmark = pytest.mark.integration

#: Record locks long enough that none runs out while a test holds its records.
LONG_LOCK = {"share.record.lock.duration.ms": "30000"}
ACCEPT, RELEASE, REJECT, GAP = (
    AcknowledgeType.ACCEPT,
    AcknowledgeType.RELEASE,
    AcknowledgeType.REJECT,
    AcknowledgeType.GAP,
)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    yield from fast_lock_broker(tmp_path_factory, "share-client")


def new_group() -> str:
    return f"g-{uuid.uuid4().hex[:8]}"


def setup_topic(
    bootstrap: str,
    partitions: int,
    records: int,
    group: str,
    *,
    producer_config: dict[str, Any] | None = None,
    **group_configs: str,
) -> str:
    topic = share_topic(
        bootstrap, partitions, group, {"share.heartbeat.interval.ms": "500", **group_configs}
    )
    produce(bootstrap, topic, records, partitions, producer_config)
    return topic


def group_and_topic(
    bootstrap: str, partitions: int, records: int, **kwargs: Any
) -> tuple[str, str]:
    """A new group, and a new topic of ``records`` records that it reads (see ``setup_topic``)."""
    group = new_group()
    return group, setup_topic(bootstrap, partitions, records, group, **kwargs)


def produce(
    bootstrap: str,
    topic: str,
    records: int,
    partitions: int,
    producer_config: dict[str, Any] | None = None,
    start: int = 0,
) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **(producer_config or {})})
    for i in range(start, start + records):
        producer.produce(
            topic,
            key=f"k{i}".encode(),
            value=f"r{i}".encode(),
            partition=i % partitions,
            headers=[("n", str(i).encode())],
        )
    assert producer.flush(30) == 0


def subscribed(bootstrap: str, group: str, topic: str, mode: str = "implicit") -> ShareConsumer:
    """A consumer of ``group`` (see ``consumer``) subscribed to ``topic``."""
    c = consumer(bootstrap, group, mode)
    c.subscribe([topic])
    return c


def consumer(bootstrap: str, group: str, mode: str = "implicit", **extra: Any) -> ShareConsumer:
    return ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": mode,
            **extra,
        }
    )


def poll_until(
    c: ShareConsumer, want: int, timeout_s: float = 30, *, ack: AcknowledgeType | None = None
) -> list[Record]:
    got: list[Record] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < want and time.monotonic() < deadline:
        batch = c.poll(0.5)
        if ack is not None:
            for r in batch:
                c.acknowledge(r, ack)
        got.extend(batch)
    return got


def poll_exactly(c: ShareConsumer, want: int) -> list[Record]:
    """``poll_until`` ``want`` records, and all of them came."""
    got = poll_until(c, want)
    assert len(got) == want
    return got


def share_offsets(bootstrap: str, group: str, topic: str) -> list[tuple[int, int]]:
    with Admin(bootstrap) as admin:
        progress = admin.share_group_progress(group, [topic])
    return sorted((tp.partition, offset) for tp, offset in progress.items())


def wait_for_offsets(
    bootstrap: str, group: str, topic: str, want: list[tuple[int, int]], timeout_s: float = 10
) -> list[tuple[int, int]]:
    deadline = time.monotonic() + timeout_s
    seen = share_offsets(bootstrap, group, topic)
    while seen != want and time.monotonic() < deadline:
        time.sleep(0.2)
        seen = share_offsets(bootstrap, group, topic)
    return seen


# -- configuration and pure helpers --------------------------------------------------------------


def test_config_is_validated() -> None:
    base = {"bootstrap.servers": "127.0.0.1:1", "group.id": "g"}
    with pytest.raises(ValueError, match=r"'auto\.offset\.reset'"):
        ShareConsumer({**base, "auto.offset.reset": "earliest"})
    with pytest.raises(ValueError, match=r"group\.id"):
        ShareConsumer({"bootstrap.servers": "127.0.0.1:1"})
    with pytest.raises(ValueError, match=r"share\.acknowledgement\.mode"):
        ShareConsumer({**base, "share.acknowledgement.mode": "sometimes"})
    with pytest.raises(ValueError, match=r"max\.poll\.records"):
        ShareConsumer({**base, "max.poll.records": "lots"})
    with pytest.raises(ValueError, match=r"fetch\.min\.bytes"):
        ShareConsumer({**base, "fetch.min.bytes": 0})
    c = ShareConsumer({**base, "max.poll.records": "10", "share.acknowledgement.mode": "EXPLICIT"})
    assert c.acknowledgement_mode == "explicit"
    c.close()
    c.close()  # idempotent
    with pytest.raises(ClosedError):
        c.subscribe(["t"])


def test_member_id_and_ack_ranges() -> None:
    ids = {new_member_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(len(i) == 22 and "=" not in i for i in ids)
    ranges = ack_ranges([(5, ACCEPT), (3, ACCEPT), (4, ACCEPT), (7, ACCEPT), (6, REJECT), (8, GAP)])
    assert ranges == [
        ShareAckBatch(3, 5, ACCEPT),
        ShareAckBatch(6, 6, REJECT),
        ShareAckBatch(7, 7, ACCEPT),
        ShareAckBatch(8, 8, GAP),
    ]


# -- implicit ------------------------------------------------------------------------------------


def test_implicit_mode_consumes_everything_once(broker: LocalBroker) -> None:
    b = broker.bootstrap_servers
    group, topic = group_and_topic(b, 2, 50)
    with subscribed(b, group, topic) as c:
        got = poll_until(c, 50)
        assert c.poll(1.0) == []  # the previous poll's records are accepted by this one
        results = c.commit_sync(10)
        meta = c.group_metadata()
        assert meta.group_id == group and meta.member_id == c.member_id
        assert len(meta.member_id) == 22 and meta.member_epoch > 0
        assert c.acquisition_lock_timeout_ms is not None
    assert all(v is None for v in results.values())
    assert sorted(r.value or b"" for r in got) == sorted(f"r{i}".encode() for i in range(50))
    assert len({(r.partition, r.offset) for r in got}) == 50
    assert {r.delivery_count for r in got} == {1}
    first = next(r for r in got if r.value == b"r7")
    assert first.topic == topic and first.partition == 1 and first.key == b"k7"
    assert first.headers == (("n", b"7"),)
    assert first.timestamp > 1_600_000_000_000
    assert share_offsets(b, group, topic) == [(0, 25), (1, 25)]


def test_implicit_commit_sync_then_close_leaves_nothing(broker: LocalBroker) -> None:
    b = broker.bootstrap_servers
    group, topic = group_and_topic(b, 1, 10)
    with subscribed(b, group, topic) as c:
        assert len(poll_until(c, 10)) == 10
        results = c.commit_sync()
        assert results == {TopicPartition(topic, 0): None}
        assert c.commit_sync() == {}  # nothing new since
    with consumer(b, group) as again:
        again.subscribe([topic])
        assert poll_until(again, 1, timeout_s=3) == []


# -- explicit ------------------------------------------------------------------------------------


def test_explicit_accept_release_reject(broker: LocalBroker) -> None:
    b = broker.bootstrap_servers
    group, topic = group_and_topic(b, 1, 10)
    with subscribed(b, group, topic, "explicit") as c:
        first = poll_until(c, 10)
        assert [r.offset for r in first] == list(range(10))
        for r in first:
            c.acknowledge(r, ACCEPT if r.offset < 5 else RELEASE if r.offset < 7 else REJECT)
        assert c.commit_sync(10) == {TopicPartition(topic, 0): None}
        again = poll_until(c, 2)
        assert [(r.offset, r.delivery_count) for r in again] == [(5, 2), (6, 2)]
        assert [r.value for r in again] == [b"r5", b"r6"]
        for r in again:
            c.acknowledge(r)
        assert poll_until(c, 1, timeout_s=2) == []  # acks rode on that ShareFetch
        assert c.commit_sync() == {TopicPartition(topic, 0): None}
    assert share_offsets(b, group, topic) == [(0, 10)]


def test_explicit_misuse_raises(broker: LocalBroker) -> None:
    b = broker.bootstrap_servers
    group, topic = group_and_topic(b, 1, 3)
    with consumer(b, group, "explicit") as c:
        with pytest.raises(IllegalStateError, match="not subscribed"):
            c.poll(0)
        c.subscribe([topic])
        got = poll_exactly(c, 3)
        c.acknowledge(got[0])
        with pytest.raises(IllegalStateError, match="All records must be acknowledged"):
            c.poll(0)
        with pytest.raises(IllegalStateError, match="cannot be acknowledged"):
            c.acknowledge(got[0])  # twice
        stranger = Record(topic, 0, 99, None, b"x")
        with pytest.raises(IllegalStateError, match="cannot be acknowledged"):
            c.acknowledge(stranger)
        with pytest.raises(IllegalStateError, match="delivery"):
            c.acknowledge(Record(topic, 0, got[1].offset, None, b"x", delivery_count=5))
        with pytest.raises(ValueError, match="GAP"):
            c.acknowledge(got[1], GAP)
        with pytest.raises(IllegalStateError, match="transactional"):
            c.acknowledgements()
        c.acknowledge(got[1], RELEASE)
        c.acknowledge(got[2], REJECT)
        c.poll(0.5)  # allowed now
    with consumer(b, group) as implicit:
        implicit.subscribe([topic])
        with pytest.raises(IllegalStateError, match="explicit or transactional"):
            implicit.acknowledge(got[0])
        with pytest.raises(TypeError):
            implicit.subscribe(topic)  # a string, not a list


# -- several consumers ---------------------------------------------------------------------------


def _consume_in_thread(
    c: ShareConsumer, sink: list[Record], stop: threading.Event, errors: list[BaseException]
) -> threading.Thread:
    def run() -> None:
        try:
            while not stop.is_set():
                for r in c.poll(0.3):
                    c.acknowledge(r, ACCEPT)
                    sink.append(r)
            c.commit_sync(10)
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_two_consumers_share_a_topic_each_record_acked_once(broker: LocalBroker) -> None:
    b = broker.bootstrap_servers
    group = new_group()
    total = 400
    topic = setup_topic(b, 2, total, group)
    sinks: list[list[Record]] = [[], []]
    stop = threading.Event()
    errors: list[BaseException] = []
    consumers = [subscribed(b, group, topic, "explicit") for _ in range(2)]
    threads = [
        _consume_in_thread(c, s, stop, errors) for c, s in zip(consumers, sinks, strict=True)
    ]
    deadline = time.monotonic() + 60
    while sum(len(s) for s in sinks) < total and time.monotonic() < deadline and not errors:
        time.sleep(0.1)
    time.sleep(1.0)  # anything acquired twice would show up now
    stop.set()
    for t in threads:
        t.join(30)
    for c in consumers:
        c.close()
    assert errors == []
    seen = Counter((r.partition, r.offset) for s in sinks for r in s)
    assert len(seen) == total
    assert max(seen.values()) == 1
    halves = [(0, total // 2), (1, total // 2)]
    assert wait_for_offsets(b, group, topic, halves) == halves


def test_interop_with_stock_share_consumer(broker: LocalBroker) -> None:
    b = broker.bootstrap_servers
    group = new_group()
    total = 300
    topic = setup_topic(b, 2, total, group)
    ours = subscribed(b, group, topic, "explicit")
    stock = StockShareConsumer(
        {"bootstrap.servers": b, "group.id": group, "share.acknowledgement.mode": "implicit"}
    )
    stock.subscribe([topic])
    our_records: list[Record] = []
    stop = threading.Event()
    errors: list[BaseException] = []
    thread = _consume_in_thread(ours, our_records, stop, errors)
    # librdkafka's consumer joins and fetches faster than ours: on a loaded machine it would
    # take every record before ours has its assignment, so ours starts first.
    deadline = time.monotonic() + 30
    while not our_records and not errors and time.monotonic() < deadline:
        time.sleep(0.05)
    stock_values: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(our_records) + len(stock_values) < total and time.monotonic() < deadline:
        stock_values.extend(m.value() for m in stock.poll(0.3) if m.error() is None)
    stock.commit_sync(10)
    time.sleep(1.0)
    stop.set()
    thread.join(30)
    ours.close()
    stock.close()
    assert errors == []
    values = Counter([r.value for r in our_records] + stock_values)
    assert len(values) == total
    assert max(values.values()) == 1
    assert our_records, "our consumer got nothing"
    halves = [(0, total // 2), (1, total // 2)]
    assert wait_for_offsets(b, group, topic, halves) == halves


def test_acks_for_a_revoked_partition_go_by_share_acknowledge(broker: LocalBroker) -> None:
    b = broker.bootstrap_servers
    group, topic = group_and_topic(b, 2, 20)
    a = subscribed(b, group, topic, "explicit")
    first = poll_until(a, 20)
    assert {r.partition for r in first} == {0, 1}
    other = subscribed(b, group, topic, "explicit")
    deadline = time.monotonic() + 15
    while len(a._membership.snapshot()[1]) != 1 and time.monotonic() < deadline:
        assert other.poll(0.2) == []  # everything is acquired by `a`
    (kept,) = a._membership.snapshot()[1]
    for r in first:
        a.acknowledge(r)  # half of them now belong to a partition `a` no longer has
    sent: list[int] = []
    real_send = a._client.send

    def spy(node: int | None, api_key: int, body: Any, **kw: Any) -> Any:
        sent.append(api_key)
        return real_send(node, api_key, body, **kw)

    a._client.send = spy  # type: ignore[method-assign]
    produce(b, topic, 20, 2, start=20)
    mine: list[Record] = []
    theirs: list[Record] = []
    deadline = time.monotonic() + 20
    while len(mine) + len(theirs) < 20 and time.monotonic() < deadline:
        for c, sink in ((a, mine), (other, theirs)):
            got = c.poll(0.2)
            for r in got:
                c.acknowledge(r)
            sink.extend(got)
    assert {r.partition for r in mine} == {kept.partition}
    assert sent[:2] == [79, 78]  # ShareAcknowledge for the revoked partition, then ShareFetch
    assert len(mine) + len(theirs) == 20
    results = a.commit_sync(10)
    assert results == {TopicPartition(topic, 0): None, TopicPartition(topic, 1): None}
    other.commit_sync(10)
    a.close()
    other.close()
    assert share_offsets(b, group, topic) == [(0, 20), (1, 20)]


# -- transactional mode --------------------------------------------------------------------------


def test_transactional_mode_records_acks_and_keeps_records_acquired(broker: LocalBroker) -> None:
    b = broker.bootstrap_servers
    group, topic = group_and_topic(b, 2, 20, **LONG_LOCK)
    c = subscribed(b, group, topic, "transactional")
    got = poll_exactly(c, 20)
    with pytest.raises(IllegalStateError, match="transactional"):
        c.commit_sync()
    with pytest.raises(IllegalStateError, match="transactional acknowledgement mode"):
        c.poll(0)
    for r in got:
        ack = REJECT if r.offset == 4 else RELEASE if r.offset == 7 else ACCEPT
        c.acknowledge(r, ack)
    acks = c.acknowledgements()
    assert acks.group_id == group and acks.member_id == c.group_metadata().member_id
    expected = (
        ShareAckBatch(0, 3, ACCEPT),
        ShareAckBatch(4, 4, REJECT),
        ShareAckBatch(5, 6, ACCEPT),
        ShareAckBatch(7, 7, RELEASE),
        ShareAckBatch(8, 9, ACCEPT),
    )
    assert acks.batches == {TopicPartition(topic, 0): expected, TopicPartition(topic, 1): expected}
    assert acks.record_count == 20
    assert not c.acknowledgements()  # cleared
    assert c.poll(0.2) == []  # allowed again: every record is recorded

    # Nothing was sent: another member cannot acquire the records (the lock is 30 s).
    with consumer(b, group) as other:
        other.subscribe([topic])
        assert poll_until(other, 1, timeout_s=4) == []
        # Closing the transactional consumer releases them (the lost acquisition counts as a
        # delivery, as in Kafka 4.4).
        c.close()
        again = poll_until(other, 20, timeout_s=15)
    assert sorted((r.partition, r.offset) for r in again) == sorted(
        (r.partition, r.offset) for r in got
    )
    assert {r.delivery_count for r in again} == {2}


def test_transactional_mode_never_piggybacks_recorded_acks_on_a_fetch(
    broker: LocalBroker,
) -> None:
    """Polling again before send_share_acks_to_transaction must not send the acks."""
    b = broker.bootstrap_servers
    group, topic = group_and_topic(b, 1, 10, **LONG_LOCK)
    c = subscribed(b, group, topic, "transactional")
    got = poll_until(c, 10)
    for r in got:
        c.acknowledge(r)
    assert c.poll(0.5) == []  # a ShareFetch goes out; the recorded acks must stay here
    assert c.acknowledgements().record_count == 10
    with Admin(b) as admin:
        (offset,) = admin.describe_share_group_offsets(group, [topic])
    # Nothing was acknowledged outside a transaction: no share state written yet (Kafka's -1).
    assert (offset.start_offset, offset.lag) == (-1, -1)
    c.close()


# -- close and failures --------------------------------------------------------------------------


def test_close_releases_acquired_records(broker: LocalBroker) -> None:
    b = broker.bootstrap_servers
    group, topic = group_and_topic(b, 1, 10, **LONG_LOCK)
    first = subscribed(b, group, topic, "explicit")
    got = poll_exactly(first, 10)
    for r in got[:4]:
        first.acknowledge(r)
    start = time.monotonic()
    first.close()  # sends the four ACCEPTs, closes the session, leaves the group
    first.close()
    with consumer(b, group, "explicit") as second:
        second.subscribe([topic])
        again = poll_until(second, 6, ack=ACCEPT)
        second.commit_sync()
    assert time.monotonic() - start < 25  # well inside the 30 s lock: released by close
    assert [r.offset for r in again] == list(range(4, 10))
    assert share_offsets(b, group, topic) == [(0, 10)]


def test_unsubscribe_releases_and_resubscribe_rejoins(broker: LocalBroker) -> None:
    b = broker.bootstrap_servers
    group, topic = group_and_topic(b, 1, 6, **LONG_LOCK)
    with subscribed(b, group, topic, "explicit") as c:
        got = poll_until(c, 6)
        for r in got[:2]:
            c.acknowledge(r)
        member = c.member_id
        c.unsubscribe()  # sends the two ACCEPTs, releases the other four, leaves
        assert c.subscription() == set()
        with pytest.raises(IllegalStateError, match="not subscribed"):
            c.poll(0)
        c.subscribe([topic])
        again = poll_until(c, 4, ack=ACCEPT)
        assert c.member_id == member
        assert [r.offset for r in again] == [2, 3, 4, 5]
        assert c.commit_sync() == {TopicPartition(topic, 0): None}
    assert share_offsets(b, group, topic) == [(0, 6)]


def test_lost_session_fails_pending_acks_and_recovers(broker: LocalBroker) -> None:
    b = broker.bootstrap_servers
    group, topic = group_and_topic(b, 1, 5)
    with subscribed(b, group, topic, "explicit") as c:
        got = poll_exactly(c, 5)
        # Drop the fetch connection: the broker closes the session and releases the records.
        for conn in list(c._client._conns.values()):
            conn.close()
        for r in got:
            c.acknowledge(r)
        results = c.commit_sync(10)
        error = results[TopicPartition(topic, 0)]
        assert isinstance(error, KafkaProtocolError)
        again = poll_until(c, 5, ack=ACCEPT)
        assert sorted(r.offset for r in again) == list(range(5))
        outcome = c.commit_sync(10)
    assert outcome == {TopicPartition(topic, 0): None}
    assert share_offsets(b, group, topic) == [(0, 5)]


def test_concurrent_use_raises_and_close_from_another_thread(broker: LocalBroker) -> None:
    b = broker.bootstrap_servers
    group, topic = group_and_topic(b, 1, 0)
    c = subscribed(b, group, topic)
    polled: list[list[Record]] = []
    started = threading.Event()

    def long_poll() -> None:
        started.set()
        polled.append(c.poll(20))

    t = threading.Thread(target=long_poll, daemon=True)
    t.start()
    started.wait()
    time.sleep(0.3)
    with pytest.raises(ConcurrentAccessError):
        c.commit_sync()
    begin = time.monotonic()
    c.close()
    t.join(10)
    assert not t.is_alive()
    assert polled == [[]]
    assert time.monotonic() - begin < 10
    with pytest.raises(ClosedError):
        c.poll(0)


# -- record formats ------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches(broker: LocalBroker, codec: str) -> None:
    b = broker.bootstrap_servers
    group, topic = group_and_topic(
        b, 1, 200, producer_config={"compression.type": codec, "linger.ms": 50}
    )
    with subscribed(b, group, topic) as c:
        got = poll_until(c, 200)
    assert [r.value for r in got] == [f"r{i}".encode() for i in range(200)]
    assert [r.headers for r in got[:2]] == [(("n", b"0"),), (("n", b"1"),)]


def test_transactional_producer_markers_are_skipped(broker: LocalBroker) -> None:
    b = broker.bootstrap_servers
    group, topic = group_and_topic(b, 1, 0)
    producer = Producer({"bootstrap.servers": b, "transactional.id": f"tx-{uuid.uuid4().hex[:6]}"})
    producer.init_transactions(10)
    for batch in range(3):
        producer.begin_transaction()
        for i in range(4):
            producer.produce(topic, value=f"b{batch}-{i}".encode(), partition=0)
        producer.commit_transaction(10)
    with subscribed(b, group, topic) as c:
        got = poll_until(c, 12)
        assert poll_until(c, 1, timeout_s=1.5) == []
        assert c.commit_sync() in ({TopicPartition(topic, 0): None}, {})
    assert [r.value for r in got] == [f"b{x}-{i}".encode() for x in range(3) for i in range(4)]


def test_read_committed_markers_acquired_and_aborted_records_left_out(broker: LocalBroker) -> None:
    """Under read_committed the broker acquires the markers' offsets but not the aborted
    records (as Kafka 4.4); the client delivers the committed records once, acknowledges the
    markers as GAP, and its commit goes through."""
    b = broker.bootstrap_servers
    group, topic = group_and_topic(b, 1, 0, **{"share.isolation.level": "read_committed"})
    producer = Producer({"bootstrap.servers": b, "transactional.id": f"tx-{uuid.uuid4().hex[:6]}"})
    producer.init_transactions(10)
    for batch, commit in enumerate((True, False, True)):
        producer.begin_transaction()
        for i in range(4):
            producer.produce(topic, value=f"b{batch}-{i}".encode(), partition=0)
        if commit:
            producer.commit_transaction(10)
        else:
            producer.abort_transaction(10)
    with subscribed(b, group, topic) as c:
        got = poll_until(c, 8)
        assert poll_until(c, 1, timeout_s=1.5) == []
        c.commit_sync()
    assert [r.value for r in got] == [f"b{x}-{i}".encode() for x in (0, 2) for i in range(4)]
    with subscribed(b, group, topic) as again:
        assert poll_until(again, 1, timeout_s=1.5) == []
