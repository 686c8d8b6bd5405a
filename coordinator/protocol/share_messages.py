"""Typed responses of the share-group APIs (``share_handlers``, KIP-932), named as Kafka's newest
schemas.  ShareGroupHeartbeat answers ``group_messages.GroupHeartbeatResponse``, ListGroups
and DeleteGroups theirs of ``group_messages``, the KIP-1289 APIs theirs of ``txn_messages``.

As ``txn_messages``: ``wire.encode_response`` renders a message into the negotiated version,
and a default is the value the wire carries when the field is left out.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from coordinator.protocol.responses import OPERATIONS_NOT_REQUESTED
from coordinator.protocol.topic_messages import AlterConfigsResourceResponse
from txn.errors import ErrorCode

# -- ShareGroupDescribe ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareTopicPartitions:
    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareAssignment:
    topic_partitions: tuple[ShareTopicPartitions, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupMember:
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: ShareAssignment


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareDescribedGroup:
    """A ShareGroupDescribe entry; one the broker cannot describe keeps the defaults (as
    Kafka: no state and no epochs)."""

    error_code: ErrorCode
    error_message: str | None = None
    group_id: str
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[ShareGroupMember, ...] = ()
    authorized_operations: int = OPERATIONS_NOT_REQUESTED


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupDescribeResponse:
    groups: tuple[ShareDescribedGroup, ...]


# -- ShareFetch and ShareAcknowledge -----------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderIdAndEpoch:
    leader_id: int
    leader_epoch: int = 0


#: The current leader of an entry answered without one (the wire's zeroes).
NO_LEADER = LeaderIdAndEpoch(leader_id=0)


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeEndpoint:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AcquiredRecords:
    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareFetchPartition:
    partition_index: int
    error_code: ErrorCode
    acknowledge_error_code: ErrorCode = ErrorCode.NONE
    records: bytes = b""
    error_message: str | None = None
    acknowledge_error_message: str | None = None
    current_leader: LeaderIdAndEpoch = NO_LEADER
    acquired_records: tuple[AcquiredRecords, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareFetchTopic:
    topic_id: uuid.UUID
    partitions: tuple[ShareFetchPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareFetchResponse:
    error_code: ErrorCode
    error_message: str | None = None
    acquisition_lock_timeout: int = 0  # milliseconds
    responses: tuple[ShareFetchTopic, ...] = ()
    node_endpoints: tuple[NodeEndpoint, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareAcknowledgePartition:
    partition_index: int
    error_code: ErrorCode
    error_message: str | None = None
    current_leader: LeaderIdAndEpoch = NO_LEADER


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareAcknowledgeTopic:
    topic_id: uuid.UUID
    partitions: tuple[ShareAcknowledgePartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareAcknowledgeResponse:
    error_code: ErrorCode
    error_message: str | None = None
    acquisition_lock_timeout: int = 0  # milliseconds (v2 and later)
    responses: tuple[ShareAcknowledgeTopic, ...] = ()
    node_endpoints: tuple[NodeEndpoint, ...] = ()


# -- share-group offsets (admin) -----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedShareOffset:
    partition_index: int
    start_offset: int
    leader_epoch: int
    error_code: ErrorCode
    error_message: str | None = None
    lag: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedShareOffsetsTopic:
    topic_name: str
    topic_id: uuid.UUID
    partitions: tuple[DescribedShareOffset, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedShareOffsetsGroup:
    group_id: str
    error_code: ErrorCode
    error_message: str | None = None
    topics: tuple[DescribedShareOffsetsTopic, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeShareGroupOffsetsResponse:
    groups: tuple[DescribedShareOffsetsGroup, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlteredShareOffset:
    partition_index: int
    error_code: ErrorCode
    error_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AlteredShareOffsetsTopic:
    topic_name: str
    topic_id: uuid.UUID
    partitions: tuple[AlteredShareOffset, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterShareGroupOffsetsResponse:
    error_code: ErrorCode
    error_message: str | None = None
    responses: tuple[AlteredShareOffsetsTopic, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DeletedShareOffsetsTopic:
    topic_name: str
    topic_id: uuid.UUID
    error_code: ErrorCode
    error_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteShareGroupOffsetsResponse:
    error_code: ErrorCode
    error_message: str | None = None
    responses: tuple[DeletedShareOffsetsTopic, ...] = ()


# -- group configs -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class IncrementalAlterConfigsResponse:
    responses: tuple[AlterConfigsResourceResponse, ...]
