"""The state of a KIP-848 consumer group: its members, their assignments, the group's epochs.

Below both ``consumer_protocol`` (which changes it) and ``parts`` (which types the
coordinator's shared state with it).
"""

from __future__ import annotations

import copy
import dataclasses
import uuid
from dataclasses import dataclass, field

from coordinator.group.consumer_records import ClassicMeta

__all__ = ["ConsumerMember", "ConsumerProtocolGroup", "Partitions"]

Partitions = dict[uuid.UUID, frozenset[int]]


@dataclass(slots=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed: frozenset[str]
    server_assignor: str | None
    rebalance_timeout_ms: int
    epoch: int = 0
    previous_epoch: int = -1
    assigned: Partitions = field(default_factory=dict)
    revoking: Partitions = field(default_factory=dict)
    owned: Partitions | None = None  # what the member last said it owns
    sent: Partitions | None = None  # the assignment last sent to it
    classic: ClassicMeta | None = None  # a classic-protocol member (``coordinator.group.mixed``)


@dataclass(slots=True)
class ConsumerProtocolGroup:
    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, Partitions] = field(default_factory=dict)
    assignor: str = "uniform"
    topology: tuple[tuple[str, str, int], ...] = ()  # (topic, id, partitions) last assigned

    def working_copy(self) -> ConsumerProtocolGroup:
        """A copy an operation changes instead of the group (whose state changes only by
        replaying the records written for it): its own members and target maps, and its own
        member objects; their values are shared (an operation replaces them, never changes
        them in place)."""
        return dataclasses.replace(
            self,
            members={m: copy.copy(member) for m, member in self.members.items()},
            target=dict(self.target),
        )

    @property
    def state(self) -> str:
        if not self.members:
            return "Empty"
        if any(m.epoch != self.assignment_epoch or m.revoking for m in self.members.values()):
            return "Reconciling"
        return "Stable"

    def subscribed_topics(self) -> frozenset[str]:
        topics: set[str] = set()
        for m in self.members.values():
            topics |= m.subscribed
        return frozenset(topics)
