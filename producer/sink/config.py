"""Sink worker configuration: KIP-1302's names and defaults, resolution order, validation.

A worker is configured like ``connect-standalone.sh``: worker properties and connector
properties, given as two mappings or as one mapping holding both.

Worker keys: ``bootstrap.servers`` (required), ``consumer.group.protocol`` (``consumer``
default; KIP-1302: ``share`` enables share groups for every connector), ``consumer.<key>``
and ``producer.<key>`` client settings for every connector.

Connector keys: ``name`` and ``connector.class`` (a ``SinkTask`` subclass by dotted path)
required; ``tasks.max`` (1); ``topics`` (comma-separated) or ``topics.regex`` (a regular
expression a whole topic name matches; internal topics never match; the topics are looked
up again every ``consumer.metadata.max.age.ms``, 5 minutes), exactly one of them;
``key.converter``, ``value.converter``, ``header.converter`` (``producer.sink.converters``;
ByteArrayConverter by default) with their ``<key>.<setting>`` keys; Connect's
``errors.tolerance``, ``errors.retry.timeout``, ``errors.retry.delay.max.ms``,
``errors.log.enable`` and ``errors.log.include.messages`` (``producer.sink.errors``);
``consumer.override.group.protocol`` and ``consumer.override.<key>`` /
``producer.override.<key>`` (win over the worker's ``consumer.``/``producer.`` keys: the
KIP's "Configuration Resolution Order"); and the KIP's ``share.*`` keys:

=====================================  ==================  ===================================
key                                    default             meaning
=====================================  ==================  ===================================
``share.group.id``                     ``connect-<name>``  the share group
``share.acknowledgement.mode``         ``explicit``        ``explicit``: acknowledge and
                                                           commitSync after each ``put``;
                                                           ``implicit``: acknowledgements
                                                           ride on the next poll
``share.acquisition.lock.timeout.ms``  30000               set as the group's
                                                           ``share.record.lock.duration.ms``
``share.delivery.semantics``           ``at-least-once``   or ``exactly-once`` (KIP-1289)
``share.max.delivery.count``           5                   set as the group's
                                                           ``share.delivery.count.limit``;
                                                           a record failing at it goes to
                                                           the dead-letter queue
=====================================  ==================  ===================================

The two group settings are applied only when the key is given (the defaults are Kafka's
broker defaults, so an unset key leaves the group as an operator configured it).  Connect's
dead-letter keys: ``errors.deadletterqueue.topic.name``,
``errors.deadletterqueue.topic.replication.factor`` (3),
``errors.deadletterqueue.context.headers.enable`` (false).  Every other connector key is
the task's own (``file``, ``target.topic``, ...) and reaches ``SinkTask.start`` untouched.

Every error is a ``SinkConfigError`` whose message starts with the offending key.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from producer.consumer.share_consumer import DEFAULTS as SHARE_CONSUMER_DEFAULTS
from producer.consumer.share_consumer import ShareConsumerConfig
from producer.produce.transactional_producer import ProducerConfig
from producer.protocol.config_values import as_bool
from producer.sink.converters import load_converter
from producer.sink.errors import TOLERANCES, ErrorHandling
from txn.config import default_of

__all__ = [
    "AT_LEAST_ONCE",
    "EXACTLY_ONCE",
    "SinkConfig",
    "SinkConfigError",
    "resolve",
]

AT_LEAST_ONCE: Final = "at-least-once"
EXACTLY_ONCE: Final = "exactly-once"
SEMANTICS: Final = (AT_LEAST_ONCE, EXACTLY_ONCE)
ACK_MODES: Final = ("explicit", "implicit")
PROTOCOLS: Final = ("classic", "consumer", "share")

# KIP-1302's defaults (the lock and delivery limits are the broker's group defaults).
DEFAULT_LOCK_TIMEOUT_MS: Final[int] = default_of("group.share.record.lock.duration.ms")
DEFAULT_MAX_DELIVERY_COUNT: Final[int] = default_of("group.share.delivery.count.limit")
DEFAULT_DLQ_REPLICATION_FACTOR: Final = 3

# Consumer settings the worker decides itself (a user value would break the loop).
_WORKER_OWNED_CONSUMER: Final = {
    "group.id": "share.group.id",
    "share.acknowledgement.mode": "share.acknowledgement.mode",
    "bootstrap.servers": None,
}
_WORKER_OWNED_PRODUCER: Final = {
    "transactional.id": "transactional.id.prefix",
    "bootstrap.servers": None,
}
_PRODUCER_KEYS: Final = frozenset(
    {
        "transaction.timeout.ms",
        "linger.ms",
        "batch.size",
        "acks",
        "request.timeout.ms",
        "delivery.timeout.ms",
        "max.block.ms",
        "client.id",
        "retry.backoff.ms",
        "enable.idempotence",
        "compression.type",
    }
)
CONVERTER_KEYS: Final = ("key.converter", "value.converter", "header.converter")
#: How often ``topics.regex`` is matched again (the consumer's metadata.max.age.ms).
DEFAULT_METADATA_MAX_AGE_MS: Final = 300_000
_GROUP_ID = re.compile(r"[A-Za-z0-9._-]+")


class SinkConfigError(ValueError):
    """A bad sink configuration; the message starts with the key at fault."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key


