"""Topic configs: every value Kafka's validators refuse or accept, on CreateTopics (validate
only), IncrementalAlterConfigs with its four operations, and the legacy AlterConfigs.

Each case is one config and one value; the observation is the error code and message the
broker answers (Kafka's ``ConfigException`` texts come back in the message).  Nothing is
created: CreateTopics runs with ``validate_only``, alters run against one plain topic.
"""

from __future__ import annotations

import struct
import time
from typing import Any

from crc32c import crc32c

from producer.protocol.records import decode_batch, split_batches
from tests.reference.differential.ctx import TOPIC_RESOURCE, Ctx
from tests.reference.differential.framework import scenario
from tests.reference.differential.scenarios_config_describe import once_applied
from tests.reference.differential.wire import plain
from txn.batch import HEADER_SIZE, build_batch, parse_header
from txn.codec import uvarint
from txn.compression import compress, decompress

AREA = "configs"

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

#: (config, value): numbers that are not numbers or out of their type, ranges, enums, lists,
#: booleans, doubles; and the smallest and largest values Kafka accepts.
CASES: tuple[tuple[str, str], ...] = (
    ("retention.ms", "soon"),
    ("retention.ms", "-2"),
    ("retention.ms", "-1"),
    ("retention.ms", "9223372036854775808"),
    ("retention.ms", " 1000 "),
    ("retention.ms", ""),
    ("retention.bytes", "-5"),
    ("segment.bytes", "13"),
    ("segment.bytes", "1048575"),
    ("segment.bytes", "1048576"),
    ("segment.bytes", "2147483648"),
    ("segment.ms", "0"),
    ("segment.index.bytes", "3"),
    ("segment.index.bytes", "4"),
    ("segment.jitter.ms", "-1"),
    ("max.message.bytes", "-1"),
    ("max.message.bytes", "0"),
    ("index.interval.bytes", "-1"),
    ("flush.messages", "0"),
    ("flush.ms", "-1"),
    ("delete.retention.ms", "-1"),
    ("file.delete.delay.ms", "-1"),
    ("min.compaction.lag.ms", "-1"),
    ("max.compaction.lag.ms", "0"),
    ("min.cleanable.dirty.ratio", "1.5"),
    ("min.cleanable.dirty.ratio", "-0.1"),
    ("min.cleanable.dirty.ratio", "half"),
    ("min.cleanable.dirty.ratio", "1"),
    ("min.insync.replicas", "0"),
    ("min.insync.replicas", "2"),
    ("compression.type", "bogus"),
    ("compression.type", "ZSTD"),
    ("compression.type", "uncompressed"),
    ("compression.type", "producer"),
    ("compression.gzip.level", "10"),
    ("compression.gzip.level", "-1"),
    ("compression.gzip.level", "0"),
    ("compression.lz4.level", "18"),
    ("compression.lz4.level", "0"),
    ("compression.zstd.level", "23"),
    ("compression.zstd.level", "-131073"),
    ("cleanup.policy", "sometimes"),
    ("cleanup.policy", "compact,delete"),
    ("cleanup.policy", "Compact"),
    ("cleanup.policy", ""),
    ("cleanup.policy", "compact,compact"),
    ("unclean.leader.election.enable", "maybe"),
    ("unclean.leader.election.enable", "TRUE"),
    ("unclean.leader.election.enable", " true"),
    ("preallocate", "yes"),
    ("message.timestamp.type", "Whenever"),
    ("message.timestamp.type", "LogAppendTime"),
    ("message.timestamp.type", "logappendtime"),
    ("message.timestamp.before.max.ms", "-1"),
    ("message.timestamp.after.max.ms", "-1"),
    ("local.retention.ms", "-3"),
    ("local.retention.bytes", "-3"),
    ("remote.storage.enable", "perhaps"),
    ("leader.replication.throttled.replicas", "x"),
    ("leader.replication.throttled.replicas", "0:1"),
    ("leader.replication.throttled.replicas", "*"),
    ("follower.replication.throttled.replicas", "0:x"),
    ("internal.segment.bytes", "300"),
    ("internal.segment.bytes", "x"),
    ("log.segment.bytes", "300"),
    ("max.decompressed.message.bytes", "0"),
    ("max.decompressed.message.bytes", "2147483647"),
    ("remote.copy.lag.ms", "-2"),
    ("remote.copy.lag.bytes", "-1"),
    ("errors.deadletterqueue.group.enable", "x"),
)


