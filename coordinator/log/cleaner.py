"""The log cleaner (``cleanup.policy=compact``): which segments to clean, and how.

Kafka's rules (``LogCleaner``, ``LogCleanerManager``), pure functions over batches:

* **Cleanable range.** Whole non-active segments from the log start offset below the first
  uncleanable offset: the smallest of the active segment's base, the last stable offset
  (no open transaction is cleaned) and the base of the first dirty segment (from the
  cleaner checkpoint on) holding a record younger than ``min.compaction.lag.ms``.
* **When.** The dirty ratio -- bytes after the cleaner checkpoint over all bytes of the
  range -- reaches ``min.cleanable.dirty.ratio``, or the first dirty segment's first batch
  is older than ``max.compaction.lag.ms``.
* **What stays.** The latest record of each key in the range (its offset map); records of
  aborted transactions go, and never count as the latest; key-less records go.  A
  tombstone (null value) stays until it is older than ``delete.retention.ms`` (here: by its
  record timestamp).  A transaction marker stays while any record of its transaction stays
  before it, or while it is younger than ``delete.retention.ms``.  Batches keep their
  offsets; a batch that lost records is rewritten with the rest (``rebuild_batch``).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from coordinator.log.storage import SegmentInfo
from txn.batch import BatchHeader
from txn.limits import LONG_MAX
from txn.record_keys import InflatedBatchError, RecordView, rebuild_batch, records_of


@dataclass(frozen=True, slots=True)
class CleanerPolicy:
    """A compacted topic's cleaner settings (Kafka's names and defaults)."""

    delete_retention_ms: int = 86_400_000
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    #: A batch whose records would decompress to more is kept whole, unread (a bomb).
    max_decompressed_bytes: int | None = None


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
) -> tuple[list[bytes], int]:
    """``clean``, and the time the earliest tombstone or marker it kept becomes removable
    (``LONG_MAX`` if none): a pass is due then even if nothing new was written."""
    latest: dict[bytes, int] = {}
    decoded: list[list[RecordView] | None] = []
    unread: set[int] = set()  # batches over max_decompressed_bytes: kept as they are
    for header, raw in batches:
        if header.is_control or (header.is_transactional and is_aborted(header)):
            decoded.append(None)
            continue
        try:
            found = list(records_of(raw, header, policy.max_decompressed_bytes))
        except InflatedBatchError:
            unread.add(len(decoded))
            found = []
        decoded.append(found)
        for record in found:
            if record.key is not None:
                latest[record.key] = record.offset
    out: list[bytes] = []
    txn_has_data: dict[int, bool] = {}
    retention = policy.delete_retention_ms
    horizon = now_ms - retention
    due = LONG_MAX
    for index, ((header, raw), records) in enumerate(zip(batches, decoded, strict=True)):
        if index in unread:
            out.append(raw)
            continue
        if header.is_control:
            if txn_has_data.pop(header.producer_id, False):
                out.append(raw)
            elif header.max_timestamp > horizon:
                out.append(raw)
                due = min(due, header.max_timestamp + retention)
            continue
        if records is None:  # aborted
            continue
        kept: list[RecordView] = []
        for r in records:
            if r.key is None or latest[r.key] != r.offset:
                continue
            if r.has_value:
                kept.append(r)
            elif r.timestamp_ms > horizon:
                kept.append(r)
                due = min(due, r.timestamp_ms + retention)
        if header.is_transactional and kept:
            txn_has_data[header.producer_id] = True
        if len(kept) == len(records):
            out.append(raw)
        elif kept:
            out.append(rebuild_batch(raw, header, kept))
    return out, due


def by_segment(segments: Sequence[SegmentInfo], batches: list[bytes]) -> dict[int, list[bytes]]:
    """The cleaned batches grouped by the segment (base offset) each came from."""
    bases = [s.base_offset for s in segments]
    grouped: dict[int, list[bytes]] = {base: [] for base in bases}
    for raw in batches:
        base_offset = int.from_bytes(raw[:8], "big", signed=True)
        grouped[bases[max(bisect.bisect_right(bases, base_offset) - 1, 0)]].append(raw)
    return grouped
