"""The consumer-group shard changes only by replay: after any sequence of operations, a fresh
coordinator loaded from the log has the live one's log-backed state.

Compared: committed offsets (with the log offset of their record), transactional offsets
pending per producer and the producers' epochs, every KIP-848 group as its records
(``records_of``), and every classic group at rest as its record (``to_value``).  What is in
memory only stays out, as in Kafka: a classic group's rebalance in progress (its record is
written when the rebalance completes), a classic group that never completed one, KIP-848
members' owned and sent partitions, a Stable classic group's state timestamp (its move to
Stable follows its record), a classic group whose record failed to be written when a
rebalance left it empty (it keeps its next generation, as Kafka's does).  Classic and
KIP-848 operations share one of their group ids (offsets go to every id); operations run on
a manual clock over a memory log, some with their append failing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.assembly import consumer_group_coordinator
from coordinator.group.classic import ClassicGroup, ClassicState
from coordinator.group.consumer_protocol import records_of
from coordinator.group.coordinator import ConsumerGroupCoordinator
from coordinator.group.offset_commands import Committer
from coordinator.group.records import GroupValue
from coordinator.group.results import JoinRequest
from coordinator.log.memory_log import MemoryLog
from coordinator.topics import TopicRegistry
from tests.unit.faulty_log import FaultyLog
from tests.unit.group.test_consumer_groups import subscription
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.ids import TopicPartition

CLASSIC = ["c0", "c1"]
CONSUMER = ["c1", "k0"]  # c1 is both: upgrades, downgrades, an empty group taken over
GROUPS = [*CLASSIC, "k0", "manual"]
CONFIG = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.retention.minutes": "1",
    "offsets.retention.check.interval.ms": "1000",
    "group.consumer.session.timeout.ms": "45000",
}


@dataclass(frozen=True)
class Join:
    group: int
    member: int  # an existing member (by position) or, past the end, a new one


@dataclass(frozen=True)
class Sync:
    group: int
    member: int


@dataclass(frozen=True)
class Leave:
    group: int
    member: int


@dataclass(frozen=True)
class Beat:
    """A KIP-848 heartbeat: 0 joins, 1 heartbeats (releasing what it revokes), 2 leaves."""

    group: int
    member: int
    kind: int


@dataclass(frozen=True)
class Commit:
    group: int
    partition: int
    offset: int


@dataclass(frozen=True)
class TxnCommit:
    producer: int
    epoch: int
    group: int
    partition: int
    offset: int


@dataclass(frozen=True)
class Marker:
    producer: int
    epoch: int
    commit: bool


@dataclass(frozen=True)
class DeleteOffsets:
    group: int
    partition: int


@dataclass(frozen=True)
class DeleteTopic:
    """The topic's deletion reaching the coordinator (its offsets' tombstones)."""


@dataclass(frozen=True)
class DeleteGroup:
    group: int


@dataclass(frozen=True)
class Advance:
    ms: int


@dataclass(frozen=True)
class Failing:
    """``op`` with its appends failing."""

    op: object


@dataclass
class Bench:
    clock: ManualClock = field(default_factory=ManualClock)
    log: FaultyLog = field(default_factory=lambda: FaultyLog(MemoryLog()))
    topics: TopicRegistry = field(
        default_factory=lambda: TopicRegistry(MemoryLog(), random.Random(3))
    )
    answers: list[Any] = field(default_factory=list)
    # classic groups a failing write may have left ahead of the log: a rebalance that ends
    # empty moves the group to its next generation before its record is written (Kafka's
    # initNextGeneration), and keeps it there when the write fails
    unpersisted: set[str] = field(default_factory=set)
    coord: ConsumerGroupCoordinator = field(init=False)

    def __post_init__(self) -> None:
        self.topics.create("orders", 4, 0)
        self.coord = self.new(self.log)

    def new(self, log: Any) -> ConsumerGroupCoordinator:
        coord = consumer_group_coordinator(
            self.clock, BrokerConfig(CONFIG), log, topics=self.topics
        )
        coord.load()
        return coord

    def classic_members(self, group_id: str) -> list[str]:
        group = self.coord._groups.get(group_id)
        return [] if group is None else list(group.members)

    def run(self, op: object) -> None:
        c = self.coord
        match op:
            case Join(g, m):
                group_id = CLASSIC[g % len(CLASSIC)]
                members = self.classic_members(group_id)
                member_id = members[m] if m < len(members) else ""
                request = JoinRequest(
                    group_id,
                    member_id,
                    None,
                    "consumer",
                    [("range", subscription("orders"))],
                    10_000,
                    5_000,
                    "client",
                    "/h",
                    False,
                )
                c.join(request, self.answers.append)
            case Sync(g, m):
                group_id = CLASSIC[g % len(CLASSIC)]
                group = c._groups.get(group_id)
                members = self.classic_members(group_id)
                if group is None or m >= len(members):
                    return
                assignments = {member: member.encode() for member in members}
                c.sync(
                    group_id,
                    group.generation,
                    members[m],
                    None,
                    "consumer",
                    "range",
                    assignments if members[m] == group.leader_id else {},
                    self.answers.append,
                )
            case Leave(g, m):
                group_id = CLASSIC[g % len(CLASSIC)]
                members = self.classic_members(group_id)
                if m < len(members):
                    c.leave(group_id, [(members[m], None)])
            case Beat(g, m, kind):
                group_id = CONSUMER[g % len(CONSUMER)]
                consumer = c._consumer_groups.get(group_id)
                known = list(consumer.members.values()) if consumer is not None else []
                if kind == 0 or m >= len(known):
                    member_id = known[m].member_id if m < len(known) else f"m{m}"
                    c.consumer_heartbeat(
                        group_id,
                        member_id,
                        0,
                        subscribed_topic_names=["orders"],
                        rebalance_timeout_ms=5_000,
                        client_id="c",
                        client_host="/h",
                    )
                elif kind == 1:
                    member = known[m]
                    c.consumer_heartbeat(
                        group_id, member.member_id, member.epoch, owned=dict(member.assigned)
                    )
                else:
                    c.consumer_heartbeat(group_id, known[m].member_id, -1)
            case Commit(g, p, offset):
                c.commit_offsets(
                    Committer(GROUPS[g], -1, "", None),
                    {TopicPartition("orders", p): (offset, -1, "")},
                )
            case TxnCommit(pid, epoch, g, p, offset):
                c.txn_commit_offsets(
                    pid,
                    epoch,
                    Committer(GROUPS[g], -1, "", None),
                    {TopicPartition("orders", p): (offset, -1, "meta")},
                )
            case Marker(pid, epoch, commit):
                c.complete_transaction(pid, epoch, commit, 0)
            case DeleteOffsets(g, p):
                c.delete_offsets(GROUPS[g], [TopicPartition("orders", p)])
            case DeleteGroup(g):
                c.delete_groups([GROUPS[g]])
            case DeleteTopic():
                c.on_topic_deleted("orders")
            case Advance(ms):
                self.clock.advance(ms)
            case Failing(inner):
                if isinstance(inner, Join | Sync | Leave):
                    self.unpersisted.add(CLASSIC[inner.group % len(CLASSIC)])
                elif isinstance(inner, Advance):
                    self.unpersisted.update(CLASSIC)
                self.log.fail_next(OSError("disk gone"), times=10)
                try:
                    self.run(inner)
                finally:
                    self.log.failures.clear()


def classic_value(group: ClassicGroup) -> GroupValue:
    """A classic group's record; a Stable group's state timestamp is its move to Stable, just
    after its record was written (only an Empty group's, which expiry reads, is compared)."""
    value = group.to_value()
    return value if group.state is ClassicState.EMPTY else replace(value, state_timestamp=-1)


def log_backed(coord: ConsumerGroupCoordinator, at_rest: set[str]) -> dict[str, object]:
    offsets = coord.offsets
    return {
        "committed": {g: dict(o) for g, o in offsets.committed.items() if o},
        "pending": offsets.pending,
        "epochs": dict(coord._pending_epochs),
        "consumer": {g: records_of(v) for g, v in coord._consumer_groups.items()},
        "classic": {g: classic_value(v) for g, v in coord._groups.items() if g in at_rest},
    }


def at_rest(coord: ConsumerGroupCoordinator) -> set[str]:
    """The classic groups whose state is their last record's."""
    return {
        g
        for g, v in coord._groups.items()
        if v.state in (ClassicState.STABLE, ClassicState.EMPTY)
        and not v.pending_members
        and v.generation > 0
    }


groups = st.integers(0, len(GROUPS) - 1)
slots = st.integers(0, 3)
partitions = st.integers(0, 1)
producers = st.integers(1, 2)
operations = st.one_of(
    st.builds(Join, st.integers(0, 1), slots),
    st.builds(Sync, st.integers(0, 1), slots),
    st.builds(Leave, st.integers(0, 1), slots),
    st.builds(Beat, st.integers(0, 1), slots, st.integers(0, 2)),
    st.builds(Commit, groups, partitions, st.integers(0, 100)),
    st.builds(TxnCommit, producers, st.integers(0, 1), groups, partitions, st.integers(0, 100)),
    st.builds(Marker, producers, st.integers(0, 1), st.booleans()),
    st.builds(DeleteOffsets, groups, partitions),
    st.builds(DeleteGroup, groups),
    st.builds(DeleteTopic),
    st.builds(Advance, st.sampled_from([0, 1_000, 6_000, 11_000, 61_000])),
)
operations = st.one_of(operations, operations, operations, st.builds(Failing, operations))


@settings(max_examples=200, deadline=None)
@given(st.lists(operations, max_size=40))
def test_live_state_is_the_state_reloaded_from_the_log(ops: list[object]) -> None:
    bench = Bench()
    for op in ops:
        bench.run(op)
        reloaded = bench.new(bench.log.inner)
        try:
            rest = at_rest(bench.coord) - bench.unpersisted
            assert log_backed(reloaded, rest) == log_backed(bench.coord, rest), op
            assert set(reloaded._consumer_groups) == set(bench.coord._consumer_groups)
        finally:
            reloaded.close()
