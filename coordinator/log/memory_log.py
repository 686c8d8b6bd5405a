"""Partition logs kept in memory: the reference semantics of the storage seam.

Unit tests and the benchmark's memory mode use these.  ``FileLog`` must behave
identically through the ``PartitionLog`` protocol, so the pieces both need
(batch validation, config checks, the flush policy, ``LogBase``) live here and
``file_log`` imports them, rather than being written twice.
"""

from __future__ import annotations

import bisect
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from coordinator.log.producer_snapshots import MemorySnapshots, SnapshotStore
from coordinator.log.segments import ListSegments
from coordinator.log.storage import LogConfig, SegmentInfo
from txn.batch import BatchFormatError, BatchHeader, crc_ok, parse_header, set_base_offset
from txn.errors import (
    ClosedError,
    CorruptMessageError,
    InvalidTopicError,
    OffsetOutOfRangeError,
)
from txn.limits import INT32_MAX

_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")


class CorruptBatchError(CorruptMessageError, BatchFormatError):
    """An appended buffer that is not one whole, CRC-valid RecordBatch v2.

    It is both a ``CorruptMessageError`` (what the Produce path answers with,
    CORRUPT_MESSAGE) and a ``BatchFormatError`` (what the ``PartitionLog``
    protocol promises), so callers written against either keep working.
    """


def validate_batch(batch: bytes | bytearray | memoryview) -> BatchHeader:
    """The header of ``batch`` if it is exactly one intact batch; else CorruptBatchError."""
    try:
        header = parse_header(batch)
    except BatchFormatError as exc:
        raise CorruptBatchError(str(exc)) from exc
    if header.size != len(batch):
        raise CorruptBatchError(
            f"batch length field says {header.size} bytes but {len(batch)} were given"
        )
    if not crc_ok(batch, 0, header):
        raise CorruptBatchError("record batch CRC32C mismatch")
    return header


def assign_offset(batch: bytes | bytearray | memoryview, base_offset: int) -> bytearray:
    """A copy of ``batch`` with its base offset rewritten (not covered by the CRC)."""
    buf = bytearray(batch)
    set_base_offset(buf, 0, base_offset)
    return buf


def check_config(config: LogConfig) -> None:
    """Reject settings that would break the log's invariants (not Kafka errors: a bug)."""
    flush_ms = config.flush_interval_ms
    broken_rules = (
        (
            not 0 < config.segment_bytes <= INT32_MAX,
            f"segment_bytes must be in [1, {INT32_MAX}], got {config.segment_bytes}",
        ),
        (config.segment_ms < 1, "segment_ms must be >= 1"),
        (config.index_interval_bytes < 0, "index_interval_bytes must be >= 0"),
        (config.flush_interval_messages < 1, "flush_interval_messages must be >= 1"),
        (flush_ms is not None and flush_ms < 0, "flush_interval_ms must be >= 0 or None"),
    )
    for broken, msg in broken_rules:
        if broken:
            raise ValueError(msg)


def check_partition(topic: str, partition: int) -> None:
    """Kafka's topic name rules; they also keep FileStorage's directory names inside its root."""
    if not _TOPIC_NAME.fullmatch(topic) or topic in {".", ".."}:
        raise InvalidTopicError(f"invalid topic name {topic!r}", topic=topic)
    if partition < 0:
        raise InvalidTopicError(f"invalid partition {partition}", topic=topic, partition=partition)


def out_of_range(offset: int, start: int, end: int) -> OffsetOutOfRangeError:
    """The error for a read outside [start, end], carrying the bounds for the fetch path."""
    return OffsetOutOfRangeError(
        f"offset {offset} is outside [{start}, {end}]",
        offset=offset,
        log_start_offset=start,
        log_end_offset=end,
    )


