"""Broker configuration with Kafka's config names and defaults.

``BrokerConfig`` is an immutable mapping from Kafka config keys to typed
values.  Unknown keys and unparsable values are rejected with a clear error
(``InvalidConfigError``) rather than ignored.  Where this broker deliberately
differs from Apache Kafka's default, the entry says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from txn.errors import InvalidConfigError
from txn.limits import INT32_MAX
from txn.limits import LONG_MAX as _LONG_MAX
from txn.security_config import SECURITY_CONFIGS, is_listener_override

ConfigType = Literal["int", "bool", "str"]


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    type: ConfigType
    default: Any
    doc: str
    choices: tuple[str, ...] = ()  # for "str": the values allowed (case-insensitive)


CONFIG_DEFS: tuple[ConfigDef, ...] = (
    # --- logs -------------------------------------------------------------------------------
    ConfigDef("num.partitions", "int", 1, "Default partition count of auto-created topics."),
    ConfigDef("auto.create.topics.enable", "bool", True, "Create a topic on first metadata use."),
    # sharetxn's own: a data directory where an older version let a client create a topic
    # named like one of the broker's logs is refused at start unless this is set (once).
    ConfigDef(
        "sharetxn.forget.client.created.internal.topics",
        "bool",
        False,
        "Forget client-created topics named like an internal log (docs/security.md).",
    ),
    # sharetxn's own: all client partitions together (each is a log, with memory of its own).
    ConfigDef(
        "sharetxn.max.partitions",
        "int",
        10_000,
        "Most client partitions the broker holds (docs/security.md).",
    ),
    # sharetxn's own: segment files are opened on demand through one bounded cache; unset,
    # it holds half the open-file limit (the rest is for connections and the broker's own).
    ConfigDef(
        "sharetxn.log.max.open.files",
        "int",
        None,
        "Most segment files open at once (unset: half the open-file limit).",
    ),
    ConfigDef("log.segment.bytes", "int", 1024 * 1024 * 1024, "Maximum size of one segment."),
    ConfigDef("log.index.interval.bytes", "int", 4096, "Bytes between offset-index entries."),
    # Kafka's default is Long.MAX (rely on replication); a single node has no replicas, so
    # the default here fsyncs every append before the produce is acknowledged.
    ConfigDef("log.flush.interval.messages", "int", 1, "fsync after this many messages."),
    ConfigDef("log.flush.interval.ms", "int", -1, "fsync when data is this old (-1: off)."),
    # Retention (Kafka's names and defaults; None: unset, the next coarser unit decides).
    ConfigDef("log.retention.hours", "int", 168, "Default retention.ms, in hours."),
    ConfigDef("log.retention.minutes", "int", None, "Default retention.ms, in minutes."),
    ConfigDef("log.retention.ms", "int", None, "Default retention.ms (-1: keep forever)."),
    ConfigDef("log.retention.bytes", "int", -1, "Default retention.bytes (-1: no limit)."),
    ConfigDef("log.roll.hours", "int", 168, "Default segment.ms, in hours."),
    ConfigDef("log.roll.ms", "int", None, "Default segment.ms."),
    ConfigDef("log.roll.jitter.hours", "int", 0, "Default segment.jitter.ms, in hours."),
    ConfigDef("log.roll.jitter.ms", "int", None, "Default segment.jitter.ms."),
    ConfigDef("log.cleanup.policy", "str", "delete", "Default cleanup.policy."),
    ConfigDef(
        "compression.type",
        "str",
        "producer",
        "Default compression.type (producer: batches kept as produced).",
        ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
    ),
    ConfigDef("compression.gzip.level", "int", -1, "Default compression.gzip.level."),
    ConfigDef("compression.lz4.level", "int", 9, "Default compression.lz4.level."),
    ConfigDef("compression.zstd.level", "int", 3, "Default compression.zstd.level."),
    ConfigDef("log.retention.check.interval.ms", "int", 300000, "How often retention is applied."),
    ConfigDef("log.initial.task.delay.ms", "int", 30000, "Delay of the first retention check."),
    ConfigDef("log.segment.delete.delay.ms", "int", 60000, "Default file.delete.delay.ms."),
    ConfigDef("log.cleaner.enable", "bool", True, "Compact cleanup.policy=compact topics."),
    ConfigDef("log.cleaner.backoff.ms", "int", 15000, "Pause between cleaner passes."),
    ConfigDef(
        "log.cleaner.dedupe.buffer.size",
        "int",
        134217728,
        "Memory of the cleaner's offset map (24 bytes a key); a pass maps that many keys.",
    ),
    ConfigDef(
        "log.cleaner.io.buffer.size",
        "int",
        524288,
        "Memory of the cleaner's read and write buffers (half each); a larger batch grows them.",
    ),
    ConfigDef(
        "log.cleaner.threads",
        "int",
        1,
        "Kafka's cleaner thread count: taken and described; sharetxn's cleaner runs one pass"
        " at a time.",
    ),
    ConfigDef("log.cleaner.delete.retention.ms", "int", 86400000, "Default delete.retention.ms."),
    ConfigDef(
        "log.cleaner.min.cleanable.ratio", "str", "0.5", "Default min.cleanable.dirty.ratio."
    ),
    ConfigDef("log.cleaner.min.compaction.lag.ms", "int", 0, "Default min.compaction.lag.ms."),
    ConfigDef(
        "log.cleaner.max.compaction.lag.ms",
        "int",
        _LONG_MAX,
        "Default max.compaction.lag.ms.",
    ),
    ConfigDef("message.max.bytes", "int", 1048588, "Largest record batch accepted."),
    ConfigDef(
        "log.message.timestamp.type",
        "str",
        "CreateTime",
        "Default message.timestamp.type: CreateTime or LogAppendTime.",
    ),
    ConfigDef(
        "log.message.timestamp.before.max.ms",
        "int",
        _LONG_MAX,
        "Default message.timestamp.before.max.ms.",
    ),
    ConfigDef(
        "log.message.timestamp.after.max.ms",
        "int",
        3600000,
        "Default message.timestamp.after.max.ms.",
    ),
    ConfigDef("socket.request.max.bytes", "int", 104857600, "Largest request frame accepted."),
    ConfigDef(
        "max.connections",
        "int",
        INT32_MAX,
        "Connections the broker accepts at once; more are closed at once.",
    ),
    ConfigDef(
        "max.connections.per.ip",
        "int",
        INT32_MAX,
        "Connections accepted at once from one address; more are closed at once.",
    ),
    ConfigDef(
        "max.connection.creation.rate",
        "int",
        INT32_MAX,
        "New connections per second the broker accepts (and each listener:"
        " listener.name.<listener>.max.connection.creation.rate); over it the listener waits"
        " before accepting more.",
    ),
    ConfigDef(
        "max.connections.per.ip.overrides",
        "str",
        "",
        "Per-address (or host name) max.connections.per.ip: 'host:count,10.0.0.1:200'.",
    ),
    ConfigDef(
        "sasl.server.max.receive.size",
        "int",
        524288,
        "Largest frame a SASL listener reads before the client has authenticated.",
    ),
    ConfigDef(
        "connections.max.idle.ms",
        "int",
        600000,
        "A connection with no request for this long is closed (-1: never).",
    ),
    # Client quotas (docs/security.md): the windows a client's rates are measured over.
    ConfigDef("quota.window.num", "int", 11, "Samples kept for client quotas."),
    ConfigDef("quota.window.size.seconds", "int", 1, "Time span of each client quota sample."),
    ConfigDef(
        "controller.quota.window.num", "int", 11, "Samples kept for controller mutation quotas."
    ),
    ConfigDef(
        "controller.quota.window.size.seconds",
        "int",
        1,
        "Time span of each controller mutation quota sample.",
    ),
    ConfigDef(
        "client.quota.callback.class",
        "str",
        None,
        "Kafka's pluggable quota callback (a Java class): refused when set, as Kafka refuses"
        " a class it cannot load.",
    ),
    # --- idempotence and transactions -------------------------------------------------------
    ConfigDef("transaction.max.timeout.ms", "int", 900000, "Largest transaction.timeout.ms."),
    ConfigDef("transactional.id.expiration.ms", "int", 604800000, "Idle id expiry."),
    ConfigDef(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        "int",
        10000,
        "How often timed-out transactions are aborted.",
    ),
    ConfigDef(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        "int",
        3600000,
        "How often expired transactional ids are removed.",
    ),
    # Kafka's default is false; KIP-1289's 2PC pipelines need it, so it is on here.
    ConfigDef(
        "transaction.two.phase.commit.enable", "bool", True, "Allow InitProducerId Enable2Pc."
    ),
    ConfigDef(
        "transaction.state.log.num.partitions", "int", 50, "Partitions of __transaction_state."
    ),
    ConfigDef(
        "transaction.state.log.min.isr",
        "int",
        2,
        "min.insync.replicas of __transaction_state as DescribeConfigs shows it (one replica"
        " here).",
    ),
    ConfigDef(
        "transaction.state.log.segment.bytes",
        "int",
        104857600,
        "Segment size of __transaction_state (compacted).",
    ),
    ConfigDef("producer.id.expiration.ms", "int", 86400000, "Idle idempotent producer expiry."),
    # --- consumer groups and offsets --------------------------------------------------------
    ConfigDef(
        "offsets.topic.num.partitions",
        "int",
        50,
        "Partitions Metadata lists for __consumer_offsets (as Kafka's; sharetxn's consumer and"
        " share group logs are its partitions 1 and 0).",
    ),
    ConfigDef(
        "offsets.topic.segment.bytes",
        "int",
        104857600,
        "Segment size of __consumer_offsets (compacted).",
    ),
    ConfigDef("group.min.session.timeout.ms", "int", 6000, "Lowest consumer session timeout."),
    ConfigDef("group.max.session.timeout.ms", "int", 1800000, "Highest consumer session timeout."),
    ConfigDef("group.max.size", "int", INT32_MAX, "Members per classic group."),
    ConfigDef(
        "group.initial.rebalance.delay.ms",
        "int",
        3000,
        "How long the first rebalance of an empty group waits for more members.",
    ),
    ConfigDef("offset.metadata.max.bytes", "int", 4096, "Largest committed offset metadata."),
    ConfigDef("group.consumer.session.timeout.ms", "int", 45000, "KIP-848 member session timeout."),
    ConfigDef(
        "group.consumer.heartbeat.interval.ms", "int", 5000, "KIP-848 member heartbeat interval."
    ),
    ConfigDef(
        "group.consumer.regex.refresh.interval.ms",
        "int",
        600000,
        "How often a KIP-848 group's topic regexes are resolved again (Kafka's internal config).",
    ),
    ConfigDef(
        "group.consumer.min.session.timeout.ms", "int", 45000, "Lowest KIP-848 session timeout."
    ),
    ConfigDef(
        "group.consumer.max.session.timeout.ms", "int", 60000, "Highest KIP-848 session timeout."
    ),
    ConfigDef(
        "group.consumer.min.heartbeat.interval.ms",
        "int",
        5000,
        "Lowest KIP-848 heartbeat interval.",
    ),
    ConfigDef(
        "group.consumer.max.heartbeat.interval.ms",
        "int",
        15000,
        "Highest KIP-848 heartbeat interval.",
    ),
    ConfigDef("group.consumer.assignment.interval.ms", "int", 1000, "KIP-848 assignment interval."),
    ConfigDef(
        "group.consumer.min.assignment.interval.ms",
        "int",
        0,
        "Lowest KIP-848 assignment interval.",
    ),
    ConfigDef(
        "group.consumer.max.assignment.interval.ms",
        "int",
        15000,
        "Highest KIP-848 assignment interval.",
    ),
    ConfigDef(
        "group.consumer.migration.policy",
        "str",
        "bidirectional",
        "Online conversion between classic and KIP-848 groups: bidirectional, upgrade,"
        " downgrade or disabled.",
        ("bidirectional", "upgrade", "downgrade", "disabled"),
    ),
    ConfigDef(
        "offsets.retention.minutes", "int", 10080, "Offsets of an empty group expire after this."
    ),
    ConfigDef(
        "offsets.retention.check.interval.ms", "int", 600000, "How often offsets are expired."
    ),
    # --- share groups -----------------------------------------------------------------------
    ConfigDef(
        "group.share.delivery.count.limit", "int", 5, "Deliveries before a record is archived."
    ),
    # KIP-1191 dead-letter queues of share groups
    ConfigDef(
        "errors.deadletterqueue.auto.create.topics.enable",
        "bool",
        False,
        "Create a share group's dead-letter topic when it does not exist.",
    ),
    ConfigDef(
        "errors.deadletterqueue.topic.name.prefix",
        "str",
        "dlq.",
        'The prefix a share group\'s dead-letter topic name must have ("": any name).',
    ),
    ConfigDef("group.share.record.lock.duration.ms", "int", 30000, "Acquisition lock duration."),
    ConfigDef(
        "group.share.partition.max.record.locks", "int", 2000, "In-flight records per partition."
    ),
    ConfigDef("group.share.max.size", "int", 200, "Members per share group."),
    ConfigDef("group.share.session.timeout.ms", "int", 45000, "Share member session timeout."),
    ConfigDef("group.share.heartbeat.interval.ms", "int", 5000, "Share member heartbeat interval."),
    ConfigDef("group.share.max.share.sessions", "int", 2000, "Share sessions per broker."),
    ConfigDef("group.share.min.session.timeout.ms", "int", 45000, "Lowest group session timeout."),
    ConfigDef("group.share.max.session.timeout.ms", "int", 60000, "Highest group session timeout."),
    ConfigDef("group.share.min.heartbeat.interval.ms", "int", 5000, "Lowest heartbeat interval."),
    ConfigDef("group.share.max.heartbeat.interval.ms", "int", 15000, "Highest heartbeat interval."),
    ConfigDef("group.share.min.record.lock.duration.ms", "int", 15000, "Lowest lock duration."),
    ConfigDef("group.share.max.record.lock.duration.ms", "int", 60000, "Highest lock duration."),
    ConfigDef("group.share.min.delivery.count.limit", "int", 2, "Lowest delivery count limit."),
    ConfigDef("group.share.max.delivery.count.limit", "int", 10, "Highest delivery count limit."),
    ConfigDef(
        "group.share.min.partition.max.record.locks",
        "int",
        100,
        "Lowest share.partition.max.record.locks a group may set.",
    ),
    ConfigDef(
        "group.share.max.partition.max.record.locks",
        "int",
        4000,
        "Highest share.partition.max.record.locks a group may set.",
    ),
    ConfigDef(
        "group.share.assignment.interval.ms", "int", 1000, "Share group assignment interval."
    ),
    ConfigDef(
        "group.share.min.assignment.interval.ms", "int", 0, "Lowest share assignment interval."
    ),
    ConfigDef(
        "group.share.max.assignment.interval.ms",
        "int",
        15000,
        "Highest share assignment interval.",
    ),
    ConfigDef(
        "share.coordinator.state.topic.num.partitions",
        "int",
        50,
        "Partitions of __share_group_state.",
    ),
    ConfigDef(
        "share.coordinator.state.topic.segment.bytes",
        "int",
        104857600,
        "Segment size of __share_group_state (pruned by the share coordinator).",
    ),
    ConfigDef(
        "share.coordinator.snapshot.update.records.per.snapshot",
        "int",
        500,
        "ShareUpdate records between ShareSnapshots.",
    ),
    ConfigDef(
        "share.coordinator.state.topic.prune.interval.ms",
        "int",
        300000,
        "How often redundant share-state records are pruned.",
    ),
    ConfigDef(
        "share.coordinator.cold.partition.snapshot.interval.ms",
        "int",
        300000,
        "How often idle share-state keys are re-snapshotted.",
    ),
)
# Listeners, TLS, SASL and authorization (txn.security_config).
CONFIG_DEFS = (
    *CONFIG_DEFS,
    *(ConfigDef(*entry) for entry in SECURITY_CONFIGS),
)

_BY_NAME: dict[str, ConfigDef] = {d.name: d for d in CONFIG_DEFS}


def default_of(name: str) -> Any:
    """The default of the broker config ``name``: the one place every module reads it from."""
    try:
        return _BY_NAME[name].default
    except KeyError:
        raise InvalidConfigError(f"unknown broker config {name!r}") from None


def _parse(defn: ConfigDef, raw: object) -> Any:
    if raw is None:
        return None
    if defn.type == "int":
        if isinstance(raw, bool):
            raise InvalidConfigError(f"{defn.name} expects an integer, got {raw!r}")
        try:
            return int(str(raw))
        except ValueError as exc:
            raise InvalidConfigError(f"{defn.name} expects an integer, got {raw!r}") from exc
    if defn.type == "bool":
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in ("true", "1", "yes"):
            return True
        if text in ("false", "0", "no"):
            return False
        raise InvalidConfigError(f"{defn.name} expects true or false, got {raw!r}")
    if defn.choices:
        text = str(raw).strip().lower()
        if text not in defn.choices:
            allowed = ", ".join(defn.choices)
            raise InvalidConfigError(f"{defn.name} must be one of {allowed}, got {raw!r}")
        return text
    return str(raw)


# Kafka's valid ranges (ConfigDef's atLeast/between) of the int configs that have one:
# (lowest, highest or None).  Checked when a broker starts (``BrokerConfig.validate``);
# the simulator and unit tests build configs with faster settings and skip the check.
RANGES: dict[str, tuple[int, int | None]] = {
    "num.partitions": (1, None),
    "sharetxn.max.partitions": (1, None),
    "sharetxn.log.max.open.files": (1, None),
    "log.segment.bytes": (14, None),
    "log.index.interval.bytes": (0, None),
    "log.flush.interval.messages": (1, None),
    "log.retention.check.interval.ms": (1, None),
    "log.segment.delete.delay.ms": (0, None),
    "log.cleaner.backoff.ms": (0, None),
    "log.cleaner.dedupe.buffer.size": (0, None),
    "log.cleaner.io.buffer.size": (0, None),
    "log.roll.jitter.hours": (0, None),
    "log.roll.jitter.ms": (0, None),
    "log.cleaner.threads": (0, None),
    "log.cleaner.delete.retention.ms": (0, None),
    "log.cleaner.min.compaction.lag.ms": (0, None),
    "log.cleaner.max.compaction.lag.ms": (1, None),
    "message.max.bytes": (0, None),
    "log.message.timestamp.before.max.ms": (0, None),
    "log.message.timestamp.after.max.ms": (0, None),
    "socket.request.max.bytes": (1, None),
    "max.connections": (0, None),
    "max.connections.per.ip": (0, None),
    "max.connection.creation.rate": (0, None),
    "connections.max.idle.ms": (-1, None),
    "delegation.token.max.lifetime.ms": (1, None),
    "delegation.token.expiry.time.ms": (1, None),
    "delegation.token.expiry.check.interval.ms": (1, None),
    "quota.window.num": (1, None),
    "quota.window.size.seconds": (1, None),
    "controller.quota.window.num": (1, None),
    "controller.quota.window.size.seconds": (1, None),
    "transaction.max.timeout.ms": (1, None),
    "transactional.id.expiration.ms": (1, None),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (1, None),
    "transaction.remove.expired.transaction.cleanup.interval.ms": (1, None),
    "transaction.state.log.num.partitions": (1, None),
    "transaction.state.log.min.isr": (1, None),
    "transaction.state.log.segment.bytes": (1, None),
    "offsets.topic.num.partitions": (1, None),
    "offsets.topic.segment.bytes": (1, None),
    "share.coordinator.state.topic.segment.bytes": (1, None),
    "producer.id.expiration.ms": (1, None),
    "group.max.size": (1, None),
    "group.initial.rebalance.delay.ms": (0, None),
    "offset.metadata.max.bytes": (0, None),
    "group.consumer.session.timeout.ms": (1, None),
    "group.consumer.heartbeat.interval.ms": (1, None),
    "group.consumer.regex.refresh.interval.ms": (10000, None),
    "group.consumer.min.session.timeout.ms": (1, None),
    "group.consumer.max.session.timeout.ms": (1, None),
    "group.consumer.min.heartbeat.interval.ms": (1, None),
    "group.consumer.max.heartbeat.interval.ms": (1, None),
    "offsets.retention.minutes": (1, None),
    "offsets.retention.check.interval.ms": (1, None),
    "group.share.delivery.count.limit": (2, 10),
    "group.share.record.lock.duration.ms": (1000, 3600000),
    "group.share.partition.max.record.locks": (100, 10000),
    "group.share.max.size": (10, 1000),
    "group.share.session.timeout.ms": (1, None),
    "group.share.heartbeat.interval.ms": (1, None),
    "group.share.max.share.sessions": (1, None),
    "group.share.min.session.timeout.ms": (1, None),
    "group.share.max.session.timeout.ms": (1, None),
    "group.share.min.heartbeat.interval.ms": (1, None),
    "group.share.max.heartbeat.interval.ms": (1, None),
    "group.share.min.record.lock.duration.ms": (1000, 30000),
    "group.share.max.record.lock.duration.ms": (30000, 3600000),
    "group.share.min.delivery.count.limit": (2, 10),
    "group.share.max.delivery.count.limit": (2, 10),
    "group.share.min.partition.max.record.locks": (100, 2000),
    "group.share.max.partition.max.record.locks": (2000, 10000),
    "group.share.assignment.interval.ms": (0, None),
    "group.share.min.assignment.interval.ms": (0, None),
    "group.share.max.assignment.interval.ms": (0, None),
    "group.consumer.assignment.interval.ms": (0, None),
    "group.consumer.min.assignment.interval.ms": (0, None),
    "group.consumer.max.assignment.interval.ms": (0, None),
    "share.coordinator.state.topic.num.partitions": (1, None),
    "share.coordinator.snapshot.update.records.per.snapshot": (0, 500),
    "share.coordinator.state.topic.prune.interval.ms": (1, None),
    "share.coordinator.cold.partition.snapshot.interval.ms": (1, None),
}
# (lower, higher): the first may not exceed the second, as Kafka checks at start.
ORDERED: tuple[tuple[str, str], ...] = (
    ("group.min.session.timeout.ms", "group.max.session.timeout.ms"),
    ("group.share.min.session.timeout.ms", "group.share.session.timeout.ms"),
    ("group.share.session.timeout.ms", "group.share.max.session.timeout.ms"),
    ("group.share.min.heartbeat.interval.ms", "group.share.heartbeat.interval.ms"),
    ("group.share.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"),
    ("group.share.min.record.lock.duration.ms", "group.share.record.lock.duration.ms"),
    ("group.share.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"),
    ("group.share.min.delivery.count.limit", "group.share.delivery.count.limit"),
    ("group.share.delivery.count.limit", "group.share.max.delivery.count.limit"),
)


def range_error(name: str, value: object) -> str | None:
    """Kafka's message for a value outside ``name``'s range, else None."""
    bounds = RANGES.get(name)
    if bounds is None or not isinstance(value, int) or isinstance(value, bool):
        return None
    low, high = bounds
    if value < low:
        return f"Invalid value {value} for configuration {name}: Value must be at least {low}"
    if high is not None and value > high:
        return f"Invalid value {value} for configuration {name}: Value must be no more than {high}"
    return None


def per_ip_overrides(text: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:count,...`` as Kafka parses it."""
    out: dict[str, int] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        try:
            value = int(count)
        except ValueError:
            value = -1
        if not sep or not host or value < 0:
            msg = (
                f"Invalid value {text!r} for configuration max.connections.per.ip.overrides:"
                f" expected host:count entries, got {item!r}"
            )
            raise InvalidConfigError(msg)
        out[host] = value
    return out


