"""One cleaner pass as three steps, so the copying can run off the event loop.

* ``plan_clean`` (on the loop, cheap): which segments, up to which offset, the aborted
  transactions as the log knows them now, the time and the policy -- or None when the log
  needs no pass.  A pass is due when the cleanable range is dirty enough
  (``needs_cleaning``) or when a tombstone or marker kept by an earlier pass has become
  removable (``CleanerState.due_ms``): without that, a log that stops receiving writes
  would keep its last tombstones forever.  (Kafka's cleaner picks a log by its dirty ratio
  only, so there its tombstones wait for new writes: a deliberate difference.)
* ``run_clean`` (anywhere, pure): the kept batches per segment, leaving out the segments
  whose bytes would not change (they are not rewritten), and the time the earliest kept
  tombstone or marker becomes removable.
* ``apply_clean`` (on the loop): the atomic swap, unless the log changed under the pass
  (its start offset moved past a planned segment, or a planned segment is gone): then the
  result is dropped and the next pass plans again.

The broker runs the three in a row (the simulator and unit tests, deterministically) or
hands ``run_clean`` to a worker (the server); the decisions are the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from coordinator.log.cleaner import (
    CleanerPolicy,
    by_segment,
    clean_with_horizon,
    cleanable_segments,
    needs_cleaning,
)
from coordinator.log.storage import PartitionLog, SegmentInfo
from txn.batch import BatchHeader, ControlType, control_type_of, parse_header

Aborted = tuple[int, int, int]  # (producer id, first offset, marker offset)


@dataclass
class CleanerState:
    """What the broker remembers of a log between passes (in memory only)."""

    # When a kept tombstone or marker becomes removable; 0 = unknown (after a start), so the
    # first pass over a log with a cleaned part looks once.
    due_ms: int = 0
    busy: bool = False  # a pass is running on a worker


@dataclass(frozen=True, slots=True)
class CleanJob:
    segments: tuple[SegmentInfo, ...]
    end: int  # the first offset not cleaned (the next segment's base)
    aborted: tuple[Aborted, ...]
    now_ms: int
    policy: CleanerPolicy
    log_start: int


@dataclass(frozen=True, slots=True)
class CleanResult:
    job: CleanJob
    contents: dict[int, list[bytes]]  # only the segments that change
    bytes_before: int
    bytes_after: int
    due_ms: int
    unchanged: tuple[int, ...] = field(default=())  # bases of the segments left as they were
    # Offsets of the transaction markers still in the range: an aborted transaction whose
    # ABORT marker went must leave the aborted index too (a read_committed client skips a
    # producer's batches from an aborted transaction's first offset until its marker).
    kept_markers: frozenset[int] = frozenset()


def plan_clean(
    log: PartitionLog,
    last_stable_offset: int,
    aborted: Iterable[Aborted],
    now_ms: int,
    policy: CleanerPolicy,
    state: CleanerState,
) -> CleanJob | None:
    segments = log.segments()
    first_dirty = max(log.cleaned_offset, log.log_start_offset)
    count = cleanable_segments(segments, last_stable_offset, now_ms, policy, first_dirty)
    if count == 0:
        return None
    chosen = tuple(segments[:count])
    due = state.due_ms <= now_ms and log.cleaned_offset > log.log_start_offset
    if not due and not needs_cleaning(chosen, first_dirty, now_ms, policy):
        return None
    end = segments[count].base_offset
    return CleanJob(
        chosen,
        end,
        tuple(a for a in aborted if a[1] < end),
        now_ms,
        policy,
        log.log_start_offset,
    )


def job_batches(log: PartitionLog, job: CleanJob) -> list[tuple[BatchHeader, bytes]]:
    """The planned range's batches, copied (a worker may hold them while the log moves on)."""
    out: list[tuple[BatchHeader, bytes]] = []
    for header, raw in log.batches(0):
        if header.base_offset >= job.end:
            break
        out.append((header, bytes(raw)))
    return out


def run_clean(job: CleanJob, batches: Sequence[tuple[BatchHeader, bytes]]) -> CleanResult:
    by_pid: dict[int, list[Aborted]] = {}
    for entry in job.aborted:
        by_pid.setdefault(entry[0], []).append(entry)

    def is_aborted(header: BatchHeader) -> bool:
        return any(
            first <= header.base_offset < last
            for _pid, first, last in by_pid.get(header.producer_id, ())
        )

    kept, due = clean_with_horizon(batches, is_aborted, job.now_ms, job.policy)
    grouped = by_segment(job.segments, kept)
    original = by_segment(job.segments, [raw for _h, raw in batches])
    changed = {base: out for base, out in grouped.items() if out != original.get(base, [])}
    before = sum(s.size_bytes for s in job.segments)
    markers = frozenset(h.base_offset for h in map(parse_header, kept) if h.is_control)
    return CleanResult(
        job,
        changed,
        before,
        sum(len(raw) for raw in kept),
        due,
        tuple(base for base in grouped if base not in changed),
        markers,
    )


def apply_clean(log: PartitionLog, result: CleanResult) -> bool:
    """Swap the cleaned segments in; False (nothing changed) if the log moved under the pass."""
    job = result.job
    current = {s.base_offset: s for s in log.segments()}
    for seg in job.segments:
        now = current.get(seg.base_offset)
        if now is None or now.next_offset != seg.next_offset or now.size_bytes != seg.size_bytes:
            return False
    if log.log_start_offset != job.log_start:
        return False
    log.replace_segments(result.contents, job.end)
    return True


def transactions_of(log: PartitionLog) -> tuple[int, list[Aborted]]:
    """The last stable offset and the aborted transactions of a log without a ``Partition``
    (the internal logs), by a scan of its batches."""
    open_txns: dict[int, int] = {}
    aborted: list[Aborted] = []
    for header, raw in log.batches(log.log_start_offset):
        if header.is_control:
            first = open_txns.pop(header.producer_id, None)
            if first is not None and control_type_of(raw, 0, header) is ControlType.ABORT:
                aborted.append((header.producer_id, first, header.base_offset))
        elif header.is_transactional:
            open_txns.setdefault(header.producer_id, header.base_offset)
    lso = min(open_txns.values()) if open_txns else log.log_end_offset
    return lso, aborted
