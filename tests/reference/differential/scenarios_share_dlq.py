"""Share-group dead-letter queues (KIP-1191, ``share.version`` 2): what a share group writes
to its ``errors.deadletterqueue.topic.name`` topic when a record is rejected or reaches the
delivery count limit, the group config's checks and the finalized feature level."""

from __future__ import annotations

import time
from typing import Any

from producer.protocol.records import decode_batch, split_batches
from tests.reference.differential.ctx import Ctx
from tests.reference.differential.framework import scenario
from tests.reference.differential.scenarios_config_describe import describe
from tests.reference.differential.share import ACCEPT, REJECT, RELEASE, ShareMember, share_group
from tests.reference.differential.wire import plain

AREA = "share"
GROUP_ENABLE = "errors.deadletterqueue.group.enable"
PREFIX = "errors.deadletterqueue.topic.name.prefix"


def _dlq_topic(
    ctx: Ctx, partitions: int = 1, *, enabled: bool = True, extra: dict[str, str] | None = None
) -> str:
    """A topic named with the broker's default DLQ prefix ``dlq.``."""
    name = "dlq." + ctx.name("q")
    configs = {GROUP_ENABLE: "true"} if enabled else {}
    configs.update(extra or {})
    err = ctx.create_topic_raw(name, partitions, configs)
    if err != "NONE":
        msg = f"could not create {name}: {err}"
        raise RuntimeError(msg)
    ctx.wait_topic(name, partitions)
    return name


def _raw_records(ctx: Ctx, topic: str, partition: int) -> bytes:
    resp = ctx._fetch_response(topic, 0, partition, 0, 0, 1 << 20, None)
    return bytes(resp.responses[0].partitions[0].records or b"")


def _letters(ctx: Ctx, topic: str, want: int, partition: int = 0, timeout_s: float = 15.0) -> Any:
    """Wait for ``want`` dead letters in ``topic``-``partition`` (the write is asynchronous)."""
    deadline = time.monotonic() + timeout_s
    while True:
        raw = _raw_records(ctx, topic, partition)
        letters: list[Any] = []
        for pos, header in split_batches(raw) if raw else []:
            batch = decode_batch(raw, pos, header)
            letters += [
                {
                    "offset": r.offset,
                    "key": plain(r.key),
                    "value": plain(r.value),
                    "headers": [[k, plain(v)] for k, v in r.headers],
                    "producer_id_set": header.producer_id >= 0,
                }
                for r in batch.records
            ]
        if len(letters) >= want or time.monotonic() > deadline:
            return letters
        time.sleep(0.2)


def _member(
    ctx: Ctx,
    configs: dict[str, str | None],
    *,
    partitions: int = 1,
    records: int = 3,
    prefix: str = "s",
    value_bytes: int = 0,
) -> tuple[str, str, ShareMember, list[list[int]]]:
    t = ctx.create_topic(prefix, partitions)
    for p in range(partitions):
        ctx.produce(
            t,
            [f"v{i}".ljust(value_bytes, "x") for i in range(records)],
            partition=p,
            keys=[f"k{i}" for i in range(records)],
        )
    g = share_group(ctx, f"g{prefix}")
    err = ctx.group_config(g, configs)
    if err != "NONE":
        msg = f"group config: {err}"
        raise RuntimeError(msg)
    m = ShareMember(ctx, g, [t])
    m.join(partitions)
    got = m.fetch_until(records * partitions, partitions=tuple(range(partitions)))
    return t, g, m, got


def _rejected(ctx: Ctx, *, copy: bool) -> Any:
    dlq = _dlq_topic(ctx)
    configs: dict[str, str | None] = {"errors.deadletterqueue.topic.name": dlq}
    if copy:
        configs["errors.deadletterqueue.copy.record.enable"] = "true"
    t, _, m, got = _member(ctx, configs)
    ack = m.acknowledge({(t, 0): [(0, 1, [REJECT]), (2, 2, [ACCEPT])]})
    return {"got": got, "ack": ack, "dead_letters": _letters(ctx, dlq, 2)}


@scenario(AREA)
def dlq_reject_headers_only(ctx: Ctx) -> Any:
    """REJECTed records land in the group's DLQ topic, one per offset, with Kafka's headers
    and no key or value (copy off, the default)."""
    return _rejected(ctx, copy=False)


