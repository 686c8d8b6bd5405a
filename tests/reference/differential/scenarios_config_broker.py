"""Broker configs: DescribeConfigs of the broker and of the cluster default, alters of
them checked with ``validate_only``, and dynamic configs applied (then deleted again).

The broker's id is 1 on both sides.  Described keys are configs both brokers take whose
values do not depend on the machine (paths, ports).
"""

from __future__ import annotations

import socket
import time
from typing import Any

from tests.reference.differential.ctx import TOPIC_RESOURCE, Ctx
from tests.reference.differential.framework import scenario
from tests.reference.differential.scenarios_config_describe import describe
from tests.reference.differential.wire import Wire, plain

AREA = "configs"
BROKER = 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

KEYS = [
    "auto.create.topics.enable",
    "group.share.min.session.timeout.ms",
    "log.cleaner.min.cleanable.ratio",
    "log.cleanup.policy",
    "log.retention.check.interval.ms",
    "log.retention.hours",
    "log.retention.minutes",
    "log.retention.ms",
    "log.roll.ms",
    "log.segment.bytes",
    "max.connections",
    "message.max.bytes",
    "ssl.keystore.password",
    "transaction.max.timeout.ms",
    "min.insync.replicas",
    "quota.window.num",
    "quota.window.size.seconds",
    "controller.quota.window.num",
    "controller.quota.window.size.seconds",
]

#: (label, operations) checked on the broker and on the cluster default.
ALTERS: tuple[tuple[str, list[tuple[str, int, str | None]]], ...] = (
    ("read-only", [("node.id", SET, "5")]),
    ("read-only known", [("num.partitions", SET, "3")]),
    ("two read-only", [("num.partitions", SET, "3"), ("log.retention.hours", SET, "1")]),
    ("below minimum", [("message.max.bytes", SET, "-1")]),
    ("not a number", [("log.retention.ms", SET, "x")]),
    ("bad list item", [("log.cleanup.policy", SET, "bogus")]),
    ("bad enum", [("compression.type", SET, "bad")]),
    ("segment too small", [("log.segment.bytes", SET, "100")]),
    ("ratio above one", [("log.cleaner.min.cleanable.ratio", SET, "1.5")]),
    ("timestamp type", [("log.message.timestamp.type", SET, "Whenever")]),
    ("good value", [("log.retention.ms", SET, "100000")]),
    ("unknown config", [("no.such.config", SET, "1")]),
    ("delete", [("log.retention.ms", DELETE, None)]),
    ("append to a list", [("log.cleanup.policy", APPEND, "compact")]),
    ("append to a number", [("message.max.bytes", APPEND, "1")]),
    ("subtract from read-only", [("num.partitions", SUBTRACT, "1")]),
    ("null value", [("message.max.bytes", SET, None)]),
    ("null before read-only", [("num.partitions", SET, "2"), ("message.max.bytes", SET, None)]),
    ("read-only before bad value", [("message.max.bytes", SET, "-1"), ("node.id", SET, "2")]),
    ("cleaner threads", [("log.cleaner.threads", SET, "2")]),
    ("cleaner threads negative", [("log.cleaner.threads", SET, "-1")]),
)


def _incremental(ctx: Ctx, name: str, ops: list[tuple[str, int, str | None]]) -> Any:
    configs = [{"name": n, "config_operation": o, "value": v} for n, o, v in ops]
    resp = ctx.call(
        44,
        {
            "resources": [{"resource_type": BROKER, "resource_name": name, "configs": configs}],
            "validate_only": True,
        },
    )
    r = resp.responses[0]
    return {"error": plain(r.error_code, "error_code"), "message": r.error_message}


def _legacy(ctx: Ctx, name: str, configs: dict[str, str]) -> Any:
    body = [{"name": k, "value": v} for k, v in configs.items()]
    resp = ctx.call(
        33,
        {
            "resources": [{"resource_type": BROKER, "resource_name": name, "configs": body}],
            "validate_only": True,
        },
        version=2,
    )
    r = resp.responses[0]
    return {"error": plain(r.error_code, "error_code"), "message": r.error_message}


