"""The log cleaner: when a tombstone disappears (KIP-534 delete horizons)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tests.reference.differential.ctx import Ctx
from tests.reference.differential.framework import scenario
from txn.batch import iter_batches
from txn.record_keys import records_of

AREA = "compaction"
#: Small settings so a pass comes within a second: segments roll 100 ms apart, any dirty
#: byte makes a log cleanable.
_TOPIC = {
    "cleanup.policy": "compact",
    "segment.ms": "100",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "2000",
}


def _batches(ctx: Ctx, topic: str) -> list[dict[str, Any]]:
    """Every batch from offset 0 (a Fetch reads one segment: fetch on from the next offset):
    its records (offset, key, value or None) and whether it carries a delete horizon."""
    out: list[dict[str, Any]] = []
    offset = 0
    while True:
        raw = ctx.fetch_raw(topic, offset)
        if not raw:
            return out
        for pos, header in iter_batches(raw):
            batch = raw[pos : pos + header.size]
            records = [
                (r.offset, (r.key or b"").decode(), "value" if r.has_value else None)
                for r in records_of(batch, header)
            ]
            out.append(
                {
                    "base": header.base_offset,
                    "records": records,
                    "delete_horizon": header.delete_horizon_ms is not None,
                }
            )
            offset = header.last_offset + 1


def _offsets(batches: list[dict[str, Any]]) -> list[int]:
    """The offsets of the records, and of the empty batches (sharetxn's extra pass at the
    horizon may leave the range's last batch empty before new writes clean it away)."""
    return [o for b in batches for o in [r[0] for r in b["records"]] or [b["base"]]]


def _until(ctx: Ctx, topic: str, done: Callable[[list[int]], bool], timeout_s: float) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        batches = _batches(ctx, topic)
        if done(_offsets(batches)):
            return batches
        if time.monotonic() > deadline:
            return {"timed_out": batches}
        time.sleep(0.2)


def _produce_after_roll(ctx: Ctx, topic: str, key: str, value: str | None) -> Any:
    time.sleep(0.15)  # past segment.ms: this batch starts a segment
    return ctx.produce(topic, [value], keys=[key])


@scenario(AREA)
def tombstone_kept_delete_retention_ms_from_its_first_cleaning(ctx: Ctx) -> Any:
    """The tombstone is already older than delete.retention.ms when the cleaner first sees
    it: it stays (its batch now carries the delete horizon) until a pass after the horizon,
    which new writes bring."""
    t = ctx.create_topic("compact", configs=_TOPIC)
    out: dict[str, Any] = {"first": ctx.produce(t, ["a", "a"], keys=["k1", "k2"])}
    out["tombstone"] = _produce_after_roll(ctx, t, "k1", None)
    time.sleep(2.5)  # the tombstone's timestamp is now past delete.retention.ms
    out["roll"] = _produce_after_roll(ctx, t, "k3", "a")
    out["first_cleaning"] = _until(ctx, t, lambda offsets: 0 not in offsets, 30)
    time.sleep(2.5)  # past the horizon the first cleaning set
    out["later"] = _produce_after_roll(ctx, t, "k4", "a")
    out["after_horizon"] = _until(ctx, t, lambda offsets: 2 not in offsets, 30)
    return out
