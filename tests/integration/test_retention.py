"""Retention and compacted-topic produce rules on the real broker process, with stock clients."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from coordinator.launcher import LocalBroker
from tests.sharetxn_cli import run_cli
from tests.stock_reads import fresh_consumer

pytestmark = pytest.mark.interop

FAST_RETENTION = {
    "log.retention.check.interval.ms": "300",
    "log.initial.task.delay.ms": "300",
    "log.segment.delete.delay.ms": "200",
}
HOUR_MS = 3_600_000


def create_topic(bootstrap: str, name: str, configs: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, 1, 1, config=configs)]).values():
        future.result(30)


def produce(bootstrap: str, topic: str, values: list[bytes], timestamp_ms: int) -> None:
    """One batch per record, so small segments hold few records."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    errors: list[KafkaError] = []
    for value in values:
        producer.produce(
            topic,
            value,
            key=b"k",
            timestamp=timestamp_ms,
            on_delivery=lambda err, _msg: errors.append(err) if err else None,
        )
        producer.flush(10)
    assert not errors


def watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "wm"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return int(low), int(high)
    finally:
        consumer.close()


def wait_for_low(bootstrap: str, topic: str, low: int, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if watermarks(bootstrap, topic)[0] >= low:
            return
        time.sleep(0.2)
    raise AssertionError(f"log start offset of {topic} stayed at {watermarks(bootstrap, topic)}")


def consume_from(
    bootstrap: str, topic: str, offset: int, reset: str, count: int, wait_s: float = 20
) -> list[bytes]:
    consumer = fresh_consumer(bootstrap, "g", {"auto.offset.reset": reset})
    consumer.assign([TopicPartition(topic, 0, offset)])
    got: list[bytes] = []
    deadline = time.monotonic() + wait_s
    while len(got) < count and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    consumer.close()
    return got


def consume_to_end(
    bootstrap: str, topic: str, offset: int, high: int, wait_s: float = 20
) -> list[tuple[int, bytes]]:
    """(offset, value) read from ``offset`` (reset to earliest if it is gone) up to ``high``."""
    consumer = fresh_consumer(bootstrap, "g", {"auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0, offset)])
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + wait_s
    while (not got or got[-1][0] < high - 1) and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            got.append((msg.offset(), msg.value()))
    consumer.close()
    return got


def test_old_segments_disappear_and_a_consumer_resets_to_the_new_start(tmp_path: Path) -> None:
    with LocalBroker(data_dir=tmp_path / "data", config=FAST_RETENTION) as broker:
        bootstrap = broker.bootstrap_servers
        configs = {"retention.ms": str(HOUR_MS), "internal.segment.bytes": "100"}
        create_topic(bootstrap, "events", configs)
        now = int(time.time() * 1000)
        produce(bootstrap, "events", [b"old-%d" % i for i in range(10)], now - 2 * HOUR_MS)
        produce(bootstrap, "events", [b"new-%d" % i for i in range(3)], now)
        wait_for_low(bootstrap, "events", 10)
        assert watermarks(bootstrap, "events") == (10, 13)
        directory = broker.data_dir / "events-0"
        deadline = time.monotonic() + 10
        while list(directory.glob("*.deleted")) and time.monotonic() < deadline:
            time.sleep(0.1)  # file.delete.delay.ms
        assert sorted(p.name for p in directory.glob("*.log")) == [
            f"{i:020d}.log" for i in (10, 11, 12)
        ]
        # Offset 0 is out of range now: the consumer resets as configured.
        earliest = consume_from(bootstrap, "events", 0, "earliest", 3)
        assert earliest == [b"new-0", b"new-1", b"new-2"]
        produce(bootstrap, "events", [b"later"], now)
        # With "latest" the reset skips what is there.
        assert consume_from(bootstrap, "events", 0, "latest", 1, wait_s=3) == []


def test_kill_during_segment_deletion_loses_nothing(tmp_path: Path) -> None:
    """Kill -9 at random points while retention deletes segments: after the restart the log
    starts at a segment boundary and holds every record above it."""
    data = tmp_path / "data"
    broker = LocalBroker(data_dir=data, config=FAST_RETENTION).start()
    try:
        bootstrap = broker.bootstrap_servers
        create_topic(
            bootstrap, "t", {"retention.ms": str(HOUR_MS), "internal.segment.bytes": "100"}
        )
        now = int(time.time() * 1000)
        produce(bootstrap, "t", [b"%d" % i for i in range(40)], now - 2 * HOUR_MS)
        produce(bootstrap, "t", [b"keep-%d" % i for i in range(5)], now)
        everything = [b"%d" % i for i in range(40)] + [b"keep-%d" % i for i in range(5)]
        for delay in (0.0, 0.15, 0.3, 0.45):
            time.sleep(delay)
            broker.kill()
            broker.start()
            low, high = watermarks(broker.bootstrap_servers, "t")
            assert high == 45 and 0 <= low <= 40
            # Retention goes on deleting while the consumer reads (a fetch reads one segment,
            # here one record), so the consumer may find its offset gone and reset to the new
            # start: whatever it reads starts at or above ``low`` and holds every record up to
            # the end, none missing.
            records = consume_to_end(broker.bootstrap_servers, "t", low, high)
            assert records and records[0][0] >= low, records
            assert records == list(enumerate(everything))[records[0][0] :]
        wait_for_low(broker.bootstrap_servers, "t", 40)
    finally:
        broker.stop()


def test_keyless_records_to_a_compacted_topic_fail_per_record(broker: LocalBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "table", {"cleanup.policy": "compact"})
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    results: dict[bytes, KafkaError | None] = {}

    def done(err: KafkaError | None, msg: object) -> None:
        results[msg.value()] = err  # type: ignore[attr-defined]

    for i in range(3):
        producer.produce("table", b"no-key-%d" % i, on_delivery=done)
        producer.flush(10)
    producer.produce("table", b"keyed", key=b"k", on_delivery=done)
    producer.flush(10)
    assert results[b"keyed"] is None
    for i in range(3):
        err = results[b"no-key-%d" % i]
        assert err is not None and err.code() == KafkaError.INVALID_RECORD, err
    assert watermarks(bootstrap, "table") == (0, 1)


def test_topics_describe_shows_start_offset_size_and_cleanup_policy(tmp_path: Path) -> None:
    with LocalBroker(data_dir=tmp_path / "data", config=FAST_RETENTION) as broker:
        bootstrap = broker.bootstrap_servers
        create_topic(
            bootstrap, "events", {"retention.ms": str(HOUR_MS), "internal.segment.bytes": "100"}
        )
        create_topic(bootstrap, "table", {"cleanup.policy": "compact"})
        now = int(time.time() * 1000)
        produce(bootstrap, "events", [b"old"] * 3, now - 2 * HOUR_MS)
        produce(bootstrap, "events", [b"new"] * 2, now)
        wait_for_low(bootstrap, "events", 3)
        describe = ("topics", "--describe", "--json", "--bootstrap-server", bootstrap)
        out = run_cli(*describe, check=True, timeout=60)
        described = {t["topic"]: t for t in json.loads(out.stdout)}
        events, table = described["events"], described["table"]
        assert (events["cleanup_policy"], table["cleanup_policy"]) == ("delete", "compact")
        (part,) = events["partitions"]
        assert (part["log_start_offset"], part["log_end_offset"]) == (3, 5)
        on_disk = sum(p.stat().st_size for p in (broker.data_dir / "events-0").glob("*.log"))
        assert part["size_bytes"] == on_disk > 0
        assert table["partitions"][0]["size_bytes"] == 0


COMPACTION = {
    "log.cleaner.backoff.ms": "300",
    "log.retention.check.interval.ms": "300",
    "log.initial.task.delay.ms": "300",
}


def produce_table(bootstrap: str, topic: str) -> dict[bytes, bytes]:
    """Versions of six keys in committed transactions, one aborted transaction, tombstones;
    returns the table a read_committed consumer must end with."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": "table-writer", "linger.ms": 0}
    )
    producer.init_transactions(30)
    expected: dict[bytes, bytes] = {}
    for round_ in range(5):
        producer.begin_transaction()
        for k in range(6):
            key, value = b"k%d" % k, b"v%d-%d" % (k, round_)
            producer.produce(topic, value, key=key)
            producer.flush(10)
            expected[key] = value
        producer.commit_transaction(30)
    producer.begin_transaction()
    for k in range(6):
        producer.produce(topic, b"aborted", key=b"k%d" % k)
        producer.flush(10)
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, None, key=b"k0")  # a tombstone
    producer.flush(10)
    producer.commit_transaction(30)
    del expected[b"k0"]
    for _ in range(3):  # more than a segment after it: the tombstone's segment is not active
        producer.begin_transaction()
        producer.produce(topic, b"last", key=b"k1")
        producer.flush(10)
        producer.commit_transaction(30)
    expected[b"k1"] = b"last"
    return expected


def read_from_start(bootstrap: str, topic: str) -> list[Any]:
    """What a stock read_committed consumer meets reading partition 0 from the start to its end."""
    _low, high = watermarks(bootstrap, topic)
    consumer = fresh_consumer(bootstrap, "t", {"isolation.level": "read_committed"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    messages: list[Any] = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is None:
            if consumer.position([TopicPartition(topic, 0)])[0].offset >= high - 1:
                break
            continue
        if msg.error() is None:
            messages.append(msg)
    consumer.close()
    return messages


def read_table(bootstrap: str, topic: str) -> tuple[dict[bytes, bytes], int]:
    """The table a stock read_committed consumer builds from the start, and records read."""
    out: dict[bytes, bytes] = {}
    messages = read_from_start(bootstrap, topic)
    for msg in messages:
        assert msg.value() != b"aborted"
        if msg.value() is None:
            out.pop(msg.key(), None)
        else:
            out[msg.key()] = msg.value()
    return out, len(messages)


def read_table_tombstones(bootstrap: str, topic: str) -> list[bytes]:
    """Keys of the tombstones a read from the start still meets."""
    return [msg.key() for msg in read_from_start(bootstrap, topic) if msg.value() is None]


def test_compacted_topic_keeps_the_latest_value_per_key_for_a_stock_consumer(
    tmp_path: Path,
) -> None:
    with LocalBroker(data_dir=tmp_path / "data", config=COMPACTION) as broker:
        bootstrap = broker.bootstrap_servers
        configs = {
            "cleanup.policy": "compact",
            "internal.segment.bytes": "300",
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": "2000",
        }
        create_topic(bootstrap, "table", configs)
        expected = produce_table(bootstrap, "table")
        written = 34  # committed data records: 30 versions, a tombstone, three last values
        before, read_before = read_table(bootstrap, "table")
        assert before == expected
        assert read_before <= written  # the cleaner may already have run: it runs every 300 ms
        # Cleaner passes: wait (bounded, whatever the machine's load) until the log holds only
        # the latest value of each key outside the active segment: the tombstone too is gone
        # once older than delete.retention.ms, although nothing is written any more.
        deadline = time.monotonic() + 60
        while True:
            after, read_after = read_table(bootstrap, "table")
            assert after == expected  # at every moment, not only at the end
            done = read_after <= len(expected) + 2 and not read_table_tombstones(bootstrap, "table")
            if done or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        # k1's last value may be read up to three times (the active segment is never cleaned).
        assert read_after <= len(expected) + 2 < written
        assert not read_table_tombstones(bootstrap, "table")
        directory = broker.data_dir / "table-0"
        assert (directory / "cleaner-offset-checkpoint").exists()


def test_kill_during_compaction_loses_nothing(tmp_path: Path) -> None:
    broker = LocalBroker(data_dir=tmp_path / "data", config=COMPACTION).start()
    try:
        bootstrap = broker.bootstrap_servers
        configs = {
            "cleanup.policy": "compact",
            "internal.segment.bytes": "300",
            "min.cleanable.dirty.ratio": "0.01",
        }
        create_topic(bootstrap, "table", configs)
        expected = produce_table(bootstrap, "table")
        for delay in (0.0, 0.1, 0.25, 0.4):
            time.sleep(delay)
            broker.kill()
            broker.start()
            assert read_table(broker.bootstrap_servers, "table")[0] == expected
            assert not list((broker.data_dir / "table-0").glob("*.cleaned"))
    finally:
        broker.stop()
