"""The share coordinator through its public methods (reference §4, scenarios 56-59).

Manual clock, memory logs, no sleeps.  What was persisted is checked by decoding the
``__share_group_state`` logs with ``txn.share_records``.  Recovery, pruning and storage
failures are in test_share_coordinator_recovery.py.
"""

from __future__ import annotations

import uuid

import pytest

from coordinator.log.memory_log import MemoryStorage
from coordinator.share.persister import (
    Persister,
    PersisterStateBatch,
    ReadStateResult,
    ShareStateKey,
    StateSummary,
    StateWrite,
)
from coordinator.share.state_partitions import (
    ShareStateView,
    coordinator_key,
    java_string_hash,
    kafka_uuid_string,
    partition_for,
    partition_for_coordinator_key,
)
from tests.unit.share.coordinator_bench import (
    ACKED,
    ACQUIRED,
    ARCHIVED,
    AVAILABLE,
    KEY,
    OTHER_TOPIC,
    TOPIC,
    Bench,
    E,
    b,
    make_coordinator,
    snapshot_epochs,
)
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import InvalidConfigError
from txn.ids import SHARE_GROUP_STATE_TOPIC
from txn.share_records import (
    ShareRecordKey,
    ShareRecordType,
    ShareSnapshotValue,
    ShareUpdateValue,
    StateBatch,
)

# --- partitioning ----------------------------------------------------------------------------


def test_java_string_hash_matches_java() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert java_string_hash("\U0001f600") == 1772899  # a surrogate pair
    # Values printed by a JVM (String.hashCode).
    assert java_string_hash("Hello World") == -862545276
    assert java_string_hash("sharetxn") == -743738837
    assert java_string_hash("g:AAAAAAAAAAAAAAAAAAAAAQ:7") == -92966816


def test_partition_for_is_kafkas_formula() -> None:
    assert kafka_uuid_string(uuid.UUID(int=1)) == "AAAAAAAAAAAAAAAAAAAAAQ"
    key = ShareStateKey("g", uuid.UUID(int=1), 7)
    assert coordinator_key(key) == "g:AAAAAAAAAAAAAAAAAAAAAQ:7"
    assert partition_for_coordinator_key("polygenelubricants", 50) == 0  # abs(MIN) is 0
    assert partition_for_coordinator_key("hello", 50) == 99162322 % 50
    assert partition_for_coordinator_key("Hello World", 50) == 862545276 % 50  # negative hash
    assert partition_for(key, 50) == 92966816 % 50
    assert partition_for(key, 7) == 92966816 % 7


def test_keys_are_stored_in_their_partition() -> None:
    bench = Bench(partitions=50)
    keys = [ShareStateKey(f"group-{i}", TOPIC, i % 4) for i in range(20)]
    for key in keys:
        bench.init(key)
    used = {bench.coordinator.partition_for(key) for key in keys}
    assert len(used) > 1
    for key in keys:
        logged = [rk for _, rk, _ in bench.records(key) if rk.group_id == key.group_id]
        assert logged == [ShareRecordKey(ShareRecordType.SHARE_SNAPSHOT, *key)]


def test_default_partition_count_is_the_config() -> None:
    clock, storage = ManualClock(), MemoryStorage()
    coordinator = make_coordinator(
        clock, lambda p: storage.open_log(SHARE_GROUP_STATE_TOPIC, p), BrokerConfig()
    )
    assert coordinator.num_partitions == 50
    coordinator.load()
    assert len(storage.list_logs()) == 50
    assert coordinator.partition_for(KEY) == partition_for(KEY, 50)


def test_implements_the_persister_protocol(bench: Bench) -> None:
    persister: Persister = bench.coordinator
    assert persister.read_state_summary(KEY, 0).error is E.NONE


@pytest.mark.parametrize(
    "overrides",
    [
        {"share.coordinator.state.topic.num.partitions": 0},
        {"share.coordinator.snapshot.update.records.per.snapshot": 501},
    ],
)
def test_bad_config_is_rejected(overrides: dict[str, object]) -> None:
    with pytest.raises(InvalidConfigError):
        make_coordinator(ManualClock(), MemoryStorage().open_log, BrokerConfig(overrides))  # type: ignore[arg-type]


# --- availability and request validation -----------------------------------------------------


