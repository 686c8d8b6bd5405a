"""Produce, fetch, offsets and topic administration."""

from __future__ import annotations

import time
import uuid
from typing import Any

from tests.reference.differential.ctx import Ctx
from tests.reference.differential.framework import scenario
from tests.reference.differential.wire import plain
from txn.batch import build_batch

AREA = "produce-fetch"


def _values(n: int, prefix: str = "v") -> list[str | None]:
    return [f"{prefix}{i}" for i in range(n)]


@scenario(AREA)
def produce_and_fetch(ctx: Ctx) -> Any:
    t = ctx.create_topic("p")
    first = ctx.produce(t, _values(3))
    second = ctx.produce(t, _values(2, "w"), keys=["k0", None])
    return {"first": first, "second": second, "fetch": ctx.fetch(t, 0)}


@scenario(AREA)
def produce_acks_1(ctx: Ctx) -> Any:
    t = ctx.create_topic("p")
    one = ctx.produce(t, _values(2, "w"), acks=1)
    return {"acks1": one, "fetch": ctx.fetch(t, 0)}


@scenario(AREA)
def produce_invalid_acks(ctx: Ctx) -> Any:
    t = ctx.create_topic("p")
    return {"acks2": ctx.produce(t, _values(1), acks=2), "fetch": ctx.fetch(t, 0)}


@scenario(AREA)
def produce_unknown_topic_and_partition(ctx: Ctx) -> Any:
    t = ctx.create_topic("p")
    return {
        "unknown_topic": ctx.produce(ctx.name("nope"), _values(1)),
        "unknown_partition": ctx.produce(t, _values(1), partition=3),
    }


@scenario(AREA)
def produce_corrupt_crc(ctx: Ctx) -> Any:
    t = ctx.create_topic("p")
    batch = bytearray(build_batch([(None, b"x")], timestamp_ms=int(time.time() * 1000)))
    batch[-1] ^= 0xFF
    return {"corrupt": ctx.produce(t, [], batch=bytes(batch)), "fetch": ctx.fetch(t, 0)}


@scenario(AREA)
def produce_too_large_for_topic(ctx: Ctx) -> Any:
    t = ctx.create_topic("p", configs={"max.message.bytes": "200"})
    return {"large": ctx.produce(t, ["x" * 500]), "small": ctx.produce(t, ["y"])}


@scenario(AREA)
def produce_keyless_to_compacted(ctx: Ctx) -> Any:
    t = ctx.create_topic("p", configs={"cleanup.policy": "compact"})
    return {"keyless": ctx.produce(t, ["x"]), "keyed": ctx.produce(t, ["y"], keys=["k"])}


@scenario(AREA)
def idempotent_sequences(ctx: Ctx) -> Any:
    t = ctx.create_topic("p")
    err, pid, epoch = ctx.init_pid()
    out: dict[str, Any] = {"init": err, "epoch": epoch}
    out["seq0"] = ctx.produce(t, _values(3), pid=pid, epoch=epoch, seq=0)
    out["seq3"] = ctx.produce(t, _values(2, "w"), pid=pid, epoch=epoch, seq=3)
    out["duplicate_seq0"] = ctx.produce(t, _values(3), pid=pid, epoch=epoch, seq=0)
    out["duplicate_seq3"] = ctx.produce(t, _values(2, "w"), pid=pid, epoch=epoch, seq=3)
    out["gap_seq9"] = ctx.produce(t, _values(1), pid=pid, epoch=epoch, seq=9)
    out["next_seq5"] = ctx.produce(t, _values(1, "z"), pid=pid, epoch=epoch, seq=5)
    out["fetch"] = ctx.fetch(t, 0)
    return out


@scenario(AREA)
def idempotent_first_sequence_not_zero(ctx: Ctx) -> Any:
    t = ctx.create_topic("p")
    _, pid, epoch = ctx.init_pid()
    return {"seq7": ctx.produce(t, _values(1), pid=pid, epoch=epoch, seq=7)}


