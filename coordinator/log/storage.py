"""The storage seam: what the broker core needs from a disk.

The core talks only to these two protocols.  ``coordinator.log.file_log``
implements them on real segment files; ``coordinator.log.memory_log`` keeps
everything in memory (tests); the chaos harness provides a disk that forgets
unsynced bytes and tears the last write on a simulated crash.

Every batch handed to ``append`` is one RecordBatch v2 exactly as a producer
(or the broker itself, for control and coordinator records) encoded it; the
log assigns offsets by rewriting the base offset field and never re-encodes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from coordinator.log.producer_snapshots import SnapshotStore
from txn.batch import BatchHeader
from txn.compression import Codec


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Per-log settings, with Kafka's config names in the comments."""

    segment_bytes: int = 1024 * 1024 * 1024  # log.segment.bytes / segment.bytes
    # segment.ms (log.roll.ms): an append rolls a non-empty active segment once its record
    # timestamps span this long (Kafka's LogSegment.shouldRoll).
    segment_ms: int = 7 * 24 * 60 * 60 * 1000
    # segment.jitter.ms: each new segment rolls up to this much (drawn at random) earlier
    segment_jitter_ms: int = 0
    index_interval_bytes: int = 4096  # log.index.interval.bytes
    # log.flush.interval.messages: fsync once this many messages are unflushed.
    # 1 means fsync on every append (our default: a single node has no replicas).
    flush_interval_messages: int = 1
    # log.flush.interval.ms: fsync when the oldest unflushed message is this old
    # (checked by ``maybe_flush``); None disables the time-based rule.
    flush_interval_ms: int | None = None
    # compression.type: the codec batches are stored with (None: each as produced)
    compression: Codec | None = None
    # compression.<codec>.level of that codec (None: the codec's default; KIP-390)
    compression_level: int | None = None


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """One segment of a log, as retention sees it."""

    base_offset: int
    next_offset: int  # one past its last batch (the next segment's base, or the log end)
    size_bytes: int
    # Kafka's LogSegment.largestTimestamp: the largest record timestamp in the segment, or
    # the time it was last written if no batch carries a timestamp.
    largest_timestamp_ms: int
    first_timestamp_ms: int = -1  # the first batch's max timestamp (max.compaction.lag.ms)


class PartitionLog(Protocol):
    """One partition's append-only log of record batches."""

    @property
    def log_start_offset(self) -> int:
        """First offset that may be read (raised by DeleteRecords)."""
        ...

    @property
    def log_end_offset(self) -> int:
        """The next offset to be assigned (the high watermark on a single node)."""
        ...

    def append(self, batch: bytes | bytearray | memoryview, now_ms: int) -> BatchHeader:
        """Append one batch at ``log_end_offset``; returns its header with the assigned base offset.

        Applies the flush policy (may fsync).  Raises BatchFormatError for bytes that are not
        one whole RecordBatch v2.
        """
        ...

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches starting with the one that contains ``offset``, up to ``max_bytes``
        and within that batch's segment (Kafka reads one segment per fetch).

        Returns at least one batch if any exists at or after ``offset`` (even if it is larger
        than ``max_bytes``), else b"".  Raises OffsetOutOfRangeError outside
        [log_start_offset, log_end_offset].
        """
        ...

    def batches(self, start_offset: int = 0) -> Iterator[tuple[BatchHeader, bytes]]:
        """Every batch whose last offset is >= start_offset, in order (for replay and scans)."""
        ...

    def append_unflushed(self, batch: bytes | bytearray | memoryview, now_ms: int) -> BatchHeader:
        """``append`` with the message flush rule's fsync left to the caller (the Produce
        path's group commit); a log that cannot defer its fsync flushes as ``append``."""
        ...

    def flush_due(self) -> bool:
        """True if the message flush rule wants an fsync that ``append_unflushed`` left."""
        ...

    def flush(self) -> None:
        """Make every appended byte durable."""
        ...

    def maybe_flush(self, now_ms: int) -> None:
        """Apply the time-based flush rule."""
        ...

    def truncate_to(self, offset: int) -> None:
        """Remove every batch with base offset >= ``offset``."""
        ...

    def advance_start_offset(self, offset: int) -> None:
        """Raise the log start offset (DeleteRecords, retention), durably, then delete the
        segments wholly below it -- rolling first if the active segment is among them."""
        ...

    def segments(self) -> list[SegmentInfo]:
        """The segments in offset order; the last is the active one."""
        ...

    @property
    def active_segment_base(self) -> int:
        """The base offset of the active segment (a change means the log rolled)."""
        ...

    @property
    def snapshots(self) -> SnapshotStore | None:
        """Where the partition keeps its producer-state snapshots (None: it keeps none)."""
        ...

    @property
    def config(self) -> LogConfig:
        """The settings in force (``reconfigure`` replaces them)."""
        ...

    def reconfigure(self, config: LogConfig) -> None:
        """Apply changed settings (a topic's configs were altered) from the next append on."""
        ...

    def purge_deleted(self, through: int | None = None) -> int:
        """Remove the files of segments deleted earlier (file.delete.delay.ms): those among
        the first ``through`` retired (``retired_mark``), or all; bytes freed."""
        ...

    @property
    def retired_mark(self) -> int:
        """How many segments were retired (renamed ``.deleted``) so far; 0: never any."""
        ...

    @property
    def cleaned_offset(self) -> int:
        """The log cleaner's checkpoint: offsets below it were compacted (0 if never)."""
        ...

    def replace_segments(self, contents: dict[int, list[bytes]], cleaned_offset: int) -> None:
        """Atomically replace non-active segments (by base offset) with the batches given,
        which keep their offsets (an empty list removes the segment, unless it is the first),
        and record the cleaner checkpoint.  A crash leaves either all old or all new."""
        ...

    def close(self) -> None: ...


class Storage(Protocol):
    """A set of partition logs addressed by (topic, partition)."""

    def open_log(self, topic: str, partition: int, config: LogConfig | None = None) -> PartitionLog:
        """Open (creating if absent) the log of one partition, running recovery on it."""
        ...

    def list_logs(self) -> list[tuple[str, int]]:
        """Every (topic, partition) that has a log."""
        ...

    def delete_log(self, topic: str, partition: int) -> None:
        """Remove a partition's log and its files."""
        ...

    def close(self) -> None: ...
