"""Two-stage share-partition initialization and deletion (ShareGroupPartitionMetadata, seed 002)."""

from __future__ import annotations

from coordinator.share.group_model import HeartbeatRequest
from tests.unit.share_group.group_bench import GROUP, Bench, E


def test_join_records_partitions_as_initializing(bench: Bench) -> None:
    foo = bench.topic_id("foo")
    bench.join("m1", ["foo"])
    assert bench.coordinator.partitions_to_initialize(GROUP) == [(foo, 0), (foo, 1)]
    view = bench.coordinator.group(GROUP)
    assert view is not None
    assert (view.initializing, view.initialized) == ({foo: frozenset({0, 1})}, {})
    assert bench.coordinator.groups_with_pending_state_work() == [GROUP]


def test_only_initialized_partitions_are_assignable(bench: Bench) -> None:
    foo = bench.topic_id("foo")
    bench.join("m1", ["foo"])
    assert bench.coordinator.mark_initialized(GROUP, foo, [1]) is E.NONE
    assert bench.beat("m1", 2).assignment == [(foo, [1])]
    assert bench.coordinator.partitions_to_initialize(GROUP) == [(foo, 0)]
    assert bench.coordinator.mark_initialized(GROUP, foo, [0]) is E.NONE
    assert bench.beat("m1", 3).assignment == [(foo, [0, 1])]
    assert bench.coordinator.groups_with_pending_state_work() == []


def test_mark_initialized_is_idempotent(bench: Bench) -> None:
    foo = bench.topic_id("foo")
    bench.join("m1", ["foo"])
    bench.initialize_all()
    view = bench.coordinator.group(GROUP)
    assert view is not None
    epoch = view.group_epoch
    assert bench.coordinator.mark_initialized(GROUP, foo, [0, 1]) is E.NONE
    view = bench.coordinator.group(GROUP)
    assert view is not None and view.group_epoch == epoch


def test_mark_initialized_for_an_unknown_group(bench: Bench) -> None:
    assert bench.coordinator.mark_initialized("nope", bench.topic_id("foo"), [0]) is (
        E.GROUP_ID_NOT_FOUND
    )


def test_initialization_of_an_empty_group_does_not_bump(bench: Bench) -> None:
    bench.join("m1", ["foo"])
    bench.coordinator.heartbeat(HeartbeatRequest(GROUP, "m1", -1, None, None))
    before = bench.coordinator.group(GROUP)
    bench.initialize_all()
    after = bench.coordinator.group(GROUP)
    assert before is not None and after is not None
    assert after.group_epoch == before.group_epoch
    assert after.initialized == {bench.topic_id("foo"): frozenset({0, 1})}


def test_added_partitions_initialize_and_bump_the_epoch(bench: Bench) -> None:
    foo = bench.topic_id("foo")
    bench.join("m1", ["foo"])
    bench.initialize_all()
    bench.topics.add_partitions("foo", 3, bench.clock.now_ms())
    assert bench.coordinator.on_topics_changed() == [GROUP]
    view = bench.coordinator.group(GROUP)
    assert view is not None and view.group_epoch == 4
    assert bench.coordinator.partitions_to_initialize(GROUP) == [(foo, 2)]
    bench.initialize_all()
    assert bench.settle() == {"m1": {(foo, 0), (foo, 1), (foo, 2)}}


def test_created_topic_is_picked_up(bench: Bench) -> None:
    bench.join("m1", ["foo", "later"])
    bench.initialize_all()
    later = bench.create_topic("later", 1)
    assert bench.coordinator.on_topics_changed() == [GROUP]
    assert bench.coordinator.partitions_to_initialize(GROUP) == [(later, 0)]


def test_nothing_changed_writes_nothing(bench: Bench) -> None:
    bench.join("m1", ["foo"])
    bench.initialize_all()
    end = bench.log.log_end_offset
    assert bench.coordinator.on_topics_changed() == []
    assert bench.log.log_end_offset == end


