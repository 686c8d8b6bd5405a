"""The consumer-group coordinator on a manual clock: membership, fencing, offsets, replay."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import pytest

from coordinator.assembly import consumer_group_coordinator
from coordinator.group.coordinator import ConsumerGroupCoordinator
from coordinator.group.offset_commands import Committer
from coordinator.group.results import (
    JoinRequest,
    JoinResult,
    SyncResult,
)
from coordinator.log.memory_log import MemoryLog
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicPartition

E = ErrorCode
G = "g1"
T0 = TopicPartition("orders", 0)
T1 = TopicPartition("orders", 1)
OTHER = TopicPartition("other", 0)


def subscription(*topics: str) -> bytes:
    """A consumer-protocol subscription (version 0): topics, then empty user data."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


@dataclass
class Bench:
    clock: ManualClock = field(default_factory=ManualClock)
    log: MemoryLog = field(default_factory=MemoryLog)
    shares: set[str] = field(default_factory=set)
    events: list[tuple[str, str, int]] = field(default_factory=list)
    config: dict[str, str] = field(
        default_factory=lambda: {
            "group.initial.rebalance.delay.ms": "0",
            "group.consumer.assignment.interval.ms": "0",
        }
    )
    coord: ConsumerGroupCoordinator = field(init=False)

    def __post_init__(self) -> None:
        self.coord = self.new()

    def new(self) -> ConsumerGroupCoordinator:
        coord = consumer_group_coordinator(
            self.clock,
            BrokerConfig(self.config),
            self.log,
            is_share_group=self.shares.__contains__,
            on_event=lambda g, m, n: self.events.append((g, m, n)),
        )
        coord.load()
        return coord

    def restart(self) -> None:
        self.coord.close()
        self.coord = self.new()

    def join(
        self,
        member_id: str = "",
        *,
        instance: str | None = None,
        topics: tuple[str, ...] = ("orders",),
        session: int = 30000,
        rebalance: int = 20000,
        v4: bool = True,
    ) -> list[JoinResult]:
        out: list[JoinResult] = []
        self.coord.join(
            JoinRequest(
                G,
                member_id,
                instance,
                "consumer",
                [("range", subscription(*topics))],
                session,
                rebalance,
                "client",
                "/127.0.0.1",
                v4,
            ),
            out.append,
        )
        return out

    def join_new(self, **kw: Any) -> tuple[str, list[JoinResult]]:
        """The KIP-394 round trip: MEMBER_ID_REQUIRED, then the join with that id."""
        (first,) = self.join(**kw)
        assert first.error is E.MEMBER_ID_REQUIRED
        return first.member_id, self.join(first.member_id, **kw)

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        instance: str | None = None,
    ) -> list[SyncResult]:
        out: list[SyncResult] = []
        self.coord.sync(
            G, generation, member_id, instance, "consumer", "range", assignments or {}, out.append
        )
        return out


def stable_pair(b: Bench) -> tuple[str, str, int]:
    """Two members through one rebalance; (leader, follower, generation)."""
    m1, r1 = b.join_new()
    assert r1 and r1[0].error is E.NONE and r1[0].generation == 1
    m2, r2 = b.join_new()
    assert r2 == []  # waits: the group is rebalancing and m1 must rejoin
    r1 = b.join(m1)
    assert r1 and r2 and r1[0].generation == r2[0].generation == 2
    leader = r1[0].leader
    follower = m2 if leader == m1 else m1
    assert {m for m, _i, _meta in (r1[0] if r1[0].member_id == leader else r2[0]).members} == {
        m1,
        m2,
    }
    s_follower = b.sync(follower, 2)
    assert s_follower == []  # waits for the leader's assignment
    s_leader = b.sync(leader, 2, {leader: b"A", follower: b"B"})
    assert s_leader[0].assignment == b"A" and s_follower[0].assignment == b"B"
    return leader, follower, 2


