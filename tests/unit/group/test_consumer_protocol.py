"""KIP-848 consumer groups on a manual clock: assignors, revocation first, fencing, timeouts."""

from __future__ import annotations

import uuid

import pytest

from coordinator.assembly import consumer_group_coordinator
from coordinator.group.consumer_model import ConsumerMember, Partitions
from coordinator.group.consumer_protocol import ConsumerHeartbeatResult, assign
from coordinator.group.offset_commands import Committer
from tests.unit.group.orders_bench import OrdersBench
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicPartition

E = ErrorCode
G = "cg"


class Bench(OrdersBench):
    def beat(
        self,
        member: str,
        epoch: int,
        owned: Partitions | None = None,
        topics: list[str] | None = None,
        assignor: str | None = None,
    ) -> ConsumerHeartbeatResult:
        return self.coord.consumer_heartbeat(
            G,
            member,
            epoch,
            rebalance_timeout_ms=30000,
            subscribed_topic_names=topics
            if topics is not None
            else (["orders"] if epoch == 0 else None),
            server_assignor=assignor,
            owned=owned,
            client_id="c",
            client_host="/h",
        )


def parts(result: ConsumerHeartbeatResult) -> frozenset[int]:
    assert result.assignment is not None
    return frozenset(p for ps in result.assignment.values() for p in ps)


def test_first_member_takes_every_partition() -> None:
    b = Bench()
    r = b.beat("m1", 0)
    # Kafka 4.4 starts a group at epoch 1: the first join makes epoch 2.
    assert r.error is E.NONE and r.member_epoch == 2 and parts(r) == {0, 1, 2, 3}
    assert r.heartbeat_interval_ms == 5000
    again = b.beat("m1", 2, owned=r.assignment)
    assert again.assignment is None  # unchanged: not sent
    (listing,) = b.coord.list_groups(types=["consumer"])
    assert (listing.group_id, listing.state) == (G, "Stable")


def test_a_joining_member_waits_for_the_revocation() -> None:
    b = Bench()
    r1 = b.beat("m1", 0)
    r2 = b.beat("m2", 0)
    assert r2.member_epoch == 3 and parts(r2) == frozenset()  # its partitions are still m1's
    revoke = b.beat("m1", 2, owned=r1.assignment)
    assert revoke.member_epoch == 2 and len(parts(revoke)) == 2  # keep two, give two up
    assert b.beat("m2", 3).assignment is None  # m1 has not released yet
    done = b.beat("m1", 2, owned=revoke.assignment)
    assert done.member_epoch == 3 and done.assignment is None
    given = b.beat("m2", 3)
    assert parts(given) == {0, 1, 2, 3} - parts(revoke)
    (desc,) = b.coord.describe_consumer_protocol([G])
    assert desc[2] is not None and desc[2].state == "Stable"


def test_fencing_and_unknown_members() -> None:
    b = Bench()
    b.beat("m1", 0)
    assert b.beat("m1", 7).error is E.FENCED_MEMBER_EPOCH
    assert b.beat("ghost", 3).error is E.UNKNOWN_MEMBER_ID
    assert b.beat("m1", 0, assignor="sticky").error is E.UNSUPPORTED_ASSIGNOR
    assert b.coord.consumer_heartbeat(G, "m9", 0).error is E.INVALID_REQUEST  # no subscription


def test_session_timeout_and_leave_rebalance() -> None:
    b = Bench()
    r1 = b.beat("m1", 0)
    b.beat("m1", 1, owned=r1.assignment)
    r2 = b.beat("m2", 0)
    revoke = b.beat("m1", 1, owned=r1.assignment)
    b.beat("m1", 1, owned=revoke.assignment)
    latest = r2.assignment
    for _ in range(10):  # m2 heartbeats; m1 goes silent and its session (45 s) ends
        b.clock.advance(5000)
        r2 = b.beat("m2", r2.member_epoch, owned=latest)
        latest = r2.assignment if r2.assignment is not None else latest
        assert r2.error is E.NONE
    assert latest is not None and {p for ps in latest.values() for p in ps} == {0, 1, 2, 3}
    (desc,) = b.coord.describe_consumer_protocol([G])
    assert desc[2] is not None and list(desc[2].members) == ["m2"]
    left = b.beat("m2", -1)
    assert left.member_epoch == -1
    assert b.coord.list_groups(types=["consumer"])[0].state == "Empty"
    assert b.coord.delete_groups([G]) == {G: E.NONE}


