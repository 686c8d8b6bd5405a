"""The acknowledgement planner: ShareAcknowledge (and the acks of a ShareFetch), all or nothing.

A pure function of the in-flight state; ``SharePartition`` writes the plan and applies it."""

from __future__ import annotations

from collections.abc import Sequence

from coordinator.share.inflight import AcquisitionLock
from coordinator.share.partition_model import AckBatch, Change, SharePartitionConfig, ack_change
from coordinator.share.partition_state import InFlightState
from txn.errors import ErrorCode
from txn.share_state import AcknowledgeType, RecordState


def plan_acks(
    state: InFlightState,
    config: SharePartitionConfig,
    member_id: str | None,
    batches: Sequence[AckBatch],
    *,
    txn: tuple[int, int] | None,
    now_ms: int,
) -> tuple[list[Change], AcquisitionLock | None] | ErrorCode:
    """Validate every batch against the cache and turn it into changes (nothing applied).

    With ``txn`` (producer id, epoch) the changes make the records TX_PENDING.  RENEW changes
    carry one new lock (returned too) covering the renewed records; with the group's
    ``share.renew.acknowledge.enable`` false a RENEW is INVALID_RECORD_STATE, as in Kafka 4.4.
    """
    start, end = state.start, state.end
    plan: list[Change] = []
    renew_lock: AcquisitionLock | None = None
    for batch in batches:
        if txn is not None and batch.first_offset < start:
            # A transactional ack must find its records ACQUIRED by this member; below the
            # SPSO they were acknowledged already (by someone), so nothing can be staged.
            return ErrorCode.INVALID_RECORD_STATE
        if batch.last_offset < start:
            continue  # already past the SPSO: nothing to do (Kafka ignores it)
        if start >= end:
            return ErrorCode.INVALID_RECORD_STATE  # nothing cached at all
        if batch.last_offset >= end:
            return ErrorCode.INVALID_REQUEST  # offsets beyond the cache
        types = [AcknowledgeType(t) for t in batch.ack_types]
        first = max(batch.first_offset, start)
        for run in state.runs.overlapping(first, batch.last_offset):
            a = max(run.first, first)
            z = min(run.last, batch.last_offset)
            if run.state is not RecordState.ACQUIRED or run.pending is not None:
                return ErrorCode.INVALID_RECORD_STATE
            if member_id is not None and run.member_id != member_id:
                return ErrorCode.INVALID_RECORD_STATE
            if state.in_transition(a, z):
                return ErrorCode.INVALID_RECORD_STATE
            for s, e, ack in _segments(a, z, batch.first_offset, types):
                if ack is AcknowledgeType.RENEW:
                    if not config.renew_acknowledge_enabled:
                        return ErrorCode.INVALID_RECORD_STATE
                    if renew_lock is None:
                        renew_lock = AcquisitionLock(
                            run.member_id, s, e, now_ms + config.record_lock_duration_ms
                        )
                    renew_lock.last_offset = e
                plan.append(ack_change(run, s, e, ack, config, txn=txn, renew_lock=renew_lock))
    return plan, renew_lock


def _segments(
    first: int, last: int, batch_first: int, types: list[AcknowledgeType]
) -> list[tuple[int, int, AcknowledgeType]]:
    """Split first..last into runs of equal acknowledge type (one type covers everything)."""
    if len(types) == 1:
        return [(first, last, types[0])]
    out: list[tuple[int, int, AcknowledgeType]] = []
    seg_start = first
    current = types[first - batch_first]
    for offset in range(first + 1, last + 1):
        ack = types[offset - batch_first]
        if ack is not current:
            out.append((seg_start, offset - 1, current))
            seg_start = offset
            current = ack
    out.append((seg_start, last, current))
    return out
