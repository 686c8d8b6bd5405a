"""Version-free views of the requests of the cluster, topic, data and transaction APIs.

``wire.decode_request`` hands a handler the kio entity of the negotiated version; a handler
reads it through the view of its API (``DecodedRequest[XRequestView]``), a ``Protocol``
naming the fields every supported version has (``api_versions``), with the types kio gives
them (kio's nominal ints and strings are ``int`` and ``str`` subclasses).  A field some
versions lack is read with ``wire.optional`` and a declared type; where versions differ in
shape, ``<Api>RequestV<low>To<high>View`` names the fields of those versions (the handler
casts to it after testing ``api_version``).
tests/unit/test_request_views.py checks each view against every supported version's schema.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Protocol


class PartitionProduceDataView(Protocol):
    """``partition_data`` of TopicProduceDataView."""

    index: int
    records: bytes | None


class TopicProduceDataView(Protocol):
    """``topic_data`` of ProduceRequestView."""

    name: str
    partition_data: tuple[PartitionProduceDataView, ...]


class ProduceRequestView(Protocol):
    """Produce request, v3-v10."""

    transactional_id: str | None
    acks: int
    timeout: datetime.timedelta
    topic_data: tuple[TopicProduceDataView, ...]


class FetchPartitionView(Protocol):
    """``partitions`` of FetchTopicView. Only in some versions: ``current_leader_epoch``,
    ``last_fetched_epoch``, ``log_start_offset``.
    """

    partition: int
    fetch_offset: int
    partition_max_bytes: int


class FetchTopicView(Protocol):
    """``topics`` of FetchRequestView. Only in some versions: ``topic``, ``topic_id``."""

    partitions: tuple[FetchPartitionView, ...]


class FetchRequestView(Protocol):
    """Fetch request, v4-v16. Only in some versions: ``cluster_id``, ``forgotten_topics_data``,
    ``rack_id``, ``replica_id``, ``replica_state``, ``session_epoch``, ``session_id``.
    """

    max_wait: datetime.timedelta
    min_bytes: int
    max_bytes: int
    isolation_level: int
    topics: tuple[FetchTopicView, ...]


class ListOffsetsPartitionView(Protocol):
    """``partitions`` of ListOffsetsTopicView. Only in some versions: ``current_leader_epoch``."""

    partition_index: int
    timestamp: int


class ListOffsetsTopicView(Protocol):
    """``topics`` of ListOffsetsRequestView."""

    name: str
    partitions: tuple[ListOffsetsPartitionView, ...]


class ListOffsetsRequestView(Protocol):
    """ListOffsets request, v1-v11. Only in some versions: ``isolation_level``, ``timeout``."""

    replica_id: int
    topics: tuple[ListOffsetsTopicView, ...]


class MetadataRequestTopicView(Protocol):
    """``topics`` of MetadataRequestView. Only in some versions: ``topic_id``."""

    name: str | None


class MetadataRequestView(Protocol):
    """Metadata request, v0-v12. Only in some versions: ``allow_auto_topic_creation``,
    ``include_cluster_authorized_operations``, ``include_topic_authorized_operations``.
    """

    topics: tuple[MetadataRequestTopicView, ...] | None


class ApiVersionsRequestView(Protocol):
    """ApiVersions request, v0-v4. Only in some versions: ``client_software_name``,
    ``client_software_version``.
    """

    pass


class DescribeClusterRequestView(Protocol):
    """DescribeCluster request, v0-v1. Only in some versions: ``endpoint_type``."""

    include_cluster_authorized_operations: bool


class FindCoordinatorRequestView(Protocol):
    """FindCoordinator request, v0-v6. Only in some versions: ``coordinator_keys``, ``key``,
    ``key_type``.
    """

    pass


class DescribeConfigsResourceView(Protocol):
    """``resources`` of DescribeConfigsRequestView."""

    resource_type: int
    resource_name: str
    configuration_keys: tuple[str, ...] | None


class DescribeConfigsRequestView(Protocol):
    """DescribeConfigs request, v1-v4. Only in some versions: ``include_documentation``."""

    resources: tuple[DescribeConfigsResourceView, ...]
    include_synonyms: bool


class DescribableLogDirTopicView(Protocol):
    """``topics`` of DescribeLogDirsRequestView."""

    topic: str
    partitions: tuple[int, ...]


class DescribeLogDirsRequestView(Protocol):
    """DescribeLogDirs request, v1-v4."""

    topics: tuple[DescribableLogDirTopicView, ...] | None


class CreatableReplicaAssignmentView(Protocol):
    """``assignments`` of CreatableTopicView."""

    partition_index: int
    broker_ids: tuple[int, ...]


class CreatableTopicConfigView(Protocol):
    """``configs`` of CreatableTopicView."""

    name: str
    value: str | None


class CreatableTopicView(Protocol):
    """``topics`` of CreateTopicsRequestView."""

    name: str
    num_partitions: int
    replication_factor: int
    assignments: tuple[CreatableReplicaAssignmentView, ...]
    configs: tuple[CreatableTopicConfigView, ...]


class CreateTopicsRequestView(Protocol):
    """CreateTopics request, v2-v7."""

    topics: tuple[CreatableTopicView, ...]
    timeout: datetime.timedelta
    validate_only: bool


class AlterableConfigView(Protocol):
    """``configs`` of AlterConfigsResourceView."""

    name: str
    value: str | None


class AlterConfigsResourceView(Protocol):
    """``resources`` of AlterConfigsRequestView."""

    resource_type: int
    resource_name: str
    configs: tuple[AlterableConfigView, ...]


class AlterConfigsRequestView(Protocol):
    """AlterConfigs request, v0-v2."""

    resources: tuple[AlterConfigsResourceView, ...]
    validate_only: bool


class DeleteTopicsRequestView(Protocol):
    """DeleteTopics request, v1-v6. Only in some versions: ``topic_names``, ``topics``."""

    timeout: datetime.timedelta


class DeleteTopicsRequestV1To5View(Protocol):
    """DeleteTopics request, v1-v5: topics by name."""

    topic_names: tuple[str, ...]
    timeout: datetime.timedelta


class DeleteTopicStateView(Protocol):
    """``topics`` of DeleteTopicsRequestV6To6View."""

    name: str | None
    topic_id: uuid.UUID | None


class DeleteTopicsRequestV6To6View(Protocol):
    """DeleteTopics request, v6: topics by name or id."""

    topics: tuple[DeleteTopicStateView, ...]
    timeout: datetime.timedelta


class CreatePartitionsAssignmentView(Protocol):
    """``assignments`` of CreatePartitionsTopicView."""

    broker_ids: tuple[int, ...]


class CreatePartitionsTopicView(Protocol):
    """``topics`` of CreatePartitionsRequestView."""

    name: str
    count: int
    assignments: tuple[CreatePartitionsAssignmentView, ...] | None


class CreatePartitionsRequestView(Protocol):
    """CreatePartitions request, v0-v3."""

    topics: tuple[CreatePartitionsTopicView, ...]
    timeout: datetime.timedelta
    validate_only: bool


class DeleteRecordsPartitionView(Protocol):
    """``partitions`` of DeleteRecordsTopicView."""

    partition_index: int
    offset: int


class DeleteRecordsTopicView(Protocol):
    """``topics`` of DeleteRecordsRequestView."""

    name: str
    partitions: tuple[DeleteRecordsPartitionView, ...]


class DeleteRecordsRequestView(Protocol):
    """DeleteRecords request, v0-v2."""

    topics: tuple[DeleteRecordsTopicView, ...]
    timeout: datetime.timedelta


class InitProducerIdRequestView(Protocol):
    """InitProducerId request, v0-v6. Only in some versions: ``enable2_pc``, ``keep_prepared_txn``,
    ``producer_epoch``, ``producer_id``.
    """

    transactional_id: str | None
    transaction_timeout: datetime.timedelta


class AddPartitionsToTxnRequestView(Protocol):
    """AddPartitionsToTxn request, v0-v5. Only in some versions: ``transactions``,
    ``v3_and_below_producer_epoch``, ``v3_and_below_producer_id``, ``v3_and_below_topics``,
    ``v3_and_below_transactional_id``.
    """

    pass


class AddPartitionsToTxnV3TopicView(Protocol):
    """``v3_and_below_topics`` of AddPartitionsToTxnRequestV0To3View."""

    name: str
    partitions: tuple[int, ...]


class AddPartitionsToTxnRequestV0To3View(Protocol):
    """AddPartitionsToTxn request, v0-v3: one transaction's partitions."""

    v3_and_below_transactional_id: str
    v3_and_below_producer_id: int
    v3_and_below_producer_epoch: int
    v3_and_below_topics: tuple[AddPartitionsToTxnV3TopicView, ...]


