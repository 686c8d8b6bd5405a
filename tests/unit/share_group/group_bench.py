"""Test bench for the share-group coordinator: manual clock, memory logs, a real topic registry."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from coordinator.assembly import share_group_runtime
from coordinator.log.memory_log import MemoryLog
from coordinator.share.group_config import ShareGroupConfig
from coordinator.share.group_coordinator import ShareGroupCoordinator
from coordinator.share.group_model import HeartbeatRequest, HeartbeatResult
from coordinator.topics import TopicRegistry
from tests.unit.failover import FailoverBench
from tests.unit.faulty_log import FaultyLog
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode

E = ErrorCode
GROUP = "g1"


def by_topic(pairs: Iterable[tuple[uuid.UUID, int]]) -> dict[uuid.UUID, list[int]]:
    """(topic id, partition) pairs grouped by topic, in first-seen order."""
    out: dict[uuid.UUID, list[int]] = {}
    for topic_id, partition in pairs:
        out.setdefault(topic_id, []).append(partition)
    return out


INTERVAL = "group.share.assignment.interval.ms"


@dataclass
class Bench(FailoverBench[ShareGroupCoordinator]):
    """One broker's worth of share-group state; ``restart()`` replays the same log."""

    overrides: dict[str, object] = field(default_factory=dict)
    clock: ManualClock = field(default_factory=ManualClock)
    removed: list[tuple[str, str]] = field(default_factory=list)
    config_changes: list[tuple[str, ShareGroupConfig]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.topics = TopicRegistry(MemoryLog(), random.Random(7))
        self.log = FaultyLog(MemoryLog())
        # The tests of other behaviour assign at once (a broker interval of 0, as Kafka allows);
        # those of the assignment interval set it.
        self.config = BrokerConfig({INTERVAL: 0, **self.overrides})
        self.coordinator = self.start()

    def start(self) -> ShareGroupCoordinator:
        coordinator = ShareGroupCoordinator(
            share_group_runtime(self.clock, self.config, self.log),
            self.config,
            self.topics,
            on_member_removed=lambda g, m: self.removed.append((g, m)),
            on_config_changed=lambda g, c: self.config_changes.append((g, c)),
        )
        coordinator.load()
        return coordinator

    # --- topics -----------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int) -> uuid.UUID:
        return self.topics.create(name, partitions, self.clock.now_ms()).topic_id

    def topic_id(self, name: str) -> uuid.UUID:
        info = self.topics.get(name)
        assert info is not None
        return info.topic_id

    # --- the broker's side of two-stage initialization -----------------------------------------

    def initialize_all(self, group_id: str = GROUP) -> None:
        """What the broker does: InitializeShareGroupState, then mark the partitions."""
        pending = self.coordinator.partitions_to_initialize(group_id)
        if pending:
            partitions = by_topic(pending)
            assert self.coordinator.mark_initialized_topics(group_id, partitions) is E.NONE

    def delete_all(self, group_id: str = GROUP) -> None:
        pending = self.coordinator.partitions_to_delete(group_id)
        for topic_id, partitions in by_topic(pending).items():
            assert self.coordinator.mark_deleted(group_id, topic_id, partitions) is E.NONE

    # --- members ----------------------------------------------------------------------------

    def join(self, member_id: str, topics: list[str], group_id: str = GROUP) -> HeartbeatResult:
        result = self.coordinator.heartbeat(HeartbeatRequest(group_id, member_id, 0, None, topics))
        assert result.error is E.NONE, result
        return result

    def beat(self, member_id: str, epoch: int, group_id: str = GROUP) -> HeartbeatResult:
        return self.coordinator.heartbeat(HeartbeatRequest(group_id, member_id, epoch, None, None))

    def epoch_of(self, member_id: str, group_id: str = GROUP) -> int:
        view = self.coordinator.group(group_id)
        assert view is not None
        return view.members[member_id].member_epoch

    def settle(self, group_id: str = GROUP) -> dict[str, set[tuple[uuid.UUID, int]]]:
        """Heartbeat every member once; returns what each member now holds."""
        view = self.coordinator.group(group_id)
        assert view is not None
        held: dict[str, set[tuple[uuid.UUID, int]]] = {}
        for member_id, member in view.members.items():
            result = self.beat(member_id, member.member_epoch, group_id)
            assert result.error is E.NONE, result
        view = self.coordinator.group(group_id)
        assert view is not None
        for member_id, member in view.members.items():
            held[member_id] = {(tp.topic_id, tp.partition) for tp in member.assigned}
        return held
