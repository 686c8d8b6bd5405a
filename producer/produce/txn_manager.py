"""The producer's transaction manager: a state machine as a table, with no I/O.

It mirrors the Java client's ``TransactionManager``: the producer id and epoch, the
per-partition sequence numbers of the idempotent producer, the partitions added to the
current transaction, and the client-side transaction state.  Every transition goes through
``TRANSITIONS`` and every public producer call through one guard, ``check``, driven by
``ALLOWED``.  Misuse raises ``IllegalStateError``; after an abortable error every call but
``abort_transaction`` re-raises that error, and after a fatal error every call re-raises the
fatal error.  The I/O that moves the machine lives in ``sender.py`` and
``transactional_producer.py``; keeping it out of here lets the table be tested alone.
"""

from __future__ import annotations

import threading
from enum import Enum
from typing import Any, Final

from txn.errors import ErrorCode, IllegalStateError, SharetxnError
from txn.ids import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TopicPartition
from txn.limits import next_sequence

__all__ = [
    "ABORTABLE_CODES",
    "ALLOWED",
    "FATAL_CODES",
    "TRANSITIONS",
    "DifferentPreparedTransactionError",
    "IllegalStateError",
    "NoPreparedTransactionError",
    "Operation",
    "PreparedTransactionAbortedError",
    "PreparedTransactionCommittedError",
    "PreparedTransactionMismatchError",
    "TransactionAbortedError",
    "TransactionManager",
    "TwoPhaseCommitUnavailableError",
    "TxnState",
    "UnsupportedOperationError",
]


class TransactionAbortedError(SharetxnError):
    """A record that was still waiting to be sent when its transaction was aborted."""

    def __init__(self, message: str, *, transactional_id: str | None, cause: str = "") -> None:
        detail = f" after {cause}" if cause else ""
        super().__init__(f"{message}{detail} (transactional_id={transactional_id!r})")
        self.transactional_id = transactional_id


class UnsupportedOperationError(SharetxnError, NotImplementedError):
    """A Kafka producer feature this client deliberately does not offer against this broker."""


class PreparedTransactionMismatchError(SharetxnError):
    """``resume`` found no longer the prepared transaction it was asked to finish.

    Carries the ids asked for and the ids the coordinator reported (-1 when none).
    """

    reason: str = "mismatch"

    def __init__(
        self,
        *,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        found_producer_id: int,
        found_epoch: int,
    ) -> None:
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.epoch = epoch
        self.found_producer_id = found_producer_id
        self.found_epoch = found_epoch
        super().__init__(
            f"cannot resume {transactional_id!r} at producer id {producer_id} epoch {epoch}: "
            f"{self.describe()}"
        )

    def describe(self) -> str:
        return self.reason


class NoPreparedTransactionError(PreparedTransactionMismatchError):
    """The transactional id has no ongoing transaction: it was completed (or timed out) already.

    Whether it was committed or aborted cannot be told from the coordinator; the caller's own
    decision record must say which outcome it asked for.
    """

    reason = "no_ongoing_transaction"

    def describe(self) -> str:
        return (
            "the coordinator has no ongoing transaction for it (already committed or aborted); "
            f"the id is now at producer id {self.found_producer_id} epoch {self.found_epoch}"
        )


class DifferentPreparedTransactionError(PreparedTransactionMismatchError):
    """The ongoing transaction of the id is another one: the prepared one was fenced meanwhile."""

    reason = "different_transaction"

    def describe(self) -> str:
        return (
            "the ongoing transaction is a different one "
            f"(producer id {self.found_producer_id} epoch {self.found_epoch}); the prepared "
            "transaction was fenced and aborted meanwhile"
        )


class PreparedTransactionAbortedError(NoPreparedTransactionError):
    """The prepared transaction was aborted: it can no longer be committed.

    The coordinator aborted it because it stayed open longer than its
    ``transaction.timeout.ms`` (a transaction prepared without KIP-939's ``Enable2Pc``), or
    a producer fenced it, or an abort was already sent.  Its records are discarded; a
    caller whose decision was to commit must treat this as a failed commit, never as done.
    """

    reason = "aborted"

    def __init__(self, *, state: str = "", timeout_ms: int = -1, **ids: Any) -> None:
        self.state = state
        self.timeout_ms = timeout_ms
        super().__init__(**ids)

    def describe(self) -> str:
        timeout = (
            f" (its transaction.timeout.ms is {self.timeout_ms} ms)" if self.timeout_ms > 0 else ""
        )
        return (
            f"the coordinator aborted it{timeout}: it timed out, was fenced by a new producer "
            f"or was aborted already; the id is now {self.state or 'aborted'} at producer id "
            f"{self.found_producer_id} epoch {self.found_epoch}; its records are discarded"
        )