@scenario(AREA)
def idempotent_epochs(ctx: Ctx) -> Any:
    t = ctx.create_topic("p")
    _, pid, epoch = ctx.init_pid()
    return {
        "epoch0": ctx.produce(t, _values(2), pid=pid, epoch=epoch, seq=0),
        "epoch1_seq0": ctx.produce(t, _values(1), pid=pid, epoch=epoch + 1, seq=0),
        "back_to_epoch0": ctx.produce(t, _values(1), pid=pid, epoch=epoch, seq=2),
        "epoch2_seq4": ctx.produce(t, _values(1), pid=pid, epoch=epoch + 2, seq=4),
    }


@scenario(AREA)
def fetch_offsets_out_of_range_and_mid_batch(ctx: Ctx) -> Any:
    t = ctx.create_topic("p")
    ctx.produce(t, _values(5))
    ctx.produce(t, _values(2, "w"))
    return {
        "mid_batch": ctx.fetch(t, 2),
        "at_end": ctx.fetch(t, 7),
        "beyond": ctx.fetch(t, 100),
        "negative": ctx.fetch(t, -5),
    }


@scenario(AREA)
def fetch_unknown_topic_id(ctx: Ctx) -> Any:
    ctx.create_topic("p")
    return ctx.fetch("x", 0, topic_id=uuid.uuid4())


@scenario(AREA)
def fetch_unknown_partition(ctx: Ctx) -> Any:
    t = ctx.create_topic("p")
    return ctx.fetch(t, 0, partition=4)


@scenario(AREA)
def fetch_small_max_bytes(ctx: Ctx) -> Any:
    t = ctx.create_topic("p")
    ctx.produce(t, ["a" * 300])
    ctx.produce(t, ["b" * 300])
    return ctx.fetch(t, 0, max_bytes=10)


@scenario(AREA)
def list_offsets_forms(ctx: Ctx) -> Any:
    t = ctx.create_topic("p")
    ctx.produce(t, _values(4))
    return {
        "earliest": ctx.list_offset(t, -2),
        "latest": ctx.list_offset(t, -1),
        "max_timestamp": ctx.list_offset(t, -3),
        "far_future": ctx.list_offset(t, int(time.time() * 1000) + 3_600_000),
        "zero": ctx.list_offset(t, 0),
        "unknown_partition": ctx.list_offset(t, -1, partition=9),
    }


@scenario(AREA)
def delete_records(ctx: Ctx) -> Any:
    t = ctx.create_topic("p")
    ctx.produce(t, _values(3))
    ctx.produce(t, _values(3, "w"))

    def delete(offset: int) -> Any:
        resp = ctx.call(
            21,
            {
                "topics": [{"name": t, "partitions": [{"partition_index": 0, "offset": offset}]}],
                "timeout": 10000,
            },
        )
        return plain(resp.topics[0].partitions[0])

    return {
        "to_4": delete(4),
        "beyond_end": delete(50),
        "backwards": delete(1),
        "earliest": ctx.list_offset(t, -2),
        "fetch_0": ctx.fetch(t, 0),
        "fetch_4": ctx.fetch(t, 4),
        "to_end": delete(-1),
        "earliest_after": ctx.list_offset(t, -2),
    }


def _create(ctx: Ctx, name: str, partitions: int, rf: int = 1, **configs: str) -> Any:
    resp = ctx.call(
        19,
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": rf,
                    "assignments": [],
                    "configs": [
                        {"name": k.replace("_", "."), "value": v} for k, v in configs.items()
                    ],
                }
            ],
            "timeout": 30000,
            "validate_only": False,
        },
    )
    r = resp.topics[0]
    return {"error_code": plain(r.error_code, "error_code"), "partitions": int(r.num_partitions)}


@scenario(AREA)
def create_topics_errors(ctx: Ctx) -> Any:
    t = ctx.create_topic("p")
    return {
        "exists": _create(ctx, t, 1),
        "bad_name": _create(ctx, "bad/name", 1),
        "dot_name": _create(ctx, "..", 1),
        "zero_partitions": _create(ctx, ctx.name("z"), 0),
        "rf3": _create(ctx, ctx.name("rf"), 1, 3),
        "bad_config": _create(ctx, ctx.name("bc"), 1, cleanup_policy="sometimes"),
        "unknown_config": _create(ctx, ctx.name("uc"), 1, no_such_setting="1"),
        "default_partitions": _create(ctx, ctx.name("dp"), -1),
    }


