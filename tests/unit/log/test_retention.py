"""Retention: Kafka's segment roll and deletion rules, on every log and through the broker core.

Time comes from the ManualClock (record timestamps are chosen by the test), so nothing sleeps.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from coordinator.broker import EARLIEST_TIMESTAMP, BrokerCore
from coordinator.log.file_log import DELETED_SUFFIX, FileLog, FileStorage
from coordinator.log.memory_log import MemoryLog, MemoryStorage
from coordinator.log.segments import RetentionPolicy, retention_start_offset
from coordinator.log.storage import LogConfig, PartitionLog, SegmentInfo
from coordinator.partition import Partition
from txn.batch import build_batch
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicPartition

HOUR = 3_600_000
T0 = 1_700_000_000_000


def batch(ts: int, n: int = 1, size: int = 10) -> bytes:
    return build_batch([(None, b"x" * size) for _ in range(n)], timestamp_ms=ts)


def seg(base: int, nxt: int, size: int, ts: int) -> SegmentInfo:
    return SegmentInfo(base, nxt, size, ts)


# -- the pure rules --------------------------------------------------------------------------


def test_retention_ms_deletes_old_segments_up_to_the_first_young_one() -> None:
    segs = [seg(0, 10, 100, T0), seg(10, 20, 100, T0 + HOUR), seg(20, 25, 50, T0)]
    policy = RetentionPolicy(retention_ms=HOUR, retention_bytes=-1)
    # At T0 + HOUR + 1 only the first is older than retention.ms; the walk stops at the second
    # even though the third (the active one) is old too.
    assert retention_start_offset(segs, 0, 25, T0 + HOUR + 1, policy) == 10
    # Strictly older than retention.ms, as Kafka (now - largest > retention.ms).
    assert retention_start_offset(segs, 0, 25, T0 + HOUR, policy) == 0


def test_an_expired_active_segment_goes_too_but_never_an_empty_one() -> None:
    policy = RetentionPolicy(retention_ms=HOUR)
    full = [seg(0, 10, 100, T0), seg(10, 20, 100, T0)]
    assert retention_start_offset(full, 0, 20, T0 + 2 * HOUR, policy) == 20
    empty_active = [seg(0, 10, 100, T0), seg(10, 10, 0, T0)]
    assert retention_start_offset(empty_active, 0, 10, T0 + 2 * HOUR, policy) == 10


def test_retention_bytes_counts_the_whole_log() -> None:
    segs = [seg(0, 10, 100, T0), seg(10, 20, 100, T0), seg(20, 30, 100, T0)]
    now = T0
    # 300 bytes, limit 150: deleting the first leaves 200 >= 150, the second would leave 100 <
    # 150, so it stays (the log never drops below retention.bytes).
    assert retention_start_offset(segs, 0, 30, now, RetentionPolicy(-1, 150)) == 10
    assert retention_start_offset(segs, 0, 30, now, RetentionPolicy(-1, 100)) == 20
    assert retention_start_offset(segs, 0, 30, now, RetentionPolicy(-1, 200)) == 10
    assert retention_start_offset(segs, 0, 30, now, RetentionPolicy(-1, 301)) == 0
    # The active segment is counted and may go when the limit is 0.
    assert retention_start_offset(segs, 0, 30, now, RetentionPolicy(-1, 0)) == 30


def test_compact_only_topics_delete_nothing_by_time_or_size() -> None:
    segs = [seg(0, 10, 100, T0), seg(10, 20, 100, T0)]
    policy = RetentionPolicy(retention_ms=0, retention_bytes=0, delete=False)
    assert retention_start_offset(segs, 0, 20, T0 + HOUR, policy) == 0
    # ... but a segment wholly below the log start offset still goes.
    assert retention_start_offset(segs, 12, 20, T0 + HOUR, policy) == 12


def test_nothing_at_or_past_the_high_watermark_is_deleted() -> None:
    segs = [seg(0, 10, 100, T0), seg(10, 20, 100, T0)]
    assert retention_start_offset(segs, 0, 15, T0 + HOUR, RetentionPolicy(0)) == 10


# -- the logs --------------------------------------------------------------------------------


def _logs(tmp_path: Path, config: LogConfig) -> list[PartitionLog]:
    return [MemoryLog(config), FileLog(tmp_path / "t-0", config)]


@pytest.mark.parametrize("kind", [0, 1], ids=["memory", "file"])
def test_segment_ms_rolls_on_record_timestamps_only_when_appending(
    tmp_path: Path, kind: int
) -> None:
    log = _logs(tmp_path, LogConfig(segment_ms=HOUR))[kind]
    log.append(batch(T0), T0)
    log.append(batch(T0 + HOUR), T0)  # exactly segment.ms later: same segment
    assert len(log.segments()) == 1
    log.append(batch(T0 + HOUR + 1), T0)  # record time, not the clock, decides
    segs = log.segments()
    assert [(s.base_offset, s.next_offset) for s in segs] == [(0, 2), (2, 3)]
    assert segs[0].largest_timestamp_ms == T0 + HOUR
    log.close()


@pytest.mark.parametrize("kind", [0, 1], ids=["memory", "file"])
def test_segment_bytes_rolls_and_advance_deletes_whole_segments(tmp_path: Path, kind: int) -> None:
    one = len(batch(T0))
    log = _logs(tmp_path, LogConfig(segment_bytes=2 * one))[kind]
    for i in range(5):
        log.append(batch(T0 + i), T0)
    assert [(s.base_offset, s.next_offset) for s in log.segments()] == [(0, 2), (2, 4), (4, 5)]
    log.advance_start_offset(5)  # everything: the active segment is rolled, then deleted
    segs = log.segments()
    assert [(s.base_offset, s.next_offset, s.size_bytes) for s in segs] == [(5, 5, 0)]
    assert log.log_start_offset == log.log_end_offset == 5
    log.append(batch(T0), T0)
    assert log.read(5, 1000)
    log.close()


def test_file_log_retires_segments_then_purges_them(tmp_path: Path) -> None:
    one = len(batch(T0))
    directory = tmp_path / "t-0"
    log = FileLog(directory, LogConfig(segment_bytes=one))
    for i in range(3):
        log.append(batch(T0 + i), T0)
    log.advance_start_offset(2)
    retired = sorted(p.name for p in directory.glob(f"*{DELETED_SUFFIX}"))
    assert retired == [f"{0:020d}.log{DELETED_SUFFIX}", f"{1:020d}.log{DELETED_SUFFIX}"]
    assert log.purge_deleted() == 2 * one
    assert not list(directory.glob(f"*{DELETED_SUFFIX}"))
    assert sorted(p.name for p in directory.glob("*.log")) == [f"{i:020d}.log" for i in (2,)]
    log.close()


def test_file_log_crash_between_checkpoint_and_deletion_loses_nothing(tmp_path: Path) -> None:
    """The checkpoint goes first: a crash before or during the renames, or before the purge,
    reopens at the new start offset with every record above it and no retired file left."""
    one = len(batch(T0))
    directory = tmp_path / "t-0"
    log = FileLog(directory, LogConfig(segment_bytes=one))
    for i in range(4):
        log.append(batch(T0 + i), T0)
    log.close()
    # A crash after the checkpoint was written but before any segment was renamed ...
    (directory / "log-start-offset").write_text("2\n")
    # ... and a crash after one rename, before the purge.
    (directory / f"{0:020d}.log").rename(directory / f"{0:020d}.log{DELETED_SUFFIX}")
    log = FileLog(directory, LogConfig(segment_bytes=one))
    assert (log.log_start_offset, log.log_end_offset) == (2, 4)
    assert [h.base_offset for h, _ in log.batches(0)] == [2, 3]
    assert not list(directory.glob(f"*{DELETED_SUFFIX}"))
    assert sorted(p.name for p in directory.glob("*.log")) == [f"{i:020d}.log" for i in (2, 3)]
    log.close()


# -- through the broker core -----------------------------------------------------------------


def _core(storage: object, clock: ManualClock, **overrides: object) -> BrokerCore:
    config = BrokerConfig(
        {
            "log.retention.check.interval.ms": 1000,
            "log.initial.task.delay.ms": 1000,
            "log.segment.delete.delay.ms": 5000,
            **overrides,
        }
    )
    return BrokerCore(storage, clock, config, random.Random(1))  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_broker_applies_retention_ms_on_its_schedule(tmp_path: Path, kind: str) -> None:
    clock = ManualClock(T0)
    storage = MemoryStorage() if kind == "memory" else FileStorage(tmp_path)
    core = _core(storage, clock)
    configs = {"retention.ms": str(HOUR), "segment.ms": "60000"}
    assert core.create_topic("events", 1, 1, configs).error is ErrorCode.NONE
    tp = TopicPartition("events", 0)
    for minute in range(10):  # one segment per record: each is > segment.ms after the last
        ts = T0 + minute * 61_000
        assert core.produce(tp, batch(ts), None).error is ErrorCode.NONE
    assert len(core.partitions[tp].log.segments()) == 10
    clock.advance(HOUR + 61_000 + 1000)  # the first two records are now older than an hour
    assert core.partitions[tp].log_start_offset == 2
    assert core.list_offset(tp, EARLIEST_TIMESTAMP, read_committed=False) == (ErrorCode.NONE, 2, -1)
    fetched = core.fetch(tp, 0, 1000, read_committed=False)
    assert fetched.error is ErrorCode.OFFSET_OUT_OF_RANGE and fetched.log_start_offset == 2
    assert core.fetch(tp, 2, 1000, read_committed=False).records
    # DeleteRecords below the start is a no-op answering the start, as Kafka.
    assert core.delete_records(tp, 1) == (ErrorCode.NONE, 2)
    assert core.retention_bytes_deleted == 2 * len(batch(T0))
    assert core.gauges()["log-retention-bytes-deleted"] == 2 * len(batch(T0))
    assert core.gauges()["log-retention-runs"] >= 1
    if kind == "file":
        directory = tmp_path / "events-0"
        # The second segment expired on the last check: its file waits for the delay.
        assert [p.name for p in directory.glob(f"*{DELETED_SUFFIX}")] == [
            f"{1:020d}.log{DELETED_SUFFIX}"
        ]
        clock.advance(5000)  # file.delete.delay.ms
        assert not list(directory.glob(f"*{DELETED_SUFFIX}"))
    clock.advance(10 * HOUR)  # everything expired: the active segment is rolled and deleted
    part = core.partitions[tp]
    assert part.log_start_offset == part.high_watermark == 10
    core.close()
    if kind == "file":  # the start offset survives a restart
        core = _core(FileStorage(tmp_path), ManualClock(clock.now_ms()))
        assert core.partitions[tp].log_start_offset == 10
        core.close()


def test_retention_bytes_and_altered_configs_apply_at_the_next_check() -> None:
    clock = ManualClock(T0)
    core = _core(MemoryStorage(), clock)
    one = len(batch(T0))
    assert (
        core.create_topic("sized", 1, 1, {"internal.segment.bytes": str(2 * one)}).error
        is ErrorCode.NONE
    )
    tp = TopicPartition("sized", 0)
    for i in range(6):
        core.produce(tp, batch(T0 + i), None)
    clock.advance(2000)
    assert core.partitions[tp].log_start_offset == 0  # the default keeps a week, no size limit
    error, _ = core.alter_topic_configs("sized", {"retention.bytes": str(3 * one)}, [])
    assert error is ErrorCode.NONE
    clock.advance(1000)
    # 6 batches in 3 segments of 2; keeping >= 3 batches' bytes leaves the last two segments.
    assert core.partitions[tp].log_start_offset == 2
    core.close()


def test_compact_topics_and_internal_logs_are_not_deleted_by_time() -> None:
    clock = ManualClock(T0)
    core = _core(MemoryStorage(), clock, **{"log.retention.ms": 1, "log.roll.ms": 1})
    configs = {"cleanup.policy": "compact"}
    assert core.create_topic("table", 1, 1, configs).error is ErrorCode.NONE
    assert core.create_topic("plain", 1, 1).error is ErrorCode.NONE
    for name in ("table", "plain"):
        core.produce(TopicPartition(name, 0), build_batch([(b"k", b"v")], timestamp_ms=T0), None)
    clock.advance(5000)
    assert core.partitions[TopicPartition("table", 0)].log_start_offset == 0
    assert core.partitions[TopicPartition("plain", 0)].log_start_offset == 1
    core.close()


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "retention.ms",
            "abc",
            "Invalid value abc for configuration retention.ms: Not a number of type LONG",
        ),
        (
            "retention.ms",
            "-2",
            "Invalid value -2 for configuration retention.ms: Value must be at least -1",
        ),
        (
            "segment.bytes",
            "3000000000",
            "Invalid value 3000000000 for configuration segment.bytes: Not a number of type INT",
        ),
        (
            "cleanup.policy",
            "compact,forever",
            "Invalid value forever for configuration "
            "cleanup.policy: String must be one of: compact, delete",
        ),
    ],
)
def test_bad_config_values_are_invalid_config(name: str, value: str, message: str) -> None:
    core = _core(MemoryStorage(), ManualClock(T0))
    result = core.create_topic("bad", 1, 1, {name: value})
    assert (result.error, result.message) == (ErrorCode.INVALID_CONFIG, message)
    assert core.create_topic("good", 1, 1).error is ErrorCode.NONE
    assert core.alter_topic_configs("good", {name: value}, []) == (
        ErrorCode.INVALID_CONFIG,
        message,
    )
    core.close()


# -- key-less records on a compacted topic -----------------------------------------------------


@pytest.mark.parametrize("codec", [0, 1, 4], ids=["none", "gzip", "zstd"])
def test_compacted_partition_refuses_keyless_records_with_kafka_record_errors(codec: int) -> None:
    part = Partition(TopicPartition("table", 3), MemoryLog())
    part.compacted = True
    mixed = build_batch(
        [(b"k", b"1"), (None, b"2"), (b"k", b"3"), (None, b"4")], timestamp_ms=T0, compression=codec
    )
    result = part.append(mixed, T0)
    message = "Compacted topic cannot accept message without key in topic partition table-3"
    assert result.error is ErrorCode.INVALID_RECORD
    assert result.record_errors == ((1, message), (3, message))
    assert result.error_message == (
        "One or more records have been rejected due to 2 record errors in total, and only "
        f"showing the first three errors at most: [RecordError(batchIndex=1, message='{message}'), "
        f"RecordError(batchIndex=3, message='{message}')]"
    )
    assert part.high_watermark == 0  # nothing of the request was appended
    # A later batch of the same request that is refused keeps the earlier one out too.
    keyed = build_batch([(b"k", b"v")], timestamp_ms=T0)
    assert part.append(keyed + mixed, T0).error is ErrorCode.INVALID_RECORD
    assert part.high_watermark == 0
    assert part.append(keyed, T0).error is ErrorCode.NONE
    part.compacted = False
    assert part.append(mixed, T0).error is ErrorCode.NONE


def test_idempotent_producer_continues_after_retention_removed_its_batches(
    tmp_path: Path,
) -> None:
    """Retention removed every batch: the only producer-state snapshot is at the log start,
    which Kafka does not load, so after a restart the producer is unknown, and an unknown
    producer may continue at any sequence, as in Kafka (tests/unit/log/
    test_producer_snapshots.py: with later batches the snapshot keeps it)."""
    clock = ManualClock(T0)
    core = _core(FileStorage(tmp_path), clock)
    configs = {"retention.ms": str(HOUR), "internal.segment.bytes": "100"}
    assert core.create_topic("idem", 1, 1, configs).error is ErrorCode.NONE
    tp = TopicPartition("idem", 0)

    def idem(seq: int, ts: int) -> bytes:
        records = [(b"k", b"v")]
        return build_batch(
            records, timestamp_ms=ts, producer_id=9, producer_epoch=0, base_sequence=seq
        )

    for seq in range(3):
        assert core.produce(tp, idem(seq, T0), None).error is ErrorCode.NONE
    clock.advance(2 * HOUR)
    assert core.partitions[tp].log_start_offset == 3
    core.close()
    core = _core(FileStorage(tmp_path), clock)
    assert core.produce(tp, idem(3, clock.now_ms()), None).error is ErrorCode.NONE
    assert core.produce(tp, idem(3, clock.now_ms()), None).base_offset == 3  # a duplicate
    core.close()
