"""DescribeConfigs of a topic as Kafka answers it: every topic config, set or not.

Kafka's rules (its ConfigHelper over LogConfig), observed by the differential suite
(``tests/reference/differential/scenarios_config_describe.py``):

* every topic config Kafka defines is listed; an internal one (``internal.segment.bytes``)
  only when the topic sets it;
* the value is the topic's override (as Kafka prints the parsed value back), else the value
  the broker's synonym gives it, else the topic default;
* the synonyms chain is the topic override (DYNAMIC_TOPIC_CONFIG), then the broker settings
  that give the default (STATIC_BROKER_CONFIG for those set at start, then DEFAULT_CONFIG
  for those with a default), from the first broker synonym Kafka names for the config on:
  a config whose first broker synonym has no default (``retention.ms`` before
  ``log.retention.ms`` is set) has an empty chain;
* the source is the chain's first entry's, DEFAULT_CONFIG when the chain is empty; no topic
  config is sensitive or read-only.

Kafka's storage tool writes a cluster-wide ``min.insync.replicas`` when it formats a
cluster; a dynamic cluster default, it heads that config's chain.  sharetxn answers the same.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import Final

from coordinator.broker_dynamic import NO_DYNAMIC, DynamicLayers
from coordinator.protocol.cluster_messages import (
    DescribeConfigsResourceResult,
    DescribeConfigsSynonym,
)
from coordinator.share.group_config import INTERNAL_GROUP_CONFIGS
from coordinator.share.streams_group_config import (
    STREAMS_DOCS,
    STREAMS_GROUP_CONFIGS,
    STREAMS_LISTS,
    STREAMS_STRINGS,
    streams_synonym,
)
from txn.broker_config_defs import (
    DYNAMIC_BROKER_CONFIGS,
    broker_config_type,
    is_kafka_config,
    is_read_only,
    listener_base_name,
)
from txn.config import CONFIG_DEFS, BrokerConfig
from txn.limits import LONG_MAX
from txn.security_config import is_sensitive
from txn.topic_config_defs import (
    KEEP_PRODUCER_CODEC,
    TOPIC_CONFIG_DEFS,
    ConfigType,
    canonical_value,
)
from txn.topic_names import MAX_NAME_LENGTH, topic_name_error

__all__ = [
    "TYPE_IDS",
    "ConfigSource",
    "broker_resource_error",
    "describe_broker_configs",
    "describe_cluster_default_configs",
    "describe_group_configs",
    "describe_topic_configs",
    "describe_topic_name_error",
]


class ConfigSource:
    """Kafka's DescribeConfigs ``config_source`` ids."""

    TOPIC = 1
    DYNAMIC_BROKER = 2
    DYNAMIC_DEFAULT_BROKER = 3
    STATIC_BROKER = 4
    DEFAULT = 5
    GROUP = 8


#: Kafka's DescribeConfigs ``config_type`` ids.
TYPE_IDS: Final[Mapping[ConfigType, int]] = {
    ConfigType.BOOLEAN: 1,
    ConfigType.STRING: 2,
    ConfigType.INT: 3,
    ConfigType.LONG: 5,
    ConfigType.DOUBLE: 6,
    ConfigType.LIST: 7,
}

_LONG_MAX = str(LONG_MAX)


@dataclass(frozen=True, slots=True)
class _Topic:
    default: str  # Kafka's topic default, used when no broker setting gives one
    synonyms: tuple[str, ...]  # the broker settings giving the default, first one first
    doc: str


def _t(default: str, doc: str, *synonyms: str) -> _Topic:
    return _Topic(default, synonyms, doc)


_RETENTION = ("log.retention.ms", "log.retention.minutes", "log.retention.hours")
_ROLL = ("log.roll.ms", "log.roll.hours")
_JITTER = ("log.roll.jitter.ms", "log.roll.jitter.hours")

