"""Fetch reads of a compacted log while the cleaner swaps its segments.

Kafka's rule (``LocalLog.read``): the read starts in the segment holding the fetch offset and,
when that segment has nothing at or after the offset (the cleaner removed its tail, or the
whole segment), moves on to the next segment, until data is found or the log ends.  A reader
below the high watermark therefore always gets a batch whose last offset is at or after its
offset: an empty answer there would make a consumer fetch the same offset forever.
"""

from __future__ import annotations

import errno
import os
import random
from pathlib import Path

import pytest

from coordinator.broker import BrokerCore
from coordinator.log.cleaner import CleanerPolicy, by_segment, clean
from coordinator.log.file_log import FileLog, FileStorage
from coordinator.log.handles import FileHandles
from coordinator.log.memory_log import LogBase, MemoryLog, MemoryStorage
from coordinator.log.storage import LogConfig
from txn.batch import BatchHeader, build_batch, crc_ok, iter_batches, parse_header
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicPartition
from txn.record_keys import records_of

# The manual clock runs ahead of the real one: a file segment left empty by the cleaner takes
# its file's modification time as its largest timestamp (Kafka's LogSegment.largestTimestamp),
# which must not lie in the manual clock's future.
T0 = 4_000_000_000_000
POLICY = CleanerPolicy(min_cleanable_dirty_ratio=0.0)
ONE = len(build_batch([(b"k0", b"v0")], timestamp_ms=T0))


def _never_aborted(_header: BatchHeader) -> bool:
    return False


def _open(kind: str, directory: Path, handles: FileHandles | None = None) -> LogBase:
    config = LogConfig(segment_bytes=2 * ONE)
    return MemoryLog(config) if kind == "memory" else FileLog(directory, config, handles)


def _fill(log: LogBase, keys: str) -> None:
    """One one-record batch per key (two a segment)."""
    for i, key in enumerate(keys):
        log.append(build_batch([(key.encode(), b"v%d" % i)], timestamp_ms=T0), T0)


def _compact(log: LogBase, now_ms: int = T0) -> None:
    """One cleaner pass over every segment but the active one."""
    segs = log.segments()[:-1]
    end = segs[-1].next_offset
    batches = [(h, bytes(raw)) for h, raw in log.batches(0) if h.base_offset < end]
    contents = by_segment(segs, clean(batches, _never_aborted, now_ms, POLICY))
    log.replace_segments(contents, end)


