"""Restart recovery: replaying the group log rebuilds exactly the state that was applied."""

from __future__ import annotations

from coordinator.assembly import share_group_runtime
from coordinator.share.group_coordinator import ShareGroupCoordinator
from coordinator.share.group_model import HeartbeatRequest
from tests.unit.share_group.group_bench import GROUP, Bench, E
from txn.batch import build_batch


def busy_bench() -> Bench:
    bench = Bench()
    bench.create_topic("foo", 3)
    bench.create_topic("bar", 1)
    bench.join("m1", ["foo"])
    bench.initialize_all()
    bench.join("m2", ["foo", "bar"])
    bench.coordinator.heartbeat(
        HeartbeatRequest(GROUP, "m2", 3, "rack-b", None, client_id="c2", client_host="/h2")
    )
    bench.initialize_all()
    bench.settle()
    bench.join("m3", ["foo"], group_id="other")
    bench.coordinator.heartbeat(HeartbeatRequest("other", "m3", -1, None, None))
    bench.coordinator.alter_group_configs(GROUP, {"share.isolation.level": "read_committed"})
    return bench


def test_restart_keeps_groups_members_assignments_and_configs() -> None:
    bench = busy_bench()
    before = {g: bench.coordinator.group(g) for g in (GROUP, "other")}
    described = bench.coordinator.describe([GROUP, "other"])
    configs = bench.coordinator.describe_group_configs(GROUP)
    bench.restart()
    assert {g: bench.coordinator.group(g) for g in (GROUP, "other")} == before
    assert bench.coordinator.describe([GROUP, "other"]) == described
    assert bench.coordinator.describe_group_configs(GROUP) == configs
    assert bench.coordinator.group_config(GROUP).read_committed


def test_members_continue_with_their_epochs_after_a_restart() -> None:
    bench = busy_bench()
    epoch = bench.epoch_of("m1")
    bench.restart()
    result = bench.beat("m1", epoch)
    assert (result.error, result.member_epoch) == (E.NONE, epoch)


def test_deleted_group_stays_deleted() -> None:
    bench = busy_bench()
    assert bench.coordinator.delete_groups(["other"]) == {"other": E.NONE}
    bench.restart()
    assert bench.coordinator.group("other") is None
    assert [g.group_id for g in bench.coordinator.list_groups()] == [GROUP]


def test_unreadable_records_are_skipped() -> None:
    bench = busy_bench()
    now = bench.clock.now_ms()
    junk = [
        (b'["group","x"]', b"not json"),
        (b'["nonsense","x"]', b"{}"),
        (b'["group","x"]', b'{"v":99,"epoch":1,"topics":{}}'),
        (None, b"{}"),
    ]
    for record in junk:
        bench.log.append(build_batch([record], timestamp_ms=now), now)
    before = bench.coordinator.group(GROUP)
    bench.restart()
    assert bench.coordinator.group(GROUP) == before
    assert bench.coordinator.group("x") is None


def test_a_second_coordinator_on_the_same_log_sees_the_same_state() -> None:
    bench = busy_bench()
    other = ShareGroupCoordinator(
        share_group_runtime(bench.clock, bench.config, bench.log), bench.config, bench.topics
    )
    other.load()
    assert other.group(GROUP) == bench.coordinator.group(GROUP)
    assert other.list_groups() == bench.coordinator.list_groups()
