"""Acquisition planners: which records a ShareFetch takes, and what a closed session returns.

Pure functions of the in-flight state; ``SharePartition`` reads the log, applies the plan and
starts the lock timer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from coordinator.partition import AbortedTxn
from coordinator.share.inflight import AcquisitionLock, Run
from coordinator.share.partition_model import (
    AcquiredRange,
    Change,
    SharePartitionConfig,
    below_start_or_back,
)
from coordinator.share.partition_state import AcquirePlan, AcquireStep, InFlightState
from txn.batch import BatchHeader
from txn.share_state import RecordState

# The first log read of an acquisition; grown fourfold while it covers too few records.
FIRST_READ_BYTES: Final = 256 * 1024


@dataclass(frozen=True, slots=True)
class Acquisition:
    """An acquisition planned: the plan for the state and what the ShareFetch answers."""

    plan: AcquirePlan
    records: bytes  # whole RecordBatch v2 batches covering the acquired offsets
    acquired: list[AcquiredRange]
    count: int
    redelivered: int  # acquired with a delivery count above 1
    archived: int  # aborted records archived on the way (read_committed)


def plan_acquire(
    state: InFlightState,
    config: SharePartitionConfig,
    *,
    member_id: str,
    max_fetch_records: int,
    fetch_from: int,
    raw: bytes,
    batches: list[tuple[int, BatchHeader]],
    aborted: tuple[AbortedTxn, ...],
    now_ms: int,
    record_limit: bool = False,
    batch_size: int | None = None,
) -> Acquisition:
    """Acquire from the log batches read at ``fetch_from`` (``raw``, parsed as ``batches``).

    As Kafka 4.4's ``SharePartition.acquire``: at most ``max_fetch_records`` records, and no
    more new ones than ``max_in_flight_records`` leaves room for (at that limit, only records
    already in flight).  Cached records are taken in-flight batch by in-flight batch, checking
    the limit before each batch (a batch is taken whole); new records log batch by log batch
    (rounded up to the end of the log batch being taken).  In ``record_limit`` mode (KIP-1206)
    exactly the limit is taken: a log batch is split, its records not taken stay in flight as
    AVAILABLE, never delivered.  Otherwise new records longer than ``batch_size`` (None: no
    limit) form several in-flight batches, cut at log batches.  The acquired ranges never
    span two in-flight batches.  Control batches are acquired as data is (the client
    acknowledges their offsets as GAP); aborted transactional records (``aborted``,
    read_committed) are archived, never acquired, but count towards the limit.
    Redeliveries are throttled as Kafka 4.4 throttles them (``_ThrottleWalk``, KAFKA-17541).
    """
    start = state.start
    end = state.end
    steps: list[AcquireStep] = []
    acquired: list[AcquiredRange] = []
    keys: list[tuple[int, int] | None] = []  # the in-flight batch of each acquired range
    fresh: list[tuple[_FreshKind, int, int]] = []  # new records, planned once all are known
    fresh_bases: list[int] = []  # the base offsets of the log batches they come from
    spans: list[tuple[int, int]] = []
    count = 0
    redelivered = 0
    archived = 0
    touched_first = -1
    touched_last = -1
    new_first = -1
    new_last = -1
    limit = config.delivery_count_limit
    walk = _ThrottleWalk(
        state,
        limit,
        throttle_limit(limit),
        batches[0][1].base_offset if batches else fetch_from,
        batches[-1][1].last_offset if batches else fetch_from,
    )
    last_read = batches[-1][1].last_offset if batches else fetch_from - 1
    wanted = min(max_fetch_records, config.max_in_flight_records - (end - start))
    if wanted <= 0 and fetch_from < end:
        wanted = min(max_fetch_records, end - fetch_from)  # the in-flight records only
        last_read = min(last_read, end - 1)
    taken = 0  # records taken, aborted ones included (Kafka counts them before archiving)
    current: tuple[int, int] | None = None  # the in-flight batch being walked
    stop = False
    for pos, header in batches:
        if stop or walk.stop:
            break
        lo = max(header.base_offset, fetch_from, start)
        hi = min(header.last_offset, last_read)
        if lo > hi:
            continue
        # Control batches are acquired as data (the client acknowledges their offsets as
        # GAP); only aborted data batches are left out (read_committed), as Kafka 4.4.
        skip = (
            bool(aborted)
            and header.is_transactional
            and not header.is_control
            and _is_aborted(header, aborted)
        )
        got = 0
        if touched_first < 0:
            touched_first = lo
        touched_last = hi
        if lo < end:
            seg_hi = min(hi, end - 1)
            for run in state.runs.overlapping(lo, seg_hi):
                key = run.batch if run.batch is not None else (run.first, run.last)
                if key != current:
                    if taken >= wanted:
                        stop = True
                        break
                    current = key
                if walk.enter(run, taken):
                    break
                if run.pending is not None or run.state not in (None, RecordState.AVAILABLE):
                    continue
                a = max(run.first, lo)
                z = min(run.last, seg_hi)
                if record_limit:
                    z = min(z, a + wanted - taken - 1)
                if skip:
                    archived += z - a + 1
                    taken += z - a + 1
                    steps.append(AcquireStep("archive", a, z, 0))
                else:
                    prior = 0 if run.state is None else run.delivery_count
                    z = walk.last_to_take(prior, a, z)
                    if z < a:
                        break
                    if run.state is None:
                        new_first = a if new_first < 0 else new_first
                        new_last = z
                    dc = prior + 1
                    steps.append(AcquireStep("lock", a, z, dc))
                    _append_range(acquired, keys, a, z, dc, None if run.state is None else key)
                    got += z - a + 1
                    taken += z - a + 1
                    if dc > 1:
                        redelivered += z - a + 1
                    if walk.took(dc, z - a + 1):
                        break
                if record_limit and taken >= wanted:
                    stop = True
                    break
            lo = seg_hi + 1
        if lo <= hi and not stop and not walk.stop and not walk.leaving_throttled():
            # Beyond the cache: new records, while fewer than wanted are taken.
            room = wanted - taken
            if room <= 0:
                touched_last = lo - 1
                stop = True
            else:
                new_first = lo if new_first < 0 else new_first
                new_last = hi
                end = hi + 1
                last = min(hi, lo + room - 1) if record_limit else hi
                fresh_bases.append(header.base_offset)
                fresh.append(("archived" if skip else "acquired", lo, last))
                taken += last - lo + 1
                if skip:
                    archived += last - lo + 1
                else:
                    got += last - lo + 1
                if last < hi:
                    fresh.append(("available", last + 1, hi))
                    stop = True
        if got:
            spans.append((pos, pos + header.size))
            count += got
    if fresh:
        _plan_fresh(fresh, fresh_bases, None if record_limit else batch_size, steps, acquired, keys)
    lock = None
    if acquired:
        lock = AcquisitionLock(
            member_id,
            acquired[0].first_offset,
            acquired[-1].last_offset,
            now_ms + config.record_lock_duration_ms,
        )
    new_batch = (new_first, new_last) if new_first >= 0 else None
    plan = AcquirePlan(tuple(steps), lock, (touched_first, touched_last), new_batch)
    return Acquisition(plan, _join_spans(raw, spans), acquired, count, redelivered, archived)


_FreshKind = Literal["acquired", "archived", "available"]
_FRESH_STEP: Final[dict[str, Literal["new_acquired", "new_archived", "new_available"]]] = {
    "acquired": "new_acquired",
    "archived": "new_archived",
    "available": "new_available",
}


def _plan_fresh(
    fresh: list[tuple[_FreshKind, int, int]],
    bases: list[int],
    batch_size: int | None,
    steps: list[AcquireStep],
    acquired: list[AcquiredRange],
    keys: list[tuple[int, int] | None],
) -> None:
    """The steps and acquired ranges of the new records: one in-flight batch, or (more than
    ``batch_size`` records, ShareFetch's BatchSize) several, cut at the first log batch that
    starts ``batch_size`` or more records after the current one's start, as Kafka 4.4 (so a
    BatchSize of 0 or less cuts at every log batch; Kafka also answers an empty range then)."""
    first, last = fresh[0][1], fresh[-1][2]
    cuts = [first]
    if batch_size is not None and batch_size < last - first + 1:
        for base in bases:
            if base > cuts[-1] and base - cuts[-1] >= batch_size:
                cuts.append(base)
    pieces = [(c, cuts[i + 1] - 1 if i + 1 < len(cuts) else last) for i, c in enumerate(cuts)]
    for kind, a, z in fresh:
        for piece in pieces:
            lo, hi = max(a, piece[0]), min(z, piece[1])
            if lo > hi:
                continue
            batch = piece if len(pieces) > 1 else None  # None: the acquisition's batch
            steps.append(AcquireStep(_FRESH_STEP[kind], lo, hi, int(kind == "acquired"), batch))
            if kind == "acquired":
                _append_range(acquired, keys, lo, hi, 1, batch)


def throttle_limit(delivery_count_limit: int) -> int:
    """The delivery count from which redeliveries are throttled (KAFKA-17541): half the
    delivery count limit rounded up, at least 2."""
    return max(2, (delivery_count_limit + 1) // 2)


class _ThrottleWalk:
    """Kafka 4.4's throttled redelivery (KAFKA-17541), walked in-flight batch by batch.

    An in-flight batch holding an AVAILABLE record whose delivery count reached the throttle
    limit is *throttled*: it is taken only when nothing was acquired before it, the ShareFetch
    stops after it, and it yields at most its size halved once per delivery past the limit
    (``size >> (count - throttle + 1)``, at least 1; counted from its first such record).  With
    a limit above 2, a record on its last attempt comes alone.  A batch still kept whole (one
    run) is judged by its delivery count whatever its state, as Kafka judges an unsplit batch.
    """

    __slots__ = ("_state", "_throttle", "cap", "current", "first", "last", "limit", "local", "stop")

    def __init__(self, state: InFlightState, limit: int, throttle: int, first: int, last: int):
        self._state = state
        self.limit = limit
        self.first = first  # the offsets this ShareFetch read
        self.last = last
        self.current: tuple[int, int] | None = None
        self.cap = 0  # >0: the batch is throttled, at most this many records; 0: not throttled
        self.local = 0
        self.stop = False
        self._throttle = throttle

    def leaving_throttled(self) -> bool:
        """Whether records taken from a throttled batch end this ShareFetch here."""
        if self.cap and self.local:
            self.stop = True
        return self.stop

    def enter(self, run: Run, acquired: int) -> bool:
        """``run`` comes next; True when the ShareFetch stops before it."""
        key = run.batch if run.batch is not None else (run.first, run.last)
        if key == self.current:
            return False
        if self.leaving_throttled():
            return True
        self.current = key
        self.local = 0
        self.cap = -1 if self._throttled(key) else 0
        if self.cap and acquired:
            self.stop = True
        return self.stop

    def last_to_take(self, prior: int, first: int, last: int) -> int:
        """The last offset of first..last (records delivered ``prior`` times) to take now."""
        if not self.cap:
            return last
        if self.limit > 2 and prior == self.limit - 1:
            if self.local:
                self.stop = True
                return first - 1
            return first
        if self.cap < 0 and prior >= self._throttle:
            size = self.current[1] - self.current[0] + 1 if self.current else 1
            self.cap = max(1, size >> (prior - self._throttle + 1))
        if self.cap > 0:
            last = min(last, first + self.cap - self.local - 1)
        return last

    def took(self, delivery_count: int, n: int) -> bool:
        """``n`` records were taken at ``delivery_count``; True when the ShareFetch stops."""
        self.local += n
        if self.cap and (
            (self.limit > 2 and delivery_count == self.limit) or self.local == self.cap
        ):
            self.stop = True
        return self.stop

    def _throttled(self, key: tuple[int, int]) -> bool:
        runs = [
            r
            for r in self._state.runs.overlapping(max(key[0], self._state.start), key[1])
            if (r.batch if r.batch is not None else (r.first, r.last)) == key
        ]
        if len(runs) == 1:
            return runs[0].delivery_count >= self._throttle
        return any(
            r.state is RecordState.AVAILABLE
            and r.pending is None
            and r.first <= self.last
            and r.last >= self.first
            and r.delivery_count >= self._throttle
            for r in runs
        )


def plan_release(
    state: InFlightState, config: SharePartitionConfig, member_id: str
) -> list[Change]:
    """Share session closed or member left: its ACQUIRED records go back, their delivery count
    unchanged (Apache Kafka 4.4 counts the lost acquisition as a delivery); archived below the
    SPSO or at the delivery limit.  Records a write is carrying are left to that write."""
    plan: list[Change] = []
    for run in state.runs:
        if run.state is not RecordState.ACQUIRED or run.member_id != member_id:
            continue
        for first, last in state.outside_transitions(run.first, run.last):
            plan += below_start_or_back(first, last, run.delivery_count, state.start, config)
    return plan


def plan_expiry(
    state: InFlightState, config: SharePartitionConfig, lock: AcquisitionLock
) -> list[Change]:
    """A lock timed out: the records it still holds go back (archived below the SPSO or at the
    delivery limit)."""
    plan: list[Change] = []
    for run in state.runs.overlapping(lock.first_offset, lock.last_offset):
        if run.lock is not lock or run.state is not RecordState.ACQUIRED:
            continue
        plan += below_start_or_back(run.first, run.last, run.delivery_count, state.start, config)
    return plan


def _is_aborted(header: BatchHeader, aborted: tuple[AbortedTxn, ...]) -> bool:
    pid = header.producer_id
    base = header.base_offset
    return any(a.producer_id == pid and a.first_offset <= base <= a.last_offset for a in aborted)


def _append_range(
    out: list[AcquiredRange],
    keys: list[tuple[int, int] | None],
    first: int,
    last: int,
    dc: int,
    key: tuple[int, int] | None,
) -> None:
    """Add an acquired range, joined to the last one if adjacent, with the same delivery count
    and in the same in-flight batch ``key`` (None: this acquisition's new records), as Kafka."""
    if (
        out
        and out[-1].last_offset + 1 == first
        and out[-1].delivery_count == dc
        and keys[-1] == key
    ):
        out[-1] = AcquiredRange(out[-1].first_offset, last, dc)
    else:
        out.append(AcquiredRange(first, last, dc))
        keys.append(key)


def _join_spans(raw: bytes, spans: list[tuple[int, int]]) -> bytes:
    if not spans:
        return b""
    parts: list[bytes] = []
    start, stop = spans[0]
    for s, e in spans[1:]:
        if s == stop:
            stop = e
        else:
            parts.append(raw[start:stop])
            start, stop = s, e
    parts.append(raw[start:stop])
    return b"".join(parts)