class PreparedTransactionCommittedError(NoPreparedTransactionError):
    """The prepared transaction was committed already (by an earlier completion)."""

    reason = "committed"

    def describe(self) -> str:
        return (
            "it was committed already; the id is at producer id "
            f"{self.found_producer_id} epoch {self.found_epoch}"
        )


class TwoPhaseCommitUnavailableError(SharetxnError):
    """The cluster does not offer the two-phase-commit protocol a config asked for."""

    def __init__(self, message: str, *, transactional_id: str | None, mode: str) -> None:
        super().__init__(f"{message} (transactional_id={transactional_id!r}, mode={mode})")
        self.transactional_id = transactional_id
        self.mode = mode


class TxnState(Enum):
    """The client-side transaction state (Java's ``TransactionManager.State``)."""

    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    PREPARED = "PREPARED"
    COMMITTING = "COMMITTING"
    ABORTING = "ABORTING"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


_T = TxnState

# source -> the states it may move to.  Every state may also move to FATAL_ERROR.
TRANSITIONS: Final[dict[TxnState, frozenset[TxnState]]] = {
    # init_transactions / resume, and the idempotent producer's lazy InitProducerId.
    _T.UNINITIALIZED: frozenset({_T.INITIALIZING}),
    # A retriable init failure at the deadline returns to UNINITIALIZED so init can be retried;
    # keep_prepared_txn that finds an ongoing transaction enters PREPARED directly (KIP-939).
    _T.INITIALIZING: frozenset({_T.UNINITIALIZED, _T.READY, _T.PREPARED}),
    # begin_transaction; an idempotent producer re-initialises to reset its sequences.
    _T.READY: frozenset({_T.IN_TRANSACTION, _T.INITIALIZING}),
    _T.IN_TRANSACTION: frozenset({_T.COMMITTING, _T.ABORTING, _T.ABORTABLE_ERROR, _T.PREPARED}),
    # KIP-939: after prepare only commit, abort (or complete, which is one of them).
    _T.PREPARED: frozenset({_T.COMMITTING, _T.ABORTING}),
    # COMMITTING -> COMMITTING: commit is retried after it timed out (the outcome is unknown).
    _T.COMMITTING: frozenset({_T.COMMITTING, _T.READY, _T.ABORTABLE_ERROR}),
    _T.ABORTING: frozenset({_T.ABORTING, _T.READY}),
    _T.ABORTABLE_ERROR: frozenset({_T.ABORTABLE_ERROR, _T.ABORTING}),
    _T.FATAL_ERROR: frozenset(),
}


class Operation(Enum):
    """The public calls the guard knows about."""

    INIT_TRANSACTIONS = "init_transactions"
    BEGIN_TRANSACTION = "begin_transaction"
    SEND = "send"
    SEND_SHARE_ACKS = "send_share_acks_to_transaction"
    SEND_OFFSETS = "send_offsets_to_transaction"
    PREPARE_TRANSACTION = "prepare_transaction"
    COMMIT_TRANSACTION = "commit_transaction"
    ABORT_TRANSACTION = "abort_transaction"
    COMPLETE_TRANSACTION = "complete_transaction"


_O = Operation

# operation -> the states a transactional producer may call it in.
ALLOWED: Final[dict[Operation, frozenset[TxnState]]] = {
    _O.INIT_TRANSACTIONS: frozenset({_T.UNINITIALIZED}),
    _O.BEGIN_TRANSACTION: frozenset({_T.READY}),
    _O.SEND: frozenset({_T.IN_TRANSACTION}),
    _O.SEND_SHARE_ACKS: frozenset({_T.IN_TRANSACTION}),
    _O.SEND_OFFSETS: frozenset({_T.IN_TRANSACTION}),
    _O.PREPARE_TRANSACTION: frozenset({_T.IN_TRANSACTION}),
    _O.COMMIT_TRANSACTION: frozenset({_T.IN_TRANSACTION, _T.PREPARED, _T.COMMITTING}),
    _O.ABORT_TRANSACTION: frozenset(
        {_T.IN_TRANSACTION, _T.PREPARED, _T.ABORTABLE_ERROR, _T.ABORTING}
    ),
    _O.COMPLETE_TRANSACTION: frozenset({_T.PREPARED}),
}

# Error codes after which the producer can no longer be used (Java: fatal errors).
FATAL_CODES: Final[frozenset[ErrorCode]] = frozenset(
    {
        ErrorCode.PRODUCER_FENCED,
        ErrorCode.INVALID_PRODUCER_EPOCH,
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        ErrorCode.TRANSACTION_COORDINATOR_FENCED,
        ErrorCode.UNSUPPORTED_VERSION,
        ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
    }
)

