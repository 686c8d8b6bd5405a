"""The log cleaner: Kafka's compaction rules, the swap's crash safety, the broker's schedule."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from coordinator.broker import BrokerCore
from coordinator.log import file_swap
from coordinator.log.cleaner import CleanerPolicy, clean, cleanable_segments, needs_cleaning
from coordinator.log.cleaner_passes import CleanTarget, LogCleaner
from coordinator.log.file_log import FileLog, FileStorage
from coordinator.log.memory_log import MemoryLog, MemoryStorage
from coordinator.log.storage import LogConfig, SegmentInfo
from coordinator.partition import Partition
from txn.batch import BatchHeader, ControlType, build_batch, build_control_batch, parse_header
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicPartition
from txn.record_keys import records_of

T0 = 1_700_000_000_000
DAY = 86_400_000
POLICY = CleanerPolicy(delete_retention_ms=DAY, min_cleanable_dirty_ratio=0.0)


def at(offset: int, records: list[tuple[bytes | None, bytes | None]], ts: int = T0, **kw: object):
    raw = build_batch(records, base_offset=offset, timestamp_ms=ts, **kw)  # type: ignore[arg-type]
    return parse_header(raw), raw


def fetch_all(core: BrokerCore, tp: TopicPartition) -> bytes:
    """Every batch of ``tp`` (committed), fetched as a consumer does: one segment per Fetch."""
    out = b""
    offset = 0
    while True:
        data = core.fetch(tp, offset, 10**6, read_committed=True).records
        if not data:
            return out
        out += data
        pos = 0
        while pos < len(data):
            header = parse_header(data, pos)
            offset = header.last_offset + 1
            pos += header.size


def table(batches: list[bytes]) -> dict[bytes, bytes]:
    """What a consumer reading from the start ends with (tombstones delete)."""
    out: dict[bytes, bytes] = {}
    for raw in batches:
        header = parse_header(raw)
        if header.is_control:
            continue
        for record in records_of(raw, header):
            assert record.key is not None
            value = _value(record.raw)
            if value is None:
                out.pop(record.key, None)
            else:
                out[record.key] = value
    return out


def _value(raw: bytes) -> bytes | None:
    header = build_batch([(None, None)], timestamp_ms=0)
    del header
    # decode: length, attributes, ts delta, offset delta, key, value
    from txn.codec import Reader  # noqa: PLC0415

    reader = Reader(raw, ValueError)
    reader.varint()
    reader.take(">b")
    reader.varint()
    reader.varint()
    key_length = reader.varint()
    if key_length >= 0:
        reader.raw(key_length)
    value_length = reader.varint()
    return None if value_length < 0 else reader.raw(value_length)


def offsets(batches: list[bytes]) -> list[int]:
    return [r.offset for raw in batches for r in records_of(raw, parse_header(raw))]


def never_aborted(_header: BatchHeader) -> bool:
    return False


# -- the rules -------------------------------------------------------------------------------


def test_latest_value_per_key_stays_with_its_offset() -> None:
    batches = [
        at(0, [(b"a", b"1"), (b"b", b"1")]),
        at(2, [(b"a", b"2")]),
        at(3, [(b"c", b"1"), (b"b", b"2"), (None, b"x")]),
    ]
    kept = clean(batches, never_aborted, T0, POLICY)
    assert offsets(kept) == [2, 3, 4]
    assert table(kept) == {b"a": b"2", b"b": b"2", b"c": b"1"}
    # A rewritten batch keeps its base offset and last offset (producer sequence bookkeeping).
    last = parse_header(kept[-1])
    assert (last.base_offset, last.last_offset, last.records_count) == (3, 5, 2)
    assert kept[0] == batches[1][1]  # untouched batches are copied as they are


def test_tombstones_stay_for_delete_retention_ms_from_the_first_cleaning() -> None:
    """KIP-534: the first cleaning that keeps a tombstone sets its batch's delete horizon
    (that cleaning's time plus delete.retention.ms), whatever the record's timestamp; a
    later cleaning past the horizon removes it."""
    batches = [at(0, [(b"a", b"1")]), at(1, [(b"a", None)], ts=T0 + 10)]
    first = clean(batches, never_aborted, T0 + 5 * DAY, POLICY)
    assert offsets(first) == [1]
    header = parse_header(first[0])
    assert header.delete_horizon_ms == T0 + 6 * DAY
    assert [r.timestamp_ms for r in records_of(first[0], header)] == [T0 + 10]
    again = [(parse_header(raw), raw) for raw in first]
    assert clean(again, never_aborted, T0 + 6 * DAY - 1, POLICY) == first
    assert offsets(clean(again, never_aborted, T0 + 6 * DAY, POLICY)) == []


def test_aborted_records_go_and_markers_stay_while_needed() -> None:
    committed = at(
        0, [(b"a", b"c")], producer_id=5, producer_epoch=0, base_sequence=0, transactional=True
    )
    aborted = at(
        1, [(b"a", b"x")], producer_id=6, producer_epoch=0, base_sequence=0, transactional=True
    )
    commit_raw = bytearray(
        build_control_batch(
            ControlType.COMMIT,
            producer_id=5,
            producer_epoch=0,
            coordinator_epoch=0,
            timestamp_ms=T0,
        )
    )
    abort_raw = bytearray(
        build_control_batch(
            ControlType.ABORT, producer_id=6, producer_epoch=0, coordinator_epoch=0, timestamp_ms=T0
        )
    )
    commit_raw[:8] = (2).to_bytes(8, "big")
    abort_raw[:8] = (3).to_bytes(8, "big")
    batches = [
        committed,
        aborted,
        (parse_header(commit_raw), bytes(commit_raw)),
        (parse_header(abort_raw), bytes(abort_raw)),
        at(4, [(b"z", b"1")]),  # the last batch of a round stays even if emptied
    ]

    def is_aborted(header: BatchHeader) -> bool:
        return header.producer_id == 6

    first = clean(batches, is_aborted, T0 + 2 * DAY, POLICY)
    # The aborted value never shadows the committed one; the ABORT marker stays while the
    # pass saw a batch of its transaction (as Kafka's CleanedTransactionMetadata).
    assert [parse_header(b).base_offset for b in first] == [0, 2, 3, 4]
    assert table(first) == {b"a": b"c", b"z": b"1"}
    assert all(parse_header(b).delete_horizon_ms is None for b in first)
    # The next pass finds the ABORT marker's transaction empty: it sets its delete horizon.
    second = clean([(parse_header(b), b) for b in first], is_aborted, T0 + 3 * DAY, POLICY)
    assert [parse_header(b).delete_horizon_ms for b in second] == [None, None, T0 + 4 * DAY, None]
    # Past the horizon it goes; the COMMIT marker stays while its record does.
    third = clean([(parse_header(b), b) for b in second], is_aborted, T0 + 4 * DAY, POLICY)
    assert [parse_header(b).base_offset for b in third] == [0, 2, 4]


def _seg(base: int, nxt: int, size: int, largest: int, first: int = -1) -> SegmentInfo:
    return SegmentInfo(base, nxt, size, largest, first)


def test_cleanable_range_stops_at_the_active_segment_the_lso_and_the_lag() -> None:
    segs = [_seg(0, 10, 100, T0), _seg(10, 20, 100, T0 + 1000), _seg(20, 25, 50, T0 + 2000)]
    assert cleanable_segments(segs, 25, T0 + 5000, CleanerPolicy()) == 2
    assert cleanable_segments(segs, 15, T0 + 5000, CleanerPolicy()) == 1  # the LSO
    lagged = CleanerPolicy(min_compaction_lag_ms=4500)
    assert cleanable_segments(segs, 25, T0 + 5000, lagged) == 1


def test_dirty_ratio_and_max_compaction_lag_decide_when() -> None:
    segs = [_seg(0, 10, 100, T0, T0), _seg(10, 20, 100, T0, T0)]
    half = CleanerPolicy(min_cleanable_dirty_ratio=0.5)
    assert needs_cleaning(segs, 10, T0, half)  # 100 dirty of 200
    assert not needs_cleaning(segs, 10, T0, CleanerPolicy(min_cleanable_dirty_ratio=0.6))
    assert not needs_cleaning(segs, 20, T0, half)  # nothing dirty
    forced = CleanerPolicy(min_cleanable_dirty_ratio=0.9, max_compaction_lag_ms=1000)
    assert needs_cleaning(segs, 10, T0 + 1001, forced)


def test_random_histories_keep_the_table() -> None:
    """What a consumer rebuilds from the cleaned log equals what it rebuilds from the
    original, whatever is written and whenever cleaning runs (catches a cleaner that drops
    the latest value of a key)."""
    for seed in range(30):
        rng = random.Random(seed)
        batches: list[tuple[BatchHeader, bytes]] = []
        offset = 0
        for _ in range(rng.randrange(1, 40)):
            n = rng.randrange(1, 4)
            records = [
                (b"k%d" % rng.randrange(6), None if rng.random() < 0.2 else b"v%d" % offset)
                for _ in range(n)
            ]
            batches.append(at(offset, records, ts=T0 + offset))
            offset += n
        expected = table([raw for _, raw in batches])
        once = clean(batches, never_aborted, T0 + offset, POLICY)
        assert table(once) == expected
        twice = clean([(parse_header(b), b) for b in once], never_aborted, T0 + offset, POLICY)
        assert table(twice) == expected and offsets(twice) == offsets(once)
        # the first pass set the tombstones' delete horizon; past it they go
        late = clean([(parse_header(b), b) for b in once], never_aborted, T0 + offset + DAY, POLICY)
        assert table(late) == expected  # tombstones gone, the table the same
        assert all(_value(r.raw) is not None for b in late for r in records_of(b, parse_header(b)))


# -- the swap --------------------------------------------------------------------------------


def _log_with_segments(directory: Path) -> tuple[FileLog, int]:
    one = len(build_batch([(b"k0", b"v0")], timestamp_ms=T0))
    log = FileLog(directory, LogConfig(segment_bytes=2 * one))
    for i in range(6):
        log.append(build_batch([(b"k%d" % (i % 2), b"v%d" % i)], timestamp_ms=T0), T0)
    return log, one


def _cleaned_contents(log: FileLog) -> dict[int, list[bytes]]:
    segs = log.segments()[:-1]
    batches = [(h, bytes(raw)) for h, raw in log.batches(0) if h.base_offset < segs[-1].next_offset]
    from coordinator.log.cleaner import by_segment  # noqa: PLC0415

    return by_segment(segs, clean(batches, never_aborted, T0, POLICY))


def test_swap_replaces_segments_and_keeps_offsets(tmp_path: Path) -> None:
    log, _ = _log_with_segments(tmp_path / "t-0")
    assert [s.base_offset for s in log.segments()] == [0, 2, 4]
    log.replace_segments(_cleaned_contents(log), 4)
    # Offsets 0..3 held k0,k1,k0,k1: only 2 and 3 stay; the first segment stays, empty.
    assert [h.base_offset for h, _ in log.batches(0)] == [2, 3, 4, 5]
    assert log.read(0, 10**6)[:8] == (2).to_bytes(8, "big")
    assert log.cleaned_offset == 4
    log.append(build_batch([(b"k", b"new")], timestamp_ms=T0), T0)
    log.close()
    reopened = FileLog(tmp_path / "t-0", LogConfig())
    assert [h.base_offset for h, _ in reopened.batches(0)] == [2, 3, 4, 5, 6]
    assert (reopened.log_start_offset, reopened.cleaned_offset) == (0, 4)
    reopened.close()


@pytest.mark.parametrize("crash", ["staged", "committed", "half-applied"])
def test_a_crash_during_the_swap_leaves_all_old_or_all_new(tmp_path: Path, crash: str) -> None:
    directory = tmp_path / "t-0"
    log, _ = _log_with_segments(directory)
    contents = _cleaned_contents(log)
    before = [(h.base_offset, bytes(raw)) for h, raw in log.batches(0)]
    log.close()
    file_swap.stage_and_commit(directory, contents, 0, 4)
    if crash == "staged":  # the manifest did not land
        (directory / file_swap.MANIFEST).unlink()
    elif crash == "half-applied":  # one rename done, then the crash
        staged = directory / f"{0:020d}.log{file_swap.CLEANED_SUFFIX}"
        staged.replace(directory / f"{0:020d}.log")
    reopened = FileLog(directory, LogConfig())
    after = [(h.base_offset, bytes(raw)) for h, raw in reopened.batches(0)]
    if crash == "staged":
        assert after == before and reopened.cleaned_offset == 0
    else:
        assert [o for o, _ in after] == [2, 3, 4, 5] and reopened.cleaned_offset == 4
    assert not list(directory.glob("*.cleaned")) and not (directory / file_swap.MANIFEST).exists()
    reopened.close()


# -- through the broker ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_broker_compacts_on_its_schedule(tmp_path: Path, kind: str) -> None:
    clock = ManualClock(T0)
    storage = MemoryStorage() if kind == "memory" else FileStorage(tmp_path)
    config = BrokerConfig({"log.cleaner.backoff.ms": 1000})
    core = BrokerCore(storage, clock, config, random.Random(1))  # type: ignore[arg-type]
    one = len(build_batch([(b"k0", b"v00")], timestamp_ms=T0))
    configs = {"cleanup.policy": "compact", "internal.segment.bytes": str(2 * one)}
    assert core.create_topic("table", 1, 1, configs).error is ErrorCode.NONE
    tp = TopicPartition("table", 0)
    for i in range(10):
        batch = build_batch([(b"k%d" % (i % 3), b"v%02d" % i)], timestamp_ms=T0)
        assert core.produce(tp, batch, None).error is ErrorCode.NONE
    clock.advance(1000)
    assert core.cleaner_runs == 1 and core.cleaner_bytes_removed > 0
    data = fetch_all(core, tp)
    kept = []
    pos = 0
    while pos < len(data):
        header = parse_header(data, pos)
        kept.extend(r.offset for r in records_of(data[pos : pos + header.size], header))
        pos += header.size
    # Segments [0,2) [2,4) [4,6) [6,8) are cleanable (8,9 is active): latest of k0,k1,k2 in
    # them are 6, 7, 5; the active segment keeps 8 and 9.
    assert kept == [5, 6, 7, 8, 9]
    assert core.list_offset(tp, -2, read_committed=False) == (ErrorCode.NONE, 0, -1)
    assert core.gauges()["log-cleaner-runs"] == 1
    clock.advance(1000)
    assert core.cleaner_runs == 1  # nothing dirty: no second pass
    core.close()
    if kind == "file":
        core = BrokerCore(FileStorage(tmp_path), clock, config, random.Random(1))
        assert fetch_all(core, tp) == data
        assert (
            core.produce(tp, build_batch([(b"k", b"v")], timestamp_ms=T0), None).base_offset == 10
        )
        core.close()


def test_a_kept_tombstone_goes_on_a_later_pass_with_nothing_new_written() -> None:
    """The first pass sees the tombstone young and keeps it; nothing is written afterwards,
    so the log never gets dirty again: a pass must still come once the tombstone is older
    than delete.retention.ms (Kafka's cleaner picks a log whose delete horizon passed)."""
    clock = ManualClock(T0)
    config = BrokerConfig({"log.cleaner.backoff.ms": 1000})
    core = BrokerCore(MemoryStorage(), clock, config, random.Random(1))
    one = len(build_batch([(b"k0", b"v00")], timestamp_ms=T0))
    configs = {
        "cleanup.policy": "compact",
        "internal.segment.bytes": str(2 * one),
        "delete.retention.ms": "5000",
        "min.cleanable.dirty.ratio": "0.01",
    }
    assert core.create_topic("table", 1, 1, configs).error is ErrorCode.NONE
    tp = TopicPartition("table", 0)
    writes = ([(b"a", b"1")], [(b"b", b"1")], [(b"a", None)], [(b"b", b"2")], [(b"c", b"1")])
    for records in writes:
        batch = build_batch(records, timestamp_ms=clock.now_ms())  # type: ignore[arg-type]
        assert core.produce(tp, batch, None).error is ErrorCode.NONE

    def kept() -> list[int]:
        data = fetch_all(core, tp)
        out: list[int] = []
        pos = 0
        while pos < len(data):
            header = parse_header(data, pos)
            out.extend(r.offset for r in records_of(data[pos : pos + header.size], header))
            pos += header.size
        return out

    clock.advance(1000)
    assert kept() == [2, 3, 4]  # a's tombstone (2) is young and stays
    runs = core.cleaner_runs
    clock.advance(2000)
    assert core.cleaner_runs == runs and kept() == [2, 3, 4]  # not dirty, not due: no pass
    clock.advance(3000)  # the tombstone is now older than delete.retention.ms
    assert kept() == [3, 4]
    core.close()


def test_a_removed_abort_marker_leaves_the_aborted_index() -> None:
    """One producer: an aborted transaction, then committed ones.  Once the cleaner removed
    the aborted data and (older than delete.retention.ms) its ABORT marker, a read_committed
    fetch must not list that transaction any more: a client would skip the producer's later
    committed batches waiting for a marker that is gone."""
    one = len(build_batch([(b"k", b"v")], timestamp_ms=T0))
    partition = Partition(TopicPartition("t", 0), MemoryLog(LogConfig(segment_bytes=2 * one)))

    def txn(key: bytes, seq: int, result: ControlType) -> None:
        raw = build_batch(
            [(key, b"v%d" % seq)],
            timestamp_ms=T0,
            producer_id=9,
            producer_epoch=0,
            base_sequence=seq,
            transactional=True,
        )
        assert partition.append(raw, T0, transactional_id="x").error is ErrorCode.NONE
        assert partition.write_marker(9, 0, 0, result, T0) is ErrorCode.NONE

    txn(b"a", 0, ControlType.ABORT)
    for seq in range(1, 4):
        txn(b"b", seq, ControlType.COMMIT)
    assert partition.fetch(0, 10**6, read_committed=True).aborted
    clock = ManualClock(T0 + DAY)
    cleaner = LogCleaner(clock)
    target = CleanTarget(
        "t-0",
        partition.log,
        CleanerPolicy(delete_retention_ms=1000, min_cleanable_dirty_ratio=0.01),
        partition.transactions_for_cleaner,
        producers=partition.producers_for_cleaner,
        after=lambda result: partition.after_clean(result.end, result.kept_markers),
    )
    # The first pass removes the aborted data (its marker stays: the pass saw a batch of its
    # transaction), the next sets the marker's delete horizon, the one past it removes it.
    assert cleaner.run_pass([target]) > 0
    assert partition.fetch(0, 10**6, read_committed=True).aborted
    clock.advance(1)
    cleaner.run_pass([target])
    assert partition.fetch(0, 10**6, read_committed=True).aborted
    clock.advance(1000)
    assert cleaner.run_pass([target]) > 0
    fetched = partition.fetch(0, 10**6, read_committed=True)
    assert fetched.aborted == ()
    kept = [
        parse_header(fetched.records, pos)
        for pos in _positions(fetched.records)
        if not parse_header(fetched.records, pos).is_control
    ]
    assert kept  # the last committed value of b is there for the client to read


def _positions(data: bytes) -> list[int]:
    out, pos = [], 0
    while pos < len(data):
        out.append(pos)
        pos += parse_header(data, pos).size
    return out
