"""Share groups at Kafka's edges: throttled redelivery (KAFKA-17541) and where a share group
starts reading under ``read_committed`` when transactions are open or aborted."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tests.reference.differential.ctx import Ctx
from tests.reference.differential.framework import scenario
from tests.reference.differential.share import (
    ACCEPT,
    REJECT,
    RELEASE,
    ShareMember,
    share_group,
)

AREA = "share"

#: How a redelivery round acknowledges one record: (offset, delivery count) -> ack type.
AckRule = Callable[[int, int], int]


def _release_all(_offset: int, _count: int) -> int:
    return RELEASE


def _accept_release_reject(offset: int, _count: int) -> int:
    return (ACCEPT, RELEASE, REJECT)[offset % 3]


def _one_bad(offset: int, _count: int) -> int:
    return RELEASE if offset == 2 else ACCEPT


def _ack_batches(got: list[list[int]], rule: AckRule) -> list[tuple[int, int, list[int]]]:
    """One acknowledgement batch per acquired range: one type if uniform, else one per offset."""
    out: list[tuple[int, int, list[int]]] = []
    for first, last, count in got:
        kinds = [rule(o, count) for o in range(first, last + 1)]
        out.append((first, last, kinds[:1] if len(set(kinds)) == 1 else kinds))
    return out


def _rounds(
    ctx: Ctx,
    limit: int,
    logged: list[int],
    rule: AckRule | None,
    *,
    max_records: int = 500,
    lock_ms: str | None = None,
) -> dict[str, Any]:
    """Records in log batches of ``logged`` sizes, read by one member of a group with delivery
    count limit ``limit``: each ShareFetch's acquired ranges, acknowledged by ``rule`` (or left
    to their lock timing out), until every record is settled or archived."""
    t = ctx.create_topic("s")
    n = 0
    for size in logged:
        ctx.produce(t, [f"v{n + i}" for i in range(size)])
        n += size
    configs: dict[str, str | None] = {"share.delivery.count.limit": str(limit)}
    if lock_ms is not None:
        configs["share.record.lock.duration.ms"] = lock_ms
    g = share_group(ctx)
    ctx.group_config(g, configs)
    m = ShareMember(ctx, g, [t])
    m.join()
    open_ = set(range(n))
    fetches: list[list[list[int]]] = []
    while open_ and len(fetches) < 60:
        got = m.fetch_until(1, timeout_s=6.0, max_records=max_records)
        if not got:
            break
        fetches.append(got)
        for first, last, count in got:
            for o in range(first, last + 1):
                kind = RELEASE if rule is None else rule(o, count)
                if kind != RELEASE or count >= limit:
                    open_.discard(o)
        if rule is not None:
            m.acknowledge({(t, 0): _ack_batches(got, rule)})
    return {"fetches": fetches, "unsettled": sorted(open_)}


@scenario(AREA)
def throttle_release_all_limit_2(ctx: Ctx) -> Any:
    return _rounds(ctx, 2, [6], _release_all)


@scenario(AREA)
def throttle_release_all_limit_3(ctx: Ctx) -> Any:
    return _rounds(ctx, 3, [6], _release_all)


@scenario(AREA)
def throttle_release_all_limit_5(ctx: Ctx) -> Any:
    return _rounds(ctx, 5, [10], _release_all)


@scenario(AREA)
def throttle_release_all_limit_6(ctx: Ctx) -> Any:
    return _rounds(ctx, 6, [12], _release_all)


@scenario(AREA)
def throttle_mixed_acks_limit_2(ctx: Ctx) -> Any:
    return _rounds(ctx, 2, [9], _accept_release_reject)


@scenario(AREA)
def throttle_mixed_acks_limit_3(ctx: Ctx) -> Any:
    return _rounds(ctx, 3, [9], _accept_release_reject)


@scenario(AREA)
def throttle_mixed_acks_limit_5(ctx: Ctx) -> Any:
    return _rounds(ctx, 5, [12], _accept_release_reject)


@scenario(AREA)
def throttle_one_bad_record_limit_5(ctx: Ctx) -> Any:
    return _rounds(ctx, 5, [8], _one_bad)


@scenario(AREA)
def throttle_log_batches_limit_3(ctx: Ctx) -> Any:
    return _rounds(ctx, 3, [4, 4], _release_all)


@scenario(AREA)
def throttle_max_records_limit_5(ctx: Ctx) -> Any:
    return _rounds(ctx, 5, [3, 3, 3, 3], _release_all, max_records=4)


@scenario(AREA)
def throttle_lock_timeout_limit_3(ctx: Ctx) -> Any:
    return _rounds(ctx, 3, [4], None, lock_ms="1000")


# -- start offsets under read_committed ---------------------------------------------------------


def _txn(ctx: Ctx, t: str, values: list[str]) -> Callable[[bool], str]:
    """Open a transaction holding ``values`` on ``t``; the function that ends it."""
    tid = ctx.name("tx")
    _, pid, epoch = ctx.init_pid(tid)
    ctx.add_partitions(tid, pid, epoch, t)
    ctx.produce(t, values, pid=pid, epoch=epoch, seq=0, txn_id=tid)
    return lambda commit: ctx.end_txn(tid, pid, epoch, commit)


def _committed_member(ctx: Ctx, t: str, reset: str) -> ShareMember:
    g = share_group(ctx, reset=reset)
    ctx.group_config(g, {"share.isolation.level": "read_committed"})
    m = ShareMember(ctx, g, [t])
    m.join()
    return m


def _start_with_open_txn(ctx: Ctx, reset: str, commit: bool) -> Any:
    """A plain record, then an open transaction; the group starts; the transaction ends; a
    plain record follows: what is delivered, in order."""
    t = ctx.create_topic("s")
    ctx.produce(t, ["before"])
    end = _txn(ctx, t, ["t0", "t1"])
    m = _committed_member(ctx, t, reset)
    early = m.fetch_until(1, timeout_s=1.5)
    ended = end(commit)
    ctx.produce(t, ["after"])
    ctx.wait_lso(t, 5)
    return {"early": early, "end_txn": ended, "later": m.fetch_until(3, timeout_s=4.0)}


@scenario(AREA)
def start_latest_committed_open_txn_commits(ctx: Ctx) -> Any:
    return _start_with_open_txn(ctx, "latest", True)


@scenario(AREA)
def start_latest_committed_open_txn_aborts(ctx: Ctx) -> Any:
    return _start_with_open_txn(ctx, "latest", False)


@scenario(AREA)
def start_earliest_committed_open_txn_commits(ctx: Ctx) -> Any:
    return _start_with_open_txn(ctx, "earliest", True)


@scenario(AREA)
def start_by_duration_committed_open_txn_aborts(ctx: Ctx) -> Any:
    return _start_with_open_txn(ctx, "by_duration:PT1H", False)


def _start_after_aborted(ctx: Ctx, reset: str) -> Any:
    """An aborted transaction, a committed one and a plain record already in the log."""
    t = ctx.create_topic("s")
    _txn(ctx, t, ["a0", "a1"])(False)
    _txn(ctx, t, ["c0", "c1"])(True)
    ctx.produce(t, ["plain"])
    ctx.wait_lso(t, 7)
    m = _committed_member(ctx, t, reset)
    got = m.fetch_until(3, timeout_s=2.0)
    ctx.produce(t, ["late"])
    return {"first": got, "next": m.fetch_until(1, timeout_s=2.0)}


@scenario(AREA)
def start_earliest_committed_after_abort(ctx: Ctx) -> Any:
    return _start_after_aborted(ctx, "earliest")


@scenario(AREA)
def start_latest_committed_after_abort(ctx: Ctx) -> Any:
    return _start_after_aborted(ctx, "latest")


@scenario(AREA)
def start_by_duration_committed_after_abort(ctx: Ctx) -> Any:
    return _start_after_aborted(ctx, "by_duration:PT1H")


@scenario(AREA)
def start_by_duration_committed_open_txn_before_window(ctx: Ctx) -> Any:
    """A transaction opened before the by_duration window and still open when the group
    starts; a plain record written inside the window after it."""
    t = ctx.create_topic("s")
    end = _txn(ctx, t, ["old0", "old1"])
    time.sleep(4.0)
    ctx.produce(t, ["inside"])
    m = _committed_member(ctx, t, "by_duration:PT3S")
    early = m.fetch_until(1, timeout_s=1.5)
    ended = end(True)
    ctx.wait_lso(t, 4)
    return {"early": early, "end_txn": ended, "later": m.fetch_until(2, timeout_s=3.0)}