def _bases(raw: bytes) -> list[int]:
    return [header.base_offset for _pos, header in iter_batches(raw)]


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_an_offset_in_a_compacted_away_tail_reads_the_next_segment(
    tmp_path: Path, kind: str
) -> None:
    log = _open(kind, tmp_path / "t-0")
    _fill(log, "abcbxy")  # segments [0,2) [2,4) [4,6): b@1 is superseded by b@3
    _compact(log)
    assert [h.base_offset for h, _ in log.batches(0)] == [0, 2, 3, 4, 5]
    assert [s.base_offset for s in log.segments()] == [0, 2, 4]
    # Offset 1 is the removed tail of the first segment: the read starts at the next batch
    # and, as Kafka's, ends with the segment holding it.
    assert _bases(log.read(1, 10**6)) == [2, 3]
    assert _bases(log.read(0, 10**6)) == [0]
    assert _bases(log.read(1, 1)) == [2]  # the first batch comes whole, whatever max_bytes
    log.close()


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_an_offset_in_a_segment_the_swap_removed_reads_the_next_batch(
    tmp_path: Path, kind: str
) -> None:
    log = _open(kind, tmp_path / "t-0")
    _fill(log, "abcdcdx")  # segments [0,2) [2,4) [4,6) [6,7): c@2 and d@3 are superseded
    # A consumer between the two fetches of a segment the swap is about to remove.
    assert _bases(log.read(2, ONE)) == [2]
    _compact(log)
    assert [s.base_offset for s in log.segments()] == [0, 4, 6]
    for offset in (2, 3):
        assert _bases(log.read(offset, 10**6)) == [4, 5]
    assert _bases(log.read(6, 10**6)) == [6]
    log.close()


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_a_whole_log_of_gaps_is_read_to_its_end(tmp_path: Path, kind: str) -> None:
    """Several segments in a row emptied by the cleaner: the read walks past all of them."""
    log = _open(kind, tmp_path / "t-0")
    _fill(log, "aaaaaaaab")  # segments [0,2) ... [6,8) [8,9): only a@7 stays of the first eight
    _compact(log)
    assert [h.base_offset for h, _ in log.batches(0)] == [7, 8]
    for offset in range(8):
        assert _bases(log.read(offset, 10**6)) == [7]
    assert _bases(log.read(8, 10**6)) == [8]
    assert log.read(9, 10**6) == b""
    log.close()


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_reads_after_the_last_batches_went_stay_at_or_after_the_offset(
    tmp_path: Path, kind: str
) -> None:
    """The cleaner removed the last records of the closed segments (a tombstone past its
    delete horizon, the record it deleted; the last batch of the round stays, emptied, as in
    Kafka), then the active segment's only batch was
    truncated away (an append whose fsync failed): every read is of a batch at or after its
    offset, or empty when none is left, never of a batch below the offset."""
    log = _open(kind, tmp_path / "t-0")
    _fill(log, "ab")
    log.append(build_batch([(b"c", b"v")], timestamp_ms=T0), T0)
    log.append(build_batch([(b"c", None)], timestamp_ms=T0), T0)  # segment [2,4): c, deleted
    _fill(log, "x")
    _compact(log)  # the first pass keeps the tombstone and sets its delete horizon
    _compact(log, now_ms=T0 + 2 * POLICY.delete_retention_ms)
    batches = [(h.base_offset, h.records_count) for h, _ in log.batches(0)]
    assert batches == [(0, 1), (1, 1), (3, 0), (4, 1)]
    log.truncate_to(4)
    kept = [h for h, _ in log.batches(0)]
    assert [h.base_offset for h in kept] == [0, 1, 3]
    for offset in range(log.log_start_offset, log.log_end_offset):
        raw = log.read(offset, 10**6)
        if raw:
            assert parse_header(raw).last_offset >= offset
        else:
            assert all(h.last_offset < offset for h in kept)
    log.close()


@pytest.mark.parametrize("capacity", [2, 64])
def test_reads_after_a_swap_never_use_a_descriptor_of_a_replaced_file(
    tmp_path: Path, capacity: int
) -> None:
    """The swap renames new files over the old paths, and descriptors are cached by path: a
    descriptor of the old file must not serve a read of the new one (it would read the old
    bytes at the new file's positions), whether the shared cache evicts often or never."""
    handles = FileHandles(capacity)
    logs = [_open("file", tmp_path / f"t-{n}", handles) for n in range(2)]
    assert isinstance(logs[0], FileLog)
    for log in logs:
        _fill(log, "abababab" + "x")
    rng = random.Random(7)
    for step in range(40):
        log = logs[rng.randrange(2)]
        if step % 10 == 9:
            _fill(log, "ab" * rng.randint(1, 3) + "x")
            _compact(log)
            continue
        expected = _on_disk(log.directory)
        offset = rng.randrange(log.log_end_offset)
        raw = log.read(offset, rng.choice([1, 3 * ONE, 10**6]))
        got = [(h.base_offset, raw[pos : pos + h.size]) for pos, h in iter_batches(raw)]
        assert got and parse_header(got[0][1]).last_offset >= offset
        assert all(crc_ok(blob, 0, parse_header(blob)) for _base, blob in got)
        assert set(got) <= expected
    for log in logs:
        log.close()


def _on_disk(directory: Path) -> set[tuple[int, bytes]]:
    """(base offset, bytes) of every batch in the directory's segment files, read afresh."""
    out: set[tuple[int, bytes]] = set()
    for path in directory.glob("*.log"):
        data = path.read_bytes()
        out.update((h.base_offset, data[pos : pos + h.size]) for pos, h in iter_batches(data))
    return out


