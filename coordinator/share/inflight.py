"""The in-flight records of a share partition, kept as run-length ranges.

Kafka keeps ``firstOffset -> InFlightBatch`` and explodes a batch into one
object per offset once acknowledgements diverge.  Here the cache is a sorted
list of ``Run`` objects, each an inclusive offset range whose records share
one state, delivery count, owner, acquisition lock and pending transactional
acknowledgement.  An operation on part of a run splits it at the range
boundaries (``isolate``); neighbours that become equal again are merged
(``coalesce``).  So 20,000 records acquired and acknowledged in large ranges
cost a handful of objects, and the worst case (every offset different) is one
small object per offset, as in Kafka.

Invariants kept by ``SharePartition``:

* runs are sorted and never overlap;
* every offset in [SPSO, SPEO) is covered by exactly one run;
* a run with ``state is None`` is a *gap*: offsets the persisted state does
  not mention (Kafka's "gap window").  They were never acknowledged and are
  acquired as new records (delivery count 1);
* runs wholly below SPSO exist only while they are ACQUIRED or TX_PENDING
  (left behind when the log start offset moved past them); they are dropped
  as soon as they leave those states.

An ``AcquisitionLock`` is shared by every record one acquisition (or one
RENEW) locked.  It counts the records it still holds; when the count reaches
zero its timer is cancelled.  On expiry the partition looks for runs in the
lock's range that still point at it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field
from operator import attrgetter

from txn.clock import Timer
from txn.share_state import AcknowledgeType, RecordState


@dataclass(eq=False, slots=True)
class AcquisitionLock:
    """One acquisition lock timer and the records it still holds."""

    member_id: str
    first_offset: int
    last_offset: int
    deadline_ms: int
    held: int = 0
    timer: Timer | None = None

    def release(self, count: int) -> bool:
        """Drop ``count`` records; True (and the timer cancelled) when none are left."""
        self.held -= count
        if self.held <= 0:
            self.held = 0
            self.cancel()
            return True
        return False

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


@dataclass(frozen=True, slots=True)
class PendingAck:
    """A transactional acknowledgement waiting for its transaction (TX_PENDING, KIP-1289)."""

    producer_id: int
    producer_epoch: int
    ack_type: AcknowledgeType


@dataclass(eq=False, slots=True)
class Run:
    """Offsets ``first..last`` (inclusive) with one state."""

    first: int
    last: int
    state: RecordState | None  # None: a gap (no known state; fetched as new records)
    delivery_count: int = 0
    member_id: str = ""
    lock: AcquisitionLock | None = None
    pending: PendingAck | None = field(default=None)
    #: The in-flight batch holding these records (Kafka's ``InFlightBatch``): the records one
    #: acquisition of new records (or one persisted state batch) took, first and last offset.
    #: Throttled redelivery reads its size; runs of different batches never merge.
    batch: tuple[int, int] | None = None

    @property
    def count(self) -> int:
        return self.last - self.first + 1

    def same_as(self, other: Run) -> bool:
        """Whether two runs carry identical state (so adjacent ones may merge)."""
        return (
            self.state is other.state
            and self.delivery_count == other.delivery_count
            and self.member_id == other.member_id
            and self.lock is other.lock
            and self.pending == other.pending
            and self.batch == other.batch
        )

    def with_range(self, first: int, last: int) -> Run:
        return Run(
            first,
            last,
            self.state,
            self.delivery_count,
            self.member_id,
            self.lock,
            self.pending,
            self.batch,
        )


_FIRST = attrgetter("first")


class InFlightRuns:
    """A sorted list of non-overlapping runs with split/merge helpers."""

    __slots__ = ("_runs",)

    def __init__(self) -> None:
        self._runs: list[Run] = []

    def __len__(self) -> int:
        return len(self._runs)

    def __iter__(self) -> Iterator[Run]:
        return iter(self._runs)

    def __bool__(self) -> bool:
        return bool(self._runs)

    def __getitem__(self, index: int) -> Run:
        return self._runs[index]

    @property
    def last_offset(self) -> int | None:
        return self._runs[-1].last if self._runs else None

    def clear(self) -> None:
        self._runs.clear()

    # -- lookup -------------------------------------------------------------------------------

    def index_from(self, offset: int) -> int:
        """Index of the first run whose last offset is >= ``offset`` (len if none)."""
        runs = self._runs
        i = bisect.bisect_right(runs, offset, key=_FIRST) - 1
        if i < 0:
            return 0
        return i if runs[i].last >= offset else i + 1

    def find(self, offset: int) -> Run | None:
        """The run containing ``offset``."""
        runs = self._runs
        i = bisect.bisect_right(runs, offset, key=_FIRST) - 1
        if i >= 0 and runs[i].last >= offset:
            return runs[i]
        return None

    def iter_from(self, offset: int) -> Iterator[Run]:
        """Runs whose last offset is >= ``offset``, in order (do not mutate while iterating)."""
        runs = self._runs
        for i in range(self.index_from(offset), len(runs)):
            yield runs[i]

    def overlapping(self, first: int, last: int) -> list[Run]:
        """A snapshot of the runs that intersect [first, last]."""
        runs = self._runs
        out: list[Run] = []
        for i in range(self.index_from(first), len(runs)):
            run = runs[i]
            if run.first > last:
                break
            out.append(run)
        return out

    # -- mutation -----------------------------------------------------------------------------

    def append(self, run: Run) -> None:
        """Add a run after every existing one (merging it into an equal, adjacent last run)."""
        runs = self._runs
        if runs:
            tail = runs[-1]
            if run.first <= tail.last:
                msg = f"run {run.first}-{run.last} overlaps the cache tail {tail.last}"
                raise ValueError(msg)
            if tail.last + 1 == run.first and tail.same_as(run):
                tail.last = run.last
                return
        runs.append(run)

    def split_at(self, offset: int) -> None:
        """Make ``offset`` the first offset of a run, if a run covers it."""
        runs = self._runs
        i = bisect.bisect_right(runs, offset, key=_FIRST) - 1
        if i < 0:
            return
        run = runs[i]
        if run.first == offset or run.last < offset:
            return
        right = run.with_range(offset, run.last)
        run.last = offset - 1
        runs.insert(i + 1, right)

    def isolate(self, first: int, last: int) -> list[Run]:
        """Split so that runs start at ``first`` and end at ``last``; the runs inside, in order.

        The returned objects are the cache's own: mutate their state in place, then call
        ``coalesce(first, last)``.
        """
        self.split_at(first)
        self.split_at(last + 1)
        return self.overlapping(first, last)

    def coalesce(self, first: int, last: int) -> None:
        """Merge equal adjacent runs around [first, last] (one run either side included)."""
        runs = self._runs
        lo = max(0, self.index_from(first) - 1)
        hi = min(len(runs), self.index_from(last) + 2)
        if hi - lo < 2:
            return
        merged: list[Run] = [runs[lo]]
        for i in range(lo + 1, hi):
            run = runs[i]
            prev = merged[-1]
            if prev.last + 1 == run.first and prev.same_as(run):
                prev.last = run.last
            else:
                merged.append(run)
        if len(merged) != hi - lo:
            runs[lo:hi] = merged

    def drop_below(self, offset: int, *, keep_states: frozenset[RecordState]) -> int:
        """Remove runs wholly below ``offset`` unless their state is in ``keep_states``.

        Returns how many runs were removed.
        """
        runs = self._runs
        k = self.index_from(offset)
        if k == 0:
            return 0
        kept = [r for r in runs[:k] if r.state is not None and r.state in keep_states]
        removed = k - len(kept)
        if removed:
            runs[:k] = kept
        return removed