_TOPICS: Final[Mapping[str, _Topic]] = {
    "cleanup.policy": _t(
        "delete", "What happens to old segments: delete, compact, or both.", "log.cleanup.policy"
    ),
    "compression.gzip.level": _t(
        "-1", "Compression level when compression.type is gzip.", "compression.gzip.level"
    ),
    "compression.lz4.level": _t(
        "9", "Compression level when compression.type is lz4.", "compression.lz4.level"
    ),
    "compression.type": _t(
        KEEP_PRODUCER_CODEC,
        "Codec the log keeps batches in; producer keeps the producer's own.",
        "compression.type",
    ),
    "compression.zstd.level": _t(
        "3", "Compression level when compression.type is zstd.", "compression.zstd.level"
    ),
    "delete.retention.ms": _t(
        "86400000",
        "How long tombstones stay readable in a compacted log.",
        "log.cleaner.delete.retention.ms",
    ),
    "errors.deadletterqueue.group.enable": _t(
        "false", "Whether share groups may use this topic as their dead-letter queue."
    ),
    "file.delete.delay.ms": _t(
        "60000",
        "Delay before a deleted segment's files are removed from disk.",
        "log.segment.delete.delay.ms",
    ),
    "flush.messages": _t(
        _LONG_MAX, "Records written between two fsyncs of the log.", "log.flush.interval.messages"
    ),
    "flush.ms": _t(
        _LONG_MAX, "Longest time written data waits for an fsync.", "log.flush.interval.ms"
    ),
    "follower.replication.throttled.replicas": _t(
        "", "Replicas whose follower-side replication is throttled (partition:broker, or *)."
    ),
    "index.interval.bytes": _t(
        "4096", "Bytes of records between two offset-index entries.", "log.index.interval.bytes"
    ),
    "leader.replication.throttled.replicas": _t(
        "", "Replicas whose leader-side replication is throttled (partition:broker, or *)."
    ),
    "local.retention.bytes": _t(
        "-2",
        "Bytes kept on local disk when tiered storage is on (-2: retention.bytes).",
        "log.local.retention.bytes",
    ),
    "local.retention.ms": _t(
        "-2",
        "Time kept on local disk when tiered storage is on (-2: retention.ms).",
        "log.local.retention.ms",
    ),
    "max.compaction.lag.ms": _t(
        _LONG_MAX,
        "Longest time a record may stay uncompacted.",
        "log.cleaner.max.compaction.lag.ms",
    ),
    "max.decompressed.message.bytes": _t(
        "2147483639",
        "Largest decompressed size of a batch the broker reads.",
        "max.decompressed.message.bytes",
    ),
    "max.message.bytes": _t(
        "1048588", "Largest record batch the topic accepts.", "message.max.bytes"
    ),
    "message.timestamp.after.max.ms": _t(
        "3600000",
        "How far ahead of the broker's clock a record's timestamp may be.",
        "log.message.timestamp.after.max.ms",
    ),
    "message.timestamp.before.max.ms": _t(
        _LONG_MAX,
        "How far behind the broker's clock a record's timestamp may be.",
        "log.message.timestamp.before.max.ms",
    ),
    "message.timestamp.type": _t(
        "CreateTime",
        "CreateTime keeps the producer's timestamps; LogAppendTime uses the broker's clock.",
        "log.message.timestamp.type",
    ),
    "min.cleanable.dirty.ratio": _t(
        "0.5",
        "Share of uncompacted log that makes the cleaner compact it.",
        "log.cleaner.min.cleanable.ratio",
    ),
    "min.compaction.lag.ms": _t(
        "0",
        "Shortest time a record stays uncompacted.",
        "log.cleaner.min.compaction.lag.ms",
    ),
    "min.insync.replicas": _t(
        "1", "Replicas that must have a write for acks=all to succeed.", "min.insync.replicas"
    ),
    "preallocate": _t("false", "Whether new segment files are preallocated.", "log.preallocate"),
    "remote.copy.lag.bytes": _t(
        "-1",
        "Bytes of rolled segments waiting for upload to tiered storage.",
        "log.remote.copy.lag.bytes",
    ),
    "remote.copy.lag.ms": _t(
        "0",
        "Time a rolled segment waits for upload to tiered storage.",
        "log.remote.copy.lag.ms",
    ),
    "remote.log.copy.disable": _t(
        "false", "Whether copying segments to tiered storage is stopped."
    ),
    "remote.log.delete.on.disable": _t(
        "false", "Whether tiered data is deleted when tiered storage is turned off."
    ),
    "remote.storage.enable": _t("false", "Whether the topic uses tiered storage."),
    "retention.bytes": _t(
        "-1", "Largest size a partition's log keeps (-1: no limit).", "log.retention.bytes"
    ),
    "retention.ms": _t("604800000", "How long records are kept (-1: forever).", *_RETENTION),
    "segment.bytes": _t("1073741824", "Size at which a segment is rolled.", "log.segment.bytes"),
    "segment.index.bytes": _t(
        "10485760", "Size of a segment's offset and time indexes.", "log.index.size.max.bytes"
    ),
    "segment.jitter.ms": _t("0", "Random time taken off segment.ms per segment.", *_JITTER),
    "segment.ms": _t("604800000", "Age at which a segment is rolled.", *_ROLL),
    "unclean.leader.election.enable": _t(
        "false",
        "Whether a replica out of the ISR may become leader.",
        "unclean.leader.election.enable",
    ),
}

