"""Membership as Kafka 4.4 has it: static members in both protocols, commits at an earlier
member epoch (KIP-1251 assignment epochs), on a manual clock."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from coordinator.group.consumer_model import Partitions
from coordinator.group.consumer_protocol import ConsumerHeartbeatResult
from coordinator.group.consumer_records import (
    CURRENT_ASSIGNMENT,
    ConsumerKey,
    ConsumerValue,
    CurrentAssignmentValue,
    decode_consumer_key,
    decode_consumer_value,
    encode_consumer_value,
)
from coordinator.group.offset_commands import Committer
from coordinator.group.records import GroupRecordFormatError
from coordinator.group.results import JoinRequest, JoinResult, SyncResult
from coordinator.log.cleaner import CleanerPolicy, clean
from coordinator.log.memory_log import MemoryLog
from tests.unit.group.orders_bench import OrdersBench
from txn.errors import ErrorCode
from txn.ids import TopicPartition
from txn.txn_log import read_records

E = ErrorCode
G = "cg"
T = uuid.UUID(int=7)


def replayed(log: MemoryLog) -> list[tuple[ConsumerKey, ConsumerValue | None]]:
    """The KIP-848 records of ``log``, in order."""
    out: list[tuple[ConsumerKey, ConsumerValue | None]] = []
    for _header, batch in log.batches():
        for raw_key, raw_value in read_records(batch):
            try:
                key = decode_consumer_key(raw_key or b"")
            except GroupRecordFormatError:
                continue
            out.append((key, decode_consumer_value(key, raw_value)))
    return out


class Bench(OrdersBench):
    def beat(
        self,
        member: str,
        epoch: int,
        owned: Partitions | None = None,
        instance: str | None = None,
    ) -> ConsumerHeartbeatResult:
        return self.coord.consumer_heartbeat(
            G,
            member,
            epoch,
            instance_id=instance,
            rebalance_timeout_ms=30000,
            subscribed_topic_names=["orders"] if epoch == 0 else None,
            owned=owned,
            client_id="c",
            client_host="/h",
        )

    def commit(self, member: str, epoch: int, partition: int, txn: bool = False) -> ErrorCode:
        tp = TopicPartition("orders", partition)
        committer = Committer(G, epoch, member, None)
        if txn:
            return self.coord.txn_commit_offsets(7, 0, committer, {tp: (1, -1, "")})[tp]
        return self.coord.commit_offsets(committer, {tp: (1, -1, "")})[tp]

    def join(self, member: str, instance: str | None, version: int = 9) -> JoinResult:
        out: list[Any] = []
        self.coord.join(
            JoinRequest(
                G,
                member,
                instance,
                "consumer",
                [("range", b"meta")],
                10000,
                10000,
                "c",
                "/h",
                True,
                skip_assignment_supported=version >= 9,
            ),
            out.append,
        )
        (result,) = out
        assert isinstance(result, JoinResult)
        return result

    def sync(self, member: str, instance: str | None, generation: int) -> SyncResult:
        out: list[Any] = []
        self.coord.sync(
            G, generation, member, instance, "consumer", "range", {member: b"A"}, out.append
        )
        (result,) = out
        assert isinstance(result, SyncResult)
        return result


def owned(result: ConsumerHeartbeatResult) -> frozenset[int]:
    assert result.assignment is not None
    return frozenset(p for ps in result.assignment.values() for p in ps)


def rebalanced(b: Bench) -> tuple[int, frozenset[int], frozenset[int]]:
    """m1 owned all four partitions at its first epoch, then gave two up to m2: (that
    epoch, the partitions m1 kept, those it gave up)."""
    r1 = b.beat("m1", 0)
    first = r1.member_epoch
    b.beat("m2", 0)
    revoke = b.beat("m1", first, owned=r1.assignment)
    done = b.beat("m1", first, owned=revoke.assignment)
    assert done.member_epoch > first
    kept = owned(revoke)
    return first, kept, frozenset({0, 1, 2, 3}) - kept


def test_a_commit_at_the_previous_epoch_is_accepted_for_a_partition_still_owned() -> None:
    b = Bench()
    first, kept, gone = rebalanced(b)
    now = first + 1
    k, g = min(kept), min(gone)
    assert b.commit("m1", first, k) is E.NONE  # KIP-1251
    assert b.commit("m1", first, g) is E.STALE_MEMBER_EPOCH  # no longer m1's
    assert b.commit("m1", now, k) is E.NONE
    assert b.commit("m1", now + 1, k) is E.STALE_MEMBER_EPOCH  # a later epoch
    assert b.commit("m1", 0, k) is E.STALE_MEMBER_EPOCH  # before it was assigned
    assert b.commit("m2", 0, g) is E.STALE_MEMBER_EPOCH  # m2 got it at a later epoch


def test_transactional_commits_answer_illegal_generation_instead_of_stale() -> None:
    b = Bench()
    first, kept, gone = rebalanced(b)
    assert b.commit("m1", first, min(kept), txn=True) is E.NONE
    assert b.commit("m1", first, min(gone), txn=True) is E.ILLEGAL_GENERATION
    assert b.commit("m1", first + 5, min(kept), txn=True) is E.ILLEGAL_GENERATION


def test_assignment_epochs_survive_a_reload() -> None:
    b = Bench()
    first, kept, gone = rebalanced(b)
    b.coord = b.new()
    assert b.commit("m1", first, min(kept)) is E.NONE
    assert b.commit("m1", first, min(gone)) is E.STALE_MEMBER_EPOCH


def compacted(log: MemoryLog) -> MemoryLog:
    """A copy of ``log`` with only the latest record of each key, as the cleaner leaves it."""
    kept = clean(list(log.batches()), lambda _h: False, 0, CleanerPolicy())
    out = MemoryLog()
    for batch in kept:
        out.append(batch, 0)
    return out


def test_assignment_epochs_survive_compaction_and_a_reload() -> None:
    """Each current-assignment record carries its partitions' assignment epochs (Kafka
    4.4's tagged AssignmentEpochs): the member's earlier records are not needed."""
    b = Bench()
    first, kept, gone = rebalanced(b)
    members = [
        (key, value)
        for key, value in replayed(b.log)
        if isinstance(value, CurrentAssignmentValue) and key.member_id == "m1"
    ]
    assert len(members) > 1  # m1's record at its first epoch, then the later ones
    b.log = compacted(b.log)
    ((_, latest),) = [
        (key, value)
        for key, value in replayed(b.log)
        if isinstance(value, CurrentAssignmentValue) and key.member_id == "m1"
    ]
    assert latest.epoch > first and latest.epochs is not None
    assert {p for (_t, p), e in latest.epochs.items() if e == first} == kept
    b.coord = b.new()
    assert b.commit("m1", first, min(kept)) is E.NONE
    assert b.commit("m1", first, min(gone)) is E.STALE_MEMBER_EPOCH


def test_a_record_without_assignment_epochs_derives_them_on_replay() -> None:
    """A current-assignment record an older writer made (no AssignmentEpochs) gives its
    partitions the epochs the member's earlier records show."""
    value = CurrentAssignmentValue(3, 2, 0, {T: frozenset({0, 1})}, {})
    raw = encode_consumer_value(value)
    # partition 1, no tagged field for the topic, no revoking topic, no tagged field
    assert raw is not None and raw.endswith(b"\x00\x00\x00\x01" + b"\x00" + b"\x01" + b"\x00")
    with_epochs = replace(value, epochs={(T, 0): 2, (T, 1): 3})
    key = ConsumerKey(CURRENT_ASSIGNMENT, G, "m")
    assert decode_consumer_value(key, raw) == value
    assert decode_consumer_value(key, encode_consumer_value(with_epochs)) == with_epochs


