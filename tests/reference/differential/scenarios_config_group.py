"""Group configs (KIP-932 share groups): DescribeConfigs with defaults, sources and
synonyms, and IncrementalAlterConfigs checked against the broker's bounds in Kafka's words.

The suite's settings lower ``group.share.min.session.timeout.ms`` (1000) and
``group.share.min.heartbeat.interval.ms`` (500) on both brokers.  The streams-group configs
(KIP-1071) are checked and described too, though sharetxn serves no streams groups.
"""

from __future__ import annotations

from typing import Any

from tests.reference.differential.ctx import GROUP_RESOURCE, Ctx
from tests.reference.differential.framework import scenario
from tests.reference.differential.scenarios_config_describe import describe, once_applied
from tests.reference.differential.wire import plain

AREA = "configs"
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

SHARE_KEYS = [
    "share.auto.offset.reset",
    "share.delivery.count.limit",
    "share.heartbeat.interval.ms",
    "share.isolation.level",
    "share.record.lock.duration.ms",
    "share.session.timeout.ms",
]
#: Kafka 4.4's other group configs but the streams ones (and two internal ones, listed only
#: once set).
KAFKA44_KEYS = [
    "consumer.assignment.interval.ms",
    "consumer.assignor.offload.enable",
    "consumer.heartbeat.interval.ms",
    "consumer.session.timeout.ms",
    "errors.deadletterqueue.copy.record.enable",
    "errors.deadletterqueue.topic.name",
    "share.assignment.interval.ms",
    "share.assignor.offload.enable",
    "share.partition.max.record.locks",
    "share.renew.acknowledge.enable",
]

CASES: tuple[tuple[str, str], ...] = (
    ("share.session.timeout.ms", "500"),
    ("share.session.timeout.ms", "70000"),
    ("share.session.timeout.ms", "x"),
    ("share.session.timeout.ms", "3000000000"),
    ("share.session.timeout.ms", "-1"),
    ("share.session.timeout.ms", " 2000 "),
    ("share.heartbeat.interval.ms", "100"),
    ("share.heartbeat.interval.ms", "20000"),
    ("share.record.lock.duration.ms", "10"),
    ("share.record.lock.duration.ms", "70000"),
    ("share.delivery.count.limit", "1"),
    ("share.delivery.count.limit", "11"),
    ("share.delivery.count.limit", "10"),
    ("share.auto.offset.reset", "sometimes"),
    ("share.auto.offset.reset", "by_duration:xx"),
    ("share.auto.offset.reset", "by_duration:PT1H"),
    ("share.auto.offset.reset", "Earliest"),
    ("share.isolation.level", "sometimes"),
    ("share.isolation.level", "read_committed"),
    ("share.nope", "1"),
    ("share.partition.max.record.locks", "99"),
    ("share.partition.max.record.locks", "4001"),
    ("share.partition.max.record.locks", "x"),
    ("share.partition.max.record.locks", "150"),
    ("share.renew.acknowledge.enable", "yes"),
    ("share.renew.acknowledge.enable", "FALSE"),
    ("share.assignment.interval.ms", "-1"),
    ("share.assignment.interval.ms", "15001"),
    ("consumer.assignment.interval.ms", "0"),
    ("errors.deadletterqueue.topic.name", "dlq"),
    ("errors.deadletterqueue.copy.record.enable", "1"),
    ("errors.deadletterqueue.copy.record.enable", "true"),
    ("consumer.assignor.offload.enable", "maybe"),
    ("share.assignor.offload.enable", "false"),
)


def _alter(ctx: Ctx, group: str, ops: list[tuple[str, int, str | None]]) -> Any:
    configs = [{"name": n, "config_operation": o, "value": v} for n, o, v in ops]
    resp = ctx.call(
        44,
        {
            "resources": [
                {"resource_type": GROUP_RESOURCE, "resource_name": group, "configs": configs}
            ],
            "validate_only": True,
        },
    )
    r = resp.responses[0]
    return {"error": plain(r.error_code, "error_code"), "message": r.error_message}


@scenario(AREA)
def group_config_each_value(ctx: Ctx) -> Any:
    g = ctx.name("gv")
    out = {f"{n}={v!r}": _alter(ctx, g, [(n, SET, v)]) for n, v in CASES}
    out["append"] = _alter(ctx, g, [("share.auto.offset.reset", APPEND, "x")])
    out["subtract"] = _alter(ctx, g, [("share.session.timeout.ms", SUBTRACT, "1")])
    out["null"] = _alter(ctx, g, [("share.session.timeout.ms", SET, None)])
    out["delete"] = _alter(ctx, g, [("share.session.timeout.ms", DELETE, None)])
    out["default group"] = _alter(ctx, "", [("share.session.timeout.ms", SET, "2000")])
    return out


