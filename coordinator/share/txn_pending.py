"""KIP-1289 (DESIGN §4.1, §4.2): transactional acknowledgements of a share partition.

``plan_pending`` validates a TxnShareAcknowledge and returns an immutable ``PendingPlan``; the
manager stages the plan's target states in the transaction (share coordinator) and then
``apply_pending`` moves the records ACQUIRED -> TX_PENDING (lock cancelled; never acquired,
released or expired).  ``complete_pending`` applies (commit) or reverts (abort) them when the
marker arrives; ``restore_pending`` rebuilds TX_PENDING after a restart."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from coordinator.share.acknowledgement import Acknowledgement
from coordinator.share.inflight import (
    PendingAck,
    Run,
)
from coordinator.share.partition_model import (
    _ACK_OF_TARGET,
    EVENT_ARCHIVED,
    AckBatch,
    SharePartitionState,
    _Change,
    log,
    validate_ack_batches,
)
from coordinator.share.persister import PersisterStateBatch
from txn.errors import ErrorCode
from txn.share_state import AcknowledgeType, RecordState


@dataclass(frozen=True, slots=True)
class PendingPlan:
    """A validated TxnShareAcknowledge of one share partition, not applied yet."""

    producer_id: int
    producer_epoch: int
    staged: tuple[PersisterStateBatch, ...]  # what the share coordinator stages
    changes: tuple[_Change, ...]  # ACQUIRED -> TX_PENDING, sorted by offset


class TransactionalAcks(Acknowledgement):
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
        INVALID_REQUEST.  The plan carries what the share coordinator stages in the transaction
        (ACCEPT -> ACKNOWLEDGED, REJECT/GAP -> ARCHIVED, RELEASE -> AVAILABLE, with the records'
        delivery counts) and the TX_PENDING changes ``apply_pending`` makes once it is staged.
        """
        error = validate_ack_batches(batches)
        if error is not ErrorCode.NONE:
            return error
        if any(t == AcknowledgeType.RENEW for b in batches for t in b.ack_types):
            return ErrorCode.INVALID_REQUEST
        if self._status is not SharePartitionState.ACTIVE:
            return self._inactive_error()
        self._sync_log_start()
        planned = self._plan_acks(member_id, batches, txn=(producer_id, producer_epoch))
        if isinstance(planned, ErrorCode):
            return planned
        changes = sorted(planned[0], key=lambda c: c.first)
        staged: list[PersisterStateBatch] = []
        for change in changes:
            assert change.pending is not None
            target = self._ack_change(
                Run(change.first, change.last, RecordState.ACQUIRED, change.delivery_count),
                change.first,
                change.last,
                change.pending.ack_type,
                txn=None,
                renew_lock=None,
            )
            staged.append(
                PersisterStateBatch(
                    change.first, change.last, int(target.state), target.delivery_count
                )
            )
        return PendingPlan(producer_id, producer_epoch, tuple(staged), tuple(changes))

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

        ``batches`` are the target states the share coordinator staged (see ``pending_plan``).
        This replays durable state rather than making a live transition, so it sets the state
        directly: the records become exclusive to the transaction again, as before the crash.
        """
        if self._status is not SharePartitionState.ACTIVE:
            return
        for batch in batches:
            ack = _ACK_OF_TARGET.get(batch.delivery_state, AcknowledgeType.RELEASE)
            first = max(batch.first_offset, self._start)
            last = batch.last_offset
            if last < first:
                continue
            if last >= self._end:
                if first > self._end:
                    self._runs.append(Run(self._end, first - 1, None))
                self._runs.append(Run(max(first, self._end), last, None))
                self._end = last + 1
            for run in self._runs.isolate(first, last):
                if run.state is not None and run.state.is_terminal:
                    continue
                run.state = RecordState.TX_PENDING
                run.delivery_count = max(run.delivery_count, batch.delivery_count, 1)
                run.member_id = ""
                if run.lock is not None and run.lock.release(run.count):
                    self._locks.discard(run.lock)
                run.lock = None
                run.pending = PendingAck(producer_id, producer_epoch, ack)
            self._runs.coalesce(first, last)
        self._find_next = True

    def complete_pending(
        self, producer_id: int, producer_epoch: int, commit: bool, *, persist: bool = True
    ) -> ErrorCode:
        """A transaction marker: apply (commit) or revert (abort) the producer's pending acks.

        Commit: ACCEPT -> ACKNOWLEDGED, REJECT/GAP -> ARCHIVED, RELEASE -> AVAILABLE.  Abort:
        AVAILABLE with the delivery count kept.  AVAILABLE becomes ARCHIVED at the delivery
        limit or below the SPSO (DESIGN §4.6).  A marker with an older epoch than the pending
        acks' has no effect.  The outcome is final, so a failed write is logged, not returned.
        """
        if self._status is not SharePartitionState.ACTIVE:
            return self._inactive_error()
        self._sync_log_start()
        plan: list[_Change] = []
        for run in self._runs:
            pending = run.pending
            if (
                pending is None
                or pending.producer_id != producer_id
                or pending.producer_epoch > producer_epoch
            ):
                continue
            dc = run.delivery_count
            ack = pending.ack_type if commit else AcknowledgeType.RELEASE
            if ack is AcknowledgeType.RELEASE:
                first = run.first
                if first < self._start:
                    below = min(run.last, self._start - 1)
                    plan.append(
                        _Change(first, below, RecordState.ARCHIVED, dc, event=EVENT_ARCHIVED)
                    )
                    first = below + 1
                if first <= run.last:
                    plan.append(self._back_to_available(first, run.last, dc))
            else:
                plan.append(
                    self._ack_change(run, run.first, run.last, ack, txn=None, renew_lock=None)
                )
        if not persist:
            self._apply(sorted(plan, key=lambda c: c.first))
            self._advance_start()
            return ErrorCode.NONE
        error = self._commit(plan, atomic=False)
        if error is not ErrorCode.NONE:
            log.warning("share partition %s: persisting a txn outcome failed: %s", self.key, error)
        return ErrorCode.NONE