@dataclass(frozen=True, slots=True)
class SinkConfig:
    """A resolved, checked sink configuration (worker and connector together)."""

    name: str
    connector_class: str
    tasks_max: int
    topics: tuple[str, ...]  # empty with topics_regex
    bootstrap_servers: str
    group_protocol: str
    share_group_id: str
    acknowledgement_mode: str
    delivery_semantics: str
    lock_timeout_ms: int | None  # None: not given, the group's setting stays
    max_delivery_count: int | None  # None: not given, the group's setting stays
    auto_offset_reset: str | None  # None: earliest unless the group has its own
    dlq_topic: str | None
    dlq_replication_factor: int
    dlq_context_headers: bool
    transactional_id_prefix: str
    topics_regex: str | None = None
    metadata_max_age_ms: int = DEFAULT_METADATA_MAX_AGE_MS
    converters: dict[str, str] = field(default_factory=dict)  # key -> class, where set
    errors: ErrorHandling = field(default_factory=ErrorHandling)
    consumer: dict[str, Any] = field(default_factory=dict)
    producer: dict[str, Any] = field(default_factory=dict)
    task: dict[str, str] = field(default_factory=dict)

    @property
    def exactly_once(self) -> bool:
        return self.delivery_semantics == EXACTLY_ONCE

    def matching(self, topics: list[str]) -> tuple[str, ...]:
        """The topics this connector reads among ``topics`` (all of ``self.topics``, or the
        ones ``topics.regex`` matches whole)."""
        if self.topics_regex is None:
            return self.topics
        pattern = re.compile(self.topics_regex)
        return tuple(sorted(t for t in topics if pattern.fullmatch(t)))

    def group_configs(self) -> dict[str, str]:
        """The share-group configs this connector sets (KIP-1302 key -> group config)."""
        out: dict[str, str] = {}
        if self.lock_timeout_ms is not None:
            out["share.record.lock.duration.ms"] = str(self.lock_timeout_ms)
        if self.max_delivery_count is not None:
            out["share.delivery.count.limit"] = str(self.max_delivery_count)
        if self.auto_offset_reset is not None:
            out["share.auto.offset.reset"] = self.auto_offset_reset
        return out

    def consumer_config(self) -> dict[str, Any]:
        """The ShareConsumer config of one task."""
        mode = "transactional" if self.exactly_once else "explicit"
        return {
            **self.consumer,
            "bootstrap.servers": self.consumer.get("bootstrap.servers", self.bootstrap_servers),
            "group.id": self.share_group_id,
            "share.acknowledgement.mode": mode,
        }

    def producer_config(self, task_id: int, *, transactional: bool) -> dict[str, Any]:
        """The producer config of one task (transactional in exactly-once mode)."""
        config: dict[str, Any] = {
            "client.id": f"connector-producer-{self.name}-{task_id}",
            **self.producer,
            "bootstrap.servers": self.producer.get("bootstrap.servers", self.bootstrap_servers),
        }
        if transactional:
            config["transactional.id"] = f"{self.transactional_id_prefix}-{task_id}"
        return config


def _text(props: Mapping[str, Any], key: str, default: str | None = None) -> str | None:
    raw = props.get(key)
    if raw is None:
        return default
    value = str(raw).strip()
    return value if value else default


def _int(props: Mapping[str, Any], key: str, default: int, minimum: int) -> int:
    raw = props.get(key)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return default
    try:
        if isinstance(raw, bool):
            raise TypeError
        value = int(str(raw).strip())
    except (TypeError, ValueError):
        raise SinkConfigError(key, f"must be an integer, not {raw!r}") from None
    if value < minimum:
        raise SinkConfigError(key, f"must be >= {minimum}, not {value}")
    return value


def _optional_int(props: Mapping[str, Any], key: str, minimum: int) -> int | None:
    if _text(props, key) is None:
        return None
    return _int(props, key, 0, minimum)


def _bool(props: Mapping[str, Any], key: str, default: bool) -> bool:
    raw = props.get(key)
    if raw is None:
        return default
    value = as_bool(raw if isinstance(raw, bool) else str(raw).strip())
    if value is None:
        raise SinkConfigError(key, f"must be true or false, not {raw!r}")
    return value


