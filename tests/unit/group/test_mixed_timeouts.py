"""Kafka's join and sync timeouts of classic members in KIP-848 groups (manual clock)."""

from __future__ import annotations

from coordinator.group.results import JoinRequest, JoinResult, SyncResult
from tests.unit.group.test_mixed_groups import Bench, G, subscription
from txn.errors import ErrorCode

E = ErrorCode
REBALANCE_MS = 5000  # shorter than the session timeout (30 s): the timeouts here decide


def join(b: Bench, member_id: str) -> JoinResult:
    out: list[JoinResult] = []
    b.coord.join(
        JoinRequest(
            G,
            member_id,
            None,
            "consumer",
            [("range", subscription(("orders",)))],
            30000,
            REBALANCE_MS,
            "classic-client",
            "/127.0.0.1",
            True,
        ),
        out.append,
    )
    (result,) = out
    return result


def join_new(b: Bench) -> JoinResult:
    first = join(b, "")
    assert first.error is E.MEMBER_ID_REQUIRED
    joined = join(b, first.member_id)
    assert joined.error is E.NONE
    return joined


def sync(b: Bench, member_id: str, generation: int) -> SyncResult:
    out: list[SyncResult] = []
    b.coord.sync(G, generation, member_id, None, "consumer", "range", {}, out.append)
    (result,) = out
    return result


def members(b: Bench) -> set[str]:
    (description,) = b.coord.describe_consumer_protocol([G])
    group = description[2]
    assert group is not None
    return set(group.members)


def consumer_member(b: Bench) -> None:
    first = b.beat("m1", 0)
    assert first.member_epoch == 2  # a new group is at epoch 1
    b.beat("m1", 2, owned=first.assignment)


def test_a_classic_member_that_does_not_sync_in_time_is_removed() -> None:
    b = Bench()
    consumer_member(b)
    joined = join_new(b)
    b.clock.advance(REBALANCE_MS - 1)
    assert joined.member_id in members(b)
    b.clock.advance(1)
    assert members(b) == {"m1"}
    assert b.coord.heartbeat(G, joined.generation, joined.member_id, None) is (E.UNKNOWN_MEMBER_ID)


def test_a_sync_in_time_cancels_the_sync_timeout() -> None:
    b = Bench()
    consumer_member(b)
    joined = join_new(b)
    b.clock.advance(REBALANCE_MS - 1)
    assert sync(b, joined.member_id, joined.generation).error is E.NONE
    b.clock.advance(REBALANCE_MS * 2)  # within the session timeout
    assert joined.member_id in members(b)


def _told_to_rejoin(b: Bench) -> JoinResult:
    """A synced classic member the coordinator then asks to rejoin (a new member joined)."""
    consumer_member(b)
    joined = join_new(b)
    assert sync(b, joined.member_id, joined.generation).error is E.NONE
    assert b.beat("m2", 0).error is E.NONE  # the group epoch moves on
    assert b.coord.heartbeat(G, joined.generation, joined.member_id, None) is (
        E.REBALANCE_IN_PROGRESS
    )
    return joined


def test_a_classic_member_that_does_not_rejoin_in_time_is_removed() -> None:
    b = Bench()
    joined = _told_to_rejoin(b)
    # heartbeats keep its session alive but do not push the join deadline back
    for _ in range(2):
        b.clock.advance(2000)
        assert b.coord.heartbeat(G, joined.generation, joined.member_id, None) is (
            E.REBALANCE_IN_PROGRESS
        )
    b.clock.advance(REBALANCE_MS - 4000 - 1)
    assert joined.member_id in members(b)
    b.clock.advance(1)
    assert joined.member_id not in members(b)
    assert members(b) == {"m1", "m2"}


def test_a_rejoin_in_time_cancels_the_join_timeout() -> None:
    b = Bench()
    joined = _told_to_rejoin(b)
    b.clock.advance(REBALANCE_MS - 1)
    again = join(b, joined.member_id)
    assert again.error is E.NONE and again.generation > joined.generation
    assert sync(b, joined.member_id, again.generation).error is E.NONE
    b.clock.advance(REBALANCE_MS * 2)
    assert joined.member_id in members(b)


def test_a_sync_told_to_rejoin_arms_the_join_timeout() -> None:
    b = Bench()
    consumer_member(b)
    joined = join_new(b)
    assert b.beat("m2", 0).error is E.NONE
    assert sync(b, joined.member_id, joined.generation).error is E.REBALANCE_IN_PROGRESS
    b.clock.advance(REBALANCE_MS)
    assert joined.member_id not in members(b)