@scenario(AREA, exclusive=True)
def describe_broker_configs(ctx: Ctx) -> Any:
    return {
        "broker": describe(ctx, BROKER, "1", KEYS),
        "no synonyms": describe(ctx, BROKER, "1", KEYS, synonyms=False, documentation=False),
        "cluster default": describe(ctx, BROKER, "", KEYS),
        "other broker": describe(ctx, BROKER, "99"),
        "not a number": describe(ctx, BROKER, "x"),
    }


@scenario(AREA, exclusive=True)
def incremental_alter_broker_configs(ctx: Ctx) -> Any:
    out = {}
    for label, ops in ALTERS:
        out[f"broker: {label}"] = _incremental(ctx, "1", ops)
        out[f"default: {label}"] = _incremental(ctx, "", ops)
    out["other broker"] = _incremental(ctx, "99", [("message.max.bytes", SET, "1000")])
    out["not a number"] = _incremental(ctx, "x", [("message.max.bytes", SET, "1000")])
    return out


@scenario(AREA, exclusive=True)
def legacy_alter_broker_configs(ctx: Ctx) -> Any:
    return {
        "read-only": _legacy(ctx, "1", {"num.partitions": "3"}),
        "bad value": _legacy(ctx, "1", {"message.max.bytes": "-1"}),
        "good value": _legacy(ctx, "1", {"message.max.bytes": "2000000"}),
        "cluster default": _legacy(ctx, "", {"log.cleanup.policy": "compact"}),
        "other broker": _legacy(ctx, "99", {"message.max.bytes": "2000000"}),
        "not a number": _legacy(ctx, "x", {"message.max.bytes": "2000000"}),
    }


#: (label, operations) on the configs Kafka updates only per broker (SSL and SASL listener
#: configs, per-listener overrides) or also cluster-wide (connection limits).
PER_BROKER_ALTERS: tuple[tuple[str, list[tuple[str, int, str | None]]], ...] = (
    ("plain ssl", [("ssl.keystore.password", SET, "secret")]),
    ("two plain ssl", [("ssl.truststore.type", SET, "JKS"), ("ssl.keystore.type", SET, "JKS")]),
    ("listener ssl", [("listener.name.plaintext.ssl.keystore.type", SET, "JKS")]),
    ("listener max connections", [("listener.name.plaintext.max.connections", SET, "100")]),
    ("listener bad max connections", [("listener.name.plaintext.max.connections", SET, "-5")]),
    ("sasl mechanisms", [("sasl.enabled.mechanisms", SET, "PLAIN")]),
    ("client auth", [("ssl.client.auth", SET, "none")]),
    ("max connections", [("max.connections", SET, "1000")]),
    (
        "cluster-wide and per-broker",
        [("max.connections", SET, "1000"), ("sasl.enabled.mechanisms", SET, "PLAIN")],
    ),
    (
        "read-only and per-broker",
        [("sasl.enabled.mechanisms", SET, "PLAIN"), ("num.partitions", SET, "3")],
    ),
    (
        "bad value and per-broker",
        [("sasl.enabled.mechanisms", SET, "PLAIN"), ("message.max.bytes", SET, "-1")],
    ),
    (
        "plain ssl and per-broker",
        [("sasl.enabled.mechanisms", SET, "PLAIN"), ("ssl.key.password", SET, "x")],
    ),
)


@scenario(AREA, exclusive=True)
def per_broker_and_cluster_wide_configs(ctx: Ctx) -> Any:
    """Configs Kafka updates only per broker are refused on the cluster default ("")."""
    out = {}
    for label, ops in PER_BROKER_ALTERS:
        out[f"broker: {label}"] = _incremental(ctx, "1", ops)
        out[f"default: {label}"] = _incremental(ctx, "", ops)
    out["legacy default: sasl mechanisms"] = _legacy(
        ctx, "", {"sasl.enabled.mechanisms": "PLAIN", "min.insync.replicas": "1"}
    )
    out["legacy broker: sasl mechanisms"] = _legacy(ctx, "1", {"sasl.enabled.mechanisms": "PLAIN"})
    return out


def _apply(ctx: Ctx, name: str, ops: list[tuple[str, int, str | None]]) -> Any:
    """IncrementalAlterConfigs on a broker resource, applied (not validate-only)."""
    configs = [{"name": n, "config_operation": o, "value": v} for n, o, v in ops]
    resp = ctx.call(
        44,
        {
            "resources": [{"resource_type": BROKER, "resource_name": name, "configs": configs}],
            "validate_only": False,
        },
    )
    return plain(resp.responses[0].error_code, "error_code")


