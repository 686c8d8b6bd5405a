"""ShareGroupHeartbeat: join, heartbeat, leave, epochs and errors (reference §5, scenario 60)."""

from __future__ import annotations

import pytest

from coordinator.assembly import share_group_runtime
from coordinator.share.group_coordinator import ShareGroupCoordinator
from coordinator.share.group_model import HeartbeatRequest, HeartbeatResult
from tests.unit.share_group.group_bench import GROUP, Bench, E
from txn.errors import KafkaStorageError


@pytest.fixture
def bench() -> Bench:
    b = Bench()
    b.create_topic("foo", 3)
    b.create_topic("bar", 2)
    return b


# --- request validation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group_id", "member_id", "epoch", "rack", "topics", "message"),
    [
        (GROUP, "", 0, None, ["foo"], "MemberId can't be empty."),
        (GROUP, "  ", 0, None, ["foo"], "MemberId can't be empty."),
        ("", "m1", 0, None, ["foo"], "GroupId can't be empty."),
        (GROUP, "m1", 0, "", ["foo"], "RackId can't be empty."),
        (GROUP, "m1", 0, None, None, "SubscribedTopicNames must be set in first request."),
        (GROUP, "m1", 0, None, [], "SubscribedTopicNames must be set in first request."),
        (GROUP, "m1", -2, None, ["foo"], "MemberEpoch is invalid."),
    ],
)
def test_invalid_requests_are_rejected(
    bench: Bench,
    group_id: str,
    member_id: str,
    epoch: int,
    rack: str | None,
    topics: list[str] | None,
    message: str,
) -> None:
    result = bench.coordinator.heartbeat(HeartbeatRequest(group_id, member_id, epoch, rack, topics))
    assert (result.error, result.error_message) == (E.INVALID_REQUEST, message)
    assert bench.coordinator.group(GROUP) is None


def test_requests_before_load_and_after_close_are_refused(bench: Bench) -> None:
    unloaded = ShareGroupCoordinator(
        share_group_runtime(bench.clock, bench.config, bench.log), bench.config, bench.topics
    )
    result = unloaded.heartbeat(HeartbeatRequest(GROUP, "m1", 0, None, ["foo"]))
    assert result.error is E.COORDINATOR_LOAD_IN_PROGRESS
    bench.coordinator.close()
    result = bench.coordinator.heartbeat(HeartbeatRequest(GROUP, "m1", 0, None, ["foo"]))
    assert result.error is E.COORDINATOR_NOT_AVAILABLE


# --- join -------------------------------------------------------------------------------------


def test_first_heartbeat_creates_the_group_with_epoch_one(bench: Bench) -> None:
    """Kafka 4.4 starts a group at epoch 1: the first join makes epoch 2."""
    result = bench.join("m1", ["foo"])
    assert (result.member_id, result.member_epoch) == ("m1", 2)
    assert result.heartbeat_interval_ms == 5000
    # Nothing is assignable before the share state is initialized.
    assert result.assignment == []
    view = bench.coordinator.group(GROUP)
    assert view is not None
    assert (view.state, view.group_epoch, view.assignment_epoch) == ("Stable", 2, 2)
    assert view.members["m1"].subscribed_topic_names == ("foo",)


def test_partitions_are_assigned_once_initialized(bench: Bench) -> None:
    bench.join("m1", ["foo"])
    bench.initialize_all()
    result = bench.beat("m1", 2)
    assert result.error is E.NONE
    assert result.member_epoch == 3  # initialization moved the group epoch
    assert result.assignment == [(bench.topic_id("foo"), [0, 1, 2])]


def test_assignment_is_sent_only_when_it_changed_or_on_full_requests(bench: Bench) -> None:
    bench.join("m1", ["foo"])
    bench.initialize_all()
    first = bench.beat("m1", 2)
    assert first.assignment is not None
    quiet = bench.beat("m1", first.member_epoch)
    assert (quiet.error, quiet.assignment) == (E.NONE, None)
    full = bench.coordinator.heartbeat(
        HeartbeatRequest(GROUP, "m1", first.member_epoch, None, ["foo"])
    )
    assert full.assignment == first.assignment


def test_second_member_shares_the_partitions(bench: Bench) -> None:
    bench.join("m1", ["foo"])
    bench.initialize_all()
    bench.beat("m1", 2)
    second = bench.join("m2", ["foo"])
    assert second.member_epoch == 4
    held = bench.settle()
    assert sorted(len(p) for p in held.values()) == [1, 2]
    assert held["m1"] | held["m2"] == {(bench.topic_id("foo"), p) for p in range(3)}
    assert not held["m1"] & held["m2"]


def test_lost_join_response_is_retried_with_epoch_zero(bench: Bench) -> None:
    bench.join("m1", ["foo"])
    again = bench.coordinator.heartbeat(HeartbeatRequest(GROUP, "m1", 0, None, ["foo"]))
    assert (again.error, again.member_epoch) == (E.NONE, 2)
    view = bench.coordinator.group(GROUP)
    assert view is not None and view.group_epoch == 2  # no new member, no bump


def test_previous_epoch_is_accepted_after_a_lost_response(bench: Bench) -> None:
    bench.join("m1", ["foo"])
    bench.initialize_all()
    bumped = bench.beat("m1", 2)
    assert bumped.member_epoch == 3
    retry = bench.beat("m1", 2)  # the response with epoch 3 was lost
    assert (retry.error, retry.member_epoch) == (E.NONE, 3)