_INTERNAL_DOCS: Final[Mapping[str, str]] = {
    "internal.segment.bytes": "Testing override of segment.bytes, without its lower bound.",
}

#: Broker settings sharetxn does not take (fixed at Kafka's defaults); None: no default.
_FIXED_BROKER: Final[Mapping[str, str | None]] = {
    "log.index.size.max.bytes": "10485760",
    "unclean.leader.election.enable": "false",
    "min.insync.replicas": "1",
    "log.preallocate": "false",
    "log.local.retention.ms": "-2",
    "log.local.retention.bytes": "-2",
    "log.remote.copy.lag.bytes": "-1",
    "log.remote.copy.lag.ms": "0",
    "max.decompressed.message.bytes": "2147483639",
}

#: sharetxn's "unset" value of a broker setting Kafka leaves null (-1: no time-based fsync).
_UNSET: Final[Mapping[str, object]] = {"log.flush.interval.ms": -1}

#: Written by Kafka's storage tool as a dynamic cluster default when it formats a cluster.
_FORMATTED_DEFAULTS: Final = frozenset({"min.insync.replicas"})


def _text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _static(broker: BrokerConfig, name: str) -> str | None:
    """The value the broker was started with for ``name``, or None when not set."""
    if name not in broker or not broker.is_set(name):
        return None
    value = broker[name]
    if value is None or _UNSET.get(name, object()) == value:
        return None
    return _text(value)


def _default(name: str) -> str | None:
    if name in _FIXED_BROKER:
        return _FIXED_BROKER[name]
    if not BrokerConfig.is_known(name):
        return None
    builtin = BrokerConfig()[name]
    if builtin is None or _UNSET.get(name, object()) == builtin:
        return None
    return _text(builtin)


def _effective(broker: BrokerConfig, name: str) -> str | None:
    """The value the broker's own settings give ``name`` (static, else default)."""
    static = _static(broker, name)
    return static if static is not None else _default(name)


def _cluster_value(broker: BrokerConfig, dynamic: DynamicLayers, name: str) -> str | None:
    """``name``'s cluster-default dynamic value: set with an alter, or the one Kafka's
    storage tool writes when it formats a cluster."""
    value = dynamic.cluster.get(name)
    if value is None and name in _FORMATTED_DEFAULTS:
        return _effective(broker, name)
    return value