DYNAMIC_KEYS = [
    "log.cleaner.threads",
    "log.retention.hours",
    "log.retention.ms",
    "log.segment.bytes",
    "message.max.bytes",
    "min.insync.replicas",
    "no.such.config",
]
TOPIC_KEYS = ["max.message.bytes", "retention.ms", "segment.bytes"]


@scenario(AREA, exclusive=True)
def dynamic_broker_configs(ctx: Ctx) -> Any:
    """Dynamic broker configs, per broker and cluster-wide: sources and synonyms on the
    broker, the cluster default and a topic (the topic defaults follow them), a produce
    that only a raised message.max.bytes admits, the legacy AlterConfigs replacing a
    broker's dynamic configs; everything is deleted again.  Scenarios run side by side on
    one broker: the values only widen limits (longer retention, larger batches and
    segments), so no other scenario's records are refused or deleted meanwhile."""
    t = ctx.create_topic("dyn")

    def state() -> Any:
        time.sleep(1)  # Kafka applies an alter to its metadata after answering it
        return {
            "broker": describe(ctx, BROKER, "1", DYNAMIC_KEYS),
            "cluster default": describe(ctx, BROKER, "", DYNAMIC_KEYS),
            "topic": describe(ctx, TOPIC_RESOURCE, t, TOPIC_KEYS),
        }

    def produce_big() -> Any:
        done = ctx.produce(t, ["x" * 1_200_000])
        return done["error_code"]

    out: dict[str, Any] = {"produce before": produce_big()}
    broker_ops = [
        ("log.retention.ms", SET, "691200000"),
        ("message.max.bytes", SET, "2000000"),
        ("no.such.config", SET, "x"),
        ("log.cleaner.threads", SET, "2"),
    ]
    out["set broker"] = _apply(ctx, "1", broker_ops)
    out["after broker"] = state()
    out["produce raised"] = produce_big()
    cluster_ops = [("log.retention.ms", SET, "777600000"), ("log.segment.bytes", SET, "2000000000")]
    out["set cluster"] = _apply(ctx, "", cluster_ops)
    out["after cluster"] = state()
    out["delete broker"] = _apply(ctx, "1", [(n, DELETE, None) for n, _o, _v in broker_ops])
    out["delete cluster"] = _apply(ctx, "", [(n, DELETE, None) for n, _o, _v in cluster_ops])
    out["after delete"] = state()
    out["produce after"] = produce_big()
    out["legacy"] = _legacy_replace(ctx)
    return out


def _legacy_replace(ctx: Ctx) -> Any:
    """The legacy AlterConfigs replaces a broker's dynamic configs with those given."""

    def legacy(configs: dict[str, str]) -> Any:
        body = [{"name": k, "value": v} for k, v in configs.items()]
        resp = ctx.call(
            33,
            {
                "resources": [{"resource_type": BROKER, "resource_name": "1", "configs": body}],
                "validate_only": False,
            },
            version=2,
        )
        time.sleep(1)
        keys = ["message.max.bytes", "log.retention.ms"]
        return [plain(resp.responses[0].error_code, "error_code"), describe(ctx, BROKER, "1", keys)]

    out = {
        "first": legacy({"message.max.bytes": "2000000"}),
        "second": legacy({"log.retention.ms": "691200000"}),
    }
    out["cleared"] = _apply(ctx, "1", [("log.retention.ms", DELETE, None)])
    return out


def _broker_value(ctx: Ctx, key: str) -> str | None:
    got = describe(ctx, BROKER, "1", [key], synonyms=False, documentation=False)
    entry = got["configs"].get(key)
    return None if entry is None else entry["value"]


def _listener_message(message: str | None) -> str | None:
    """Kafka names every listener in some refusals (its controller's too): the reason only."""
    if message and message.startswith("Error creating broker listeners from"):
        return message.split("': ", 1)[1]
    return message


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(address: str) -> bool:
    try:
        wire = Wire(address)
    except OSError:
        return False
    try:
        wire.call(18, {"client_software_name": "d", "client_software_version": "1"})
        return True
    except Exception:
        return False
    finally:
        wire.close()


