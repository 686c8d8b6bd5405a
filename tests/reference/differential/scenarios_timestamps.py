"""Record timestamps: ``message.timestamp.type``, the before/after bounds, ListOffsets.

Producer timestamps are set a day in the past (``Clock.base``) so that they never look like
"now".  Every timestamp in an observation is shown relative to that base, or as ``"now"``
when it falls between the scenario's start and its end (a LogAppendTime stamp, a marker's
time), or as -1: the two brokers run at different moments, the shape must be the same.
"""

from __future__ import annotations

import datetime
import re
import struct
import time
from typing import Any

from crc32c import crc32c

from producer.protocol.records import decode_batch, split_batches
from tests.reference.differential.ctx import TOPIC_RESOURCE, Ctx
from tests.reference.differential.framework import scenario
from tests.reference.differential.share import ShareMember, share_group
from tests.reference.differential.wire import plain
from txn.batch import build_batch

AREA = "timestamps"

DAY_MS = 86_400_000
HOUR_MS = 3_600_000
GZIP = 1
LZ4 = 3
LAT = {"message.timestamp.type": "LogAppendTime"}


class Clock:
    """The scenario's base (a day before it started) and its wall-clock window."""

    def __init__(self) -> None:
        self.start = int(time.time() * 1000)
        self.base = self.start - DAY_MS

    def rel(self, ts: int) -> Any:
        """``ts`` as observed: -1 and other values far from the base as they are."""
        if ts < 0 or abs(ts - self.base) > 30 * DAY_MS:
            return ts
        if self.start - 1000 <= ts <= int(time.time() * 1000) + 1000:
            return "now"
        return ts - self.base


def _ms(value: Any) -> int:
    if value is None:
        return -1
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)


_NUMBER = re.compile(r"\d{10,}")
_WINDOW = re.compile(r"within \[(-?\d+), (-?\d+)\]")


def _text(clock: Clock, message: str | None) -> str | None:
    """A message with its epoch-millisecond numbers shown like observed timestamps, and
    Kafka's window ``[now - before, now + after]`` as its width (each broker has its now)."""
    if message is None:
        return None
    message = _WINDOW.sub(
        lambda m: (
            f"within <{int(m.group(2)) - int(m.group(1))} wide, ending "
            f"{'after' if int(m.group(2)) >= clock.start else 'before'} the start>"
        ),
        message,
    )
    return _NUMBER.sub(lambda m: f"<{clock.rel(int(m.group()))}>", message)


def produce(
    ctx: Ctx,
    clock: Clock,
    topic: str,
    timestamps: list[int],
    *,
    compression: int = 0,
    pid: int = -1,
    epoch: int = -1,
    seq: int = -1,
    txn_id: str | None = None,
    raw: bytes | None = None,
) -> Any:
    """One batch of records ``v0..`` with these timestamps (or ``raw``); the partition's
    answer in full."""
    batch = (
        build_batch(
            [(None, f"v{i}".encode()) for i in range(len(timestamps))],
            timestamp_ms=timestamps[0],
            timestamps=timestamps,
            compression=compression,
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
            transactional=txn_id is not None,
        )
        if raw is None
        else raw
    )
    body = {
        "transactional_id": txn_id,
        "acks": -1,
        "timeout": 10000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    }
    deadline = time.monotonic() + 5
    while True:
        p = ctx.call(0, body).responses[0].partition_responses[0]
        error = plain(p.error_code, "error_code")
        if error != "NOT_LEADER_OR_FOLLOWER" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    return {
        "error_code": error,
        "base_offset": int(p.base_offset),
        "log_append_time": clock.rel(_ms(p.log_append_time)),
        "log_start_offset": int(p.log_start_offset),
        "error_message": _text(clock, p.error_message),
        "record_errors": [
            [int(r.batch_index), _text(clock, r.batch_index_error_message)] for r in p.record_errors
        ],
    }