def _broker_chain(
    broker: BrokerConfig, synonyms: tuple[str, ...], dynamic: DynamicLayers = NO_DYNAMIC
) -> list[DescribeConfigsSynonym]:
    """Kafka's synonyms of a config: every synonym's per-broker dynamic value, then each
    one's cluster default, static value and built-in default, from the config's own name on."""
    if not synonyms:
        return []
    primary = synonyms[0]
    chain: list[DescribeConfigsSynonym] = []
    for name in synonyms:
        if name in dynamic.broker:
            chain.append(_synonym(name, dynamic.broker[name], ConfigSource.DYNAMIC_BROKER))
    for name in synonyms:
        value = _cluster_value(broker, dynamic, name)
        if value is not None:
            chain.append(_synonym(name, value, ConfigSource.DYNAMIC_DEFAULT_BROKER))
    for name in synonyms:
        static = _static(broker, name)
        if static is not None:
            chain.append(_synonym(name, static, ConfigSource.STATIC_BROKER))
    for name in synonyms:
        default = _default(name)
        if default is not None:
            chain.append(_synonym(name, default, ConfigSource.DEFAULT))
    while chain and chain[0].name != primary:
        chain.pop(0)
    return chain


def _synonym(name: str, value: str | None, source: int) -> DescribeConfigsSynonym:
    return DescribeConfigsSynonym(name=name, value=value, source=source)


def _broker_value(broker: BrokerConfig, spec: _Topic, dynamic: DynamicLayers = NO_DYNAMIC) -> str:
    """The value a topic that does not set the config has: the first of the broker's
    synonyms set dynamically for this broker, then for the cluster, then at start
    (``log.retention.ms`` over ``.minutes`` over ``.hours``), else the first with a default,
    else the topic default."""
    picks = (
        lambda _broker, name: dynamic.broker.get(name),
        lambda _broker, name: dynamic.cluster.get(name),
        _static,
        lambda _broker, name: _default(name),
    )
    for pick in picks:
        for synonym in spec.synonyms:
            given = pick(broker, synonym)
            if given is not None:
                return str(int(given) * _MS[synonym]) if synonym in _MS else given
    return spec.default


_MS: Final[Mapping[str, int]] = {
    "log.retention.minutes": 60_000,
    "log.retention.hours": 3_600_000,
    "log.roll.hours": 3_600_000,
    "log.roll.jitter.hours": 3_600_000,
}


def _scaled(name: str, value: int) -> int:
    return value * _MS.get(name, 1)


def describe_topic_configs(
    broker: BrokerConfig,
    topic_configs: Mapping[str, str],
    keys: Collection[str] | None,
    *,
    include_synonyms: bool,
    include_documentation: bool,
    dynamic: DynamicLayers = NO_DYNAMIC,
) -> list[DescribeConfigsResourceResult]:
    """A topic's DescribeConfigs entries (only ``keys`` when given), sorted by name."""
    names = [*_TOPICS, *(n for n in _INTERNAL_DOCS if n in topic_configs)]
    out: list[DescribeConfigsResourceResult] = []
    for name in sorted(names):
        if keys is not None and name not in keys:
            continue
        spec = _TOPICS.get(name)
        chain = _broker_chain(broker, spec.synonyms, dynamic) if spec is not None else []
        override = topic_configs.get(name)
        if override is not None:
            value: str | None = canonical_value(name, override)
            chain.insert(0, _synonym(name, value, ConfigSource.TOPIC))
        else:
            value = _broker_value(broker, spec, dynamic) if spec is not None else None
        doc = spec.doc if spec is not None else _INTERNAL_DOCS[name]
        out.append(
            DescribeConfigsResourceResult(
                name=name,
                value=value,
                read_only=False,
                config_source=chain[0].source if chain else ConfigSource.DEFAULT,
                synonyms=tuple(chain) if include_synonyms else (),
                config_type=TYPE_IDS[TOPIC_CONFIG_DEFS[name].type],
                documentation=doc if include_documentation else None,
            )
        )
    return out