def test_join_sync_heartbeat_and_describe() -> None:
    b = Bench()
    leader, follower, gen = stable_pair(b)
    assert b.coord.heartbeat(G, gen, follower, None) is E.NONE
    assert b.coord.heartbeat(G, gen - 1, follower, None) is E.ILLEGAL_GENERATION
    assert b.coord.heartbeat(G, gen, "nobody", None) is E.UNKNOWN_MEMBER_ID
    (desc,) = b.coord.describe([G])
    assert (desc.state, desc.protocol_type, desc.protocol) == ("Stable", "consumer", "range")
    assert {m.member_id: m.assignment for m in desc.members} == {leader: b"A", follower: b"B"}
    (dead,) = b.coord.describe(["nope"])
    assert dead.state == "Dead" and dead.error is E.NONE
    assert ("g1", "group-completed-rebalances", 1) in b.events
    assert [(g.group_id, g.state) for g in b.coord.list_groups()] == [(G, "Stable")]


def test_member_that_does_not_rejoin_is_removed_after_the_rebalance_timeout() -> None:
    b = Bench()
    leader, follower, gen = stable_pair(b)
    third, waiting = b.join_new()
    assert waiting == [] and b.coord.heartbeat(G, gen, leader, None) is E.REBALANCE_IN_PROGRESS
    rejoined = b.join(leader)
    b.clock.advance(20000)  # the rebalance timeout: the follower never rejoined
    assert rejoined and rejoined[0].generation == gen + 1
    (desc,) = b.coord.describe([G])
    assert {m.member_id for m in desc.members} == {leader, third}
    assert b.coord.heartbeat(G, gen + 1, follower, None) is E.UNKNOWN_MEMBER_ID


def test_session_timeout_removes_a_silent_member_and_rebalances() -> None:
    b = Bench()
    leader, _follower, gen = stable_pair(b)
    for _ in range(4):
        b.clock.advance(6000)
        assert b.coord.heartbeat(G, gen, leader, None) is E.NONE
    b.clock.advance(7000)  # 31 s: the follower's 30 s session passed without a heartbeat
    assert b.coord.heartbeat(G, gen, leader, None) is E.REBALANCE_IN_PROGRESS
    (again,) = b.join(leader)
    assert again.generation == gen + 1 and [m for m, _i, _d in again.members] == [leader]


def test_leave_group_batch_and_empty_group() -> None:
    b = Bench()
    leader, follower, _gen = stable_pair(b)
    error, results = b.coord.leave(G, [(follower, None), ("ghost", None)])
    assert error is E.NONE
    assert [(m, e) for m, _i, e in results] == [(follower, E.NONE), ("ghost", E.UNKNOWN_MEMBER_ID)]
    b.coord.leave(G, [(leader, None)])
    (desc,) = b.coord.describe([G])
    assert desc.state == "Empty" and desc.members == ()


def test_static_member_rejoin_fences_the_old_member_id() -> None:
    b = Bench()
    (first,) = b.join(instance="i-1")
    assert first.error is E.NONE and first.generation == 1
    b.sync(first.member_id, 1, {first.member_id: b"P"}, instance="i-1")
    (second,) = b.join(instance="i-1")  # the same instance restarted: a new member id
    assert second.member_id != first.member_id and second.error is E.NONE
    assert b.coord.heartbeat(G, second.generation, first.member_id, "i-1") is E.FENCED_INSTANCE_ID
    _error, results = b.coord.leave(G, [("", "i-1")])
    assert results == [(second.member_id, "i-1", E.NONE)]


def test_join_errors() -> None:
    b = Bench()
    assert b.join(session=10)[0].error is E.INVALID_SESSION_TIMEOUT
    assert b.join("made-up")[0].error is E.UNKNOWN_MEMBER_ID
    b.shares.add(G)
    assert b.join()[0].error is E.INCONSISTENT_GROUP_PROTOCOL
    b.shares.clear()
    _m1, _ = b.join_new()
    out: list[JoinResult] = []
    b.coord.join(
        JoinRequest(G, "", None, "connect", [("x", b"")], 10000, 10000, "c", "h", True), out.append
    )
    assert out[0].error is E.INCONSISTENT_GROUP_PROTOCOL


