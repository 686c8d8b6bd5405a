"""Typed responses of the consumer-group APIs (``group_handlers``) and of the group listing and
deletion APIs every group type shares (ListGroups, DeleteGroups), named as Kafka's newest
schemas.

As ``txn_messages``: ``wire.encode_response`` renders a message into the negotiated version,
and a default is the value the wire carries when the field is left out.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from coordinator.protocol.responses import OPERATIONS_NOT_REQUESTED
from txn.errors import ErrorCode

if TYPE_CHECKING:
    from coordinator.share.group_model import GroupHeartbeatResult


# -- classic membership ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinGroupMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinGroupResponse:
    error_code: ErrorCode
    generation_id: int
    protocol_type: str | None
    #: None (v7 and later) or "" (before v7, where it is not nullable) before a protocol is chosen
    protocol_name: str | None
    leader: str
    member_id: str
    members: tuple[JoinGroupMember, ...]
    skip_assignment: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncGroupResponse:
    error_code: ErrorCode
    protocol_type: str | None
    protocol_name: str | None
    assignment: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatResponse:
    error_code: ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaveGroupMember:
    member_id: str
    group_instance_id: str | None
    error_code: ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaveGroupResponse:
    error_code: ErrorCode
    members: tuple[LeaveGroupMember, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedGroup:
    error_code: ErrorCode
    group_id: str
    group_state: str
    protocol_type: str
    protocol_data: str
    members: tuple[DescribedGroupMember, ...] = ()
    authorized_operations: int = OPERATIONS_NOT_REQUESTED


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeGroupsResponse:
    groups: tuple[DescribedGroup, ...]


# -- listing and deleting groups of any type -------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ListGroupsResponse:
    error_code: ErrorCode
    groups: tuple[ListedGroup, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeletableGroupResult:
    group_id: str
    error_code: ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteGroupsResponse:
    results: tuple[DeletableGroupResult, ...]


# -- the group protocols of KIP-848 and KIP-932 ----------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatTopicPartitions:
    topic_id: uuid.UUID
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatAssignment:
    topic_partitions: tuple[HeartbeatTopicPartitions, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupHeartbeatResponse:
    """A ConsumerGroupHeartbeat or ShareGroupHeartbeat response (the two have one shape)."""

    error_code: ErrorCode
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval: int = 0  # milliseconds
    #: None when the assignment is not sent
    assignment: HeartbeatAssignment | None = None


def heartbeat_response(
    result: GroupHeartbeatResult[Any],
    assignment: Iterable[tuple[uuid.UUID, Iterable[int]]] | None,
) -> GroupHeartbeatResponse:
    """A Consumer/ShareGroupHeartbeat response; ``assignment`` as (topic id, partitions) pairs,
    None when it is not sent."""
    return GroupHeartbeatResponse(
        error_code=result.error,
        error_message=result.error_message,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval=result.heartbeat_interval_ms,
        assignment=None
        if assignment is None
        else HeartbeatAssignment(
            topic_partitions=tuple(
                HeartbeatTopicPartitions(topic_id=topic_id, partitions=tuple(sorted(partitions)))
                for topic_id, partitions in assignment
            )
        ),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedTopicPartitions:
    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedAssignment:
    topic_partitions: tuple[DescribedTopicPartitions, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: DescribedAssignment
    target_assignment: DescribedAssignment
    subscribed_topic_regex: str | None = None
    member_type: int = 1  # the consumer protocol (v1 and later)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerDescribedGroup:
    """A ConsumerGroupDescribe entry; one the broker cannot describe keeps the defaults (as
    Kafka: no state and no epochs)."""

    error_code: ErrorCode
    error_message: str | None = None
    group_id: str
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[ConsumerGroupMember, ...] = ()
    authorized_operations: int = OPERATIONS_NOT_REQUESTED


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupDescribeResponse:
    groups: tuple[ConsumerDescribedGroup, ...]


# -- offsets -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionError:
    """An OffsetCommit or OffsetDelete partition's answer."""

    partition_index: int
    error_code: ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicErrors:
    """An OffsetCommit or OffsetDelete topic's answers."""

    name: str
    partitions: tuple[PartitionError, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitResponse:
    topics: tuple[TopicErrors, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetDeleteResponse:
    error_code: ErrorCode
    topics: tuple[TopicErrors, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchPartition:
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int
    metadata: str | None
    error_code: ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchTopic:
    name: str
    partitions: tuple[OffsetFetchPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchGroup:
    group_id: str
    error_code: ErrorCode
    topics: tuple[OffsetFetchTopic, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchResponse:
    """v8 and later answer ``groups`` (the batched form), v7 and earlier one group's
    ``error_code`` and ``topics``."""

    error_code: ErrorCode = ErrorCode.NONE
    topics: tuple[OffsetFetchTopic, ...] = ()
    groups: tuple[OffsetFetchGroup, ...] = ()