@scenario(AREA)
def dlq_reject_copy_record(ctx: Ctx) -> Any:
    """``errors.deadletterqueue.copy.record.enable=true``: the dead letters carry the
    original records' keys and values."""
    return _rejected(ctx, copy=True)


@scenario(AREA)
def dlq_delivery_limit(ctx: Ctx) -> Any:
    """Records released at the delivery count limit (2) land in the DLQ with their delivery
    count and the cause "delivery count exceeded"."""
    dlq = _dlq_topic(ctx)
    configs: dict[str, str | None] = {
        "errors.deadletterqueue.topic.name": dlq,
        "share.delivery.count.limit": "2",
    }
    t, _, m, got = _member(ctx, configs, records=2)
    first = m.fetch({(t, 0): [(0, 1, [RELEASE])]}, max_wait_ms=100)
    again = m.fetch_until(2) if not first["partitions"][0].get("acquired_records") else []
    last = m.acknowledge({(t, 0): [(0, 1, [RELEASE])]})
    return {
        "got": got,
        "first": first,
        "again": again,
        "last": last,
        "dead_letters": _letters(ctx, dlq, 2),
    }


@scenario(AREA)
def dlq_partition_modulo(ctx: Ctx) -> Any:
    """A record of source partition 2 goes to DLQ partition 2 mod 2 = 0."""
    dlq = _dlq_topic(ctx, 2)
    t, _, m, _got = _member(
        ctx, {"errors.deadletterqueue.topic.name": dlq}, partitions=3, records=1
    )
    acks = {(t, p): [(0, 0, [REJECT if p == 2 else ACCEPT])] for p in range(3)}
    ack = m.acknowledge(acks)
    return {
        "ack": ack,
        "partition_0": _letters(ctx, dlq, 1, 0),
        "partition_1": _letters(ctx, dlq, 0, 1, timeout_s=1),
    }


@scenario(AREA)
def dlq_topic_checks(ctx: Ctx) -> Any:
    """A group DLQ topic name starting with ``__`` is refused by the group config; one
    without ``errors.deadletterqueue.group.enable`` on the topic, or without the broker's
    ``dlq.`` prefix, or missing (auto create off by default) gets nothing."""
    g = share_group(ctx)
    out: dict[str, Any] = {
        "internal": ctx.group_config(g, {"errors.deadletterqueue.topic.name": "__x"}),
    }
    off = _dlq_topic(ctx, enabled=False)
    unprefixed = ctx.create_topic("np", 1, {GROUP_ENABLE: "true"})
    missing = "dlq." + ctx.name("missing")
    for label, dlq in (("not_enabled", off), ("no_prefix", unprefixed), ("missing", missing)):
        configs: dict[str, str | None] = {"errors.deadletterqueue.topic.name": dlq}
        t, _, m, _got = _member(ctx, configs, records=1, prefix=label)
        out[label] = m.acknowledge({(t, 0): [(0, 0, [REJECT])]})
        time.sleep(2)
        exists = plain(ctx.metadata([dlq]).topics[0].error_code, "error_code")
        out[f"{label}_topic"] = exists
        if exists == "NONE":
            out[f"{label}_letters"] = _letters(ctx, dlq, 0, timeout_s=0)
    return out


def _batches(ctx: Ctx, topic: str, want: int, timeout_s: float = 15.0) -> list[list[int]]:
    """The offsets of each batch of ``topic``-0 once it holds ``want`` records."""
    deadline = time.monotonic() + timeout_s
    while True:
        raw = _raw_records(ctx, topic, 0)
        batches = [
            [r.offset for r in decode_batch(raw, pos, header).records]
            for pos, header in (split_batches(raw) if raw else [])
        ]
        if sum(map(len, batches)) >= want or time.monotonic() > deadline:
            return batches
        time.sleep(0.2)