class AddPartitionsToTxnTopicView(Protocol):
    """``topics`` of AddPartitionsToTxnTransactionView."""

    name: str
    partitions: tuple[int, ...]


class AddPartitionsToTxnTransactionView(Protocol):
    """``transactions`` of AddPartitionsToTxnRequestV4To5View."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    verify_only: bool
    topics: tuple[AddPartitionsToTxnTopicView, ...]


class AddPartitionsToTxnRequestV4To5View(Protocol):
    """AddPartitionsToTxn request, v4-v5: a batch of transactions (KIP-890)."""

    transactions: tuple[AddPartitionsToTxnTransactionView, ...]


class EndTxnRequestView(Protocol):
    """EndTxn request, v0-v5."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool


class ListTransactionsRequestView(Protocol):
    """ListTransactions request, v0-v1. Only in some versions: ``duration_filter``."""

    state_filters: tuple[str, ...]
    producer_id_filters: tuple[int, ...]


class DescribeTransactionsRequestView(Protocol):
    """DescribeTransactions request, v0-v0."""

    transactional_ids: tuple[str, ...]


class TopicRequestView(Protocol):
    """``topics`` of DescribeProducersRequestView."""

    name: str
    partition_indexes: tuple[int, ...]


class DescribeProducersRequestView(Protocol):
    """DescribeProducers request, v0-v0."""

    topics: tuple[TopicRequestView, ...]


