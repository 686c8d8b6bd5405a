"""DescribeConfigs as Kafka answers it: every config of a topic (set or not) with its value,
source, synonyms chain, type, sensitivity and read-only flag; broker and group resources.

Documentation texts are compared by presence only: Kafka's are its own prose, sharetxn
writes its own (docs/conformance.md, "Configs").  Entries are sorted by name (Kafka answers
them in hash order).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tests.reference.differential.ctx import TOPIC_RESOURCE, Ctx
from tests.reference.differential.framework import scenario
from tests.reference.differential.wire import plain

AREA = "configs"


def describe(
    ctx: Ctx,
    rtype: int,
    name: str,
    keys: list[str] | None = None,
    *,
    synonyms: bool = True,
    documentation: bool = True,
    version: int | None = None,
) -> Any:
    """One resource's DescribeConfigs answer, entries sorted by name."""
    resp = ctx.call(
        32,
        {
            "resources": [
                {"resource_type": rtype, "resource_name": name, "configuration_keys": keys}
            ],
            "include_synonyms": synonyms,
            "include_documentation": documentation,
        },
        version,
    )
    r = resp.results[0]
    entries: dict[str, Any] = {}
    for c in r.configs:
        entries[c.name] = {
            "value": c.value,
            "source": int(c.config_source),
            "read_only": bool(c.read_only),
            "sensitive": bool(c.is_sensitive),
            "type": int(getattr(c, "config_type", 0)),
            "documented": getattr(c, "documentation", None) is not None,
            "synonyms": [[s.name, s.value, int(s.source)] for s in c.synonyms],
        }
    if "flush.messages" in entries:
        # sharetxn's log.flush.interval.messages defaults to 1 (fsync per record; one node has
        # no replicas to rely on), Kafka's to Long.MAX: docs/conformance.md, "Configs".
        entries["flush.messages"] = "<broker default differs>"
    return {
        "error": plain(r.error_code, "error_code"),
        "message": r.error_message,
        "configs": dict(sorted(entries.items())),
    }


@scenario(AREA)
def describe_topic_every_config(ctx: Ctx) -> Any:
    t = ctx.create_topic(
        "all",
        configs={
            "retention.ms": "1234567",
            "cleanup.policy": "compact",
            "max.message.bytes": "2000",
            "min.insync.replicas": "1",
        },
    )
    return describe(ctx, TOPIC_RESOURCE, t)


@scenario(AREA)
def describe_topic_without_synonyms_or_documentation(ctx: Ctx) -> Any:
    t = ctx.create_topic("plain", configs={"segment.ms": "100000", "preallocate": "true"})
    return {
        "all": describe(ctx, TOPIC_RESOURCE, t, synonyms=False, documentation=False),
        "some keys": describe(
            ctx,
            TOPIC_RESOURCE,
            t,
            ["segment.ms", "retention.bytes", "no.such.config", "log.retention.ms"],
            synonyms=False,
            documentation=False,
        ),
        "v1": describe(ctx, TOPIC_RESOURCE, t, ["segment.ms", "compression.type"], version=1),
    }


@scenario(AREA)
def describe_topic_after_alters(ctx: Ctx) -> Any:
    t = ctx.create_topic("alt")
    keys = ["retention.ms", "cleanup.policy", "compression.type", "segment.index.bytes"]
    out = {"before": describe(ctx, TOPIC_RESOURCE, t, keys)}
    ctx.alter_configs(
        TOPIC_RESOURCE,
        t,
        {"retention.ms": "-1", "cleanup.policy": "compact, delete", "compression.type": "zstd"},
    )
    out["set"] = _once_applied(ctx, t, keys, "retention.ms", "-1")
    ctx.alter_configs(TOPIC_RESOURCE, t, {"retention.ms": None, "compression.type": None})
    out["deleted"] = _once_applied(ctx, t, keys, "compression.type", "producer")
    return out


def _once_applied(ctx: Ctx, topic: str, keys: list[str], name: str, value: str) -> Any:
    return once_applied(ctx, TOPIC_RESOURCE, topic, keys, lambda got: got[name] == value)


def once_applied(
    ctx: Ctx,
    rtype: int,
    resource: str,
    keys: list[str],
    applied: Callable[[dict[str, str | None]], bool],
) -> Any:
    """The description once ``applied`` holds for its values by name: Kafka applies an alter
    to its brokers' metadata after answering it (5 s at most)."""
    deadline = time.monotonic() + 5
    while True:
        got = describe(ctx, rtype, resource, keys)
        values = {name: entry["value"] for name, entry in got["configs"].items()}
        if applied(values) or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


@scenario(AREA)
def describe_topic_internal_and_unknown(ctx: Ctx) -> Any:
    t = ctx.create_topic("int", configs={"internal.segment.bytes": "2048"})
    return {
        "internal": describe(ctx, TOPIC_RESOURCE, t, ["internal.segment.bytes", "segment.bytes"]),
        "unknown topic": describe(ctx, TOPIC_RESOURCE, ctx.name("missing")),
        "empty name": describe(ctx, TOPIC_RESOURCE, ""),
        "dot": describe(ctx, TOPIC_RESOURCE, ".."),
        "bad character": describe(ctx, TOPIC_RESOURCE, "a/b"),
        "too long": describe(ctx, TOPIC_RESOURCE, "x" * 250),
    }