@scenario(AREA)
def create_partitions(ctx: Ctx) -> Any:
    t = ctx.create_topic("p", 2)

    def grow(count: int, name: str | None = None) -> Any:
        resp = ctx.call(
            37,
            {
                "topics": [{"name": name or t, "count": count, "assignments": None}],
                "timeout": 10000,
                "validate_only": False,
            },
        )
        return plain(resp.results[0].error_code, "error_code")

    out = {"same": grow(2), "fewer": grow(1), "more": grow(4), "unknown": grow(3, ctx.name("x"))}
    ctx.wait_topic(t, 4)
    out["produce_p3"] = ctx.produce(t, ["x"], partition=3)
    return out


@scenario(AREA)
def delete_topic(ctx: Ctx) -> Any:
    t = ctx.create_topic("p")
    ctx.produce(t, ["x"])
    resp = ctx.call(20, {"topics": [{"name": t, "topic_id": uuid.UUID(int=0)}], "timeout": 10000})
    again = ctx.call(20, {"topics": [{"name": t, "topic_id": uuid.UUID(int=0)}], "timeout": 10000})
    deadline = time.monotonic() + 10
    while True:
        meta = ctx.metadata([t]).topics[0]
        if int(meta.error_code) != 0 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    return {
        "delete": plain(resp.responses[0].error_code, "error_code"),
        "again": plain(again.responses[0].error_code, "error_code"),
        "metadata": plain(meta.error_code, "error_code"),
        "produce": ctx.produce(t, ["y"]),
    }


@scenario(AREA)
def metadata_unknown_and_auto_create(ctx: Ctx) -> Any:
    unknown = ctx.metadata([ctx.name("none")]).topics[0]
    name = ctx.name("auto")
    ctx.metadata([name], auto_create=True)
    ctx.wait_topic(name, 1)
    return {
        "unknown": plain(unknown.error_code, "error_code"),
        "auto_created": plain(ctx.metadata([name]).topics[0]),
    }


@scenario(AREA)
def metadata_topic_fields(ctx: Ctx) -> Any:
    t = ctx.create_topic("p", 3)
    return plain(ctx.metadata([t]).topics[0])


