"""The share-group coordinator's model: states and constants, the topic seam, results and
views, members, groups and partition states, and the record and validation helpers."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, Protocol, TypeVar

from coordinator.share.assignor import Assignment
from coordinator.share.group_records import (
    CurrentAssignmentRecord,
    GroupRecord,
    MemberRecord,
    PartitionStateRecord,
)
from txn.errors import ErrorCode
from txn.ids import TopicIdPartition

JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1

STATE_EMPTY = "Empty"
STATE_STABLE = "Stable"
STATE_DEAD = "Dead"
GROUP_TYPE = "share"

A = TypeVar("A")


# --- the topic seam ---------------------------------------------------------------------------


class TopicMetadata(Protocol):
    """What the coordinator reads about a topic (``coordinator.topics.TopicInfo`` fits)."""

    @property
    def name(self) -> str: ...

    @property
    def topic_id(self) -> uuid.UUID: ...

    @property
    def num_partitions(self) -> int: ...


class TopicLookup(Protocol):
    """Topic metadata by name and by id (``coordinator.topics.TopicRegistry`` fits)."""

    def get(self, name: str) -> TopicMetadata | None: ...

    def by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None: ...


# --- results and views ------------------------------------------------------------------------

AssignmentList = list[tuple[uuid.UUID, list[int]]]


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    """ShareGroupHeartbeat's request fields; ``rack_id``, ``subscribed_topic_names``,
    ``client_id`` and ``client_host`` left None keep the member's previous values."""

    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: list[str] | None
    client_id: str | None = None
    client_host: str | None = None


@dataclass(frozen=True, slots=True)
class GroupHeartbeatResult(Generic[A]):
    """Consumer/ShareGroupHeartbeat's response fields; ``assignment`` is None when it is not
    sent."""

    error: ErrorCode
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: A | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatResult(GroupHeartbeatResult[AssignmentList]):
    """ShareGroupHeartbeat's response fields."""


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ShareGroupMemberDescription:
    member_id: str
    rack_id: str | None
    client_id: str
    client_host: str
    member_epoch: int
    subscribed_topic_names: tuple[str, ...]
    assignment: tuple[TopicPartitions, ...]


@dataclass(frozen=True, slots=True)
class ShareGroupDescription:
    """ShareGroupDescribe v1's DescribedGroup."""

    group_id: str
    error: ErrorCode
    error_message: str | None = None
    group_state: str = STATE_DEAD
    group_epoch: int = -1
    assignment_epoch: int = -1
    assignor_name: str = ""
    members: tuple[ShareGroupMemberDescription, ...] = ()


class GroupListing(NamedTuple):
    group_id: str
    group_state: str
    group_type: str


@dataclass(frozen=True, slots=True)
class ListFilter:
    """ListGroups' state and type filters (any coordinator's): an empty filter matches
    everything, and names match case-insensitively."""

    states: frozenset[str]
    types: frozenset[str]

    @classmethod
    def of(cls, states: Iterable[str], types: Iterable[str]) -> ListFilter:
        return cls(frozenset(s.lower() for s in states), frozenset(t.lower() for t in types))

    def wants_type(self, group_type: str) -> bool:
        return not self.types or group_type in self.types

    def wants_state(self, state: str) -> bool:
        return not self.states or state.lower() in self.states


@dataclass(frozen=True, slots=True)
class ShareMemberView:
    member_id: str
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    member_epoch: int
    previous_member_epoch: int
    assigned: Assignment  # what the member was last given
    target: Assignment  # what the assignor wants it to have


@dataclass(frozen=True, slots=True)
class ShareGroupView:
    """A read-only snapshot of one group (tests, describe, the broker's share-fetch checks)."""

    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    members: Mapping[str, ShareMemberView]
    subscribed_topic_names: frozenset[str]
    initializing: Mapping[uuid.UUID, frozenset[int]]
    initialized: Mapping[uuid.UUID, frozenset[int]]
    deleting: Mapping[uuid.UUID, frozenset[int]]


# --- in-memory state --------------------------------------------------------------------------

NO_ASSIGNMENT: Assignment = frozenset()


@dataclass(frozen=True, slots=True)
class GroupMember:
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assigned: Assignment = NO_ASSIGNMENT


#: A new share group's epoch and assignment epoch before its first change: Kafka 4.4 starts a
#: group at 1, so the first member's join makes epoch 2.
INITIAL_GROUP_EPOCH = 1


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    epoch: int = INITIAL_GROUP_EPOCH
    subscription_metadata: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    members: dict[str, GroupMember] = field(default_factory=dict)
    assignment_epoch: int = INITIAL_GROUP_EPOCH
    target: dict[str, Assignment] = field(default_factory=dict)
    assignment_timestamp_ms: int = 0  # when ``target`` was computed (0: unknown)

    @property
    def state(self) -> str:
        return STATE_STABLE if self.members else STATE_EMPTY


_Sets = dict[uuid.UUID, frozenset[int]]


