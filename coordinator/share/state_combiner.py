"""Kafka's state-batch merge rule (``PersisterStateBatchCombiner``), as pure functions.

The share coordinator keeps, per share partition, a list of non-overlapping inclusive offset
ranges each carrying one (delivery state, delivery count).  A ShareUpdate or a write merges new
ranges into that list:

1. **Prune** below the start offset: ranges that end before it are dropped, a range that
   straddles it is cut to start there.  A start offset of -1 means "unknown" and prunes
   nothing.
2. **Resolve overlaps** per offset: where ranges overlap, the one with the higher
   ``(delivery_count, delivery_state)`` wins, whether it is the old or the new one.  (Kafka
   reaches the same per-offset result by repeatedly splitting the first overlapping pair of a
   sorted set.)  Consequence for KIP-1289: a transaction abort that reverts a record to
   AVAILABLE with the same delivery count cannot overwrite an ACKNOWLEDGED range through this
   merge; the transactional path must replace state explicitly (DESIGN §4.6).
3. **Coalesce** neighbours: adjacent or overlapping ranges with equal delivery information
   become one range.  This is done to a fixed point, so the result is canonical: sorted,
   disjoint, and no two adjacent ranges share (state, count).

The result depends only on the per-offset winner, so the merge is order-insensitive within
each input and ``combine(combine(a, b, s), c, s) == combine(a, b + c, s)`` whenever the start
offset is the same.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Sequence

from coordinator.share.persister import PersisterStateBatch

NO_START_OFFSET = -1


def priority(batch: PersisterStateBatch) -> tuple[int, int]:
    """The merge priority: the higher (delivery count, delivery state) wins an overlap."""
    return (batch.delivery_count, batch.delivery_state)


def prune(batches: Iterable[PersisterStateBatch], start_offset: int) -> list[PersisterStateBatch]:
    """Drop what lies below ``start_offset`` (-1: keep everything), cutting a straddling range."""
    if start_offset == NO_START_OFFSET:
        return list(batches)
    kept: list[PersisterStateBatch] = []
    for batch in batches:
        if batch.last_offset < start_offset:
            continue
        if batch.first_offset < start_offset:
            kept.append(_with_offsets(batch, start_offset, batch.last_offset))
        else:
            kept.append(batch)
    return kept


def combine(
    current: Sequence[PersisterStateBatch],
    new: Sequence[PersisterStateBatch],
    start_offset: int = NO_START_OFFSET,
) -> list[PersisterStateBatch]:
    """Merge ``new`` into ``current`` under Kafka's rule; returns the canonical batch list.

    Either input may itself contain overlapping or unsorted ranges (a write request's batches
    are merged the same way).  Ranges with ``first_offset > last_offset`` are ignored.
    """
    batches = [b for b in prune([*current, *new], start_offset) if b.first_offset <= b.last_offset]
    if not batches:
        return []
    batches.sort(key=lambda b: b.first_offset)
    # Elementary intervals start at every first offset and right after every last offset; the
    # winner is constant inside each.  A max-heap of the ranges covering the sweep position,
    # with ranges that ended removed lazily when they reach the top.
    points = sorted({b.first_offset for b in batches} | {b.last_offset + 1 for b in batches})
    heap: list[tuple[int, int, int, int]] = []  # (-count, -state, seq, last_offset)
    out: list[PersisterStateBatch] = []
    index = 0
    for position, next_position in itertools.pairwise(points):
        while index < len(batches) and batches[index].first_offset <= position:
            batch = batches[index]
            heapq.heappush(
                heap, (-batch.delivery_count, -batch.delivery_state, index, batch.last_offset)
            )
            index += 1
        while heap and heap[0][3] < position:
            heapq.heappop(heap)
        if not heap:
            continue  # a gap between ranges
        neg_count, neg_state, _, _ = heap[0]
        append_coalesced(
            out,
            PersisterStateBatch(position, next_position - 1, -neg_state, -neg_count),
        )
    return out


def coalesce(batches: Iterable[PersisterStateBatch]) -> list[PersisterStateBatch]:
    """Canonical form of a batch list on its own (overlaps resolved, equal neighbours joined)."""
    return combine([], list(batches))


def covers(batches: Sequence[PersisterStateBatch], offset: int) -> PersisterStateBatch | None:
    """The batch of a canonical list that contains ``offset``, if any."""
    for batch in batches:
        if batch.first_offset <= offset <= batch.last_offset:
            return batch
        if batch.first_offset > offset:
            break
    return None


def append_coalesced(out: list[PersisterStateBatch], batch: PersisterStateBatch) -> None:
    """Append ``batch``, merged into the last one when it continues it with the same state."""
    if out:
        last = out[-1]
        if (
            last.last_offset + 1 == batch.first_offset
            and last.delivery_state == batch.delivery_state
            and last.delivery_count == batch.delivery_count
        ):
            out[-1] = _with_offsets(last, last.first_offset, batch.last_offset)
            return
    out.append(batch)


def _with_offsets(batch: PersisterStateBatch, first: int, last: int) -> PersisterStateBatch:
    return PersisterStateBatch(first, last, batch.delivery_state, batch.delivery_count)


def overlay(
    current: Sequence[PersisterStateBatch],
    new: Sequence[PersisterStateBatch],
    start_offset: int = NO_START_OFFSET,
) -> list[PersisterStateBatch]:
    """``new`` replaces ``current`` wherever they overlap, whatever the merge rule would say.

    Used for committed transactional acknowledgements (KIP-1289): the commit decides the
    state of those offsets, even where ``current`` carries a higher delivery count (DESIGN
    §4.6).  ``new`` must not overlap itself.
    """
    cut: list[PersisterStateBatch] = []
    spans = sorted((b.first_offset, b.last_offset) for b in new)
    for batch in current:
        pieces = subtract_ranges(batch.first_offset, batch.last_offset, spans)
        cut.extend(_with_offsets(batch, a, z) for a, z in pieces)
    return combine(cut, list(new), start_offset)


def subtract_ranges(
    first: int, last: int, holes: Iterable[tuple[int, int]]
) -> list[tuple[int, int]]:
    """The parts of ``first..last`` outside every inclusive range of ``holes``, in order."""
    pieces = [(first, last)]
    for hole_first, hole_last in holes:
        next_pieces: list[tuple[int, int]] = []
        for a, z in pieces:
            if hole_last < a or hole_first > z:
                next_pieces.append((a, z))
                continue
            if a < hole_first:
                next_pieces.append((a, hole_first - 1))
            if hole_last < z:
                next_pieces.append((hole_last + 1, z))
        pieces = next_pieces
    return pieces
