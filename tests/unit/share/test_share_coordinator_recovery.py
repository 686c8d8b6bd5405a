"""The share coordinator across restarts: replay, pruning, cold snapshots, storage failures.

Manual clock, memory logs, no sleeps (the bench is in coordinator_bench.py).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from coordinator.share.persister import ReadStateResult, ShareStateKey, StateWrite
from coordinator.share.state_partitions import ShareStateView
from tests.unit.share.coordinator_bench import (
    ACKED,
    ARCHIVED,
    KEY,
    PRUNE_MS,
    TOPIC,
    Bench,
    E,
    b,
    run_workload,
    snapshot_epochs,
    snapshot_of,
)
from txn.batch import build_batch
from txn.errors import ErrorCode, KafkaStorageError, error_for_code
from txn.share_records import (
    ShareRecordKey,
    ShareRecordType,
    ShareUpdateValue,
    StateBatch,
    encode_record,
)

NotEnoughReplicasError = error_for_code(ErrorCode.NOT_ENOUGH_REPLICAS)


# --- recovery --------------------------------------------------------------------------------


@pytest.mark.parametrize("per_snapshot", [0, 2, 500])
def test_restart_replays_to_identical_state(per_snapshot: int) -> None:
    bench = Bench(per_snapshot=per_snapshot)
    keys = run_workload(bench)
    before = snapshot_of(bench.coordinator, keys)
    live = bench.coordinator.keys()
    assert len(live) == 10
    restarted = bench.restart()
    assert restarted.keys() == live
    assert snapshot_of(restarted, keys) == before


def test_restart_continues_writing_where_it_left_off() -> None:
    bench = Bench(per_snapshot=2)
    bench.init(start=0)
    bench.ack_each(range(3))
    expected_log = snapshot_epochs(bench)
    bench.restart()
    assert bench.coordinator.write_state(KEY, StateWrite(0, 0, -1, [b(3, 3, ACKED, 1)])) is E.NONE
    assert snapshot_epochs(bench) == [*expected_log, ("U", 1)]


def test_load_skips_corrupt_and_unknown_records(bench: Bench) -> None:
    bench.init(start=1)
    log = bench.log_of(KEY)
    now = bench.clock.now_ms()
    bad_key = b"\x00\x07garbage"  # unknown key type 7
    log.append(build_batch([(bad_key, b"x")], timestamp_ms=now), now)
    good_key, _ = encode_record(ShareRecordKey(ShareRecordType.SHARE_UPDATE, *KEY), None)
    log.append(build_batch([(good_key, b"\x00\x00\x01")], timestamp_ms=now), now)  # truncated
    log.append(build_batch([(None, b"")], timestamp_ms=now), now)  # no key
    restarted = bench.restart()
    assert restarted.state(KEY) == ShareStateView(0, 0, 1, (), 0)


def test_load_skips_transactional_and_control_batches(bench: Bench) -> None:
    """Until KIP-1289: nothing writes them, and they are not applied if found."""
    bench.init(start=1)
    log = bench.log_of(KEY)
    now = bench.clock.now_ms()
    record = encode_record(
        ShareRecordKey(ShareRecordType.SHARE_UPDATE, *KEY),
        ShareUpdateValue(0, 0, -1, (StateBatch(1, 2, ACKED, 1),)),
    )
    log.append(
        build_batch(
            [record], timestamp_ms=now, producer_id=9, producer_epoch=0, transactional=True
        ),
        now,
    )
    restarted = bench.restart()
    assert restarted.state(KEY) == ShareStateView(0, 0, 1, (), 0)


# --- pruning ---------------------------------------------------------------------------------


def test_prune_advances_to_the_oldest_needed_snapshot() -> None:
    bench = Bench(partitions=1, per_snapshot=2)
    other = ShareStateKey("group-2", TOPIC, 0)
    c = bench.coordinator
    bench.init(start=0)  # offset 0
    bench.init(other, start=0)  # offset 1
    bench.ack_each(range(3))  # KEY: updates at 2, 3, snapshot at 4
    assert c.write_state(other, StateWrite(0, 0, -1, [b(0, 0, ACKED, 1)])) is E.NONE  # update at 5
    log = bench.logs[0]
    assert c.prune() == {0: 1}  # `other` still needs its snapshot at 1
    assert log.log_start_offset == 1
    assert c.prune() == {}  # nothing new to prune
    assert c.initialize_state(other, 0, 7) is E.NONE  # a fresh snapshot of `other` at 6
    assert c.prune() == {0: 4}  # KEY's snapshot at 4; its records before are redundant
    assert log.log_start_offset == 4
    before = snapshot_of(c, [KEY, other])
    restarted = bench.restart()
    assert snapshot_of(restarted, [KEY, other]) == before
    assert restarted.state(KEY) == ShareStateView(0, 0, 0, (b(0, 2, ACKED, 1),), 1)


def test_a_key_with_updates_after_its_snapshot_keeps_the_snapshot() -> None:
    bench = Bench(partitions=1)
    c = bench.coordinator
    bench.init(start=0)  # snapshot at 0
    bench.ack_each(range(5))
    assert c.prune() == {}
    assert bench.restart().state(KEY) == ShareStateView(0, 0, 0, (b(0, 4, ACKED, 1),), 0)


def test_prune_after_deletes_and_restart() -> None:
    bench = Bench(partitions=1)
    other = ShareStateKey("group-2", TOPIC, 0)
    c = bench.coordinator
    bench.init(start=0)  # 0
    bench.init(other, start=5)  # 1
    assert c.write_state(other, StateWrite(0, 0, -1, [b(5, 5, ACKED, 1)])) is E.NONE  # 2
    assert c.delete_state(KEY) is E.NONE  # 3 (tombstone)
    assert c.prune() == {0: 1}
    restarted = bench.restart()
    assert restarted.keys() == [other]
    assert restarted.state(other) == ShareStateView(0, 0, 5, (b(5, 5, ACKED, 1),), 0)
    assert restarted.delete_state(other) is E.NONE  # 4
    assert restarted.prune() == {0: 5}  # no live key: everything is redundant
    assert bench.logs[0].log_start_offset == bench.logs[0].log_end_offset == 5
    assert bench.restart().keys() == []


def test_a_reinitialized_key_keeps_its_fences_after_pruning_and_restart() -> None:
    """A read at leader epoch 3 fences epochs below 3; re-initializing records leader epoch 0.
    Once pruning has cut the read's record, the snapshot still carries the fence."""
    bench = Bench(partitions=1)
    c = bench.coordinator
    bench.init(start=0)  # 0
    assert c.read_state(KEY, 3).error is E.NONE  # 1: leader epoch 3 recorded
    assert c.initialize_state(KEY, 2, 0) is E.NONE  # 2: a fresh snapshot, leader epoch 0
    assert c.initialize_state(KEY, -1, 0) is E.NONE  # 3: state epoch -1 (no check)
    assert c.prune() == {0: 3}
    restarted = bench.restart()
    assert restarted.read_state(KEY, 1).error is E.FENCED_LEADER_EPOCH
    assert restarted.write_state(KEY, StateWrite(-1, 1, -1, [])) is E.FENCED_LEADER_EPOCH
    assert restarted.write_state(KEY, StateWrite(1, 3, -1, [])) is E.FENCED_STATE_EPOCH
    assert restarted.initialize_state(KEY, 1, 0) is E.FENCED_STATE_EPOCH
    assert restarted.read_state(KEY, 3).error is E.NONE