# Error codes of TxnShareAcknowledge partitions that only doom the current transaction
# (DESIGN section 4: ownership and verification failures roll the whole request back).
ABORTABLE_CODES: Final[frozenset[ErrorCode]] = frozenset(
    {
        ErrorCode.INVALID_RECORD_STATE,
        ErrorCode.INVALID_TXN_STATE,
        ErrorCode.TRANSACTION_ABORTABLE,
    }
)


class TransactionManager:
    """Thread-safe state of one producer: ids, sequences, the current transaction's partitions.

    ``transactional_id`` None makes an idempotent-only (or plain) producer: the transaction
    operations are then misuse, and ``send`` is allowed in every non-fatal state.
    """

    def __init__(self, transactional_id: str | None, *, two_phase_commit: bool = False) -> None:
        self.transactional_id = transactional_id
        self.two_phase_commit = two_phase_commit
        self._lock = threading.RLock()
        self._state = TxnState.UNINITIALIZED
        self._producer_id = NO_PRODUCER_ID
        self._epoch = NO_PRODUCER_EPOCH
        self._last_error: BaseException | None = None
        self._next_seq: dict[TopicPartition, int] = {}
        self._added: set[TopicPartition] = set()
        self._share_acks_added = False
        self._needs_epoch_bump = False

    # -- state ------------------------------------------------------------------------------

    @property
    def is_transactional(self) -> bool:
        return self.transactional_id is not None

    @property
    def state(self) -> TxnState:
        with self._lock:
            return self._state

    @property
    def last_error(self) -> BaseException | None:
        with self._lock:
            return self._last_error

    def transition(self, target: TxnState) -> None:
        """Move to ``target`` if the table allows it, else raise IllegalStateError."""
        with self._lock:
            if target is not TxnState.FATAL_ERROR and target not in TRANSITIONS[self._state]:
                raise IllegalStateError(
                    f"invalid transition {self._state.value} -> {target.value}",
                    operation="transition",
                    state=self._state.value,
                    transactional_id=self.transactional_id,
                )
            self._state = target
            if target in (TxnState.READY, TxnState.IN_TRANSACTION):
                self._last_error = None

    def check(self, operation: Operation) -> None:
        """The one guard every public call passes: raise unless ``operation`` is allowed now."""
        with self._lock:
            state = self._state
            if state is TxnState.FATAL_ERROR and self._last_error is not None:
                raise self._last_error.with_traceback(None)
            if not self.is_transactional:
                if operation is Operation.SEND:
                    return
                raise IllegalStateError(
                    f"{operation.value} needs a transactional producer: set transactional.id",
                    operation=operation.value,
                    state=state.value,
                    transactional_id=None,
                )
            if state is TxnState.ABORTABLE_ERROR and operation is not Operation.ABORT_TRANSACTION:
                assert self._last_error is not None
                raise self._last_error.with_traceback(None)
            if operation is Operation.PREPARE_TRANSACTION and not self.two_phase_commit:
                raise IllegalStateError(
                    "prepare_transaction needs transaction.two.phase.commit.enable=true",
                    operation=operation.value,
                    state=state.value,
                    transactional_id=self.transactional_id,
                )
            if state not in ALLOWED[operation]:
                raise IllegalStateError(
                    _misuse_message(operation, state),
                    operation=operation.value,
                    state=state.value,
                    transactional_id=self.transactional_id,
                )

    def abortable_error(self, error: BaseException) -> None:
        """The current transaction can only be aborted now (fatal errors stay fatal)."""
        with self._lock:
            if self._state is TxnState.FATAL_ERROR:
                return
            if not self.is_transactional:
                return
            if self._state in (
                TxnState.IN_TRANSACTION,
                TxnState.COMMITTING,
                TxnState.ABORTABLE_ERROR,
            ):
                self._state = TxnState.ABORTABLE_ERROR
                self._last_error = error
            # In READY/ABORTING/PREPARED a late batch failure changes nothing: the transaction
            # it belonged to is already being aborted or was never committed.

    def fatal_error(self, error: BaseException) -> None:
        """The producer is unusable; every later call re-raises ``error``."""
        with self._lock:
            if self._state is TxnState.FATAL_ERROR:
                return
            self._state = TxnState.FATAL_ERROR
            self._last_error = error

    @property
    def has_error(self) -> bool:
        with self._lock:
            return self._state in (TxnState.ABORTABLE_ERROR, TxnState.FATAL_ERROR)

    def raise_if_error(self) -> None:
        """Re-raise the abortable or fatal error the producer is in, if any."""
        with self._lock:
            if self.has_error and self._last_error is not None:
                raise self._last_error.with_traceback(None)

    # -- producer id, epoch, sequences ------------------------------------------------------

    @property
    def producer_id_and_epoch(self) -> tuple[int, int]:
        with self._lock:
            return self._producer_id, self._epoch

    @property
    def has_producer_id(self) -> bool:
        with self._lock:
            return self._producer_id != NO_PRODUCER_ID

    def set_producer_id_and_epoch(self, producer_id: int, epoch: int) -> None:
        """A new (id, epoch) from InitProducerId: every partition's sequence restarts at 0."""
        with self._lock:
            self._producer_id = producer_id
            self._epoch = epoch
            self._next_seq.clear()
            self._needs_epoch_bump = False

    def next_sequence(self, tp: TopicPartition, count: int) -> int:
        """Reserve ``count`` sequence numbers on ``tp``; returns the first."""
        with self._lock:
            base = self._next_seq.get(tp, 0)
            self._next_seq[tp] = next_sequence(base, count)
            return base

    def rollback_sequence(self, tp: TopicPartition, base_sequence: int) -> None:
        """A batch that certainly was not written gives its sequence numbers back.

        Correct because at most one batch per partition is in flight and sequences are
        assigned when a batch is first sent, so the failed batch holds the latest numbers.
        """
        with self._lock:
            self._next_seq[tp] = base_sequence

    def sequence_of(self, tp: TopicPartition) -> int:
        with self._lock:
            return self._next_seq.get(tp, 0)

    def request_epoch_bump(self) -> None:
        """A batch's fate is unknown: the broker's sequences may differ from ours (KIP-360)."""
        with self._lock:
            self._needs_epoch_bump = True

    @property
    def needs_epoch_bump(self) -> bool:
        with self._lock:
            return self._needs_epoch_bump

    # -- the current transaction --------------------------------------------------------------

    def partitions_to_add(self, partitions: set[TopicPartition]) -> set[TopicPartition]:
        with self._lock:
            return partitions - self._added

    def partitions_added(self, partitions: set[TopicPartition]) -> None:
        with self._lock:
            self._added |= partitions

    def is_added(self, tp: TopicPartition) -> bool:
        with self._lock:
            return tp in self._added

    def share_acks_added(self) -> None:
        with self._lock:
            self._share_acks_added = True

    @property
    def transaction_started(self) -> bool:
        """Whether the coordinator knows of this transaction (so EndTxn must be sent)."""
        with self._lock:
            return bool(self._added) or self._share_acks_added

    def mark_started_elsewhere(self) -> None:
        """A prepared transaction found by keep_prepared_txn: its partitions are on the broker."""
        with self._lock:
            self._share_acks_added = True

    def clear_transaction(self) -> None:
        with self._lock:
            self._added.clear()
            self._share_acks_added = False

    def describe(self) -> dict[str, Any]:
        """Ids for exception messages."""
        with self._lock:
            return {
                "transactional_id": self.transactional_id,
                "producer_id": self._producer_id,
                "producer_epoch": self._epoch,
            }