def batches(ctx: Ctx, clock: Clock, topic: str, isolation: int = 0) -> Any:
    """Every batch of the partition: header timestamps and type, each record's timestamp."""
    resp = ctx.call(
        1,
        {
            "replica_id": -1,
            "max_wait": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "isolation_level": isolation,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic_id": ctx.topic_id(topic),
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": -1,
                            "fetch_offset": 0,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": 1 << 20,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )
    data = bytes(resp.responses[0].partitions[0].records or b"")
    out = []
    for pos, header in split_batches(data):
        entry: dict[str, Any] = {
            "base_offset": header.base_offset,
            "control": header.is_control,
            "log_append_time": bool(header.attributes & 0x08),
            "compression": header.attributes & 0x07,
            "base_timestamp": clock.rel(header.base_timestamp),
            "max_timestamp": clock.rel(header.max_timestamp),
        }
        if not header.is_control:
            entry["records"] = [
                [r.offset, clock.rel(r.timestamp), (r.value or b"").decode()]
                for r in decode_batch(data, pos, header).records
            ]
        out.append(entry)
    return out


def list_offsets(
    ctx: Ctx,
    clock: Clock,
    topic: str,
    targets: dict[str, int],
    isolation: int = 0,
    version: int | None = None,
) -> Any:
    """ListOffsets for each target (one request each): error, offset, timestamp."""
    out = {}
    for label, target in targets.items():
        resp = ctx.call(
            2,
            {
                "replica_id": -1,
                "isolation_level": isolation,
                "timeout": 30000,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {
                                "partition_index": 0,
                                "current_leader_epoch": -1,
                                "timestamp": target,
                            }
                        ],
                    }
                ],
            },
            version,
        )
        p = resp.topics[0].partitions[0]
        out[label] = [
            plain(p.error_code, "error_code"),
            int(p.offset),
            clock.rel(_ms(p.timestamp)),
        ]
    return out


SPECIAL = {"latest": -1, "earliest": -2, "max": -3, "earliest_local": -4, "latest_tiered": -5}
SPECIAL["earliest_pending_upload"] = -6


def _record_targets(clock: Clock) -> dict[str, int]:
    b = clock.base
    return {
        "zero": 0,
        "before_all": b - 1000,
        "first": b,
        "between_0_1": b + 500,
        "equal_1": b + 1000,
        "between_2_3": b + 2500,
        "equal_3": b + 3000,
        "equal_max": b + 5000,
        "after_batch1": b + 5500,
        "equal_batch2": b + 6000,
        "after_all": b + 9000,
        "future": clock.start + HOUR_MS,
    }


# -- LogAppendTime ------------------------------------------------------------------------


@scenario(AREA)
def log_append_time_uncompressed(ctx: Ctx) -> Any:
    clock = Clock()
    t = ctx.create_topic("lat", configs=LAT)
    b = clock.base
    return {
        "produce": produce(ctx, clock, t, [b + 3000, b + 1000, b + 5000]),
        "second": produce(ctx, clock, t, [b]),
        "fetch": batches(ctx, clock, t),
        "offsets": list_offsets(ctx, clock, t, {**SPECIAL, "base": b, "future": b + 2 * DAY_MS}),
    }


@scenario(AREA)
def log_append_time_compressed(ctx: Ctx) -> Any:
    clock = Clock()
    t = ctx.create_topic("lat", configs=LAT)
    b = clock.base
    return {
        "gzip": produce(ctx, clock, t, [b + 3000, b + 1000, b + 5000], compression=GZIP),
        "lz4": produce(ctx, clock, t, [b + 7000, b + 6000], compression=LZ4),
        "fetch": batches(ctx, clock, t),
    }


@scenario(AREA)
def log_append_time_transactional(ctx: Ctx) -> Any:
    clock = Clock()
    t = ctx.create_topic("lat", configs=LAT)
    b = clock.base
    tid = ctx.name("tx")
    _err, pid, epoch = ctx.init_pid(tid)
    ctx.add_partitions(tid, pid, epoch, t)
    out: dict[str, Any] = {
        "produce": produce(
            ctx, clock, t, [b + 2000, b + 1000], pid=pid, epoch=epoch, seq=0, txn_id=tid
        ),
    }
    out["open_rc"] = list_offsets(ctx, clock, t, {"latest": -1, "max": -3, "base": b}, 1)
    out["open_ru"] = list_offsets(ctx, clock, t, {"latest": -1, "max": -3, "base": b}, 0)
    out["end"] = ctx.end_txn(tid, pid, epoch, True)
    ctx.wait_lso(t, 3)
    out["fetch"] = batches(ctx, clock, t, 1)
    return out


