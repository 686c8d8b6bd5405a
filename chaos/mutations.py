"""Seeded protocol bugs (mutations): the checker must catch every one.

Each mutation re-creates a known failure class of transactional systems by patching the broker
at run time (``chaos.patching``); the product has no flags for them.  ``sharetxn chaos mutants``
runs each one over seeds until a violation is reported and prints the seeds-to-detection.
Mutation runs apply the assumed fixes of the known product bugs (``chaos.known_bugs``) so that
a violation is caused by the mutation.

==========================  =====================================================================
``abort-applies-acks``      an ABORT marker materializes the pending acknowledgements, as COMMIT
                            would (outputs aborted, inputs acknowledged: lost input)
``skip-ack-fencing``        TxnShareAcknowledge skips the producer-epoch check (a zombie's or a
                            stale request's acks are staged)
``complete-before-markers`` the coordinator writes CompleteCommit/CompleteAbort before the markers
                            are acknowledged (a later transaction of the same epoch can be
                            committed by the old marker; a crash leaves participants hanging)
``skip-restore-pending``    after a restart, records of still-open transactions are not made
                            TX_PENDING again (another member acquires them)
``abort-resets-delivery``   an aborted acknowledgement returns the record with delivery count 0
``release-pending-on-close`` closing a share session (or an expired member) releases the member's
                            TX_PENDING records too
``lock-expiry-releases-pending`` the acquisition lock of a TX_PENDING record is not cancelled:
                            when it fires, the record goes back to AVAILABLE
==========================  =====================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any

from chaos.patching import Patch, replace
from coordinator.share.inflight import Run
from coordinator.share.manager import ShareManager
from coordinator.share.share_partition import AckBatch, SharePartition
from coordinator.txn_coordinator import TransactionCoordinator
from txn.errors import ErrorCode
from txn.metadata import TransactionMetadata, TxnTransitMetadata
from txn.share_state import RecordState


def _abort_applies_acks(stack: ExitStack) -> None:
    original = ShareManager.complete_transaction

    def complete_transaction(
        self: ShareManager,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
    ) -> ErrorCode:
        return original(self, partition, producer_id, producer_epoch, True, coordinator_epoch)

    replace(stack, ShareManager, "complete_transaction", complete_transaction)


def _skip_ack_fencing(stack: ExitStack) -> None:
    original = ShareManager.txn_share_acknowledge

    def txn_share_acknowledge(
        self: ShareManager,
        group_id: str,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str | None,
        acks: Any,
        verify: Callable[..., dict[Any, ErrorCode]],
    ) -> Any:
        def unfenced(tid: str, pid: int, epoch: int, tps: list[Any]) -> dict[Any, ErrorCode]:
            verdict = verify(tid, pid, epoch, tps)
            return {
                tp: ErrorCode.NONE if error is ErrorCode.PRODUCER_FENCED else error
                for tp, error in verdict.items()
            }

        return original(
            self, group_id, transactional_id, producer_id, producer_epoch, member_id, acks, unfenced
        )

    replace(stack, ShareManager, "txn_share_acknowledge", txn_share_acknowledge)


def _complete_before_markers(stack: ExitStack) -> None:
    original = TransactionCoordinator._send_markers  # noqa: SLF001

    def _send_markers(
        self: TransactionCoordinator, metadata: TransactionMetadata
    ) -> TxnTransitMetadata:
        complete = original(self, metadata)
        # Write Complete* now instead of when every partition acknowledged its marker.
        self._write_txn_completion(metadata.transactional_id, complete)
        return complete

    replace(stack, TransactionCoordinator, "_send_markers", _send_markers)


def _skip_restore_pending(stack: ExitStack) -> None:
    def restore_pending(self: SharePartition, *args: Any, **kwargs: Any) -> None:
        return None

    replace(stack, SharePartition, "restore_pending", restore_pending)


def _runs(sp: SharePartition) -> Any:
    return sp._runs  # noqa: SLF001


def _abort_resets_delivery(stack: ExitStack) -> None:
    original = SharePartition.complete_pending

    def complete_pending(
        self: SharePartition,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        *,
        persist: bool = True,
    ) -> ErrorCode:
        if not commit:
            for run in _runs(self):
                pending = run.pending
                if (
                    pending is not None
                    and pending.producer_id == producer_id
                    and pending.producer_epoch <= producer_epoch
                ):
                    run.delivery_count = 0
        return original(self, producer_id, producer_epoch, commit, persist=persist)

    replace(stack, SharePartition, "complete_pending", complete_pending)


def _release_pending_on_close(stack: ExitStack) -> None:
    original = SharePartition.release_acquired_records

    def release_acquired_records(self: SharePartition, member_id: str) -> ErrorCode:
        run: Run
        for run in _runs(self):
            if run.state is RecordState.TX_PENDING and run.member_id == member_id:
                run.state = RecordState.ACQUIRED
                run.pending = None
        return original(self, member_id)

    replace(stack, SharePartition, "release_acquired_records", release_acquired_records)


def _lock_expiry_releases_pending(stack: ExitStack) -> None:
    original = SharePartition.prepare_pending

    def prepare_pending(
        self: SharePartition,
        member_id: str | None,
        producer_id: int,
        producer_epoch: int,
        batches: Sequence[AckBatch],
    ) -> ErrorCode:
        error = original(self, member_id, producer_id, producer_epoch, batches)
        if error is not ErrorCode.NONE:
            return error
        ranges = [(b.first_offset, b.last_offset) for b in batches]

        def fire() -> None:
            # The lock nobody cancelled: its records go back, TX_PENDING or not.
            changes = []
            for first, last in ranges:
                for run in _runs(self).overlapping(first, last):
                    pending = run.pending
                    if (
                        run.state is RecordState.TX_PENDING
                        and pending is not None
                        and (pending.producer_id, pending.producer_epoch)
                        == (producer_id, producer_epoch)
                    ):
                        a, z = max(first, run.first), min(last, run.last)
                        changes.append(self._back_to_available(a, z, run.delivery_count))
            if changes:
                self._apply(sorted(changes, key=lambda c: c.first))

        clock = self._clock
        clock.schedule(self.config.record_lock_duration_ms, fire)
        return error

    replace(stack, SharePartition, "prepare_pending", prepare_pending)


MUTATIONS: dict[str, Patch] = {
    p.name: p
    for p in (
        Patch(
            "abort-applies-acks",
            "an ABORT marker applies the pending share acks as COMMIT would",
            _abort_applies_acks,
            ("I5", "I6"),
        ),
        Patch(
            "skip-ack-fencing",
            "TxnShareAcknowledge does not check the producer epoch",
            _skip_ack_fencing,
            ("I9",),
        ),
        Patch(
            "complete-before-markers",
            "Complete* is written before the markers are acknowledged",
            _complete_before_markers,
            ("I2", "I3", "I13"),
        ),
        Patch(
            "skip-restore-pending",
            "a restart does not make the records of open transactions TX_PENDING again",
            _skip_restore_pending,
            ("I7", "I4", "I1"),
        ),
        Patch(
            "abort-resets-delivery",
            "an abort returns the records with delivery count 0",
            _abort_resets_delivery,
            ("I8",),
        ),
        Patch(
            "release-pending-on-close",
            "a share-session close or member expiry releases TX_PENDING records",
            _release_pending_on_close,
            ("I7", "I4", "I1"),
        ),
        Patch(
            "lock-expiry-releases-pending",
            "the acquisition lock of a TX_PENDING record is not cancelled",
            _lock_expiry_releases_pending,
            ("I7", "I4", "I1"),
        ),
    )
}


def mutation(name: str) -> Patch:
    try:
        return MUTATIONS[name]
    except KeyError:
        msg = f"unknown mutation {name!r}; known: {', '.join(MUTATIONS)}"
        raise ValueError(msg) from None