def test_not_loaded_then_closed() -> None:
    clock, storage = ManualClock(), MemoryStorage()
    coordinator = make_coordinator(
        clock, lambda p: storage.open_log(SHARE_GROUP_STATE_TOPIC, p), BrokerConfig()
    )
    assert coordinator.initialize_state(KEY, 0, -1) is E.COORDINATOR_LOAD_IN_PROGRESS
    assert coordinator.read_state(KEY, 0).error is E.COORDINATOR_LOAD_IN_PROGRESS
    coordinator.load()
    assert coordinator.initialize_state(KEY, 0, -1) is E.NONE
    coordinator.close()
    assert coordinator.availability() is E.COORDINATOR_NOT_AVAILABLE
    assert coordinator.write_state(KEY, StateWrite(0, 0, -1, [])) is E.COORDINATOR_NOT_AVAILABLE
    assert coordinator.delete_state(KEY) is E.COORDINATOR_NOT_AVAILABLE
    assert coordinator.read_state_summary(KEY, 0).error is E.COORDINATOR_NOT_AVAILABLE
    assert coordinator.prune() == {}


@pytest.mark.parametrize(
    "key",
    [
        ShareStateKey("", TOPIC, 0),
        ShareStateKey("g", uuid.UUID(int=0), 0),
        ShareStateKey("g", TOPIC, -1),
    ],
)
def test_invalid_keys(bench: Bench, key: ShareStateKey) -> None:
    c = bench.coordinator
    assert c.initialize_state(key, 0, -1) is E.INVALID_REQUEST
    assert c.read_state(key, 0).error is E.INVALID_REQUEST
    assert c.write_state(key, StateWrite(0, 0, -1, [])) is E.INVALID_REQUEST
    assert c.delete_state(key) is E.INVALID_REQUEST
    assert c.read_state_summary(key, 0).error is E.INVALID_REQUEST
    assert bench.total_records() == 0


@pytest.mark.parametrize(
    ("state_epoch", "leader_epoch", "start", "batches"),
    [
        (0, 0, -1, [b(5, 4, AVAILABLE, 1)]),  # first > last
        (0, 0, -1, [b(-1, 4, AVAILABLE, 1)]),  # negative offset
        (0, 0, -1, [b(0, 4, AVAILABLE, 2**15)]),  # count beyond int16
        (0, 0, -1, [b(0, 4, 300, 1)]),  # state beyond int8
        (0, 0, -2, []),  # start offset below -1
        (2**31, 0, -1, []),  # state epoch beyond int32
        (0, -(2**31) - 1, -1, []),
    ],
)
def test_malformed_writes_are_invalid(
    bench: Bench,
    state_epoch: int,
    leader_epoch: int,
    start: int,
    batches: list[PersisterStateBatch],
) -> None:
    bench.init()
    before = bench.total_records()
    assert bench.coordinator.write_state(
        KEY, StateWrite(state_epoch, leader_epoch, start, batches)
    ) is (E.INVALID_REQUEST)
    assert bench.total_records() == before


def test_initialize_rejects_bad_values(bench: Bench) -> None:
    assert bench.coordinator.initialize_state(KEY, 0, -2) is E.INVALID_REQUEST
    assert bench.coordinator.initialize_state(KEY, 2**31, 0) is E.INVALID_REQUEST
    assert bench.total_records() == 0


# --- scenario 56: uninitialized keys ---------------------------------------------------------


def test_write_fails_on_uninitialized_partition(bench: Bench) -> None:
    error = bench.coordinator.write_state(KEY, StateWrite(0, 0, 0, [b(0, 10, AVAILABLE, 1)]))
    assert error is E.INVALID_REQUEST
    assert bench.total_records() == 0
    assert bench.coordinator.state(KEY) is None


def test_read_fails_on_uninitialized_partition(bench: Bench) -> None:
    result = bench.coordinator.read_state(KEY, 0)
    assert result.error is E.INVALID_REQUEST
    assert result.error_message is not None
    assert "not initialized" in result.error_message
    assert bench.total_records() == 0


# --- scenario 57: fencing --------------------------------------------------------------------


