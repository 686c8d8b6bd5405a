"""Share start offsets as Kafka persists them: DescribeShareGroupOffsets after each step.

Kafka writes the share partition start offset lazily: -1 until the first acknowledgement is
written, then the start offset the share partition had *before* each write (it moves once the
write succeeded), and KIP-1226's lag = end offset - start offset - the records at or above it
whose delivery is complete.  Each scenario describes the offsets after every step.
"""

from __future__ import annotations

import time
from typing import Any

from tests.reference.differential.ctx import Ctx
from tests.reference.differential.framework import scenario
from tests.reference.differential.share import (
    ACCEPT,
    REJECT,
    RELEASE,
    ShareMember,
    describe_offsets,
    share_group,
)
from tests.reference.differential.wire import plain
from txn.api_keys import ApiKey

AREA = "share"


def _offsets(ctx: Ctx, g: str, t: str) -> list[int]:
    """[start offset, lag] of partition 0, as DescribeShareGroupOffsets answers them."""
    described = describe_offsets(ctx, g, [t])
    part = described["topics"][0]["partitions"][0]
    return [part["start_offset"], part["lag"]]


def _member(ctx: Ctx, n: int = 5, configs: dict[str, str | None] | None = None) -> Any:
    """``n`` records in one batch, read from the earliest offset by a joined member."""
    t = ctx.create_topic("s")
    ctx.produce(t, [f"v{i}" for i in range(n)])
    g = share_group(ctx)
    if configs is not None:
        ctx.group_config(g, configs)
    m = ShareMember(ctx, g, [t])
    m.join()
    return t, g, m


def _ack(m: ShareMember, t: str, *batches: tuple[int, int, list[int]]) -> Any:
    return m.acknowledge({(t, 0): list(batches)})["error_code"]


@scenario(AREA)
def start_offset_partial_batch_acks(ctx: Ctx) -> Any:
    """A batch acknowledged in pieces, the first record last."""
    t, g, m = _member(ctx)
    out: dict[str, Any] = {"got": m.fetch_until(5)}
    out["accept 1-3"] = [_ack(m, t, (1, 3, [ACCEPT])), _offsets(ctx, g, t)]
    out["accept 0"] = [_ack(m, t, (0, 0, [ACCEPT])), _offsets(ctx, g, t)]
    out["reject 4"] = [_ack(m, t, (4, 4, [REJECT])), _offsets(ctx, g, t)]
    return out


@scenario(AREA)
def start_offset_release_then_accept(ctx: Ctx) -> Any:
    """Released records count as not delivered; once redelivered and accepted, they do."""
    t, g, m = _member(ctx)
    out: dict[str, Any] = {"got": m.fetch_until(5)}
    out["release"] = [_ack(m, t, (0, 4, [RELEASE])), _offsets(ctx, g, t)]
    out["again"] = m.fetch_until(5)
    out["accept"] = [_ack(m, t, (0, 4, [ACCEPT])), _offsets(ctx, g, t)]
    ctx.produce(t, ["w0", "w1"])
    out["more"] = m.fetch_until(2)
    out["accept more"] = [_ack(m, t, (5, 6, [ACCEPT])), _offsets(ctx, g, t)]
    return out


@scenario(AREA)
def start_offset_acks_out_of_order(ctx: Ctx) -> Any:
    """Records after the start offset acknowledged first: they count, the start stays."""
    t, g, m = _member(ctx)
    out: dict[str, Any] = {"got": m.fetch_until(5)}
    out["accept 2-4"] = [_ack(m, t, (2, 4, [ACCEPT])), _offsets(ctx, g, t)]
    out["release 0-1"] = [_ack(m, t, (0, 1, [RELEASE])), _offsets(ctx, g, t)]
    out["again"] = m.fetch_until(2)
    out["accept 0-1"] = [_ack(m, t, (0, 1, [ACCEPT])), _offsets(ctx, g, t)]
    return out


@scenario(AREA)
def start_offset_after_leave(ctx: Ctx) -> Any:
    """Records accepted, then the member leaves holding the rest: the release is a write."""
    t, g, m = _member(ctx)
    out: dict[str, Any] = {"got": m.fetch_until(5)}
    out["accept 0-1"] = [_ack(m, t, (0, 1, [ACCEPT])), _offsets(ctx, g, t)]
    m.leave()
    deadline = time.monotonic() + 10
    offsets = _offsets(ctx, g, t)
    while offsets == out["accept 0-1"][1] and time.monotonic() < deadline:
        time.sleep(0.2)
        offsets = _offsets(ctx, g, t)
    out["after leave"] = offsets
    return out


@scenario(AREA)
def start_offset_after_lock_timeout(ctx: Ctx) -> Any:
    """Acquisition locks time out: the records going back are written (start offset set)."""
    t, g, m = _member(ctx, configs={"share.record.lock.duration.ms": "1000"})
    out: dict[str, Any] = {"got": m.fetch_until(5), "acquired": _offsets(ctx, g, t)}
    deadline = time.monotonic() + 10
    offsets = out["acquired"]
    while offsets == out["acquired"] and time.monotonic() < deadline:
        time.sleep(0.2)
        offsets = _offsets(ctx, g, t)
    out["timed out"] = offsets
    out["again"] = m.fetch_until(5)
    out["accept"] = [_ack(m, t, (0, 4, [ACCEPT])), _offsets(ctx, g, t)]
    return out


@scenario(AREA)
def start_offset_after_alter_and_delete(ctx: Ctx) -> Any:
    """AlterShareGroupOffsets sets the start offset (lag from there, nothing complete);
    DeleteShareGroupOffsets removes the state (-1 again)."""
    t, g, m = _member(ctx)
    m.fetch_until(5)
    out: dict[str, Any] = {"accept": [_ack(m, t, (0, 4, [ACCEPT])), _offsets(ctx, g, t)]}
    m.leave()
    partitions = [{"partition_index": 0, "start_offset": 2}]
    altered = ctx.call(
        ApiKey.ALTER_SHARE_GROUP_OFFSETS,
        {"group_id": g, "topics": [{"topic_name": t, "partitions": partitions}]},
    )
    out["alter"] = [plain(altered.error_code, "error_code"), _offsets(ctx, g, t)]
    deleted = ctx.call(
        ApiKey.DELETE_SHARE_GROUP_OFFSETS, {"group_id": g, "topics": [{"topic_name": t}]}
    )
    out["delete"] = [plain(deleted.error_code, "error_code"), _offsets(ctx, g, t)]
    return out