def describe_topic_name_error(name: str) -> str | None:
    """Why DescribeConfigs refuses ``name`` (INVALID_TOPIC_EXCEPTION), in the words of
    Kafka's ``Topic.validate`` used there (not those of CreateTopics), or None."""
    if topic_name_error(name) is None:
        return None
    if not name:
        reason = "the empty string is not allowed"
    elif name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name) > MAX_NAME_LENGTH:
        reason = f"the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
    else:
        reason = (
            f"'{name}' contains one or more characters other than ASCII alphanumerics,"
            " '.', '_' and '-'"
        )
    return f"Topic name is invalid: {reason}"


def broker_resource_error(node_id: int, name: str, *, describe: bool) -> str | None:
    """Why a BROKER resource named ``name`` is not this broker ("" is the cluster default),
    in Kafka's words for DescribeConfigs (``describe``) or an alter; None when it is."""
    if name == "":
        return None
    try:
        number = int(name)
    except ValueError:
        noun = "Broker" if describe else "Node"
        return f"{noun} id must be an integer, but it is: {name}"
    if number == node_id:
        return None
    expected = f"{node_id} or empty string" if describe else str(node_id)
    return f"Unexpected broker id, expected {expected}, but received {name}"


def _broker_synonyms(name: str) -> tuple[str, ...]:
    for group in (_RETENTION, _ROLL, _JITTER):
        if name in group:
            return group[group.index(name) :]
    return (name,)


def describe_broker_configs(
    broker: BrokerConfig,
    keys: Collection[str] | None,
    *,
    include_synonyms: bool,
    include_documentation: bool,
    dynamic: DynamicLayers = NO_DYNAMIC,
) -> list[DescribeConfigsResourceResult]:
    """This broker's DescribeConfigs entries: every config it takes, set dynamically for it
    (DYNAMIC_BROKER_CONFIG) or the cluster (DYNAMIC_DEFAULT_BROKER_CONFIG), set at start
    (STATIC_BROKER_CONFIG) or not (DEFAULT_CONFIG), and the other configs set dynamically;
    read-only unless Kafka updates it dynamically; secrets hidden."""
    taken = {defn.name for defn in CONFIG_DEFS}
    out = [
        replace(e, config_source=ConfigSource.DYNAMIC_BROKER) if e.name in dynamic.broker else e
        for e in describe_cluster_default_configs(
            keys,
            include_synonyms=include_synonyms,
            include_documentation=include_documentation,
            dynamic=DynamicLayers(dynamic.broker, {**dynamic.cluster, **dynamic.broker}),
            skip=taken,
        )
    ]
    if include_synonyms:  # each chain as this broker sees it, down to the built-in default
        out = [
            replace(e, synonyms=_other_chain(broker, e.name, dynamic, sensitive=e.is_sensitive))
            for e in out
        ]
    for defn in CONFIG_DEFS:
        if keys is not None and defn.name not in keys:
            continue
        sensitive = is_sensitive(defn.name)
        chain = _broker_chain(broker, _broker_synonyms(defn.name), dynamic)
        raw = broker[defn.name]
        value = None if raw is None or _UNSET.get(defn.name, object()) == raw else _text(raw)
        given = dynamic.broker.get(defn.name, dynamic.cluster.get(defn.name))
        if given is not None:
            value = given
        if sensitive:
            value = None
            chain = [
                DescribeConfigsSynonym(name=s.name, value=None, source=s.source) for s in chain
            ]
        out.append(
            DescribeConfigsResourceResult(
                name=defn.name,
                value=value,
                read_only=is_read_only(defn.name),
                config_source=chain[0].source if chain else ConfigSource.DEFAULT,
                is_sensitive=sensitive,
                synonyms=tuple(chain) if include_synonyms else (),
                config_type=broker_config_type(defn.name, defn.type),
                documentation=defn.doc if include_documentation else None,
            )
        )
    return sorted(out, key=lambda e: e.name)


