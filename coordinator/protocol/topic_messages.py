"""Typed responses of topic administration (``topic_handlers``), named as Kafka's newest
schemas; as ``txn_messages``, a default is the value the wire carries for a field left out."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from txn.errors import ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatableTopicResult:
    name: str
    error_code: ErrorCode
    error_message: str | None
    topic_id: uuid.UUID | None = None
    num_partitions: int = -1
    replication_factor: int = -1
    #: the topic's configs are never returned: empty, or None (the wire's null)
    configs: tuple[()] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsResponse:
    topics: tuple[CreatableTopicResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterConfigsResourceResponse:
    error_code: ErrorCode
    error_message: str | None
    resource_type: int
    resource_name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterConfigsResponse:
    responses: tuple[AlterConfigsResourceResponse, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeletableTopicResult:
    name: str | None
    error_code: ErrorCode
    topic_id: uuid.UUID | None = None
    error_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicsResponse:
    responses: tuple[DeletableTopicResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatePartitionsTopicResult:
    name: str
    error_code: ErrorCode
    error_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatePartitionsResponse:
    results: tuple[CreatePartitionsTopicResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteRecordsPartitionResult:
    partition_index: int
    low_watermark: int
    error_code: ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteRecordsTopicResult:
    name: str
    partitions: tuple[DeleteRecordsPartitionResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteRecordsResponse:
    topics: tuple[DeleteRecordsTopicResult, ...]