def test_an_iterator_opened_before_a_swap_reads_the_old_segments_until_they_are_purged(
    tmp_path: Path,
) -> None:
    """As in Kafka, a swap renames the old files ``.deleted`` and removes them later
    (``file.delete.delay.ms``): an iterator opened before the swap reads the old bytes to the
    end; once the old files are purged, a read through it fails with EBADF, never returns
    bytes of the new files at the old positions."""
    log = _open("file", tmp_path / "t-0")
    _fill(log, "ababababx")
    before = [(h.base_offset, bytes(raw)) for h, raw in log.batches(0)]
    it = log.batches(0)
    first = next(it)
    _compact(log)
    assert list(log.directory.glob("*.deleted"))
    seen = [(first[0].base_offset, bytes(first[1]))]
    seen.extend((h.base_offset, bytes(raw)) for h, raw in it)
    assert seen == before
    assert isinstance(log, FileLog)
    log.close()
    log = _open("file", tmp_path / "t-1")
    assert isinstance(log, FileLog)
    _fill(log, "ababababx")
    it = log.batches(0)
    next(it)
    _compact(log)
    assert log.purge_deleted() > 0 and not list(log.directory.glob("*.deleted"))
    with pytest.raises(OSError) as failure:
        list(it)
    assert failure.value.errno == errno.EBADF
    log.close()


def _run_consumer_against_the_cleaner(kind: str, seed: int, directory: Path) -> tuple[int, int]:
    """Produce, let the cleaner pass (every 100 ms of the manual clock) and fetch one Fetch at
    a time as a consumer does, in a random interleaving; every fetch below the high watermark
    must return data at or after the fetch offset.  Returns (fetches, cleaner swaps)."""
    rng = random.Random(seed)
    clock = ManualClock(T0)
    storage = MemoryStorage() if kind == "memory" else FileStorage(directory)
    config = BrokerConfig({"log.cleaner.backoff.ms": 100})
    core = BrokerCore(storage, clock, config, random.Random(1))  # type: ignore[arg-type]
    configs = {
        "cleanup.policy": "compact",
        "internal.segment.bytes": str(rng.randint(3, 8) * ONE),
        "min.cleanable.dirty.ratio": "0.01",
    }
    assert core.create_topic("t", 1, 1, configs).error is ErrorCode.NONE
    tp = TopicPartition("t", 0)
    latest: dict[bytes, bytes] = {}
    seen: dict[bytes, bytes] = {}
    position = fetches = written = 0

    def fetch_once(max_bytes: int) -> None:
        nonlocal position, fetches
        data = core.fetch(tp, position, max_bytes, read_committed=False)
        assert data.error is ErrorCode.NONE
        fetches += 1
        if position >= data.high_watermark:
            assert data.records == b""
            return
        assert data.records, f"nothing at {position} below {data.high_watermark}"
        for pos, header in iter_batches(data.records):
            assert header.last_offset >= position
            raw = data.records[pos : pos + header.size]
            for record in records_of(raw, header):
                if record.offset >= position and record.key is not None:
                    seen[record.key] = _value_of(raw, header, record.offset)
            position = header.last_offset + 1

    for _step in range(300):
        roll = rng.random()
        if roll < 0.4:
            records = [
                (b"k%d" % rng.randrange(4), b"v%05d" % (written + n))
                for n in range(rng.randint(1, 3))
            ]
            written += len(records)
            batch = build_batch(records, timestamp_ms=clock.now_ms())
            assert core.produce(tp, batch, None).error is ErrorCode.NONE
            latest.update((key, value) for key, value in records if key is not None)
        elif roll < 0.6:
            clock.advance(100)
        else:
            fetch_once(rng.choice([1, 3 * ONE, 10**6]))
    end = core.fetch(tp, 0, 1, read_committed=False).high_watermark
    while position < end:
        fetch_once(10**6)
    assert seen == latest
    swaps = core.cleaner_runs
    core.close()
    return fetches, swaps


def _value_of(raw: bytes, header: BatchHeader, offset: int) -> bytes:
    for record in records_of(raw, header):
        if record.offset == offset:
            return record.raw[-7:-1]  # b"v%05d", then the empty headers' count
    raise AssertionError(offset)


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_a_consumer_reading_while_the_cleaner_swaps_reads_everything(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "fsync", lambda _fd: None)  # reads are the subject, not durability
    swaps = 0
    for seed in range(4):
        _fetches, runs = _run_consumer_against_the_cleaner(kind, seed, tmp_path / f"s{seed}")
        swaps += runs
    assert swaps > 40  # the cleaner did swap segments under the reader, many times