def _until(check: Any, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@scenario(AREA, exclusive=True)
def dynamic_listener_configs(ctx: Ctx) -> Any:
    """Listener configs of the broker: Kafka's checks of a new ``listeners`` and protocol
    map, per-listener TLS and SASL configs, then a listener added (bound at once) and
    removed again by deleting the dynamic configs."""
    listeners = _broker_value(ctx, "listeners") or f"PLAINTEXT://{ctx.bootstrap}"
    protocols = _broker_value(ctx, "listener.security.protocol.map") or ""
    extra = "EXTRA://127.0.0.1:0"

    def check(ops: list[tuple[str, int, str | None]]) -> Any:
        got = _incremental(ctx, "1", ops)
        return {**got, "message": _listener_message(got["message"])}

    out = {
        "no protocol": check([("listeners", SET, f"{listeners},{extra}")]),
        "added": check(
            [
                ("listeners", SET, f"{listeners},{extra}"),
                ("listener.security.protocol.map", SET, f"{protocols},EXTRA:PLAINTEXT"),
            ]
        ),
        "protocol changed": check(
            [
                (
                    "listener.security.protocol.map",
                    SET,
                    protocols.replace("PLAINTEXT:PLAINTEXT", "PLAINTEXT:SSL", 1),
                )
            ]
        ),
        "advertised": check([("advertised.listeners", SET, f"PLAINTEXT://{ctx.bootstrap}")]),
        "key store of a plaintext listener": check(
            [("listener.name.plaintext.ssl.keystore.location", SET, "/no/such/file")]
        ),
        "sasl mechanisms of a listener": check(
            [("listener.name.plaintext.sasl.enabled.mechanisms", SET, "PLAIN")]
        ),
    }
    address = f"127.0.0.1:{_free_port()}"
    out["applied"] = _apply(
        ctx,
        "1",
        [
            ("listeners", SET, f"{listeners},EXTRA://{address}"),
            ("listener.security.protocol.map", SET, f"{protocols},EXTRA:PLAINTEXT"),
        ],
    )
    out["new listener answers"] = _until(lambda: _answers(address))
    source = describe(ctx, BROKER, "1", ["listeners"], synonyms=False, documentation=False)
    out["listeners source"] = source["configs"]["listeners"]["source"]
    out["deleted"] = _apply(
        ctx,
        "1",
        [("listeners", DELETE, None), ("listener.security.protocol.map", DELETE, None)],
    )
    out["new listener closed"] = _until(lambda: not _answers(address))


JITTER_KEYS = ["log.roll.jitter.hours", "log.roll.jitter.ms"]


@scenario(AREA, exclusive=True)
def roll_jitter_broker_defaults(ctx: Ctx) -> Any:
    """``log.roll.jitter.ms`` (dynamic) and ``log.roll.jitter.hours`` (read-only) give a topic
    without ``segment.jitter.ms`` its value, with their synonyms; a topic's own value wins.
    The value is set on the cluster default only (``dynamic_broker_configs``, which may run
    meanwhile, replaces this broker's dynamic configs) and is a few milliseconds: other
    scenarios' segments roll as before."""
    plain_topic = ctx.create_topic("jit")
    own = ctx.create_topic("jitown", configs={"segment.jitter.ms": "5"})

    def state() -> Any:
        time.sleep(1)  # Kafka applies an alter to its metadata after answering it
        return {
            "broker": describe(ctx, BROKER, "1", JITTER_KEYS),
            "cluster default": describe(ctx, BROKER, "", JITTER_KEYS),
            "topic": describe(ctx, TOPIC_RESOURCE, plain_topic, ["segment.jitter.ms"]),
            "own": describe(ctx, TOPIC_RESOURCE, own, ["segment.jitter.ms"]),
        }

    out: dict[str, Any] = {"before": state()}
    out["hours"] = _incremental(ctx, "1", [("log.roll.jitter.hours", SET, "1")])
    out["negative"] = _incremental(ctx, "1", [("log.roll.jitter.ms", SET, "-1")])
    out["set cluster"] = _apply(ctx, "", [("log.roll.jitter.ms", SET, "2")])
    out["after cluster"] = state()
    out["delete cluster"] = _apply(ctx, "", [("log.roll.jitter.ms", DELETE, None)])
    out["after delete"] = state()
    return out
