"""Classic members in KIP-848 groups, online upgrade and downgrade (manual clock)."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from coordinator.group.consumer_model import Partitions
from coordinator.group.consumer_protocol import ConsumerHeartbeatResult
from coordinator.group.embedded import encode_assignment, parse_assignment, parse_subscription
from coordinator.group.offset_commands import Committer
from coordinator.group.results import JoinRequest, JoinResult, SyncResult
from tests.unit.group.orders_bench import OrdersBench
from txn.errors import ErrorCode

E = ErrorCode
G = "mixed"


def subscription(topics: tuple[str, ...], owned: dict[str, list[int]] | None = None) -> bytes:
    """A consumer-protocol subscription, version 1 (with owned partitions)."""
    out = struct.pack(">hi", 1, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    out += struct.pack(">i", -1)  # no user data
    owned = owned or {}
    out += struct.pack(">i", len(owned))
    for t, ps in owned.items():
        out += struct.pack(">h", len(t)) + t.encode() + struct.pack(f">i{len(ps)}i", len(ps), *ps)
    return out


@dataclass
class Bench(OrdersBench):
    policy: str = "bidirectional"

    def broker_config(self) -> dict[str, str]:
        return {**super().broker_config(), "group.consumer.migration.policy": self.policy}

    def beat(
        self, member: str, epoch: int, owned: Partitions | None = None
    ) -> ConsumerHeartbeatResult:
        return self.coord.consumer_heartbeat(
            G,
            member,
            epoch,
            rebalance_timeout_ms=30000,
            subscribed_topic_names=["orders"] if epoch == 0 else None,
            owned=owned,
        )

    def join(self, member_id: str = "", owned: dict[str, list[int]] | None = None) -> JoinResult:
        out: list[JoinResult] = []
        self.coord.join(
            JoinRequest(
                G,
                member_id,
                None,
                "consumer",
                [("range", subscription(("orders",), owned)), ("roundrobin", b"")],
                30000,
                20000,
                "classic-client",
                "/127.0.0.1",
                True,
            ),
            out.append,
        )
        (result,) = out
        return result

    def join_new(self) -> JoinResult:
        first = self.join()
        assert first.error is E.MEMBER_ID_REQUIRED
        return self.join(first.member_id)

    def sync(self, member_id: str, generation: int) -> SyncResult:
        out: list[SyncResult] = []
        self.coord.sync(G, generation, member_id, None, "consumer", "range", {}, out.append)
        (result,) = out
        return result


def classic_leader_with_everything(b: Bench) -> JoinResult:
    """A classic group of one member that assigned itself every partition."""
    joined = b.join_new()
    assert joined.error is E.NONE  # a classic group: this member leads
    out: list[SyncResult] = []
    b.coord.sync(
        G,
        joined.generation,
        joined.member_id,
        None,
        "consumer",
        "range",
        {joined.member_id: encode_assignment(0, {"orders": [0, 1, 2, 3]})},
        out.append,
    )
    assert out[0].error is E.NONE
    return joined


def partitions(sync: SyncResult) -> set[int]:
    return {p for _t, p in parse_assignment(sync.assignment)}


def test_a_classic_member_joins_a_consumer_group_and_shares_the_partitions() -> None:
    b = Bench()
    first = b.beat("m1", 0)
    assert first.member_epoch == 2  # a new group is at epoch 1
    b.beat("m1", 2, owned=first.assignment)
    joined = b.join_new()
    assert joined.error is E.NONE
    assert (joined.protocol_type, joined.protocol, joined.leader, joined.members) == (
        "consumer",
        "range",
        "",
        (),
    )
    # the KIP-848 member must revoke two partitions first: the classic one waits for them
    sync = b.sync(joined.member_id, joined.generation)
    assert sync.error is E.NONE and partitions(sync) == set()
    # nothing to collect yet: its partitions are still held
    assert b.coord.heartbeat(G, joined.generation, joined.member_id, None) is E.NONE
    revoke = b.beat("m1", 2, owned=first.assignment)
    assert revoke.assignment is not None
    kept = revoke.assignment
    released = b.beat("m1", 2, owned=kept)
    assert released.member_epoch == 3
    # now they are free: the classic member is asked to rejoin
    assert b.coord.heartbeat(G, joined.generation, joined.member_id, None) is (
        E.REBALANCE_IN_PROGRESS
    )
    # the classic member rejoins (REBALANCE_IN_PROGRESS) and collects its partitions
    again = b.join(joined.member_id)
    assert again.error is E.NONE and again.generation == 3
    sync = b.sync(joined.member_id, again.generation)
    assert len(partitions(sync)) == 2
    assert partitions(sync).isdisjoint(p for ps in kept.values() for p in ps)
    assert b.coord.heartbeat(G, again.generation, joined.member_id, None) is E.NONE
    assert b.coord.heartbeat(G, 1, joined.member_id, None) is E.ILLEGAL_GENERATION
    # commits of a classic member are fenced by its generation (its member epoch)
    tp = {_tp(): (5, -1, "")}
    assert b.coord.commit_offsets(Committer(G, again.generation, joined.member_id, None), tp) == {
        _tp(): E.NONE
    }
    assert b.coord.commit_offsets(Committer(G, 1, joined.member_id, None), tp) == {
        _tp(): E.ILLEGAL_GENERATION
    }


def _tp():  # type: ignore[no-untyped-def]
    from txn.ids import TopicPartition  # noqa: PLC0415

    return TopicPartition("orders", 0)


def test_protocols_must_match_the_classic_members() -> None:
    b = Bench()
    b.beat("m1", 0)
    assert b.join_new().error is E.NONE
    out: list[JoinResult] = []
    b.coord.join(
        JoinRequest(
            G, "x", None, "consumer", [("sticky", b"\x00\x00")], 30000, 20000, "c", "/h", True
        ),
        out.append,
    )
    assert out[0].error is E.INCONSISTENT_GROUP_PROTOCOL


def test_classic_leave_and_replay_keep_the_group_consistent() -> None:
    b = Bench()
    first = b.beat("m1", 0)
    b.beat("m1", 1, owned=first.assignment)
    joined = b.join_new()
    # the classic member's metadata survives a restart (tagged field of MemberMetadata)
    b.coord.close()
    b.coord = b.new()
    (description,) = b.coord.describe_consumer_protocol([G])
    group = description[2]
    assert group is not None
    member = group.members[joined.member_id]
    assert member.classic is not None and member.classic.session_timeout_ms == 30000
    assert [name for name, _m in member.classic.protocols] == ["range", "roundrobin"]
    _error, results = b.coord.leave(G, [(joined.member_id, None)])
    assert results == [(joined.member_id, None, E.NONE)]
    (listing,) = b.coord.list_groups(types=["consumer"])
    assert listing.group_id == G


def test_upgrade_a_classic_group_when_a_consumer_member_joins() -> None:
    b = Bench()
    joined = classic_leader_with_everything(b)
    new = b.beat("m2", 0)
    assert new.error is E.NONE  # upgraded online
    (listing,) = b.coord.list_groups(types=["consumer"])
    assert listing.group_id == G
    # the classic member keeps its partitions until it revokes: it must rejoin
    assert b.coord.heartbeat(G, joined.generation, joined.member_id, None) is (
        E.REBALANCE_IN_PROGRESS
    )
    rejoin = b.join(joined.member_id, owned={"orders": [0, 1, 2, 3]})
    assert rejoin.error is E.NONE
    kept = partitions(b.sync(joined.member_id, rejoin.generation))
    assert len(kept) == 2
    # the classic member revokes (cooperative: rejoins owning what it kept)
    final = b.join(joined.member_id, owned={"orders": sorted(kept)})
    assert final.error is E.NONE
    got = b.beat("m2", new.member_epoch, owned={})
    assert got.assignment is not None
    assert {p for ps in got.assignment.values() for p in ps} == {0, 1, 2, 3} - kept


def test_downgrade_when_the_last_consumer_member_leaves() -> None:
    b = Bench()
    first = b.beat("m1", 0)
    b.beat("m1", 1, owned=first.assignment)
    joined = b.join_new()
    assert b.beat("m1", -1).error is E.NONE  # leaves: only a classic member remains
    (listing,) = b.coord.list_groups()
    assert (listing.group_id, listing.group_type, listing.state) == (
        G,
        "classic",
        "PreparingRebalance",
    )
    # its generation was its member epoch; the group epoch moved on with the leave (as Kafka)
    assert b.coord.heartbeat(G, joined.generation, joined.member_id, None) is (E.ILLEGAL_GENERATION)
    rejoined = b.join(joined.member_id)  # a classic rebalance with its only member
    assert rejoined.error is E.NONE and rejoined.leader == joined.member_id
    # replayed as a classic group
    b.coord.close()
    b.coord = b.new()
    (listing,) = b.coord.list_groups()
    assert listing.group_type == "classic"


def test_disabled_policy_refuses_the_upgrade_and_keeps_mixed_groups() -> None:
    b = Bench(policy="disabled")
    classic_leader_with_everything(b)
    assert b.beat("m2", 0).error is E.GROUP_ID_NOT_FOUND
    # a KIP-848 group still takes classic members, and does not downgrade
    b2 = Bench(policy="disabled")
    first = b2.beat("m1", 0)
    b2.beat("m1", 1, owned=first.assignment)
    assert b2.join_new().error is E.NONE
    b2.beat("m1", -1)
    (listing,) = b2.coord.list_groups()
    assert listing.group_type == "consumer"


def test_embedded_protocol_round_trips() -> None:
    sub = parse_subscription(subscription(("a", "b"), {"a": [1, 2]}))
    assert (sub.version, sub.topics, sub.owned) == (1, ("a", "b"), (("a", 1), ("a", 2)))
    assert parse_assignment(encode_assignment(3, {"b": [2, 0]})) == (("b", 0), ("b", 2))


def test_a_classic_join_deletes_an_empty_consumer_group_in_the_log_too() -> None:
    b = Bench()
    assert b.beat("m1", 0).error is E.NONE
    assert b.beat("m1", -1).error is E.NONE  # the KIP-848 group is empty now
    assert b.join().error is E.MEMBER_ID_REQUIRED  # the id is a classic group's from now on
    assert [g.group_type for g in b.coord.list_groups()] == ["classic"]
    b.coord = b.new()  # a restart: the consumer group stays deleted
    assert b.coord.list_groups() == []


def test_a_classic_members_rejoin_is_in_the_log() -> None:
    """What a classic member's rejoin changes (its epoch, its assignment, its session
    timeout) is written, so a restart finds the member as it was live."""
    b = Bench()
    first = b.beat("m1", 0)
    b.beat("m1", 2, owned=first.assignment)
    joined = b.join_new()
    revoke = b.beat("m1", 2, owned=first.assignment)
    assert revoke.assignment is not None
    b.beat("m1", 2, owned=revoke.assignment)
    again = b.join(joined.member_id)
    assert again.error is E.NONE and again.generation == 3
    (live,) = b.coord.describe_consumer_protocol([G])
    assert live[2] is not None
    member = live[2].members[joined.member_id]
    epoch, assigned = member.epoch, dict(member.assigned)
    assert epoch == 3 and assigned
    b.coord.close()
    b.coord = b.new()
    (reloaded,) = b.coord.describe_consumer_protocol([G])
    assert reloaded[2] is not None
    member = reloaded[2].members[joined.member_id]
    assert (member.epoch, member.assigned) == (epoch, assigned)
