"""Test bench for the share-group coordinator: manual clock, memory logs, a real topic registry."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

from coordinator.log.memory_log import MemoryLog
from coordinator.share.group_config import ShareGroupConfig
from coordinator.share.group_coordinator import ShareGroupCoordinator
from coordinator.share.group_model import HeartbeatResult
from coordinator.topics import TopicRegistry
from txn.batch import BatchHeader
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode

E = ErrorCode
GROUP = "g1"


class FaultyLog:
    """A PartitionLog that raises on chosen appends (the storage fault injector)."""

    def __init__(self, inner: MemoryLog) -> None:
        self.inner = inner
        self.failures: list[Exception] = []

    def fail_next(self, exc: Exception, times: int = 1) -> None:
        self.failures.extend([exc] * times)

    @property
    def log_start_offset(self) -> int:
        return self.inner.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.inner.log_end_offset

    def append(self, batch: bytes | bytearray | memoryview, now_ms: int) -> BatchHeader:
        if self.failures:
            raise self.failures.pop(0)
        return self.inner.append(batch, now_ms)

    def read(self, offset: int, max_bytes: int) -> bytes:
        return self.inner.read(offset, max_bytes)

    def batches(self, start_offset: int = 0) -> Iterator[tuple[BatchHeader, bytes]]:
        return self.inner.batches(start_offset)

    def flush(self) -> None:
        self.inner.flush()

    def maybe_flush(self, now_ms: int) -> None:
        self.inner.maybe_flush(now_ms)

    def truncate_to(self, offset: int) -> None:
        self.inner.truncate_to(offset)

    def advance_start_offset(self, offset: int) -> None:
        self.inner.advance_start_offset(offset)

    def close(self) -> None:
        self.inner.close()


@dataclass
class Bench:
    """One broker's worth of share-group state; ``restart()`` replays the same log."""

    overrides: dict[str, object] = field(default_factory=dict)
    clock: ManualClock = field(default_factory=ManualClock)
    removed: list[tuple[str, str]] = field(default_factory=list)
    config_changes: list[tuple[str, ShareGroupConfig]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.topics = TopicRegistry(MemoryLog(), random.Random(7))
        self.log = FaultyLog(MemoryLog())
        self.config = BrokerConfig(self.overrides)
        self.coordinator = self._start()

    def _start(self) -> ShareGroupCoordinator:
        coordinator = ShareGroupCoordinator(
            self.clock,
            self.log,
            self.config,
            self.topics,
            on_member_removed=lambda g, m: self.removed.append((g, m)),
            on_config_changed=lambda g, c: self.config_changes.append((g, c)),
        )
        coordinator.load()
        return coordinator

    def restart(self) -> ShareGroupCoordinator:
        """A coordinator failover: the old one closes, a new one loads the same log."""
        self.coordinator.close()
        self.coordinator = self._start()
        return self.coordinator

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
        by_topic: dict[uuid.UUID, list[int]] = {}
        for topic_id, partition in self.coordinator.partitions_to_initialize(group_id):
            by_topic.setdefault(topic_id, []).append(partition)
        for topic_id, partitions in by_topic.items():
            assert self.coordinator.mark_initialized(group_id, topic_id, partitions) is E.NONE

    def delete_all(self, group_id: str = GROUP) -> None:
        by_topic: dict[uuid.UUID, list[int]] = {}
        for topic_id, partition in self.coordinator.partitions_to_delete(group_id):
            by_topic.setdefault(topic_id, []).append(partition)
        for topic_id, partitions in by_topic.items():
            assert self.coordinator.mark_deleted(group_id, topic_id, partitions) is E.NONE

    # --- members ----------------------------------------------------------------------------

    def join(self, member_id: str, topics: list[str], group_id: str = GROUP) -> HeartbeatResult:
        result = self.coordinator.heartbeat(group_id, member_id, 0, None, topics)
        assert result.error is E.NONE, result
        return result

    def beat(self, member_id: str, epoch: int, group_id: str = GROUP) -> HeartbeatResult:
        return self.coordinator.heartbeat(group_id, member_id, epoch, None, None)

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