class BrokerConfig(Mapping[str, Any]):
    """Typed broker settings; ``BrokerConfig({"log.flush.interval.messages": "100"})``."""

    def __init__(self, overrides: Mapping[str, object] | None = None) -> None:
        values: dict[str, Any] = {d.name: d.default for d in CONFIG_DEFS}
        for key, raw in (overrides or {}).items():
            defn = _BY_NAME.get(key)
            if defn is None and is_listener_override(key):
                values[key] = None if raw is None else str(raw)  # listener.name.<l>.<config>
                continue
            if defn is None:
                raise InvalidConfigError(f"unknown broker config {key!r}")
            values[key] = _parse(defn, raw)
        self._values = values
        self._given = frozenset(overrides or ())

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Any:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def get_optional_int(self, key: str) -> int | None:
        value = self._values[key]
        assert value is None or isinstance(value, int)
        return value

    def get_str(self, key: str) -> str:
        value = self._values[key]
        assert isinstance(value, str)
        return value

    def get_listener_str(self, listener: str, key: str) -> str | None:
        """``listener.name.<listener>.<key>`` if set, else ``key`` (Kafka's per-listener rule)."""
        prefixed = self._values.get(f"listener.name.{listener.lower()}.{key}")
        if prefixed is not None:
            return str(prefixed)
        value = self._values.get(key)
        return None if value is None else str(value)

    def get_int(self, key: str) -> int:
        value = self._values[key]
        assert isinstance(value, int)
        return value

    def get_bool(self, key: str) -> bool:
        value = self._values[key]
        assert isinstance(value, bool)
        return value

    def validate(self) -> None:
        """Kafka's ranges and orderings; raises InvalidConfigError naming the config."""
        for name, value in self._values.items():
            message = range_error(name, value)
            if message is not None:
                raise InvalidConfigError(message)
        per_ip_overrides(self.get_str("max.connections.per.ip.overrides"))
        callback = self._values.get("client.quota.callback.class")
        if callback is not None:
            # Kafka's ConfigDef for a CLASS it cannot load (no Java classes here).
            raise InvalidConfigError(
                f"Invalid value {callback} for configuration client.quota.callback.class:"
                f" Class {callback} could not be found."
            )
        if self.get_int("max.connections.per.ip") == 0 and not self.get_str(
            "max.connections.per.ip.overrides"
        ):
            msg = "max.connections.per.ip.overrides must be set when max.connections.per.ip is 0"
            raise InvalidConfigError(msg)
        for low, high in ORDERED:
            a, b = self._values.get(low), self._values.get(high)
            if isinstance(a, int) and isinstance(b, int) and a > b:
                raise InvalidConfigError(f"{low} ({a}) must not be greater than {high} ({b})")

    def with_overrides(self, overrides: Mapping[str, object]) -> BrokerConfig:
        merged: dict[str, object] = dict(self._values)
        merged.update(overrides)
        out = BrokerConfig(merged)
        out._given = self._given | frozenset(overrides)
        return out

    def is_set(self, key: str) -> bool:
        """Whether ``key`` was given (at start or by ``with_overrides``), not defaulted."""
        return key in self._given

    @staticmethod
    def parse_assignments(pairs: list[str]) -> dict[str, str]:
        """Parse ``key=value`` strings from the command line."""
        out: dict[str, str] = {}
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep or not key:
                raise InvalidConfigError(f"expected key=value, got {pair!r}")
            out[key.strip()] = value.strip()
        return out

    @staticmethod
    def is_known(key: str) -> bool:
        return key in _BY_NAME

    @staticmethod
    def doc(key: str) -> str:
        return _BY_NAME[key].doc