def _create_validate_only(ctx: Ctx, configs: list[tuple[str, str]]) -> list[Any]:
    topics = [
        {
            "name": ctx.name(f"v{i}"),
            "num_partitions": 1,
            "replication_factor": 1,
            "assignments": [],
            "configs": [{"name": name, "value": value}],
        }
        for i, (name, value) in enumerate(configs)
    ]
    resp = ctx.call(19, {"topics": topics, "timeout": 30000, "validate_only": True})
    by_name = {t.name: t for t in resp.topics}
    return [
        {
            "error": plain(by_name[t["name"]].error_code, "error_code"),
            "message": by_name[t["name"]].error_message,
        }
        for t in topics
    ]


@scenario(AREA)
def create_with_each_value(ctx: Ctx) -> Any:
    answers = _create_validate_only(ctx, list(CASES))
    return {
        f"{name}={value!r}": answer for (name, value), answer in zip(CASES, answers, strict=True)
    }


@scenario(AREA)
def create_with_conflicting_compaction_lags(ctx: Ctx) -> Any:
    name = ctx.name("lag")
    configs = [
        {"name": "min.compaction.lag.ms", "value": "5000"},
        {"name": "max.compaction.lag.ms", "value": "1000"},
    ]
    topic = {
        "name": name,
        "num_partitions": 1,
        "replication_factor": 1,
        "assignments": [],
        "configs": configs,
    }
    resp = ctx.call(19, {"topics": [topic], "timeout": 30000, "validate_only": True})
    t = resp.topics[0]
    return {"error": plain(t.error_code, "error_code"), "message": t.error_message}


def _incremental(
    ctx: Ctx, topic: str, ops: list[tuple[str, int, str | None]], validate_only: bool = True
) -> Any:
    resp = ctx.call(
        44,
        {
            "resources": [
                {
                    "resource_type": TOPIC_RESOURCE,
                    "resource_name": topic,
                    "configs": [
                        {"name": n, "config_operation": op, "value": v} for n, op, v in ops
                    ],
                }
            ],
            "validate_only": validate_only,
        },
    )
    r = resp.responses[0]
    return {"error": plain(r.error_code, "error_code"), "message": r.error_message}


@scenario(AREA)
def incremental_alter_each_value(ctx: Ctx) -> Any:
    topic = ctx.create_topic("ia")
    return {
        f"{name}={value!r}": _incremental(ctx, topic, [(name, SET, value)]) for name, value in CASES
    }


@scenario(AREA)
def incremental_alter_operations(ctx: Ctx) -> Any:
    topic = ctx.create_topic("ops")
    return {
        "append to a list": _incremental(ctx, topic, [("cleanup.policy", APPEND, "compact")]),
        "append a bad item": _incremental(ctx, topic, [("cleanup.policy", APPEND, "never")]),
        "append to a number": _incremental(ctx, topic, [("retention.ms", APPEND, "5")]),
        "subtract from a list": _incremental(ctx, topic, [("cleanup.policy", SUBTRACT, "delete")]),
        "subtract from a number": _incremental(ctx, topic, [("retention.ms", SUBTRACT, "5")]),
        "delete a set config": _incremental(ctx, topic, [("retention.ms", DELETE, None)]),
        "delete an unknown config": _incremental(ctx, topic, [("no.such", DELETE, None)]),
        "set null": _incremental(ctx, topic, [("retention.ms", SET, None)]),
        "same name twice": _incremental(
            ctx, topic, [("retention.ms", SET, "1000"), ("retention.ms", SET, "2000")]
        ),
        "unknown operation": _incremental(ctx, topic, [("retention.ms", 7, "1000")]),
        "lags conflict": _incremental(
            ctx,
            topic,
            [("min.compaction.lag.ms", SET, "5000"), ("max.compaction.lag.ms", SET, "1000")],
        ),
    }


@scenario(AREA)
def legacy_alter_configs(ctx: Ctx) -> Any:
    topic = ctx.create_topic("legacy")

    def alter(configs: dict[str, str | None]) -> Any:
        resp = ctx.call(
            33,
            {
                "resources": [
                    {
                        "resource_type": TOPIC_RESOURCE,
                        "resource_name": topic,
                        "configs": [{"name": k, "value": v} for k, v in configs.items()],
                    }
                ],
                "validate_only": True,
            },
            version=2,
        )
        r = resp.responses[0]
        return {"error": plain(r.error_code, "error_code"), "message": r.error_message}

    return {
        "good": alter({"retention.ms": "5000"}),
        "bad number": alter({"retention.ms": "soon"}),
        "bad enum": alter({"compression.type": "bogus"}),
        "unknown": alter({"no.such": "1"}),
        "below min": alter({"min.insync.replicas": "0"}),
    }


