"""One cleaner pass as three steps, so the copying can run off the event loop.

* ``plan_clean`` (on the loop, cheap): which segments, up to which offset, the aborted
  transactions as the log knows them now, the time and the policy -- or None when the log
  needs no pass.  A pass is due when the cleanable range is dirty enough
  (``needs_cleaning``) or when a tombstone or marker kept by an earlier pass has become
  removable (``CleanerState.due_ms``): without that, a log that stops receiving writes
  would keep its last tombstones forever.  (Kafka's cleaner picks a log by its dirty ratio
  only, so there its tombstones wait for new writes: a deliberate difference.)
* ``run_clean`` (anywhere, pure): the offset map from the cleaner checkpoint (bounded: when
  it fills, only the segments up to the last batch mapped are cleaned and the checkpoint
  stops there), the kept batches per segment, leaving out the segments whose bytes would
  not change (they are not rewritten), and the time the earliest kept tombstone or marker
  becomes removable.
* ``apply_clean`` (on the loop): the atomic swap, unless the log changed under the pass
  (its start offset moved past a planned segment, or a planned segment is gone): then the
  result is dropped and the next pass plans again.

The broker runs the three in a row (the simulator and unit tests, deterministically) or
hands ``run_clean`` to a worker (the server); the decisions are the same.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from coordinator.log.cleaner import (
    CleanContext,
    CleanerPolicy,
    CleanRules,
    build_offset_map,
    cleanable_segments,
    needs_cleaning,
)
from coordinator.log.cleaner_io import (
    Batches,
    CleanRange,
    FileRange,
    ReadBuffer,
    SegmentFile,
    memory_range,
)
from coordinator.log.file_log import LOG_SUFFIX, FileLog
from coordinator.log.file_swap import Staged
from coordinator.log.storage import PartitionLog, SegmentInfo
from txn.batch import BatchHeader, ControlType, control_type_of

Aborted = tuple[int, int, int]  # (producer id, first offset, marker offset)
#: producer id -> (its last data offset, -1 if none; its epoch): the active producers
LastRecords = Mapping[int, tuple[int, int]]


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
    first_dirty: int = 0  # the cleaner checkpoint: the offset map starts there
    last_records: tuple[tuple[int, int, int], ...] = ()  # (producer id, last data, epoch)


@dataclass(frozen=True, slots=True)
class CleanResult:
    job: CleanJob
    # Only the segments that change: their batches, or (a file log's) their staged file.
    contents: dict[int, list[bytes] | Staged]
    bytes_before: int
    bytes_after: int
    due_ms: int
    unchanged: tuple[int, ...] = field(default=())  # bases of the segments left as they were
    # Offsets of the transaction markers still in the range: an aborted transaction whose
    # ABORT marker went must leave the aborted index too (a read_committed client skips a
    # producer's batches from an aborted transaction's first offset until its marker).
    kept_markers: frozenset[int] = frozenset()
    # The new cleaner checkpoint: ``job.end``, or less when the offset map filled up
    # (the next pass goes on from there).
    cleaned_to: int = -1

    @property
    def end(self) -> int:
        return self.job.end if self.cleaned_to < 0 else self.cleaned_to


def plan_clean(
    log: PartitionLog,
    last_stable_offset: int,
    aborted: Iterable[Aborted],
    now_ms: int,
    policy: CleanerPolicy,
    state: CleanerState,
    last_records: LastRecords | None = None,
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
        first_dirty,
        tuple(sorted((pid, last, epoch) for pid, (last, epoch) in (last_records or {}).items())),
    )


def job_range(log: PartitionLog, job: CleanJob) -> CleanRange:
    """What the pass reads: a file log's planned segment files (read by the pass through its
    bounded buffer, up to their planned sizes: those segments are not written meanwhile), or
    a memory log's batches of the range, copied (a worker may hold them while the log moves
    on)."""
    if isinstance(log, FileLog):
        return FileRange(
            tuple(
                SegmentFile(
                    str(log.directory / f"{seg.base_offset:020d}{LOG_SUFFIX}"),
                    seg.base_offset,
                    seg.size_bytes,
                )
                for seg in job.segments
            ),
            job.log_start,
        )
    batches: list[tuple[BatchHeader, bytes]] = []
    for header, raw in log.batches(0):
        if header.base_offset >= job.end:
            break
        batches.append((header, bytes(raw)))
    return memory_range([seg.base_offset for seg in job.segments], batches)


def run_clean(
    job: CleanJob, source: CleanRange, on_buffer_size: Callable[[int], None] | None = None
) -> CleanResult:
    """The pass: its segments read through one bounded buffer (``coordinator.log.cleaner_io``)
    once for the offset map, once for the copy; a segment whose bytes would not change is
    not held.  ``on_buffer_size`` is told each size the read buffer takes."""
    policy = job.policy
    buffer = ReadBuffer(policy.io_buffer_bytes, policy.max_io_buffer_bytes, on_buffer_size)

    def read(numbers: Iterable[int]) -> Batches:
        for number in numbers:
            yield from source.batches(number, buffer)

    by_pid: dict[int, list[Aborted]] = {}
    for entry in job.aborted:
        by_pid.setdefault(entry[0], []).append(entry)

    def is_aborted(header: BatchHeader) -> bool:
        return any(
            first <= header.base_offset < last
            for _pid, first, last in by_pid.get(header.producer_id, ())
        )

    first_dirty = min(job.first_dirty, job.end)
    # Only the dirty segments are mapped (below them every batch was cleaned already).
    dirty = [n for n, seg in enumerate(job.segments) if seg.next_offset > first_dirty]
    with contextlib.closing(read(dirty)) as mapped:
        offset_map = build_offset_map(mapped, first_dirty, job.end, is_aborted, policy)
    # Kafka's doClean: the segments up to the last offset mapped are cleaned, the rest wait.
    end = job.end
    if offset_map.full:
        end = max(offset_map.latest_offset + 1, first_dirty)
    count = sum(1 for s in job.segments if s.base_offset < end) or 1
    producers = {pid: (last, epoch) for pid, last, epoch in job.last_records}
    rules = CleanRules(is_aborted, job.now_ms, policy, CleanContext(offset_map, job.end, producers))
    changed: dict[int, list[bytes] | Staged] = {}
    unchanged: list[int] = []
    bytes_after = 0
    markers: set[int] = set()
    try:
        for number, seg in enumerate(job.segments[:count]):
            writer = source.writer(number, buffer)
            differs = False
            try:
                with contextlib.closing(source.batches(number, buffer)) as batches:
                    for header, raw in batches:
                        out = rules.filter(header, raw)
                        if out is None:
                            differs = True
                            continue
                        differs = differs or (out is not raw and out != raw)
                        writer.write(out)
                        bytes_after += len(out)
                        if header.is_control:
                            markers.add(header.base_offset)
            except BaseException:
                writer.finish(keep=False)
                raise
            output = writer.finish(keep=differs)
            if output is None:
                unchanged.append(seg.base_offset)
            else:
                changed[seg.base_offset] = output
        with contextlib.closing(read(range(count, len(job.segments)))) as rest:
            markers.update(h.base_offset for h, _raw in rest if h.is_control)
    except BaseException:
        for staged_out in changed.values():  # a failed pass leaves no staged file behind
            if isinstance(staged_out, Staged):
                Path(staged_out.path).unlink(missing_ok=True)
        raise
    return CleanResult(
        job,
        changed,
        sum(s.size_bytes for s in job.segments[:count]),
        bytes_after,
        rules.due,
        tuple(unchanged),
        frozenset(markers),
        -1 if end == job.end else end,
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
    contents = result.contents
    lists = {base: out for base, out in contents.items() if not isinstance(out, Staged)}
    if len(lists) == len(contents):
        log.replace_segments(lists, result.end)
    elif isinstance(log, FileLog):
        log.replace_segments(contents, result.end)
    else:
        raise TypeError(f"staged segments for a log without files: {log!r}")
    return True


def drop_staged(result: CleanResult) -> None:
    """Remove the files a pass staged that will not be swapped in (the log moved)."""
    for out in result.contents.values():
        if isinstance(out, Staged):
            Path(out.path).unlink(missing_ok=True)


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


def last_records_of(log: PartitionLog) -> dict[int, tuple[int, int]]:
    """The last data offset (-1: none since its last epoch) and epoch of every producer of a
    log without a ``Partition`` (the internal logs), by a scan of its batch headers."""
    out: dict[int, tuple[int, int]] = {}
    for header, _raw in log.batches(log.log_start_offset):
        if not header.has_producer_id:
            continue
        last, epoch = out.get(header.producer_id, (-1, header.producer_epoch))
        if header.producer_epoch != epoch:
            last = -1
        if not header.is_control:
            last = header.last_offset
        out[header.producer_id] = (last, header.producer_epoch)
    return out