@dataclass(slots=True)
class StatePartitionMetadata:
    """ShareGroupStatePartitionMetadata: a group's share partitions by persister stage."""

    initializing: _Sets = field(default_factory=dict)
    initialized: _Sets = field(default_factory=dict)
    deleting: _Sets = field(default_factory=dict)
    names: dict[uuid.UUID, str] = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (self.initializing or self.initialized or self.deleting)

    def copy(self) -> StatePartitionMetadata:
        return StatePartitionMetadata(
            dict(self.initializing), dict(self.initialized), dict(self.deleting), dict(self.names)
        )

    def same_sets(self, other: StatePartitionMetadata) -> bool:
        return (self.initializing, self.initialized, self.deleting) == (
            other.initializing,
            other.initialized,
            other.deleting,
        )


@dataclass(slots=True)
class GroupPlan:
    """The outcome of re-evaluating one group: records to write and the state they produce."""

    records: list[GroupRecord]
    epoch: int
    assignment_epoch: int
    target: dict[str, Assignment]
    metadata: dict[str, tuple[uuid.UUID, int]]


def can_compute_next_target_assignment(last_ms: int, interval_ms: int, now_ms: int) -> bool:
    """Kafka's test, for share and KIP-848 groups: a group computes its next target assignment
    when it has not computed one (or its time is unknown: 0), when its interval is 0, or once
    the interval has passed since the last one."""
    return last_ms == 0 or interval_ms == 0 or now_ms >= last_ms + interval_ms


def add_to_sets(sets: _Sets, topic_id: uuid.UUID, parts: Iterable[int]) -> None:
    merged = sets.get(topic_id, frozenset()) | frozenset(parts)
    if merged:
        sets[topic_id] = merged


def remove_from_sets(sets: _Sets, topic_id: uuid.UUID, parts: Iterable[int]) -> None:
    left = sets.get(topic_id, frozenset()) - frozenset(parts)
    if left:
        sets[topic_id] = left
    else:
        sets.pop(topic_id, None)


def as_assignment_list(assigned: Iterable[TopicIdPartition]) -> AssignmentList:
    by_topic: dict[uuid.UUID, list[int]] = {}
    for tp in assigned:
        by_topic.setdefault(tp.topic_id, []).append(tp.partition)
    return [(topic_id, sorted(parts)) for topic_id, parts in sorted(by_topic.items())]


def flatten_sets(sets: Mapping[uuid.UUID, frozenset[int]]) -> list[tuple[uuid.UUID, int]]:
    return [(topic_id, p) for topic_id in sorted(sets) for p in sorted(sets[topic_id])]


# --- helpers ----------------------------------------------------------------------------------


def invalid_heartbeat(request: HeartbeatRequest) -> str | None:
    """Kafka's request checks (GroupCoordinatorService), in its order; None if valid."""
    if not request.member_id or not request.member_id.strip():
        return "MemberId can't be empty."
    if not request.group_id or not request.group_id.strip():
        return "GroupId can't be empty."
    if request.rack_id is not None and not request.rack_id.strip():
        return "RackId can't be empty."
    if request.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
        if not request.subscribed_topic_names:
            return "SubscribedTopicNames must be set in first request."
    elif request.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
        return "MemberEpoch is invalid."
    return None


def fenced_message(member: GroupMember, received: int) -> str | None:
    """FENCED_MEMBER_EPOCH's message if ``received`` is neither the member's epoch nor, after a
    lost response, its previous one; else None."""
    if received > member.member_epoch:
        return (
            f"The share group member has a greater member epoch ({received}) than the one known "
            f"by the group coordinator ({member.member_epoch}). The member must abandon all its "
            "partitions and rejoin."
        )
    if received < member.member_epoch and received != member.previous_member_epoch:
        return (
            f"The share group member has a smaller member epoch ({received}) than the one known "
            f"by the group coordinator ({member.member_epoch}), and it does not match the "
            f"previous member epoch ({member.previous_member_epoch}). The member must abandon "
            "all its partitions and rejoin."
        )
    return None


def assignable_partitions(
    state: StatePartitionMetadata | None, metadata: Mapping[str, tuple[uuid.UUID, int]]
) -> dict[uuid.UUID, frozenset[int]]:
    """Initialized partitions of the subscribed topics (those the assignor may hand out)."""
    if state is None:
        return {}
    out: dict[uuid.UUID, frozenset[int]] = {}
    for topic_id, num_partitions in metadata.values():
        parts = frozenset(p for p in state.initialized.get(topic_id, ()) if p < num_partitions)
        if parts:
            out[topic_id] = parts
    return out


def member_record_of(group_id: str, member: GroupMember) -> MemberRecord:
    return MemberRecord(
        group_id,
        member.member_id,
        member.rack_id,
        member.client_id,
        member.client_host,
        member.subscribed,
    )


def current_assignment_record_of(group_id: str, member: GroupMember) -> CurrentAssignmentRecord:
    return CurrentAssignmentRecord(
        group_id,
        member.member_id,
        member.member_epoch,
        member.previous_member_epoch,
        member.assigned,
    )


def partition_state_record_of(group_id: str, state: StatePartitionMetadata) -> PartitionStateRecord:
    return PartitionStateRecord(
        group_id,
        dict(state.initializing),
        dict(state.initialized),
        dict(state.deleting),
        dict(state.names),
    )