def test_write_state_fenced_leader_epoch(bench: Bench) -> None:
    bench.init()
    assert bench.coordinator.read_state(KEY, 1).error is E.NONE  # records leader epoch 1
    before = bench.total_records()
    assert bench.coordinator.write_state(KEY, StateWrite(0, 0, 0, [b(0, 10, AVAILABLE, 1)])) is (
        E.FENCED_LEADER_EPOCH
    )
    assert bench.total_records() == before


def test_write_state_fenced_state_epoch(bench: Bench) -> None:
    bench.init(state_epoch=1)
    assert bench.coordinator.write_state(KEY, StateWrite(0, 0, 0, [b(0, 10, AVAILABLE, 1)])) is (
        E.FENCED_STATE_EPOCH
    )
    assert bench.coordinator.state(KEY) == ShareStateView(1, 0, -1, (), 0)


def test_read_state_fenced_leader_epoch(bench: Bench) -> None:
    bench.init()
    assert bench.coordinator.read_state(KEY, 5).error is E.NONE
    assert bench.coordinator.read_state(KEY, 3).error is E.FENCED_LEADER_EPOCH
    # -1 is not a wildcard for reads once an epoch is recorded (as in Kafka).
    assert bench.coordinator.read_state(KEY, -1).error is E.FENCED_LEADER_EPOCH


def test_writes_with_epoch_minus_one_skip_the_fencing(bench: Bench) -> None:
    bench.init(state_epoch=3)
    assert bench.coordinator.read_state(KEY, 4).error is E.NONE
    assert bench.coordinator.write_state(KEY, StateWrite(-1, -1, 5, [b(5, 6, ACKED, 1)])) is E.NONE
    assert bench.coordinator.state(KEY) == ShareStateView(3, 4, 5, (b(5, 6, ACKED, 1),), 0)


def test_check_order_uninitialized_before_unknown_topic() -> None:
    bench = Bench(options={"topic_exists": lambda topic, partition: topic == TOPIC})
    unknown = ShareStateKey("group-1", OTHER_TOPIC, 0)
    assert bench.coordinator.write_state(unknown, StateWrite(0, 0, 0, [])) is E.INVALID_REQUEST
    assert bench.coordinator.initialize_state(unknown, 0, 0) is E.UNKNOWN_TOPIC_OR_PARTITION
    assert bench.coordinator.read_state_summary(unknown, 0).error is (E.UNKNOWN_TOPIC_OR_PARTITION)
    assert bench.coordinator.delete_state(unknown) is E.UNKNOWN_TOPIC_OR_PARTITION


def test_check_order_fencing_before_unknown_topic() -> None:
    known = {TOPIC}
    bench = Bench(options={"topic_exists": lambda topic, partition: topic in known})
    bench.init(state_epoch=2)
    bench.coordinator.read_state(KEY, 3)
    known.clear()  # the topic is deleted
    assert bench.coordinator.write_state(KEY, StateWrite(1, 2, 0, [])) is E.FENCED_LEADER_EPOCH
    assert bench.coordinator.write_state(KEY, StateWrite(1, 3, 0, [])) is E.FENCED_STATE_EPOCH
    assert (
        bench.coordinator.write_state(KEY, StateWrite(2, 3, 0, [])) is E.UNKNOWN_TOPIC_OR_PARTITION
    )
    assert bench.coordinator.read_state(KEY, 3).error is E.UNKNOWN_TOPIC_OR_PARTITION


# --- initialize ------------------------------------------------------------------------------


def test_initialize_writes_a_fresh_snapshot(bench: Bench) -> None:
    now = bench.clock.now_ms()
    bench.init(state_epoch=1, start=-1)
    [(offset, record_key, value)] = bench.records(KEY)
    assert offset == 0
    assert record_key == ShareRecordKey(ShareRecordType.SHARE_SNAPSHOT, *KEY)
    assert value == ShareSnapshotValue(0, 1, 0, -1, now, now, ())
    assert bench.coordinator.state(KEY) == ShareStateView(1, 0, -1, (), 0)
    assert bench.coordinator.read_state(KEY, 0) == ReadStateResult(E.NONE, 1, -1, ())


