"""The transaction coordinator (Kafka's TransactionCoordinator + TransactionStateManager).

Single node: every transactional id lives in one ``__transaction_state`` partition (0), which
this coordinator owns for its whole life at ``coordinator_epoch``.  Every method is synchronous.

**Runtime and shard.**  The ids' metadata is the ``TxnShard`` (``txn_shard``), owned by the
``CoordinatorRuntime`` the composition root builds (``coordinator.assembly.txn_runtime``) and
hands to this coordinator.  A state change is prepared on the metadata
(``prepare_*``, which sets only the in-memory ``pending_state``) and written with
``runtime.write`` as a typed ``TxnRecord``; the runtime appends and flushes it, maps an append
error as Kafka does, and only then replays it into the shard, which completes the transition --
the same replay ``load()`` runs over the log.  A failed write leaves the log-backed fields as
they were; the coordinator drops the pending state (in memory) unless a retry follows.  What
stays in memory only, as in Kafka: the pending transition, the last epoch (not persisted), a
new id's metadata before its first record, and a TV0/1 fence's epoch, in force from the moment
the coordinator fences (``fenced_producer_epoch``) until the abort's record replaces it.

EndTxn writes PrepareCommit/PrepareAbort, replies at once and hands the markers to the
``MarkerChannel``; CompleteCommit/CompleteAbort is written when the channel reports that every
partition acknowledged (retried with the clock if that append fails), without an fsync of its
own: the next record of the log (fsynced) or its close makes it durable, and a crash that loses
it leaves the Prepare* record, whose markers ``load()`` sends again.  ``load()`` has the
runtime replay the log into the shard and re-sends the markers of every Prepare* transaction.

Protocol errors are returned (``error`` fields, Kafka numbers), never raised.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from coordinator.marker_channel import MarkerChannel, TxnMarker
from coordinator.producer_ids import ProducerIdManager
from coordinator.shard_runtime import CoordinatorResult
from coordinator.txn_results import (
    EndTxnResult,
    InitProducerIdResult,
    TransactionDescription,
    TransactionListing,
    TransactionView,
    marker_control_type,
    transaction_view,
)
from coordinator.txn_shard import TxnRecord, TxnRuntime
from txn.clock import Clock
from txn.config import BrokerConfig
from txn.errors import (
    ErrorCode,
    IllegalTransitionError,
    ProducerFencedError,
)
from txn.ids import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TopicPartition
from txn.limits import INT32_MAX, MAX_PRODUCER_EPOCH
from txn.metadata import (
    TV_0,
    TV_2,
    TransactionMetadata,
    TxnTransitMetadata,
    is_epoch_exhausted,
)
from txn.state import (
    EndTxnAction,
    EpochRule,
    TransactionState,
    end_txn_action,
    end_txn_epoch_rule,
)

log = logging.getLogger(__name__)

_S = TransactionState
_PREPARE = (_S.PREPARE_COMMIT, _S.PREPARE_ABORT)
_IDLE = (_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT)


class TransactionCoordinator:
    """Transactions of every transactional id, persisted in one ``__transaction_state`` log."""

    def __init__(
        self,
        clock: Clock,
        runtime: TxnRuntime,
        producer_ids: ProducerIdManager,
        marker_channel: MarkerChannel,
        config: BrokerConfig,
        coordinator_epoch: int = 0,
        *,
        transaction_version_level: int = TV_2,
        retry_backoff_ms: int = 100,
    ) -> None:
        self._clock = clock
        self._runtime = runtime
        self._shard = runtime.shard
        self._producer_ids = producer_ids
        self._channel = marker_channel
        # Called with (transactional id, producer id) when the reaper aborts a transaction.
        self.on_timeout_abort: Callable[[str, int], None] | None = None
        self._coordinator_epoch = coordinator_epoch
        # The server's transaction.version: used for aborts the coordinator starts itself.
        self._tv_level = transaction_version_level
        self._retry_backoff_ms = retry_backoff_ms
        self._max_timeout_ms = config.get_int("transaction.max.timeout.ms")
        self._expiration_ms = config.get_int("transactional.id.expiration.ms")
        self._abort_interval_ms = config.get_int(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms"
        )
        self._expiry_interval_ms = config.get_int(
            "transaction.remove.expired.transaction.cleanup.interval.ms"
        )
        self._two_phase_commit_enabled = config.get_bool("transaction.two.phase.commit.enable")
        # The shard's dict: replay alone adds, changes (log-backed fields) and removes ids;
        # a new id's metadata is put here before its first record, as Kafka does.
        self._txns = self._shard.txns
        # Producer ids issued to transactional ids (never usable for idempotent writes).
        self._txn_producer_ids: set[int] = set()
        # CompleteCommit/CompleteAbort transits waiting for their markers, by id.
        self._pending_complete: dict[str, TxnTransitMetadata] = {}

    # --- lifecycle ----------------------------------------------------------------------------

    @staticmethod
    def partition_for(transactional_id: str) -> int:
        """The ``__transaction_state`` partition of an id: always 0 on this single node.

        Kafka uses ``abs(hash(id)) % transaction.state.log.num.partitions``; FindCoordinator
        answers with this broker for every id either way.
        """
        del transactional_id
        return 0

    @property
    def coordinator_epoch(self) -> int:
        return self._coordinator_epoch

    def availability(self) -> ErrorCode:
        """NONE once loaded; COORDINATOR_LOAD_IN_PROGRESS before, NOT_AVAILABLE after close."""
        return self._runtime.availability()

    def load(self) -> None:
        """Replay the log, re-send the markers of Prepare* transactions, start the reapers."""
        self._shard.reset()
        self._pending_complete.clear()
        self._runtime.load()
        self._txn_producer_ids = {
            pid
            for md in self._txns.values()
            for pid in (md.producer_id, md.prev_producer_id, md.next_producer_id)
            if pid != NO_PRODUCER_ID
        }
        for metadata in list(self._txns.values()):
            if metadata.state in _PREPARE:
                log.info("completing %s after load", metadata)
                self._send_markers(metadata)
        self._runtime.schedule_periodic(
            "abort", self._abort_interval_ms, self.abort_timed_out_transactions
        )
        self._runtime.schedule_periodic(
            "expire", self._expiry_interval_ms, self.remove_expired_transactional_ids
        )

    def close(self) -> None:
        """Stop the reapers and marker deliveries; every later request gets an error."""
        self._runtime.close()
        for transactional_id in self._pending_complete:
            self._channel.cancel(transactional_id)
        self._pending_complete.clear()

    # --- InitProducerId -----------------------------------------------------------------------

    def init_producer_id(
        self,
        transactional_id: str | None,
        transaction_timeout_ms: int,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        enable_2pc: bool = False,
        keep_prepared_txn: bool = False,
    ) -> InitProducerIdResult:
        """InitProducerId (KIP-98/360/890/939): a producer id and a fresh epoch for the id."""
        if (producer_id == NO_PRODUCER_ID) != (producer_epoch == NO_PRODUCER_EPOCH):
            return InitProducerIdResult(ErrorCode.INVALID_REQUEST)  # KafkaApis' pair check
        if transactional_id is None:
            new_id = self._generate_producer_id(transactional=False)
            if isinstance(new_id, ErrorCode):
                return InitProducerIdResult(new_id)
            return InitProducerIdResult(ErrorCode.NONE, new_id, 0)
        if not transactional_id:
            return InitProducerIdResult(ErrorCode.INVALID_REQUEST)
        if enable_2pc and not self._two_phase_commit_enabled:
            return InitProducerIdResult(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if not enable_2pc and not 0 < transaction_timeout_ms <= self._max_timeout_ms:
            return InitProducerIdResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        timeout_ms = INT32_MAX if enable_2pc else transaction_timeout_ms
        if (error := self.availability()) is not ErrorCode.NONE:
            return InitProducerIdResult(error)

        metadata = self._txns.get(transactional_id)
        if metadata is None:
            new_id = self._generate_producer_id()
            if isinstance(new_id, ErrorCode):
                return InitProducerIdResult(new_id)
            metadata = TransactionMetadata(
                transactional_id,
                new_id,
                txn_timeout_ms=timeout_ms,
                txn_last_update_timestamp=self._clock.now_ms(),
            )
            self._txns[transactional_id] = metadata

        expected = None if producer_id == NO_PRODUCER_ID else (producer_id, producer_epoch)
        if metadata.pending_transition_in_progress:
            return InitProducerIdResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if expected is not None and not self._valid_expected_producer(metadata, *expected):
            return InitProducerIdResult(ErrorCode.PRODUCER_FENCED)
        if metadata.state in _PREPARE:
            return InitProducerIdResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if metadata.state is _S.ONGOING:
            if keep_prepared_txn:
                # KIP-939: hand the prepared transaction to this caller untouched.
                return InitProducerIdResult(
                    ErrorCode.NONE,
                    metadata.producer_id,
                    metadata.producer_epoch,
                    metadata.producer_id,
                    metadata.producer_epoch,
                )
            # Fence the current producer and abort; the client retries and then gets a new
            # epoch (Kafka never returns the fencing epoch).
            log.info(
                "fencing producer id %d epoch %d of %r: a new producer with the same "
                "transactional id is initializing; its open transaction is aborted",
                metadata.producer_id,
                metadata.producer_epoch,
                transactional_id,
            )
            error = self._fence_and_abort(metadata)
            return InitProducerIdResult(
                ErrorCode.CONCURRENT_TRANSACTIONS if error is ErrorCode.NONE else error
            )
        if metadata.state not in _IDLE:
            raise IllegalTransitionError(f"{transactional_id!r} found in {metadata.state}")

        prepared = self._prepare_new_epoch(
            metadata, timeout_ms, None if expected is None else expected[1], enable_2pc
        )
        transit = self._write_prepared(metadata, prepared)
        if isinstance(transit, ErrorCode):
            return InitProducerIdResult(transit)
        return InitProducerIdResult(ErrorCode.NONE, transit.producer_id, transit.producer_epoch)

    @staticmethod
    def _valid_expected_producer(
        metadata: TransactionMetadata, producer_id: int, producer_epoch: int
    ) -> bool:
        # Fresh metadata, the current id, or the id just rotated away from (a retry).
        return (
            metadata.producer_epoch == NO_PRODUCER_EPOCH
            or producer_id == metadata.producer_id
            or (producer_id == metadata.prev_producer_id and is_epoch_exhausted(producer_epoch))
        )

    def _prepare_new_epoch(
        self,
        metadata: TransactionMetadata,
        timeout_ms: int,
        expected_epoch: int | None,
        two_phase_commit: bool,
    ) -> TxnTransitMetadata | ErrorCode:
        now = self._clock.now_ms()
        if metadata.is_producer_epoch_exhausted and expected_epoch in (
            None,
            metadata.producer_epoch,
        ):
            new_id = self._generate_producer_id()
            if isinstance(new_id, ErrorCode):
                return new_id
            return metadata.prepare_producer_id_rotation(
                new_id,
                timeout_ms,
                now,
                expected_epoch is not None,
                two_phase_commit=two_phase_commit,
            )
        if metadata.is_producer_epoch_exhausted:
            # The expected epoch is not the exhausted current one: the caller is stale.
            return ErrorCode.PRODUCER_FENCED
        try:
            return metadata.prepare_increment_producer_epoch(
                timeout_ms, expected_epoch, now, two_phase_commit=two_phase_commit
            )
        except ProducerFencedError:
            return ErrorCode.PRODUCER_FENCED

    # --- AddPartitionsToTxn / verify ----------------------------------------------------------

    def add_partitions_to_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        *,
        tv2: bool = False,
    ) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn (also AddOffsetsToTxn / AddShareAcksToTxn and TV2 implicit adds)."""
        wanted = frozenset(partitions)
        error = self._add_partitions(transactional_id, producer_id, producer_epoch, wanted, tv2)
        return dict.fromkeys(wanted, error)

    def _add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: frozenset[TopicPartition],
        tv2: bool,
    ) -> ErrorCode:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        if (error := self.availability()) is not ErrorCode.NONE:
            return error
        metadata = self._txns.get(transactional_id)
        if metadata is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        # Pending first: across a TV2 overflow the client may already use the pending new id.
        if metadata.pending_transition_in_progress:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if metadata.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if metadata.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if metadata.state in _PREPARE:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if metadata.state is _S.ONGOING and partitions <= metadata.topic_partitions:
            return ErrorCode.NONE
        transit = metadata.prepare_add_partitions(
            partitions, self._clock.now_ms(), TV_2 if tv2 else TV_0
        )
        return self._write(metadata, transit)

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """Verify-only AddPartitionsToTxn (KIP-890): is each partition in the ongoing txn?"""
        wanted = list(partitions)
        error = ErrorCode.NONE
        metadata = self._txns.get(transactional_id) if transactional_id else None
        if not transactional_id:
            error = ErrorCode.INVALID_REQUEST
        elif (availability := self.availability()) is not ErrorCode.NONE:
            error = availability
        elif metadata is None or metadata.producer_id != producer_id:
            error = ErrorCode.INVALID_PRODUCER_ID_MAPPING
        elif metadata.producer_epoch != producer_epoch:
            error = ErrorCode.PRODUCER_FENCED
        elif metadata.state in _PREPARE:
            error = ErrorCode.CONCURRENT_TRANSACTIONS
        if error is not ErrorCode.NONE or metadata is None:
            return dict.fromkeys(wanted, error)
        # The pending state is ignored: partitions are added only once their record is written.
        return {
            tp: ErrorCode.NONE
            if tp in metadata.topic_partitions
            else ErrorCode.TRANSACTION_ABORTABLE
            for tp in wanted
        }

    # --- EndTxn -------------------------------------------------------------------------------

    def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        tv2: bool,
    ) -> EndTxnResult:
        """EndTxn: write Prepare*, reply, then deliver markers and write Complete*."""
        metadata = self._lookup(transactional_id, ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if isinstance(metadata, ErrorCode):
            return EndTxnResult(metadata)
        try:
            if tv2:
                outcome = self._end_txn_tv2(metadata, producer_id, producer_epoch, committed)
            else:
                outcome = self._end_txn_tv0(metadata, producer_id, producer_epoch, committed)
        except IllegalTransitionError:
            # Only reachable from a corrupted state (e.g. Ongoing at epoch 32767 and a commit,
            # which would overflow); Kafka answers UNKNOWN_SERVER_ERROR too.
            log.exception("EndTxn for %r cannot proceed from %s", transactional_id, metadata)
            return EndTxnResult(ErrorCode.UNKNOWN_SERVER_ERROR)
        if isinstance(outcome, EndTxnResult):
            return outcome
        error = self._write(metadata, outcome)
        if error is not ErrorCode.NONE:
            return EndTxnResult(error)
        complete = self._send_markers(metadata)
        if not tv2:
            return EndTxnResult(ErrorCode.NONE)
        return EndTxnResult(ErrorCode.NONE, complete.producer_id, complete.producer_epoch)

    def _end_txn_tv0(
        self, metadata: TransactionMetadata, producer_id: int, producer_epoch: int, commit: bool
    ) -> TxnTransitMetadata | EndTxnResult:
        if metadata.producer_id != producer_id:
            return EndTxnResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if metadata.producer_epoch != producer_epoch:
            return EndTxnResult(ErrorCode.PRODUCER_FENCED)
        if metadata.pending_transition_in_progress:
            return EndTxnResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        action = end_txn_action(metadata.state, commit, tv2=False)
        if action is EndTxnAction.PREPARE:
            wanted = _S.PREPARE_COMMIT if commit else _S.PREPARE_ABORT
            return metadata.prepare_abort_or_commit(
                wanted, TV_0, NO_PRODUCER_ID, self._clock.now_ms(), False
            )
        return self._answer(metadata, commit, action, EndTxnResult(ErrorCode.NONE))

    def _end_txn_tv2(
        self, metadata: TransactionMetadata, producer_id: int, producer_epoch: int, commit: bool
    ) -> TxnTransitMetadata | EndTxnResult:
        current_id, current_epoch = metadata.producer_id, metadata.producer_epoch
        # A retry after an overflow completed: the client still has (old id, 32766).
        retry_on_overflow = (
            metadata.prev_producer_id == producer_id
            and producer_epoch == MAX_PRODUCER_EPOCH - 1
            and current_epoch == 0
        )
        # A retry whose bumped epoch the client never received.
        retry_on_bump = current_epoch == producer_epoch + 1
        rule = end_txn_epoch_rule(metadata.state)
        if rule is EpochRule.CURRENT:
            valid_epoch = producer_epoch == current_epoch
        elif rule is EpochRule.RETRY:
            valid_epoch = retry_on_bump
        else:
            valid_epoch = retry_on_bump or retry_on_overflow or producer_epoch == current_epoch

        if metadata.pending_transition_in_progress:
            return EndTxnResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if current_id != producer_id and not retry_on_overflow:
            return EndTxnResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if not valid_epoch:
            return EndTxnResult(ErrorCode.PRODUCER_FENCED)

        action = end_txn_action(
            metadata.state, commit, tv2=True, retry=retry_on_bump or retry_on_overflow
        )
        if action is EndTxnAction.PREPARE:
            target = _S.PREPARE_COMMIT if commit else _S.PREPARE_ABORT
            return self._prepare_end_tv2(metadata, target, False)
        if action is EndTxnAction.ABORT_EMPTY:
            return self._prepare_end_tv2(metadata, _S.PREPARE_ABORT, True)
        retried = EndTxnResult(ErrorCode.NONE, current_id, current_epoch)
        return self._answer(metadata, commit, action, retried)

    def _answer(
        self,
        metadata: TransactionMetadata,
        commit: bool,
        action: EndTxnAction,
        done: EndTxnResult,
    ) -> EndTxnResult:
        """The reply of an EndTxn that writes nothing."""
        if action is EndTxnAction.DONE:
            return done
        if action is EndTxnAction.CONCURRENT:
            return EndTxnResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        return self._invalid_state(metadata, commit)

    def _prepare_end_tv2(
        self, metadata: TransactionMetadata, target: TransactionState, no_partition_added: bool
    ) -> TxnTransitMetadata | EndTxnResult:
        next_producer_id = NO_PRODUCER_ID
        if metadata.is_producer_epoch_exhausted:
            # The bump reaches 32767: the producer continues under a new id at epoch 0.
            new_id = self._generate_producer_id()
            if isinstance(new_id, ErrorCode):
                return EndTxnResult(new_id)
            next_producer_id = new_id
        return metadata.prepare_abort_or_commit(
            target, TV_2, next_producer_id, self._clock.now_ms(), no_partition_added
        )

    @staticmethod
    def _invalid_state(metadata: TransactionMetadata, commit: bool) -> EndTxnResult:
        log.warning(
            "%r is %s but received EndTxn(%s)",
            metadata.transactional_id,
            metadata.state.state_name,
            "commit" if commit else "abort",
        )
        return EndTxnResult(ErrorCode.INVALID_TXN_STATE)

    # --- markers ------------------------------------------------------------------------------

    def _send_markers(self, metadata: TransactionMetadata) -> TxnTransitMetadata:
        """Prepare the Complete* transition and deliver the markers that must precede it."""
        result = marker_control_type(metadata.state)
        complete = metadata.prepare_complete(self._clock.now_ms())
        transactional_id = metadata.transactional_id
        self._pending_complete[transactional_id] = complete
        marker = TxnMarker(
            transactional_id=transactional_id,
            producer_id=metadata.producer_id,
            producer_epoch=metadata.producer_epoch,
            coordinator_epoch=self._coordinator_epoch,
            result=result,
            partitions=tuple(sorted(metadata.topic_partitions)),
        )
        self._channel.send(marker, lambda: self._write_txn_completion(transactional_id, complete))
        return complete

    def _write_txn_completion(self, transactional_id: str, complete: TxnTransitMetadata) -> None:
        if self._runtime.closed:
            return
        metadata = self._txns.get(transactional_id)
        if metadata is None or self._pending_complete.get(transactional_id) is not complete:
            log.info("dropping stale completion of %r", transactional_id)
            return
        # Lazily durable (no fsync of its own): every marker it stands for is durable, so a
        # crash that loses it leaves the PrepareCommit/PrepareAbort, whose markers ``load()``
        # sends again (they are idempotent) before writing it anew.  The next record of this
        # log is fsynced and takes it along.
        error = self._write(metadata, complete, keep_pending_on_error=True, lazy=True)
        if error is not ErrorCode.NONE:
            log.warning(
                "writing %s for %r failed with %s; retrying",
                complete.state.state_name,
                transactional_id,
                error.name,
            )
            self._runtime.schedule_once(
                f"complete:{transactional_id}",
                self._retry_backoff_ms,
                lambda: self._write_txn_completion(transactional_id, complete),
            )
            return
        del self._pending_complete[transactional_id]
        self._runtime.forget_timer(f"complete:{transactional_id}")
        log.info(
            "transaction of %r %s (producer id %d, epoch %d)",
            transactional_id,
            "committed" if complete.state is _S.COMPLETE_COMMIT else "aborted",
            complete.producer_id,
            complete.producer_epoch,
        )

    # --- coordinator-initiated aborts ---------------------------------------------------------

    def _fence_and_abort(self, metadata: TransactionMetadata) -> ErrorCode:
        """Bump the epoch past the current producer and abort its transaction."""
        fence = metadata.prepare_fence_producer_epoch()
        transit = metadata.prepare_abort_after_fence(fence, self._tv_level, self._clock.now_ms())
        error = self._write(metadata, transit)
        if error is not ErrorCode.NONE:
            # TV0/1: the fenced epoch stays in force in memory (``has_failed_epoch_fence``).
            return error
        self._send_markers(metadata)
        return ErrorCode.NONE

    def timed_out_transactions(self) -> list[tuple[str, int, int]]:
        """(id, producer id, epoch) of Ongoing, non-2PC transactions past their timeout."""
        now = self._clock.now_ms()
        return [
            (tid, md.producer_id, md.producer_epoch)
            for tid, md in self._txns.items()
            if md.state is _S.ONGOING
            and not md.pending_transition_in_progress
            and not md.two_phase_commit
            and md.txn_start_timestamp + md.txn_timeout_ms < now
        ]

    def abort_timed_out_transactions(self) -> list[str]:
        """Fence and abort every timed-out transaction; returns the ids whose abort started."""
        if self.availability() is not ErrorCode.NONE:
            return []
        aborted: list[str] = []
        for transactional_id, producer_id, _epoch in self.timed_out_transactions():
            metadata = self._txns.get(transactional_id)
            if metadata is None or metadata.producer_id != producer_id:
                continue
            if metadata.pending_transition_in_progress:
                continue
            error = self._fence_and_abort(metadata)
            if error is ErrorCode.NONE:
                log.info("aborted timed-out transaction of %r", transactional_id)
                aborted.append(transactional_id)
                if self.on_timeout_abort is not None:
                    self.on_timeout_abort(transactional_id, producer_id)
            else:
                log.warning("timeout abort of %r failed: %s", transactional_id, error.name)
        return aborted

    def remove_expired_transactional_ids(self) -> list[str]:
        """Tombstone idle ids not used for transactional.id.expiration.ms; returns them."""
        if self.availability() is not ErrorCode.NONE:
            return []
        cutoff = self._clock.now_ms() - self._expiration_ms
        expired = [
            md
            for md in self._txns.values()
            if not md.pending_transition_in_progress
            and md.state in _IDLE
            and md.txn_last_update_timestamp <= cutoff
        ]
        if not expired:
            return []
        transits = [md.prepare_dead() for md in expired]
        records = [
            TxnRecord(md.transactional_id, transit)
            for md, transit in zip(expired, transits, strict=True)
        ]
        error = self._runtime.write(0, lambda _shard: CoordinatorResult(records, ErrorCode.NONE))
        if error is not ErrorCode.NONE:
            for md in expired:
                md.abort_pending()
            log.warning("expiring transactional ids failed: %s", error.name)
            return []
        for md in expired:
            self._txn_producer_ids.difference_update((md.producer_id, md.prev_producer_id))
        return [md.transactional_id for md in expired]

    def force_terminate(self, transactional_id: str) -> EndTxnResult:
        """Fence the id's producer and abort its transaction, 2PC or not (recovery tool).

        Like Kafka's Admin.forceTerminateTransaction: returns CONCURRENT_TRANSACTIONS while an
        abort is starting or in progress -- call again until NONE, which carries the new
        (producer id, epoch) that fenced every earlier producer.
        """
        metadata = self._lookup(transactional_id, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
        if isinstance(metadata, ErrorCode):
            return EndTxnResult(metadata)
        if metadata.pending_transition_in_progress or metadata.state in _PREPARE:
            return EndTxnResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if metadata.state is _S.ONGOING:
            error = self._fence_and_abort(metadata)
            return EndTxnResult(
                ErrorCode.CONCURRENT_TRANSACTIONS if error is ErrorCode.NONE else error
            )
        prepared = self._prepare_new_epoch(
            metadata, metadata.txn_timeout_ms, None, metadata.two_phase_commit
        )
        transit = self._write_prepared(metadata, prepared)
        if isinstance(transit, ErrorCode):
            return EndTxnResult(transit)
        return EndTxnResult(ErrorCode.NONE, transit.producer_id, transit.producer_epoch)

    # --- List / Describe / views --------------------------------------------------------------

    def open_transaction_count(self) -> int:
        """Transactions in Ongoing or a Prepare* state (a metric; read from any thread)."""
        open_states = (_S.ONGOING, _S.PREPARE_COMMIT, _S.PREPARE_ABORT, _S.PREPARE_EPOCH_FENCE)
        return sum(1 for md in list(self._txns.values()) if md.state in open_states)

    def list_transactions(
        self,
        state_filters: Iterable[str] = (),
        producer_id_filters: Iterable[int] = (),
        duration_filter_ms: int = -1,
    ) -> list[TransactionListing]:
        """ListTransactions (KIP-664, KIP-939's running-longer-than filter), sorted by id.

        Unknown state names match nothing (the response lists them as unknown_state_filters);
        the response error is ``availability()``.
        """
        if self.availability() is not ErrorCode.NONE:
            return []
        names = list(state_filters)
        states = {s for s in map(TransactionState.from_name, names) if s is not None}
        producer_ids = set(producer_id_filters)
        now = self._clock.now_ms()
        listings = [
            TransactionListing(tid, md.producer_id, md.state.state_name)
            for tid, md in sorted(self._txns.items())
            if md.state is not _S.DEAD
            and (not producer_ids or md.producer_id in producer_ids)
            and (not names or md.state in states)
            and not (duration_filter_ms >= 0 and now - md.txn_start_timestamp <= duration_filter_ms)
        ]
        return listings

    def describe_transactions(
        self, transactional_ids: Iterable[str]
    ) -> list[TransactionDescription]:
        """DescribeTransactions: one description (or error) per id."""
        return [self._describe(tid) for tid in transactional_ids]

    def _describe(self, transactional_id: str) -> TransactionDescription:
        if (error := self.availability()) is not ErrorCode.NONE:
            return TransactionDescription(transactional_id, error)
        if not transactional_id:
            return TransactionDescription(transactional_id, ErrorCode.INVALID_REQUEST)
        metadata = self._txns.get(transactional_id)
        if metadata is None or metadata.state is _S.DEAD:
            return TransactionDescription(transactional_id, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
        return TransactionDescription(
            transactional_id=transactional_id,
            error=ErrorCode.NONE,
            state=metadata.state.state_name,
            producer_id=metadata.producer_id,
            producer_epoch=metadata.producer_epoch,
            transaction_timeout_ms=metadata.txn_timeout_ms,
            transaction_start_time_ms=metadata.txn_start_timestamp,
            partitions=tuple(sorted(metadata.topic_partitions)),
        )

    def transaction_view(self, transactional_id: str) -> TransactionView | None:
        """A read-only snapshot of one id, or None if the coordinator does not know it."""
        metadata = self._txns.get(transactional_id)
        if metadata is None:
            return None
        return transaction_view(metadata, self._channel.pending().get(transactional_id, ()))

    def transaction_views(self) -> list[TransactionView]:
        """Snapshots of every known id, sorted by transactional id."""
        views = (self.transaction_view(tid) for tid in sorted(self._txns))
        return [v for v in views if v is not None]

    def transaction_partitions(self, transactional_id: str) -> frozenset[TopicPartition]:
        """The partitions of the id's current transaction (empty if none or unknown)."""
        metadata = self._txns.get(transactional_id)
        return metadata.topic_partitions if metadata is not None else frozenset()

    # --- internals ----------------------------------------------------------------------------

    def _lookup(self, transactional_id: str, unknown: ErrorCode) -> TransactionMetadata | ErrorCode:
        """The id's metadata, or the error for an empty id, an unavailable coordinator, or
        (``unknown``) an id it does not know."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        if (error := self.availability()) is not ErrorCode.NONE:
            return error
        metadata = self._txns.get(transactional_id)
        return unknown if metadata is None else metadata

    def _generate_producer_id(self, *, transactional: bool = True) -> int | ErrorCode:
        try:
            producer_id = self._producer_ids.generate_producer_id()
        except Exception:
            log.exception("producer id allocation failed")
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if transactional:
            self._txn_producer_ids.add(producer_id)
        return producer_id

    def is_transactional_producer(self, producer_id: int) -> bool:
        """Whether ``producer_id`` was issued to a transactional id (Produce binds it)."""
        return producer_id in self._txn_producer_ids

    def _write(
        self,
        metadata: TransactionMetadata,
        transit: TxnTransitMetadata,
        *,
        keep_pending_on_error: bool = False,
        lazy: bool = False,
    ) -> ErrorCode:
        """Write ``transit``; replay completes it.  A failed write drops the pending state
        (in memory only) unless a retry will follow.  ``lazy``: no fsync of its own
        (``CoordinatorRuntime.write``)."""
        record = TxnRecord(metadata.transactional_id, transit)
        error = self._runtime.write(
            0, lambda _shard: CoordinatorResult([record], ErrorCode.NONE), lazy=lazy
        )
        if error is not ErrorCode.NONE and not keep_pending_on_error:
            metadata.abort_pending()
        return error

    def _write_prepared(
        self, metadata: TransactionMetadata, prepared: TxnTransitMetadata | ErrorCode
    ) -> TxnTransitMetadata | ErrorCode:
        """Write a prepared transit: the written transit, or the error of preparing or writing."""
        if isinstance(prepared, ErrorCode):
            return prepared
        error = self._write(metadata, prepared)
        return prepared if error is ErrorCode.NONE else error