def test_a_static_member_leaves_for_a_while_and_is_replaced_in_place() -> None:
    b = Bench()
    r = b.beat("a1", 0, instance="i")
    epoch = r.member_epoch
    left = b.beat("a1", -2, instance="i")
    assert (left.error, left.member_epoch) == (E.NONE, -2)
    (desc,) = b.coord.describe_consumer_protocol([G])
    assert desc[2] is not None and list(desc[2].members) == ["a1"]  # still a member
    again = b.beat("a2", 0, instance="i")
    assert again.error is E.NONE and again.member_epoch == epoch  # no rebalance
    assert owned(again) == {0, 1, 2, 3}
    assert b.beat("a1", epoch, instance="i").error is E.FENCED_INSTANCE_ID
    assert b.beat("a1", epoch).error is E.UNKNOWN_MEMBER_ID
    assert b.beat("a2", epoch, instance="i").error is E.NONE


def test_static_member_errors() -> None:
    b = Bench()
    r = b.beat("a1", 0, instance="i")
    assert b.beat("a2", 0, instance="i").error is E.UNRELEASED_INSTANCE_ID
    assert b.beat("a1", r.member_epoch, instance="other").error is E.UNKNOWN_MEMBER_ID
    assert b.beat("zz", r.member_epoch, instance="i").error is E.FENCED_INSTANCE_ID
    assert b.beat("a1", -2).error is E.INVALID_REQUEST  # a temporary leave needs the instance
    assert b.beat("a1", r.member_epoch, instance="i").error is E.NONE


