"""Share groups (KIP-932): delivery, acknowledgement, locks, sessions, membership, admin."""

from __future__ import annotations

import time
from typing import Any

from tests.reference.differential.ctx import Ctx
from tests.reference.differential.framework import scenario
from tests.reference.differential.share import (
    ACCEPT,
    REJECT,
    RELEASE,
    RENEW,
    ShareMember,
    describe_group,
    describe_offsets,
    share_group,
    unjoined_member,
)
from tests.reference.differential.wire import plain

AREA = "share"


def _setup(
    ctx: Ctx, n: int = 5, reset: str | None = "earliest", partitions: int = 1
) -> tuple[str, str, ShareMember]:
    t = ctx.create_topic("s", partitions)
    if n:
        ctx.produce(t, [f"v{i}" for i in range(n)])
    g = share_group(ctx, reset=reset)
    m = ShareMember(ctx, g, [t])
    m.join(partitions)
    return t, g, m


def _joined(
    ctx: Ctx, t: str, configs: dict[str, str | None] | None = None
) -> tuple[str, ShareMember]:
    """A new share group (set to ``configs`` if given) and its member reading ``t``, joined."""
    g = share_group(ctx)
    if configs is not None:
        ctx.group_config(g, configs)
    m = ShareMember(ctx, g, [t])
    m.join()
    return g, m


def _two_acquired(ctx: Ctx, lock_ms: str | None = None) -> tuple[str, str, ShareMember, Any]:
    """Records "a" and "b", acquired by a member (under ``lock_ms`` record locks if given)."""
    t = ctx.create_topic("s")
    ctx.produce(t, ["a", "b"])
    locks = None if lock_ms is None else {"share.record.lock.duration.ms": lock_ms}
    g, m = _joined(ctx, t, locks)
    return t, g, m, m.fetch_until(2)


def _fetched(ctx: Ctx) -> tuple[str, str, ShareMember]:
    """``_setup``'s five records, all acquired by its member."""
    t, g, m = _setup(ctx)
    m.fetch_until(5)
    return t, g, m


def _acknowledged(ctx: Ctx, **acks: list[tuple[int, int, list[int]]]) -> dict[str, Any]:
    """The five records fetched, then each named acknowledgement of partition 0 in turn."""
    t, _, m = _fetched(ctx)
    return {name: m.acknowledge({(t, 0): batches}) for name, batches in acks.items()}


def _acks(t: str, first: int, last: int, kind: int) -> dict[tuple[str, int], Any]:
    return {(t, 0): [(first, last, [kind])]}


@scenario(AREA)
def fetch_acquires_and_delivers(ctx: Ctx) -> Any:
    _t, _, m = _setup(ctx)
    got = m.fetch_until(5)
    return {"acquired": got, "again": m.fetch(max_wait_ms=100)}


def _accepted_offsets(ctx: Ctx, last: int) -> Any:
    """Five records fetched, offsets 0..``last`` accepted: the answer and the start offset."""
    t, g, m = _fetched(ctx)
    ack = m.acknowledge(_acks(t, 0, last, ACCEPT))
    return {"ack": ack, "offsets": describe_offsets(ctx, g)}


@scenario(AREA)
def accept_moves_start_offset(ctx: Ctx) -> Any:
    return _accepted_offsets(ctx, 4)


@scenario(AREA)
def accept_part_moves_start_offset(ctx: Ctx) -> Any:
    return _accepted_offsets(ctx, 1)


@scenario(AREA)
def release_redelivers_with_count(ctx: Ctx) -> Any:
    t, _, m = _fetched(ctx)
    ack = m.acknowledge(_acks(t, 0, 4, RELEASE))
    return {"ack": ack, "redelivered": m.fetch_until(5)}


@scenario(AREA)
def release_some_redelivers_those(ctx: Ctx) -> Any:
    t, _, m = _fetched(ctx)
    ack = m.acknowledge({(t, 0): [(1, 2, [RELEASE]), (3, 4, [ACCEPT])]})
    return {"ack": ack, "redelivered": m.fetch_until(2)}


@scenario(AREA)
def reject_archives(ctx: Ctx) -> Any:
    t, g, m = _fetched(ctx)
    ack = m.acknowledge(_acks(t, 0, 4, REJECT))
    return {"ack": ack, "after": m.fetch(max_wait_ms=200), "offsets": describe_offsets(ctx, g)}


