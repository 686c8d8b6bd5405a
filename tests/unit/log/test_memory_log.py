"""Behaviour of the PartitionLog / Storage seam, run against both implementations.

MemoryLog is the reference semantics and FileLog must match it, so every test
here that does not depend on files runs on both (``kind`` parameter).  Tests
about segments, indexes, recovery and fsync live in test_file_log.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from coordinator.log import (
    FileStorage,
    LogConfig,
    MemoryLog,
    MemoryStorage,
    PartitionLog,
    Storage,
)
from txn.batch import BatchFormatError, build_batch, iter_batches, parse_header
from txn.errors import ClosedError, CorruptMessageError, InvalidTopicError, OffsetOutOfRangeError

TOPIC = "orders"


def make_batch(records: int = 1, *, value: bytes = b"v", base_offset: int = 987654) -> bytes:
    """A producer-style batch; its base offset is junk the log must overwrite."""
    return build_batch(
        [(f"k{i}".encode(), value + str(i).encode()) for i in range(records)],
        base_offset=base_offset,
        timestamp_ms=1_700_000_000_000,
    )


def with_offset(batch: bytes, offset: int) -> bytes:
    return offset.to_bytes(8, "big", signed=True) + batch[8:]


class Harness:
    """Opens one partition log and reopens it the way a restarted broker would."""

    def __init__(self, kind: str, root: Path) -> None:
        self.kind = kind
        self.root = root
        self.storage = self._new_storage()
        self.config: LogConfig | None = None

    def _new_storage(self) -> Storage:
        if self.kind == "file":
            return FileStorage(self.root, LogConfig())
        return MemoryStorage()

    def open(self, config: LogConfig | None = None) -> PartitionLog:
        self.config = config
        return self.storage.open_log(TOPIC, 0, config)

    def reopen(self) -> PartitionLog:
        """Close everything and open the partition again (a new FileStorage for files)."""
        self.storage.close()
        if self.kind == "file":
            self.storage = self._new_storage()
        return self.storage.open_log(TOPIC, 0, self.config)


@pytest.fixture(params=["memory", "file"])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    h = Harness(request.param, tmp_path)
    yield h
    h.storage.close()


def append_all(log: PartitionLog, sizes: list[int], now_ms: int = 0) -> list[bytes]:
    """Append batches of the given record counts; returns the bytes as stored."""
    stored = []
    for records in sizes:
        batch = make_batch(records)
        header = log.append(batch, now_ms)
        stored.append(with_offset(batch, header.base_offset))
    return stored


def test_append_assigns_offsets_and_read_round_trips(harness: Harness) -> None:
    log = harness.open()
    assert (log.log_start_offset, log.log_end_offset) == (0, 0)
    batch = make_batch(3)
    header = log.append(batch, 0)
    assert header.base_offset == 0
    assert header.last_offset == 2
    assert header.records_count == 3
    second = log.append(make_batch(2), 0)
    assert second.base_offset == 3
    assert log.log_end_offset == 5
    data = log.read(0, 1)
    assert data == with_offset(batch, 0)
    # Only the base offset changed: the CRC still holds and the header agrees.
    assert parse_header(data).crc == parse_header(batch).crc


def test_append_accepts_bytearray_and_memoryview(harness: Harness) -> None:
    log = harness.open()
    batch = make_batch(2)
    log.append(bytearray(batch), 0)
    log.append(memoryview(batch), 0)
    assert log.read(2, 1) == with_offset(batch, 2)


def test_read_from_middle_of_batch_returns_that_batch(harness: Harness) -> None:
    log = harness.open()
    stored = append_all(log, [4, 5, 1])
    assert log.read(6, 1) == stored[1]
    assert log.read(8, 1) == stored[1]
    assert log.read(9, 1) == stored[2]


def test_read_returns_whole_batches_within_max_bytes(harness: Harness) -> None:
    log = harness.open()
    stored = append_all(log, [1, 1, 1, 1])
    size = len(stored[0])
    assert log.read(0, 0) == stored[0]  # always at least one batch
    assert log.read(0, size * 2 + size // 2) == b"".join(stored[:2])
    assert log.read(1, 10**9) == b"".join(stored[1:])
    assert [h.base_offset for _, h in iter_batches(log.read(0, 10**9))] == [0, 1, 2, 3]


def test_read_stops_at_the_end_of_its_segment(harness: Harness) -> None:
    """Kafka reads one segment per fetch: whatever the budget, a read ends with the segment
    holding its first batch; the first batch comes whole even when larger than the budget."""
    size = len(make_batch(2))
    log = harness.open(LogConfig(segment_bytes=size * 2))
    stored = append_all(log, [2, 2, 2, 2, 2])  # segments [0, 4) [4, 8) [8, 10)
    assert log.read(0, 10**9) == b"".join(stored[:2])
    assert log.read(3, 10**9) == stored[1]
    assert log.read(4, 10**9) == b"".join(stored[2:4])
    assert log.read(4, 1) == stored[2]
    assert log.read(9, 10**9) == stored[4]
    log.replace_segments({0: [stored[0]]}, 4)  # the cleaner empties the tail of segment 0
    assert log.read(2, 10**9) == b"".join(stored[2:4])  # nothing left there: the next one


def test_out_of_range_reads(harness: Harness) -> None:
    log = harness.open()
    append_all(log, [2, 2])
    assert log.read(4, 100) == b""
    with pytest.raises(OffsetOutOfRangeError) as info:
        log.read(5, 100)
    assert info.value.ids["log_end_offset"] == 4
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)
    log.advance_start_offset(2)
    with pytest.raises(OffsetOutOfRangeError) as info:
        log.read(1, 100)
    assert info.value.ids["log_start_offset"] == 2


def test_empty_log_reads_empty_at_zero(harness: Harness) -> None:
    log = harness.open()
    assert log.read(0, 100) == b""
    assert list(log.batches()) == []


def test_reopen_keeps_everything(harness: Harness) -> None:
    log = harness.open()
    stored = append_all(log, [1, 3, 2])
    log = harness.reopen()
    assert log.log_end_offset == 6
    assert log.read(0, 10**9) == b"".join(stored)
    assert log.append(make_batch(1), 0).base_offset == 6


def _flip_crc_covered_byte(batch: bytes) -> bytes:
    damaged = bytearray(batch)
    damaged[-1] ^= 0xFF
    return bytes(damaged)


def _bad_magic(batch: bytes) -> bytes:
    damaged = bytearray(batch)
    damaged[16] = 1
    return bytes(damaged)


@pytest.mark.parametrize(
    "damage",
    [
        _flip_crc_covered_byte,
        _bad_magic,
        lambda b: b[: len(b) // 2],
        lambda b: b[:30],
        lambda b: b + b,
        lambda b: b + b"\0",
        lambda b: b"",
    ],
    ids=["crc", "magic", "half", "short-header", "two-batches", "trailing-byte", "empty"],
)
def test_corrupt_append_is_rejected_and_log_unchanged(harness: Harness, damage: object) -> None:
    log = harness.open()
    stored = append_all(log, [2])
    assert callable(damage)
    with pytest.raises(CorruptMessageError) as info:
        log.append(damage(make_batch(3)), 0)
    assert isinstance(info.value, BatchFormatError)  # the protocol's promise holds too
    assert log.log_end_offset == 2
    assert log.read(0, 10**9) == stored[0]
    log = harness.reopen()
    assert log.log_end_offset == 2
    assert log.read(0, 10**9) == stored[0]


def test_advance_start_offset(harness: Harness) -> None:
    log = harness.open()
    stored = append_all(log, [2, 2, 2])
    log.advance_start_offset(3)
    assert log.log_start_offset == 3
    assert log.read(3, 1) == stored[1]  # the batch containing the start offset stays readable
    with pytest.raises(OffsetOutOfRangeError):
        log.read(2, 1)
    log.advance_start_offset(1)  # never moves backwards
    assert log.log_start_offset == 3
    with pytest.raises(OffsetOutOfRangeError):
        log.advance_start_offset(7)
    assert [h.base_offset for h, _ in log.batches()] == [2, 4]
    log = harness.reopen()
    assert log.log_start_offset == 3
    assert log.read(4, 10**9) == stored[2]


def test_advance_start_to_end_then_append(harness: Harness) -> None:
    log = harness.open()
    append_all(log, [2, 2])
    log.advance_start_offset(4)
    assert log.read(4, 100) == b""
    assert list(log.batches()) == []
    log = harness.reopen()
    assert (log.log_start_offset, log.log_end_offset) == (4, 4)
    batch = make_batch(1)
    assert log.append(batch, 0).base_offset == 4
    assert log.read(4, 100) == with_offset(batch, 4)


def test_truncate_to(harness: Harness) -> None:
    log = harness.open()
    stored = append_all(log, [2, 3, 1, 4])
    log.truncate_to(10)  # at the end: nothing to do
    assert log.log_end_offset == 10
    log.truncate_to(7)  # inside the last batch (base 6): only later batches go
    assert log.log_end_offset == 10
    log.truncate_to(5)  # base offset of the third batch: it and the fourth go
    assert log.log_end_offset == 5
    assert log.read(0, 10**9) == b"".join(stored[:2])
    with pytest.raises(OffsetOutOfRangeError):
        log.read(6, 1)
    batch = make_batch(2)
    assert log.append(batch, 0).base_offset == 5
    log = harness.reopen()
    assert log.log_end_offset == 7
    assert log.read(5, 1) == with_offset(batch, 5)


def test_truncate_everything_restarts_at_offset(harness: Harness) -> None:
    log = harness.open()
    append_all(log, [2, 2, 2])
    log.advance_start_offset(4)
    log.truncate_to(1)  # below the start offset: the log restarts at 1
    assert (log.log_start_offset, log.log_end_offset) == (1, 1)
    log = harness.reopen()
    assert (log.log_start_offset, log.log_end_offset) == (1, 1)
    assert log.append(make_batch(1), 0).base_offset == 1
    with pytest.raises(ValueError, match="negative"):
        log.truncate_to(-1)


def test_batches_iterates_from_offset(harness: Harness) -> None:
    log = harness.open()
    stored = append_all(log, [2, 2, 2])
    everything = list(log.batches())
    assert [blob for _, blob in everything] == stored
    assert [h.base_offset for h, _ in everything] == [0, 2, 4]
    assert [h.base_offset for h, _ in log.batches(3)] == [2, 4]
    assert [h.base_offset for h, _ in log.batches(4)] == [4]
    assert list(log.batches(6)) == []


def test_storage_list_open_and_delete(harness: Harness) -> None:
    storage = harness.storage
    first = storage.open_log("my-topic", 3)
    assert storage.open_log("my-topic", 3) is first  # one live object per partition
    first.append(make_batch(1), 0)
    storage.open_log(TOPIC, 0)
    assert storage.list_logs() == [("my-topic", 3), (TOPIC, 0)]
    storage.delete_log("my-topic", 3)
    assert storage.list_logs() == [(TOPIC, 0)]
    with pytest.raises(ClosedError):
        first.read(0, 1)
    assert storage.open_log("my-topic", 3).log_end_offset == 0


@pytest.mark.parametrize("topic", ["", "..", "a/b", "x" * 250, "a b"])
def test_invalid_topic_names_rejected(harness: Harness, topic: str) -> None:
    with pytest.raises(InvalidTopicError):
        harness.storage.open_log(topic, 0)


def test_closed_log_raises(harness: Harness) -> None:
    log = harness.open()
    log.close()
    log.close()
    with pytest.raises(ClosedError):
        log.append(make_batch(1), 0)
    with pytest.raises(ClosedError):
        log.read(0, 1)


def test_bad_config_rejected(harness: Harness) -> None:
    with pytest.raises(ValueError, match="flush_interval_messages"):
        harness.open(LogConfig(flush_interval_messages=0))


# -- memory only ------------------------------------------------------------------------------


def test_memory_flush_policy_counts_messages() -> None:
    log = MemoryLog(LogConfig(flush_interval_messages=3))
    log.append(make_batch(1), 0)
    log.append(make_batch(1), 0)
    assert (log.flush_count, log.unflushed_messages) == (0, 2)
    log.append(make_batch(1), 0)
    assert (log.flush_count, log.unflushed_messages) == (1, 0)
    log.append(make_batch(5), 0)  # one batch of five messages crosses the threshold alone
    assert log.flush_count == 2


def test_memory_flush_policy_time_rule() -> None:
    log = MemoryLog(LogConfig(flush_interval_messages=1000, flush_interval_ms=100))
    log.maybe_flush(10_000)
    assert log.flush_count == 0  # nothing unflushed
    log.append(make_batch(1), 1_000)
    log.append(make_batch(1), 1_090)
    log.maybe_flush(1_099)
    assert log.flush_count == 0
    log.maybe_flush(1_100)  # measured from the oldest unflushed append
    assert log.flush_count == 1
    log.maybe_flush(5_000)
    assert log.flush_count == 1
