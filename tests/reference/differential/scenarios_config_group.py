"""Group configs (KIP-932 share groups): DescribeConfigs with defaults, sources and
synonyms, and IncrementalAlterConfigs checked against the broker's bounds in Kafka's words.

The suite's settings lower ``group.share.min.session.timeout.ms`` (1000) and
``group.share.min.heartbeat.interval.ms`` (500) on both brokers.  Only the share configs
are described: Kafka also lists consumer, streams, dead-letter and assignment-interval
configs sharetxn does not take (docs/conformance.md, "Configs").
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