def _other_chain(
    broker: BrokerConfig, name: str, dynamic: DynamicLayers, *, sensitive: bool
) -> tuple[DescribeConfigsSynonym, ...]:
    """The synonyms of a config the broker does not take: its dynamic values, then its
    built-in default where Kafka has one sharetxn knows."""
    chain = _broker_chain(broker, (name,), dynamic)
    if sensitive:
        chain = [replace(s, value=None) for s in chain]
    return tuple(chain)


def _dynamic_type(name: str) -> int:
    """Kafka's type id of a dynamic config the broker does not take."""
    if name in _FORMATTED_DEFAULTS:
        return TYPE_IDS[ConfigType.INT]
    base = listener_base_name(name) or name
    kafka = broker_config_type(base, "")
    if kafka:
        return kafka
    defn = DYNAMIC_BROKER_CONFIGS.get(base)
    return TYPE_IDS[defn.type if defn is not None else ConfigType.STRING]


def describe_cluster_default_configs(
    keys: Collection[str] | None,
    *,
    include_synonyms: bool,
    include_documentation: bool,
    dynamic: DynamicLayers = NO_DYNAMIC,
    skip: Collection[str] = (),
) -> list[DescribeConfigsResourceResult]:
    """The cluster-wide dynamic defaults: the one Kafka's storage tool writes and those set
    with an alter (``skip``: names described elsewhere)."""
    values = {"min.insync.replicas": "1", **dynamic.cluster}
    out = []
    for name, value in sorted(values.items()):
        if (keys is not None and name not in keys) or name in skip:
            continue
        custom = not is_kafka_config(name)  # Kafka: unknown type, so sensitive and read-only
        sensitive = custom or is_sensitive(listener_base_name(name) or name)
        chain = (_synonym(name, None if sensitive else value, ConfigSource.DYNAMIC_DEFAULT_BROKER),)
        spec = _TOPICS.get(name)
        doc = spec.doc if spec is not None else DYNAMIC_DOC
        out.append(
            DescribeConfigsResourceResult(
                name=name,
                value=None if sensitive else value,
                read_only=custom,
                config_source=ConfigSource.DYNAMIC_DEFAULT_BROKER,
                is_sensitive=sensitive,
                synonyms=chain if include_synonyms else (),
                config_type=0 if custom else _dynamic_type(name),
                documentation=doc if include_documentation and not custom else None,
            )
        )
    return out


DYNAMIC_DOC = "A broker config set at run time (sharetxn describes it, its broker does not use it)."


#: A group's config -> the broker setting giving its default (None: a fixed default).
_GROUP_SYNONYMS: Final[Mapping[str, str | None]] = {
    "consumer.assignment.interval.ms": "group.consumer.assignment.interval.ms",
    "consumer.heartbeat.interval.ms": "group.consumer.heartbeat.interval.ms",
    "consumer.session.timeout.ms": "group.consumer.session.timeout.ms",
    "errors.deadletterqueue.copy.record.enable": None,
    "errors.deadletterqueue.topic.name": None,
    "share.assignment.interval.ms": "group.share.assignment.interval.ms",
    "share.auto.offset.reset": None,
    "share.delivery.count.limit": "group.share.delivery.count.limit",
    "share.heartbeat.interval.ms": "group.share.heartbeat.interval.ms",
    "share.isolation.level": None,
    "share.partition.max.record.locks": "group.share.partition.max.record.locks",
    "share.record.lock.duration.ms": "group.share.record.lock.duration.ms",
    "share.renew.acknowledge.enable": None,
    "share.session.timeout.ms": "group.share.session.timeout.ms",
}
#: Kafka's BOOLEAN group configs (the internal ones too); the rest without a synonym are
#: STRING, with one INT.
_GROUP_BOOLEANS: Final[frozenset[str]] = frozenset(
    (
        "errors.deadletterqueue.copy.record.enable",
        "share.renew.acknowledge.enable",
        *INTERNAL_GROUP_CONFIGS,
    )
)
_GROUP_DOCS: Final[Mapping[str, str]] = {
    "consumer.assignment.interval.ms": "How often a KIP-848 group's assignment is computed"
    " (sharetxn computes it at once).",
    "consumer.heartbeat.interval.ms": "Heartbeat interval of the consumer group's members.",
    "consumer.session.timeout.ms": "How long a consumer group member may go without heartbeating.",
    "errors.deadletterqueue.copy.record.enable": "Whether the dead-letter queue holds copies"
    " of the records (sharetxn has no dead-letter queues).",
    "errors.deadletterqueue.topic.name": "The share group's dead-letter queue topic"
    " (sharetxn has no dead-letter queues).",
    "share.assignment.interval.ms": "How often a share group's assignment is computed"
    " (sharetxn computes it at once).",
    "share.partition.max.record.locks": "Records in flight per share partition.",
    "share.renew.acknowledge.enable": "Whether members may renew their acquisition locks"
    " (RENEW acknowledgements).",
    "share.auto.offset.reset": "Where a share group starts reading a partition it has no "
    "state for: latest, earliest or by_duration:<ISO-8601 duration>.",
    "share.delivery.count.limit": "Deliveries of a record before it is archived.",
    "share.heartbeat.interval.ms": "Heartbeat interval of the group's members.",
    "share.isolation.level": "Whether the group reads uncommitted transactional records.",
    "share.record.lock.duration.ms": "How long an acquired record stays locked to a member.",
    "share.session.timeout.ms": "How long a member may go without heartbeating.",
}