@scenario(AREA)
def dlq_batches_split_at_max_message_bytes(ctx: Ctx) -> Any:
    """Three rejected records whose dead letters (copies of 300-byte values) are about 470
    bytes each, bound for a DLQ topic with ``max.message.bytes=1200``: written as two
    batches, of two dead letters and one."""
    dlq = _dlq_topic(ctx, extra={"max.message.bytes": "1200"})
    configs: dict[str, str | None] = {
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.copy.record.enable": "true",
    }
    t, _, m, got = _member(ctx, configs, value_bytes=300)
    ack = m.acknowledge({(t, 0): [(0, 2, [REJECT])]})
    return {"got": got, "ack": ack, "batches": _batches(ctx, dlq, 3)}


BROKER = 4
SET, DELETE = 0, 1
DYNAMIC = ["errors.deadletterqueue.auto.create.topics.enable", PREFIX]


def _alter_broker(
    ctx: Ctx, resource: str, ops: list[tuple[str, int, str | None]], *, validate: bool
) -> Any:
    configs = [{"name": n, "config_operation": o, "value": v} for n, o, v in ops]
    resp = ctx.call(
        44,
        {
            "resources": [{"resource_type": BROKER, "resource_name": resource, "configs": configs}],
            "validate_only": validate,
        },
    )
    r = resp.responses[0]
    return {"error": plain(r.error_code, "error_code"), "message": r.error_message}


@scenario(AREA, exclusive=True)
def dlq_dynamic_broker_configs(ctx: Ctx) -> Any:
    """``errors.deadletterqueue.auto.create.topics.enable`` and
    ``errors.deadletterqueue.topic.name.prefix`` are dynamic broker configs: described with
    their sources, checked, set on the cluster default (a group's DLQ topic without the
    ``dlq.`` prefix is then created and written) and on the broker, deleted again."""

    def state() -> Any:
        time.sleep(1)  # Kafka applies an alter to its metadata after answering it
        return {
            "broker": describe(ctx, BROKER, "1", DYNAMIC, documentation=False),
            "cluster default": describe(ctx, BROKER, "", DYNAMIC, documentation=False),
        }

    out: dict[str, Any] = {"before": state()}
    out["bad boolean"] = _alter_broker(
        ctx, "", [("errors.deadletterqueue.auto.create.topics.enable", SET, "x")], validate=True
    )
    cluster = [("errors.deadletterqueue.auto.create.topics.enable", SET, "true"), (PREFIX, SET, "")]
    try:
        out["set cluster"] = _alter_broker(ctx, "", cluster, validate=False)
        out["after cluster"] = state()
        for label, dlq in (("prefixed", "dlq." + ctx.name("auto")), ("free", ctx.name("free"))):
            t, _, m, _got = _member(
                ctx, {"errors.deadletterqueue.topic.name": dlq}, records=1, prefix=f"src-{label}"
            )
            out[f"{label} ack"] = m.acknowledge({(t, 0): [(0, 0, [REJECT])]})
            exists = "UNKNOWN_TOPIC_OR_PARTITION"
            deadline = time.monotonic() + 30  # Kafka's writer creates the topic, then retries
            while exists != "NONE" and time.monotonic() < deadline:
                time.sleep(0.5)
                exists = plain(ctx.metadata([dlq]).topics[0].error_code, "error_code")
            out[f"{label} topic"] = exists
            if exists == "NONE":
                letters = _letters(ctx, dlq, 1, timeout_s=30)
                out[f"{label} letters"] = [(d["offset"], d["value"]) for d in letters]
        out["set broker"] = _alter_broker(ctx, "1", [(PREFIX, SET, "b.")], validate=False)
        out["after broker"] = state()
    finally:
        out["delete broker"] = _alter_broker(ctx, "1", [(PREFIX, DELETE, None)], validate=False)
        out["delete cluster"] = _alter_broker(
            ctx, "", [(n, DELETE, None) for n, _o, _v in cluster], validate=False
        )
    out["after delete"] = state()
    return out


@scenario(AREA)
def features_share_version(ctx: Ctx) -> Any:
    """ApiVersions v4: the finalized ``share.version`` (2 on Kafka 4.4 by default)."""
    resp = ctx.call(18, {"client_software_name": "d", "client_software_version": "1"}, 4)
    finalized = {str(f.name): int(f.max_version_level) for f in resp.finalized_features}
    return {"share.version": finalized.get("share.version")}