class WritableTxnMarkerTopicView(Protocol):
    """``topics`` of WritableTxnMarkerView."""

    name: str
    partition_indexes: tuple[int, ...]


class WritableTxnMarkerView(Protocol):
    """``markers`` of WriteTxnMarkersRequestView."""

    producer_id: int
    producer_epoch: int
    transaction_result: bool
    topics: tuple[WritableTxnMarkerTopicView, ...]
    coordinator_epoch: int


class WriteTxnMarkersRequestView(Protocol):
    """WriteTxnMarkers request, v1-v2."""

    markers: tuple[WritableTxnMarkerView, ...]


class IncrementalAlterConfigsAlterConfigsResourceAlterableConfigView(Protocol):
    """``configs`` of IncrementalAlterConfigsAlterConfigsResourceView."""

    name: str
    config_operation: int
    value: str | None


class IncrementalAlterConfigsAlterConfigsResourceView(Protocol):
    """``resources`` of IncrementalAlterConfigsRequestView."""

    resource_type: int
    resource_name: str
    configs: tuple[IncrementalAlterConfigsAlterConfigsResourceAlterableConfigView, ...]


class IncrementalAlterConfigsRequestView(Protocol):
    """IncrementalAlterConfigs request, v0-v1."""

    resources: tuple[IncrementalAlterConfigsAlterConfigsResourceView, ...]
    validate_only: bool