def _misuse_message(operation: Operation, state: TxnState) -> str:
    if state is TxnState.UNINITIALIZED and operation is not Operation.INIT_TRANSACTIONS:
        return f"call init_transactions before {operation.value}"
    if operation is Operation.INIT_TRANSACTIONS:
        return "init_transactions was already called"
    if operation is Operation.BEGIN_TRANSACTION:
        if state is TxnState.IN_TRANSACTION:
            return "a transaction is already open (begin_transaction called twice)"
        if state is TxnState.PREPARED:
            return "the prepared transaction must be committed, aborted or completed first"
        return f"begin_transaction is not allowed while {state.value}"
    if operation in (Operation.SEND, Operation.SEND_SHARE_ACKS, Operation.SEND_OFFSETS):
        if state is TxnState.READY:
            return f"{operation.value} outside a transaction: call begin_transaction first"
        if state is TxnState.PREPARED:
            return f"{operation.value} after prepare_transaction: only commit/abort/complete"
        return f"{operation.value} is not allowed while {state.value}"
    if operation in (Operation.COMMIT_TRANSACTION, Operation.ABORT_TRANSACTION):
        if state is TxnState.READY:
            return f"{operation.value} without an open transaction: call begin_transaction first"
        return f"{operation.value} is not allowed while {state.value}"
    if operation is Operation.COMPLETE_TRANSACTION:
        return (
            "complete_transaction needs a prepared transaction "
            "(prepare_transaction, init_transactions(keep_prepared_txn=True) or resume)"
        )
    return f"{operation.value} is not allowed while {state.value}"