def _choice(props: Mapping[str, Any], key: str, default: str, choices: tuple[str, ...]) -> str:
    value = (_text(props, key, default) or default).lower()
    if value not in choices:
        raise SinkConfigError(key, f"must be one of {', '.join(choices)}, not {props[key]!r}")
    return value


def _prefixed(props: Mapping[str, Any], prefix: str, exclude: str | None = None) -> dict[str, Any]:
    """Keys under ``prefix`` (prefix stripped), each mapped to (value, full key)."""
    out: dict[str, Any] = {}
    for key, value in props.items():
        if key.startswith(prefix) and (exclude is None or not key.startswith(exclude)):
            out[key[len(prefix) :]] = (value, key)
    return out


def _client_settings(
    merged: dict[str, tuple[Any, str]],
    accepted: frozenset[str],
    owned: Mapping[str, str | None],
    kind: str,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, (value, full) in merged.items():
        if key in owned and key != "bootstrap.servers":
            instead = owned[key]
            hint = f"; set {instead} instead" if instead else ""
            raise SinkConfigError(full, f"the worker sets the {kind}'s {key} itself{hint}")
        if key not in accepted:
            raise SinkConfigError(full, f"unknown {kind} config {key!r}")
        out[key] = value
    return out


def _default_prefix(name: str) -> str:
    host = re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname()) or "host"
    return f"connect-{name}-{host}-{os.getpid()}"


