"""Wire schemas of the two KIP-1289 RPCs (DESIGN §3), in kio's entity style.

kio ships no schema for them (no Kafka release has them), so they are written
here as kio generates entities: frozen dataclasses with the ``kafka_type`` of
each field and kio's class attributes (set by ``_entity``), flexible from
version 0.  ``load_request`` and ``load_response`` look these up before falling
back to kio's index, so the broker and the client decode and encode them like
any other API.

* AddShareAcksToTxn: adds the ``__share_group_state`` partition of each
  (group, topic-partition) to the ongoing transaction.
* TxnShareAcknowledge: writes acknowledgements as pending in the
  transaction; tagged field 0 ``MemberId`` (nullable) is our extension.
* DescribeSharePendingAcks (sharetxn admin API, not in any KIP): the
  share coordinator's staged transactional acknowledgements per producer, for
  the recovery tool (``sharetxn txn describe``/``find-hanging``).
"""

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64

from txn.api_keys import ApiKey

#: These APIs' keys are sharetxn's (``txn.api_keys``: Apache Kafka 4.4 serves other requests
#: under two of them), so a client tells a KIP-1289 cluster by this finalized feature in
#: ApiVersions, not by the keys alone.
KIP1289_FEATURE = "share.transaction.version"
KIP1289_FEATURE_LEVEL = 1


_T = TypeVar("_T")


def _entity(
    kind: EntityType, api_key: ApiKey, header: type[RequestHeader] | type[ResponseHeader]
) -> Callable[[type[_T]], type[_T]]:
    """Give a class the attributes kio's generated entities carry (all ours are v0, flexible)."""

    def mark(cls: type[_T]) -> type[_T]:
        for name, value in (
            ("__type__", kind),
            ("__version__", i16(0)),
            ("__flexible__", True),
            ("__api_key__", i16(api_key)),
            ("__header_schema__", header),
        ):
            setattr(cls, name, value)
        return cls

    return mark


# --- AddShareAcksToTxn v0 ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(EntityType.nested, ApiKey.ADD_SHARE_ACKS_TO_TXN, RequestHeader)
class AddShareAcksToTxnTopic:
    name: str = field(metadata={"kafka_type": "string"})
    partitions: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(EntityType.request, ApiKey.ADD_SHARE_ACKS_TO_TXN, RequestHeader)
class AddShareAcksToTxnRequest:
    transactional_id: str = field(metadata={"kafka_type": "string"})
    producer_id: i64 = field(metadata={"kafka_type": "int64"})
    producer_epoch: i16 = field(metadata={"kafka_type": "int16"})
    group_id: str = field(metadata={"kafka_type": "string"})
    topics: tuple[AddShareAcksToTxnTopic, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(EntityType.response, ApiKey.ADD_SHARE_ACKS_TO_TXN, ResponseHeader)
class AddShareAcksToTxnResponse:
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})