@dataclass
class FlushPolicy:
    """Kafka's log.flush.interval.messages / .ms rules, kept apart from the I/O.

    A batch counts as at least one message, so a zero-record batch is still
    made durable under the default fsync-every-append setting.
    """

    config: LogConfig
    unflushed_messages: int = 0
    oldest_unflushed_ms: int | None = None

    def record_append(self, records_count: int, now_ms: int) -> bool:
        """Note an append; True if the message rule now requires a flush."""
        if self.oldest_unflushed_ms is None:
            self.oldest_unflushed_ms = now_ms
        self.unflushed_messages += max(records_count, 1)
        return self.unflushed_messages >= self.config.flush_interval_messages

    def time_due(self, now_ms: int) -> bool:
        """True if the time rule requires a flush at ``now_ms``."""
        interval = self.config.flush_interval_ms
        if interval is None or self.oldest_unflushed_ms is None:
            return False
        return now_ms - self.oldest_unflushed_ms >= interval

    def reset(self) -> None:
        self.unflushed_messages = 0
        self.oldest_unflushed_ms = None

    def forget(self, messages: int) -> None:
        """``messages`` of the unflushed ones were made durable by a deferred fsync."""
        self.unflushed_messages = max(self.unflushed_messages - messages, 0)
        if self.unflushed_messages == 0:
            self.oldest_unflushed_ms = None


class LogBase(ABC):
    """What the partition logs here share: the flush policy's time rule and reconfiguration,
    and the checks that open ``truncate_to`` and ``advance_start_offset``."""

    _config: LogConfig
    _policy: FlushPolicy
    _closed: bool

    @abstractmethod
    def flush(self) -> None: ...

    @abstractmethod
    def _check_open(self) -> None: ...

    @abstractmethod
    def close(self) -> None: ...

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def snapshots(self) -> SnapshotStore | None:
        """Where producer-state snapshots are kept; None: none are (replayed from the log)."""
        return None

    @property
    def unflushed_messages(self) -> int:
        return self._policy.unflushed_messages

    def maybe_flush(self, now_ms: int) -> None:
        self._check_open()
        if self._policy.time_due(now_ms):
            self.flush()

    @abstractmethod
    def append(self, batch: bytes | bytearray | memoryview, now_ms: int) -> BatchHeader: ...

    def append_unflushed(self, batch: bytes | bytearray | memoryview, now_ms: int) -> BatchHeader:
        """A log that cannot defer its fsync applies the flush rule as ``append`` does."""
        return self.append(batch, now_ms)

    def flush_due(self) -> bool:
        return self.unflushed_messages >= self._config.flush_interval_messages

    def synced(self, messages: int) -> None:
        """A deferred fsync (``fsync_later``) made the first ``messages`` unflushed durable."""
        self._policy.forget(messages)

    @property
    def config(self) -> LogConfig:
        return self._config

    def reconfigure(self, config: LogConfig) -> None:
        check_config(config)
        self._config = config
        self._policy.config = config

    def _truncates(self, offset: int, end: int) -> bool:
        """Check ``truncate_to(offset)``: True if batches at or above ``offset`` exist."""
        self._check_open()
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        return offset < end

    def _advances(self, offset: int, start: int, end: int) -> bool:
        """Check ``advance_start_offset(offset)``: True if the start offset moves up;
        beyond the end is out of range."""
        self._check_open()
        if offset <= start:
            return False
        if offset > end:
            raise out_of_range(offset, start, end)
        return True


class BatchList(Protocol):
    """Batches kept in memory in offset order (the memory log's and the simulated disk's)."""

    bases: list[int]
    headers: list[BatchHeader]
    blobs: list[bytes]
    start: int
    end: int
    segments: ListSegments
    cleaned_offset: int


def store_batch(
    data: BatchList,
    header: BatchHeader,
    batch: bytes | bytearray | memoryview,
    now_ms: int,
    config: LogConfig,
) -> BatchHeader:
    """Append a validated batch at the end of ``data``; its header with the offset assigned."""
    header = header._replace(base_offset=data.end)
    data.segments.before_append(header, now_ms, config)
    data.bases.append(header.base_offset)
    data.headers.append(header)
    data.blobs.append(bytes(assign_offset(batch, header.base_offset)))
    data.end = header.last_offset + 1
    data.segments.after_append(header, now_ms)
    return header


def cut_batches_from(data: BatchList, offset: int) -> None:
    """Drop the batches at or above ``offset`` (all of them below the start offset)."""
    cut = 0 if offset < data.start else bisect.bisect_left(data.bases, offset)
    del data.bases[cut:], data.headers[cut:], data.blobs[cut:]
    data.end = data.headers[-1].last_offset + 1 if data.headers else offset
    data.start = min(data.start, data.end)


