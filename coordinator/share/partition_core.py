"""The share partition's state and the one path every change takes: plan, write, apply.

``SharePartitionCore`` holds the in-flight runs, SPSO/SPEO, locks and lifecycle; it turns
planned changes into one persister write and applies them after it (``_commit``), follows
the data partition's log start, and knows the transition rules shared by every job
(``_ack_change``, ``_back_to_available``, lock expiry).  The jobs themselves live in
``acquisition``, ``acknowledgement`` and ``txn_pending``."""

from __future__ import annotations

import uuid

from coordinator.share.inflight import (
    AcquisitionLock,
    InFlightRuns,
    PendingAck,
    Run,
)
from coordinator.share.partition_model import (
    _HELD,
    _PERSISTED_STATE_IDS,
    EVENT_ACKNOWLEDGED,
    EVENT_ARCHIVED,
    EVENT_REJECTED,
    EVENT_RELEASED,
    EventSink,
    PartitionData,
    SharePartitionConfig,
    SharePartitionState,
    _append_batch,
    _Change,
    _InitError,
    _write_batches,
    log,
    map_persister_error,
)
from coordinator.share.persister import (
    Persister,
    PersisterStateBatch,
    ShareStateKey,
    StateWrite,
)
from coordinator.share.state_combiner import subtract_ranges
from txn.clock import Clock
from txn.errors import ErrorCode
from txn.ids import TopicPartition
from txn.share_state import AcknowledgeType, RecordState, check_transition