def test_rack_and_client_changes_do_not_bump_the_epoch(bench: Bench) -> None:
    bench.join("m1", ["foo"])
    result = bench.coordinator.heartbeat(
        HeartbeatRequest(GROUP, "m1", 2, "rack-a", None, client_id="cli", client_host="/10.0.0.1")
    )
    assert result.error is E.NONE
    view = bench.coordinator.group(GROUP)
    assert view is not None and view.group_epoch == 2
    member = view.members["m1"]
    assert (member.rack_id, member.client_id, member.client_host) == ("rack-a", "cli", "/10.0.0.1")


def test_subscription_change_bumps_the_epoch_and_filters_the_assignment(bench: Bench) -> None:
    bench.join("m1", ["foo", "bar"])
    bench.initialize_all()
    result = bench.beat("m1", 2)
    assert {t for t, _ in result.assignment or []} == {bench.topic_id("foo"), bench.topic_id("bar")}
    narrowed = bench.coordinator.heartbeat(
        HeartbeatRequest(GROUP, "m1", result.member_epoch, None, ["bar"])
    )
    assert narrowed.member_epoch == result.member_epoch + 1
    assert narrowed.assignment == [(bench.topic_id("bar"), [0, 1])]


def test_unknown_topics_are_subscribed_but_assign_nothing(bench: Bench) -> None:
    result = bench.join("m1", ["missing"])
    assert result.assignment == []
    assert bench.coordinator.partitions_to_initialize(GROUP) == []


# --- errors (scenario 60) ---------------------------------------------------------------------


def test_unknown_group_with_a_nonzero_epoch(bench: Bench) -> None:
    result = bench.beat("m1", 5)
    assert result.error is E.GROUP_ID_NOT_FOUND
    assert bench.coordinator.group(GROUP) is None


def test_unknown_member_with_a_nonzero_epoch(bench: Bench) -> None:
    bench.join("m1", ["foo"])
    result = bench.beat("m2", 1)
    assert result.error is E.UNKNOWN_MEMBER_ID


def test_group_max_size_rejects_a_new_member() -> None:
    bench = Bench(overrides={"group.share.max.size": 1})
    bench.create_topic("foo", 1)
    bench.join("m1", ["foo"])
    result = bench.coordinator.heartbeat(HeartbeatRequest(GROUP, "m2", 0, None, ["foo"]))
    assert result.error is E.GROUP_MAX_SIZE_REACHED
    # The existing member still heartbeats.
    assert bench.beat("m1", 2).error is E.NONE


def assert_fenced(result: HeartbeatResult, reason: str) -> None:
    assert result.error is E.FENCED_MEMBER_EPOCH
    assert reason in (result.error_message or "")


def m1_at_epoch_three(bench: Bench) -> None:
    bench.join("m1", ["foo"])
    bench.initialize_all()
    bench.beat("m1", 2)  # epoch 3, previous 2


@pytest.mark.parametrize("epoch", [3, 7])
def test_epoch_ahead_of_the_member_is_fenced(bench: Bench, epoch: int) -> None:
    bench.join("m1", ["foo"])
    assert_fenced(bench.beat("m1", epoch), "greater member epoch")


def test_epoch_behind_the_previous_one_is_fenced(bench: Bench) -> None:
    m1_at_epoch_three(bench)
    bench.join("m2", ["foo"])
    bench.beat("m1", 3)  # epoch 4, previous 3
    assert_fenced(bench.beat("m1", 2), "does not match the previous member epoch (3)")


def test_rejoin_with_epoch_zero_after_moving_on_is_fenced(bench: Bench) -> None:
    m1_at_epoch_three(bench)
    result = bench.coordinator.heartbeat(HeartbeatRequest(GROUP, "m1", 0, None, ["foo"]))
    assert result.error is E.FENCED_MEMBER_EPOCH


# --- leave ------------------------------------------------------------------------------------


def test_leave_removes_the_member_and_bumps_the_epoch(bench: Bench) -> None:
    bench.join("m1", ["foo"])
    bench.join("m2", ["foo"])
    result = bench.coordinator.heartbeat(HeartbeatRequest(GROUP, "m2", -1, None, None))
    assert (result.error, result.member_id, result.member_epoch) == (E.NONE, "m2", -1)
    view = bench.coordinator.group(GROUP)
    assert view is not None
    assert set(view.members) == {"m1"}
    assert view.group_epoch == 4
    assert bench.removed == [(GROUP, "m2")]


def test_last_member_leaving_empties_the_group(bench: Bench) -> None:
    bench.join("m1", ["foo"])
    bench.coordinator.heartbeat(HeartbeatRequest(GROUP, "m1", -1, None, None))
    view = bench.coordinator.group(GROUP)
    assert view is not None
    assert (view.state, view.members) == ("Empty", {})
    assert bench.coordinator.is_empty(GROUP)


def test_leave_of_unknown_group_or_member(bench: Bench) -> None:
    assert (
        bench.coordinator.heartbeat(HeartbeatRequest(GROUP, "m1", -1, None, None)).error
        is E.GROUP_ID_NOT_FOUND
    )
    bench.join("m1", ["foo"])
    assert (
        bench.coordinator.heartbeat(HeartbeatRequest(GROUP, "m9", -1, None, None)).error
        is E.UNKNOWN_MEMBER_ID
    )


def test_failed_append_changes_nothing(bench: Bench) -> None:
    bench.join("m1", ["foo"])
    bench.log.fail_next(KafkaStorageError("disk gone"))
    result = bench.coordinator.heartbeat(HeartbeatRequest(GROUP, "m2", 0, None, ["foo"]))
    assert result.error is E.NOT_COORDINATOR
    view = bench.coordinator.group(GROUP)
    assert view is not None
    assert (set(view.members), view.group_epoch) == ({"m1"}, 2)
    # The retry succeeds normally.
    assert bench.join("m2", ["foo"]).member_epoch == 3