# -- compression.type: the codec a topic stores batches with -------------------------------

BROKER = 4  # the BROKER resource type; "" is the cluster default

#: Kafka's codec ids, as a batch's attributes carry them.
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
TOPIC_TYPES = ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")


def _stored(ctx: Ctx, topic: str) -> list[Any]:
    """Each stored batch: base offset, codec, timestamp type, count, producer fields and
    records (offset, timestamp, key, value), read from a raw Fetch."""
    data = ctx.fetch_raw(topic)
    out: list[Any] = []
    for pos, header in split_batches(data):
        batch = decode_batch(data, pos, header)
        out.append(
            {
                "base_offset": header.base_offset,
                "codec": header.attributes & 0x07,
                "log_append_time": bool(header.attributes & 0x08),
                "transactional": bool(header.attributes & 0x10),
                "records_count": header.records_count,
                "producer": [header.producer_id >= 0, header.producer_epoch, header.base_sequence],
                "timestamps": [header.base_timestamp - _T0, header.max_timestamp - _T0],
                "records": [
                    [r.offset, r.timestamp - _T0, r.key, r.value, list(r.headers)]
                    for r in batch.records
                ],
            }
        )
    return out


_T0 = int(time.time() * 1000) - 60_000


def _codec_batch(codec: str, values: list[str], **kw: Any) -> bytes:
    return build_batch(
        [(f"k{i}".encode(), v.encode()) for i, v in enumerate(values)],
        timestamp_ms=_T0,
        timestamps=[_T0 + 10 * i for i in range(len(values))],
        compression=CODECS[codec],
        headers=[[("h", v.encode())] for v in values],
        **kw,
    )


@scenario(AREA)
def compression_type_recompresses_batches(ctx: Ctx) -> Any:
    """Every topic compression.type against a batch of every codec: the stored codec."""
    out: dict[str, Any] = {}
    for topic_type in TOPIC_TYPES:
        t = ctx.create_topic(f"ct-{topic_type}", configs={"compression.type": topic_type})
        produced = [
            ctx.produce(t, [], batch=_codec_batch(codec, [f"{codec}-{i}" * 5 for i in range(3)]))
            for codec in CODECS
        ]
        out[topic_type] = {
            "produced": [[p["error_code"], p["base_offset"]] for p in produced],
            "stored": _stored(ctx, t),
        }
    return out


@scenario(AREA)
def compression_type_keeps_producer_state(ctx: Ctx) -> Any:
    """An idempotent batch recompressed keeps its producer id, epoch and sequence: the retry
    of the same batch is answered as a duplicate; a LogAppendTime topic stamps it too."""
    t = ctx.create_topic(
        "ct-idem", configs={"compression.type": "gzip", "message.timestamp.type": "LogAppendTime"}
    )
    _err, pid, epoch = ctx.init_pid()
    first = _codec_batch("lz4", ["a", "b"], producer_id=pid, producer_epoch=epoch, base_sequence=0)
    second = _codec_batch("none", ["c"], producer_id=pid, producer_epoch=epoch, base_sequence=2)
    out = {
        "first": ctx.produce(t, [], batch=first)["base_offset"],
        "retry": ctx.produce(t, [], batch=first)["base_offset"],
        "second": ctx.produce(t, [], batch=second)["base_offset"],
    }
    batches = _stored(ctx, t)
    for b in batches:  # LogAppendTime: the append time, not comparable across brokers
        b["timestamps"][1] = "<append time>"
        for r in b["records"]:
            r[1] = "<append time>"
    return {**out, "stored": batches}


def _applied(ctx: Ctx, topic: str, codec: str) -> None:
    """Wait until the topic's compression.type reads ``codec``: Kafka applies an alter to its
    metadata after answering it."""
    once_applied(
        ctx, TOPIC_RESOURCE, topic, ["compression.type"], lambda v: v["compression.type"] == codec
    )


@scenario(AREA)
def compression_type_change_applies_to_next_append(ctx: Ctx) -> Any:
    t = ctx.create_topic("ct-alter")
    ctx.produce(t, [], batch=_codec_batch("snappy", ["one"]))
    altered = ctx.alter_configs(TOPIC_RESOURCE, t, {"compression.type": "zstd"})
    _applied(ctx, t, "zstd")
    ctx.produce(t, [], batch=_codec_batch("snappy", ["two"]))
    back = ctx.alter_configs(TOPIC_RESOURCE, t, {"compression.type": None})
    _applied(ctx, t, "producer")
    ctx.produce(t, [], batch=_codec_batch("gzip", ["three"]))
    return {"altered": altered, "back": back, "stored": _stored(ctx, t)}


