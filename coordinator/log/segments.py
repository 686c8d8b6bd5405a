"""Segment rules shared by every log implementation: when to roll, and what retention deletes.

Both follow Apache Kafka (``LogSegment.shouldRoll``, ``UnifiedLog.deleteOldSegments``):

* An append rolls the active segment when it is non-empty and either the batch would take it
  past ``segment.bytes``, or the batch's largest timestamp is more than ``segment.ms`` (less
  the segment's random ``segment.jitter.ms`` share, drawn when it was created) after
  the largest timestamp of the segment's first batch (the time since the segment was created
  when that batch had no timestamp).  Time alone never rolls: an idle segment is rolled by
  the next append, or by retention when all of it has expired.
* Retention walks the segments from the oldest and stops at the first one that must stay.
  Three passes run in order: segments wholly below the log start offset (DeleteRecords);
  then, when ``cleanup.policy`` contains ``delete``, the oldest segments while the log stays
  at or above ``retention.bytes`` without them; then segments whose largest timestamp is more
  than ``retention.ms`` before now.  An empty active segment is never deleted; a non-empty
  one is rolled and deleted.  The new log start offset is the base offset of the first
  segment kept.

This module is pure: it reads ``SegmentInfo`` lists and returns offsets.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from coordinator.log.storage import LogConfig, SegmentInfo
from txn.batch import BatchHeader, parse_header

_JITTER_RNG = random.Random()  # segment.jitter.ms: unseeded, as Kafka's


class ListLog(Protocol):
    """The batch lists of a memory or simulated log."""

    bases: list[int]
    headers: list[BatchHeader]
    blobs: list[bytes]


def should_roll(
    *,
    size: int,
    first_timestamp_ms: int,
    created_ms: int,
    batch: BatchHeader,
    now_ms: int,
    config: LogConfig,
    jitter_ms: int = 0,
) -> bool:
    """Whether appending ``batch`` starts a new segment (Kafka's LogSegment.shouldRoll):
    ``segment.ms`` less the segment's jitter (``roll_jitter_ms``) is its time limit."""
    if size == 0:
        return False
    if size + batch.size > config.segment_bytes:
        return True
    if first_timestamp_ms >= 0:
        waited = batch.max_timestamp - first_timestamp_ms
    else:
        waited = now_ms - created_ms
    return waited > config.segment_ms - jitter_ms


def roll_jitter_ms(config: LogConfig, rng: random.Random = _JITTER_RNG) -> int:
    """A new segment's jitter (``segment.jitter.ms``): drawn at random below the smaller of
    it and ``segment.ms``, 0 when unset (Kafka's ``LogConfig.randomSegmentJitter``), so the
    segments of many partitions do not all roll at once."""
    bound = min(config.segment_jitter_ms, config.segment_ms)
    return rng.randrange(bound) if bound > 0 else 0


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """A topic's effective retention settings (-1: unlimited)."""

    retention_ms: int = 7 * 24 * 60 * 60 * 1000
    retention_bytes: int = -1
    delete: bool = True  # cleanup.policy contains "delete"


def retention_start_offset(
    segments: Sequence[SegmentInfo],
    log_start_offset: int,
    high_watermark: int,
    now_ms: int,
    policy: RetentionPolicy,
) -> int:
    """The log start offset once Kafka's retention rules have deleted what they may.

    Equal to ``log_start_offset`` when nothing is to be deleted.
    """
    if not segments:
        return log_start_offset
    first = _deletable(
        segments,
        0,
        high_watermark,
        lambda i: i + 1 < len(segments) and segments[i + 1].base_offset <= log_start_offset,
    )
    if policy.delete and policy.retention_bytes >= 0:
        size = sum(seg.size_bytes for seg in segments[first:])
        if size >= policy.retention_bytes:
            excess = size - policy.retention_bytes

            def over_size(i: int) -> bool:
                nonlocal excess
                if excess - segments[i].size_bytes < 0:
                    return False
                excess -= segments[i].size_bytes
                return True

            first = _deletable(segments, first, high_watermark, over_size)
    if policy.delete and policy.retention_ms >= 0:
        retention_ms = policy.retention_ms
        first = _deletable(
            segments,
            first,
            high_watermark,
            lambda i: now_ms - segments[i].largest_timestamp_ms > retention_ms,
        )
    if first == 0:
        return log_start_offset
    # The base of the first segment kept (compaction leaves gaps between segments).
    kept = segments[first].base_offset if first < len(segments) else segments[-1].next_offset
    return max(log_start_offset, kept)


def _deletable(
    segments: Sequence[SegmentInfo],
    first: int,
    high_watermark: int,
    predicate: Callable[[int], bool],
) -> int:
    """Index of the first segment kept when deleting from ``first`` while ``predicate`` holds."""
    index = first
    while index < len(segments):
        seg = segments[index]
        last = index == len(segments) - 1
        upper = seg.next_offset if last else segments[index + 1].base_offset
        if high_watermark < upper or (last and seg.size_bytes == 0) or not predicate(index):
            break
        index += 1
    return index


@dataclass
class ListSegments:
    """Segment boundaries over a log kept as a list of batches (the memory and simulated logs).

    Only the boundaries and times are kept; sizes and timestamps are read off the batches.
    """

    bases: list[int] = field(default_factory=list)
    created_ms: list[int] = field(default_factory=list)
    modified_ms: list[int] = field(default_factory=list)
    active_size: int = 0
    active_first_timestamp_ms: int = -1
    active_jitter_ms: int = 0

    def before_append(self, batch: BatchHeader, now_ms: int, config: LogConfig) -> None:
        """Roll if ``batch`` (base offset assigned) does not belong in the active segment."""
        if not self.bases or should_roll(
            size=self.active_size,
            first_timestamp_ms=self.active_first_timestamp_ms,
            created_ms=self.created_ms[-1],
            batch=batch,
            now_ms=now_ms,
            config=config,
            jitter_ms=self.active_jitter_ms,
        ):
            self._add(batch.base_offset, now_ms)
            self.active_jitter_ms = roll_jitter_ms(config)

    def after_append(self, batch: BatchHeader, now_ms: int) -> None:
        if self.active_size == 0:
            self.active_first_timestamp_ms = batch.max_timestamp
        self.active_size += batch.size
        self.modified_ms[-1] = now_ms

    def view(
        self, bases: list[int], headers: list[BatchHeader], start: int, end: int
    ) -> list[SegmentInfo]:
        """The segments of the batches ``headers`` (base offsets ``bases``) in [start, end)."""
        if not self.bases:
            return [SegmentInfo(start, end, 0, -1)]
        out: list[SegmentInfo] = []
        for number, base in enumerate(self.bases):
            nxt = self.bases[number + 1] if number + 1 < len(self.bases) else end
            lo = bisect.bisect_left(bases, base)
            hi = bisect.bisect_left(bases, nxt)
            size = sum(h.size for h in headers[lo:hi])
            largest = max((h.max_timestamp for h in headers[lo:hi]), default=-1)
            if largest < 0:
                largest = self.modified_ms[number]
            first = headers[lo].max_timestamp if hi > lo else -1
            out.append(SegmentInfo(max(base, start), nxt, size, largest, first))
        return out

    def drop_below(self, start: int, end: int) -> None:
        """Forget segments wholly below ``start``, rolling first if the active one is among them
        (the new segment counts as created when the old one was last written)."""
        if not self.bases:
            return
        if self.active_size > 0 and end <= start:
            self._add(end, self.modified_ms[-1])
        keep = max(bisect.bisect_right(self.bases, start) - 1, 0)
        del self.bases[:keep], self.created_ms[:keep], self.modified_ms[:keep]

    def resync(self, bases: list[int], headers: list[BatchHeader], end: int) -> None:
        """After a truncation: drop boundaries at or past ``end`` and recount the active segment."""
        if not headers:
            self.bases.clear()
            self.created_ms.clear()
            self.modified_ms.clear()
            self.active_size = 0
            self.active_first_timestamp_ms = -1
            return
        while len(self.bases) > 1 and self.bases[-1] >= end:
            self.bases.pop()
            self.created_ms.pop()
            self.modified_ms.pop()
        if not self.bases:
            return
        lo = bisect.bisect_left(bases, self.bases[-1])
        active = headers[lo:]
        self.active_size = sum(h.size for h in active)
        self.active_first_timestamp_ms = active[0].max_timestamp if active else -1

    def replace(
        self,
        data: ListLog,
        contents: dict[int, list[bytes]],
    ) -> int:
        """The cleaner's swap on a batch list: returns the change in the number of batches."""
        if not contents:
            return 0
        if max(contents) >= self.bases[-1]:
            raise ValueError("the active segment cannot be replaced")
        delta = 0
        for base in sorted(contents, reverse=True):
            number = self.bases.index(base)
            lo = bisect.bisect_left(data.bases, base)
            hi = bisect.bisect_left(data.bases, self.bases[number + 1])
            headers = [parse_header(raw) for raw in contents[base]]
            data.bases[lo:hi] = [h.base_offset for h in headers]
            data.headers[lo:hi] = headers
            data.blobs[lo:hi] = list(contents[base])
            delta += len(headers) - (hi - lo)
            if not headers and number > 0:
                del self.bases[number], self.created_ms[number], self.modified_ms[number]
        return delta

    def _add(self, base: int, now_ms: int) -> None:
        self.bases.append(base)
        self.created_ms.append(now_ms)
        self.modified_ms.append(now_ms)
        self.active_size = 0
        self.active_first_timestamp_ms = -1
