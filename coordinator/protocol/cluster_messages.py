"""Typed responses of the cluster and metadata APIs (``cluster_handlers``), named as Kafka's
newest schemas; as ``txn_messages``, a default is the value the wire carries for a field left
out."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from coordinator.protocol.responses import OPERATIONS_NOT_REQUESTED
from txn.errors import ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersion:
    api_key: int
    min_version: int
    max_version: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SupportedFeatureKey:
    name: str
    min_version: int
    max_version: int


@dataclass(frozen=True, slots=True, kw_only=True)
class FinalizedFeatureKey:
    name: str
    max_version_level: int
    min_version_level: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionsResponse:
    """The features (v3 and later) are KIP-1289's alone (``cluster_handlers.api_versions``)."""

    error_code: ErrorCode
    api_keys: tuple[ApiVersion, ...]
    supported_features: tuple[SupportedFeatureKey, ...] = ()
    finalized_features_epoch: int = -1
    finalized_features: tuple[FinalizedFeatureKey, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdatableFeatureResult:
    feature: str
    error_code: ErrorCode
    error_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateFeaturesResponse:
    """Per-feature results up to v1 (v2 has only the top-level error)."""

    error_code: ErrorCode
    error_message: str | None = None
    results: tuple[UpdatableFeatureResult, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class MetadataResponseBroker:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MetadataResponsePartition:
    error_code: ErrorCode
    partition_index: int
    leader_id: int
    leader_epoch: int
    replica_nodes: tuple[int, ...]
    isr_nodes: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class MetadataResponseTopic:
    error_code: ErrorCode
    name: str | None
    topic_id: uuid.UUID
    is_internal: bool
    partitions: tuple[MetadataResponsePartition, ...] = ()
    topic_authorized_operations: int = OPERATIONS_NOT_REQUESTED


@dataclass(frozen=True, slots=True, kw_only=True)
class MetadataResponse:
    brokers: tuple[MetadataResponseBroker, ...]
    cluster_id: str | None
    controller_id: int
    topics: tuple[MetadataResponseTopic, ...]
    cluster_authorized_operations: int = OPERATIONS_NOT_REQUESTED  # v8-v10


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeClusterBroker:
    broker_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeClusterResponse:
    error_code: ErrorCode
    cluster_id: str
    controller_id: int
    brokers: tuple[DescribeClusterBroker, ...]
    error_message: str | None = None
    endpoint_type: int = 1  # brokers (KIP-919's 2 is controllers)
    cluster_authorized_operations: int = OPERATIONS_NOT_REQUESTED


@dataclass(frozen=True, slots=True, kw_only=True)
class Coordinator:
    key: str
    node_id: int
    host: str
    port: int
    error_code: ErrorCode
    error_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FindCoordinatorResponse:
    """v4 and later answer ``coordinators`` (one per key), v3 and earlier the one key's
    coordinator in the top-level fields."""

    coordinators: tuple[Coordinator, ...] = ()
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    node_id: int = -1
    host: str = ""
    port: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsSynonym:
    name: str
    value: str | None
    source: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsResourceResult:
    """One config; ``config_source`` is Kafka's ConfigSource (1 topic, 4 static broker,
    5 default, 8 group)."""

    name: str
    value: str | None
    read_only: bool
    config_source: int
    is_sensitive: bool = False
    synonyms: tuple[DescribeConfigsSynonym, ...] = ()
    config_type: int = 0
    documentation: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsResult:
    error_code: ErrorCode
    error_message: str | None
    resource_type: int
    resource_name: str
    configs: tuple[DescribeConfigsResourceResult, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsResponse:
    results: tuple[DescribeConfigsResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeLogDirsPartition:
    partition_index: int
    partition_size: int
    offset_lag: int = 0
    is_future_key: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeLogDirsTopic:
    name: str
    partitions: tuple[DescribeLogDirsPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeLogDirsResult:
    error_code: ErrorCode
    log_dir: str
    topics: tuple[DescribeLogDirsTopic, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeLogDirsResponse:
    error_code: ErrorCode
    results: tuple[DescribeLogDirsResult, ...] = ()