def test_offset_commits_are_fenced_by_member_epoch() -> None:
    b = Bench()
    r = b.beat("m1", 0)
    tp = TopicPartition("orders", 0)
    assert b.coord.commit_offsets(Committer(G, r.member_epoch, "m1", None), {tp: (5, -1, "")}) == {
        tp: E.NONE
    }
    assert b.coord.commit_offsets(Committer(G, 0, "m1", None), {tp: (6, -1, "")}) == {
        tp: E.STALE_MEMBER_EPOCH
    }
    assert b.coord.commit_offsets(Committer(G, 9, "m1", None), {tp: (6, -1, "")}) == {
        tp: E.STALE_MEMBER_EPOCH  # a later epoch too, as Kafka 4.4
    }
    assert b.coord.commit_offsets(Committer(G, 1, "zz", None), {tp: (6, -1, "")}) == {
        tp: E.UNKNOWN_MEMBER_ID
    }
    error, results = b.coord.delete_offsets(G, [tp])
    assert (error, results) == (E.NONE, {tp: E.GROUP_SUBSCRIBED_TO_TOPIC})


def test_classic_and_consumer_protocols_share_the_group_id() -> None:
    b = Bench()
    b.coord.commit_offsets(Committer(G, -1, "", None), {TopicPartition("orders", 0): (1, -1, "")})
    r = b.beat("m1", 0)  # an empty classic group becomes a consumer group, offsets kept
    assert r.error is E.NONE
    assert b.coord.fetch_offsets(G, None, False)[1][TopicPartition("orders", 0)].offset == 1
    assert b.coord.has_group(G)


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_assignors_cover_every_partition_once(assignor: str) -> None:
    members = {
        f"m{i}": ConsumerMember(f"m{i}", None, None, "c", "h", frozenset({"a", "b"}), None, 1)
        for i in range(3)
    }
    a, b2 = uuid.uuid4(), uuid.uuid4()
    target = assign(assignor, members, {"a": (a, 5), "b": (b2, 2)}, {})
    seen = [(t, p) for m in target.values() for t, ps in m.items() for p in ps]
    assert sorted(seen) == sorted([(a, p) for p in range(5)] + [(b2, p) for p in range(2)])
    loads = sorted(sum(len(ps) for ps in m.values()) for m in target.values())
    assert loads[-1] - loads[0] <= (1 if assignor == "uniform" else 2)
    if assignor == "uniform":  # sticky: a recomputation keeps what each member has
        assert assign(assignor, members, {"a": (a, 5), "b": (b2, 2)}, target) == target


def test_kip848_groups_survive_a_restart() -> None:
    b = Bench()
    r1 = b.beat("m1", 0)
    b.beat("m2", 0)
    revoke = b.beat("m1", 2, owned=r1.assignment)
    b.beat("m1", 2, owned=revoke.assignment)
    given = b.beat("m2", 3)
    log = b.log
    b.coord.close()
    again = consumer_group_coordinator(
        b.clock, BrokerConfig(b.broker_config()), log, topics=b.topics
    )
    again.load()
    (desc,) = again.describe_consumer_protocol([G])
    group = desc[2]
    assert group is not None and group.epoch == 3 and group.assignment_epoch == 3
    assert {m: v.epoch for m, v in group.members.items()} == {"m1": 3, "m2": 3}
    owned_m2 = given.assignment
    assert owned_m2 is not None
    assert group.members["m2"].assigned == owned_m2
    # the members carry on at their epochs: no rejoin, no rebalance
    assert again.consumer_heartbeat(G, "m2", 3, owned=owned_m2).error is E.NONE
    assert again.consumer_heartbeat(G, "m1", 3).member_epoch == 3
    assert again.consumer_heartbeat(G, "m1", -1).member_epoch == -1
    restarted = consumer_group_coordinator(
        b.clock, BrokerConfig(b.broker_config()), log, topics=b.topics
    )
    restarted.load()
    (desc,) = restarted.describe_consumer_protocol([G])
    assert desc[2] is not None and list(desc[2].members) == ["m2"]