@scenario(AREA)
def per_offset_ack_types(ctx: Ctx) -> Any:
    t, g, m = _fetched(ctx)
    ack = m.acknowledge({(t, 0): [(0, 4, [ACCEPT, RELEASE, REJECT, ACCEPT, RELEASE])]})
    return {"ack": ack, "redelivered": m.fetch_until(2), "offsets": describe_offsets(ctx, g)}


@scenario(AREA)
def gap_ack_type_zero(ctx: Ctx) -> Any:
    return _acknowledged(ctx, ack=[(0, 4, [ACCEPT, 0, ACCEPT, ACCEPT, ACCEPT])])


@scenario(AREA)
def piggybacked_ack_in_fetch(ctx: Ctx) -> Any:
    t, g, m = _fetched(ctx)
    ctx.produce(t, ["w0", "w1"])
    out = m.fetch(_acks(t, 0, 4, ACCEPT))
    return {"fetch_with_ack": out, "offsets": describe_offsets(ctx, g)}


@scenario(AREA)
def delivery_count_limit_archives(ctx: Ctx) -> Any:
    t, g, m = _setup(ctx, 2)
    ctx.group_config(g, {"share.delivery.count.limit": "2"})
    first = m.fetch_until(2)
    m.acknowledge(_acks(t, 0, 1, RELEASE))
    second = m.fetch_until(2)
    ack = m.acknowledge(_acks(t, 0, 1, RELEASE))
    return {
        "first": first,
        "second": second,
        "ack": ack,
        "third": m.fetch(max_wait_ms=200),
        "offsets": describe_offsets(ctx, g),
    }


@scenario(AREA)
def lock_timeout_redelivers(ctx: Ctx) -> Any:
    t, _, m, first = _two_acquired(ctx, "1000")
    again = m.fetch_until(2, timeout_s=10, max_wait_ms=300)
    late = m.acknowledge(_acks(t, 0, 1, ACCEPT))
    return {"first": first, "after_lock_expiry": again, "ack": late}


@scenario(AREA)
def ack_after_lock_expired(ctx: Ctx) -> Any:
    t, g, m, _ = _two_acquired(ctx, "1000")
    other = ShareMember(ctx, g, [t])
    other.join(0)
    taken = other.fetch_until(2, timeout_s=10, max_wait_ms=300)  # once m's locks expired
    return {"other_took": taken, "late_ack": m.acknowledge(_acks(t, 0, 1, ACCEPT))}


@scenario(AREA)
def renew_keeps_lock(ctx: Ctx) -> Any:
    t, _, m, _ = _two_acquired(ctx)
    renew = m.acknowledge(_acks(t, 0, 1, RENEW), renew=True)
    return {"renew": renew, "accept": m.acknowledge(_acks(t, 0, 1, ACCEPT))}


@scenario(AREA)
def renew_refused_when_disabled(ctx: Ctx) -> Any:
    """``share.renew.acknowledge.enable=false``: a RENEW is INVALID_RECORD_STATE (the records
    stay acquired); an ACCEPT still works."""
    t = ctx.create_topic("s")
    ctx.produce(t, ["a", "b"])
    _, m = _joined(ctx, t, {"share.renew.acknowledge.enable": "false"})
    got = m.fetch_until(2)
    renew = m.acknowledge(_acks(t, 0, 1, RENEW), renew=True)
    return {"got": got, "renew": renew, "accept": m.acknowledge(_acks(t, 0, 1, ACCEPT))}


@scenario(AREA)
def ack_unacquired_offsets(ctx: Ctx) -> Any:
    return _acknowledged(ctx, beyond=[(10, 12, [ACCEPT])], valid_after=[(0, 4, [ACCEPT])])


@scenario(AREA)
def double_accept(ctx: Ctx) -> Any:
    return _acknowledged(ctx, first=[(0, 4, [ACCEPT])], second=[(0, 4, [ACCEPT])])


@scenario(AREA)
def ack_by_other_member(ctx: Ctx) -> Any:
    t, g, m = _fetched(ctx)
    other = ShareMember(ctx, g, [t])
    other.join(0)
    other.fetch(max_wait_ms=100)
    return {
        "other_ack": other.acknowledge(_acks(t, 0, 4, ACCEPT)),
        "owner_ack": m.acknowledge(_acks(t, 0, 4, ACCEPT)),
    }


