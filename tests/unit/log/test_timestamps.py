"""Record timestamps: LogAppendTime stamping, the CreateTime bounds, ListOffsets lookups.

Kafka 4.4's answers, observed by the differential area "timestamps", are the expectations.
"""

from __future__ import annotations

import random

import pytest

from coordinator.broker import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, BrokerCore
from coordinator.log.memory_log import MemoryLog, MemoryStorage
from coordinator.log.storage import LogConfig
from coordinator.log.timestamps import (
    INVALID_TIMESTAMP_MESSAGE,
    TimestampPolicy,
    stamp,
    validate_batch,
)
from coordinator.partition import Partition
from producer.protocol.records import decode_batch, split_batches
from txn.batch import ATTR_TIMESTAMP_TYPE, ControlType, build_batch, crc_ok, parse_header
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicPartition
from txn.limits import LONG_MAX

NOW = 1_700_000_000_000
HOUR = 3_600_000
DAY = 24 * HOUR
GZIP = 1


def _batch(timestamps: list[int], compression: int = 0, **kw: int | bool) -> bytes:
    return build_batch(
        [(None, f"v{i}".encode()) for i in range(len(timestamps))],
        timestamp_ms=timestamps[0],
        timestamps=timestamps,
        compression=compression,
        **kw,  # type: ignore[arg-type]
    )


def _partition(policy: TimestampPolicy | None = None) -> Partition:
    p = Partition(TopicPartition("t", 0), MemoryLog(LogConfig()))
    p.timestamps = policy or TimestampPolicy()
    return p


def _stored(p: Partition) -> list[tuple[bool, int, int, list[tuple[int, int]]]]:
    """(LogAppendTime bit, base timestamp, max timestamp, [(offset, timestamp)]) per batch."""
    data = b"".join(raw for _h, raw in p.log.batches(0))
    out = []
    for pos, header in split_batches(data):
        assert crc_ok(data, pos, header)
        records = [(r.offset, r.timestamp) for r in decode_batch(data, pos, header).records]
        lat = bool(header.attributes & ATTR_TIMESTAMP_TYPE)
        out.append((lat, header.base_timestamp, header.max_timestamp, records))
    return out


# -- LogAppendTime --------------------------------------------------------------------------


@pytest.mark.parametrize("codec", [0, GZIP])
def test_log_append_time_stamps_the_batch_and_answers_the_append_time(codec: int) -> None:
    p = _partition(TimestampPolicy(log_append_time=True))
    result = p.append(_batch([NOW - DAY + 3000, NOW - DAY, NOW - DAY + 5000], codec), NOW)
    assert result.error is ErrorCode.NONE and result.log_append_time_ms == NOW
    # the base timestamp and the deltas are kept; every record reads as the append time
    assert _stored(p) == [(True, NOW - DAY + 3000, NOW, [(0, NOW), (1, NOW), (2, NOW)])]


def test_log_append_time_ignores_the_bounds_and_create_time_answers_minus_one() -> None:
    policy = TimestampPolicy(log_append_time=True, before_max_ms=1, after_max_ms=1)
    lat = _partition(policy)
    assert lat.append(_batch([NOW - DAY]), NOW).error is ErrorCode.NONE
    assert lat.append(_batch([NOW + DAY]), NOW).error is ErrorCode.NONE
    created = _partition()
    result = created.append(_batch([NOW - 10]), NOW)
    assert result.error is ErrorCode.NONE and result.log_append_time_ms == -1


def test_a_producer_may_not_set_the_log_append_time_bit_on_a_log_append_time_topic() -> None:
    raw = bytearray(build_batch([(b"k", b"value"), (None, None)], timestamp_ms=NOW - 5))
    header = parse_header(raw)
    marked = stamp(bytes(raw), header, NOW - 5, log_append_time=True)
    lat = _partition(TimestampPolicy(log_append_time=True))
    result = lat.append(marked, NOW)
    assert result.error is ErrorCode.INVALID_TIMESTAMP
    assert result.error_message == INVALID_TIMESTAMP_MESSAGE
    assert result.record_errors == (
        (
            0,
            f"Invalid timestamp type in message DefaultRecord(offset=0, timestamp={NOW - 5}, "
            "key=1 bytes, value=5 bytes). Producer should not set timestamp type to "
            "LogAppendTime.",
        ),
        (
            1,
            f"Invalid timestamp type in message DefaultRecord(offset=1, timestamp={NOW - 5}, "
            "key=0 bytes, value=0 bytes). Producer should not set timestamp type to "
            "LogAppendTime.",
        ),
    )
    # a CreateTime topic takes it (Kafka: the bit is only checked where it is not ignored)
    created = _partition()
    assert created.append(marked, NOW).error is ErrorCode.NONE
    assert _stored(created)[0][0] is False  # stored as CreateTime