# --- TxnShareAcknowledge v0 --------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(EntityType.nested, ApiKey.TXN_SHARE_ACKNOWLEDGE, RequestHeader)
class TxnAcknowledgementBatch:
    first_offset: i64 = field(metadata={"kafka_type": "int64"})
    last_offset: i64 = field(metadata={"kafka_type": "int64"})
    acknowledge_type: i8 = field(metadata={"kafka_type": "int8"})


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(EntityType.nested, ApiKey.TXN_SHARE_ACKNOWLEDGE, RequestHeader)
class TxnShareAcknowledgePartition:
    partition: i32 = field(metadata={"kafka_type": "int32"})
    acknowledgement_batches: tuple[TxnAcknowledgementBatch, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(EntityType.nested, ApiKey.TXN_SHARE_ACKNOWLEDGE, RequestHeader)
class TxnShareAcknowledgeTopic:
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    partitions: tuple[TxnShareAcknowledgePartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(EntityType.request, ApiKey.TXN_SHARE_ACKNOWLEDGE, RequestHeader)
class TxnShareAcknowledgeRequest:
    group_id: str = field(metadata={"kafka_type": "string"})
    transactional_id: str = field(metadata={"kafka_type": "string"})
    producer_id: i64 = field(metadata={"kafka_type": "int64"})
    producer_epoch: i16 = field(metadata={"kafka_type": "int16"})
    topics: tuple[TxnShareAcknowledgeTopic, ...]
    member_id: str | None = field(metadata={"kafka_type": "string", "tag": 0}, default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(EntityType.nested, ApiKey.TXN_SHARE_ACKNOWLEDGE, ResponseHeader)
class TxnShareAcknowledgePartitionResponse:
    partition: i32 = field(metadata={"kafka_type": "int32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    error_message: str | None = field(metadata={"kafka_type": "string"}, default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(EntityType.nested, ApiKey.TXN_SHARE_ACKNOWLEDGE, ResponseHeader)
class TxnShareAcknowledgeTopicResponse:
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    partitions: tuple[TxnShareAcknowledgePartitionResponse, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(EntityType.response, ApiKey.TXN_SHARE_ACKNOWLEDGE, ResponseHeader)
class TxnShareAcknowledgeResponse:
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    topics: tuple[TxnShareAcknowledgeTopicResponse, ...]


# --- DescribeSharePendingAcks v0: sharetxn admin API -----------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(EntityType.request, ApiKey.DESCRIBE_SHARE_PENDING_ACKS, RequestHeader)
class DescribeSharePendingAcksRequest:
    producer_ids: tuple[i64, ...] = field(metadata={"kafka_type": "int64"}, default=())
    """The producers to describe; empty: every producer with staged acknowledgements."""


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(EntityType.nested, ApiKey.DESCRIBE_SHARE_PENDING_ACKS, ResponseHeader)
class SharePendingAckEntry:
    group_id: str = field(metadata={"kafka_type": "string"})
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    partition: i32 = field(metadata={"kafka_type": "int32"})
    state_partition: i32 = field(metadata={"kafka_type": "int32"})
    pending_records: i64 = field(metadata={"kafka_type": "int64"})
    first_offset: i64 = field(metadata={"kafka_type": "int64"})
    last_offset: i64 = field(metadata={"kafka_type": "int64"})


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(EntityType.nested, ApiKey.DESCRIBE_SHARE_PENDING_ACKS, ResponseHeader)
class SharePendingAckProducer:
    producer_id: i64 = field(metadata={"kafka_type": "int64"})
    producer_epoch: i16 = field(metadata={"kafka_type": "int16"})
    entries: tuple[SharePendingAckEntry, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
@_entity(EntityType.response, ApiKey.DESCRIBE_SHARE_PENDING_ACKS, ResponseHeader)
class DescribeSharePendingAcksResponse:
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    producers: tuple[SharePendingAckProducer, ...]


_REQUESTS: dict[tuple[int, int], type] = {
    (ApiKey.ADD_SHARE_ACKS_TO_TXN, 0): AddShareAcksToTxnRequest,
    (ApiKey.TXN_SHARE_ACKNOWLEDGE, 0): TxnShareAcknowledgeRequest,
    (ApiKey.DESCRIBE_SHARE_PENDING_ACKS, 0): DescribeSharePendingAcksRequest,
}
_RESPONSES: dict[tuple[int, int], type] = {
    (ApiKey.ADD_SHARE_ACKS_TO_TXN, 0): AddShareAcksToTxnResponse,
    (ApiKey.TXN_SHARE_ACKNOWLEDGE, 0): TxnShareAcknowledgeResponse,
    (ApiKey.DESCRIBE_SHARE_PENDING_ACKS, 0): DescribeSharePendingAcksResponse,
}


def load_request(api_key: int, version: int) -> Any:
    """The request entity class, ours for KIP-1289's APIs, else kio's."""
    ours = _REQUESTS.get((api_key, version))
    return ours if ours is not None else load_request_schema(api_key, version)


def load_response(api_key: int, version: int) -> Any:
    ours = _RESPONSES.get((api_key, version))
    return ours if ours is not None else load_response_schema(api_key, version)