def test_offset_commit_fencing_and_fetch() -> None:
    b = Bench()
    leader, _follower, gen = stable_pair(b)
    ok = b.coord.commit_offsets(Committer(G, gen, leader, None), {T0: (10, 3, "m")})
    assert ok == {T0: E.NONE}
    assert b.coord.commit_offsets(Committer(G, gen - 1, leader, None), {T0: (11, 3, "")}) == {
        T0: E.ILLEGAL_GENERATION
    }
    assert b.coord.commit_offsets(Committer(G, gen, "nobody", None), {T0: (11, 3, "")}) == {
        T0: E.UNKNOWN_MEMBER_ID
    }
    assert b.coord.commit_offsets(Committer(G, -1, "", None), {T0: (11, 3, "")}) == {
        T0: E.UNKNOWN_MEMBER_ID
    }
    error, fetched = b.coord.fetch_offsets(G, [T0, T1], require_stable=False)
    assert error is E.NONE
    assert (fetched[T0].offset, fetched[T0].leader_epoch, fetched[T0].metadata) == (10, 3, "m")
    assert fetched[T1].offset == -1
    # manual assignment (generation -1) commits to a new group
    assert b.coord.commit_offsets(Committer("simple", -1, "", None), {T0: (5, -1, None)}) == {
        T0: E.NONE
    }
    assert b.coord.describe(["simple"])[0].state == "Empty"
    assert ("g1", "offset-commits", 1) in b.events


def test_offset_delete_refuses_subscribed_topics_kip_496() -> None:
    b = Bench()
    leader, _follower, gen = stable_pair(b)
    b.coord.commit_offsets(Committer(G, gen, leader, None), {T0: (10, -1, ""), OTHER: (4, -1, "")})
    error, results = b.coord.delete_offsets(G, [T0, OTHER])
    assert error is E.NONE
    assert results == {T0: E.GROUP_SUBSCRIBED_TO_TOPIC, OTHER: E.NONE}
    _err, fetched = b.coord.fetch_offsets(G, None, require_stable=False)
    assert set(fetched) == {T0}
    assert b.coord.delete_offsets("unknown", [T0]) == (E.GROUP_ID_NOT_FOUND, {})
    assert ("g1", "offset-deletions", 1) in b.events


def test_transactional_offsets_wait_for_the_marker() -> None:
    b = Bench()
    assert b.coord.txn_commit_offsets(7, 0, Committer(G, -1, "", None), {T0: (20, -1, "")}) == {
        T0: E.NONE
    }
    _e, fetched = b.coord.fetch_offsets(G, [T0], require_stable=True)
    assert fetched[T0].error is E.UNSTABLE_OFFSET_COMMIT
    _e, fetched = b.coord.fetch_offsets(G, [T0], require_stable=False)
    assert fetched[T0].offset == -1  # not visible before the commit marker
    assert b.coord.complete_transaction(7, 0, commit=True, coordinator_epoch=0) is E.NONE
    _e, fetched = b.coord.fetch_offsets(G, [T0], require_stable=True)
    assert fetched[T0].offset == 20
    # an abort discards; a marker of an older epoch does not touch a newer transaction
    b.coord.txn_commit_offsets(7, 1, Committer(G, -1, "", None), {T0: (30, -1, "")})
    assert (
        b.coord.complete_transaction(7, 0, commit=True, coordinator_epoch=0)
        is E.INVALID_PRODUCER_EPOCH
    )
    assert b.coord.txn_commit_offsets(7, 0, Committer(G, -1, "", None), {T0: (31, -1, "")}) == {
        T0: E.PRODUCER_FENCED
    }
    b.coord.complete_transaction(7, 1, commit=False, coordinator_epoch=0)
    _e, fetched = b.coord.fetch_offsets(G, [T0], require_stable=True)
    assert fetched[T0].offset == 20
    assert b.coord.complete_transaction(7, 1, commit=False, coordinator_epoch=0) is E.NONE  # again