@scenario(AREA)
def describe_topic_configs(ctx: Ctx) -> Any:
    t = ctx.create_topic("p", configs={"retention.ms": "1234567"})
    resp = ctx.call(
        32,
        {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": t,
                    "configuration_keys": ["retention.ms", "cleanup.policy", "max.message.bytes"],
                }
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    r = resp.results[0]
    return {
        "error_code": plain(r.error_code, "error_code"),
        "configs": sorted(
            [c.name, c.value, int(c.config_source), bool(c.read_only)] for c in r.configs
        ),
    }


@scenario(AREA)
def alter_topic_configs(ctx: Ctx) -> Any:
    t = ctx.create_topic("p")
    return {
        "set": ctx.alter_configs(2, t, {"retention.ms": "5000"}),
        "bad_value": ctx.alter_configs(2, t, {"retention.ms": "soon"}),
        "unknown_name": ctx.alter_configs(2, t, {"no.such.config": "1"}),
        "unknown_topic": ctx.alter_configs(2, ctx.name("x"), {"retention.ms": "5000"}),
        "delete": ctx.alter_configs(2, t, {"retention.ms": None}),
    }


def _fetched_offsets(fetched: Any) -> list[int]:
    return [r[0] for r in fetched.get("records", [])]


def _fetch_loop(ctx: Ctx, topic: str, *, max_bytes: int = 1 << 20, isolation: int = 0) -> Any:
    """A consumer's reads from offset 0 to the end: the offsets each Fetch returned."""
    out: list[list[int]] = []
    offset = 0
    while len(out) < 20:
        got = _fetched_offsets(ctx.fetch(topic, offset, max_bytes=max_bytes, isolation=isolation))
        if not got:
            return out
        out.append(got)
        offset = got[-1] + 1
    return out


#: Small segments through Kafka's testing override (``segment.bytes`` is at least 1 MiB):
#: two of the batches below fit in one segment, a third rolls a new one.
_SMALL_SEGMENTS = {"internal.segment.bytes": "400"}


def _batch(values: list[str], timestamp_ms: int | None = None) -> bytes:
    now = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    return build_batch([(None, v.encode()) for v in values], timestamp_ms=now)


@scenario(AREA)
def fetch_stops_at_segment_end(ctx: Ctx) -> Any:
    t = ctx.create_topic("seg", configs=_SMALL_SEGMENTS)
    produced = [ctx.produce(t, [], batch=_batch([f"{i}" * 120, f"{i}"])) for i in range(5)]
    return {
        "produced": produced,
        "from_0": _fetched_offsets(ctx.fetch(t, 0)),
        "from_1": _fetched_offsets(ctx.fetch(t, 1)),
        "from_2": _fetched_offsets(ctx.fetch(t, 2)),
        "from_5": _fetched_offsets(ctx.fetch(t, 5)),
        "from_8": _fetched_offsets(ctx.fetch(t, 8)),
        "one_byte": _fetched_offsets(ctx.fetch(t, 4, max_bytes=1)),
        "loop": _fetch_loop(ctx, t),
        "loop_read_committed": _fetch_loop(ctx, t, isolation=1),
        "loop_small_budget": _fetch_loop(ctx, t, max_bytes=200),
    }


@scenario(AREA)
def fetch_first_batch_larger_than_max_bytes(ctx: Ctx) -> Any:
    """The first batch comes whole even when larger than the budget, and a read still ends
    with its segment (segments of 1200 bytes: the 970-byte batch shares the first)."""
    t = ctx.create_topic("seg", configs={"internal.segment.bytes": "1200"})
    values = ("a", "b" * 900, "c", "d" * 200, "e")
    produced = [ctx.produce(t, [], batch=_batch([v])) for v in values]
    return {
        "produced": [p["base_offset"] for p in produced],
        "from_0": _fetched_offsets(ctx.fetch(t, 0)),
        "from_0_100_bytes": _fetched_offsets(ctx.fetch(t, 0, max_bytes=100)),
        "big_1_byte": _fetched_offsets(ctx.fetch(t, 1, max_bytes=1)),
        "big_1000_bytes": _fetched_offsets(ctx.fetch(t, 1, max_bytes=1000)),
        "big": _fetched_offsets(ctx.fetch(t, 1)),
        "loop": _fetch_loop(ctx, t),
        "loop_1_byte": _fetch_loop(ctx, t, max_bytes=1),
    }


@scenario(AREA)
def produce_batch_larger_than_segment(ctx: Ctx) -> Any:
    """A record set larger than the segment size is refused (RECORD_LIST_TOO_LARGE); one of
    exactly the segment size is taken."""
    exact = len(_batch(["x" * 300]))
    t = ctx.create_topic("seg", configs={"internal.segment.bytes": str(exact)})
    return {
        "small": ctx.produce(t, [], batch=_batch(["a"])),
        "too_large": ctx.produce(t, [], batch=_batch(["b" * 301])),
        "exact": ctx.produce(t, [], batch=_batch(["x" * 300])),
        "loop": _fetch_loop(ctx, t),
    }


@scenario(AREA)
def fetch_stops_at_time_rolled_segment(ctx: Ctx) -> Any:
    """``segment.ms`` rolls a segment when a batch is that much newer than the segment's
    first; a Fetch from before the roll ends at it."""
    t = ctx.create_topic("segms", configs={"segment.ms": "60000"})
    base = int(time.time() * 1000) - 600_000
    for i, ts in enumerate((base, base + 1000, base + 120_000, base + 121_000)):
        ctx.produce(t, [], batch=_batch([f"r{i}"], ts))
    return {"from_0": _fetched_offsets(ctx.fetch(t, 0)), "loop": _fetch_loop(ctx, t)}
