"""What the transaction coordinator answers and persists: its results and views, and the
translation between a transition and its ``__transaction_state`` value."""

from __future__ import annotations

from dataclasses import dataclass

from txn.batch import ControlType
from txn.errors import (
    ErrorCode,
)
from txn.ids import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TopicPartition
from txn.metadata import (
    TxnTransitMetadata,
)
from txn.state import (
    TransactionState,
)
from txn.txn_log import (
    TransactionLogValue,
)

_S = TransactionState


@dataclass(frozen=True, slots=True)
class InitProducerIdResult:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    ongoing_txn_producer_id: int = NO_PRODUCER_ID
    ongoing_txn_producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class EndTxnResult:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str  # Kafka's state name ("Ongoing")


@dataclass(frozen=True, slots=True)
class TransactionDescription:
    transactional_id: str
    error: ErrorCode
    state: str = ""  # Kafka's state name ("PrepareCommit")
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    transaction_timeout_ms: int = 0
    transaction_start_time_ms: int = -1
    partitions: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True, slots=True)
class TransactionView:
    """Everything the coordinator knows about one id (for the recovery tool and tests)."""

    transactional_id: str
    state: TransactionState
    pending_state: TransactionState | None
    producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    prev_producer_id: int
    next_producer_id: int
    txn_timeout_ms: int
    topic_partitions: tuple[TopicPartition, ...]
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    client_transaction_version: int
    two_phase_commit: bool
    has_failed_epoch_fence: bool
    markers_pending: tuple[TopicPartition, ...]


# --- record <-> transit ----------------------------------------------------------------------


def transit_to_log_value(transit: TxnTransitMetadata) -> TransactionLogValue | None:
    """The record value for ``transit``; Dead is a tombstone (None)."""
    if transit.state is _S.DEAD:
        return None
    return TransactionLogValue(
        producer_id=transit.producer_id,
        producer_epoch=transit.producer_epoch,
        transaction_timeout_ms=transit.txn_timeout_ms,
        state=transit.state,
        topic_partitions=transit.topic_partitions,
        last_update_timestamp_ms=transit.txn_last_update_timestamp,
        start_timestamp_ms=transit.txn_start_timestamp,
        previous_producer_id=transit.prev_producer_id,
        next_producer_id=transit.next_producer_id,
        next_producer_epoch=transit.next_producer_epoch,
        client_transaction_version=transit.client_transaction_version,
        two_phase_commit=transit.two_phase_commit,
    )


def log_value_to_transit(value: TransactionLogValue) -> TxnTransitMetadata:
    """The transit a record describes; the last epoch is not persisted (-1, as in Kafka)."""
    return TxnTransitMetadata(
        producer_id=value.producer_id,
        prev_producer_id=value.previous_producer_id,
        next_producer_id=value.next_producer_id,
        next_producer_epoch=value.next_producer_epoch,
        producer_epoch=value.producer_epoch,
        last_producer_epoch=NO_PRODUCER_EPOCH,
        txn_timeout_ms=value.transaction_timeout_ms,
        state=value.state,
        topic_partitions=value.topic_partitions,
        txn_start_timestamp=value.start_timestamp_ms,
        txn_last_update_timestamp=value.last_update_timestamp_ms,
        client_transaction_version=value.client_transaction_version,
        two_phase_commit=value.two_phase_commit,
    )


def _result_of(state: TransactionState) -> ControlType:
    return ControlType.COMMIT if state is _S.PREPARE_COMMIT else ControlType.ABORT