def test_a_later_plain_commit_wins_over_an_earlier_transactional_one() -> None:
    b = Bench()
    b.coord.txn_commit_offsets(9, 0, Committer(G, -1, "", None), {T0: (50, -1, "")})
    b.coord.commit_offsets(Committer(G, -1, "", None), {T0: (60, -1, "")})
    b.coord.complete_transaction(9, 0, commit=True, coordinator_epoch=0)
    assert b.coord.fetch_offsets(G, [T0], require_stable=False)[1][T0].offset == 60


def test_replay_restores_groups_offsets_and_pending_transactions() -> None:
    b = Bench()
    leader, follower, gen = stable_pair(b)
    b.coord.commit_offsets(Committer(G, gen, leader, None), {T0: (10, 1, "x")})
    b.coord.txn_commit_offsets(5, 2, Committer(G, -1, "", None), {T1: (7, -1, "")})
    b.coord.txn_commit_offsets(6, 0, Committer(G, -1, "", None), {OTHER: (3, -1, "")})
    b.coord.complete_transaction(6, 0, commit=True, coordinator_epoch=0)
    b.restart()
    (desc,) = b.coord.describe([G])
    assert desc.state == "Stable" and {m.member_id: m.assignment for m in desc.members} == {
        leader: b"A",
        follower: b"B",
    }
    assert b.coord.heartbeat(G, gen, leader, None) is E.NONE
    _e, fetched = b.coord.fetch_offsets(G, None, require_stable=False)
    assert {tp: f.offset for tp, f in fetched.items()} == {T0: 10, OTHER: 3}
    assert (
        b.coord.fetch_offsets(G, [T1], require_stable=True)[1][T1].error is E.UNSTABLE_OFFSET_COMMIT
    )
    b.coord.complete_transaction(5, 2, commit=True, coordinator_epoch=0)
    assert b.coord.fetch_offsets(G, [T1], require_stable=True)[1][T1].offset == 7
    # members that never come back after a restart time out as usual
    b.clock.advance(30000)
    assert b.coord.heartbeat(G, gen, leader, None) is E.UNKNOWN_MEMBER_ID


def test_offsets_of_an_empty_group_expire_kip_211() -> None:
    b = Bench(
        config={
            "group.initial.rebalance.delay.ms": "0",
            "offsets.retention.minutes": "1",
            "offsets.retention.check.interval.ms": "1000",
        }
    )
    leader, follower, gen = stable_pair(b)
    b.coord.commit_offsets(Committer(G, gen, leader, None), {T0: (10, -1, "")})
    for _ in range(20):  # a group with members keeps its offsets past the retention
        b.clock.advance(6_000)
        b.coord.heartbeat(G, gen, leader, None)
        b.coord.heartbeat(G, gen, follower, None)
    assert b.coord.fetch_offsets(G, None, False)[1][T0].offset == 10
    b2 = Bench(
        config={
            "group.initial.rebalance.delay.ms": "0",
            "offsets.retention.minutes": "1",
            "offsets.retention.check.interval.ms": "1000",
        }
    )
    b2.coord.commit_offsets(Committer("simple", -1, "", None), {T0: (1, -1, "")})
    b2.clock.advance(59_000)
    assert b2.coord.fetch_offsets("simple", None, False)[1][T0].offset == 1
    b2.clock.advance(2_000)
    assert b2.coord.fetch_offsets("simple", None, False)[1] == {}
    assert b2.coord.describe(["simple"])[0].state == "Dead"  # the empty group went with them
    assert ("simple", "offset-expirations", 1) in b2.events