@scenario(AREA)
def invalid_ack_type(ctx: Ctx) -> Any:
    return _acknowledged(ctx, type5=[(0, 4, [5])])


@scenario(AREA)
def overlapping_ack_batches(ctx: Ctx) -> Any:
    return _acknowledged(ctx, overlap=[(0, 3, [ACCEPT]), (2, 4, [ACCEPT])])


@scenario(AREA)
def ack_types_count_mismatch(ctx: Ctx) -> Any:
    return _acknowledged(ctx, mismatch=[(0, 4, [ACCEPT, ACCEPT])])


@scenario(AREA)
def ack_last_before_first(ctx: Ctx) -> Any:
    return _acknowledged(ctx, reversed=[(4, 0, [ACCEPT])])


@scenario(AREA)
def session_epoch_wrong(ctx: Ctx) -> Any:
    t, _, m = _fetched(ctx)
    return {
        "fetch_epoch_7": m.fetch(session_epoch=7, max_wait_ms=100)["error_code"],
        "ack_epoch_7": m.acknowledge(_acks(t, 0, 4, ACCEPT), session_epoch=7)["error_code"],
        "ack_right_epoch": m.acknowledge(_acks(t, 0, 4, ACCEPT))["error_code"],
    }


@scenario(AREA)
def session_not_found(ctx: Ctx) -> Any:
    t, _, m = _setup(ctx)
    return {
        "fetch_epoch_1_first": m.fetch(session_epoch=1, max_wait_ms=100)["error_code"],
        "ack_epoch_0": m.acknowledge(_acks(t, 0, 0, ACCEPT), session_epoch=0)["error_code"],
    }


@scenario(AREA)
def fetch_by_unknown_member(ctx: Ctx) -> Any:
    _, m = unjoined_member(ctx, "s")
    return {"fetch": m.fetch(max_wait_ms=100)["error_code"]}


@scenario(AREA)
def close_session_releases(ctx: Ctx) -> Any:
    _t, _g, m = _fetched(ctx)
    closed = m.close_session()
    m.session_epoch = 0
    return {"close": closed, "refetch": m.fetch_until(5)}


@scenario(AREA)
def close_session_with_acks(ctx: Ctx) -> Any:
    t, g, m = _fetched(ctx)
    closed = m.acknowledge(_acks(t, 0, 2, ACCEPT), session_epoch=-1)
    m.session_epoch = 0
    return {"close": closed, "refetch": m.fetch_until(2), "offsets": describe_offsets(ctx, g)}


@scenario(AREA)
def new_session_keeps_acquired(ctx: Ctx) -> Any:
    t, _, m = _fetched(ctx)
    m.session_epoch = 0
    ctx.produce(t, ["w"])
    return {"new_session": m.fetch_until(1), "ack_old": m.acknowledge(_acks(t, 0, 4, ACCEPT))}


@scenario(AREA)
def leave_releases_to_other_member(ctx: Ctx) -> Any:
    t, g, m = _fetched(ctx)
    other = ShareMember(ctx, g, [t])
    other.join(0)
    left = m.leave()
    other.join(1)
    return {"leave": left, "other_gets": other.fetch_until(5)}


@scenario(AREA)
def rejoin_after_leave(ctx: Ctx) -> Any:
    _t, g, m = _setup(ctx)
    left = m.leave()
    m.epoch = 0
    back = m.join()
    return {
        "leave": left,
        "rejoined_assignment": back,
        "epoch": m.epoch,
        "group": describe_group(ctx, g),
    }


@scenario(AREA)
def fetch_after_leave(ctx: Ctx) -> Any:
    _t, _, m = _fetched(ctx)
    m.leave()
    return {"fetch": m.fetch(max_wait_ms=100)["error_code"]}


@scenario(AREA)
def heartbeat_errors(ctx: Ctx) -> Any:
    t, g, m = _setup(ctx, 0)
    stranger = ShareMember(ctx, g, [t])

    def err(resp: Any) -> Any:
        return plain(resp.error_code, "error_code")

    return {
        "unknown_member_epoch_3": err(stranger.heartbeat(epoch=3)),
        "fenced_epoch": err(m.heartbeat(epoch=m.epoch + 5)),
        "stale_epoch": err(m.heartbeat(epoch=0)) if False else "skipped",
        "no_topics_on_join": err(ShareMember(ctx, g, []).heartbeat(topics=[])),
        "ok": err(m.heartbeat()),
    }