def test_reinitialize_replaces_without_merge(bench: Bench) -> None:
    bench.init(state_epoch=1, start=0)
    assert bench.coordinator.write_state(KEY, StateWrite(1, 0, 0, [b(0, 9, ACKED, 1)])) is E.NONE
    assert bench.coordinator.initialize_state(KEY, 2, 50) is E.NONE  # AlterShareGroupOffsets
    assert bench.coordinator.state(KEY) == ShareStateView(2, 0, 50, (), 1)
    assert bench.coordinator.initialize_state(KEY, 1, 0) is E.FENCED_STATE_EPOCH
    assert bench.coordinator.initialize_state(KEY, 2, 60) is E.NONE  # same epoch is fine
    assert bench.coordinator.state(KEY) == ShareStateView(2, 0, 60, (), 2)


# --- scenario 58: updates --------------------------------------------------------------------


def test_subsequent_writes_are_updates_with_the_same_snapshot_epoch(bench: Bench) -> None:
    bench.init()
    c = bench.coordinator
    assert c.write_state(KEY, StateWrite(0, 0, 0, [b(0, 10, AVAILABLE, 1)])) is E.NONE
    assert c.write_state(KEY, StateWrite(0, 0, 0, [b(11, 20, AVAILABLE, 1)])) is E.NONE
    _, *updates = bench.records(KEY)
    assert [(rk.record_type, v) for _, rk, v in updates] == [
        (ShareRecordType.SHARE_UPDATE, ShareUpdateValue(0, 0, 0, (StateBatch(0, 10, 0, 1),))),
        (ShareRecordType.SHARE_UPDATE, ShareUpdateValue(0, 0, 0, (StateBatch(11, 20, 0, 1),))),
    ]
    assert c.state(KEY) == ShareStateView(0, 0, 0, (b(0, 20, AVAILABLE, 1),), 0)
    assert c.read_state(KEY, 0) == ReadStateResult(E.NONE, 0, 0, (b(0, 20, AVAILABLE, 1),))


def test_update_with_start_minus_one_keeps_the_start(bench: Bench) -> None:
    bench.init(start=100)
    c = bench.coordinator
    assert c.write_state(KEY, StateWrite(0, 0, -1, [b(100, 104, ACKED, 1)])) is E.NONE
    assert c.state(KEY) == ShareStateView(0, 0, 100, (b(100, 104, ACKED, 1),), 0)
    assert c.write_state(KEY, StateWrite(0, 0, 103, [b(110, 110, AVAILABLE, 1)])) is E.NONE
    assert c.state(KEY) == ShareStateView(
        0, 0, 103, (b(103, 104, ACKED, 1), b(110, 110, AVAILABLE, 1)), 0
    )


def test_update_batches_are_merged_and_pruned_before_writing(bench: Bench) -> None:
    bench.init()
    batches = [b(5, 9, AVAILABLE, 1), b(0, 6, AVAILABLE, 1), b(8, 8, ACKED, 2)]
    assert bench.coordinator.write_state(KEY, StateWrite(0, 0, 2, batches)) is E.NONE
    _, _, value = bench.records(KEY)[-1]
    assert value == ShareUpdateValue(
        0, 0, 2, (StateBatch(2, 7, 0, 1), StateBatch(8, 8, 2, 2), StateBatch(9, 9, 0, 1))
    )


def test_higher_delivery_count_survives_a_lower_update(bench: Bench) -> None:
    bench.init(start=0)
    c = bench.coordinator
    assert c.write_state(KEY, StateWrite(0, 0, -1, [b(0, 9, ACKED, 2)])) is E.NONE
    assert c.write_state(KEY, StateWrite(0, 0, -1, [b(0, 9, AVAILABLE, 1)])) is E.NONE
    view = c.state(KEY)
    assert view is not None
    assert view.batches == (b(0, 9, ACKED, 2),)


def test_kip932_worked_example_persisted(bench: Bench) -> None:
    """The WriteShareGroupState sequence of seed 000, then a restart."""
    bench.init(start=100)
    c = bench.coordinator
    writes: list[tuple[int, list[PersisterStateBatch]]] = [
        (110, []),
        (-1, [b(110, 110, AVAILABLE, 1)]),
        (-1, [b(119, 119, ACKED, 1)]),
        (-1, [b(111, 112, AVAILABLE, 1)]),
        (-1, [b(113, 118, ACKED, 1)]),
        (-1, [b(110, 110, ACKED, 2)]),
    ]
    for start, batches in writes:
        assert c.write_state(KEY, StateWrite(0, 0, start, batches)) is E.NONE
    expected = (b(110, 110, ACKED, 2), b(111, 112, AVAILABLE, 1), b(113, 119, ACKED, 1))
    assert c.read_state(KEY, 0) == ReadStateResult(E.NONE, 0, 110, expected)
    assert bench.restart().read_state(KEY, 0) == ReadStateResult(E.NONE, 0, 110, expected)
    assert bench.coordinator.write_state(KEY, StateWrite(0, 0, 120, [])) is E.NONE
    assert bench.coordinator.read_state(KEY, 0) == ReadStateResult(E.NONE, 0, 120, ())