def test_a_failed_write_leaves_the_group_as_it_was() -> None:
    b = Bench()
    r1 = b.beat("m1", 0)
    real_append = b.log.append

    def failing(batch: bytes, now_ms: int) -> object:
        raise OSError("disk full")

    b.log.append = failing  # type: ignore[method-assign]
    assert b.beat("m2", 0).error is E.NOT_COORDINATOR  # a storage error, as Kafka maps it
    b.log.append = real_append  # type: ignore[method-assign]
    (desc,) = b.coord.describe_consumer_protocol([G])
    assert desc[2] is not None and list(desc[2].members) == ["m1"] and desc[2].epoch == 2
    assert b.beat("m1", 2, owned=r1.assignment).error is E.NONE


def test_consumer_records_round_trip() -> None:
    from coordinator.group.consumer_records import (  # noqa: PLC0415
        ConsumerKey,
        CurrentAssignmentValue,
        MemberMetadataValue,
        TargetMemberValue,
        decode_consumer_key,
        decode_consumer_value,
        encode_consumer_key,
        encode_consumer_value,
    )

    t = uuid.uuid4()
    for key, value in [
        (
            ConsumerKey(5, "g", "m"),
            MemberMetadataValue("i", None, "c", "/h", ("a", "b"), None, 300, "range"),
        ),
        (ConsumerKey(7, "g", "m"), TargetMemberValue({t: frozenset({0, 3})})),
        (
            ConsumerKey(8, "g", "m"),
            CurrentAssignmentValue(4, 3, 1, {t: frozenset({1})}, {t: frozenset({2})}),
        ),
    ]:
        raw_key = encode_consumer_key(key)
        assert decode_consumer_key(raw_key) == key
        assert decode_consumer_value(key, encode_consumer_value(value)) == value
    assert encode_consumer_key(ConsumerKey(3, "g")) == b"\x00\x03\x00\x01g"


def test_the_group_epoch_moves_with_the_subscribed_topics_metadata() -> None:
    """As Kafka 4.4: a group starts at epoch 1; a join, a subscription change and each change
    of the subscribed topics' metadata (a topic created, grown or deleted), seen at the next
    heartbeat, bump it once; a heartbeat that changes nothing does not."""
    b = Bench()
    r = b.beat("m1", 0)
    assert (r.member_epoch, len(parts(r))) == (2, 4)
    assert b.beat("m1", 2, owned=r.assignment).member_epoch == 2  # nothing changed
    b.topics.add_partitions("orders", 6, b.clock.now_ms())
    grown = b.beat("m1", 2, owned=r.assignment)
    assert (grown.member_epoch, len(parts(grown))) == (3, 6)
    assert b.beat("m1", 3, owned=grown.assignment).member_epoch == 3
    wider = b.beat("m1", 3, owned=grown.assignment, topics=["orders", "later"])
    assert wider.member_epoch == 4  # the subscription changed; "later" does not exist yet
    b.topics.create("later", 1, b.clock.now_ms())
    created = b.beat("m1", 4, owned=grown.assignment)
    assert created.member_epoch == 5
    assert sum(len(ps) for ps in (created.assignment or {}).values()) == 7
    later = b.topics.get("later")
    assert later is not None
    b.topics.delete("later", b.clock.now_ms())
    owned_orders = {t: ps for t, ps in (created.assignment or {}).items() if t != later.topic_id}
    deleted = b.beat("m1", 5, owned=owned_orders)  # the bump; "later"-0 is revoked first
    assert b.beat("m1", deleted.member_epoch, owned=owned_orders).member_epoch == 6
    (desc,) = b.coord.describe_consumer_protocol([G])
    assert desc[2] is not None and (desc[2].epoch, desc[2].assignment_epoch) == (6, 6)