@scenario(AREA)
def log_append_time_ignores_bounds(ctx: Ctx) -> Any:
    clock = Clock()
    t = ctx.create_topic(
        "lat",
        configs={
            **LAT,
            "message.timestamp.before.max.ms": "1000",
            "message.timestamp.after.max.ms": "1000",
        },
    )
    return {
        "old": produce(ctx, clock, t, [clock.base]),
        "future": produce(ctx, clock, t, [clock.start + DAY_MS]),
        "fetch": batches(ctx, clock, t),
    }


@scenario(AREA)
def create_time_to_log_append_time(ctx: Ctx) -> Any:
    clock = Clock()
    t = ctx.create_topic("ct")
    b = clock.base
    out: dict[str, Any] = {"create_time": produce(ctx, clock, t, [b + 3000, b + 1000])}
    out["alter"] = ctx.alter_configs(TOPIC_RESOURCE, t, LAT)
    time.sleep(1)  # Kafka applies a topic's new configs to its log asynchronously
    out["log_append_time"] = produce(ctx, clock, t, [b + 500, b + 200])
    out["fetch"] = batches(ctx, clock, t)
    out["offsets"] = list_offsets(
        ctx, clock, t, {**SPECIAL, "b": b, "b_1500": b + 1500, "b_3500": b + 3500}
    )
    out["back"] = ctx.alter_configs(TOPIC_RESOURCE, t, {"message.timestamp.type": None})
    time.sleep(1)
    out["create_time_again"] = produce(ctx, clock, t, [b + 100])
    out["max_after"] = list_offsets(ctx, clock, t, {"max": -3})
    return out


# -- CreateTime bounds --------------------------------------------------------------------


