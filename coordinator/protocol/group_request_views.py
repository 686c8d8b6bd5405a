"""Version-free views of the requests of the consumer group APIs and group offsets.

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


class JoinGroupRequestProtocolView(Protocol):
    """``protocols`` of JoinGroupRequestView."""

    name: str
    metadata: bytes


class JoinGroupRequestView(Protocol):
    """JoinGroup request, v0-v9. Only in some versions: ``group_instance_id``, ``reason``,
    ``rebalance_timeout``.
    """

    group_id: str
    session_timeout: datetime.timedelta
    member_id: str
    protocol_type: str
    protocols: tuple[JoinGroupRequestProtocolView, ...]


class SyncGroupRequestAssignmentView(Protocol):
    """``assignments`` of SyncGroupRequestView."""

    member_id: str
    assignment: bytes


class SyncGroupRequestView(Protocol):
    """SyncGroup request, v0-v5. Only in some versions: ``group_instance_id``, ``protocol_name``,
    ``protocol_type``.
    """

    group_id: str
    generation_id: int
    member_id: str
    assignments: tuple[SyncGroupRequestAssignmentView, ...]


class HeartbeatRequestView(Protocol):
    """Heartbeat request, v0-v4. Only in some versions: ``group_instance_id``."""

    group_id: str
    generation_id: int
    member_id: str


class LeaveGroupRequestView(Protocol):
    """LeaveGroup request, v0-v5. Only in some versions: ``member_id``, ``members``."""

    group_id: str


class LeaveGroupRequestV0To2View(Protocol):
    """LeaveGroup request, v0-v2: one member."""

    group_id: str
    member_id: str


class LeaveGroupMemberView(Protocol):
    """``members`` of LeaveGroupRequestV3To5View. Only in some versions: ``reason``."""

    member_id: str
    group_instance_id: str | None


class LeaveGroupRequestV3To5View(Protocol):
    """LeaveGroup request, v3-v5: a batch of members (KIP-345)."""

    group_id: str
    members: tuple[LeaveGroupMemberView, ...]


class DescribeGroupsRequestView(Protocol):
    """DescribeGroups request, v0-v5. Only in some versions: ``include_authorized_operations``."""

    groups: tuple[str, ...]


class TopicPartitionsView(Protocol):
    """``topic_partitions`` of ConsumerGroupHeartbeatRequestView."""

    topic_id: uuid.UUID | None
    partitions: tuple[int, ...]


class ConsumerGroupHeartbeatRequestView(Protocol):
    """ConsumerGroupHeartbeat request, v0-v1. Only in some versions: ``subscribed_topic_regex``."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout: datetime.timedelta
    subscribed_topic_names: tuple[str, ...] | None
    server_assignor: str | None
    topic_partitions: tuple[TopicPartitionsView, ...] | None


class ConsumerGroupDescribeRequestView(Protocol):
    """ConsumerGroupDescribe request, v0-v1."""

    group_ids: tuple[str, ...]
    include_authorized_operations: bool


class OffsetCommitRequestPartitionView(Protocol):
    """``partitions`` of OffsetCommitRequestTopicView. Only in some versions:
    ``committed_leader_epoch``.
    """

    partition_index: int
    committed_offset: int
    committed_metadata: str | None


class OffsetCommitRequestTopicView(Protocol):
    """``topics`` of OffsetCommitRequestView."""

    name: str
    partitions: tuple[OffsetCommitRequestPartitionView, ...]


class OffsetCommitRequestView(Protocol):
    """OffsetCommit request, v2-v9. Only in some versions: ``group_instance_id``,
    ``retention_time``.
    """

    group_id: str
    generation_id_or_member_epoch: int
    member_id: str
    topics: tuple[OffsetCommitRequestTopicView, ...]


class OffsetFetchRequestView(Protocol):
    """OffsetFetch request, v1-v9. Only in some versions: ``group_id``, ``groups``,
    ``require_stable``, ``topics``.
    """

    pass


class OffsetFetchRequestTopicView(Protocol):
    """``topics`` of OffsetFetchRequestV1To7View and of OffsetFetchRequestGroupView."""

    name: str
    partition_indexes: tuple[int, ...]


class OffsetFetchRequestV1To7View(Protocol):
    """OffsetFetch request, v1-v7: one group. Only in some versions: ``require_stable``."""

    group_id: str
    topics: tuple[OffsetFetchRequestTopicView, ...] | None


class OffsetFetchRequestGroupView(Protocol):
    """``groups`` of OffsetFetchRequestV8To9View. Only in some versions: ``member_epoch``,
    ``member_id``.
    """

    group_id: str
    topics: tuple[OffsetFetchRequestTopicView, ...] | None


class OffsetFetchRequestV8To9View(Protocol):
    """OffsetFetch request, v8-v9: a batch of groups (KIP-709)."""

    groups: tuple[OffsetFetchRequestGroupView, ...]
    require_stable: bool


class OffsetDeleteRequestPartitionView(Protocol):
    """``partitions`` of OffsetDeleteRequestTopicView."""

    partition_index: int


class OffsetDeleteRequestTopicView(Protocol):
    """``topics`` of OffsetDeleteRequestView."""

    name: str
    partitions: tuple[OffsetDeleteRequestPartitionView, ...]


class OffsetDeleteRequestView(Protocol):
    """OffsetDelete request, v0-v0."""

    group_id: str
    topics: tuple[OffsetDeleteRequestTopicView, ...]


class AddOffsetsToTxnRequestView(Protocol):
    """AddOffsetsToTxn request, v0-v4."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str


class TxnOffsetCommitRequestPartitionView(Protocol):
    """``partitions`` of TxnOffsetCommitRequestTopicView. Only in some versions:
    ``committed_leader_epoch``.
    """

    partition_index: int
    committed_offset: int
    committed_metadata: str | None


class TxnOffsetCommitRequestTopicView(Protocol):
    """``topics`` of TxnOffsetCommitRequestView."""

    name: str
    partitions: tuple[TxnOffsetCommitRequestPartitionView, ...]


class TxnOffsetCommitRequestView(Protocol):
    """TxnOffsetCommit request, v0-v4. Only in some versions: ``generation_id``,
    ``group_instance_id``, ``member_id``.
    """

    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    topics: tuple[TxnOffsetCommitRequestTopicView, ...]


class ListGroupsRequestView(Protocol):
    """ListGroups request, v0-v5. Only in some versions: ``states_filter``, ``types_filter``."""

    pass


class DeleteGroupsRequestView(Protocol):
    """DeleteGroups request, v0-v2."""

    groups_names: tuple[str, ...]
