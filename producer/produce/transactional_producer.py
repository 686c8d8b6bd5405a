"""``TransactionalProducer``: Kafka's transactional producer, plus KIP-1289 and KIP-939/1310.

A blocking, thread-safe client with the Java producer's method names in snake case
(DESIGN section 5).  ``send`` appends to a per-partition batch and returns a
``concurrent.futures.Future`` of ``RecordMetadata``; a background sender thread
(``producer/produce/sender.py``) produces batches with idempotent sequences.  Transaction control
(InitProducerId, AddShareAcksToTxn, EndTxn) and TxnShareAcknowledge run in the caller's
thread, retried within the caller's deadline (``timeout_s``, default ``max.block.ms``).

The client-side state machine (``producer/produce/txn_manager.py``) decides what may be called
when: misuse raises ``IllegalStateError``; after an abortable error only
``abort_transaction`` is allowed; after a fatal error (e.g. ``ProducerFencedError``) every
call re-raises it and the producer must be closed.

Versions spoken: Produce v3-v10, InitProducerId up to v6 (v6 only when 2PC or
keep_prepared_txn is asked for), AddPartitionsToTxn v0-v3 and EndTxn v0-v4 (transaction
version 0/1: the epoch is not bumped by EndTxn), AddShareAcksToTxn v0, TxnShareAcknowledge v0.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import Any, Self

from producer.produce.accumulator import RecordMetadata
from producer.produce.prepared_txn import (
    classify,
    decide_enable2pc,
    describe_transaction,
    enable2pc_refused,
    init_producer_id_request,
    keep_prepared_unavailable,
    keeps_prepared,
    mismatch_error,
    warn_timeout_bounded,
)
from producer.produce.producer_config import ProducerConfig
from producer.produce.producer_core import ProducerCore
from producer.produce.sender import fenced_or_typed
from producer.produce.txn_group_requests import (
    remaining_ms,
    txn_offset_commit,
    txn_share_acknowledge,
)
from producer.produce.txn_manager import (
    FATAL_CODES,
    DifferentPreparedTransactionError,
    IllegalStateError,
    NoPreparedTransactionError,
    Operation,
    PreparedTransactionAbortedError,
    PreparedTransactionCommittedError,
    PreparedTransactionMismatchError,
    TransactionAbortedError,
    TwoPhaseCommitUnavailableError,
    TxnState,
    UnsupportedOperationError,
)
from producer.protocol.types import (
    ConsumerGroupMetadata,
    PreparedTxnState,
    ShareAcknowledgements,
    ShareGroupMetadata,
)
from txn.api_keys import ApiKey
from txn.errors import (
    ErrorCode,
    KafkaProtocolError,
    NetworkError,
    RequestTimedOutError,
    RetriableError,
    TransactionalIdAuthorizationFailedError,
    UnsupportedVersionError,
)
from txn.ids import (
    KEY_TYPE_TRANSACTION,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TopicPartition,
)

__all__ = [
    "DifferentPreparedTransactionError",
    "IllegalStateError",
    "NoPreparedTransactionError",
    "PreparedTransactionAbortedError",
    "PreparedTransactionCommittedError",
    "PreparedTransactionMismatchError",
    "ProducerConfig",
    "RecordMetadata",
    "TransactionAbortedError",
    "TransactionalProducer",
    "TwoPhaseCommitUnavailableError",
    "TxnState",
    "UnsupportedOperationError",
]

log = logging.getLogger("sharetxn.producer")


# Errors of coordinator requests after which the producer can only be closed (as Java's
# AddPartitionsToTxn/EndTxn handlers: a bad transaction state or id mapping is not abortable).
_COORDINATOR_FATAL = FATAL_CODES | {
    ErrorCode.INVALID_TXN_STATE,
    ErrorCode.INVALID_PRODUCER_ID_MAPPING,
}

# Kafka config name -> default (None: no default).


class TransactionalProducer(ProducerCore):
    """A Kafka producer with transactions, share acknowledgements in transactions and 2PC.

    Without ``transactional.id`` it is an idempotent (``enable.idempotence=true``, the
    default) or plain producer and only ``send``/``flush``/``close`` apply.  ``client`` lets a
    caller share a ``KafkaClient`` (the producer then does not close it); tests pass a fake.
    """

    # -- introspection ----------------------------------------------------------------------

    @property
    def transactional_id(self) -> str | None:
        return self.config.transactional_id

    @property
    def transaction_state(self) -> TxnState:
        """The client-side transaction state (UNINITIALIZED ... FATAL_ERROR)."""
        return self._txn.state

    @property
    def producer_id_and_epoch(self) -> tuple[int, int]:
        return self._txn.producer_id_and_epoch

    @property
    def two_phase_commit_protocol(self) -> str | None:
        """How prepared transactions of this producer are kept, once initialised.

        ``"enable2pc"`` (KIP-939: the coordinator never times them out), ``"timeout"`` (the
        coordinator aborts one that stays open past ``transaction.timeout.ms``), or None
        (not a 2PC producer, or not initialised yet).
        """
        if not self.config.two_phase_commit or self._enable2pc is None:
            return None
        return "enable2pc" if self._enable2pc else "timeout"

    @property
    def resumed_by_stored_ids(self) -> bool:
        """Whether ``resume`` took the transaction over by its stored ids (no KIP-939)."""
        return self._resumed_by_stored_ids

    # -- sending ----------------------------------------------------------------------------

    # -- transactions -----------------------------------------------------------------------

    def init_transactions(
        self, keep_prepared_txn: bool = False, timeout_s: float | None = None
    ) -> None:
        """InitProducerId for ``transactional.id``: fences older producers of the id.

        Without ``keep_prepared_txn`` an open transaction of the id is aborted (after the
        coordinator fenced its producer).  With it (KIP-939) an ongoing transaction is kept
        and this producer enters PREPARED with that transaction's (producer id, epoch), so
        ``commit_transaction``, ``abort_transaction`` or ``complete_transaction`` can finish
        it; with none ongoing the producer is READY.  A timeout leaves the producer
        UNINITIALIZED, so the call can be repeated.
        """
        self._initialize(keep_prepared_txn, self._deadline(timeout_s))

    def _initialize(self, keep_prepared_txn: bool, deadline: float) -> tuple[int, int] | None:
        """Run init; returns the (producer id, epoch) of a kept ongoing transaction, if any."""
        with self._lock:
            self._check_allowed(Operation.INIT_TRANSACTIONS)
            self._txn.transition(TxnState.INITIALIZING)
            try:
                resp = self._init_producer_id(keep_prepared_txn, deadline)
            except RetriableError:
                self._txn.transition(TxnState.UNINITIALIZED)
                raise
            except (KafkaProtocolError, TwoPhaseCommitUnavailableError) as exc:
                self._txn.fatal_error(exc)
                raise
            ongoing_pid = int(getattr(resp, "ongoing_txn_producer_id", NO_PRODUCER_ID))
            ongoing_epoch = int(getattr(resp, "ongoing_txn_producer_epoch", NO_PRODUCER_EPOCH))
            if keep_prepared_txn and ongoing_pid != NO_PRODUCER_ID:
                self._txn.set_producer_id_and_epoch(ongoing_pid, ongoing_epoch)
                self._txn.mark_started_elsewhere()
                self._txn.request_epoch_bump()  # its sequence numbers are not known here
                self._txn.transition(TxnState.PREPARED)
                return ongoing_pid, ongoing_epoch
            self._txn.set_producer_id_and_epoch(int(resp.producer_id), int(resp.producer_epoch))
            self._txn.transition(TxnState.READY)
            return None

    def _init_producer_id(
        self, keep_prepared_txn: bool, deadline: float, current: tuple[int, int] | None = None
    ) -> Any:
        enable2pc = self._wants_enable2pc()
        body, min_version = init_producer_id_request(
            self.config, enable2pc=enable2pc, keep_prepared_txn=keep_prepared_txn, current=current
        )
        try:
            return self._coordinator_request(
                ApiKey.INIT_PRODUCER_ID, body, deadline, min_version=min_version
            )
        except TransactionalIdAuthorizationFailedError as exc:
            # KIP-939: a broker without transaction.two.phase.commit.enable (or a principal
            # without the TWO_PHASE_COMMIT ACL) refuses Enable2Pc with this error.
            if not enable2pc:
                raise
            if self.config.prepare_mode == "enable2pc":
                raise enable2pc_refused(self.config.transactional_id) from exc
            self._enable2pc = False
            warn_timeout_bounded(self.config, "the coordinator refused Enable2Pc")
            return self._init_producer_id(keep_prepared_txn, deadline, current)

    def _wants_enable2pc(self) -> bool:
        """Whether InitProducerId asks for KIP-939's Enable2Pc (decided once per producer)."""
        if self._enable2pc is None:
            self._enable2pc = decide_enable2pc(self.config, self._client)
        return self._enable2pc

    def begin_transaction(self) -> None:
        """Start a transaction (local only; the coordinator learns of it with the first add).

        A producer that finished a transaction resumed by stored ids first moves to a new
        epoch (InitProducerId, KIP-360), which it left until now so that the finished
        transaction stays visible under its ids (DescribeTransactions) to whoever checks.
        """
        with self._lock:
            self._check_allowed(Operation.BEGIN_TRANSACTION)
            if self._txn.needs_epoch_bump:
                try:
                    self._bump_epoch(self._deadline(None))
                except KafkaProtocolError as exc:
                    if not isinstance(exc, RetriableError):
                        self._txn.fatal_error(exc)
                    raise
            self._txn.clear_transaction()
            self._txn.transition(TxnState.IN_TRANSACTION)

    def send_share_acks_to_transaction(
        self,
        acks: ShareAcknowledgements,
        group_metadata: ShareGroupMetadata,
        timeout_s: float | None = None,
    ) -> None:
        """Make share acknowledgements part of the open transaction (KIP-1289).

        AddShareAcksToTxn (the coordinator adds each pair's ``__share_group_state``
        partition), then TxnShareAcknowledge to the leader of each data partition, grouped
        by leader, with the member id of ``group_metadata``; the records become TX_PENDING
        until the transaction ends.  INVALID_RECORD_STATE / INVALID_TXN_STATE (or an unknown
        outcome at the deadline) make the transaction abortable; PRODUCER_FENCED is fatal.
        A retriable failure of AddShareAcksToTxn at the deadline changes nothing, so the
        call may be repeated.
        """
        if acks.group_id != group_metadata.group_id:
            msg = (
                f"acknowledgements of group {acks.group_id!r} cannot be sent with the metadata "
                f"of group {group_metadata.group_id!r}"
            )
            raise ValueError(msg)
        batches = {tp: bs for tp, bs in acks.batches.items() if bs}
        for tp, bs in batches.items():
            for b in bs:
                if b.first_offset > b.last_offset or b.first_offset < 0:
                    msg = f"bad acknowledgement range {b.first_offset}..{b.last_offset} on {tp}"
                    raise ValueError(msg)
        deadline = self._deadline(timeout_s)
        with self._lock:
            self._check_allowed(Operation.SEND_SHARE_ACKS)
            # KIP-1289 "clients fail fast": nothing is sent and the transaction is unchanged.
            self._client.require_kip1289(ApiKey.ADD_SHARE_ACKS_TO_TXN)
            self._client.require_kip1289(ApiKey.TXN_SHARE_ACKNOWLEDGE)
            if not batches:
                return
            topics: dict[str, list[int]] = {}
            for tp in sorted(batches):
                topics.setdefault(tp.topic, []).append(tp.partition)
            tid = self._add_group_to_txn(
                ApiKey.ADD_SHARE_ACKS_TO_TXN,
                group_metadata.group_id,
                deadline,
                topics=[{"name": t, "partitions": ps} for t, ps in topics.items()],
            )
            try:
                txn_share_acknowledge(
                    self._client, self._txn, tid, batches, group_metadata, deadline
                )
            except KafkaProtocolError as exc:
                # A retriable error here means the outcome is unknown: abort to be safe.
                self._on_coordinator_error(exc, FATAL_CODES)
                raise

    def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, int],
        group_metadata: ConsumerGroupMetadata | str,
        timeout_s: float | None = None,
    ) -> None:
        """Commit consumer-group offsets with the open transaction (KIP-98, KIP-447).

        AddOffsetsToTxn (the coordinator adds the group's ``__consumer_offsets`` partition),
        then TxnOffsetCommit to the group coordinator: the offsets become the group's
        committed offsets when the transaction commits and are discarded when it aborts.
        ``offsets`` are the next offsets to read, as Kafka's clients commit them.  A stale
        generation or member (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID)
        makes the transaction abortable; PRODUCER_FENCED is fatal.
        """
        meta = (
            ConsumerGroupMetadata(group_metadata)
            if isinstance(group_metadata, str)
            else group_metadata
        )
        if not meta.group_id:
            msg = "send_offsets_to_transaction needs a group id"
            raise ValueError(msg)
        for tp, offset in offsets.items():
            if offset < 0:
                msg = f"bad offset {offset} for {tp}"
                raise ValueError(msg)
        deadline = self._deadline(timeout_s)
        with self._lock:
            self._check_allowed(Operation.SEND_OFFSETS)
            if not offsets:
                return
            tid = self._add_group_to_txn(ApiKey.ADD_OFFSETS_TO_TXN, meta.group_id, deadline)
            pid, epoch = self._txn.producer_id_and_epoch
            try:
                txn_offset_commit(self._client, dict(offsets), meta, tid, pid, epoch, deadline)
            except KafkaProtocolError as exc:
                self._on_coordinator_error(exc, FATAL_CODES)
                raise

    def _add_group_to_txn(
        self, api_key: ApiKey, group_id: str, deadline: float, **extra: Any
    ) -> str | None:
        """AddOffsetsToTxn / AddShareAcksToTxn: the coordinator adds the group's partition.

        A retriable failure changes nothing (the call may be repeated); other errors are
        fatal or abortable as for AddPartitionsToTxn.  Returns the transactional id.
        """
        tid = self.config.transactional_id
        pid, epoch = self._txn.producer_id_and_epoch
        body = {
            "transactional_id": tid,
            "producer_id": pid,
            "producer_epoch": epoch,
            "group_id": group_id,
            **extra,
        }
        try:
            self._coordinator_request(api_key, body, deadline, group_id=group_id)
        except RetriableError:
            raise
        except KafkaProtocolError as exc:
            self._on_coordinator_error(exc, _COORDINATOR_FATAL)
            raise
        self._txn.share_acks_added()  # the coordinator now has a partition of this txn
        return tid

    def prepare_transaction(self, timeout_s: float | None = None) -> PreparedTxnState:
        """Phase one of 2PC (KIP-939): flush, then allow only commit/abort/complete.

        Needs ``transaction.two.phase.commit.enable=true`` (the coordinator then never
        times the transaction out).  Store ``str(state)`` with your own decision.  Once the
        transaction is completed the producer moves to a new epoch, so a later prepared
        transaction of this producer has a different state.
        """
        deadline = self._deadline(timeout_s)
        with self._lock:
            self._check_allowed(Operation.PREPARE_TRANSACTION)
        while True:
            # Flush without the lock (a delivery callback may call send); then, under the
            # lock that send takes too, make sure nothing was added meanwhile.
            self._flush_until(deadline)
            with self._lock:
                self._check_allowed(Operation.PREPARE_TRANSACTION)
                if self._acc.has_incomplete():
                    continue
                self._txn.transition(TxnState.PREPARED)
                # Under transaction version 0/1 EndTxn keeps the epoch, so two transactions of
                # one session would share (pid, epoch); a new epoch after this one completes
                # makes every PreparedTxnState name exactly one transaction.
                self._txn.request_epoch_bump()
                pid, epoch = self._txn.producer_id_and_epoch
                tid = self.config.transactional_id
                assert tid is not None
                return PreparedTxnState(tid, pid, epoch)

    def commit_transaction(self, timeout_s: float | None = None) -> None:
        """Flush and commit.  On a retriable timeout the producer stays COMMITTING: call again.

        A record that failed (or the transaction being fenced) raises its error instead: the
        transaction must then be aborted (or, after a fatal error, the producer closed).
        """
        deadline = self._deadline(timeout_s)
        with self._lock:
            self._check_allowed(Operation.COMMIT_TRANSACTION)
            if self._txn.state is not TxnState.COMMITTING:
                self._txn.transition(TxnState.COMMITTING)
        # COMMITTING refuses new sends; flush without the lock (callbacks may call send).
        self._flush_until(deadline)
        with self._lock:
            self._ensure_open()
            self._txn.raise_if_error()
            if self._txn.state is not TxnState.COMMITTING:
                return  # a concurrent commit_transaction finished it
            pid, epoch = self._txn.producer_id_and_epoch
            try:
                self._end_transaction(commit=True, deadline=deadline)
            except RetriableError:
                raise
            except KafkaProtocolError as exc:
                self._on_coordinator_error(exc, _COORDINATOR_FATAL)
                aborted = self._aborted_meanwhile(exc, pid, epoch, deadline)
                if aborted is None:
                    raise
                self._txn.fatal_error(aborted)
                raise aborted from exc
            self._txn.clear_transaction()
            self._txn.transition(TxnState.READY)

    def _aborted_meanwhile(
        self, exc: KafkaProtocolError, pid: int, epoch: int, deadline: float
    ) -> PreparedTransactionAbortedError | None:
        """After a refused commit: the typed error if the coordinator aborted the transaction.

        A transaction kept without KIP-939's Enable2Pc is aborted by the coordinator once
        it has been open for ``transaction.timeout.ms``, and under the transaction-version-1
        protocol that abort moves the epoch on, so the late EndTxn(commit) is refused as
        fenced.  DescribeTransactions tells that apart from other refusals.
        """
        fenced = {
            ErrorCode.PRODUCER_FENCED,
            ErrorCode.INVALID_PRODUCER_EPOCH,
            ErrorCode.INVALID_TXN_STATE,
        }
        tid = self.config.transactional_id
        if exc.code not in fenced or tid is None:
            return None
        try:
            desc = describe_transaction(self._client, tid, remaining_ms(deadline))
        except (KafkaProtocolError, AttributeError, TypeError):
            return None  # not a KafkaClient, or no answer: keep the coordinator's error
        error = mismatch_error(classify(desc, pid, epoch), tid, pid, epoch)
        return error if isinstance(error, PreparedTransactionAbortedError) else None

    def abort_transaction(self, timeout_s: float | None = None) -> None:
        """Abort: unsent records fail with TransactionAbortedError, sent ones are discarded
        by the abort marker, share acks revert.  On a retriable timeout the producer stays
        ABORTING: call again.
        """
        self._ensure_open()
        self._abort(self._deadline(timeout_s))

    def _abort(self, deadline: float) -> None:
        with self._lock:
            self._txn.check(Operation.ABORT_TRANSACTION)
            cause = self._txn.last_error
            if self._txn.state is not TxnState.ABORTING:
                self._txn.transition(TxnState.ABORTING)
            aborted = TransactionAbortedError(
                "record not sent: its transaction was aborted",
                transactional_id=self.config.transactional_id,
                cause=str(cause) if cause is not None else "",
            )
            for batch in self._acc.take_undrained():
                self._acc.fail(batch, aborted)
        self._flush_until(deadline)  # the batch in flight, if any
        with self._lock:
            if self._txn.state is not TxnState.ABORTING:
                self._txn.raise_if_error()
                return  # a concurrent abort_transaction finished it
            try:
                self._end_transaction(commit=False, deadline=deadline)
            except RetriableError:
                raise
            except KafkaProtocolError as exc:
                self._txn.fatal_error(exc)
                raise
            self._txn.clear_transaction()
            self._txn.transition(TxnState.READY)

    def complete_transaction(self, state: PreparedTxnState, timeout_s: float | None = None) -> bool:
        """KIP-939: commit the prepared transaction if ``state`` is it, else abort it.

        Returns True if it committed.  Needs the producer in PREPARED (after
        ``prepare_transaction``, ``init_transactions(keep_prepared_txn=True)`` or ``resume``).
        """
        with self._lock:
            self._check_allowed(Operation.COMPLETE_TRANSACTION)
            matches = (
                state.transactional_id == self.config.transactional_id
                and (state.producer_id, state.epoch) == self._txn.producer_id_and_epoch
            )
        if matches:
            self.commit_transaction(timeout_s)
        else:
            log.info(
                "aborting prepared transaction of %r: %s is not the prepared %s",
                self.config.transactional_id,
                state,
                self._txn.producer_id_and_epoch,
            )
            self.abort_transaction(timeout_s)
        return matches

    @classmethod
    def resume(
        cls,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        config: Mapping[str, Any],
        *,
        timeout_s: float | None = None,
    ) -> TransactionalProducer:
        """Take over the prepared transaction (``producer_id``, ``epoch``) of an id.

        The returned producer is PREPARED, so ``commit_transaction`` / ``abort_transaction``
        finish the transaction.  Two ways, chosen by ``sharetxn.resume.mode``
        (``producer/produce/prepared_txn.py``): KIP-939/KIP-1310's InitProducerId with
        KeepPreparedTxn where the coordinator implements it, else the stored ids as they
        are (no InitProducerId, which would abort the transaction; ``resumed_by_stored_ids``
        is then True).

        Raises ``NoPreparedTransactionError`` if the id has no ongoing transaction any more
        -- as its subclasses ``PreparedTransactionCommittedError`` or
        ``PreparedTransactionAbortedError`` when the coordinator still shows which way it
        ended -- and ``DifferentPreparedTransactionError`` if the ongoing one is another
        transaction (the prepared one was fenced meanwhile).  With ``keep-prepared`` forced
        on a cluster without it: ``TwoPhaseCommitUnavailableError``.
        """
        settings = dict(config)
        configured = settings.get("transactional.id")
        if configured is not None and configured != transactional_id:
            msg = f"config transactional.id {configured!r} differs from {transactional_id!r}"
            raise ValueError(msg)
        settings["transactional.id"] = transactional_id
        settings["transaction.two.phase.commit.enable"] = True
        producer = cls(settings)
        try:
            deadline = producer._deadline(timeout_s)
            # Look before taking over: an InitProducerId (even with KeepPreparedTxn) on a
            # transaction that is not open any more would move the epoch on and hide how
            # it ended.
            producer._check_stored_ids(producer_id, epoch, deadline)
            if keeps_prepared(producer.config, producer._client):
                try:
                    producer._resume_keeping_prepared(producer_id, epoch, deadline)
                except UnsupportedVersionError as exc:
                    if producer.config.resume_mode == "keep-prepared":
                        raise keep_prepared_unavailable(transactional_id, exc) from exc
                    log.info(
                        "the coordinator of %r refused KeepPreparedTxn (%s): resuming by the "
                        "stored producer id and epoch",
                        transactional_id,
                        exc,
                    )
                    producer.close()
                    producer = cls(settings)
                else:
                    return producer
            producer._resume_by_stored_ids(producer_id, epoch, deadline)
        except BaseException:
            producer.close()
            raise
        return producer

    def _check_stored_ids(self, producer_id: int, epoch: int, deadline: float) -> None:
        """Raise the typed error unless the transaction is open under the stored ids.

        Skipped for a client that cannot send DescribeTransactions (a test double).
        """
        tid = self.config.transactional_id
        assert tid is not None
        if getattr(self._client, "_connection", None) is None:
            return
        desc = describe_transaction(self._client, tid, remaining_ms(deadline))
        error = mismatch_error(classify(desc, producer_id, epoch), tid, producer_id, epoch)
        if error is not None:
            raise error

    def _resume_keeping_prepared(self, producer_id: int, epoch: int, deadline: float) -> None:
        tid = self.config.transactional_id
        assert tid is not None
        found = self._initialize(True, deadline)
        if found is None:
            raise NoPreparedTransactionError(
                transactional_id=tid,
                producer_id=producer_id,
                epoch=epoch,
                found_producer_id=self._txn.producer_id_and_epoch[0],
                found_epoch=self._txn.producer_id_and_epoch[1],
            )
        if found != (producer_id, epoch):
            raise DifferentPreparedTransactionError(
                transactional_id=tid,
                producer_id=producer_id,
                epoch=epoch,
                found_producer_id=found[0],
                found_epoch=found[1],
            )

    def _resume_by_stored_ids(self, producer_id: int, epoch: int, deadline: float) -> None:
        """Flink's way: check the transaction is open under the ids, then adopt them.

        No InitProducerId is sent (it would abort the transaction); EndTxn with these ids
        finishes it.  After it, the epoch is bumped (KIP-360) before any new transaction,
        as for a KeepPreparedTxn take-over: the broker's sequence numbers are unknown here.
        """
        self._check_stored_ids(producer_id, epoch, deadline)
        with self._lock:
            self._check_allowed(Operation.INIT_TRANSACTIONS)
            self._txn.transition(TxnState.INITIALIZING)
            self._txn.set_producer_id_and_epoch(producer_id, epoch)
            self._txn.mark_started_elsewhere()
            self._txn.request_epoch_bump()
            self._txn.transition(TxnState.PREPARED)
            self._resumed_by_stored_ids = True

    # -- closing ----------------------------------------------------------------------------

    def close(self, timeout_s: float | None = None) -> None:
        """Send what is queued, then stop.  An open (not prepared) transaction is aborted,
        best effort, as the Java client does; a prepared one is left for its coordinator.
        """
        with self._lock:
            if self._closed:
                return
        deadline = self._deadline(timeout_s)
        if self._txn.is_transactional and self._txn.state in (
            TxnState.IN_TRANSACTION,
            TxnState.ABORTABLE_ERROR,
        ):
            try:
                self._abort(deadline)
            except Exception as exc:
                log.warning("abort on close of %r failed: %s", self.transactional_id, exc)
        with self._lock:
            if self._is_closed():  # a concurrent close won
                return
            self._closed = True
        self._shutdown(deadline)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Commit an open transaction on success, abort it on error, then close."""
        try:
            self._finish_on_exit(exc)
        finally:
            self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Self]:
        """``with producer.transaction():`` begins, then commits on success or aborts on error.

        A transaction prepared inside the block is left prepared for its coordinator.
        """
        self.begin_transaction()
        try:
            yield self
        except BaseException as exc:
            self._finish_on_exit(exc)
            raise
        self._finish_on_exit(None)

    def _finish_on_exit(self, exc: BaseException | None) -> None:
        if not self._txn.is_transactional or self._closed:
            return
        state = self._txn.state
        if exc is None:
            if state is TxnState.IN_TRANSACTION:
                self.commit_transaction()
            return
        if state in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR):
            try:
                self.abort_transaction()
            except Exception as abort_exc:
                log.warning("abort after %r failed: %s", exc, abort_exc)

    # -- helpers ----------------------------------------------------------------------------

    def _end_transaction(self, *, commit: bool, deadline: float) -> None:
        """EndTxn if the coordinator knows the transaction, then a new epoch if one is due.

        The epoch is bumped (InitProducerId with the current id and epoch, KIP-360) when a
        batch's fate was unknown, or when the transaction was taken over from another
        process (keep_prepared_txn / resume): either way the broker's sequence numbers for
        this epoch are unknown here, and a new epoch restarts them at 0.  It is bumped too
        when an EndTxn or TxnShareAcknowledge of this transaction went unanswered: that copy
        may still reach the broker later, and under transaction version 0/1 the epoch stays
        across transactions, so it would commit, abort or stage acknowledgements in the *next*
        transaction (KAFKA-17754).  The EndTxn itself is re-sent unchanged until it gets a
        definite answer (CONCURRENT_TRANSACTIONS is retried); the next transaction can only
        begin after that answer and the bump.
        """
        if self._txn.transaction_started:
            self._end_txn(commit=commit, deadline=deadline)
            # The EndTxn has its definite answer: a call repeated after the bump below timed
            # out must not send it again (the epoch may have moved on meanwhile).
            self._txn.clear_transaction()
        if self._txn.needs_epoch_bump and not self._resumed_by_stored_ids:
            self._bump_epoch(deadline)

    def _bump_epoch(self, deadline: float) -> None:
        resp = self._init_producer_id(False, deadline, current=self._txn.producer_id_and_epoch)
        self._txn.set_producer_id_and_epoch(int(resp.producer_id), int(resp.producer_epoch))

    def _end_txn(self, *, commit: bool, deadline: float) -> None:
        pid, epoch = self._txn.producer_id_and_epoch
        body = {
            "transactional_id": self.config.transactional_id,
            "producer_id": pid,
            "producer_epoch": epoch,
            "committed": commit,
        }
        self._coordinator_request(ApiKey.END_TXN, body, deadline)

    def _coordinator_request(
        self,
        api_key: ApiKey,
        body: Mapping[str, Any],
        deadline: float,
        *,
        min_version: int = 0,
        **extra_ids: Any,
    ) -> Any:
        """One request to the transaction coordinator, retried until ``deadline``."""
        tid = self.config.transactional_id
        assert tid is not None
        ids = {**self._txn.describe(), **extra_ids}

        def attempt() -> Any:
            node = self._client.coordinator_for(KEY_TYPE_TRANSACTION, tid)
            try:
                resp = self._client.send(node, api_key, body, min_version=min_version)
            except (NetworkError, RequestTimedOutError):
                if api_key == ApiKey.END_TXN:
                    self._txn.request_epoch_bump()  # this copy may still land (see above)
                raise
            code = int(resp.error_code)
            if code != ErrorCode.NONE:
                if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
                    self._client.forget_coordinator(KEY_TYPE_TRANSACTION, tid)
                raise fenced_or_typed(code, None, api_key=int(api_key), **ids)
            return resp

        return self._client.call(attempt, timeout_ms=remaining_ms(deadline))

    def _on_coordinator_error(
        self, exc: KafkaProtocolError, fatal_codes: frozenset[ErrorCode]
    ) -> None:
        if exc.code in fatal_codes:
            self._txn.fatal_error(exc)
        else:
            self._txn.abortable_error(exc)
