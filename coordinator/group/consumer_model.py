"""The state of a KIP-848 consumer group: its members, their assignments, the group's epochs.

Below ``consumer_protocol`` and ``consumer_change`` (which compute its changes as records;
replaying them, ``coordinator.group.shard``, changes it) and ``parts`` (which types the
coordinator's shared state with it).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from coordinator.group.consumer_records import ClassicMeta, RegexValue

__all__ = [
    "INITIAL_GROUP_EPOCH",
    "ConsumerMember",
    "ConsumerProtocolGroup",
    "Partitions",
    "assignment_epochs",
    "held_epochs",
    "preferred_assignor",
    "subscribed_topics",
]

Partitions = dict[uuid.UUID, frozenset[int]]

#: A new KIP-848 (or share) group's epoch and target assignment epoch before its first
#: change: Kafka 4.4 starts a group at 1, so the first member's join makes epoch 2.
INITIAL_GROUP_EPOCH = 1


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
    # KIP-1251: the member epoch at which each assigned or revoking partition was assigned
    assignment_epochs: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict)
    owned: Partitions | None = None  # what the member last said it owns
    sent: Partitions | None = None  # the assignment last sent to it
    classic: ClassicMeta | None = None  # a classic-protocol member (``coordinator.group.mixed``)
    regex: str | None = None  # SubscribedTopicRegex (KIP-848; "" or None: none)
    # The topics the group's resolution of ``regex`` matched: kept with the member, from the
    # group's regex records (``coordinator.group.consumer_regex``), not written with it.
    regex_topics: frozenset[str] = frozenset()

    @property
    def topics(self) -> frozenset[str]:
        """What the member is subscribed to: its topic names and its regex's topics."""
        return self.subscribed | self.regex_topics if self.regex_topics else self.subscribed


@dataclass(slots=True)
class ConsumerProtocolGroup:
    group_id: str
    epoch: int = INITIAL_GROUP_EPOCH
    assignment_epoch: int = INITIAL_GROUP_EPOCH
    assignment_timestamp: int = 0  # when ``target`` was computed, in ms (0: unknown)
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, Partitions] = field(default_factory=dict)
    assignor: str = "uniform"
    topology: tuple[tuple[str, str, int], ...] = ()  # (topic, id, partitions) last assigned
    resolved: dict[str, RegexValue] = field(default_factory=dict)  # the members' regexes

    @property
    def state(self) -> str:
        if not self.members:
            return "Empty"
        if self.epoch > self.assignment_epoch:
            return "Assigning"  # Kafka's: the epoch's target assignment is not computed yet
        if any(m.epoch != self.assignment_epoch or m.revoking for m in self.members.values()):
            return "Reconciling"
        return "Stable"

    def subscribed_topics(self) -> frozenset[str]:
        return subscribed_topics(self.members)


def subscribed_topics(members: dict[str, ConsumerMember]) -> frozenset[str]:
    topics: set[str] = set()
    for m in members.values():
        topics |= m.topics
    return frozenset(topics)


def preferred_assignor(members: dict[str, ConsumerMember]) -> str:
    """The server assignor the first member that names one prefers; ``uniform`` otherwise."""
    preferred = [m.server_assignor for m in members.values() if m.server_assignor]
    return preferred[0] if preferred else "uniform"


def assignment_epochs(
    member: ConsumerMember, epoch: int, assigned: Partitions, revoking: Partitions
) -> dict[tuple[uuid.UUID, int], int]:
    """The assignment epochs of a member's next current assignment (KIP-1251): a partition it
    already held keeps the epoch it was assigned at, one new to it takes ``epoch`` (the
    member epoch it comes with).  Written in each current-assignment record (Kafka 4.4's
    tagged ``AssignmentEpochs``), so a reload after compaction keeps them; a record without
    them is given the epochs derived here on replay; there a static member that left for a
    while (epoch -2) has its partitions' epochs reset to 0, as Kafka reads such a record."""
    known = {} if epoch == -2 else member.assignment_epochs
    epoch = max(epoch, 0)
    out: dict[tuple[uuid.UUID, int], int] = {}
    for parts in (assigned, revoking):
        for topic_id, numbers in parts.items():
            for p in numbers:
                out[(topic_id, p)] = known.get((topic_id, p), epoch)
    return out


def held_epochs(member: ConsumerMember) -> dict[tuple[uuid.UUID, int], int]:
    """What ``member``'s current-assignment record says of its partitions' assignment epochs
    (KIP-1251): a partition it already held keeps its epoch -- through a static member's
    temporary leave (epoch -2) too, as Kafka 4.4 keeps them -- and one new to it takes the
    member's epoch."""
    epoch = max(member.epoch, 0)
    out: dict[tuple[uuid.UUID, int], int] = {}
    for parts in (member.assigned, member.revoking):
        for topic_id, numbers in parts.items():
            for p in numbers:
                out[(topic_id, p)] = member.assignment_epochs.get((topic_id, p), epoch)
    return out