def drop_batches_below(data: BatchList, offset: int) -> int:
    """Move the start offset up to ``offset``; drop the batches wholly below it (how many)."""
    data.start = offset
    drop = 0
    while drop < len(data.headers) and data.headers[drop].last_offset < offset:
        drop += 1
    del data.bases[:drop], data.headers[:drop], data.blobs[:drop]
    data.segments.drop_below(offset, data.end)
    return drop


def read_whole_batches(data: BatchList, offset: int, max_bytes: int) -> bytes:
    """Whole batches from the one containing ``offset``; the first regardless of size, the
    rest up to ``max_bytes`` and inside the first one's segment (Kafka reads one segment)."""
    if offset < data.start or offset > data.end:
        raise out_of_range(offset, data.start, data.end)
    if offset == data.end:
        return b""
    index = max(bisect.bisect_right(data.bases, offset) - 1, 0)  # compaction leaves gaps
    if data.headers[index].last_offset < offset:
        index += 1  # in a gap: the next batch is the first with offsets at or after it
        if index == len(data.headers):
            return b""  # nothing left at or after it (Kafka's LocalLog.read: an empty read)
    parts = [data.blobs[index]]
    total = len(parts[0])
    bounds = data.segments.bases
    number = bisect.bisect_right(bounds, data.bases[index])
    segment_end = bounds[number] if number < len(bounds) else data.end
    for base, blob in zip(data.bases[index + 1 :], data.blobs[index + 1 :], strict=True):
        if base >= segment_end or total + len(blob) > max_bytes:
            break
        parts.append(blob)
        total += len(blob)
    return b"".join(parts)


def batches_from(data: BatchList, start_offset: int) -> Iterator[tuple[BatchHeader, bytes]]:
    """Batches with last offset >= max(start_offset, log start), as of this call."""
    start = max(start_offset, data.start)
    if start >= data.end:
        return iter(())
    index = max(bisect.bisect_right(data.bases, start) - 1, 0)
    return iter(list(zip(data.headers[index:], data.blobs[index:], strict=True)))