def describe_group_configs(
    broker: BrokerConfig,
    configs: Mapping[str, tuple[str, bool]],
    keys: Collection[str] | None,
    *,
    include_synonyms: bool,
    include_documentation: bool,
) -> list[DescribeConfigsResourceResult]:
    """A group's DescribeConfigs entries from its configs (name -> (value, is_default)):
    an override is a GROUP_CONFIG, followed in the chain by the broker setting that gives
    the default."""
    out: list[DescribeConfigsResourceResult] = []
    for name, (value, is_default) in sorted(configs.items()):
        if keys is not None and name not in keys:
            continue
        synonym = _GROUP_SYNONYMS.get(name)
        internal = INTERNAL_GROUP_CONFIGS.get(name)
        if name in STREAMS_GROUP_CONFIGS:
            chain = [_synonym(*streams_synonym(name), ConfigSource.DEFAULT)]
        elif internal is not None:
            chain = [_synonym(internal, "true", ConfigSource.DEFAULT)]
        elif synonym is None:
            chain = [_synonym(name, _FIXED_GROUP.get(name, value), ConfigSource.DEFAULT)]
        else:
            chain = _broker_chain(broker, (synonym,))
        if not is_default:
            chain.insert(0, _synonym(name, value, ConfigSource.GROUP))
        out.append(
            DescribeConfigsResourceResult(
                name=name,
                value=value,
                read_only=False,
                config_source=chain[0].source,
                synonyms=tuple(chain) if include_synonyms else (),
                config_type=TYPE_IDS[_group_type(name, synonym)],
                documentation=(
                    _GROUP_DOCS.get(name, STREAMS_DOCS.get(name, ""))
                    if include_documentation
                    else None
                ),
            )
        )
    return out


def _group_type(name: str, synonym: str | None) -> ConfigType:
    if name in _GROUP_BOOLEANS:
        return ConfigType.BOOLEAN
    if name in STREAMS_GROUP_CONFIGS:
        if name in STREAMS_LISTS:
            return ConfigType.LIST
        return ConfigType.STRING if name in STREAMS_STRINGS else ConfigType.INT
    return ConfigType.INT if synonym else ConfigType.STRING


_FIXED_GROUP: Final[Mapping[str, str]] = {
    "errors.deadletterqueue.copy.record.enable": "false",
    "errors.deadletterqueue.topic.name": "",
    "share.auto.offset.reset": "latest",
    "share.isolation.level": "read_uncommitted",
    "share.renew.acknowledge.enable": "true",
}
