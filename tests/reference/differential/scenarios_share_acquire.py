"""Share acquisition as Kafka 4.4 does it: ranges across transaction markers, aborted records
left out under ``read_committed``, ShareFetch v2's ``record_limit`` mode (KIP-1206) and its
``BatchSize`` split of one acquisition into several in-flight batches."""

from __future__ import annotations

import time
from typing import Any

from tests.reference.differential.ctx import Ctx
from tests.reference.differential.framework import scenario
from tests.reference.differential.share import ACCEPT, RELEASE, ShareMember, share_group

AREA = "share"
GAP = 0
RECORD_LIMIT = 1
READ_COMMITTED: dict[str, str | None] = {"share.isolation.level": "read_committed"}


def _member(
    ctx: Ctx, t: str, configs: dict[str, str | None] | None = None, prefix: str = "g"
) -> ShareMember:
    """A member of a new share group (named by ``prefix``) reading ``t``, joined."""
    g = share_group(ctx, prefix)
    if configs is not None:
        ctx.group_config(g, configs)
    m = ShareMember(ctx, g, [t])
    m.join()
    return m


def _batches(ctx: Ctx, t: str, *sizes: int) -> None:
    """Log batches of ``sizes`` plain records, one Produce each."""
    n = 0
    for size in sizes:
        ctx.produce(t, [f"v{n + i}" for i in range(size)])
        n += size


def _one(m: ShareMember, **kw: Any) -> list[list[int]]:
    """The acquired ranges of the first ShareFetch that acquires something."""
    return m.fetch_until(1, timeout_s=6.0, **kw)


def _ack(m: ShareMember, t: str, *batches: tuple[int, int, int]) -> Any:
    return m.acknowledge({(t, 0): [(f, la, [k]) for f, la, k in batches]})


def _txn(ctx: Ctx, t: str, values: list[str], commit: bool) -> None:
    """A transaction of ``values``, ended; returns once its marker is in the log.  Kafka's EndTxn
    answers before the coordinator writes the markers, so without the wait a record produced
    next could land before the marker on Kafka and after it on sharetxn."""
    start = int(ctx.fetch(t)["high_watermark"])
    tid = ctx.name("tx")
    _, pid, epoch = ctx.init_pid(tid)
    ctx.add_partitions(tid, pid, epoch, t)
    ctx.produce(t, values, pid=pid, epoch=epoch, seq=0, txn_id=tid)
    ctx.end_txn(tid, pid, epoch, commit)
    ctx.wait_lso(t, start + len(values) + 1)


# -- transaction markers and aborted records ----------------------------------------------------


def _aborted_between_plain(ctx: Ctx) -> str:
    """0-1 plain, 2-3 an aborted transaction, 4 its marker, 5-6 plain."""
    t = ctx.create_topic("s")
    ctx.produce(t, ["p0", "p1"])
    _txn(ctx, t, ["a0", "a1"], False)
    ctx.produce(t, ["q0", "q1"])
    ctx.wait_lso(t, 7)
    return t


@scenario(AREA)
def acquire_aborted_txn_between_batches_committed(ctx: Ctx) -> Any:
    t = _aborted_between_plain(ctx)
    m = _member(ctx, t, READ_COMMITTED)
    got = _one(m)
    return {
        "acquired": got,
        "ack_aborted": _ack(m, t, (2, 3, ACCEPT)),
        "ack_rest": _ack(m, t, (0, 1, ACCEPT), (4, 4, GAP), (5, 6, ACCEPT)),
    }


@scenario(AREA)
def acquire_aborted_txn_between_batches_uncommitted(ctx: Ctx) -> Any:
    t = _aborted_between_plain(ctx)
    m = _member(ctx, t)
    got = _one(m)
    return {"acquired": got, "ack": _ack(m, t, (0, 3, ACCEPT), (4, 4, GAP), (5, 6, ACCEPT))}


@scenario(AREA)
def acquire_interleaved_transactions(ctx: Ctx) -> Any:
    """Two transactions written in turn (A, B, A, B), A committed and B aborted, then a plain
    record: under read_committed B's records are left out, both markers acquired."""
    t = ctx.create_topic("s")
    txns = []
    for name in ("a", "b"):
        tid = ctx.name("tx" + name)
        _, pid, epoch = ctx.init_pid(tid)
        ctx.add_partitions(tid, pid, epoch, t)
        txns.append((tid, pid, epoch))
    for seq in range(2):
        for tid, pid, epoch in txns:
            ctx.produce(t, [f"{tid[-1]}{seq}"], pid=pid, epoch=epoch, seq=seq, txn_id=tid)
    (ta, pa, ea), (tb, pb, eb) = txns
    ctx.end_txn(ta, pa, ea, True)
    ctx.end_txn(tb, pb, eb, False)
    ctx.produce(t, ["plain"])
    ctx.wait_lso(t, 7)
    committed = _member(ctx, t, READ_COMMITTED, "gc")
    uncommitted = _member(ctx, t, prefix="gu")
    return {"committed": _one(committed), "uncommitted": _one(uncommitted)}


