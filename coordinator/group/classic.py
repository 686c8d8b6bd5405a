"""A classic (JoinGroup/SyncGroup) consumer group: its states, members and transition table."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from coordinator.group.records import GroupValue, MemberValue, subscribed_topics
from coordinator.group.results import JoinResult, SyncResult
from txn.errors import ErrorCode, IllegalTransitionError

CONSUMER_PROTOCOL_TYPE = "consumer"


class ClassicState(Enum):
    """Kafka's classic group states, with the names DescribeGroups and ListGroups print."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_S = ClassicState

# state -> the states it may move to (Kafka's ClassicGroupState valid previous states, inverted)
TRANSITIONS: dict[ClassicState, frozenset[ClassicState]] = {
    _S.EMPTY: frozenset({_S.PREPARING_REBALANCE, _S.DEAD}),
    _S.PREPARING_REBALANCE: frozenset({_S.COMPLETING_REBALANCE, _S.EMPTY, _S.DEAD}),
    _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE, _S.STABLE, _S.DEAD}),
    _S.STABLE: frozenset({_S.PREPARING_REBALANCE, _S.DEAD}),
    _S.DEAD: frozenset(),
}

Responder = Callable[[Any], None]


@dataclass(slots=True)
class ClassicMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    awaiting_join: Responder | None = None
    awaiting_sync: Responder | None = None

    def metadata(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def protocol_names(self) -> list[str]:
        return [name for name, _meta in self.protocols]

    def answer_waiting(self, error: ErrorCode) -> None:
        """Answer this member's parked JoinGroup and SyncGroup, if any, with ``error``."""
        if self.awaiting_join is not None:
            self.awaiting_join(JoinResult(error, self.member_id))
        if self.awaiting_sync is not None:
            self.awaiting_sync(SyncResult(error))


@dataclass(slots=True)
class ClassicGroup:
    group_id: str
    state: ClassicState = _S.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader_id: str | None = None
    members: dict[str, ClassicMember] = field(default_factory=dict)
    pending_members: set[str] = field(default_factory=set)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    state_timestamp: int = -1
    initial_delay_until: int = -1  # while the first rebalance of an empty group waits for more

    def transition(self, to: ClassicState, now_ms: int) -> None:
        """The one guard: moves only along TRANSITIONS."""
        if to not in TRANSITIONS[self.state]:
            msg = f"classic group {self.group_id}: {self.state.value} -> {to.value}"
            raise IllegalTransitionError(msg)
        self.state = to
        self.state_timestamp = now_ms

    def member_error(self, member_id: str, group_instance_id: str | None) -> ErrorCode:
        """Kafka's check of who sends a join, sync, heartbeat or commit: with an instance id,
        that instance must be a static member (else UNKNOWN_MEMBER_ID) held by this member id
        (else FENCED_INSTANCE_ID); without one, the member id must be a member."""
        if group_instance_id is not None:
            known = self.static_members.get(group_instance_id)
            if known is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if known != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE

    def subscribed_topics(self) -> frozenset[str] | None:
        """Topics the members subscribe to (consumer protocol), None when not a consumer group."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol is None:
            return None if self.protocol_type != CONSUMER_PROTOCOL_TYPE else frozenset()
        topics: set[str] = set()
        for member in self.members.values():
            topics |= subscribed_topics(member.metadata(self.protocol))
        return frozenset(topics)

    def select_protocol(self) -> str | None:
        """Kafka's vote: each member votes for its most preferred protocol all members support."""
        if not self.members:
            return None
        common = set(next(iter(self.members.values())).protocol_names())
        for member in self.members.values():
            common &= set(member.protocol_names())
        if not common:
            return None
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = next(n for n in member.protocol_names() if n in common)
            votes[choice] = votes.get(choice, 0) + 1
        return max(sorted(votes), key=lambda n: votes[n])

    def supports(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        """Can a member with these protocols join (same type, one protocol in common)?"""
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        if protocol_type != self.protocol_type:
            return False
        names = {name for name, _meta in protocols}
        for member in self.members.values():
            names &= set(member.protocol_names())
        return bool(names)

    def to_value(self, assignments: Mapping[str, bytes] | None = None) -> GroupValue:
        """The group's record; ``assignments`` (member id -> assignment, none for a member
        left out) instead of the members' current ones."""
        return GroupValue(
            protocol_type=self.protocol_type or "",
            generation=self.generation,
            protocol=self.protocol,
            leader=self.leader_id,
            state_timestamp=self.state_timestamp,
            members=tuple(
                MemberValue(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    m.metadata(self.protocol),
                    m.assignment if assignments is None else assignments.get(m.member_id, b""),
                )
                for m in self.members.values()
            ),
        )

    def install(self, value: GroupValue) -> None:
        """Make the group's log-backed fields those of its record ``value``: generation,
        protocol, leader and the members with their assignments.  Members keep their objects
        (and what waits on them) and the protocols the record leaves out; a group at rest
        takes the state the record implies, a rebalance in progress keeps its own."""
        self.generation = value.generation
        self.protocol_type = value.protocol_type or None
        self.protocol = value.protocol
        self.leader_id = value.leader
        self.state_timestamp = value.state_timestamp
        members: dict[str, ClassicMember] = {}
        for m in value.members:
            member = self.members.get(m.member_id)
            if member is None:
                member = ClassicMember(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    value.protocol_type,
                    [(value.protocol or "", m.subscription)],
                )
            elif member.metadata(value.protocol) != m.subscription:
                member.protocols = [(value.protocol or "", m.subscription)]
            member.group_instance_id = m.group_instance_id
            member.client_id, member.client_host = m.client_id, m.client_host
            member.rebalance_timeout_ms = m.rebalance_timeout_ms
            member.session_timeout_ms = m.session_timeout_ms
            member.assignment = m.assignment
            members[m.member_id] = member
        self.members.clear()
        self.members.update(members)
        for instance, member_id in list(self.static_members.items()):
            if member_id not in members:
                del self.static_members[instance]
        for m in value.members:
            if m.group_instance_id is not None:
                self.static_members[m.group_instance_id] = m.member_id
        if self.state in (_S.STABLE, _S.EMPTY):
            self.state = _S.STABLE if members else _S.EMPTY

    @classmethod
    def from_value(cls, group_id: str, value: GroupValue) -> ClassicGroup:
        group = cls(
            group_id,
            state=_S.STABLE if value.members else _S.EMPTY,
            generation=value.generation,
            protocol_type=value.protocol_type or None,
            protocol=value.protocol,
            leader_id=value.leader,
            state_timestamp=value.state_timestamp,
        )
        for m in value.members:
            group.members[m.member_id] = ClassicMember(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                value.protocol_type,
                [(value.protocol or "", m.subscription)],
                m.assignment,
            )
            if m.group_instance_id is not None:
                group.static_members[m.group_instance_id] = m.member_id
        return group