@scenario(AREA)
def describe_group_configs(ctx: Ctx) -> Any:
    g = ctx.name("gd")
    out = {"defaults": describe(ctx, GROUP_RESOURCE, g, SHARE_KEYS)}
    ctx.group_config(
        g,
        {
            "share.session.timeout.ms": "50000",
            "share.isolation.level": "read_committed",
            "share.delivery.count.limit": "3",
        },
    )
    out["set"] = once_applied(
        ctx, GROUP_RESOURCE, g, SHARE_KEYS, lambda v: v["share.delivery.count.limit"] == "3"
    )
    out["no synonyms"] = describe(
        ctx, GROUP_RESOURCE, g, SHARE_KEYS, synonyms=False, documentation=False
    )
    ctx.group_config(g, {"share.session.timeout.ms": None})
    out["deleted"] = once_applied(
        ctx,
        GROUP_RESOURCE,
        g,
        ["share.session.timeout.ms"],
        lambda v: v["share.session.timeout.ms"] != "50000",
    )
    return out


@scenario(AREA)
def describe_kafka44_group_configs(ctx: Ctx) -> Any:
    """Kafka 4.4's newer group configs: defaults, then overrides in their parsed form (an
    internal one is listed once set), then deleted."""
    g = ctx.name("g44")
    out = {"defaults": describe(ctx, GROUP_RESOURCE, g, KAFKA44_KEYS)}
    ctx.group_config(
        g,
        {
            "share.partition.max.record.locks": " 150 ",
            "share.renew.acknowledge.enable": "FALSE",
            "errors.deadletterqueue.topic.name": " dlq ",
            "errors.deadletterqueue.copy.record.enable": "True",
            "consumer.assignor.offload.enable": "false",
        },
    )
    out["set"] = once_applied(
        ctx,
        GROUP_RESOURCE,
        g,
        KAFKA44_KEYS,
        lambda v: v["share.partition.max.record.locks"] == "150",
    )
    ctx.group_config(g, {"share.partition.max.record.locks": None})
    out["deleted"] = once_applied(
        ctx,
        GROUP_RESOURCE,
        g,
        ["share.partition.max.record.locks"],
        lambda v: v["share.partition.max.record.locks"] != "150",
    )
    return out


STREAMS_KEYS = [
    "streams.assignment.interval.ms",
    "streams.assignor.name",
    "streams.heartbeat.interval.ms",
    "streams.initial.rebalance.delay.ms",
    "streams.num.standby.replicas",
    "streams.rack.aware.assignment.tags",
    "streams.session.timeout.ms",
]

STREAMS_CASES: tuple[tuple[str, str], ...] = (
    ("streams.heartbeat.interval.ms", "4999"),
    ("streams.heartbeat.interval.ms", "15001"),
    ("streams.heartbeat.interval.ms", "x"),
    ("streams.heartbeat.interval.ms", "6000"),
    ("streams.session.timeout.ms", "0"),
    ("streams.session.timeout.ms", "1"),
    ("streams.session.timeout.ms", "50000"),
    ("streams.num.standby.replicas", "-1"),
    ("streams.num.standby.replicas", "3"),
    ("streams.num.standby.replicas", "2"),
    ("streams.num.standby.replicas", "x"),
    ("streams.initial.rebalance.delay.ms", "-1"),
    ("streams.initial.rebalance.delay.ms", "999999999"),
    ("streams.assignment.interval.ms", "-1"),
    ("streams.assignment.interval.ms", "0"),
    ("streams.assignment.interval.ms", "15001"),
    ("streams.assignor.name", "bogus"),
    ("streams.assignor.name", ""),
    ("streams.assignor.name", "sticky"),
    ("streams.rack.aware.assignment.tags", "a,b"),
    ("streams.rack.aware.assignment.tags", "a,,b"),
    ("streams.rack.aware.assignment.tags", ""),
    ("streams.nope", "1"),
)


@scenario(AREA)
def streams_group_configs(ctx: Ctx) -> Any:
    """Kafka 4.4's streams-group configs: each value checked, APPEND refused, then the
    defaults, overrides (in their parsed form) and deleted ones described."""
    g = ctx.name("gs")
    out: dict[str, Any] = {f"{n}={v!r}": _alter(ctx, g, [(n, SET, v)]) for n, v in STREAMS_CASES}
    out["append to tags"] = _alter(ctx, g, [("streams.rack.aware.assignment.tags", APPEND, "x")])
    out["defaults"] = describe(ctx, GROUP_RESOURCE, g, STREAMS_KEYS)
    ctx.group_config(
        g,
        {
            "streams.num.standby.replicas": " 1 ",
            "streams.rack.aware.assignment.tags": "zone, rack",
            "streams.session.timeout.ms": "50000",
        },
    )
    out["set"] = once_applied(
        ctx, GROUP_RESOURCE, g, STREAMS_KEYS, lambda v: v["streams.num.standby.replicas"] == "1"
    )
    ctx.group_config(g, {"streams.num.standby.replicas": None})
    out["deleted"] = once_applied(
        ctx,
        GROUP_RESOURCE,
        g,
        ["streams.num.standby.replicas"],
        lambda v: v["streams.num.standby.replicas"] == "0",
    )
    return out
