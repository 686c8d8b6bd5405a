"""Typed responses of the transaction APIs (``txn_handlers``), named as Kafka's newest schemas.

Each field has the name of the newest version's field; ``wire.encode_response`` renders a
message into the negotiated version (fields that version lacks dropped, Kafka's defaults for
the fields a message leaves out).  A default here is the value the wire would carry anyway.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from coordinator.txn_results import ActiveProducer
from txn.errors import ErrorCode
from txn.ids import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TopicPartition


@dataclass(frozen=True, slots=True, kw_only=True)
class InitProducerIdResponse:
    error_code: ErrorCode
    producer_id: int
    producer_epoch: int
    ongoing_txn_producer_id: int = NO_PRODUCER_ID
    ongoing_txn_producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True, kw_only=True)
class EndTxnResponse:
    error_code: ErrorCode
    producer_id: int
    producer_epoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AddPartitionsToTxnPartitionResult:
    partition_index: int
    partition_error_code: ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class AddPartitionsToTxnTopicResult:
    name: str
    results_by_partition: tuple[AddPartitionsToTxnPartitionResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AddPartitionsToTxnResult:
    transactional_id: str
    topic_results: tuple[AddPartitionsToTxnTopicResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AddPartitionsToTxnResponse:
    """v4 and later answer ``error_code`` and ``results_by_transaction`` (the batched form),
    v3 and earlier ``results_by_topic_v3_and_below`` alone."""

    error_code: ErrorCode = ErrorCode.NONE
    results_by_transaction: tuple[AddPartitionsToTxnResult, ...] = ()
    results_by_topic_v3_and_below: tuple[AddPartitionsToTxnTopicResult, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ListedTransaction:
    transactional_id: str
    producer_id: int
    transaction_state: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ListTransactionsResponse:
    error_code: ErrorCode
    unknown_state_filters: tuple[str, ...]
    transaction_states: tuple[ListedTransaction, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionTopic:
    topic: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedTransaction:
    error_code: ErrorCode
    transactional_id: str
    transaction_state: str
    producer_id: int
    producer_epoch: int
    #: milliseconds; the start time is -1 when no transaction is ongoing
    transaction_timeout: int = 0
    transaction_start_time: int = -1
    topics: tuple[TransactionTopic, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeTransactionsResponse:
    transaction_states: tuple[DescribedTransaction, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeProducersPartition:
    partition_index: int
    error_code: ErrorCode
    error_message: str | None = None
    active_producers: tuple[ActiveProducer, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeProducersTopic:
    name: str
    partitions: tuple[DescribeProducersPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeProducersResponse:
    topics: tuple[DescribeProducersTopic, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class WritableTxnMarkerPartitionResult:
    partition_index: int
    error_code: ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class WritableTxnMarkerTopicResult:
    name: str
    partitions: tuple[WritableTxnMarkerPartitionResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class WritableTxnMarkerResult:
    producer_id: int
    topics: tuple[WritableTxnMarkerTopicResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteTxnMarkersResponse:
    markers: tuple[WritableTxnMarkerResult, ...]


def marker_results(
    errors: dict[TopicPartition, ErrorCode],
) -> tuple[WritableTxnMarkerTopicResult, ...]:
    """WriteTxnMarkers' per-topic results of one marker, topics in request order."""
    grouped: dict[str, list[WritableTxnMarkerPartitionResult]] = {}
    for tp, error in errors.items():
        grouped.setdefault(tp.topic, []).append(
            WritableTxnMarkerPartitionResult(partition_index=tp.partition, error_code=error)
        )
    return tuple(
        WritableTxnMarkerTopicResult(name=name, partitions=tuple(parts))
        for name, parts in grouped.items()
    )


# -- staging in a transaction: KIP-98's offsets, KIP-1289's share acknowledgements --------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AddOffsetsToTxnResponse:
    error_code: ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnOffsetCommitPartition:
    partition_index: int
    error_code: ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnOffsetCommitTopic:
    name: str
    partitions: tuple[TxnOffsetCommitPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnOffsetCommitResponse:
    topics: tuple[TxnOffsetCommitTopic, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AddShareAcksToTxnResponse:
    error_code: ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnShareAcknowledgePartition:
    partition: int
    error_code: ErrorCode
    error_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnShareAcknowledgeTopic:
    topic_id: uuid.UUID | None  # None (the zero id) as the request named it
    partitions: tuple[TxnShareAcknowledgePartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnShareAcknowledgeResponse:
    topics: tuple[TxnShareAcknowledgeTopic, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingAcksEntry:
    group_id: str
    topic_id: uuid.UUID
    partition: int
    state_partition: int
    pending_records: int
    first_offset: int
    last_offset: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingAcksProducer:
    producer_id: int
    producer_epoch: int
    entries: tuple[PendingAcksEntry, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeSharePendingAcksResponse:
    error_code: ErrorCode
    producers: tuple[PendingAcksProducer, ...] = ()
