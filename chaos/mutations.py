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
``stale-marker-applies``    an old epoch's marker ends the producer's *newer* transaction on a
                            data partition and in the share coordinator (KAFKA-17754; needs the
                            simulated marker channel's stale copies)
``skip-produce-fencing``    Produce skips the producer-epoch checks (its own and the producer-id
                            binding's): a zombie's write lands in its
                            successor's transaction (KAFKA-5231, KIP-890's late produce)
``lso-ignores-open-txns``   the last stable offset is not held back by open transactions: a
                            read_committed consumer reads uncommitted (later aborted) records
``abort-bumps-delivery``    an abort's revert increments the delivery count (the next delivery
                            counts twice; records archived early)
``marker-acked-before-applied`` the share coordinator answers a marker before it wrote and applied
                            it (KAFKA-17507): a crash or write error in between loses it
``ack-below-spso-ignored``  re-creates B1: a transactional ack below the SPSO answers NONE and
                            stages nothing
``prune-loses-committed-acks`` re-creates B2: no snapshot after a commit, and pruning may pass the
                            committed transactional batch
``txn-offsets-before-marker`` TxnOffsetCommit makes the offsets committed at once instead of when
                            the COMMIT marker reaches ``__consumer_offsets`` (an aborted
                            transaction's inputs are skipped; another member reads them early)
``offset-fetch-unstable``   OffsetFetch ignores ``require_stable``: a new owner reads the offset
                            from before a pending transaction and processes its inputs again
``skip-group-fencing``      TxnOffsetCommit skips the member-id and member-epoch check (KIP-447):
                            a zombie member's transaction commits inputs another member processed
``cleaner-drops-latest``    the log cleaner also drops the data batch holding the latest record
                            of its pass: the latest value of its keys disappears (a compacted
                            table, or an internal log replayed after the clean, loses state)
==========================  =====================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack
from dataclasses import replace as replace_field
from typing import Any

from chaos.patching import Patch, replace
from coordinator.group.consumer_model import ConsumerProtocolGroup
from coordinator.group.coordinator import ConsumerGroupCoordinator
from coordinator.group.results import FetchedOffset
from coordinator.log import cleaner
from coordinator.partition import Partition
from coordinator.producer_state import ProducerStateManager, SequenceCheck
from coordinator.share import acknowledgement, txn_pending
from coordinator.share.inflight import InFlightRuns, Run
from coordinator.share.manager import ShareManager, VerifiedAcks
from coordinator.share.partition_model import SharePartitionConfig, back_to_available
from coordinator.share.partition_state import InFlightState
from coordinator.share.share_coordinator import ShareCoordinator
from coordinator.share.share_partition import AckBatch, PendingPlan, SharePartition
from coordinator.share.state_shard import ShareStateShard
from coordinator.txn_coordinator import TransactionCoordinator
from txn.batch import BatchHeader
from txn.errors import ErrorCode
from txn.ids import TopicPartition
from txn.metadata import TransactionMetadata, TxnTransitMetadata
from txn.share_state import RecordState

# ``patched(manager, apply, commit)`` stands for a marker's ``complete_transaction``; ``apply(c)``
# runs the original with the marker's arguments and ``commit=c``.
CompleteTransactionPatch = Callable[[ShareManager, Callable[[bool], ErrorCode], bool], ErrorCode]


def _patch_complete_transaction(stack: ExitStack, patched: CompleteTransactionPatch) -> None:
    original = ShareManager.complete_transaction

    def complete_transaction(
        self: ShareManager,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
    ) -> ErrorCode:
        def apply(as_commit: bool) -> ErrorCode:
            return original(
                self, partition, producer_id, producer_epoch, as_commit, coordinator_epoch
            )

        return patched(self, apply, commit)

    replace(stack, ShareManager, "complete_transaction", complete_transaction)


def _abort_applies_acks(stack: ExitStack) -> None:
    def as_commit(
        manager: ShareManager, apply: Callable[[bool], ErrorCode], commit: bool
    ) -> ErrorCode:
        return apply(True)

    _patch_complete_transaction(stack, as_commit)


def _skip_ack_fencing(stack: ExitStack) -> None:
    original = ShareManager.txn_share_acknowledge

    def txn_share_acknowledge(
        self: ShareManager,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str | None,
        acks: Sequence[VerifiedAcks],
    ) -> Any:
        unfenced = [
            replace_field(v, verdict=ErrorCode.NONE)
            if v.verdict is ErrorCode.PRODUCER_FENCED
            else v
            for v in acks
        ]
        return original(self, group_id, producer_id, producer_epoch, member_id, unfenced)

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


def _runs(sp: SharePartition) -> InFlightRuns:
    return sp.inflight.runs


def _before_complete_pending(
    stack: ExitStack, epoch_for: Callable[[SharePartition, int, int, bool], int]
) -> None:
    """Run ``epoch_for(partition, producer_id, producer_epoch, commit)`` before every
    ``SharePartition.complete_pending``; the epoch it returns is the one passed on."""
    original = SharePartition.complete_pending

    def complete_pending(
        self: SharePartition,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        *,
        persist: bool = True,
    ) -> ErrorCode:
        producer_epoch = epoch_for(self, producer_id, producer_epoch, commit)
        return original(self, producer_id, producer_epoch, commit, persist=persist)

    replace(stack, SharePartition, "complete_pending", complete_pending)


def _on_abort_revert(stack: ExitStack, change: Callable[[Run], None]) -> None:
    """Apply ``change`` to every run an ABORT marker is about to revert."""

    def revert(sp: SharePartition, producer_id: int, producer_epoch: int, commit: bool) -> int:
        if not commit:
            for run in _runs(sp):
                pending = run.pending
                if (
                    pending is not None
                    and pending.producer_id == producer_id
                    and pending.producer_epoch <= producer_epoch
                ):
                    change(run)
        return producer_epoch

    _before_complete_pending(stack, revert)


def _abort_resets_delivery(stack: ExitStack) -> None:
    def reset(run: Run) -> None:
        run.delivery_count = 0

    _on_abort_revert(stack, reset)


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
    original = SharePartition.apply_pending

    def apply_pending(self: SharePartition, plan: PendingPlan) -> ErrorCode:
        error = original(self, plan)
        if error is not ErrorCode.NONE:
            return error
        producer_id, producer_epoch = plan.producer_id, plan.producer_epoch
        ranges = [(c.first, c.last) for c in plan.changes]

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
                        changes.append(back_to_available(a, z, run.delivery_count, self.config))
            if changes:
                self._apply(sorted(changes, key=lambda c: c.first))

        clock = self._clock
        clock.schedule(self.config.record_lock_duration_ms, fire)
        return error

    replace(stack, SharePartition, "apply_pending", apply_pending)


def _stale_marker_applies(stack: ExitStack) -> None:
    write_marker = Partition.write_marker

    def partition_write_marker(
        self: Partition, producer_id: int, producer_epoch: int, *marker: Any
    ) -> ErrorCode:
        entry = self.producers.get(producer_id)
        if entry is not None and producer_epoch < entry.epoch:
            producer_epoch = entry.epoch  # no epoch check: the old marker ends the open txn
        return write_marker(self, producer_id, producer_epoch, *marker)

    marker_pending = ShareStateShard._marker_pending  # noqa: SLF001

    def _marker_pending(
        self: ShareStateShard, part: Any, producer_id: int, producer_epoch: int
    ) -> Any:
        pending = part.pending_txn.get(producer_id)
        if pending is not None:
            producer_epoch = max(producer_epoch, pending.producer_epoch)
        return marker_pending(self, part, producer_id, producer_epoch)

    def newest_pending_epoch(
        sp: SharePartition, producer_id: int, producer_epoch: int, commit: bool
    ) -> int:
        for run in _runs(sp):
            pending = run.pending
            if pending is not None and pending.producer_id == producer_id:
                producer_epoch = max(producer_epoch, pending.producer_epoch)
        return producer_epoch

    replace(stack, Partition, "write_marker", partition_write_marker)
    replace(stack, ShareStateShard, "_marker_pending", _marker_pending)
    _before_complete_pending(stack, newest_pending_epoch)


def _skip_produce_fencing(stack: ExitStack) -> None:
    original = ProducerStateManager.check

    def check(self: ProducerStateManager, header: BatchHeader) -> SequenceCheck:
        entry = self.producers.get(header.producer_id)
        if entry is not None and header.producer_epoch < entry.epoch:
            return SequenceCheck(ErrorCode.NONE)  # a stale epoch is neither fenced nor checked
        return original(self, header)

    replace(stack, ProducerStateManager, "check", check)
    # Nor is it verified against the transaction coordinator (the producer-id binding).
    binding = Partition._check_binding  # noqa: SLF001 - the mutation patches it

    def check_binding(
        self: Partition,
        header: BatchHeader,
        transactional_id: str | None,
        verifier: Any,
        txn_producer: Any,
    ) -> Any:
        entry = self.producers.get(header.producer_id)
        if header.is_transactional and entry is not None and header.producer_epoch < entry.epoch:
            return None
        return binding(self, header, transactional_id, verifier, txn_producer)

    replace(stack, Partition, "_check_binding", check_binding)


def _lso_ignores_open_txns(stack: ExitStack) -> None:
    def last_stable_offset(self: Partition) -> int:
        return self.high_watermark

    replace(stack, Partition, "last_stable_offset", property(last_stable_offset))


def _abort_bumps_delivery(stack: ExitStack) -> None:
    def bump(run: Run) -> None:
        run.delivery_count += 1

    _on_abort_revert(stack, bump)


MARKER_APPLY_DELAY_MS = 100


def _marker_acked_before_applied(stack: ExitStack) -> None:
    def answer_first(
        manager: ShareManager, apply: Callable[[bool], ErrorCode], commit: bool
    ) -> ErrorCode:
        def later() -> None:
            apply(commit)

        # Answered at once; written and applied by a background task a moment later.
        manager.clock.schedule(MARKER_APPLY_DELAY_MS, later)
        return ErrorCode.NONE

    _patch_complete_transaction(stack, answer_first)


def _ack_below_spso_ignored(stack: ExitStack) -> None:
    original = acknowledgement.plan_acks

    def plan_acks(
        state: InFlightState,
        config: SharePartitionConfig,
        member_id: str | None,
        batches: Sequence[AckBatch],
        *,
        txn: tuple[int, int] | None,
        now_ms: int,
    ) -> Any:
        if txn is not None:
            start = state.start
            kept: list[AckBatch] = []
            for b in batches:
                if b.last_offset < start:
                    continue  # silently skipped, as a plain ShareAcknowledge may
                if b.first_offset >= start:
                    kept.append(b)
                    continue
                types = b.ack_types
                if len(types) > 1:
                    types = types[start - b.first_offset :]
                kept.append(AckBatch(start, b.last_offset, list(types)))
            batches = kept
        return original(state, config, member_id, batches, txn=txn, now_ms=now_ms)

    # The transactional planner's own reference to the acknowledgement planner.
    replace(stack, txn_pending, "plan_acks", plan_acks)


def _prune_loses_committed_acks(stack: ExitStack) -> None:
    def _snapshot_key(self: ShareCoordinator, partition: int, key: Any) -> ErrorCode:
        return ErrorCode.NONE

    def first_needed_offset(self: ShareStateShard, partition: int) -> int | None:
        part = self._partitions[partition]
        needed = [entry.snapshot_offset for entry in part.states.values()]
        needed.extend(pending.first_offset for pending in part.pending_txn.values())
        return min(needed) if needed else None

    replace(stack, ShareCoordinator, "_snapshot_key", _snapshot_key)
    replace(stack, ShareStateShard, "first_needed_offset", first_needed_offset)


def _txn_offsets_before_marker(stack: ExitStack) -> None:
    original = ConsumerGroupCoordinator.txn_commit_offsets

    def txn_commit_offsets(
        self: ConsumerGroupCoordinator, producer_id: int, *args: Any
    ) -> dict[TopicPartition, ErrorCode]:
        results = original(self, producer_id, *args)
        if all(error is ErrorCode.NONE for error in results.values()):
            # the marker's effect, without the marker
            self._runtime.shard.replay_marker(0, producer_id, 0, True)
        return results

    replace(stack, ConsumerGroupCoordinator, "txn_commit_offsets", txn_commit_offsets)


def _offset_fetch_unstable(stack: ExitStack) -> None:
    original = ConsumerGroupCoordinator.fetch_offsets

    def fetch_offsets(
        self: ConsumerGroupCoordinator,
        group_id: str,
        partitions: list[TopicPartition] | None,
        require_stable: bool,
    ) -> tuple[ErrorCode, dict[TopicPartition, FetchedOffset]]:
        return original(self, group_id, partitions, False)

    replace(stack, ConsumerGroupCoordinator, "fetch_offsets", fetch_offsets)


def _skip_group_fencing(stack: ExitStack) -> None:
    def validate_consumer_commit(
        self: ConsumerGroupCoordinator,
        group: ConsumerProtocolGroup,
        member_id: str,
        epoch: int,
        partitions: Iterable[tuple[str, int]] = (),
        transactional: bool = False,
    ) -> ErrorCode:
        return ErrorCode.NONE

    replace(stack, ConsumerGroupCoordinator, "validate_consumer_commit", validate_consumer_commit)


def _cleaner_drops_latest(stack: ExitStack) -> None:
    original = cleaner.CleanRules.filter

    def filter_batch(self: cleaner.CleanRules, header: BatchHeader, raw: bytes) -> bytes | None:
        out = original(self, header, raw)
        latest = self.context.offset_map.latest_offset
        holds_latest = header.base_offset <= latest <= header.last_offset
        if out is not None and not header.is_control and holds_latest:
            return None  # the batch with the pass's latest record, kept: dropped instead
        return out

    replace(stack, cleaner.CleanRules, "filter", filter_batch)


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
            ("I2", "I3", "I4", "I13", "I15"),
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
        Patch(
            "stale-marker-applies",
            "a marker of an older epoch ends the producer's newer transaction",
            _stale_marker_applies,
            # C2 and C3 are I2 and I15 for the consumer-group workers' transactions
            ("I2", "I3", "I4", "I5", "I7", "I15", "C2", "C3"),
        ),
        Patch(
            "skip-produce-fencing",
            "Produce does not check the producer epoch",
            _skip_produce_fencing,
            ("I9",),
        ),
        Patch(
            "lso-ignores-open-txns",
            "the last stable offset is not held back by open transactions",
            _lso_ignores_open_txns,
            ("I3",),
        ),
        Patch(
            "abort-bumps-delivery",
            "an abort's revert increments the delivery count",
            _abort_bumps_delivery,
            ("I8", "I5", "I6"),
        ),
        Patch(
            "marker-acked-before-applied",
            "the share coordinator answers a marker before writing and applying it",
            _marker_acked_before_applied,
            ("I13", "I1", "I4", "I5", "I6", "I7"),
        ),
        Patch(
            "ack-below-spso-ignored",
            "a transactional ack below the SPSO answers NONE and stages nothing (B1)",
            _ack_below_spso_ignored,
            ("I15", "I4"),
        ),
        Patch(
            "prune-loses-committed-acks",
            "pruning may pass a committed transactional batch not yet snapshotted (B2)",
            _prune_loses_committed_acks,
            ("I1", "I4"),
        ),
        Patch(
            "txn-offsets-before-marker",
            "TxnOffsetCommit's offsets are committed before the transaction's marker",
            _txn_offsets_before_marker,
            ("C1", "C2", "C3"),
        ),
        Patch(
            "offset-fetch-unstable",
            "OffsetFetch ignores require_stable while transactional offsets are pending",
            _offset_fetch_unstable,
            ("C1", "C2"),
        ),
        Patch(
            "cleaner-drops-latest",
            "the log cleaner drops the latest value of a key",
            _cleaner_drops_latest,
            ("T1", "C1", "C2", "C3", "I4", "I5", "I13", "I14"),
        ),
        Patch(
            "skip-group-fencing",
            "TxnOffsetCommit skips the member id and member epoch check (KIP-447)",
            _skip_group_fencing,
            ("C1", "C2"),
        ),
    )
}


def mutation(name: str) -> Patch:
    try:
        return MUTATIONS[name]
    except KeyError:
        msg = f"unknown mutation {name!r}; known: {', '.join(MUTATIONS)}"
        raise ValueError(msg) from None