@scenario(AREA)
def acquire_markers_max_records(ctx: Ctx) -> Any:
    """Markers count towards MaxRecords: two committed transactions of one record each."""
    t = ctx.create_topic("s")
    _txn(ctx, t, ["c0"], True)
    _txn(ctx, t, ["c1"], True)
    ctx.produce(t, ["plain"])
    ctx.wait_lso(t, 5)
    m = _member(ctx, t, READ_COMMITTED)
    return {"fetches": [_one(m, max_records=2) for _ in range(3)]}


def _aborted_then_plain(ctx: Ctx) -> str:
    """0-2 an aborted transaction, 3 its marker, 4-6 one log batch of plain records."""
    t = ctx.create_topic("s")
    _txn(ctx, t, ["a0", "a1", "a2"], False)
    ctx.produce(t, ["p0", "p1", "p2"])
    ctx.wait_lso(t, 7)
    return t


def _fetches(m: ShareMember, n: int, **kw: Any) -> list[Any]:
    """The acquired ranges of ``n`` ShareFetches, one list per fetch (empty: none acquired)."""
    out = []
    for _ in range(n):
        resp = m.fetch(**kw)
        out.append([r for p in resp["partitions"] for r in p["acquired_records"]])
    return out


@scenario(AREA)
def acquire_aborted_counts_towards_max_records(ctx: Ctx) -> Any:
    """An aborted transaction of three records, then plain ones, read with MaxRecords 2: the
    aborted records fill the first fetch (nothing acquired), the next takes the marker and
    the whole log batch."""
    m = _member(ctx, _aborted_then_plain(ctx), READ_COMMITTED)
    first = m.fetch(max_records=2)
    return {
        "first": [p["acquired_records"] for p in first["partitions"]],
        "next": _one(m, max_records=2),
    }


@scenario(AREA)
def acquire_aborted_max_records_one(ctx: Ctx) -> Any:
    """The same log with MaxRecords 1: the marker comes alone, then the log batch whole."""
    m = _member(ctx, _aborted_then_plain(ctx), READ_COMMITTED)
    return {"fetches": _fetches(m, 4, max_records=1)}


@scenario(AREA)
def acquire_aborted_record_limit(ctx: Ctx) -> Any:
    """The same log in record_limit mode with MaxRecords 2: the log batch is split."""
    m = _member(ctx, _aborted_then_plain(ctx), READ_COMMITTED)
    return {"fetches": _fetches(m, 4, max_records=2, acquire_mode=RECORD_LIMIT)}


@scenario(AREA)
def acquire_aborted_then_committed_within_max_records(ctx: Ctx) -> Any:
    """An aborted transaction, a committed one and a plain record, all within MaxRecords: one
    fetch acquires everything but the aborted records, the ranges split around them."""
    t = ctx.create_topic("s")
    _txn(ctx, t, ["a0", "a1"], False)
    _txn(ctx, t, ["c0", "c1"], True)
    ctx.produce(t, ["p0"])
    ctx.wait_lso(t, 7)
    m = _member(ctx, t, READ_COMMITTED)
    got = _one(m, max_records=10)
    return {
        "acquired": got,
        "ack": _ack(m, t, (2, 2, GAP), (3, 4, ACCEPT), (5, 5, GAP), (6, 6, ACCEPT)),
    }


@scenario(AREA)
def acquire_committed_then_plain_max_records(ctx: Ctx) -> Any:
    """A committed transaction of three records, then a log batch of three, read_committed
    with MaxRecords 2 (batch_optimized): each fetch rounds up to the end of a log batch."""
    t = ctx.create_topic("s")
    _txn(ctx, t, ["c0", "c1", "c2"], True)
    ctx.produce(t, ["p0", "p1", "p2"])
    ctx.wait_lso(t, 7)
    m = _member(ctx, t, READ_COMMITTED)
    return {"fetches": _fetches(m, 3, max_records=2)}


# -- in-flight batches on redelivery ------------------------------------------------------------


@scenario(AREA)
def redeliver_two_in_flight_batches(ctx: Ctx) -> Any:
    """Two acquisitions (two in-flight batches) released, then acquired again together."""
    t = ctx.create_topic("s")
    _batches(ctx, t, 2, 2)
    m = _member(ctx, t)
    first = _one(m, max_records=2)
    second = _one(m, max_records=2)
    released = _ack(m, t, (0, 3, RELEASE))
    return {"first": first, "second": second, "released": released, "again": _one(m)}


