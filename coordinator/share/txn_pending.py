"""KIP-1289 (DESIGN §4.1, §4.2): the planners of transactional acknowledgements.

``plan_pending`` validates a TxnShareAcknowledge and returns an immutable ``PendingPlan``; the
manager stages the plan's target states in the transaction (share coordinator) and then
``SharePartition.apply_pending`` moves the records ACQUIRED -> TX_PENDING (lock cancelled; never
acquired, released or expired).  ``plan_complete`` plans applying (commit) or reverting (abort)
them when the marker arrives; ``plan_restore`` rebuilds TX_PENDING after a restart."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from coordinator.share.acknowledgement import plan_acks
from coordinator.share.inflight import PendingAck, Run
from coordinator.share.partition_model import (
    AckBatch,
    Change,
    SharePartitionConfig,
    ack_change,
    below_start_or_back,
)
from coordinator.share.partition_state import InFlightState, RestoreStep
from coordinator.share.persister import PersisterStateBatch
from txn.errors import ErrorCode
from txn.share_state import AcknowledgeType, RecordState

# The target delivery state a transaction staged -> the acknowledgement that produced it.
_ACK_OF_TARGET: Final[dict[int, AcknowledgeType]] = {
    int(RecordState.ACKNOWLEDGED): AcknowledgeType.ACCEPT,
    int(RecordState.ARCHIVED): AcknowledgeType.REJECT,
    int(RecordState.AVAILABLE): AcknowledgeType.RELEASE,
}


@dataclass(frozen=True, slots=True)
class PendingPlan:
    """A validated TxnShareAcknowledge of one share partition, not applied yet."""

    producer_id: int
    producer_epoch: int
    staged: tuple[PersisterStateBatch, ...]  # what the share coordinator stages
    changes: tuple[Change, ...]  # ACQUIRED -> TX_PENDING, sorted by offset


def plan_pending(
    state: InFlightState,
    config: SharePartitionConfig,
    member_id: str | None,
    producer_id: int,
    producer_epoch: int,
    batches: Sequence[AckBatch],
    *,
    now_ms: int,
) -> PendingPlan | ErrorCode:
    """Plan a TxnShareAcknowledge (``batches`` already validated, RENEW refused).

    With ``member_id`` every record must be ACQUIRED by that member; with None any ACQUIRED
    record may be acknowledged (DESIGN §4.2).  The plan carries what the share coordinator
    stages in the transaction (ACCEPT -> ACKNOWLEDGED, REJECT/GAP -> ARCHIVED, RELEASE ->
    AVAILABLE, with the records' delivery counts) and the TX_PENDING changes.
    """
    planned = plan_acks(
        state, config, member_id, batches, txn=(producer_id, producer_epoch), now_ms=now_ms
    )
    if isinstance(planned, ErrorCode):
        return planned
    changes = sorted(planned[0], key=lambda c: c.first)
    staged: list[PersisterStateBatch] = []
    for change in changes:
        assert change.pending is not None
        target = ack_change(
            Run(change.first, change.last, RecordState.ACQUIRED, change.delivery_count),
            change.first,
            change.last,
            change.pending.ack_type,
            config,
            txn=None,
            renew_lock=None,
        )
        staged.append(
            PersisterStateBatch(change.first, change.last, int(target.state), target.delivery_count)
        )
    return PendingPlan(producer_id, producer_epoch, tuple(staged), tuple(changes))


def plan_restore(
    state: InFlightState,
    producer_id: int,
    producer_epoch: int,
    batches: Sequence[PersisterStateBatch],
) -> list[RestoreStep]:
    """The records of a still-open transaction, from the target states the share coordinator
    staged (see ``PendingPlan.staged``), clipped to the SPSO."""
    steps: list[RestoreStep] = []
    for batch in batches:
        ack = _ACK_OF_TARGET.get(batch.delivery_state, AcknowledgeType.RELEASE)
        first = max(batch.first_offset, state.start)
        if batch.last_offset < first:
            continue
        pending = PendingAck(producer_id, producer_epoch, ack)
        steps.append(RestoreStep(first, batch.last_offset, batch.delivery_count, pending))
    return steps


def plan_complete(
    state: InFlightState,
    config: SharePartitionConfig,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
) -> list[Change]:
    """A transaction marker: apply (commit) or revert (abort) the producer's pending acks.

    Commit: ACCEPT -> ACKNOWLEDGED, REJECT/GAP -> ARCHIVED, RELEASE -> AVAILABLE.  Abort:
    AVAILABLE with the delivery count kept.  AVAILABLE becomes ARCHIVED at the delivery limit
    or below the SPSO (DESIGN §4.6).  Pending acks of a newer epoch than the marker's stay.
    """
    plan: list[Change] = []
    for run in state.runs:
        pending = run.pending
        if (
            pending is None
            or pending.producer_id != producer_id
            or pending.producer_epoch > producer_epoch
        ):
            continue
        ack = pending.ack_type if commit else AcknowledgeType.RELEASE
        if ack is AcknowledgeType.RELEASE:
            plan += below_start_or_back(
                run.first, run.last, run.delivery_count, state.start, config
            )
        else:
            plan.append(
                ack_change(run, run.first, run.last, ack, config, txn=None, renew_lock=None)
            )
    return plan