def test_deleted_topic_moves_to_deleting(bench: Bench) -> None:
    foo = bench.topic_id("foo")
    bench.join("m1", ["foo"])
    bench.initialize_all()
    bench.topics.delete("foo", bench.clock.now_ms())
    assert bench.coordinator.on_topics_changed() == [GROUP]
    view = bench.coordinator.group(GROUP)
    assert view is not None
    assert (view.initialized, view.deleting) == ({}, {foo: frozenset({0, 1})})
    assert bench.settle() == {"m1": set()}
    assert bench.coordinator.partitions_to_delete(GROUP) == [(foo, 0), (foo, 1)]
    bench.delete_all()
    assert bench.coordinator.partitions_to_delete(GROUP) == []
    assert bench.coordinator.mark_deleted(GROUP, foo, [0, 1]) is E.NONE  # idempotent


def test_recreated_topic_initializes_under_its_new_id(bench: Bench) -> None:
    old = bench.topic_id("foo")
    bench.join("m1", ["foo"])
    bench.initialize_all()
    bench.topics.delete("foo", bench.clock.now_ms())
    new = bench.create_topic("foo", 1)
    bench.coordinator.on_topics_changed()
    assert bench.coordinator.partitions_to_delete(GROUP) == [(old, 0), (old, 1)]
    assert bench.coordinator.partitions_to_initialize(GROUP) == [(new, 0)]


def test_delete_group_moves_everything_to_deleting(bench: Bench) -> None:
    foo = bench.topic_id("foo")
    bench.create_topic("bar", 1)
    bench.join("m1", ["foo", "bar"])
    bench.coordinator.mark_initialized(GROUP, foo, [0, 1])  # bar stays initializing
    bench.coordinator.heartbeat(HeartbeatRequest(GROUP, "m1", -1, None, None))
    assert bench.coordinator.delete_groups([GROUP]) == {GROUP: E.NONE}
    assert bench.coordinator.group(GROUP) is None
    pending = bench.coordinator.partitions_to_delete(GROUP)
    assert set(pending) == {(foo, 0), (foo, 1), (bench.topic_id("bar"), 0)}
    assert bench.coordinator.partitions_to_initialize(GROUP) == []
    bench.delete_all()
    assert bench.coordinator.groups_with_pending_state_work() == []


def test_new_group_waits_for_the_old_state_to_be_deleted(bench: Bench) -> None:
    foo = bench.topic_id("foo")
    bench.join("m1", ["foo"])
    bench.initialize_all()
    bench.coordinator.heartbeat(HeartbeatRequest(GROUP, "m1", -1, None, None))
    bench.coordinator.delete_groups([GROUP])
    bench.join("m2", ["foo"])  # the same group id, created again
    assert bench.coordinator.partitions_to_initialize(GROUP) == []  # still being deleted
    bench.delete_all()
    assert bench.coordinator.partitions_to_initialize(GROUP) == [(foo, 0), (foo, 1)]
    bench.initialize_all()
    assert bench.settle() == {"m2": {(foo, 0), (foo, 1)}}


def test_pending_work_survives_a_restart(bench: Bench) -> None:
    foo = bench.topic_id("foo")
    bench.join("m1", ["foo"])
    bench.coordinator.mark_initialized(GROUP, foo, [0])
    bench.restart()
    assert bench.coordinator.groups_with_pending_state_work() == [GROUP]
    assert bench.coordinator.partitions_to_initialize(GROUP) == [(foo, 1)]
    assert bench.coordinator.initialized_partitions(GROUP) == {foo: frozenset({0})}


def test_partitions_of_several_topics_initialized_together_bump_the_epoch_once(
    bench: Bench,
) -> None:
    """Kafka initializes a group's new share partitions with one InitializeShareGroupState
    and bumps the group epoch once for them, whatever the number of topics."""
    bench.create_topic("bar", 2)
    assert bench.join("m1", ["foo", "bar"]).member_epoch == 2
    bench.initialize_all()
    view = bench.coordinator.group(GROUP)
    assert view is not None and (view.group_epoch, view.assignment_epoch) == (3, 3)
    assert bench.beat("m1", 2).member_epoch == 3