class SharePartitionCore:
    """In-flight records, acquisition locks and SPSO/SPEO of one share partition."""

    def __init__(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        tp: TopicPartition,
        data: PartitionData,
        persister: Persister,
        clock: Clock,
        config: SharePartitionConfig | None = None,
        *,
        on_event: EventSink | None = None,
    ) -> None:
        self.group_id = group_id
        self.topic_id = topic_id
        self.tp = tp
        self.key = ShareStateKey(group_id, topic_id, tp.partition)
        self._data = data
        self._persister = persister
        self._clock = clock
        self._config = config or SharePartitionConfig()
        self._on_event = on_event
        self._status = SharePartitionState.EMPTY
        self._runs = InFlightRuns()
        self._start = 0
        self._end = 0
        self._persisted_start = -1
        self._state_epoch = 0
        self._find_next = False  # True when AVAILABLE or gap runs may exist (Kafka's flag)
        self._locks: set[AcquisitionLock] = set()
        self._transitioning: list[tuple[int, int]] = []  # ranges being written right now
        self._write_depth = 0
        self._deferred: list[AcquisitionLock] = []  # locks that expired during a write

    @property
    def state(self) -> SharePartitionState:
        return self._status

    @property
    def config(self) -> SharePartitionConfig:
        return self._config

    @property
    def state_epoch(self) -> int:
        return self._state_epoch

    @property
    def start_offset(self) -> int:
        """SPSO."""
        return self._start

    @property
    def end_offset(self) -> int:
        """SPEO, exclusive: one past the last offset taken into the cache."""
        return self._end

    @property
    def in_flight_count(self) -> int:
        """Records between SPSO and SPEO (what group.share.partition.max.record.locks bounds)."""
        return self._end - self._start

    @property
    def next_fetch_offset(self) -> int:
        if not self._find_next:
            return self._end
        for run in self._runs.iter_from(self._start):
            if run.pending is None and (run.state is None or run.state is RecordState.AVAILABLE):
                return max(run.first, self._start)
        self._find_next = False
        return self._end

    def record_state(self, offset: int) -> tuple[RecordState, int, str] | None:
        """(state, delivery count, owner) of a cached offset; None if not in the cache."""
        run = self._runs.find(offset)
        if run is None or run.state is None:
            return None
        return run.state, run.delivery_count, run.member_id

    def state_batches(self) -> list[PersisterStateBatch]:
        """The cache from SPSO on as state batches (in-memory ids: ACQUIRED 1, TX_PENDING 64)."""
        out: list[PersisterStateBatch] = []
        for run in self._runs.iter_from(self._start):
            if run.state is None:
                continue
            first = max(run.first, self._start)
            _append_batch(out, first, run.last, int(run.state), run.delivery_count)
        return out

    def pending_acks(self) -> list[tuple[int, int, PendingAck]]:
        """TX_PENDING ranges with their transaction and acknowledgement type."""
        return [(r.first, r.last, r.pending) for r in self._runs if r.pending is not None]

    def update_config(self, config: SharePartitionConfig) -> None:
        """Take new settings; they apply to the next acquisition, release or expiry."""
        self._config = config

    def maybe_initialize(self) -> ErrorCode:
        """EMPTY -> INITIALIZING -> ACTIVE | FAILED by reading the persisted state."""
        status = self._status
        if status is SharePartitionState.ACTIVE:
            return ErrorCode.NONE
        if status is SharePartitionState.FAILED:
            # As Kafka: a failed partition is not re-initialized; its owner discards it and
            # creates a new one.
            return ErrorCode.UNKNOWN_SERVER_ERROR
        if status is not SharePartitionState.EMPTY:
            return ErrorCode.LEADER_NOT_AVAILABLE
        self._status = SharePartitionState.INITIALIZING
        try:
            error = self._initialize()
        except _InitError as exc:
            log.error("share partition %s cannot load its state: %s", self.key, exc)
            error = ErrorCode.UNKNOWN_SERVER_ERROR
        if self._status is SharePartitionState.INITIALIZING:
            self._status = (
                SharePartitionState.ACTIVE
                if error is ErrorCode.NONE
                else SharePartitionState.FAILED
            )
        return error

    def mark_fenced(self) -> None:
        """Leadership or state epoch lost: stop serving and drop every lock timer."""
        self._status = SharePartitionState.FENCED
        for lock in self._locks:
            lock.cancel()
        self._locks.clear()
        self._deferred.clear()

    def _initialize(self) -> ErrorCode:
        result = self._persister.read_state(self.key, self._config.leader_epoch)
        if result.error is not ErrorCode.NONE:
            log.warning(
                "share partition %s: read_state failed with %s", self.key, result.error.name
            )
            return map_persister_error(result.error, initializing=True)
        fresh = result.start_offset < 0
        start = self._reset_offset() if fresh else result.start_offset
        runs = InFlightRuns()
        cursor = start
        for batch in sorted(result.batches, key=lambda b: b.first_offset):
            if batch.first_offset < cursor or batch.last_offset < batch.first_offset:
                msg = f"state batch {batch} is below start {start} or overlaps another"
                raise _InitError(msg)
            state = _PERSISTED_STATE_IDS.get(batch.delivery_state)
            if state is None or batch.delivery_count < 0:
                raise _InitError(f"state batch {batch} has an invalid state or delivery count")
            if batch.first_offset > cursor:
                runs.append(Run(cursor, batch.first_offset - 1, None))
            runs.append(Run(batch.first_offset, batch.last_offset, state, batch.delivery_count))
            cursor = batch.last_offset + 1
        if fresh:
            # Pin the position auto.offset.reset chose, so a restart does not jump to a later
            # "latest" and skip what was produced in between.
            error = self._persister.write_state(
                self.key, StateWrite(result.state_epoch, self._config.leader_epoch, start, [])
            )
            if error is not ErrorCode.NONE:
                return map_persister_error(error, initializing=True)
        self._state_epoch = result.state_epoch
        self._runs = runs
        self._start = start
        self._end = cursor
        self._persisted_start = start
        self._find_next = bool(runs)
        self._advance_start()
        self._sync_log_start()
        return ErrorCode.NONE

    def _reset_offset(self) -> int:
        duration = self._config.reset_duration_ms
        if duration is not None:
            offset, _ = self._data.offset_for_timestamp(self._clock.now_ms() - duration)
            if offset >= 0:
                return offset
        if self._config.auto_offset_reset == "earliest":
            return self._data.log_start_offset
        if self._config.read_committed:
            return self._data.last_stable_offset
        return self._data.high_watermark

    def _inactive_error(self) -> ErrorCode:
        status = self._status
        if status is SharePartitionState.FAILED:
            return ErrorCode.UNKNOWN_SERVER_ERROR
        if status is SharePartitionState.FENCED:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode.LEADER_NOT_AVAILABLE

    def on_log_appended(self) -> bool:
        """The data partition changed: follow its log start offset; True if records are ready."""
        if self._status is not SharePartitionState.ACTIVE:
            return False
        self._sync_log_start()
        cfg = self._config
        upper = self._data.last_stable_offset if cfg.read_committed else self._data.high_watermark
        nxt = self.next_fetch_offset
        if nxt >= upper:
            return False
        return nxt < self._end or self.in_flight_count < cfg.max_in_flight_records

    def _sync_log_start(self) -> None:
        """The log start offset moved past the SPSO (retention, DeleteRecords).

        AVAILABLE records below it are archived; ACQUIRED (and TX_PENDING) ones keep their
        owner until their lock expires or they are released; SPSO = log start offset and
        SPEO = max(SPEO, SPSO).  The new start is persisted with the next write (lazily).
        """
        log_start = self._data.log_start_offset
        if log_start <= self._start:
            return
        archived = 0
        for run in self._runs.overlapping(self._start, log_start - 1):
            if run.state is RecordState.AVAILABLE and run.pending is None:
                a = max(run.first, self._start)
                z = min(run.last, log_start - 1)
                self._archive_range(a, z)
                archived += z - a + 1
        self._runs.split_at(log_start)  # so what lies below it can be evicted
        self._start = log_start
        self._end = max(self._end, log_start)
        self._find_next = True
        self._advance_start()
        self._emit(EVENT_ARCHIVED, archived)

    def _commit(self, plan: list[_Change], *, atomic: bool) -> ErrorCode:
        """Persist and apply ``plan``.

        atomic: write first and apply only on success (acknowledge, release).  Otherwise apply
        first and write after (lock expiry, transaction outcome), returning the write's error.
        """
        if not plan:
            return ErrorCode.NONE
        plan.sort(key=lambda c: c.first)
        if all(c.renew for c in plan):
            self._apply(plan)  # RENEW changes no state and persists nothing
            return ErrorCode.NONE
        if not atomic:
            self._apply(plan)
            self._advance_start()
            error = self._persist(plan, self._start)
            self._drain_deferred()
            return error
        new_start = self._terminal_prefix_end(plan)
        error = self._persist(plan, new_start)
        if error is not ErrorCode.NONE:
            self._drain_deferred()
            return map_persister_error(error, initializing=False)
        self._apply(plan)
        self._advance_start()
        self._drain_deferred()
        return ErrorCode.NONE

    def _persist(self, plan: list[_Change], new_start: int) -> ErrorCode:
        batches = _write_batches(plan, new_start)
        start_field = new_start if new_start != self._persisted_start else -1
        if not batches and start_field < 0:
            return ErrorCode.NONE
        mark = len(self._transitioning)
        self._transitioning.extend((c.first, c.last) for c in plan)
        self._write_depth += 1
        try:
            error = self._persister.write_state(
                self.key,
                StateWrite(self._state_epoch, self._config.leader_epoch, start_field, batches),
            )
        finally:
            self._write_depth -= 1
            del self._transitioning[mark:]
        if error is ErrorCode.NONE and start_field >= 0:
            self._persisted_start = start_field
        return error

    def _in_transition(self, first: int, last: int) -> bool:
        return any(a <= last and first <= z for a, z in self._transitioning)

    def _outside_transitions(self, first: int, last: int) -> list[tuple[int, int]]:
        """The parts of first..last not being written right now."""
        return subtract_ranges(first, last, self._transitioning)

    def _apply(self, plan: list[_Change]) -> None:
        events: dict[str, int] = {}
        for change in plan:
            for run in self._runs.isolate(change.first, change.last):
                old = run.lock
                if change.renew:
                    new = change.lock
                    assert new is not None
                    if old is not None and old is not new and old.release(run.count):
                        self._locks.discard(old)
                    new.held += run.count
                    run.lock = new
                    continue
                state = run.state
                assert state is not None, "a planned change never targets a gap"
                check_transition(state, change.state)
                if old is not None and old.release(run.count):
                    self._locks.discard(old)
                run.state = change.state
                run.delivery_count = change.delivery_count
                run.member_id = change.member_id
                run.lock = None
                run.pending = change.pending
            if change.state is RecordState.AVAILABLE:
                self._find_next = True
            self._runs.coalesce(change.first, change.last)
            if change.event is not None:
                events[change.event] = events.get(change.event, 0) + change.count
        for kind, count in events.items():
            self._emit(kind, count)

    def _terminal_prefix_end(self, overlay: list[_Change] | None) -> int:
        """Where the SPSO lands: past the contiguous ACKNOWLEDGED/ARCHIVED records.

        ``overlay`` (sorted, disjoint) is a plan not applied yet: its states win where it lies.
        """
        p = self._start
        end = self._end
        runs = self._runs
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

    def _advance_start(self) -> None:
        """Move the SPSO past terminal records and evict what lies wholly below it."""
        self._start = self._terminal_prefix_end(None)
        self._end = max(self._end, self._start)
        self._runs.drop_below(self._start, keep_states=_HELD)

    def _emit(self, kind: str, count: int) -> None:
        if count <= 0 or self._on_event is None:
            return
        try:
            self._on_event(kind, count)
        except Exception:  # a metrics sink must never break the partition
            log.exception("share partition %s: metric callback failed", self.key)

    def _archive_range(self, first: int, last: int) -> None:
        """Archive AVAILABLE or never-fetched offsets (control batches, aborted records)."""
        for run in self._runs.isolate(first, last):
            if run.state is not None:
                check_transition(run.state, RecordState.ARCHIVED)
            run.state = RecordState.ARCHIVED
            run.member_id = ""

    def _schedule(self, lock: AcquisitionLock, delay_ms: int) -> None:
        self._locks.add(lock)
        lock.timer = self._clock.schedule(delay_ms, lambda: self._on_lock_expired(lock))

    def _on_lock_expired(self, lock: AcquisitionLock) -> None:
        lock.timer = None
        if lock not in self._locks or self._status is not SharePartitionState.ACTIVE:
            return
        if self._write_depth:
            self._deferred.append(lock)  # records may be mid-transition; decide after the write
            return
        self._expire(lock)

    def _expire(self, lock: AcquisitionLock) -> None:
        self._locks.discard(lock)
        plan: list[_Change] = []
        for run in self._runs.overlapping(lock.first_offset, lock.last_offset):
            if run.lock is not lock or run.state is not RecordState.ACQUIRED:
                continue
            first = run.first
            if first < self._start:
                below = min(run.last, self._start - 1)
                plan.append(
                    _Change(
                        first, below, RecordState.ARCHIVED, run.delivery_count, event=EVENT_ARCHIVED
                    )
                )
                first = below + 1
            if first <= run.last:
                plan.append(self._back_to_available(first, run.last, run.delivery_count))
        error = self._commit(plan, atomic=False)
        if error is not ErrorCode.NONE:
            log.warning("share partition %s: persisting a lock timeout failed: %s", self.key, error)

    def _drain_deferred(self) -> None:
        while self._deferred and not self._write_depth:
            lock = self._deferred.pop(0)
            if lock in self._locks and self._status is SharePartitionState.ACTIVE:
                self._expire(lock)

    def _ack_change(
        self,
        run: Run,
        first: int,
        last: int,
        ack: AcknowledgeType,
        *,
        txn: tuple[int, int] | None,
        renew_lock: AcquisitionLock | None,
    ) -> _Change:
        dc = run.delivery_count
        if txn is not None:
            pending = PendingAck(txn[0], txn[1], ack)
            return _Change(first, last, RecordState.TX_PENDING, dc, run.member_id, pending)
        if ack is AcknowledgeType.RENEW:
            return _Change(
                first, last, RecordState.ACQUIRED, dc, run.member_id, lock=renew_lock, renew=True
            )
        if ack is AcknowledgeType.ACCEPT:
            return _Change(first, last, RecordState.ACKNOWLEDGED, dc, event=EVENT_ACKNOWLEDGED)
        if ack is AcknowledgeType.REJECT:
            return _Change(first, last, RecordState.ARCHIVED, dc, event=EVENT_REJECTED)
        if ack is AcknowledgeType.GAP:
            return _Change(first, last, RecordState.ARCHIVED, dc, event=EVENT_ARCHIVED)
        return self._back_to_available(first, last, dc)

    def _back_to_available(self, first: int, last: int, dc: int) -> _Change:
        """RELEASE, lock timeout or transaction abort: AVAILABLE, or ARCHIVED at the limit."""
        if dc >= self._config.delivery_count_limit:
            return _Change(first, last, RecordState.ARCHIVED, dc, event=EVENT_ARCHIVED)
        return _Change(first, last, RecordState.AVAILABLE, dc, event=EVENT_RELEASED)
