"""The share-group shard changes only by replay: after any sequence of operations, a fresh
shard loaded from the log equals the live one.

Operations run on a manual clock over a memory log: heartbeats (joins, subscription changes,
leaves), session expiry, topics created, grown and deleted, two-stage initialization and
deletion, offset resets and deletions, config overrides and group deletion -- some with every
append or flush failing (a failed write must leave the live state as the log left it).
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.assembly import share_group_runtime
from coordinator.share.group_coordinator import ShareGroupCoordinator
from coordinator.share.group_model import HeartbeatRequest
from coordinator.share.group_shard import ShareGroupShard
from tests.unit.share_group.group_bench import Bench, by_topic

GROUPS = ["g1", "g2"]
MEMBERS = ["m1", "m2", "m3"]
TOPICS = ["a", "b", "c"]
SESSION_MS = 45_000  # the broker default


@dataclass(frozen=True)
class Beat:
    group: int
    member: int
    join: bool
    topics: tuple[str, ...] | None


@dataclass(frozen=True)
class Leave:
    group: int
    member: int


@dataclass(frozen=True)
class Advance:
    ms: int


@dataclass(frozen=True)
class Topic:
    name: str
    action: str  # create, grow, delete


@dataclass(frozen=True)
class Initialize:
    group: int
    deleting: bool  # mark the deleting partitions deleted instead


@dataclass(frozen=True)
class Offsets:
    group: int
    topic: str
    reset: bool  # AlterShareGroupOffsets, else DeleteShareGroupOffsets


@dataclass(frozen=True)
class Configure:
    group: int
    heartbeat_ms: int | None  # None: delete the override


@dataclass(frozen=True)
class DeleteGroup:
    group: int


@dataclass(frozen=True)
class Failing:
    """``op`` with every append (or every flush) failing: it must change nothing."""

    op: object
    flush: bool


groups = st.integers(0, len(GROUPS) - 1)
members = st.integers(0, len(MEMBERS) - 1)
topic_names = st.sampled_from(TOPICS)
subscriptions = st.one_of(
    st.none(), st.lists(topic_names, min_size=1, max_size=3, unique=True).map(tuple)
)
operations = st.one_of(
    st.builds(Beat, groups, members, st.booleans(), subscriptions),
    st.builds(Beat, groups, members, st.booleans(), subscriptions),
    st.builds(Leave, groups, members),
    st.builds(Advance, st.integers(0, 2 * SESSION_MS)),
    st.builds(Topic, topic_names, st.sampled_from(["create", "grow", "delete"])),
    st.builds(Initialize, groups, st.booleans()),
    st.builds(Initialize, groups, st.booleans()),
    st.builds(Offsets, groups, topic_names, st.booleans()),
    st.builds(Configure, groups, st.one_of(st.none(), st.integers(5_000, 6_000))),
    st.builds(DeleteGroup, groups),
)
operations = st.one_of(operations, operations, st.builds(Failing, operations, st.booleans()))


def _run(bench: Bench, op: object) -> None:
    c = bench.coordinator
    match op:
        case Beat(group, member, join, topics):
            view = c.group(GROUPS[group])
            known = view.members.get(MEMBERS[member]) if view is not None else None
            epoch = 0 if join or known is None else known.member_epoch
            request = HeartbeatRequest(
                GROUPS[group], MEMBERS[member], epoch, None, list(topics) if topics else None
            )
            c.heartbeat(request)
        case Leave(group, member):
            c.heartbeat(HeartbeatRequest(GROUPS[group], MEMBERS[member], -1, None, None))
        case Advance(ms):
            bench.clock.advance(ms)  # may expire sessions
        case Topic(name, action):
            info = bench.topics.get(name)
            now = bench.clock.now_ms()
            if action == "create" and info is None:
                bench.topics.create(name, 2, now)
            elif action == "grow" and info is not None:
                bench.topics.add_partitions(name, info.num_partitions + 1, now)
            elif action == "delete" and info is not None:
                bench.topics.delete(name, now)
            c.on_topics_changed()
        case Initialize(group, deleting):
            group_id = GROUPS[group]
            if deleting:
                for topic_id, parts in by_topic(c.partitions_to_delete(group_id)).items():
                    c.mark_deleted(group_id, topic_id, parts)
            else:
                for topic_id, parts in by_topic(c.partitions_to_initialize(group_id)).items():
                    c.mark_initialized(group_id, topic_id, parts)
        case Offsets(group, name, reset):
            info = bench.topics.get(name)
            if info is None:
                return
            if reset:
                c.mark_offsets_reset(GROUPS[group], info.topic_id, range(info.num_partitions))
            else:
                c.mark_offsets_deleted(GROUPS[group], info.topic_id)
        case Configure(group, heartbeat_ms):
            key = "share.heartbeat.interval.ms"
            if heartbeat_ms is None:
                c.alter_group_configs(GROUPS[group], {}, [key])
            else:
                c.alter_group_configs(GROUPS[group], {key: str(heartbeat_ms)})
        case DeleteGroup(group):
            c.delete_groups([GROUPS[group]])
        case Failing(failing, flush):
            failures = bench.log.flush_failures if flush else bench.log.failures
            failures[:] = [OSError("disk gone")] * 10
            _run(bench, failing)
            failures.clear()


def _state(shard: ShareGroupShard) -> tuple[object, ...]:
    return (
        shard.groups,
        shard.partition_states,
        shard.configs,
        {g: shard.group_config(g) for g in GROUPS},
    )


def _reloaded(bench: Bench) -> ShareGroupShard:
    """A fresh shard, on its own runtime, loaded from the same log."""
    runtime = share_group_runtime(bench.clock, bench.config, bench.log)
    ShareGroupCoordinator(runtime, bench.config, bench.topics).load()
    return runtime.shard


@settings(max_examples=150, deadline=None)
@given(st.lists(operations, min_size=10, max_size=60))
def test_live_state_equals_the_state_reloaded_from_the_log(ops: list[object]) -> None:
    bench = Bench()
    bench.topics.create("a", 2, 0)
    for op in ops:
        _run(bench, op)
    live = bench.coordinator._shard
    assert _state(_reloaded(bench)) == _state(live)
