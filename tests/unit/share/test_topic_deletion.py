"""A deleted topic's share state (Kafka's behaviour): each share group moves the topic's
partitions out of its initialized partitions (its partition-metadata record) and the share
state of those partitions is deleted from the share-state log; a restart replays both, and
a topic re-created under the same name (a new topic id) starts clean."""

from __future__ import annotations

from coordinator.share.manager import PartitionAcks
from coordinator.share.persister import ShareStateKey
from coordinator.share.share_partition import AckBatch
from tests.unit.coordinator.test_kip1289_core import GROUP, Harness
from txn.errors import ErrorCode
from txn.ids import TopicIdPartition

ACCEPT = 1


def _acknowledged(h: Harness) -> None:
    assert h.acquire() == 5
    acks = [PartitionAcks(h.tip, [AckBatch(0, 2, [ACCEPT])])]
    assert h.core.share.acknowledge(GROUP, "m1", acks) == {h.tip: ErrorCode.NONE}


def _assert_forgotten(h: Harness, old: TopicIdPartition) -> None:
    groups = h.core.share.groups
    assert old.topic_id not in groups.initialized_partitions(GROUP)
    assert groups.partitions_to_delete(GROUP) == []
    assert h.core.share.persister.state(ShareStateKey(GROUP, old.topic_id, 0)) is None


def test_deleting_a_topic_deletes_its_share_state_live_and_after_a_restart() -> None:
    h = Harness()
    h.setup()
    _acknowledged(h)
    old = h.tip
    key = ShareStateKey(GROUP, old.topic_id, 0)
    state = h.core.share.persister.state(key)
    # As Kafka, the start offset written lags one write behind: 0, with 0-2 complete.
    assert state is not None and state.start_offset == 0
    assert h.core.share.persister.read_state_summary(key, 0).delivery_complete_count == 3
    assert old.topic_id in h.core.share.groups.initialized_partitions(GROUP)

    assert h.core.delete_topic("in").error is ErrorCode.NONE
    _assert_forgotten(h, old)

    h.core.close()
    h = h.restart()
    _assert_forgotten(h, old)


def test_a_recreated_topic_starts_clean() -> None:
    h = Harness()
    h.setup()
    _acknowledged(h)
    old = h.tip
    assert h.core.share.heartbeat(GROUP, "m1", -1, None, None).error is ErrorCode.NONE  # leaves
    assert h.core.delete_topic("in").error is ErrorCode.NONE
    h.core.close()
    h = h.restart()
    h.setup()  # the same name again: a new topic id, read from its start
    assert h.tip.topic_id != old.topic_id
    _assert_forgotten(h, old)
    assert h.acquire() == 5  # offsets 0..4, none acknowledged under the old id
    key = ShareStateKey(GROUP, h.tip.topic_id, 0)
    state = h.core.share.persister.state(key)
    # Nothing acknowledged yet: Kafka's start offset is still -1; the reset position (0) is
    # what a restart resumes from.
    assert state is not None and state.start_offset == -1
    assert h.core.share.persister.read_state(key, 0).start_offset == 0