def test_a_static_member_away_keeps_its_partitions_until_its_session_ends() -> None:
    b = Bench()
    b.beat("a1", 0, instance="i")
    b.beat("a1", -2, instance="i")
    d = b.beat("d1", 0)
    assert d.assignment is not None and owned(d) == frozenset()  # still a1's
    for _ in range(10):  # a1's session (45 s) ends; d1 heartbeats on
        b.clock.advance(5000)
        d = b.beat("d1", d.member_epoch, owned=d.assignment)
    (desc,) = b.coord.describe_consumer_protocol([G])
    assert desc[2] is not None and list(desc[2].members) == ["d1"]


def test_classic_static_member_rejoins_a_stable_group_without_a_rebalance() -> None:
    b = Bench()
    first = b.join("", "i")
    assert first.error is E.NONE
    assert b.sync(first.member_id, "i", first.generation).error is E.NONE
    again = b.join("", "i")
    assert again.error is E.NONE and again.member_id != first.member_id
    assert again.generation == first.generation and again.skip_assignment
    assert b.sync(again.member_id, "i", again.generation) == SyncResult(
        E.NONE, b"A", "consumer", "range"
    )
    old = first.member_id
    assert b.coord.heartbeat(G, first.generation, old, "i") is E.FENCED_INSTANCE_ID
    assert b.sync(old, "i", first.generation).error is E.FENCED_INSTANCE_ID


def test_classic_static_leader_before_join_group_v9_rebalances() -> None:
    b = Bench()
    first = b.join("", "i")
    b.sync(first.member_id, "i", first.generation)
    out: list[Any] = []
    b.coord.join(
        JoinRequest(G, "", "i", "consumer", [("range", b"meta")], 10000, 10000, "c", "/h", True),
        out.append,
    )
    (again,) = out
    assert again.generation == first.generation + 1 and not again.skip_assignment


def test_classic_instance_id_checks() -> None:
    b = Bench()
    first = b.join("", "i")
    member, gen = first.member_id, first.generation
    b.sync(member, "i", gen)
    assert b.coord.heartbeat(G, gen, member, "other") is E.UNKNOWN_MEMBER_ID
    assert b.coord.heartbeat(G, gen, "zz", "i") is E.FENCED_INSTANCE_ID
    assert b.coord.heartbeat(G, gen, member, None) is E.NONE  # the member id alone will do
    assert b.join(member, "other").error is E.UNKNOWN_MEMBER_ID