def test_prune_runs_on_the_clock() -> None:
    bench = Bench(
        partitions=1,
        per_snapshot=0,
        options={"prune_interval_ms": PRUNE_MS, "cold_partition_snapshot_interval_ms": None},
    )
    bench.init(start=0)
    bench.ack_each(range(3))
    log = bench.logs[0]
    assert log.log_start_offset == 0
    bench.clock.advance(PRUNE_MS - 1)
    assert log.log_start_offset == 0
    bench.clock.advance(1)
    assert log.log_start_offset == 3  # the latest snapshot
    assert bench.coordinator.write_state(KEY, StateWrite(0, 0, -1, [b(3, 3, ACKED, 1)])) is E.NONE
    bench.clock.advance(PRUNE_MS)  # the job reschedules itself
    assert log.log_start_offset == 4
    bench.coordinator.close()
    assert (
        bench.coordinator.write_state(KEY, StateWrite(0, 0, -1, [])) is E.COORDINATOR_NOT_AVAILABLE
    )
    bench.clock.advance(PRUNE_MS * 3)  # no job after close
    assert log.log_start_offset == 4


def test_cold_partitions_are_resnapshotted_once() -> None:
    interval = 60_000
    bench = Bench(
        partitions=1,
        options={"cold_partition_snapshot_interval_ms": interval, "prune_interval_ms": 10**9},
    )
    idle = ShareStateKey("idle", TOPIC, 0)
    c = bench.coordinator
    bench.init(idle, start=0)  # 0
    bench.init(start=0)  # 1
    bench.clock.advance(interval - 1)
    assert c.write_state(KEY, StateWrite(0, 0, -1, [b(0, 0, ACKED, 1)])) is E.NONE  # 2: KEY is busy
    assert c.prune() == {}  # the idle key's snapshot at 0 holds the log back
    bench.clock.advance(1)  # the job: both snapshots are `interval` old
    idle_view = c.state(idle)
    assert idle_view is not None
    assert idle_view.snapshot_epoch == 1
    key_view = c.state(KEY)
    assert key_view == ShareStateView(0, 0, 0, (b(0, 0, ACKED, 1),), 1)
    assert c.prune() == {0: 3}
    written = bench.total_records()
    bench.clock.advance(interval * 3)  # everything is cold-snapshotted and quiet
    assert bench.total_records() == written
    before = snapshot_of(c, [idle, KEY])
    assert snapshot_of(bench.restart(), [idle, KEY]) == before


