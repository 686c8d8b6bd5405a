"""Acknowledgement: ShareAcknowledge (and the acks of a ShareFetch), all or nothing."""

from __future__ import annotations

from collections.abc import Sequence

from coordinator.share.inflight import (
    AcquisitionLock,
)
from coordinator.share.partition_core import SharePartitionCore
from coordinator.share.partition_model import (
    AckBatch,
    SharePartitionState,
    _Change,
    _segments,
    validate_ack_batches,
)
from txn.errors import ErrorCode
from txn.share_state import AcknowledgeType, RecordState


class Acknowledgement(SharePartitionCore):
    def acknowledge(self, member_id: str, batches: Sequence[AckBatch]) -> ErrorCode:
        """ShareAcknowledge / the acknowledgements of a ShareFetch, all or nothing."""
        error = validate_ack_batches(batches)
        if error is not ErrorCode.NONE:
            return error
        if self._status is not SharePartitionState.ACTIVE:
            return self._inactive_error()
        self._sync_log_start()
        planned = self._plan_acks(member_id, batches, txn=None)
        if isinstance(planned, ErrorCode):
            return planned
        plan, renew_lock = planned
        error = self._commit(plan, atomic=True)
        if error is ErrorCode.NONE and renew_lock is not None and renew_lock.held:
            self._schedule(renew_lock, self._config.record_lock_duration_ms)
        return error

    def _plan_acks(
        self,
        member_id: str | None,
        batches: Sequence[AckBatch],
        txn: tuple[int, int] | None,
    ) -> tuple[list[_Change], AcquisitionLock | None] | ErrorCode:
        """Validate every batch against the cache and turn it into changes (nothing applied)."""
        plan: list[_Change] = []
        renew_lock: AcquisitionLock | None = None
        for batch in batches:
            if txn is not None and batch.first_offset < self._start:
                # A transactional ack must find its records ACQUIRED by this member; below the
                # SPSO they were acknowledged already (by someone), so nothing can be staged.
                return ErrorCode.INVALID_RECORD_STATE
            if batch.last_offset < self._start:
                continue  # already past the SPSO: nothing to do (Kafka ignores it)
            if self._start >= self._end:
                return ErrorCode.INVALID_RECORD_STATE  # nothing cached at all
            if batch.last_offset >= self._end:
                return ErrorCode.INVALID_REQUEST  # offsets beyond the cache
            types = [AcknowledgeType(t) for t in batch.ack_types]
            first = max(batch.first_offset, self._start)
            for run in self._runs.overlapping(first, batch.last_offset):
                a = max(run.first, first)
                z = min(run.last, batch.last_offset)
                if run.state is not RecordState.ACQUIRED or run.pending is not None:
                    return ErrorCode.INVALID_RECORD_STATE
                if member_id is not None and run.member_id != member_id:
                    return ErrorCode.INVALID_RECORD_STATE
                if self._in_transition(a, z):
                    return ErrorCode.INVALID_RECORD_STATE
                for s, e, ack in _segments(a, z, batch.first_offset, types):
                    if ack is AcknowledgeType.RENEW:
                        if renew_lock is None:
                            renew_lock = AcquisitionLock(
                                run.member_id,
                                s,
                                e,
                                self._clock.now_ms() + self._config.record_lock_duration_ms,
                            )
                        renew_lock.last_offset = e
                    plan.append(self._ack_change(run, s, e, ack, txn=txn, renew_lock=renew_lock))
        return plan, renew_lock