def test_markers_on_a_log_append_time_topic_are_stamped() -> None:
    p = _partition(TimestampPolicy(log_append_time=True))
    batch = _batch(
        [NOW - DAY], producer_id=7, producer_epoch=0, base_sequence=0, transactional=True
    )
    assert p.append(batch, NOW, transactional_id="x").error is ErrorCode.NONE
    assert p.write_marker(7, 0, 0, ControlType.COMMIT, NOW + 5) is ErrorCode.NONE
    marker = [h for h, _raw in p.log.batches(0)][-1]
    assert marker.is_control and marker.attributes & ATTR_TIMESTAMP_TYPE
    assert marker.max_timestamp == NOW + 5


def test_a_duplicate_answers_the_timestamp_the_batch_was_stored_with() -> None:
    for policy, expected in ((TimestampPolicy(), NOW - 1000), (TimestampPolicy(True), NOW)):
        p = _partition(policy)
        batch = _batch([NOW - 3000, NOW - 1000], producer_id=3, producer_epoch=0, base_sequence=0)
        assert p.append(batch, NOW).error is ErrorCode.NONE
        again = p.append(batch, NOW + 50)
        assert (again.error, again.base_offset, again.log_append_time_ms) == (
            ErrorCode.NONE,
            0,
            expected,
        )


# -- CreateTime -----------------------------------------------------------------------------