@scenario(AREA)
def heartbeat_empty_member_id(ctx: Ctx) -> Any:
    t = ctx.create_topic("s")
    g = share_group(ctx)
    m = ShareMember(ctx, g, [t])
    m.member_id = ""
    return {"empty": plain(m.heartbeat().error_code, "error_code")}


@scenario(AREA)
def heartbeat_epoch_progression(ctx: Ctx) -> Any:
    t, g, m = _setup(ctx, 0)
    first_epoch = m.epoch
    other = ShareMember(ctx, g, [t])
    other.join(0)
    m.heartbeat()
    return {"first": first_epoch, "after_second_member": m.epoch, "other": other.epoch}


@scenario(AREA)
def subscribe_unknown_topic(ctx: Ctx) -> Any:
    g = share_group(ctx)
    t = ctx.name("later")  # never created
    m = ShareMember(ctx, g, [t])
    resp = m.heartbeat()
    return {
        "error_code": plain(resp.error_code, "error_code"),
        "epoch": int(resp.member_epoch),
        "assignment": [] if resp.assignment is None else len(resp.assignment.topic_partitions),
    }


@scenario(AREA)
def two_members_two_partitions(ctx: Ctx) -> Any:
    t, g, m = _setup(ctx, 0, partitions=2)
    other = ShareMember(ctx, g, [t])
    other.join(1)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        a, b = m.join(0), other.join(0)
        if sum(len(p) for _, p in a) + sum(len(p) for _, p in b) <= 2:
            break
        time.sleep(0.2)
    return {
        "sizes": sorted([sum(len(p) for _, p in a), sum(len(p) for _, p in b)]),
        "group": describe_group(ctx, g),
    }


@scenario(AREA)
def multi_partition_fetch(ctx: Ctx) -> Any:
    t = ctx.create_topic("s", 3)
    for p in range(3):
        ctx.produce(t, [f"p{p}-{i}" for i in range(2)], partition=p)
    g = share_group(ctx)
    m = ShareMember(ctx, g, [t])
    m.join(3)
    return {"acquired": sorted(m.fetch_until(6, partitions=(0, 1, 2)))}


@scenario(AREA)
def auto_offset_reset_latest_default(ctx: Ctx) -> Any:
    t, g, m = _setup(ctx, 3, reset=None)
    early = m.fetch(max_wait_ms=300)
    ctx.produce(t, ["late"])
    return {"before": early, "after": m.fetch_until(1), "offsets": describe_offsets(ctx, g)}


@scenario(AREA)
def auto_offset_reset_latest_explicit(ctx: Ctx) -> Any:
    t, _g, m = _setup(ctx, 3, reset="latest")
    early = m.fetch(max_wait_ms=300)
    ctx.produce(t, ["late"])
    return {"before": early, "after": m.fetch_until(1)}


@scenario(AREA)
def auto_offset_reset_earliest(ctx: Ctx) -> Any:
    _t, g, m = _setup(ctx, 3, reset="earliest")
    return {"got": m.fetch_until(3), "offsets": describe_offsets(ctx, g)}


@scenario(AREA)
def auto_offset_reset_by_duration_hour(ctx: Ctx) -> Any:
    _t, _g, m = _setup(ctx, 3, reset="by_duration:PT1H")
    return {"got": m.fetch_until(3)}


@scenario(AREA)
def auto_offset_reset_by_duration_zero(ctx: Ctx) -> Any:
    t = ctx.create_topic("s")
    ctx.produce(t, ["old"])
    time.sleep(0.05)
    g = share_group(ctx, reset="by_duration:PT0S")
    m = ShareMember(ctx, g, [t])
    m.join()
    early = m.fetch(max_wait_ms=300)
    ctx.produce(t, ["new"])
    return {"before": early, "after": m.fetch_until(1)}


@scenario(AREA)
def auto_offset_reset_invalid_values(ctx: Ctx) -> Any:
    g = ctx.name("g")
    return {
        v: ctx.group_config(g, {"share.auto.offset.reset": v})
        for v in (
            "bogus",
            "by_duration:",
            "by_duration:1H",
            "by_duration:-PT1H",
            "EARLIEST",
            "none",
        )
    }


