"""The in-flight state of one share partition, and the plans that change it.

``InFlightState`` holds the record states, delivery counts, owners, acquisition locks and
pending transactional acknowledgements (as ``Run`` objects, see ``inflight``), SPSO/SPEO, the
persisted start and state epoch, and the ranges a persister write is carrying right now.

The planners (``acquisition``, ``acknowledgement``, ``txn_pending``, and ``plan_log_start`` and
``plan_load`` here) read it and return a plan; its ``apply*`` methods are what changes it.
``SharePartition`` decides when: before or after the persister write, or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, NamedTuple

from coordinator.share.inflight import AcquisitionLock, InFlightRuns, PendingAck, Run
from coordinator.share.partition_model import Change, append_batch
from coordinator.share.persister import PersisterStateBatch
from coordinator.share.state_combiner import subtract_ranges
from txn.share_state import RecordState, check_transition

# States that keep a run alive below the SPSO (they still have an owner to hear from).
_HELD: Final = frozenset({RecordState.ACQUIRED, RecordState.TX_PENDING})
_PERSISTED_STATE_IDS: Final[dict[int, RecordState]] = {
    int(RecordState.AVAILABLE): RecordState.AVAILABLE,
    # Kafka never persists ACQUIRED; an ACQUIRED batch read back would have no lock and no
    # owner (the KAFKA-18084 bug class), so it is loaded as AVAILABLE.
    int(RecordState.ACQUIRED): RecordState.AVAILABLE,
    int(RecordState.ACKNOWLEDGED): RecordState.ACKNOWLEDGED,
    int(RecordState.ARCHIVED): RecordState.ARCHIVED,
}


class StateLoadError(Exception):
    """Persisted state that cannot be loaded."""


# -- plans that are not lists of ``Change`` --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LoadPlan:
    """The persisted state read back: the runs from ``start`` on, and where they end."""

    state_epoch: int
    start: int
    end: int
    runs: tuple[Run, ...]


class AcquireStep(NamedTuple):
    """One step of an acquisition, applied in order.

    ``lock``: AVAILABLE or never-fetched cached records become ACQUIRED with ``delivery_count``;
    ``archive``: cached records are archived (aborted records under read_committed);
    ``new_archived`` / ``new_acquired``: records beyond the cache join it in that state;
    ``new_available``: records beyond the cache join it AVAILABLE, never delivered (the rest
    of a log batch split by ShareFetch's record_limit mode).
    ``batch``: the in-flight batch of new records, if not the plan's ``new_batch``.
    """

    kind: Literal["lock", "archive", "new_archived", "new_acquired", "new_available"]
    first: int
    last: int
    delivery_count: int
    batch: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class AcquirePlan:
    steps: tuple[AcquireStep, ...]
    lock: AcquisitionLock | None  # the lock of every acquired record; None if none
    touched: tuple[int, int]  # the offsets whose runs may merge afterwards (first < 0: none)
    #: The in-flight batch the new records (and gap records) of this acquisition form.
    new_batch: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class LogStartPlan:
    """The log start moved past the SPSO: archive these ranges, then start there."""

    log_start: int
    archive: tuple[tuple[int, int], ...]

    @property
    def archived(self) -> int:
        return sum(z - a + 1 for a, z in self.archive)


@dataclass(frozen=True, slots=True)
class RestoreStep:
    """Records of a still-open transaction to mark TX_PENDING again after a restart."""

    first: int
    last: int
    delivery_count: int
    pending: PendingAck


# -- the state -------------------------------------------------------------------------------------


class InFlightState:
    """The records between SPSO and SPEO of one share partition, with their locks.

    Planners read the attributes; only the ``apply*`` methods (and the write and lock
    bookkeeping ``SharePartition`` does around a persister call) change them.
    """

    __slots__ = (
        "deferred",
        "end",
        "find_next",
        "locks",
        "persisted_start",
        "runs",
        "start",
        "state_epoch",
        "transitioning",
        "write_depth",
    )

    def __init__(self) -> None:
        self.runs = InFlightRuns()
        self.start = 0  # SPSO
        self.end = 0  # SPEO, exclusive
        self.persisted_start = -1
        self.state_epoch = 0
        self.find_next = False  # True when AVAILABLE or gap runs may exist (Kafka's flag)
        self.locks: set[AcquisitionLock] = set()
        self.transitioning: list[tuple[int, int]] = []  # ranges being written right now
        self.write_depth = 0
        self.deferred: list[AcquisitionLock] = []  # locks that expired during a write

    # -- reading -----------------------------------------------------------------------------------

    @property
    def in_flight_count(self) -> int:
        return self.end - self.start

    @property
    def next_fetch_offset(self) -> int:
        """The first AVAILABLE or never-fetched offset, else SPEO (remembers when none is)."""
        if not self.find_next:
            return self.end
        for run in self.runs.iter_from(self.start):
            if run.pending is None and (run.state is None or run.state is RecordState.AVAILABLE):
                return max(run.first, self.start)
        self.find_next = False
        return self.end

    def record_state(self, offset: int) -> tuple[RecordState, int, str] | None:
        run = self.runs.find(offset)
        if run is None or run.state is None:
            return None
        return run.state, run.delivery_count, run.member_id

    def state_batches(self) -> list[PersisterStateBatch]:
        out: list[PersisterStateBatch] = []
        for run in self.runs.iter_from(self.start):
            if run.state is None:
                continue
            first = max(run.first, self.start)
            append_batch(out, first, run.last, int(run.state), run.delivery_count)
        return out

    def pending_acks(self) -> list[tuple[int, int, PendingAck]]:
        return [(r.first, r.last, r.pending) for r in self.runs if r.pending is not None]

    def in_transition(self, first: int, last: int) -> bool:
        """Whether a write now carries any of first..last."""
        return any(a <= last and first <= z for a, z in self.transitioning)

    def outside_transitions(self, first: int, last: int) -> list[tuple[int, int]]:
        """The parts of first..last not being written right now."""
        return subtract_ranges(first, last, self.transitioning)

    def terminal_prefix_end(self, overlay: Sequence[Change] | None) -> int:
        """Where the SPSO lands: past the contiguous ACKNOWLEDGED/ARCHIVED records.

        ``overlay`` (sorted, disjoint) is a plan not applied yet: its states win where it lies.
        """
        p = self.start
        end = self.end
        runs = self.runs
        changes = overlay or []
        k = 0
        i = runs.index_from(p)
        while p < end:
            while k < len(changes) and changes[k].last < p:
                k += 1
            state: RecordState | None
            if k < len(changes) and changes[k].first <= p:
                state = changes[k].state
                seg_end = changes[k].last
            else:
                while runs[i].last < p:
                    i += 1
                run = runs[i]
                state = run.state
                seg_end = run.last
                if k < len(changes):
                    seg_end = min(seg_end, changes[k].first - 1)
            if state is None or not state.is_terminal:
                break
            p = seg_end + 1
        return p

    def terminal_count(self, overlay: Sequence[Change] | None) -> int:
        """ACKNOWLEDGED/ARCHIVED records from the SPSO on (Kafka's deliveryCompleteCount), with
        ``overlay`` (sorted, disjoint, not applied yet) winning where it lies."""
        start = self.start
        count = 0
        for run in self.runs.iter_from(start):
            if run.state is not None and run.state.is_terminal:
                count += run.last - max(run.first, start) + 1
        for change in overlay or ():
            first = max(change.first, start)
            if first > change.last:
                continue
            for run in self.runs.overlapping(first, change.last):
                if run.state is not None and run.state.is_terminal:
                    count -= min(run.last, change.last) - max(run.first, first) + 1
            if change.state.is_terminal and not change.renew:
                count += change.last - first + 1
        return count

    # -- applying plans ----------------------------------------------------------------------------

    def apply_load(self, plan: LoadPlan) -> None:
        runs = InFlightRuns()
        for run in plan.runs:
            runs.append(run)
        self.state_epoch = plan.state_epoch
        self.runs = runs
        self.start = plan.start
        self.end = plan.end
        self.persisted_start = plan.start
        self.find_next = bool(runs)
        self.advance_start()

    def apply(self, plan: Sequence[Change]) -> dict[str, int]:
        """Make the planned transitions; the metric events they produce, by kind."""
        events: dict[str, int] = {}
        for change in plan:
            for run in self.runs.isolate(change.first, change.last):
                old = run.lock
                if change.renew:
                    new = change.lock
                    assert new is not None
                    if old is not None and old is not new and old.release(run.count):
                        self.locks.discard(old)
                    new.held += run.count
                    run.lock = new
                    continue
                state = run.state
                assert state is not None, "a planned change never targets a gap"
                check_transition(state, change.state)
                if old is not None and old.release(run.count):
                    self.locks.discard(old)
                run.state = change.state
                run.delivery_count = change.delivery_count
                run.member_id = change.member_id
                run.lock = None
                run.pending = change.pending
            if change.state is RecordState.AVAILABLE:
                self.find_next = True
            self.runs.coalesce(change.first, change.last)
            if change.event is not None:
                events[change.event] = events.get(change.event, 0) + change.count
        return events

    def apply_acquire(self, plan: AcquirePlan) -> None:
        lock = plan.lock
        for kind, first, last, dc, step_batch in plan.steps:
            batch = step_batch if step_batch is not None else plan.new_batch
            if kind == "archive":
                self._archive_range(first, last)
            elif kind == "new_archived":
                self.runs.append(Run(first, last, RecordState.ARCHIVED, 0, batch=batch))
                self.end = last + 1
            elif kind == "new_available":
                self.runs.append(Run(first, last, RecordState.AVAILABLE, 0, batch=batch))
                self.end = last + 1
                self.find_next = True
            else:
                assert lock is not None
                if kind == "lock":
                    for run in self.runs.isolate(first, last):
                        if run.state is not None:
                            check_transition(run.state, RecordState.ACQUIRED)
                        else:
                            run.batch = plan.new_batch
                        run.state = RecordState.ACQUIRED
                        run.delivery_count = dc
                        run.member_id = lock.member_id
                        run.lock = lock
                else:
                    self.runs.append(
                        Run(
                            first,
                            last,
                            RecordState.ACQUIRED,
                            1,
                            lock.member_id,
                            lock,
                            batch=batch,
                        )
                    )
                    self.end = last + 1
                lock.held += last - first + 1
        first, last = plan.touched
        if first >= 0 and last >= first:
            self.runs.coalesce(first, last)
        if lock is not None:
            self.locks.add(lock)

    def apply_log_start(self, plan: LogStartPlan) -> None:
        for first, last in plan.archive:
            self._archive_range(first, last)
        self.runs.split_at(plan.log_start)  # so what lies below it can be evicted
        self.start = plan.log_start
        self.end = max(self.end, plan.log_start)
        self.find_next = True
        self.advance_start()

    def apply_restore(self, plan: Sequence[RestoreStep]) -> None:
        """Replay durable TX_PENDING state: set directly, not a live transition."""
        for step in plan:
            first, last = step.first, step.last
            if last >= self.end:
                if first > self.end:
                    self.runs.append(Run(self.end, first - 1, None))
                self.runs.append(Run(max(first, self.end), last, None))
                self.end = last + 1
            for run in self.runs.isolate(first, last):
                if run.state is not None and run.state.is_terminal:
                    continue
                run.state = RecordState.TX_PENDING
                run.delivery_count = max(run.delivery_count, step.delivery_count, 1)
                run.member_id = ""
                if run.lock is not None and run.lock.release(run.count):
                    self.locks.discard(run.lock)
                run.lock = None
                run.pending = step.pending
            self.runs.coalesce(first, last)
        self.find_next = True

    def advance_start(self) -> None:
        """Move the SPSO past terminal records and evict what lies wholly below it."""
        self.start = self.terminal_prefix_end(None)
        self.end = max(self.end, self.start)
        self.runs.drop_below(self.start, keep_states=_HELD)

    def _archive_range(self, first: int, last: int) -> None:
        """Archive AVAILABLE or never-fetched offsets (aborted records)."""
        for run in self.runs.isolate(first, last):
            if run.state is not None:
                check_transition(run.state, RecordState.ARCHIVED)
            run.state = RecordState.ARCHIVED
            run.member_id = ""

    # -- lock and write bookkeeping ----------------------------------------------------------------

    def drop_locks(self) -> None:
        """Fenced: cancel every lock timer and forget the locks."""
        for lock in self.locks:
            lock.cancel()
        self.locks.clear()
        self.deferred.clear()

    def hold_lock(self, lock: AcquisitionLock) -> None:
        """A RENEW's lock, once applied, holds its records."""
        self.locks.add(lock)

    def forget_lock(self, lock: AcquisitionLock) -> None:
        """A lock timed out: its records go back with the expiry plan."""
        self.locks.discard(lock)

    def defer_expiry(self, lock: AcquisitionLock) -> None:
        """A lock timed out during a write: expire it once the write is done."""
        self.deferred.append(lock)

    def next_deferred(self) -> AcquisitionLock | None:
        """The next deferred expiry still due once no write is running, else None."""
        while self.deferred and not self.write_depth:
            lock = self.deferred.pop(0)
            if lock in self.locks:
                return lock
        return None

    def begin_write(self, plan: Sequence[Change]) -> int:
        """A write carrying ``plan`` starts; the mark to pass to ``end_write``."""
        mark = len(self.transitioning)
        self.transitioning.extend((c.first, c.last) for c in plan)
        self.write_depth += 1
        return mark

    def end_write(self, mark: int) -> None:
        self.write_depth -= 1
        del self.transitioning[mark:]

    def persisted(self, start: int) -> None:
        """A write carrying ``start`` as the SPSO succeeded."""
        self.persisted_start = start


# -- planners over the state itself ----------------------------------------------------------------


def plan_load(state_epoch: int, start: int, batches: Sequence[PersisterStateBatch]) -> LoadPlan:
    """The runs of persisted ``batches`` from ``start`` on (gaps between them included)."""
    runs: list[Run] = []
    cursor = start
    for batch in sorted(batches, key=lambda b: b.first_offset):
        if batch.first_offset < cursor or batch.last_offset < batch.first_offset:
            msg = f"state batch {batch} is below start {start} or overlaps another"
            raise StateLoadError(msg)
        state = _PERSISTED_STATE_IDS.get(batch.delivery_state)
        if state is None or batch.delivery_count < 0:
            raise StateLoadError(f"state batch {batch} has an invalid state or delivery count")
        if batch.first_offset > cursor:
            runs.append(Run(cursor, batch.first_offset - 1, None))
        runs.append(
            Run(
                batch.first_offset,
                batch.last_offset,
                state,
                batch.delivery_count,
                batch=(batch.first_offset, batch.last_offset),
            )
        )
        cursor = batch.last_offset + 1
    return LoadPlan(state_epoch, start, cursor, tuple(runs))


def plan_log_start(state: InFlightState, log_start: int) -> LogStartPlan | None:
    """The log start offset passed the SPSO: AVAILABLE records below it are archived; ACQUIRED
    (and TX_PENDING) ones keep their owner until their lock expires or they are released."""
    start = state.start
    if log_start <= start:
        return None
    archive = tuple(
        (max(run.first, start), min(run.last, log_start - 1))
        for run in state.runs.overlapping(start, log_start - 1)
        if run.state is RecordState.AVAILABLE and run.pending is None
    )
    return LogStartPlan(log_start, archive)