def test_kafka_4_defaults_refuse_only_timestamps_over_an_hour_ahead() -> None:
    p = _partition()
    for ts in (0, -1, -5, 1_000_000_000_000, NOW + HOUR // 2, NOW + HOUR):
        assert p.append(_batch([ts]), NOW).error is ErrorCode.NONE, ts
    result = p.append(_batch([NOW, NOW + HOUR + 1, NOW]), NOW)
    assert result.error is ErrorCode.INVALID_TIMESTAMP
    assert result.error_message == INVALID_TIMESTAMP_MESSAGE
    assert result.record_errors == (
        (
            1,
            f"Timestamp {NOW + HOUR + 1} of message with offset 1 is out of range. The "
            f"timestamp should be within [{NOW - LONG_MAX}, {NOW + HOUR}]",
        ),
    )
    assert p.high_watermark == 6  # nothing of the refused batch


@pytest.mark.parametrize("codec", [0, GZIP])
def test_configured_bounds_list_every_refused_record(codec: int) -> None:
    p = _partition(TimestampPolicy(before_max_ms=60_000, after_max_ms=60_000))
    result = p.append(_batch([NOW, NOW - 60_001, NOW + 60_000, NOW + 60_001], codec), NOW)
    assert result.error is ErrorCode.INVALID_TIMESTAMP
    assert [i for i, _m in result.record_errors] == [1, 3]
    assert result.record_errors[0][1].endswith(f"within [{NOW - 60_000}, {NOW + 60_000}]")
    assert p.append(_batch([NOW - 60_000, -1], codec), NOW).error is ErrorCode.NONE


def test_the_upper_bound_wraps_as_a_java_long() -> None:
    p = _partition(TimestampPolicy(before_max_ms=0, after_max_ms=LONG_MAX))
    result = p.append(_batch([NOW - 1]), NOW)
    low, high = NOW, NOW + LONG_MAX - (1 << 64)
    assert result.record_errors[0][1].endswith(f"within [{low}, {high}]")


def test_a_keyless_record_on_a_compacted_topic_is_an_invalid_record_unless_a_timestamp_is_bad() -> (
    None
):
    p = _partition(TimestampPolicy(after_max_ms=0))
    p.compacted = True
    keyless = p.append(_batch([NOW]), NOW)
    assert keyless.error is ErrorCode.INVALID_RECORD
    both = p.append(
        build_batch([(None, b"a"), (b"k", b"b")], timestamp_ms=NOW, timestamps=[NOW, NOW + 1]),
        NOW,
    )
    assert both.error is ErrorCode.INVALID_TIMESTAMP
    assert [i for i, _m in both.record_errors] == [0, 1]
    assert both.record_errors[0][1].startswith("Compacted topic cannot accept message")


def test_the_batch_max_timestamp_is_recomputed_from_the_records() -> None:
    p = _partition()
    batch = _batch([NOW - 5000, NOW - 1000])
    lying = stamp(batch, parse_header(batch), NOW - 9000, log_append_time=False)
    assert p.append(lying, NOW).error is ErrorCode.NONE
    assert p.append(_batch([-5]), NOW).error is ErrorCode.NONE
    assert [(b, m) for _l, b, m, _r in _stored(p)] == [(NOW - 5000, NOW - 1000), (-5, -1)]


# -- lookups --------------------------------------------------------------------------------


def _core(clock: ManualClock) -> BrokerCore:
    config = BrokerConfig({"log.initial.task.delay.ms": 1000})
    return BrokerCore(MemoryStorage(), clock, config, random.Random(1))  # type: ignore[arg-type]


def test_list_offsets_finds_records_inside_batches() -> None:
    clock = ManualClock(NOW)
    core = _core(clock)
    assert core.create_topic("t", 1, 1).error is ErrorCode.NONE
    tp = TopicPartition("t", 0)
    b = NOW - DAY
    core.produce(tp, _batch([b + 3000, b + 1000, b + 5000, b + 5000, b + 2000]), None)
    core.produce(tp, _batch([b + 4000, b + 6000, b + 6000]), None)

    def at(ts: int, committed: bool = False) -> tuple[ErrorCode, int, int]:
        return core.list_offset(tp, ts, read_committed=committed)

    assert at(MAX_TIMESTAMP) == (ErrorCode.NONE, 6, b + 6000)  # the first record with it
    assert at(b) == at(b + 3000) == (ErrorCode.NONE, 0, b + 3000)
    assert at(b + 5000) == (ErrorCode.NONE, 2, b + 5000)
    assert at(b + 5500) == at(b + 6000, True) == (ErrorCode.NONE, 6, b + 6000)
    assert at(b + 9000) == (ErrorCode.NONE, -1, -1)
    assert at(-4) == at(-5) == at(-7) == (ErrorCode.UNSUPPORTED_VERSION, -1, -1)
    assert core.list_offset(tp, MAX_TIMESTAMP, read_committed=False, version=6)[0] is (
        ErrorCode.UNSUPPORTED_VERSION
    )
    assert core.list_offset(tp, -4, read_committed=False, version=8) == (ErrorCode.NONE, 0, -1)
    assert core.list_offset(tp, -5, read_committed=False, version=9) == (ErrorCode.NONE, -1, -1)
    # after DeleteRecords the lookups start at the log start offset
    assert core.delete_records(tp, 3) == (ErrorCode.NONE, 3)
    assert at(b) == (ErrorCode.NONE, 3, b + 5000)
    assert at(EARLIEST_TIMESTAMP) == (ErrorCode.NONE, 3, -1)
    core.close()


def test_open_transactions_hide_lookups_from_read_committed_and_markers_count() -> None:
    clock = ManualClock(NOW)
    core = _core(clock)
    assert core.create_topic("t", 1, 1).error is ErrorCode.NONE
    tp = TopicPartition("t", 0)
    b = NOW - DAY
    core.produce(tp, _batch([b + 1000, b + 2000]), None)
    part = core.partitions[tp]
    txn = build_batch(
        [(None, b"a"), (None, b"b")],
        timestamp_ms=b + 4000,
        timestamps=[b + 4000, b + 3000],
        producer_id=9,
        producer_epoch=0,
        base_sequence=0,
        transactional=True,
    )
    assert part.append(txn, NOW, transactional_id="x").error is ErrorCode.NONE
    assert core.list_offset(tp, LATEST_TIMESTAMP, read_committed=True) == (ErrorCode.NONE, 2, -1)
    assert core.list_offset(tp, MAX_TIMESTAMP, read_committed=True) == (ErrorCode.NONE, -1, -1)
    assert core.list_offset(tp, MAX_TIMESTAMP, read_committed=False) == (
        ErrorCode.NONE,
        2,
        b + 4000,
    )
    assert core.list_offset(tp, b + 1500, read_committed=True) == (ErrorCode.NONE, 1, b + 2000)
    assert core.list_offset(tp, b + 3000, read_committed=True) == (ErrorCode.NONE, -1, -1)
    assert part.write_marker(9, 0, 0, ControlType.ABORT, NOW) is ErrorCode.NONE
    # the marker carries the time it was written: the largest timestamp of the partition
    assert core.list_offset(tp, MAX_TIMESTAMP, read_committed=True) == (ErrorCode.NONE, 4, NOW)
    assert core.list_offset(tp, b + 10_000, read_committed=False) == (ErrorCode.NONE, 4, NOW)
    core.close()


def test_retention_follows_the_append_time_on_a_log_append_time_topic() -> None:
    clock = ManualClock(NOW)
    core = _core(clock)
    configs = {"message.timestamp.type": "LogAppendTime", "retention.ms": "60000"}
    assert core.create_topic("lat", 1, 1, configs).error is ErrorCode.NONE
    assert core.create_topic("ct", 1, 1, {"retention.ms": "60000"}).error is ErrorCode.NONE
    for name in ("lat", "ct"):
        result = core.produce(TopicPartition(name, 0), _batch([NOW - DAY]), None)
        assert result.error is ErrorCode.NONE
    clock.advance(2000)  # a retention check: the CreateTime record is a day old
    assert core.partitions[TopicPartition("ct", 0)].log_start_offset == 1
    assert core.partitions[TopicPartition("lat", 0)].log_start_offset == 0
    clock.advance(300_000)  # log.retention.check.interval.ms: now it is older than a minute
    assert core.partitions[TopicPartition("lat", 0)].log_start_offset == 1
    core.close()


def test_altering_the_timestamp_type_applies_to_the_next_append() -> None:
    clock = ManualClock(NOW)
    core = _core(clock)
    assert core.create_topic("t", 1, 1).error is ErrorCode.NONE
    tp = TopicPartition("t", 0)
    assert core.produce(tp, _batch([NOW - DAY]), None).log_append_time_ms == -1
    assert core.alter_topic_configs("t", {"message.timestamp.type": "LogAppendTime"}, [])[0] is (
        ErrorCode.NONE
    )
    assert core.produce(tp, _batch([NOW - DAY]), None).log_append_time_ms == NOW
    assert core.list_offset(tp, MAX_TIMESTAMP, read_committed=False) == (ErrorCode.NONE, 1, NOW)
    error, _ = core.alter_topic_configs("t", {"message.timestamp.after.max.ms": "0"}, [])
    assert error is ErrorCode.NONE
    assert core.produce(tp, _batch([NOW + 1]), None).error is ErrorCode.NONE  # LogAppendTime
    core.alter_topic_configs("t", {}, ["message.timestamp.type"])
    assert core.produce(tp, _batch([NOW + 1]), None).error is ErrorCode.INVALID_TIMESTAMP
    core.close()


@pytest.mark.parametrize("seed", range(30))
def test_the_fast_path_agrees_with_record_by_record_validation(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 40)
    timestamps = [
        rng.choice([-1, 0, NOW - DAY, NOW + HOUR, NOW + HOUR + 1, NOW + rng.randint(-HOUR, HOUR)])
        for _ in range(n)
    ]
    codec = rng.choice([0, GZIP])
    batch = build_batch(
        [(b"k%d" % i, b"v" * rng.randint(0, 300)) for i in range(n)],
        timestamp_ms=timestamps[0],
        timestamps=timestamps,
        compression=codec,
    )
    policy = rng.choice(
        [TimestampPolicy(), TimestampPolicy(before_max_ms=HOUR), TimestampPolicy(True)]
    )
    header = parse_header(batch)
    fast = validate_batch(batch, header, NOW, policy, compacted_in=None, max_bytes=1 << 20)
    # keyed records on a "compacted" partition: the same checks, record by record
    slow = validate_batch(batch, header, NOW, policy, compacted_in="t-0", max_bytes=1 << 20)
    assert fast == slow