@scenario(AREA)
def redeliver_in_flight_batch_of_three_log_batches(ctx: Ctx) -> Any:
    """One acquisition of three log batches, released, then fetched with MaxRecords 2."""
    t = ctx.create_topic("s")
    _batches(ctx, t, 2, 2, 2)
    m = _member(ctx, t)
    first = _one(m)
    released = _ack(m, t, (0, 5, RELEASE))
    return {"first": first, "released": released, "again": _one(m, max_records=2)}


# -- record_limit (KIP-1206) --------------------------------------------------------------------


@scenario(AREA)
def record_limit_smaller_than_batch(ctx: Ctx) -> Any:
    t = ctx.create_topic("s")
    _batches(ctx, t, 6, 3)
    m = _member(ctx, t)
    return {
        "fetches": [_one(m, max_records=4, acquire_mode=RECORD_LIMIT) for _ in range(3)],
    }


@scenario(AREA)
def record_limit_redelivers_split_batch(ctx: Ctx) -> Any:
    """A batch of six split by record_limit: the first two released, then three taken (two
    redelivered, one new), then the rest in batch_optimized mode."""
    t = ctx.create_topic("s")
    _batches(ctx, t, 6)
    m = _member(ctx, t)
    first = _one(m, max_records=2, acquire_mode=RECORD_LIMIT)
    released = _ack(m, t, (0, 1, RELEASE))
    return {
        "first": first,
        "released": released,
        "second": _one(m, max_records=3, acquire_mode=RECORD_LIMIT),
        "rest": _one(m),
        "ack": _ack(m, t, (0, 5, ACCEPT)),
    }


@scenario(AREA)
def record_limit_lock_timeout(ctx: Ctx) -> Any:
    """The two records record_limit took time out; the rest of the batch was never delivered."""
    t = ctx.create_topic("s")
    _batches(ctx, t, 6)
    m = _member(ctx, t, {"share.record.lock.duration.ms": "1000"})
    first = _one(m, max_records=2, acquire_mode=RECORD_LIMIT)
    time.sleep(1.6)
    return {"first": first, "after_timeout": _one(m)}


@scenario(AREA)
def record_limit_across_markers(ctx: Ctx) -> Any:
    t = ctx.create_topic("s")
    _txn(ctx, t, ["c0", "c1"], True)
    _txn(ctx, t, ["a0", "a1"], False)
    ctx.produce(t, ["p0", "p1"])
    ctx.wait_lso(t, 8)
    m = _member(ctx, t, READ_COMMITTED)
    return {"fetches": [_one(m, max_records=3, acquire_mode=RECORD_LIMIT) for _ in range(3)]}


@scenario(AREA)
def record_limit_two_partitions(ctx: Ctx) -> Any:
    """Two partitions of three records each, MaxRecords 4 in record_limit mode: the limit is
    for the whole ShareFetch."""
    t = ctx.create_topic("s", 2)
    m = ShareMember(ctx, share_group(ctx), [t])
    m.join(2)
    m.fetch(max_wait_ms=300, partitions=(0, 1))  # both share partitions initialized
    for p in (0, 1):
        ctx.produce(t, [f"v{p}{i}" for i in range(3)], partition=p)
    resp = m.fetch(max_records=4, acquire_mode=RECORD_LIMIT, partitions=(0, 1))
    return {
        "acquired": sum(
            int(r["last_offset"]) - int(r["first_offset"]) + 1
            for p in resp["partitions"]
            for r in p["acquired_records"]
        )
    }


# -- BatchSize (ShareFetch v2) -------------------------------------------------------------------


@scenario(AREA)
def batch_size_splits_acquisition(ctx: Ctx) -> Any:
    t = ctx.create_topic("s")
    _batches(ctx, t, 2, 2, 2, 2)
    m = _member(ctx, t)
    return {"acquired": _one(m, max_records=6, batch_size=3)}


@scenario(AREA)
def batch_size_split_redelivered(ctx: Ctx) -> Any:
    """An acquisition split into in-flight batches by BatchSize, one part released, then all
    released: each part comes back as its own batch."""
    t = ctx.create_topic("s")
    _batches(ctx, t, 2, 2, 2)
    m = _member(ctx, t)
    first = _one(m, max_records=6, batch_size=2)
    _ack(m, t, (2, 3, RELEASE))
    middle = _one(m)
    _ack(m, t, (0, 5, RELEASE))
    return {"first": first, "middle": middle, "all": _one(m)}


@scenario(AREA)
def batch_size_zero(ctx: Ctx) -> Any:
    t = ctx.create_topic("s")
    _batches(ctx, t, 2, 2, 2)
    m = _member(ctx, t)
    first = m.fetch(max_records=6, batch_size=0)
    return {"first": first, "then": _one(m, max_records=6, batch_size=0)}