class BatchListLog(LogBase):
    """A partition log over a ``BatchList`` (the memory log and the simulated disk's log):
    the reads, the segments' view and the offsets."""

    _data: BatchList

    @property
    def log_start_offset(self) -> int:
        return self._data.start

    @property
    def log_end_offset(self) -> int:
        return self._data.end

    @property
    def active_segment_base(self) -> int:
        bases = self._data.segments.bases
        return bases[-1] if bases else self._data.start

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one containing ``offset``; the first regardless of size."""
        self._check_open()
        return read_whole_batches(self._data, offset, max_bytes)

    def batches(self, start_offset: int = 0) -> Iterator[tuple[BatchHeader, bytes]]:
        """Batches with last offset >= max(start_offset, log_start_offset), as of this call."""
        self._check_open()
        return batches_from(self._data, start_offset)

    def segments(self) -> list[SegmentInfo]:
        self._check_open()
        data = self._data
        return data.segments.view(data.bases, data.headers, data.start, data.end)

    def purge_deleted(self, through: int | None = None) -> int:
        return 0

    @property
    def retired_mark(self) -> int:
        return 0  # nothing is ever retired: segments of a batch list have no files

    @property
    def cleaned_offset(self) -> int:
        return self._data.cleaned_offset

    def close(self) -> None:
        self._closed = True

    def truncate_to(self, offset: int) -> None:
        """Drop batches with base offset >= ``offset``.

        Below the log start offset the whole log goes and restarts empty at
        ``offset`` (Kafka's truncateFullyAndStartAt).
        """
        data = self._data
        if not self._truncates(offset, data.end):
            return
        cut_batches_from(data, offset)
        self._after_cut()
        data.segments.resync(data.bases, data.headers, data.end)
        self._policy.reset()

    def advance_start_offset(self, offset: int) -> None:
        """Raise the start offset (never lower it); beyond the end is out of range."""
        data = self._data
        if not self._advances(offset, data.start, data.end):
            return
        self._after_drop(drop_batches_below(data, offset))

    def _after_cut(self) -> None:
        """``truncate_to``'s step between dropping the batches and resyncing the segments."""

    def _after_drop(self, dropped: int) -> None:
        """``advance_start_offset``'s last step, given how many batches went."""


@dataclass
class MemoryData:
    """What survives closing and reopening a memory log (the 'disk')."""

    bases: list[int] = field(default_factory=list)
    headers: list[BatchHeader] = field(default_factory=list)
    blobs: list[bytes] = field(default_factory=list)
    start: int = 0
    end: int = 0
    segments: ListSegments = field(default_factory=ListSegments)
    cleaned_offset: int = 0
    snapshots: MemorySnapshots = field(default_factory=MemorySnapshots)


class MemoryLog(BatchListLog):
    """A ``PartitionLog`` whose batches are Python lists.

    Segment boundaries follow FileLog's roll rules (``ListSegments``) so retention
    sees the same segments; batches wholly below the log start offset are dropped,
    a batch straddling the start offset stays readable, as in Kafka.  ``flush``
    only counts (``flush_count``) so tests can observe the flush policy.
    """

    def __init__(self, config: LogConfig | None = None, *, _data: MemoryData | None = None):
        self._config = config or LogConfig()
        check_config(self._config)
        data = _data if _data is not None else MemoryData()
        self._data = data
        self._snapshots = data.snapshots
        self._policy = FlushPolicy(self._config)
        self._closed = False
        self.flush_count = 0

    def append(self, batch: bytes | bytearray | memoryview, now_ms: int) -> BatchHeader:
        """Validate, assign the next offset, store; applies the message flush rule."""
        self._check_open()
        header = store_batch(self._data, validate_batch(batch), batch, now_ms, self._config)
        if self._policy.record_append(header.records_count, now_ms):
            self.flush()
        return header

    def flush(self) -> None:
        self._check_open()
        self.flush_count += 1
        self._policy.reset()

    def _after_cut(self) -> None:
        if not self._data.headers:
            self._data.segments = ListSegments()

    @property
    def snapshots(self) -> SnapshotStore | None:
        return self._snapshots

    def replace_segments(self, contents: dict[int, list[bytes]], cleaned_offset: int) -> None:
        self._check_open()
        self._data.segments.replace(self._data, contents)
        self._data.cleaned_offset = cleaned_offset

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("log is closed")


L = TypeVar("L", bound=LogBase)


class StorageBase(ABC, Generic[L]):
    """What the storages here share: the open log of each partition."""

    def __init__(self, default_config: LogConfig | None) -> None:
        self._default_config = default_config or LogConfig()
        self._open: dict[tuple[str, int], L] = {}

    def open_log(self, topic: str, partition: int, config: LogConfig | None = None) -> L:
        """The open log of a partition, creating it: the same object while it stays open (two
        over the same files would clash)."""
        check_partition(topic, partition)
        key = (topic, partition)
        log = self._open.get(key)
        if log is not None and not log.closed:
            return log
        log = self._new_log(topic, partition, config or self._default_config)
        self._open[key] = log
        return log

    @abstractmethod
    def _new_log(self, topic: str, partition: int, config: LogConfig) -> L: ...

    def _close_log(self, key: tuple[str, int]) -> None:
        """Forget the open log of ``key``, closing it (``delete_log``'s first step)."""
        log = self._open.pop(key, None)
        if log is not None:
            log.close()

    def close(self) -> None:
        for log in self._open.values():
            log.close()
        self._open.clear()


D = TypeVar("D")


class KeptStorage(StorageBase[L], Generic[L, D]):
    """A storage whose logs' contents (``D``) stay in memory across closing and reopening."""

    def __init__(self, default_config: LogConfig | None) -> None:
        super().__init__(default_config)
        self._data: dict[tuple[str, int], D] = {}

    def list_logs(self) -> list[tuple[str, int]]:
        return sorted(self._data)

    def delete_log(self, topic: str, partition: int) -> None:
        key = (topic, partition)
        self._close_log(key)
        self._data.pop(key, None)


class MemoryStorage(KeptStorage[MemoryLog, MemoryData]):
    """A ``Storage`` of memory logs; closing and reopening a log keeps its batches."""

    def __init__(self, default_config: LogConfig | None = None) -> None:
        super().__init__(default_config)

    def _new_log(self, topic: str, partition: int, config: LogConfig) -> MemoryLog:
        data = self._data.setdefault((topic, partition), MemoryData())
        return MemoryLog(config, _data=data)
