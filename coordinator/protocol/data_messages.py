"""Typed responses of the data path (``data_handlers``), named as Kafka's newest schemas.

As ``txn_messages``: ``wire.encode_response`` renders them into the negotiated version, and a
default is the value the wire carries when the field is left out.
"""

from __future__ import annotations

import datetime
import uuid
from dataclasses import dataclass

from coordinator.partition import AbortedTxn
from txn.errors import ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchIndexAndErrorMessage:
    batch_index: int
    batch_index_error_message: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionProduceResponse:
    index: int
    error_code: ErrorCode
    base_offset: int
    #: the append time of a LogAppendTime topic; -1 (before v2) or None (kio's no-time, from
    #: v2) when the log keeps the producer's timestamps
    log_append_time: datetime.datetime | int | None = None
    log_start_offset: int = -1
    error_message: str | None = None
    record_errors: tuple[BatchIndexAndErrorMessage, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicProduceResponse:
    name: str
    partition_responses: tuple[PartitionProduceResponse, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceResponse:
    responses: tuple[TopicProduceResponse, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchPartitionData:
    partition_index: int
    error_code: ErrorCode
    high_watermark: int
    last_stable_offset: int = -1
    log_start_offset: int = -1
    #: None when the fetch is read_uncommitted (or Kafka answers an error without the list)
    aborted_transactions: tuple[AbortedTxn, ...] | None = None
    records: bytes | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchableTopicResponse:
    """A topic by name (Fetch < v13) or by id (v13 and later)."""

    topic: str = ""
    topic_id: uuid.UUID | None = None
    partitions: tuple[FetchPartitionData, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponse:
    error_code: ErrorCode = ErrorCode.NONE
    session_id: int = 0  # fetch sessions are not kept (docs/design.md)
    responses: tuple[FetchableTopicResponse, ...]

    def has_partition_error(self) -> bool:
        return any(p.error_code is not ErrorCode.NONE for t in self.responses for p in t.partitions)


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsPartitionResponse:
    partition_index: int
    error_code: ErrorCode
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsTopicResponse:
    name: str
    partitions: tuple[ListOffsetsPartitionResponse, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsResponse:
    topics: tuple[ListOffsetsTopicResponse, ...]
