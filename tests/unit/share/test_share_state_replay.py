"""The share-state shard changes only by replay: after any sequence of operations, a fresh
shard loaded from the logs equals the live one.

Operations run on a manual clock over memory logs, some with every flush failing (a failed
write must leave the live state as the log left it), pruning and cold snapshots (the reload
skips what pruning cut; the snapshots carry the fences it cut) and KIP-1289 transactions
(staged acks, markers, follow-up snapshots).
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.assembly import share_state_runtime
from coordinator.shard_runtime import ControlMarker
from coordinator.share.persister import PersisterStateBatch, ShareStateKey, StateWrite
from coordinator.share.share_coordinator import ShareCoordinator
from coordinator.share.state_partitions import StatePartition
from coordinator.share.state_shard import ShareStateShard
from tests.unit.share.coordinator_bench import ACKED, ARCHIVED, AVAILABLE, OTHER_TOPIC, TOPIC, Bench

KEYS = [
    ShareStateKey("g1", TOPIC, 0),
    ShareStateKey("g1", TOPIC, 1),
    ShareStateKey("g2", OTHER_TOPIC, 0),
]
COLD_MS = 1_000


@dataclass(frozen=True)
class Init:
    key: int
    state_epoch: int
    start: int


@dataclass(frozen=True)
class Read:
    key: int
    leader_epoch: int


@dataclass(frozen=True)
class Write:
    key: int
    leader_epoch: int
    state_epoch: int
    start: int
    batches: tuple[PersisterStateBatch, ...]


@dataclass(frozen=True)
class Delete:
    key: int


@dataclass(frozen=True)
class Pending:
    key: int
    producer_id: int
    producer_epoch: int
    batches: tuple[PersisterStateBatch, ...]


@dataclass(frozen=True)
class Marker:
    key: int  # the marker goes to this key's state partition
    producer_id: int
    producer_epoch: int
    commit: bool


@dataclass(frozen=True)
class Maintain:
    advance_ms: int
    prune: bool
    cold: bool
    delete_topic: bool


@dataclass(frozen=True)
class Failing:
    """``op`` with every flush failing (its writes return errors and must change nothing)."""

    op: object


def _batch(first: int, length: int, state: int, count: int) -> PersisterStateBatch:
    return PersisterStateBatch(first, first + length, state, count)


keys = st.integers(0, len(KEYS) - 1)
epochs = st.integers(-1, 3)
batches = st.lists(
    st.builds(
        _batch,
        st.integers(0, 40),
        st.integers(0, 6),
        st.sampled_from([AVAILABLE, ACKED, ARCHIVED]),
        st.integers(1, 3),
    ),
    max_size=3,
).map(tuple)
writes = st.builds(Write, keys, epochs, epochs, st.integers(-1, 30), batches)
operations = st.one_of(
    writes,
    writes,
    # The group coordinator initializes with its real state epoch (never -1).
    st.builds(Init, keys, st.integers(0, 3), st.integers(-1, 20)),
    st.builds(Read, keys, epochs),
    st.builds(Delete, keys),
    st.builds(Pending, keys, st.integers(1, 2), st.integers(0, 2), batches),
    st.builds(Pending, keys, st.integers(1, 2), st.integers(0, 2), batches),
    st.builds(Marker, keys, st.integers(1, 2), st.integers(0, 2), st.booleans()),
    st.builds(Maintain, st.integers(0, 2 * COLD_MS), st.booleans(), st.booleans(), st.booleans()),
)
operations = st.one_of(operations, operations, st.builds(Failing, operations))


def _run(bench: Bench, op: object) -> None:
    c = bench.coordinator
    match op:
        case Init(key, state_epoch, start):
            c.initialize_state(KEYS[key], state_epoch, start)
        case Read(key, leader_epoch):
            c.read_state(KEYS[key], leader_epoch)
        case Write(key, leader_epoch, state_epoch, start, written):
            c.write_state(KEYS[key], StateWrite(state_epoch, leader_epoch, start, list(written)))
        case Delete(key):
            c.delete_state(KEYS[key])
        case Pending(key, producer_id, producer_epoch, staged):
            c.write_pending(KEYS[key], producer_id, producer_epoch, staged)
        case Marker(key, producer_id, producer_epoch, commit):
            marker = ControlMarker(commit, producer_id, producer_epoch, coordinator_epoch=0)
            c.complete_transaction(c.partition_for(KEYS[key]), marker)
        case Maintain(advance_ms, prune, cold, delete_topic):
            bench.clock.advance(advance_ms)  # may fire the periodic prune and cold jobs too
            if prune:
                c.prune()
            if cold:
                c.snapshot_cold_partitions()
            if delete_topic:
                c.on_topics_deleted([OTHER_TOPIC])
        case Failing(failing):
            for log in bench.logs.values():
                log.flush_failures[:] = [OSError("disk gone")] * 10
            _run(bench, failing)
            for log in bench.logs.values():
                log.flush_failures.clear()


def _state(coordinator: ShareCoordinator) -> dict[int, StatePartition]:
    shard = coordinator._shard
    return {index: shard._partitions[index] for index in shard.partitions()}


def _reloaded(bench: Bench) -> ShareCoordinator:
    """A fresh shard, on its own runtime, loaded from the same logs."""
    shard = ShareStateShard(bench.clock, bench.config)
    fresh = ShareCoordinator(share_state_runtime(shard), bench.open)
    fresh.load()
    return fresh


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 3),
    st.sampled_from([0, 1, 3]),
    st.lists(operations, min_size=10, max_size=60),
)
def test_live_state_equals_the_state_reloaded_from_the_log(
    partitions: int, per_snapshot: int, ops: list[object]
) -> None:
    bench = Bench(
        partitions=partitions,
        per_snapshot=per_snapshot,
        options={"prune_interval_ms": COLD_MS, "cold_partition_snapshot_interval_ms": COLD_MS},
    )
    for key in KEYS:
        bench.coordinator.initialize_state(key, 0, 0)
    for op in ops:
        _run(bench, op)
    # Exactly, fences included: a snapshot carries the fences that records cut by pruning
    # raised (a re-initialization records a lower leader or state epoch than they did).
    assert _state(_reloaded(bench)) == _state(bench.coordinator)