def resolve(worker: Mapping[str, Any], connector: Mapping[str, Any] | None = None) -> SinkConfig:
    """Resolve worker and connector properties (one mapping may hold both) into a SinkConfig.

    Connector keys win over worker keys; ``consumer.override.X`` wins over ``consumer.X``.
    """
    props: dict[str, Any] = {**worker, **(connector or {})}
    for key, value in props.items():
        if not isinstance(key, str):
            raise SinkConfigError(str(key), "keys must be strings")
        if value is not None and not isinstance(value, str | int | bool):
            raise SinkConfigError(key, f"must be a string, not {type(value).__name__}")
    name = _text(props, "name")
    if name is None:
        raise SinkConfigError("name", "is required (the connector's name)")
    connector_class = _text(props, "connector.class")
    if connector_class is None:
        raise SinkConfigError("connector.class", "is required (a SinkTask subclass, dotted path)")
    bootstrap = _text(props, "bootstrap.servers")
    if bootstrap is None:
        raise SinkConfigError("bootstrap.servers", "is required (HOST:PORT[,HOST:PORT...])")
    topics = tuple(t.strip() for t in (_text(props, "topics") or "").split(",") if t.strip())
    topics_regex = _text(props, "topics.regex")
    # Connect's SinkConnectorConfig.validate messages
    if topics and topics_regex is not None:
        raise SinkConfigError(
            "topics", "topics and topics.regex are mutually exclusive options, but both are set."
        )
    if not topics and topics_regex is None:
        raise SinkConfigError("topics", "Must configure one of topics or topics.regex")
    if topics_regex is not None:
        try:
            re.compile(topics_regex)
        except re.error as exc:
            raise SinkConfigError("topics.regex", f"invalid regular expression: {exc}") from None
    converters: dict[str, str] = {}
    for key in CONVERTER_KEYS:
        converter = _text(props, key)
        try:
            load_converter(key, converter, {k: str(v) for k, v in props.items()})
        except ValueError as exc:
            raise SinkConfigError(key, str(exc).removeprefix(f"{key}: ")) from None
        if converter is not None:
            converters[key] = converter
    errors = ErrorHandling(
        tolerance=_choice(props, "errors.tolerance", "none", TOLERANCES),
        retry_timeout_ms=_int(props, "errors.retry.timeout", 0, -1),
        retry_delay_max_ms=_int(props, "errors.retry.delay.max.ms", 60_000, 1),
        log_enable=_bool(props, "errors.log.enable", False),
        log_include_messages=_bool(props, "errors.log.include.messages", False),
    )

    # The KIP's resolution order: the worker's consumer.group.protocol, then the
    # connector's consumer.override.group.protocol.
    protocol = _choice(props, "consumer.group.protocol", "consumer", PROTOCOLS)
    if _text(props, "consumer.override.group.protocol") is not None:
        protocol = _choice(props, "consumer.override.group.protocol", protocol, PROTOCOLS)
    if protocol != "share":
        raise SinkConfigError(
            "consumer.override.group.protocol",
            f"resolves to {protocol!r}; this worker runs share-group sinks only: set "
            "consumer.group.protocol=share (worker) or consumer.override.group.protocol=share "
            "(connector)",
        )

    group_id = _text(props, "share.group.id", f"connect-{name}") or f"connect-{name}"
    if not _GROUP_ID.fullmatch(group_id) or len(group_id) > 249:
        raise SinkConfigError(
            "share.group.id", f"{group_id!r} is not a valid group id ([A-Za-z0-9._-], <= 249)"
        )
    mode = _choice(props, "share.acknowledgement.mode", "explicit", ACK_MODES)
    semantics = _choice(props, "share.delivery.semantics", AT_LEAST_ONCE, SEMANTICS)
    if semantics == EXACTLY_ONCE and mode == "implicit":
        raise SinkConfigError(
            "share.acknowledgement.mode",
            "implicit cannot be used with share.delivery.semantics=exactly-once (the "
            "acknowledgements are committed with the outputs in one transaction)",
        )

    consumer_settings = {
        **_prefixed(props, "consumer.", exclude="consumer.override."),
        **_prefixed(props, "consumer.override."),
    }
    consumer_settings.pop("group.protocol", None)
    reset = consumer_settings.pop("auto.offset.reset", None)
    max_age = consumer_settings.pop("metadata.max.age.ms", None)
    metadata_max_age_ms = DEFAULT_METADATA_MAX_AGE_MS
    if max_age is not None:
        metadata_max_age_ms = _int({max_age[1]: max_age[0]}, max_age[1], 0, 0)
    auto_offset_reset: str | None = None
    if reset is not None:
        value, full = reset
        auto_offset_reset = str(value).strip().lower()
        if auto_offset_reset not in ("earliest", "latest"):
            raise SinkConfigError(full, f"must be earliest or latest, not {value!r}")
    producer_settings = {
        **_prefixed(props, "producer.", exclude="producer.override."),
        **_prefixed(props, "producer.override."),
    }
    consumer = _client_settings(
        consumer_settings,
        frozenset(SHARE_CONSUMER_DEFAULTS),
        _WORKER_OWNED_CONSUMER,
        "share consumer",
    )
    producer = _client_settings(
        producer_settings,
        _PRODUCER_KEYS | {"bootstrap.servers"},
        _WORKER_OWNED_PRODUCER,
        "producer",
    )
    _check_clients(consumer_settings, producer_settings)

    dlq_topic = _text(props, "errors.deadletterqueue.topic.name")
    if dlq_topic is not None and dlq_topic in topics:
        raise SinkConfigError(
            "topics",
            f"The DLQ topic '{dlq_topic}' may not be included in the list of topics "
            f"('topics={','.join(topics)}') consumed by the connector",
        )
    if dlq_topic is not None and topics_regex and re.fullmatch(topics_regex, dlq_topic):
        raise SinkConfigError(
            "topics.regex",
            f"The DLQ topic '{dlq_topic}' may not be matched by the regex for the topics "
            f"('topics.regex={topics_regex}') consumed by the connector",
        )
    prefix = _text(props, "transactional.id.prefix") or _default_prefix(name)
    return SinkConfig(
        name=name,
        connector_class=connector_class,
        tasks_max=_int(props, "tasks.max", 1, 1),
        topics=topics,
        bootstrap_servers=bootstrap,
        group_protocol=protocol,
        share_group_id=group_id,
        acknowledgement_mode=mode,
        delivery_semantics=semantics,
        lock_timeout_ms=_optional_int(props, "share.acquisition.lock.timeout.ms", 1000),
        max_delivery_count=_optional_int(props, "share.max.delivery.count", 1),
        auto_offset_reset=auto_offset_reset,
        dlq_topic=dlq_topic,
        dlq_replication_factor=_int(
            props, "errors.deadletterqueue.topic.replication.factor", 3, -1
        ),
        dlq_context_headers=_bool(props, "errors.deadletterqueue.context.headers.enable", False),
        transactional_id_prefix=prefix,
        topics_regex=topics_regex,
        metadata_max_age_ms=metadata_max_age_ms,
        converters=converters,
        errors=errors,
        consumer=consumer,
        producer=producer,
        task={k: str(v) for k, v in props.items() if v is not None},
    )


def _check_clients(
    consumer: dict[str, tuple[Any, str]], producer: dict[str, tuple[Any, str]]
) -> None:
    """Let the clients' own parsers check the values, reporting the sink key at fault."""
    checks: list[tuple[dict[str, tuple[Any, str]], Any, dict[str, Any]]] = [
        (consumer, ShareConsumerConfig.parse, {"bootstrap.servers": "x:1", "group.id": "g"}),
        (producer, ProducerConfig.parse, {"bootstrap.servers": "x:1"}),
    ]
    for settings, parse, base in checks:
        values = {k: v for k, (v, _full) in settings.items() if k != "bootstrap.servers"}
        try:
            parse({**base, **values})
        except (TypeError, ValueError) as exc:
            text = str(exc)
            culprit = next(
                (full for k, (_v, full) in settings.items() if k in text),
                next(iter(settings.values()))[1] if settings else "config",
            )
            raise SinkConfigError(culprit, text) from None