# --- scenario 59 and snapshots every N updates -----------------------------------------------


def test_non_sequential_batch_updates() -> None:
    """Scenario 59: with 0 updates per snapshot every write is a snapshot; b2 is not lost."""
    bench = Bench(per_snapshot=0)
    c = bench.coordinator
    bench.init()  # snapshot epoch 0
    assert c.read_state(KEY, 1).error is E.NONE  # a new leader: snapshot epoch 1
    assert c.write_state(KEY, StateWrite(0, 1, 0, [b(0, 10, AVAILABLE, 1)])) is E.NONE  # epoch 2
    initial = [b(100, 109, ACQUIRED, 1), b(110, 119, ACQUIRED, 2), b(120, 129, ACQUIRED, 0)]
    assert c.write_state(KEY, StateWrite(0, 1, 100, initial)) is E.NONE  # epoch 3
    assert c.write_state(KEY, StateWrite(0, 1, -1, [b(100, 109, ACKED, 1)])) is E.NONE  # epoch 4
    assert c.write_state(KEY, StateWrite(0, 1, 110, [b(120, 129, ACKED, 1)])) is E.NONE  # epoch 5
    assert snapshot_epochs(bench) == [("S", 0), ("S", 1), ("S", 2), ("S", 3), ("S", 4), ("S", 5)]
    _, _, last = bench.records(KEY)[-1]
    assert isinstance(last, ShareSnapshotValue)
    assert last.snapshot_epoch == 5
    assert last.start_offset == 110
    assert last.state_batches == (StateBatch(110, 119, ACQUIRED, 2), StateBatch(120, 129, ACKED, 1))
    assert c.state(KEY) == ShareStateView(
        0, 1, 110, (b(110, 119, ACQUIRED, 2), b(120, 129, ACKED, 1)), 5
    )


def test_a_snapshot_every_n_updates() -> None:
    bench = Bench(per_snapshot=3)
    bench.init(start=0)
    bench.ack_each(range(8))
    assert snapshot_epochs(bench) == [
        ("S", 0),
        ("U", 0),
        ("U", 0),
        ("U", 0),
        ("S", 1),
        ("U", 1),
        ("U", 1),
        ("U", 1),
        ("S", 2),
    ]
    _, _, last = bench.records(KEY)[-1]
    assert isinstance(last, ShareSnapshotValue)
    assert last.state_batches == (StateBatch(0, 7, ACKED, 1),)
    assert bench.coordinator.state(KEY) == ShareStateView(0, 0, 0, (b(0, 7, ACKED, 1),), 2)
    # The update count is rebuilt on load: the next three writes are updates again.
    bench.restart()
    bench.ack_each(range(8, 12))
    assert snapshot_epochs(bench)[-4:] == [("U", 2), ("U", 2), ("U", 2), ("S", 3)]


def test_snapshot_carries_a_new_start_and_merged_batches() -> None:
    bench = Bench(per_snapshot=1)
    bench.init(start=0)
    c = bench.coordinator
    assert (
        c.write_state(KEY, StateWrite(0, 0, -1, [b(0, 4, ACKED, 1), b(5, 9, AVAILABLE, 1)]))
        is E.NONE
    )
    assert c.write_state(KEY, StateWrite(0, 0, 3, [b(5, 6, ARCHIVED, 2)])) is E.NONE
    _, _, value = bench.records(KEY)[-1]
    assert value == ShareSnapshotValue(
        1,
        0,
        0,
        3,
        bench.clock.now_ms(),
        bench.clock.now_ms(),
        (StateBatch(3, 4, ACKED, 1), StateBatch(5, 6, ARCHIVED, 2), StateBatch(7, 9, AVAILABLE, 1)),
    )