@scenario(AREA)
def group_config_invalid_values(ctx: Ctx) -> Any:
    g = ctx.name("g")
    return {
        "isolation_bogus": ctx.group_config(g, {"share.isolation.level": "sometimes"}),
        "lock_too_small": ctx.group_config(g, {"share.record.lock.duration.ms": "10"}),
        "delivery_limit_1": ctx.group_config(g, {"share.delivery.count.limit": "1"}),
        "unknown_name": ctx.group_config(g, {"share.nope": "1"}),
        "session_ok": ctx.group_config(g, {"share.session.timeout.ms": "2000"}),
    }


READ_COMMITTED: dict[str, str | None] = {"share.isolation.level": "read_committed"}


def _txn_records(ctx: Ctx, t: str, commit: bool | None) -> None:
    tid = ctx.name("tx") + ("c" if commit else "a" if commit is False else "o")
    _, pid, epoch = ctx.init_pid(tid)
    ctx.add_partitions(tid, pid, epoch, t)
    ctx.produce(t, ["t0", "t1"], pid=pid, epoch=epoch, seq=0, txn_id=tid)
    if commit is not None:
        ctx.end_txn(tid, pid, epoch, commit)


def _plain_then_txns(ctx: Ctx, *commits: bool | None) -> str:
    """A new topic: one plain record, then a :func:`_txn_records` transaction per commit."""
    t = ctx.create_topic("s")
    ctx.produce(t, ["plain"])
    for commit in commits:
        _txn_records(ctx, t, commit)
    return t


@scenario(AREA)
def isolation_read_committed(ctx: Ctx) -> Any:
    t = _plain_then_txns(ctx, False, True)
    ctx.wait_lso(t, 7)
    _, m = _joined(ctx, t, READ_COMMITTED)
    return {"acquired": m.fetch_until(3)}


@scenario(AREA)
def isolation_read_committed_open_txn(ctx: Ctx) -> Any:
    t = _plain_then_txns(ctx, None)
    _, m = _joined(ctx, t, READ_COMMITTED)
    return {"acquired": m.fetch_until(1), "more": m.fetch(max_wait_ms=300)}


@scenario(AREA)
def isolation_read_uncommitted(ctx: Ctx) -> Any:
    t = _plain_then_txns(ctx, False, None)
    _, m = _joined(ctx, t)
    return {"acquired": m.fetch_until(5)}


@scenario(AREA)
def max_records_record_limit_mode(ctx: Ctx) -> Any:
    _t, _, m = _setup(ctx, 6)
    first = m.fetch_until(2, max_records=2, acquire_mode=1)
    return {"first": first, "next": m.fetch_until(2, max_records=2, acquire_mode=1)}


@scenario(AREA)
def max_records_batch_optimized(ctx: Ctx) -> Any:
    _t, _, m = _setup(ctx, 6)
    return {"first": m.fetch_until(2, max_records=2)}


@scenario(AREA)
def describe_share_group(ctx: Ctx) -> Any:
    _t, g, _m = _setup(ctx, 0)
    return {
        "stable": describe_group(ctx, g),
        "unknown": describe_group(ctx, ctx.name("none")),
        "consumer_group_id": describe_group(ctx, ctx.name("none2")),
    }


@scenario(AREA)
def describe_offsets_before_and_after(ctx: Ctx) -> Any:
    t = ctx.create_topic("s")
    ctx.produce(t, ["a", "b", "c"])
    g = share_group(ctx)
    before = describe_offsets(ctx, g)
    m = ShareMember(ctx, g, [t])
    m.join()
    m.fetch_until(3)
    during = describe_offsets(ctx, g, [t])
    m.acknowledge(_acks(t, 0, 2, ACCEPT))
    return {"before": before, "during": during, "after": describe_offsets(ctx, g, [t])}


def _alter(ctx: Ctx, g: str, t: str, offset: int) -> Any:
    resp = ctx.call(
        91,
        {
            "group_id": g,
            "topics": [
                {"topic_name": t, "partitions": [{"partition_index": 0, "start_offset": offset}]}
            ],
        },
    )
    return plain(resp)


@scenario(AREA)
def alter_offsets_empty_group(ctx: Ctx) -> Any:
    t, g, m = _setup(ctx, 5)
    m.fetch_until(5)
    m.acknowledge(_acks(t, 0, 4, ACCEPT))
    m.leave()
    altered = _alter(ctx, g, t, 2)
    offsets = describe_offsets(ctx, g)
    m2 = ShareMember(ctx, g, [t])
    m2.join()
    return {"alter": altered, "offsets": offsets, "redelivered": m2.fetch_until(3)}


