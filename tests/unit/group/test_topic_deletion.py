"""A deleted topic's offsets: every group's committed offsets on its partitions, and the
offsets pending in open transactions, go as tombstones (Kafka's ``onPartitionsDeleted``);
replaying them makes the offsets gone live and on load alike."""

from __future__ import annotations

import random

from coordinator.assembly import consumer_group_coordinator
from coordinator.group.coordinator import ConsumerGroupCoordinator
from coordinator.group.offset_commands import Committer
from coordinator.log.memory_log import MemoryLog
from coordinator.topics import TopicRegistry
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.ids import TopicPartition

GONE = TopicPartition("gone", 0)
GONE_1 = TopicPartition("gone", 1)
KEPT = TopicPartition("kept", 0)


def _coordinator(log: MemoryLog, clock: ManualClock) -> ConsumerGroupCoordinator:
    topics = TopicRegistry(MemoryLog(), random.Random(1))
    topics.create("gone", 2, 0)
    topics.create("kept", 1, 0)
    coord = consumer_group_coordinator(clock, BrokerConfig({}), log, topics=topics)
    coord.load()
    return coord


def _committed(coord: ConsumerGroupCoordinator, group: str) -> dict[TopicPartition, int]:
    return {tp: e.offset for tp, e in coord.offsets.of(group).items()}


def test_deleting_a_topic_writes_tombstones_for_every_groups_offsets_on_it() -> None:
    log, clock = MemoryLog(), ManualClock()
    coord = _coordinator(log, clock)
    for group in ("a", "b"):
        committer = Committer(group, -1, "", None)
        coord.commit_offsets(committer, {GONE: (5, -1, ""), GONE_1: (6, -1, ""), KEPT: (7, -1, "")})
    end = log.log_end_offset

    assert coord.on_topic_deleted("gone") == 4
    assert _committed(coord, "a") == {KEPT: 7}
    assert _committed(coord, "b") == {KEPT: 7}
    assert log.log_end_offset == end + 4  # one batch of four tombstones
    assert coord.on_topic_deleted("gone") == 0  # nothing left: nothing written

    reloaded = _coordinator(log, clock)
    try:
        assert _committed(reloaded, "a") == {KEPT: 7}
        assert _committed(reloaded, "b") == {KEPT: 7}
        assert reloaded.has_group("a")  # the group stays; only its offsets on the topic go
    finally:
        reloaded.close()
        coord.close()


def test_pending_transactional_offsets_on_the_topic_are_dropped() -> None:
    log, clock = MemoryLog(), ManualClock()
    coord = _coordinator(log, clock)
    committer = Committer("t", -1, "", None)
    coord.txn_commit_offsets(7, 0, committer, {GONE: (3, -1, ""), KEPT: (4, -1, "")})
    assert coord.offsets.has_pending("t", GONE)

    assert coord.on_topic_deleted("gone") == 1
    assert not coord.offsets.has_pending("t", GONE)
    assert coord.offsets.has_pending("t", KEPT)
    coord.complete_transaction(7, 0, True, 0)
    assert _committed(coord, "t") == {KEPT: 4}

    reloaded = _coordinator(log, clock)
    try:
        assert _committed(reloaded, "t") == {KEPT: 4}
    finally:
        reloaded.close()
        coord.close()
