"""Session timeouts on the manual clock: expiry removes the member and tells the broker."""

from __future__ import annotations

from coordinator.share.group_model import HeartbeatRequest
from tests.unit.share_group.group_bench import GROUP, Bench, E
from txn.errors import KafkaStorageError

SESSION_MS = 45000


def test_silent_member_is_removed_after_the_session_timeout(bench: Bench) -> None:
    bench.join("m1", ["foo"])
    bench.join("m2", ["foo"])
    bench.clock.advance(SESSION_MS - 1)
    assert bench.removed == []
    bench.beat("m2", 3)  # m2 stays alive; m1 stays silent
    bench.clock.advance(1)
    assert bench.removed == [(GROUP, "m1")]
    view = bench.coordinator.group(GROUP)
    assert view is not None
    assert set(view.members) == {"m2"}
    assert view.group_epoch == 4  # the removal bumped the epoch


def test_each_heartbeat_restarts_the_timer(bench: Bench) -> None:
    epoch = bench.join("m1", ["foo"]).member_epoch
    for _ in range(5):
        bench.clock.advance(SESSION_MS - 1000)
        assert bench.beat("m1", epoch).error is E.NONE
    assert bench.removed == []
    bench.clock.advance(SESSION_MS)
    assert bench.removed == [(GROUP, "m1")]
    assert bench.coordinator.is_empty(GROUP)


def test_expired_member_must_rejoin(bench: Bench) -> None:
    bench.join("m1", ["foo"])
    bench.clock.advance(SESSION_MS)
    assert bench.beat("m1", 1).error is E.UNKNOWN_MEMBER_ID
    assert bench.join("m1", ["foo"]).member_epoch == 4


def test_leave_cancels_the_timer(bench: Bench) -> None:
    bench.join("m1", ["foo"])
    bench.coordinator.heartbeat(HeartbeatRequest(GROUP, "m1", -1, None, None))
    bench.clock.advance(10 * SESSION_MS)
    assert bench.removed == [(GROUP, "m1")]  # from the leave, not a second time
    view = bench.coordinator.group(GROUP)
    assert view is not None and view.group_epoch == 3


def test_group_config_overrides_the_session_timeout(bench: Bench) -> None:
    error, _ = bench.coordinator.alter_group_configs(GROUP, {"share.session.timeout.ms": 60000})
    assert error is E.NONE
    bench.join("m1", ["foo"])
    bench.clock.advance(SESSION_MS)
    assert bench.removed == []
    bench.clock.advance(60000 - SESSION_MS)
    assert bench.removed == [(GROUP, "m1")]


def test_failed_removal_is_retried(bench: Bench) -> None:
    bench.join("m1", ["foo"])
    bench.log.fail_next(KafkaStorageError("disk gone"))
    bench.clock.advance(SESSION_MS)
    assert bench.removed == []
    assert not bench.coordinator.is_empty(GROUP)
    bench.clock.advance(1000)  # the retry backoff
    assert bench.removed == [(GROUP, "m1")]


def test_timers_restart_after_a_coordinator_restart(bench: Bench) -> None:
    bench.join("m1", ["foo"])
    bench.clock.advance(SESSION_MS - 1000)
    bench.restart()
    bench.clock.advance(SESSION_MS - 1)  # the member keeps a full session after failover
    view = bench.coordinator.group(GROUP)
    assert view is not None and set(view.members) == {"m1"}
    bench.clock.advance(1)
    assert bench.removed == [(GROUP, "m1")]


def test_callback_failure_does_not_break_the_coordinator(bench: Bench) -> None:
    def boom(group_id: str, member_id: str) -> None:
        raise RuntimeError(f"{group_id}/{member_id}")

    bench.coordinator.on_member_removed = boom
    bench.join("m1", ["foo"])
    bench.clock.advance(SESSION_MS)
    assert bench.coordinator.is_empty(GROUP)
    assert bench.join("m2", ["foo"]).error is E.NONE
