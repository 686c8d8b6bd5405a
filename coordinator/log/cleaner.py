"""The log cleaner (``cleanup.policy=compact``): which segments to clean, and how.

Kafka's rules (``LogCleaner``, ``LogCleanerManager``), pure functions over batches:

* **Cleanable range.** Whole non-active segments from the log start offset below the first
  uncleanable offset: the smallest of the active segment's base, the last stable offset
  (no open transaction is cleaned) and the base of the first dirty segment (from the
  cleaner checkpoint on) holding a record younger than ``min.compaction.lag.ms``.
* **When.** The dirty ratio -- bytes after the cleaner checkpoint over all bytes of the
  range -- reaches ``min.cleanable.dirty.ratio``, or the first dirty segment's first batch
  is older than ``max.compaction.lag.ms``.
* **What stays.** Per record: past the offset map's last offset, or its key's latest in
  the map (built from the cleaner checkpoint on, without aborted records, bounded by
  ``log.cleaner.dedupe.buffer.size``: a pass that fills it stops at the last batch mapped).
  Key-less records go.  A tombstone stays until its batch's delete horizon (KIP-534: set by
  the first cleaning that keeps it, to that time plus ``delete.retention.ms``, in the batch
  header) has passed.  A transaction marker stays while the pass saw a batch of its
  transaction, then gets a horizon as a tombstone does.  A producer's last batch and the
  range's last batch stay, emptied if need be.  Batches keep their offsets; a batch that
  lost records is rewritten with the rest (``rebuild_batch``).
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from coordinator.log.storage import SegmentInfo
from txn.batch import BatchHeader, ControlType, control_type_of
from txn.limits import INT32_MAX, LONG_MAX
from txn.record_keys import (
    InflatedBatchError,
    RecordView,
    empty_batch,
    rebuild_batch,
    records_of,
)


@dataclass(frozen=True, slots=True)
class CleanerPolicy:
    """A compacted topic's cleaner settings (Kafka's names and defaults)."""

    delete_retention_ms: int = 86_400_000
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    #: A batch whose records would decompress to more is kept whole, unread (a bomb).
    max_decompressed_bytes: int | None = None
    #: The keys one pass maps (``offset_map_entries`` of ``log.cleaner.dedupe.buffer.size``,
    #: Kafka's default 128 MiB).
    offset_map_entries: int = 5_033_164
    #: The read buffer a pass starts with (``cleaner_io_buffer_bytes``: Kafka's 512 KiB
    #: ``log.cleaner.io.buffer.size`` over its read and write buffers) and the size up to which
    #: a larger batch doubles it: the larger of the topic's ``max.message.bytes`` and the
    #: broker's ``message.max.bytes`` (``coordinator.log.cleaner_io``).
    io_buffer_bytes: int = 262_144
    max_io_buffer_bytes: int = 1_048_588


def cleaner_io_buffer_bytes(io_buffer_size: int, threads: int) -> int:
    """The read buffer of one cleaner, as Kafka's ``LogCleaner`` sizes it: the configured
    bytes shared by its threads, half for reading and half for writing."""
    return io_buffer_size // max(threads, 1) // 2


def cleanable_segments(
    segments: Sequence[SegmentInfo],
    last_stable_offset: int,
    now_ms: int,
    policy: CleanerPolicy,
    first_dirty: int = 0,
) -> int:
    """How many segments, from the first, may be cleaned.

    ``min.compaction.lag.ms`` (when above 0) is checked on the dirty segments only, from
    the one holding ``first_dirty`` (the cleaner checkpoint) on, as Kafka's
    ``LogCleanerManager.cleanableOffsets`` does: a segment cleaned earlier never holds a
    pass back, however recent its records."""
    uncleanable = min(segments[-1].base_offset, last_stable_offset)
    if policy.min_compaction_lag_ms > 0:
        bases = [seg.base_offset for seg in segments]
        dirty_from = max(bisect.bisect_right(bases, first_dirty) - 1, 0)
        for seg in segments[dirty_from:-1]:
            if now_ms - seg.largest_timestamp_ms < policy.min_compaction_lag_ms:
                uncleanable = min(uncleanable, seg.base_offset)
                break
    count = 0
    while count < len(segments) - 1 and segments[count + 1].base_offset <= uncleanable:
        count += 1
    return count


def needs_cleaning(
    segments: Sequence[SegmentInfo], first_dirty: int, now_ms: int, policy: CleanerPolicy
) -> bool:
    """Whether the segments (the cleanable ones) are dirty enough to clean."""
    if not segments:
        return False
    dirty = [s for s in segments if s.next_offset > first_dirty and s.size_bytes > 0]
    if not dirty:
        return False
    first = dirty[0].first_timestamp_ms
    if first >= 0 and now_ms - first > policy.max_compaction_lag_ms:
        return True
    total = sum(s.size_bytes for s in segments)
    return total > 0 and sum(s.size_bytes for s in dirty) / total >= (
        policy.min_cleanable_dirty_ratio
    )


def dirty_ratio(segments: Sequence[SegmentInfo], first_dirty: int) -> float:
    total = sum(s.size_bytes for s in segments)
    dirty = sum(s.size_bytes for s in segments if s.next_offset > first_dirty)
    return dirty / total if total else 0.0


@dataclass(frozen=True, slots=True)
class OffsetMap:
    """The key -> latest offset map of one pass (Kafka's ``SkimpyOffsetMap``): keys are held
    as MD5 digests, and it holds at most ``max_entries`` of them, so a pass over more keys
    stops at the batch that filled it (``latest_offset``) and the next pass goes on from
    there."""

    offsets: dict[bytes, int]
    latest_offset: int  # the last offset mapped (-1: none)
    full: bool = False

    def get(self, key: bytes) -> int:
        return self.offsets.get(_digest(key), -1)


@dataclass(frozen=True, slots=True)
class CleanContext:
    """What a pass knows beyond the batches: its offset map, the first uncleanable offset
    (the last batch before it is kept even if emptied) and, per producer id, the last
    data offset (-1: none) and epoch of the active producers (their last batch is kept,
    emptied if need be, so the sequence and epoch survive a restart)."""

    offset_map: OffsetMap
    upper_bound: int
    last_records: Mapping[int, tuple[int, int]]


def _digest(key: bytes) -> bytes:
    return hashlib.md5(key, usedforsecurity=False).digest()


def offset_map_entries(buffer_bytes: int, load_factor: float = 0.9) -> int:
    """How many keys a pass maps (``log.cleaner.dedupe.buffer.size``, at most 2^31 - 1 bytes
    as Kafka's one cleaner thread takes, over 24 bytes a slot -- a 16-byte MD5 and an 8-byte
    offset -- times the load factor; at least 1)."""
    return max(int(min(buffer_bytes, INT32_MAX) // 24 * load_factor), 1)


def build_offset_map(
    batches: Iterable[tuple[BatchHeader, bytes]],
    first_dirty: int,
    end: int,
    is_aborted: Callable[[BatchHeader], bool],
    policy: CleanerPolicy,
) -> OffsetMap:
    """Kafka's ``buildOffsetMap``: the keys of the dirty batches (from ``first_dirty``, below
    ``end``), leaving out aborted transactions, until ``policy.offset_map_entries`` keys."""
    offsets: dict[bytes, int] = {}
    latest = first_dirty - 1  # what lies below the cleaner checkpoint was cleaned already
    limit = policy.offset_map_entries
    for header, raw in batches:
        if header.base_offset >= end:
            break
        if header.last_offset < first_dirty:
            continue
        if not header.is_control and not (header.is_transactional and is_aborted(header)):
            try:
                found = records_of(raw, header, policy.max_decompressed_bytes)
                for record in found:
                    if record.key is None or record.offset < first_dirty:
                        continue
                    if len(offsets) >= limit and latest >= first_dirty:  # a batch at least
                        return OffsetMap(offsets, latest, True)
                    offsets[_digest(record.key)] = record.offset
            except InflatedBatchError:
                pass  # kept whole, unread
        latest = max(latest, header.last_offset)
    return OffsetMap(offsets, latest)


def clean(
    batches: Sequence[tuple[BatchHeader, bytes]],
    is_aborted: Callable[[BatchHeader], bool],
    now_ms: int,
    policy: CleanerPolicy,
) -> list[bytes]:
    """The batches that stay, in order, each whole, rewritten or gone."""
    return clean_with_horizon(batches, is_aborted, now_ms, policy)[0]


def clean_with_horizon(
    batches: Sequence[tuple[BatchHeader, bytes]],
    is_aborted: Callable[[BatchHeader], bool],
    now_ms: int,
    policy: CleanerPolicy,
    context: CleanContext | None = None,
) -> tuple[list[bytes], int]:
    """``clean``, and when the pass after it is due (``LONG_MAX`` if never): the earliest
    delete horizon it kept, or now when a marker must wait for the next pass to get one.

    Without ``context`` every batch is dirty, the map unbounded, no producer is active."""
    if context is None:
        end = batches[-1][0].last_offset + 1 if batches else 0
        unbounded = dataclasses.replace(policy, offset_map_entries=LONG_MAX)
        context = CleanContext(build_offset_map(batches, 0, end, is_aborted, unbounded), end, {})
    rules = CleanRules(is_aborted, now_ms, policy, context)
    out: list[bytes] = []
    for header, raw in batches:
        kept = rules.filter(header, raw)
        if kept is not None:
            out.append(kept)
    return out, rules.due


class CleanRules:
    """Kafka's ``Cleaner.cleanInto`` filter and ``CleanedTransactionMetadata``, per batch."""

    def __init__(
        self,
        is_aborted: Callable[[BatchHeader], bool],
        now_ms: int,
        policy: CleanerPolicy,
        context: CleanContext,
    ) -> None:
        self.is_aborted = is_aborted
        self.now = now_ms
        self.policy = policy
        self.context = context
        self.due = LONG_MAX
        self.committed: set[int] = set()  # producers whose committed batches were traversed
        self.aborted_seen: set[int] = set()  # producers whose aborted batches were traversed
        self.txn_kept: set[int] = set()  # producers whose transaction kept a batch

    def _discardable(self, header: BatchHeader, raw: bytes) -> bool:
        pid = header.producer_id
        if header.is_control:
            if header.records_count == 0:
                return True  # a marker cleaned earlier
            seen = self.aborted_seen
            if control_type_of(raw, 0, header) is ControlType.COMMIT:
                seen = self.committed
            traversed = pid in seen
            seen.discard(pid)
            return not traversed
        if not header.is_transactional:
            return False
        if self.is_aborted(header):
            self.aborted_seen.add(pid)
            return True
        self.committed.add(pid)
        return False

    def _last_of_producer(self, header: BatchHeader) -> bool:
        last = self.context.last_records.get(header.producer_id)
        if last is None:
            return False
        last_data, epoch = last
        if last_data >= 0:
            return header.last_offset == last_data
        return header.is_control and header.producer_epoch == epoch

    def filter(self, header: BatchHeader, raw: bytes) -> bytes | None:
        """The batch as it stays (``raw`` itself, rewritten or emptied), or None."""
        out = self._filter(header, raw)
        if out is not None and header.is_transactional and not header.is_control:
            # a batch of the transaction stays (even emptied): the next pass traverses it
            # too, so its marker cannot go then -- no pass is due for it
            self.txn_kept.add(header.producer_id)
        return out

    def _filter(self, header: BatchHeader, raw: bytes) -> bytes | None:
        horizon = header.delete_horizon_ms
        can_discard = self._discardable(header, raw)
        if header.is_control:
            drop_records = can_discard and horizon is not None and horizon <= self.now
        else:
            drop_records = can_discard
        if header.has_producer_id and self._last_of_producer(header):
            keep_empty = True
        else:
            keep_empty = header.last_offset + 1 == self.context.upper_bound
        if drop_records and not keep_empty:
            return None
        if header.is_control and not drop_records:
            if not can_discard:  # this pass traversed batches of its transaction
                if header.producer_id not in self.txn_kept:
                    self.due = min(self.due, self.now)  # the next pass sets its horizon
                self.txn_kept.discard(header.producer_id)
                return raw
            if horizon is None:
                horizon = self.now + self.policy.delete_retention_ms
                records = list(records_of(raw, header))
                self.due = min(self.due, horizon)
                return rebuild_batch(raw, header, records, horizon)
            self.due = min(self.due, horizon)
            return raw
        try:
            kept, whole, tombstones = self._records(header, raw, drop_records, horizon)
        except InflatedBatchError:
            return raw  # over the decompression bound: kept whole, unread
        if kept:
            if tombstones:
                if horizon is None:
                    new = self.now + self.policy.delete_retention_ms
                    self.due = min(self.due, new)
                    return rebuild_batch(raw, header, kept, new)
                self.due = min(self.due, horizon)
            return raw if whole else rebuild_batch(raw, header, kept)
        if not keep_empty:
            return None
        return raw if header.records_count == 0 else empty_batch(header)

    def _records(
        self, header: BatchHeader, raw: bytes, drop: bool, horizon: int | None
    ) -> tuple[list[RecordView], bool, bool]:
        """The records kept, whether all were, whether a tombstone was."""
        if drop:
            return [], header.records_count == 0, False
        records = list(records_of(raw, header, self.policy.max_decompressed_bytes))
        omap = self.context.offset_map
        kept: list[RecordView] = []
        tombstones = False
        for record in records:
            if record.offset > omap.latest_offset:
                keep = True
            elif record.key is None:
                keep = False
            else:
                latest = record.offset >= omap.get(record.key)
                keep = latest and (record.has_value or horizon is None or self.now < horizon)
            if keep:
                kept.append(record)
                tombstones = tombstones or not record.has_value
        return kept, len(kept) == len(records), tombstones


def by_segment(segments: Sequence[SegmentInfo], batches: list[bytes]) -> dict[int, list[bytes]]:
    """The cleaned batches grouped by the segment (base offset) each came from."""
    bases = [s.base_offset for s in segments]
    grouped: dict[int, list[bytes]] = {base: [] for base in bases}
    for raw in batches:
        base_offset = int.from_bytes(raw[:8], "big", signed=True)
        grouped[bases[max(bisect.bisect_right(bases, base_offset) - 1, 0)]].append(raw)
    return grouped