# --- leader epoch bump on read ---------------------------------------------------------------


def test_read_with_a_higher_leader_epoch_records_it(bench: Bench) -> None:
    bench.init(start=5)
    c = bench.coordinator
    assert c.write_state(KEY, StateWrite(0, 0, -1, [b(5, 6, ACKED, 1)])) is E.NONE
    before = bench.total_records()
    result = c.read_state(KEY, 2)
    assert result == ReadStateResult(E.NONE, 0, 5, (b(5, 6, ACKED, 1),))
    assert bench.total_records() == before + 1
    _, record_key, value = bench.records(KEY)[-1]
    assert record_key.record_type is ShareRecordType.SHARE_UPDATE
    # The bump carries the recorded start offset and delivery complete count (0 since
    # initialization: the write above carried none, -1, with a lower start offset).
    assert value == ShareUpdateValue(0, 2, 5, (), delivery_complete_count=0)
    view = c.state(KEY)
    assert view is not None
    assert view.leader_epoch == 2
    # The same epoch again (or -1 before any bump) writes nothing.
    assert c.read_state(KEY, 2).error is E.NONE
    assert bench.total_records() == before + 1
    # A write with the old leader epoch is now fenced; the new one is accepted and keeps it.
    assert c.write_state(KEY, StateWrite(0, 1, -1, [])) is E.FENCED_LEADER_EPOCH
    assert c.write_state(KEY, StateWrite(0, 2, -1, [b(7, 7, ACKED, 1)])) is E.NONE
    assert bench.restart().read_state(KEY, 2) == ReadStateResult(E.NONE, 0, 5, (b(5, 7, ACKED, 1),))
    assert bench.coordinator.read_state(KEY, 1).error is E.FENCED_LEADER_EPOCH


def test_read_with_minus_one_before_any_bump_writes_nothing() -> None:
    bench = Bench()
    bench.init()
    # The recorded leader epoch after initialization is 0, so -1 is fenced ...
    assert bench.coordinator.read_state(KEY, -1).error is E.FENCED_LEADER_EPOCH
    # ... and 0 matches: no write.
    before = bench.total_records()
    assert bench.coordinator.read_state(KEY, 0).error is E.NONE
    assert bench.total_records() == before


def test_leader_bump_is_a_snapshot_when_one_is_due() -> None:
    bench = Bench(per_snapshot=0)
    bench.init(start=3)
    assert bench.coordinator.read_state(KEY, 7).error is E.NONE
    _, _, value = bench.records(KEY)[-1]
    now = bench.clock.now_ms()
    assert value == ShareSnapshotValue(1, 0, 7, 3, now, now, (), delivery_complete_count=0)


# --- delete and summary ----------------------------------------------------------------------


def test_delete_writes_a_tombstone(bench: Bench) -> None:
    bench.init(start=0)
    assert bench.coordinator.write_state(KEY, StateWrite(0, 0, -1, [b(0, 1, ACKED, 1)])) is E.NONE
    assert bench.coordinator.delete_state(KEY) is E.NONE
    offset, record_key, value = bench.records(KEY)[-1]
    assert record_key == ShareRecordKey(ShareRecordType.SHARE_SNAPSHOT, *KEY)
    assert value is None
    assert bench.coordinator.state(KEY) is None
    assert bench.coordinator.keys() == []
    assert bench.coordinator.read_state(KEY, 0).error is E.INVALID_REQUEST
    # Deleting again is success with no record.
    assert bench.coordinator.delete_state(KEY) is E.NONE
    assert bench.log_of(KEY).log_end_offset == offset + 1


def test_tombstones_survive_restart(bench: Bench) -> None:
    other = ShareStateKey("group-2", TOPIC, 1)
    bench.init()
    bench.init(other, start=4)
    assert bench.coordinator.delete_state(KEY) is E.NONE
    restarted = bench.restart()
    assert restarted.state(KEY) is None
    assert restarted.read_state(KEY, 0).error is E.INVALID_REQUEST
    assert restarted.keys() == [other]
    # A re-initialized key starts again at snapshot epoch 0.
    bench.init(state_epoch=0)
    assert restarted.state(KEY) == ShareStateView(0, 0, -1, (), 0)