@scenario(AREA)
def alter_offsets_active_group(ctx: Ctx) -> Any:
    t, g, _m = _setup(ctx, 2)
    return {"alter": _alter(ctx, g, t, 0)}


@scenario(AREA)
def alter_offsets_new_group(ctx: Ctx) -> Any:
    t = ctx.create_topic("s")
    ctx.produce(t, ["a", "b", "c"])
    g = share_group(ctx, reset=None)
    altered = _alter(ctx, g, t, 1)
    m = ShareMember(ctx, g, [t])
    m.join()
    return {"alter": altered, "got": m.fetch_until(2), "offsets": describe_offsets(ctx, g)}


@scenario(AREA)
def delete_offsets(ctx: Ctx) -> Any:
    t, g, m = _setup(ctx, 3)
    m.fetch_until(3)
    m.acknowledge(_acks(t, 0, 2, ACCEPT))
    active = plain(ctx.call(92, {"group_id": g, "topics": [{"topic_name": t}]}))
    m.leave()
    deleted = plain(ctx.call(92, {"group_id": g, "topics": [{"topic_name": t}]}))
    return {"active": active, "empty": deleted, "offsets": describe_offsets(ctx, g)}


@scenario(AREA)
def delete_group(ctx: Ctx) -> Any:
    _t, g, m = _setup(ctx, 1)

    def delete() -> Any:
        return plain(ctx.call(42, {"groups_names": [g]}).results[0].error_code, "error_code")

    active = delete()
    m.leave()
    return {
        "active": active,
        "empty": delete(),
        "again": delete(),
        "describe": describe_group(ctx, g),
    }


@scenario(AREA)
def list_groups_share_type(ctx: Ctx) -> Any:
    _t, g, _m = _setup(ctx, 0)
    resp = ctx.call(16, {"states_filter": [], "types_filter": ["share"]})
    mine = [plain(x) for x in resp.groups if x.group_id == g]
    resp2 = ctx.call(16, {"states_filter": ["Stable"], "types_filter": ["consumer"]})
    return {"share": mine, "as_consumer": [x.group_id for x in resp2.groups if x.group_id == g]}


@scenario(AREA)
def share_group_id_used_by_consumer_group(ctx: Ctx) -> Any:
    t = ctx.create_topic("s")
    g = ctx.name("cg")
    ctx.find_coordinator(g, 0)
    resp = ctx.call(
        8,
        {
            "group_id": g,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [{"name": t, "partitions": [{"partition_index": 0, "committed_offset": 1}]}],
        },
    )
    m = ShareMember(ctx, g, [t])
    return {
        "commit": plain(resp.topics[0].partitions[0].error_code, "error_code"),
        "share_heartbeat": plain(m.heartbeat().error_code, "error_code"),
    }


@scenario(AREA)
def renew_fetch_needs_zero_limits(ctx: Ctx) -> Any:
    """A ShareFetch with IsRenewAck whose MaxBytes/MinBytes/MaxRecords/MaxWaitMs are not all
    zero is INVALID_REQUEST (the session epoch stays); with all zero it renews the locks and
    acquires nothing."""
    t, _, m, _ = _two_acquired(ctx)
    bad = m.fetch_raw(_acks(t, 0, 1, RENEW), renew=True, max_records=5, max_wait_ms=0)
    zero = {"max_records": 0, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 0}
    renewed = m.fetch(_acks(t, 0, 1, RENEW), renew=True, batch_size=0, **zero)
    return {
        "refused": plain(bad.error_code, "error_code"),
        "refused_message": bad.error_message,
        "refused_lock_timeout": plain(bad.acquisition_lock_timeout),
        "renewed": renewed,
        "accept": m.acknowledge(_acks(t, 0, 1, ACCEPT)),
    }


@scenario(AREA)
def renew_type_needs_renew_flag(ctx: Ctx) -> Any:
    """A RENEW acknowledgement in a request without IsRenewAck is INVALID_REQUEST for its
    partition (ShareAcknowledge and ShareFetch alike); the records stay acquired."""
    t, _, m, _ = _two_acquired(ctx)
    ack = m.acknowledge(_acks(t, 0, 1, RENEW))
    fetched = m.fetch(_acks(t, 0, 1, RENEW), max_wait_ms=100)
    return {"ack": ack, "fetch": fetched, "accept": m.acknowledge(_acks(t, 0, 1, ACCEPT))}