@scenario(AREA, exclusive=True)
def compression_type_broker_default_applies(ctx: Ctx) -> Any:
    """A topic without compression.type takes the broker's, set as the cluster default at
    run time (and back to producer once deleted)."""
    t = ctx.create_topic("ct-broker")
    try:
        altered = ctx.alter_configs(BROKER, "", {"compression.type": "gzip"})
        _applied(ctx, t, "gzip")
        ctx.produce(t, [], batch=_codec_batch("snappy", ["one"]))
    finally:
        back = ctx.alter_configs(BROKER, "", {"compression.type": None})
    _applied(ctx, t, "producer")
    ctx.produce(t, [], batch=_codec_batch("lz4", ["two"]))
    return {"altered": altered, "back": back, "codecs": [b["codec"] for b in _stored(ctx, t)]}


@scenario(AREA)
def compression_type_uncompressed_too_large(ctx: Ctx) -> Any:
    """A batch that fits max.message.bytes compressed but not once the topic stores it
    uncompressed is refused (Kafka: RECORD_TOO_LARGE after recompression)."""
    t = ctx.create_topic(
        "ct-big", configs={"compression.type": "uncompressed", "max.message.bytes": "2000"}
    )
    small = ctx.produce(t, [], batch=_codec_batch("gzip", ["z" * 400]))
    big = ctx.produce(t, [], batch=_codec_batch("gzip", ["z" * 5000]))
    return {"small": small, "big": big, "stored": [b["codec"] for b in _stored(ctx, t)]}


def _zigzag(value: int) -> bytes:
    return uvarint((value << 1) ^ (value >> 63))


def _unusual_batch(codec: str) -> bytes:
    """Three records as no Kafka producer writes them: record attributes 1, timestamp deltas
    500, 501, 502 from a base timestamp below the first record's; uncompressed or ``codec``."""
    section = b""
    for index in range(3):
        value = f"odd-{index}".encode()
        body = (
            b"\x01"
            + _zigzag(500 + index)
            + _zigzag(index)
            + _zigzag(1)
            + b"k"
            + _zigzag(len(value))
            + value
            + _zigzag(1)  # one header
            + _zigzag(1)
            + b"h"
            + _zigzag(1)
            + b"v"
        )
        section += _zigzag(len(body)) + body
    if codec != "none":
        section = _compress(codec, section)
    after = struct.pack(">hiqqqhii", CODECS[codec], 2, _T0 - 500, _T0 + 2, -1, -1, -1, 3)
    after += section
    head = struct.pack(">qiib", 0, HEADER_SIZE - 12 + len(section), -1, 2)
    return head + struct.pack(">I", crc32c(after)) + after


def _compress(codec: str, section: bytes) -> bytes:
    return compress(CODECS[codec], section)


def _records_section(ctx: Ctx, topic: str) -> list[str]:
    """Each stored batch's records as bytes (decompressed): how the broker wrote them."""
    data = ctx.fetch_raw(topic)
    out = []
    for pos, header in split_batches(data):
        raw = data[pos : pos + header.size]
        codec = parse_header(raw).attributes & 0x07
        section = raw[HEADER_SIZE:]
        out.append((decompress(codec, section) if codec else section).hex())
    return out


@scenario(AREA)
def compression_type_rewrites_records(ctx: Ctx) -> Any:
    """A batch the broker compresses again is built again (Kafka's LogValidator): record
    attributes 0, deltas from the first record's timestamp; a batch kept as produced keeps
    its records' bytes.  The topic's compression level changes no record."""
    out: dict[str, Any] = {}
    for topic_type, level in (("gzip", "1"), ("zstd", None), ("producer", None), ("lz4", "12")):
        configs = {"compression.type": topic_type}
        if level is not None:
            configs[f"compression.{topic_type}.level"] = level
        t = ctx.create_topic(f"ct-rw-{topic_type}", configs=configs)
        produced = [ctx.produce(t, [], batch=_unusual_batch(c)) for c in ("none", "snappy")]
        out[topic_type] = {
            "produced": [p["error_code"] for p in produced],
            "stored": _stored(ctx, t),
            "records": _records_section(ctx, t),
        }
    return out