def test_read_state_summary(bench: Bench) -> None:
    c = bench.coordinator
    assert c.read_state_summary(KEY, 0) == StateSummary(E.NONE, 0, 0, -1)
    bench.init(state_epoch=3, start=10)
    c.read_state(KEY, 4)
    assert c.read_state_summary(KEY, 1) == StateSummary(E.NONE, 3, 4, 10, 0)  # no fencing
    assert bench.total_records() == 2  # initialize + the leader bump; the summary wrote nothing


def test_keys_by_group(bench: Bench) -> None:
    keys = bench.init_all(
        ShareStateKey("a", TOPIC, 1),
        ShareStateKey("a", TOPIC, 0),
        ShareStateKey("b", OTHER_TOPIC, 0),
    )
    assert bench.coordinator.keys() == sorted(keys)
    assert bench.coordinator.keys("a") == [keys[1], keys[0]]
    assert bench.coordinator.keys("c") == []


def test_topic_deletion_tombstones_its_keys(bench: Bench) -> None:
    keys = bench.init_all(
        ShareStateKey("a", TOPIC, 0),
        ShareStateKey("b", TOPIC, 1),
        ShareStateKey("a", OTHER_TOPIC, 0),
    )
    assert bench.coordinator.on_topics_deleted([TOPIC]) is E.NONE
    assert bench.coordinator.keys() == [keys[2]]
    assert bench.restart().keys() == [keys[2]]


# --- KIP-1226 delivery complete count and the lazily written start offset -------------------


def test_start_offset_and_delivery_complete_count_follow_kafkas_rule(bench: Bench) -> None:
    """Kafka 4.4's ShareCoordinatorShard: the start offset never goes back; the delivery
    complete count goes with it (the higher of both for the same start, kept for a lower)."""
    c = bench.coordinator

    def summary() -> tuple[int, int]:
        s = c.read_state_summary(KEY, 0)
        return s.start_offset, s.delivery_complete_count

    bench.init(start=-1)
    assert summary() == (-1, -1)
    # The share partition records the reset position; Kafka's view stays -1.
    assert c.write_state(KEY, StateWrite(0, 0, -1, [], reset_offset=5)) is E.NONE
    assert summary() == (-1, -1)
    assert c.read_state(KEY, 0).start_offset == 5
    write = StateWrite(0, 0, 5, [b(5, 6, ACKED, 1)], delivery_complete_count=2)
    assert c.write_state(KEY, write) is E.NONE
    assert summary() == (5, 2)
    assert c.write_state(KEY, StateWrite(0, 0, 3, [], delivery_complete_count=9)) is E.NONE
    assert summary() == (5, 2)  # a lower start offset: both kept
    assert c.write_state(KEY, StateWrite(0, 0, 5, [], delivery_complete_count=1)) is E.NONE
    assert summary() == (5, 2)  # the same start offset: the higher count
    write = StateWrite(0, 0, 7, [b(7, 7, ARCHIVED, 1)], delivery_complete_count=1)
    assert c.write_state(KEY, write) is E.NONE
    assert summary() == (7, 1)
    restarted = bench.restart()
    assert restarted.read_state_summary(KEY, 0).delivery_complete_count == 1
    assert restarted.read_state(KEY, 0) == ReadStateResult(E.NONE, 0, 7, (b(7, 7, ARCHIVED, 1),))
    assert restarted.initialize_state(KEY, 1, 10) is E.NONE  # AlterShareGroupOffsets
    assert restarted.read_state_summary(KEY, 0).delivery_complete_count == 0


def test_reset_offset_survives_a_snapshot_and_a_restart() -> None:
    bench = Bench(per_snapshot=0)  # every write is a snapshot
    bench.init(start=-1)
    c = bench.coordinator
    assert c.write_state(KEY, StateWrite(0, 0, -1, [], reset_offset=4)) is E.NONE
    _, record_key, value = bench.records(KEY)[-1]
    assert record_key.record_type is ShareRecordType.SHARE_SNAPSHOT
    assert isinstance(value, ShareSnapshotValue)
    assert (value.start_offset, value.reset_offset) == (-1, 4)
    restarted = bench.restart()
    assert restarted.read_state(KEY, 0).start_offset == 4
    assert restarted.read_state_summary(KEY, 0).start_offset == -1