def test_cold_snapshots_can_be_disabled() -> None:
    bench = Bench(partitions=1, options={"cold_partition_snapshot_interval_ms": None})
    bench.init()
    bench.clock.advance(PRUNE_MS * 4)
    assert bench.total_records() == 1
    assert bench.coordinator.snapshot_cold_partitions() == 0


# --- append failures leave the state unchanged -----------------------------------------------


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (NotEnoughReplicasError(), E.COORDINATOR_NOT_AVAILABLE),
        (KafkaStorageError(), E.NOT_COORDINATOR),
        (OSError("disk full"), E.NOT_COORDINATOR),
        (RuntimeError("boom"), E.UNKNOWN_SERVER_ERROR),
    ],
)
def test_append_failure_changes_nothing(bench: Bench, exc: Exception, expected: ErrorCode) -> None:
    bench.init(start=0)
    c = bench.coordinator
    assert c.write_state(KEY, StateWrite(0, 0, -1, [b(0, 1, ACKED, 1)])) is E.NONE
    before = (c.state(KEY), bench.total_records())
    log = bench.log_of(KEY)
    operations: list[Callable[[], object]] = [
        lambda: c.write_state(KEY, StateWrite(0, 0, 5, [b(5, 6, ACKED, 1)])),
        lambda: c.initialize_state(KEY, 1, 50),
        lambda: c.delete_state(KEY),
    ]
    for operation in operations:
        log.fail_next(exc)
        assert operation() is expected
        assert (c.state(KEY), bench.total_records()) == before
    log.fail_next(exc)
    assert c.read_state(KEY, 3) == ReadStateResult(expected)  # the leader bump failed
    assert (c.state(KEY), bench.total_records()) == before
    assert c.write_state(KEY, StateWrite(0, 2, -1, [])) is E.NONE  # epoch 3 was not recorded
    assert bench.restart().state(KEY) == before[0]


def test_flush_failure_removes_the_record(bench: Bench) -> None:
    bench.init(start=0)
    c = bench.coordinator
    log = bench.log_of(KEY)
    log.flush_failures.append(OSError("fsync failed"))
    assert c.write_state(KEY, StateWrite(0, 0, -1, [b(0, 1, ACKED, 1)])) is E.NOT_COORDINATOR
    assert c.state(KEY) == ShareStateView(0, 0, 0, (), 0)
    assert log.log_end_offset == 1
    assert c.write_state(KEY, StateWrite(0, 0, -1, [b(0, 0, ARCHIVED, 1)])) is E.NONE
    expected = ShareStateView(0, 0, 0, (b(0, 0, ARCHIVED, 1),), 0)
    assert c.state(KEY) == expected
    assert bench.restart().state(KEY) == expected


def test_failed_first_initialize_leaves_no_key(bench: Bench) -> None:
    bench.open(bench.coordinator.partition_for(KEY))
    bench.log_of(KEY).fail_next(OSError("no space"))
    assert bench.coordinator.initialize_state(KEY, 0, 0) is E.NOT_COORDINATOR
    assert bench.coordinator.state(KEY) is None
    assert bench.coordinator.read_state(KEY, 0).error is E.INVALID_REQUEST
