"""A share group computes its target assignment at most once per assignment interval.

Kafka 4.4's ``group.share.assignment.interval.ms`` (1 s) and the group's own
``share.assignment.interval.ms``: an epoch bumped sooner waits for a heartbeat after the
interval, members stay at the previous target's epoch meanwhile, and partitions initialized
in the wait join that assignment instead of bumping the epoch again.
"""

from __future__ import annotations

import pytest

from tests.unit.share_group.group_bench import GROUP, INTERVAL, Bench, E


@pytest.fixture
def paced() -> Bench:
    """The broker's default interval (1 s) and the topic "foo" of two partitions."""
    b = Bench(overrides={INTERVAL: 1000})
    b.create_topic("foo", 2)
    return b


def _epochs(bench: Bench) -> tuple[int, int]:
    view = bench.coordinator.group(GROUP)
    assert view is not None
    return view.group_epoch, view.assignment_epoch


def test_a_member_joining_within_the_interval_waits_for_it(paced: Bench) -> None:
    assert paced.join("m1", ["foo"]).member_epoch == 2  # the group's first assignment
    paced.initialize_all()
    assert paced.beat("m1", 2).member_epoch == 2  # the initialized partitions wait too
    paced.clock.advance(1000)
    assert paced.beat("m1", 2).member_epoch == 3
    paced.clock.advance(100)
    joined = paced.join("m2", ["foo"])
    # The group epoch moved; the second member takes the last target's epoch, with nothing.
    assert (joined.member_epoch, joined.assignment) == (3, [])
    assert _epochs(paced) == (4, 3)
    paced.clock.advance(899)
    assert paced.beat("m1", 3).member_epoch == 3
    assert _epochs(paced) == (4, 3)
    paced.clock.advance(1)
    assert paced.beat("m1", 3).member_epoch == 4
    assert _epochs(paced) == (4, 4)
    assert paced.beat("m2", 3).member_epoch == 4
    assert sorted(len(h) for h in paced.settle().values()) == [1, 1]


def test_a_member_joining_after_the_interval_is_assigned_at_once(paced: Bench) -> None:
    paced.join("m1", ["foo"])
    paced.clock.advance(1000)
    assert paced.join("m2", ["foo"]).member_epoch == 3
    assert _epochs(paced) == (3, 3)


def test_partitions_initialized_in_the_wait_join_the_pending_assignment(paced: Bench) -> None:
    paced.join("m1", ["foo"])
    paced.create_topic("bar", 2)
    paced.clock.advance(100)
    paced.beat("m1", 2)
    paced.join("m2", ["foo", "bar"])  # epoch 3, waiting for the interval
    paced.initialize_all()  # no bump of its own: the pending assignment takes them
    assert _epochs(paced) == (3, 2)
    paced.clock.advance(900)
    assert paced.beat("m2", 2).member_epoch == 3
    assert _epochs(paced) == (3, 3)
    assert sum(len(h) for h in paced.settle().values()) == 4


def test_the_groups_own_interval_overrides_the_brokers(paced: Bench) -> None:
    assert paced.coordinator.alter_group_configs(GROUP, {"share.assignment.interval.ms": "0"}) == (
        E.NONE,
        None,
    )
    assert paced.coordinator.group_config(GROUP).assignment_interval_ms == 0
    paced.join("m1", ["foo"])
    assert paced.join("m2", ["foo"]).member_epoch == 3
    assert paced.coordinator.alter_group_configs(
        GROUP, {"share.assignment.interval.ms": "5000"}
    ) == (E.NONE, None)
    paced.clock.advance(4000)
    assert paced.join("m3", ["foo"]).member_epoch == 3
    paced.clock.advance(1000)
    assert paced.beat("m3", 3).member_epoch == 4


def test_a_failover_keeps_the_time_of_the_last_assignment(paced: Bench) -> None:
    paced.join("m1", ["foo"])
    paced.clock.advance(500)
    paced.restart()
    assert paced.join("m2", ["foo"]).member_epoch == 2
    paced.clock.advance(500)
    assert paced.beat("m2", 2).member_epoch == 3
