"""What the transaction coordinator answers and persists: its results and views, and the
translation between a transition and its ``__transaction_state`` value."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from txn.batch import ControlType
from txn.errors import ErrorCode
from txn.ids import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TopicPartition
from txn.metadata import TransactionMetadata, TxnTransitMetadata
from txn.state import TransactionState
from txn.txn_log import TransactionLogValue, encode_key, encode_value

_S = TransactionState


@dataclass(frozen=True, slots=True)
class ProducerResult:
    """An error, or the producer id and epoch the client goes on with."""

    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class InitProducerIdResult(ProducerResult):
    # KIP-939 keepPreparedTxn: the prepared transaction handed to the caller.
    ongoing_txn_producer_id: int = NO_PRODUCER_ID
    ongoing_txn_producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class EndTxnResult(ProducerResult):
    """EndTxn's answer (also force-terminate's); TV2 carries the id and epoch to go on with."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ActiveProducer:
    """DescribeProducers' view of one producer of a partition (Kafka's field names)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int  # -1 when it has no ongoing transaction


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


def transaction_view(
    metadata: TransactionMetadata, markers_pending: tuple[TopicPartition, ...]
) -> TransactionView:
    """The view of ``metadata``: its attributes of the same names, partitions sorted."""
    own = ("topic_partitions", "markers_pending")
    copied: dict[str, Any] = {
        f.name: getattr(metadata, f.name) for f in fields(TransactionView) if f.name not in own
    }
    return TransactionView(
        **copied,
        topic_partitions=tuple(sorted(metadata.topic_partitions)),
        markers_pending=markers_pending,
    )


# --- record <-> transit ----------------------------------------------------------------------

# The record fields named apart from the transit attribute they hold; every other record field
# holds the transit attribute of its own name.  The last epoch is not persisted.
_TRANSIT_ATTR_OF = {
    "transaction_timeout_ms": "txn_timeout_ms",
    "last_update_timestamp_ms": "txn_last_update_timestamp",
    "start_timestamp_ms": "txn_start_timestamp",
    "previous_producer_id": "prev_producer_id",
}
# (record field, transit attribute), in the record's field order.
_PERSISTED = tuple(
    (f.name, _TRANSIT_ATTR_OF.get(f.name, f.name)) for f in fields(TransactionLogValue)
)


def transit_to_log_value(transit: TxnTransitMetadata) -> TransactionLogValue | None:
    """The record value for ``transit``; Dead is a tombstone (None)."""
    if transit.state is _S.DEAD:
        return None
    values: dict[str, Any] = {name: getattr(transit, attr) for name, attr in _PERSISTED}
    return TransactionLogValue(**values)


def log_value_to_transit(value: TransactionLogValue) -> TxnTransitMetadata:
    """The transit a record describes; the last epoch is not persisted (-1, as in Kafka)."""
    values: dict[str, Any] = {attr: getattr(value, name) for name, attr in _PERSISTED}
    return TxnTransitMetadata(last_producer_epoch=NO_PRODUCER_EPOCH, **values)


def transit_record(
    transactional_id: str, transit: TxnTransitMetadata
) -> tuple[bytes, bytes | None]:
    """The ``__transaction_state`` record (key, value) of ``transit`` (Dead: a tombstone)."""
    return encode_key(transactional_id), encode_value(transit_to_log_value(transit))


def marker_control_type(state: TransactionState) -> ControlType:
    return ControlType.COMMIT if state is _S.PREPARE_COMMIT else ControlType.ABORT