@scenario(AREA)
def create_time_default_bounds(ctx: Ctx) -> Any:
    clock = Clock()
    t = ctx.create_topic("ct")
    now = clock.start
    # the newest first: a later batch more than segment.ms newer than the segment's first
    # would roll a segment, and Kafka's Fetch stops at the end of a segment
    return {
        "half_hour_ahead": produce(ctx, clock, t, [now + HOUR_MS // 2]),
        "year_2001": produce(ctx, clock, t, [1_000_000_000_000]),
        "zero": produce(ctx, clock, t, [0]),
        "no_timestamp": produce(ctx, clock, t, [-1]),
        "negative": produce(ctx, clock, t, [-5]),
        "two_hours_ahead": produce(ctx, clock, t, [now + 2 * HOUR_MS]),
        "second_record_ahead": produce(ctx, clock, t, [now, now + 2 * HOUR_MS, now]),
        "fetch": batches(ctx, clock, t),
    }


@scenario(AREA)
def create_time_configured_bounds(ctx: Ctx) -> Any:
    clock = Clock()
    t = ctx.create_topic(
        "ct",
        configs={
            "message.timestamp.before.max.ms": "60000",
            "message.timestamp.after.max.ms": "60000",
        },
    )
    now = clock.start
    return {
        "two_minutes_old": produce(ctx, clock, t, [now - 120_000]),
        "two_minutes_ahead": produce(ctx, clock, t, [now + 120_000]),
        "within": produce(ctx, clock, t, [now - 10_000, now + 10_000]),
        "mixed": produce(ctx, clock, t, [now, now - 120_000, now, now + 120_000]),
        "mixed_gzip": produce(ctx, clock, t, [now, now - 120_000], compression=GZIP),
        "no_timestamp": produce(ctx, clock, t, [-1]),
        "fetch": batches(ctx, clock, t),
    }


@scenario(AREA)
def bounds_changed_on_live_topic(ctx: Ctx) -> Any:
    clock = Clock()
    t = ctx.create_topic("ct")
    out = {"before": produce(ctx, clock, t, [clock.base])}
    out["alter"] = ctx.alter_configs(
        TOPIC_RESOURCE, t, {"message.timestamp.before.max.ms": "3600000"}
    )
    # Kafka applies a topic's new configs to its log asynchronously: retried until refused
    deadline = time.monotonic() + 10
    while True:
        after = produce(ctx, clock, t, [clock.base])
        if after["error_code"] != "NONE" or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    out["after"] = {k: after[k] for k in ("error_code", "error_message", "record_errors")}
    return out


# -- ListOffsets ----------------------------------------------------------------------------


def _out_of_order(ctx: Ctx, clock: Clock, t: str, compression: int = 0) -> Any:
    b = clock.base
    return [
        produce(
            ctx,
            clock,
            t,
            [b + 3000, b + 1000, b + 5000, b + 5000, b + 2000],
            compression=compression,
        ),
        produce(ctx, clock, t, [b + 4000, b + 6000, b + 6000], compression=compression),
    ]


@scenario(AREA)
def list_offsets_record_granularity(ctx: Ctx) -> Any:
    clock = Clock()
    t = ctx.create_topic("ct")
    produced = _out_of_order(ctx, clock, t)
    targets = {**SPECIAL, **_record_targets(clock)}
    return {
        "produced": produced,
        "read_uncommitted": list_offsets(ctx, clock, t, targets, 0),
        "read_committed": list_offsets(ctx, clock, t, targets, 1),
    }


@scenario(AREA)
def list_offsets_record_granularity_compressed(ctx: Ctx) -> Any:
    clock = Clock()
    t = ctx.create_topic("ct")
    produced = _out_of_order(ctx, clock, t, GZIP)
    return {
        "produced": produced,
        "offsets": list_offsets(ctx, clock, t, {**SPECIAL, **_record_targets(clock)}),
    }


@scenario(AREA)
def list_offsets_empty_partition(ctx: Ctx) -> Any:
    clock = Clock()
    t = ctx.create_topic("ct")
    targets = {**SPECIAL, "zero": 0, "base": clock.base, "unknown_negative": -7}
    return {
        "read_uncommitted": list_offsets(ctx, clock, t, targets, 0),
        "read_committed": list_offsets(ctx, clock, t, targets, 1),
    }


@scenario(AREA)
def list_offsets_open_transaction(ctx: Ctx) -> Any:
    clock = Clock()
    t = ctx.create_topic("ct")
    b = clock.base
    out: dict[str, Any] = {"committed": produce(ctx, clock, t, [b + 1000, b + 2000])}
    tid = ctx.name("tx")
    _err, pid, epoch = ctx.init_pid(tid)
    ctx.add_partitions(tid, pid, epoch, t)
    out["open"] = produce(
        ctx, clock, t, [b + 4000, b + 3000], pid=pid, epoch=epoch, seq=0, txn_id=tid
    )
    out["after_open"] = produce(ctx, clock, t, [b + 500])
    targets = {**SPECIAL, "b_1500": b + 1500, "b_3000": b + 3000, "b_3500": b + 3500}
    out["open_rc"] = list_offsets(ctx, clock, t, targets, 1)
    out["open_ru"] = list_offsets(ctx, clock, t, targets, 0)
    out["abort"] = ctx.end_txn(tid, pid, epoch, False)
    ctx.wait_lso(t, 6)
    targets["future"] = clock.start + HOUR_MS
    targets["day_after"] = b + 10_000
    out["aborted_rc"] = list_offsets(ctx, clock, t, targets, 1)
    out["aborted_ru"] = list_offsets(ctx, clock, t, targets, 0)
    return out


@scenario(AREA)
def list_offsets_after_delete_records(ctx: Ctx) -> Any:
    clock = Clock()
    t = ctx.create_topic("ct")
    produced = _out_of_order(ctx, clock, t)
    resp = ctx.call(
        21,
        {
            "topics": [{"name": t, "partitions": [{"partition_index": 0, "offset": 3}]}],
            "timeout": 10000,
        },
    )
    return {
        "produced": produced,
        "delete": plain(resp.topics[0].partitions[0].error_code, "error_code"),
        "offsets": list_offsets(ctx, clock, t, {**SPECIAL, **_record_targets(clock)}),
    }


@scenario(AREA)
def list_offsets_unknown_topic(ctx: Ctx) -> Any:
    clock = Clock()
    ctx.create_topic("ct")
    return list_offsets(ctx, clock, ctx.name("none"), {"max": -3})


def _rewritten(batch: bytes, attributes_or: int = 0, max_timestamp: int | None = None) -> bytes:
    """``batch`` with attribute bits added or its max timestamp replaced, CRC recomputed."""
    out = bytearray(batch)
    attrs = struct.unpack_from(">h", out, 21)[0] | attributes_or
    struct.pack_into(">h", out, 21, attrs)
    if max_timestamp is not None:
        struct.pack_into(">q", out, 35, max_timestamp)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


@scenario(AREA)
def producer_sets_log_append_time(ctx: Ctx) -> Any:
    clock = Clock()
    ct = ctx.create_topic("ct")
    lat = ctx.create_topic("lat", configs=LAT)
    b = clock.base
    batch = build_batch([(b"k", b"value"), (None, None)], timestamp_ms=b, timestamps=[b, b + 10])
    marked = _rewritten(batch, attributes_or=0x08)
    return {
        "create_time_topic": produce(ctx, clock, ct, [], raw=marked),
        "log_append_time_topic": produce(ctx, clock, lat, [], raw=marked),
        "fetch": batches(ctx, clock, ct),
    }


@scenario(AREA)
def batch_max_timestamp_recomputed(ctx: Ctx) -> Any:
    clock = Clock()
    t = ctx.create_topic("ct")
    b = clock.base
    batch = build_batch([(None, b"a"), (None, b"b")], timestamp_ms=b, timestamps=[b, b + 4000])
    return {
        "too_small": produce(ctx, clock, t, [], raw=_rewritten(batch, max_timestamp=b)),
        "too_large": produce(ctx, clock, t, [], raw=_rewritten(batch, max_timestamp=b + 9000)),
        "gzip": produce(
            ctx,
            clock,
            t,
            [],
            raw=_rewritten(
                build_batch(
                    [(None, b"c")], timestamp_ms=b + 100, timestamps=[b + 100], compression=GZIP
                ),
                max_timestamp=-1,
            ),
        ),
        "fetch": batches(ctx, clock, t),
        "offsets": list_offsets(ctx, clock, t, {"max": -3, "b_5000": b + 5000, "b_50": b + 50}),
    }


@scenario(AREA)
def duplicate_batch_answers(ctx: Ctx) -> Any:
    clock = Clock()
    ct = ctx.create_topic("ct")
    lat = ctx.create_topic("lat", configs=LAT)
    b = clock.base
    out = {}
    for label, t in (("create_time", ct), ("log_append_time", lat)):
        _err, pid, epoch = ctx.init_pid()
        first = produce(ctx, clock, t, [b + 1000, b + 3000], pid=pid, epoch=epoch, seq=0)
        time.sleep(0.01)
        again = produce(ctx, clock, t, [b + 1000, b + 3000], pid=pid, epoch=epoch, seq=0)
        out[label] = {"first": first, "duplicate": again}
    return out


@scenario(AREA)
def list_offsets_versions_and_unknown_targets(ctx: Ctx) -> Any:
    clock = Clock()
    t = ctx.create_topic("ct")
    produce(ctx, clock, t, [clock.base + 1000, clock.base])
    targets = {**SPECIAL, "minus_7": -7, "minus_100": -100, "long_min": -(1 << 63)}
    return {
        "v1": list_offsets(ctx, clock, t, targets, 0, 1),
        "v5": list_offsets(ctx, clock, t, targets, 1, 5),
        "v6": list_offsets(ctx, clock, t, targets, 0, 6),
        "v7": list_offsets(ctx, clock, t, targets, 0, 7),
        "v8": list_offsets(ctx, clock, t, targets, 0, 8),
        "v9": list_offsets(ctx, clock, t, targets, 1, 9),
        "v10": list_offsets(ctx, clock, t, targets, 0, 10),
        "v11": list_offsets(ctx, clock, t, targets, 1, 11),
    }


@scenario(AREA)
def list_offsets_tiered_targets_after_delete_records(ctx: Ctx) -> Any:
    """Without tiered storage the local log is the whole log: EARLIEST_LOCAL (v8) follows
    the log start offset as EARLIEST does; LATEST_TIERED (v9) and EARLIEST_PENDING_UPLOAD
    (v11) find nothing tiered."""
    clock = Clock()
    t = ctx.create_topic("ct")
    produce(ctx, clock, t, [clock.base, clock.base + 1000, clock.base + 2000])
    before = list_offsets(ctx, clock, t, SPECIAL, 0, 11)
    deleted = ctx.call(
        21,
        {
            "topics": [{"name": t, "partitions": [{"partition_index": 0, "offset": 2}]}],
            "timeout": 30000,
        },
    )
    after = {v: list_offsets(ctx, clock, t, SPECIAL, v % 2, v) for v in (8, 9, 10, 11)}
    return {
        "before": before,
        "delete": plain(deleted.topics[0].partitions[0].error_code, "error_code"),
        "after": after,
    }


# -- what depends on them: share groups' by_duration -------------------------------------


@scenario(AREA)
def share_by_duration_inside_a_batch(ctx: Ctx) -> Any:
    clock = Clock()
    t = ctx.create_topic("ct")
    now = clock.start
    produced = produce(ctx, clock, t, [now - 2 * HOUR_MS, now - 600_000, now - 3 * HOUR_MS, now])
    m = ShareMember(ctx, share_group(ctx, reset="by_duration:PT1H"), [t])
    m.join()
    return {"produced": produced, "got": m.fetch_until(3)}


@scenario(AREA)
def share_by_duration_on_log_append_time(ctx: Ctx) -> Any:
    clock = Clock()
    t = ctx.create_topic("lat", configs=LAT)
    produced = produce(ctx, clock, t, [clock.base, clock.base + 1000])
    m = ShareMember(ctx, share_group(ctx, reset="by_duration:PT1H"), [t])
    m.join()
    return {"produced": produced, "got": m.fetch_until(2)}


@scenario(AREA)
def list_offsets_max_after_delete_records(ctx: Ctx) -> Any:
    clock = Clock()
    t = ctx.create_topic("ct")
    b = clock.base
    produce(ctx, clock, t, [b + 9000, b + 1000])
    produce(ctx, clock, t, [b + 2000, b + 3000])

    def delete(offset: int) -> Any:
        resp = ctx.call(
            21,
            {
                "topics": [{"name": t, "partitions": [{"partition_index": 0, "offset": offset}]}],
                "timeout": 10000,
            },
        )
        return plain(resp.topics[0].partitions[0].error_code, "error_code")

    targets = {"max": -3, "b": b, "b_2500": b + 2500, "b_5000": b + 5000}
    out: dict[str, Any] = {"start": list_offsets(ctx, clock, t, targets)}
    out["delete_1"] = delete(1)
    out["inside_batch"] = list_offsets(ctx, clock, t, targets)
    out["delete_2"] = delete(2)
    out["batch_gone"] = list_offsets(ctx, clock, t, targets)
    return out


# -- what depends on them: retention ------------------------------------------------------


@scenario(AREA)
def retention_by_append_time(ctx: Ctx) -> Any:
    """Records a day old by their producer's clock, with retention.ms of a minute: deleted on
    a CreateTime topic at the next retention check, kept on a LogAppendTime topic."""
    clock = Clock()
    keep = {"retention.ms": "60000"}
    ct = ctx.create_topic("ct", configs=keep)
    lat = ctx.create_topic("lat", configs={**LAT, **keep})
    for t in (ct, lat):
        produce(ctx, clock, t, [clock.base, clock.base + 1000])
    deadline = time.monotonic() + 15
    while True:
        earliest = list_offsets(ctx, clock, ct, {"earliest": -2})["earliest"]
        if earliest[1] > 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    return {
        "create_time": earliest,
        "log_append_time": list_offsets(ctx, clock, lat, {"earliest": -2, "max": -3}),
    }
