"""A share partition (KIP-932): the in-flight records of one share group on one partition.

The broker core calls it; it calls three seams and nothing else: the data
partition (``PartitionData``: offsets and fetch), the ``Persister`` (durable
state, i.e. the share coordinator) and the ``Clock`` (acquisition locks).

Offsets (DESIGN and reference §3)::

    SPSO (start_offset)  first offset still in flight (not ACKNOWLEDGED/ARCHIVED)
    SPEO (end_offset)    one past the last offset ever taken into the cache
                         (exclusive, as in KIP-932's worked example; Kafka's
                         ``endOffset()`` is ``end_offset - 1`` while the cache
                         is non-empty)
    next_fetch_offset    first AVAILABLE (or never-fetched) offset, else SPEO

Every state change goes through ``txn.share_state.check_transition``.  An
acknowledgement is *prepared* (validated, turned into a plan), written with
one ``Persister.write_state`` call, and applied only if that call returns
NONE; otherwise nothing changes and the persister's error (mapped as Kafka
maps it) is returned.  Acquisitions are not persisted (as in Kafka); lock
expiry, session release and transaction completion are.

What a write carries, as Apache Kafka 4.4's share partition: ``start_offset`` = the
SPSO *before* the write (the SPSO moves once the write succeeded, so the persisted
start offset lags one write behind), the changed ranges at or above it
(``write_batches``, coalesced by (state, delivery count)), and the delivery complete
count (KIP-1226): the ACKNOWLEDGED/ARCHIVED records from that start offset on, the
write's changes included.  DescribeShareGroupOffsets reports that start offset, and
lag = end offset - start offset - delivery complete count.

Log start movement: Kafka's share partition says "LSO" for the *log start*
offset (retention, DeleteRecords).  When it passes the SPSO, AVAILABLE records
below it are archived, ACQUIRED ones wait for their lock, SPSO = log start and
SPEO = max(SPEO, SPSO); the new start is persisted with the next write.  The
*last stable* offset only bounds what a read_committed partition can fetch.
It is checked on every public operation and by ``on_log_appended``.

A fresh state (persisted start -1) takes ``auto_offset_reset`` (latest = the
high watermark, under read_committed too; earliest = the log start).  Kafka
persists nothing then (the start offset stays -1 until the first write); this
broker records the position as the state's reset offset, which Kafka's view does
not show, so a restart resumes there rather than at a later "latest".

Shape: one ``InFlightState`` (``partition_state``: record states, delivery counts, owners,
acquisition locks, pending transactional acks, SPSO/SPEO) and pure planners that read it and
return a plan (``acquisition``: acquire, release, lock expiry; ``acknowledgement``;
``txn_pending``: KIP-1289; ``partition_state``: load and log start).  ``SharePartition`` runs
them: it does the I/O (log reads, persister writes, timers, metric events) and applies each
plan to the state, which is the only way the state changes.

KIP-1289 (DESIGN §4.1, §4.2): ``plan_pending`` + ``apply_pending`` move ACQUIRED records to
TX_PENDING (lock cancelled; never acquired, released or expired);
``complete_pending`` applies (commit) or reverts (abort) them.  Pending acks
themselves are stored by the share coordinator as a transactional batch, so
``prepare_pending`` writes nothing here.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from coordinator.partition import AbortedTxn
from coordinator.share.acknowledgement import plan_acks
from coordinator.share.acquisition import FIRST_READ_BYTES, plan_acquire, plan_expiry, plan_release
from coordinator.share.inflight import AcquisitionLock, PendingAck
from coordinator.share.partition_model import (
    EVENT_ACKNOWLEDGED,
    EVENT_ACQUIRED,
    EVENT_ARCHIVED,
    EVENT_REDELIVERED,
    EVENT_REJECTED,
    EVENT_RELEASED,
    AckBatch,
    AcquiredRange,
    AcquireResult,
    AutoOffsetReset,
    Change,
    DeadLetterSink,
    EventSink,
    Isolation,
    PartitionData,
    SharePartitionConfig,
    SharePartitionState,
    log,
    map_persister_error,
    validate_ack_batches,
    write_batches,
)
from coordinator.share.partition_state import (
    InFlightState,
    StateLoadError,
    plan_load,
    plan_log_start,
)
from coordinator.share.persister import (
    Persister,
    PersisterStateBatch,
    ShareStateKey,
    StateWrite,
)
from coordinator.share.txn_pending import PendingPlan, plan_complete, plan_pending, plan_restore
from txn.batch import BatchFormatError, iter_batches
from txn.clock import Clock
from txn.errors import ErrorCode
from txn.ids import TopicPartition
from txn.share_state import AcknowledgeType, RecordState

__all__ = [
    "EVENT_ACKNOWLEDGED",
    "EVENT_ACQUIRED",
    "EVENT_ARCHIVED",
    "EVENT_REDELIVERED",
    "EVENT_REJECTED",
    "EVENT_RELEASED",
    "AckBatch",
    "AcquireResult",
    "AcquiredRange",
    "AutoOffsetReset",
    "EventSink",
    "Isolation",
    "PartitionData",
    "PendingPlan",
    "SharePartition",
    "SharePartitionConfig",
    "SharePartitionState",
    "map_persister_error",
    "validate_ack_batches",
]


class SharePartition:
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
        on_dead_letter: DeadLetterSink | None = None,
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
        self._on_dead_letter = on_dead_letter
        self._status = SharePartitionState.EMPTY
        self._inflight = InFlightState()

    # -- reading ---------------------------------------------------------------------------------

    @property
    def state(self) -> SharePartitionState:
        return self._status

    @property
    def inflight(self) -> InFlightState:
        """The in-flight state (read it; plans applied by this partition change it)."""
        return self._inflight

    @property
    def config(self) -> SharePartitionConfig:
        return self._config

    @property
    def state_epoch(self) -> int:
        return self._inflight.state_epoch

    @property
    def start_offset(self) -> int:
        """SPSO."""
        return self._inflight.start

    @property
    def end_offset(self) -> int:
        """SPEO, exclusive: one past the last offset taken into the cache."""
        return self._inflight.end

    @property
    def in_flight_count(self) -> int:
        """Records between SPSO and SPEO (what group.share.partition.max.record.locks bounds)."""
        return self._inflight.in_flight_count

    @property
    def next_fetch_offset(self) -> int:
        return self._inflight.next_fetch_offset

    def record_state(self, offset: int) -> tuple[RecordState, int, str] | None:
        """(state, delivery count, owner) of a cached offset; None if not in the cache."""
        return self._inflight.record_state(offset)

    def state_batches(self) -> list[PersisterStateBatch]:
        """The cache from SPSO on as state batches (in-memory ids: ACQUIRED 1, TX_PENDING 64)."""
        return self._inflight.state_batches()

    def pending_acks(self) -> list[tuple[int, int, PendingAck]]:
        """TX_PENDING ranges with their transaction and acknowledgement type."""
        return self._inflight.pending_acks()

    def update_config(self, config: SharePartitionConfig) -> None:
        """Take new settings; they apply to the next acquisition, release or expiry."""
        self._config = config

    # -- lifecycle -------------------------------------------------------------------------------

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
        except StateLoadError as exc:
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
        self._inflight.drop_locks()

    def _initialize(self) -> ErrorCode:
        result = self._persister.read_state(self.key, self._config.leader_epoch)
        if result.error is not ErrorCode.NONE:
            log.warning(
                "share partition %s: read_state failed with %s", self.key, result.error.name
            )
            return map_persister_error(result.error, initializing=True)
        fresh = result.start_offset < 0
        start = self._reset_offset() if fresh else result.start_offset
        loaded = plan_load(result.state_epoch, start, result.batches)
        if fresh:
            # Record the position auto.offset.reset chose, so a restart does not jump to a
            # later "latest" and skip what was produced in between.  The start offset stays -1
            # (unchanged) until the first acknowledgement is written, as in Kafka.
            write = StateWrite(
                result.state_epoch, self._config.leader_epoch, -1, [], reset_offset=start
            )
            error = self._persister.write_state(self.key, write)
            if error is not ErrorCode.NONE:
                return map_persister_error(error, initializing=True)
        self._inflight.apply_load(loaded)
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
        # "latest" is the high watermark under read_committed too (Apache Kafka 4.4 asks the
        # log for its latest offset, not the last stable one): records of a transaction still
        # open when the group starts lie below the start and are never delivered.
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
        return nxt < self.end_offset or self.in_flight_count < cfg.max_in_flight_records

    def _sync_log_start(self) -> None:
        """The log start offset moved past the SPSO (retention, DeleteRecords): SPSO = log start
        offset and SPEO = max(SPEO, SPSO).  The new start is persisted with the next write."""
        plan = plan_log_start(self._inflight, self._data.log_start_offset)
        if plan is not None:
            self._inflight.apply_log_start(plan)
            self._emit(EVENT_ARCHIVED, plan.archived)

    # -- acquisition -----------------------------------------------------------------------------

    def acquire(
        self,
        member_id: str,
        max_fetch_records: int,
        max_bytes: int,
        *,
        record_limit: bool = False,
        batch_size: int | None = None,
    ) -> AcquireResult:
        """Acquire records for ``member_id``: AVAILABLE ones first, then new ones from the log.

        Reads the log from ``next_fetch_offset`` (at most ``max_bytes``, at least one batch);
        ``plan_acquire`` says what is taken (``record_limit``: ShareFetch's record_limit acquire
        mode; ``batch_size``: its BatchSize).
        """
        if self._status is not SharePartitionState.ACTIVE:
            return AcquireResult(error=self._inactive_error())
        if max_fetch_records <= 0 or max_bytes <= 0:
            return AcquireResult()
        self._sync_log_start()
        cfg = self._config
        fetch_from = self.next_fetch_offset
        if fetch_from >= self.end_offset and self.in_flight_count >= cfg.max_in_flight_records:
            return AcquireResult()
        # Read no more log than the records wanted need: clients ask for tens of MB per fetch
        # but a few hundred records, and reading the rest only to drop it dominated the cost.
        chunk = min(max_bytes, FIRST_READ_BYTES)
        while True:
            data = self._data.fetch(fetch_from, chunk, read_committed=cfg.read_committed)
            if data.error is ErrorCode.OFFSET_OUT_OF_RANGE:
                return AcquireResult()  # nothing readable there (yet)
            if data.error is not ErrorCode.NONE:
                return AcquireResult(error=data.error)
            if not data.records:
                return AcquireResult()
            try:
                batches = iter_batches(data.records)
            except BatchFormatError as exc:
                log.error("share partition %s: unreadable log data: %s", self.key, exc)
                return AcquireResult(error=ErrorCode.CORRUPT_MESSAGE)
            next_offset = batches[-1][1].last_offset + 1
            readable = data.last_stable_offset if cfg.read_committed else data.high_watermark
            if (
                next_offset - fetch_from >= max_fetch_records
                or chunk >= max_bytes
                or next_offset >= readable
            ):
                break
            chunk = min(max_bytes, chunk * 4)
        aborted: tuple[AbortedTxn, ...] = ()
        if cfg.read_committed and batches:
            aborted = self._data.aborted_between(
                batches[0][1].base_offset, batches[-1][1].last_offset + 1
            )
        taken = plan_acquire(
            self._inflight,
            cfg,
            member_id=member_id,
            max_fetch_records=max_fetch_records,
            fetch_from=fetch_from,
            raw=data.records,
            batches=batches,
            aborted=aborted,
            now_ms=self._clock.now_ms(),
            record_limit=record_limit,
            batch_size=batch_size,
        )
        self._inflight.apply_acquire(taken.plan)
        lock = taken.plan.lock
        if lock is not None:
            self._start_timer(lock, cfg.record_lock_duration_ms)
        self._inflight.advance_start()
        self._emit(EVENT_ACQUIRED, taken.count)
        self._emit(EVENT_REDELIVERED, taken.redelivered)
        self._emit(EVENT_ARCHIVED, taken.archived)
        return AcquireResult(taken.records, taken.acquired, archived=taken.archived)

    def release_acquired_records(self, member_id: str) -> ErrorCode:
        """Share session closed or member left: its ACQUIRED records go back (``plan_release``).

        TX_PENDING records are not touched (DESIGN §4.1).
        """
        if self._status is not SharePartitionState.ACTIVE:
            return self._inactive_error()
        self._sync_log_start()
        return self._commit(plan_release(self._inflight, self._config, member_id), atomic=True)

    # -- acknowledgement -------------------------------------------------------------------------

    def acknowledge(self, member_id: str, batches: Sequence[AckBatch]) -> ErrorCode:
        """ShareAcknowledge / the acknowledgements of a ShareFetch, all or nothing."""
        error = validate_ack_batches(batches)
        if error is not ErrorCode.NONE:
            return error
        if self._status is not SharePartitionState.ACTIVE:
            return self._inactive_error()
        self._sync_log_start()
        planned = plan_acks(
            self._inflight, self._config, member_id, batches, txn=None, now_ms=self._clock.now_ms()
        )
        if isinstance(planned, ErrorCode):
            return planned
        plan, renew_lock = planned
        error = self._commit(plan, atomic=True)
        if error is ErrorCode.NONE and renew_lock is not None and renew_lock.held:
            self._inflight.hold_lock(renew_lock)
            self._start_timer(renew_lock, self._config.record_lock_duration_ms)
        return error

    # -- KIP-1289 --------------------------------------------------------------------------------

    def plan_pending(
        self,
        member_id: str | None,
        producer_id: int,
        producer_epoch: int,
        batches: Sequence[AckBatch],
    ) -> PendingPlan | ErrorCode:
        """Validate a TxnShareAcknowledge and plan it; nothing changes yet.

        With ``member_id`` every record must be ACQUIRED by that member; with None any ACQUIRED
        record may be acknowledged (DESIGN §4.2).  RENEW is not a transactional outcome:
        INVALID_REQUEST.  See ``txn_pending.plan_pending`` for what the plan carries.
        """
        error = validate_ack_batches(batches)
        if error is not ErrorCode.NONE:
            return error
        if any(t == AcknowledgeType.RENEW for b in batches for t in b.ack_types):
            return ErrorCode.INVALID_REQUEST
        if self._status is not SharePartitionState.ACTIVE:
            return self._inactive_error()
        self._sync_log_start()
        return plan_pending(
            self._inflight,
            self._config,
            member_id,
            producer_id,
            producer_epoch,
            batches,
            now_ms=self._clock.now_ms(),
        )

    def apply_pending(self, plan: PendingPlan) -> ErrorCode:
        """The planned records become TX_PENDING (after the share coordinator staged ``plan``).

        TX_PENDING is not terminal, so the SPSO cannot move: nothing is written here.
        """
        if self._status is not SharePartitionState.ACTIVE:
            return self._inactive_error()
        self._apply(list(plan.changes))
        return ErrorCode.NONE

    def prepare_pending(
        self,
        member_id: str | None,
        producer_id: int,
        producer_epoch: int,
        batches: Sequence[AckBatch],
    ) -> ErrorCode:
        """``plan_pending`` then ``apply_pending``, for callers that stage nothing themselves."""
        plan = self.plan_pending(member_id, producer_id, producer_epoch, batches)
        if isinstance(plan, ErrorCode):
            return plan
        return self.apply_pending(plan)

    def restore_pending(
        self, producer_id: int, producer_epoch: int, batches: Sequence[PersisterStateBatch]
    ) -> None:
        """After a restart: mark the records of a still-open transaction TX_PENDING again.

        ``batches`` are the target states the share coordinator staged (``PendingPlan.staged``).
        This replays durable state rather than making a live transition: the records become
        exclusive to the transaction again, as before the crash.
        """
        if self._status is not SharePartitionState.ACTIVE:
            return
        self._inflight.apply_restore(
            plan_restore(self._inflight, producer_id, producer_epoch, batches)
        )

    def complete_pending(
        self, producer_id: int, producer_epoch: int, commit: bool, *, persist: bool = True
    ) -> ErrorCode:
        """A transaction marker: apply (commit) or revert (abort) the producer's pending acks
        (``txn_pending.plan_complete``).  A marker with an older epoch than the pending acks'
        has no effect.  The outcome is final, so a failed write is logged, not returned.
        """
        if self._status is not SharePartitionState.ACTIVE:
            return self._inactive_error()
        self._sync_log_start()
        plan = plan_complete(self._inflight, self._config, producer_id, producer_epoch, commit)
        if not persist:
            self._apply(sorted(plan, key=lambda c: c.first))
            self._inflight.advance_start()
            return ErrorCode.NONE
        error = self._commit(plan, atomic=False)
        if error is not ErrorCode.NONE:
            log.warning("share partition %s: persisting a txn outcome failed: %s", self.key, error)
        return ErrorCode.NONE

    # -- plan, write, apply ----------------------------------------------------------------------

    def _commit(self, plan: list[Change], *, atomic: bool) -> ErrorCode:
        """Persist and apply ``plan``.

        atomic: write first and apply only on success (acknowledge, release).  Otherwise apply
        first and write after (lock expiry, transaction outcome), returning the write's error.
        """
        if not plan:
            return ErrorCode.NONE
        plan.sort(key=lambda c: c.first)
        inflight = self._inflight
        if all(c.renew for c in plan):
            self._apply(plan)  # RENEW changes no state and persists nothing
            return ErrorCode.NONE
        start = inflight.start  # what the write carries: the SPSO moves after it
        if not atomic:
            self._apply(plan)
            complete = inflight.terminal_count(None)
            inflight.advance_start()
            error = self._persist(plan, start, complete)
            self._drain_deferred()
            return error
        error = self._persist(plan, start, inflight.terminal_count(plan))
        if error is not ErrorCode.NONE:
            self._drain_deferred()
            return map_persister_error(error, initializing=False)
        self._apply(plan)
        inflight.advance_start()
        self._drain_deferred()
        return ErrorCode.NONE

    def _persist(self, plan: list[Change], start: int, complete: int) -> ErrorCode:
        """Write ``plan`` with the SPSO ``start`` and the delivery complete count ``complete``
        (nothing to write: no batches and the start offset already persisted)."""
        inflight = self._inflight
        batches = write_batches(plan, start)
        if not batches and start == inflight.persisted_start:
            return ErrorCode.NONE
        mark = inflight.begin_write(plan)
        try:
            error = self._persister.write_state(
                self.key,
                StateWrite(
                    inflight.state_epoch,
                    self._config.leader_epoch,
                    start,
                    batches,
                    delivery_complete_count=complete,
                ),
            )
        finally:
            inflight.end_write(mark)
        if error is ErrorCode.NONE:
            inflight.persisted(start)
        return error

    def _apply(self, plan: Sequence[Change]) -> None:
        for kind, count in self._inflight.apply(plan).items():
            self._emit(kind, count)
        if self._on_dead_letter is None:
            return
        for change in plan:
            if change.dead_letter is not None and change.state is RecordState.ARCHIVED:
                self._on_dead_letter(
                    change.first, change.last, change.delivery_count, change.dead_letter
                )

    def _emit(self, kind: str, count: int) -> None:
        if count <= 0 or self._on_event is None:
            return
        try:
            self._on_event(kind, count)
        except Exception:  # a metrics sink must never break the partition
            log.exception("share partition %s: metric callback failed", self.key)

    # -- acquisition locks -----------------------------------------------------------------------

    def _start_timer(self, lock: AcquisitionLock, delay_ms: int) -> None:
        lock.timer = self._clock.schedule(delay_ms, lambda: self._on_lock_expired(lock))

    def _on_lock_expired(self, lock: AcquisitionLock) -> None:
        lock.timer = None
        inflight = self._inflight
        if lock not in inflight.locks or self._status is not SharePartitionState.ACTIVE:
            return
        if inflight.write_depth:
            inflight.defer_expiry(lock)  # records may be mid-transition; decide after the write
            return
        self._expire(lock)

    def _expire(self, lock: AcquisitionLock) -> None:
        self._inflight.forget_lock(lock)
        plan = plan_expiry(self._inflight, self._config, lock)
        error = self._commit(plan, atomic=False)
        if error is not ErrorCode.NONE:
            log.warning("share partition %s: persisting a lock timeout failed: %s", self.key, error)

    def _drain_deferred(self) -> None:
        while (lock := self._inflight.next_deferred()) is not None:
            if self._status is SharePartitionState.ACTIVE:
                self._expire(lock)
