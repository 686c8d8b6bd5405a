"""The share partition's planners read the in-flight state and change nothing; applying their
plan is what changes it."""

from __future__ import annotations

from coordinator.share.acknowledgement import plan_acks
from coordinator.share.acquisition import plan_acquire, plan_expiry, plan_release
from coordinator.share.partition_state import InFlightState, plan_log_start
from coordinator.share.persister import PersisterStateBatch
from coordinator.share.share_partition import SharePartition
from coordinator.share.txn_pending import plan_complete, plan_pending, plan_restore
from tests.unit.share.fakes_sp import (
    ACCEPT,
    ACKNOWLEDGED,
    NOW,
    REJECT,
    RELEASE,
    RENEW,
    ack,
    ranges,
    rig,
)
from txn.batch import iter_batches
from txn.errors import ErrorCode

BIG = 1 << 20


def full(state: InFlightState) -> tuple[object, ...]:
    """Every field of the state, runs and locks included."""
    runs = tuple(
        (
            r.first,
            r.last,
            r.state,
            r.delivery_count,
            r.member_id,
            None if r.lock is None else (id(r.lock), r.lock.held, r.lock.timer is not None),
            r.pending,
        )
        for r in state.runs
    )
    return (
        runs,
        state.start,
        state.end,
        state.persisted_start,
        state.state_epoch,
        state.find_next,
        frozenset(id(lock) for lock in state.locks),
        tuple(state.transitioning),
        state.write_depth,
        tuple(state.deferred),
    )


def busy_partition() -> SharePartition:
    """0-4 ACKNOWLEDGED, 5-9 TX_PENDING (producer 7), 10-14 m1's, 15-19 m2's, 20-24 unread."""
    r = rig(5, 5, 5, 5, 5)
    sp = r.sp
    assert ranges(sp.acquire("m1", 15, BIG)) == [(0, 14, 1)]
    assert ranges(sp.acquire("m2", 5, BIG)) == [(15, 19, 1)]
    assert sp.acknowledge("m1", [ack(0, 4, ACCEPT)]) is ErrorCode.NONE
    assert sp.prepare_pending("m1", 7, 0, [ack(5, 9, REJECT)]) is ErrorCode.NONE
    return sp


def test_planners_change_nothing() -> None:
    sp = busy_partition()
    state, config = sp.inflight, sp.config
    before = full(state)
    lock = next(iter(state.locks))
    raw = sp._data.fetch(20, BIG, read_committed=False).records
    assert plan_acquire(
        state,
        config,
        member_id="m3",
        max_fetch_records=100,
        fetch_from=20,
        raw=raw,
        batches=iter_batches(raw),
        aborted=(),
        now_ms=NOW,
    ).acquired
    assert plan_release(state, config, "m1")
    assert plan_expiry(state, config, lock)
    batches = [ack(10, 12, ACCEPT), ack(13, 14, RENEW)]
    assert not isinstance(plan_acks(state, config, "m1", batches, txn=None, now_ms=NOW), ErrorCode)
    assert not isinstance(
        plan_pending(state, config, "m2", 8, 0, [ack(15, 19, RELEASE)], now_ms=NOW), ErrorCode
    )
    assert plan_complete(state, config, 7, 0, commit=True)
    assert plan_restore(state, 9, 0, [PersisterStateBatch(20, 24, int(ACKNOWLEDGED), 1)])
    assert plan_log_start(state, 12) is not None
    assert full(state) == before


def test_a_plan_applied_is_what_the_partition_does() -> None:
    done = busy_partition()
    assert done.complete_pending(7, 0, commit=True) is ErrorCode.NONE
    planned = busy_partition()
    plan = plan_complete(planned.inflight, planned.config, 7, 0, commit=True)
    planned.inflight.apply(plan)
    planned.inflight.advance_start()
    assert planned.state_batches() == done.state_batches()
    assert planned.start_offset == done.start_offset == 10


def test_share_partition_is_one_class() -> None:
    assert SharePartition.__bases__ == (object,)