def test_delete_groups() -> None:
    b = Bench()
    leader, follower, gen = stable_pair(b)
    assert b.coord.delete_groups([G, "nope"]) == {
        G: E.NON_EMPTY_GROUP,
        "nope": E.GROUP_ID_NOT_FOUND,
    }
    b.coord.commit_offsets(Committer(G, gen, leader, None), {T0: (1, -1, "")})
    b.coord.leave(G, [(leader, None), (follower, None)])
    assert b.coord.delete_groups([G]) == {G: E.NONE}
    b.restart()
    assert (
        b.coord.describe([G])[0].state == "Dead" and b.coord.fetch_offsets(G, None, False)[1] == {}
    )


@pytest.mark.parametrize("initial_delay", [0, 3000])
def test_initial_rebalance_delay_gathers_members(initial_delay: int) -> None:
    b = Bench(config={"group.initial.rebalance.delay.ms": str(initial_delay)})
    _m1, r1 = b.join_new()
    if initial_delay:
        assert r1 == []
        _m2, r2 = b.join_new()
        b.clock.advance(initial_delay)
        assert (
            r1[0].generation == r2[0].generation == 1 and len(r1[0].members or r2[0].members) == 2
        )
    else:
        assert r1[0].generation == 1


def test_deferred_commits_are_applied_once_durable_in_log_order() -> None:
    """The server fsyncs plain commits off the event loop: nothing is visible before then."""
    b = Bench()

    def committed(tp: TopicPartition) -> int:
        return b.coord.fetch_offsets("d", [tp], require_stable=False)[1][tp].offset

    first, token1 = b.coord.commit_offsets_deferred(Committer("d", -1, "", None), {T0: (5, -1, "")})
    second, token2 = b.coord.commit_offsets_deferred(
        Committer("d", -1, "", None), {T0: (7, -1, "")}
    )
    assert first == second == {T0: E.NONE}
    assert token1 is not None and token2 is not None and token1 < token2
    assert committed(T0) == -1  # appended, not yet known durable
    sync = b.coord.deferred_sync()  # a memory log flushes at once
    sync()
    b.coord.durable(token2)  # covers both, applied in log order
    assert committed(T0) == 7
    b.coord.durable(token1)  # a late completion of the first changes nothing
    assert committed(T0) == 7
    # a synchronous write applies what is deferred first (its flush made it durable)
    _r, _token3 = b.coord.commit_offsets_deferred(Committer("d", -1, "", None), {T0: (9, -1, "")})
    assert b.coord.commit_offsets(Committer("d", -1, "", None), {T1: (1, -1, "")}) == {T1: E.NONE}
    assert (committed(T0), committed(T1)) == (9, 1)
    # a failed sync drops the commit: not applied (the client got an error)
    _r, token4 = b.coord.commit_offsets_deferred(Committer("d", -1, "", None), {T0: (11, -1, "")})
    assert token4 is not None
    b.coord.deferred_failed(token4)
    b.coord.durable(token4)
    assert committed(T0) == 9
    # replay reads the log as it is: the record of the failed sync survived here
    b.restart()
    assert committed(T0) == 11


def test_deferred_commit_errors_have_no_token() -> None:
    b = Bench()
    leader, _follower, gen = stable_pair(b)
    results, token = b.coord.commit_offsets_deferred(
        Committer(G, gen + 5, leader, None), {T0: (1, -1, "")}
    )
    assert results == {T0: E.ILLEGAL_GENERATION}
    assert token is None


def test_a_rebalance_is_logged_with_the_joining_clients_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """KIP-800: JoinGroup v8+ carries the client's reason; the coordinator logs it with its own
    (how an operator tells a metadata change from a heartbeat error)."""
    b = Bench()
    leader, _follower, _gen = stable_pair(b)
    caplog.set_level("INFO", logger="sharetxn")
    out: list[JoinResult] = []
    b.coord.join(
        JoinRequest(
            G,
            leader,
            None,
            "consumer",
            [("range", subscription("t"))],
            10000,
            10000,
            "client",
            "/127.0.0.1",
            True,
            reason="cached metadata has changed",
        ),
        out.append,
    )
    assert any(
        f"member {leader} rejoined; client reason: cached metadata has changed" in r.getMessage()
        for r in caplog.records
    ), [r.getMessage() for r in caplog.records]
