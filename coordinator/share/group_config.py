"""Dynamic group configs (KIP-932 / KIP-848 "group configs"): names, defaults, validation.

A group may override a few broker settings (``kafka-configs --entity-type groups``).
Each integer config defaults to the broker config of the same name with a ``group.`` prefix and
must lie within the broker's ``group.<kind>.min.*`` / ``group.<kind>.max.*`` bounds:

* ``consumer.session.timeout.ms`` and ``consumer.heartbeat.interval.ms`` (KIP-848 consumer
  groups): ``group.consumer.session.timeout.ms`` / ``group.consumer.heartbeat.interval.ms``,
  bounded by ``group.consumer.min.*`` .. ``group.consumer.max.*``;
* ``share.session.timeout.ms``: ``group.share.session.timeout.ms``, bounded by
  ``group.share.min.session.timeout.ms`` .. ``group.share.max.session.timeout.ms``;
* ``share.heartbeat.interval.ms``: ``group.share.heartbeat.interval.ms``, bounded likewise;
* ``share.record.lock.duration.ms``: ``group.share.record.lock.duration.ms``, bounded likewise;
* ``share.delivery.count.limit``: ``group.share.delivery.count.limit``, bounded likewise.

The string configs have fixed defaults: ``share.auto.offset.reset`` is ``latest`` (or
``earliest``, or ``by_duration:<ISO-8601 duration>``) and ``share.isolation.level`` is
``read_uncommitted`` (or ``read_committed``, case-sensitive as in Kafka).

The min/max broker keys use Kafka's names (``group.share.min.session.timeout.ms``, not
``...session.timeout.ms.min``); their defaults are ``txn.config``'s, and a value present in the
broker config always wins.

Overrides are validated when they are altered (out of range -> INVALID_CONFIG naming the bound)
and clamped into the broker's current bounds when read, as Kafka does once the bounds change
under an existing override.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from coordinator.share.streams_group_config import (
    STREAMS_DEFAULTS,
    STREAMS_GROUP_CONFIGS,
    normalize_streams,
)
from txn.config import default_of
from txn.errors import ErrorCode, InvalidConfigError
from txn.limits import INT32_MAX, INT32_MIN

SESSION_TIMEOUT_MS = "share.session.timeout.ms"
HEARTBEAT_INTERVAL_MS = "share.heartbeat.interval.ms"
RECORD_LOCK_DURATION_MS = "share.record.lock.duration.ms"
DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"
AUTO_OFFSET_RESET = "share.auto.offset.reset"
ISOLATION_LEVEL = "share.isolation.level"
CONSUMER_SESSION_TIMEOUT_MS = "consumer.session.timeout.ms"
CONSUMER_HEARTBEAT_INTERVAL_MS = "consumer.heartbeat.interval.ms"
CONSUMER_ASSIGNMENT_INTERVAL_MS = "consumer.assignment.interval.ms"
PARTITION_MAX_RECORD_LOCKS = "share.partition.max.record.locks"
SHARE_ASSIGNMENT_INTERVAL_MS = "share.assignment.interval.ms"
RENEW_ACKNOWLEDGE_ENABLE = "share.renew.acknowledge.enable"
DLQ_TOPIC_NAME = "errors.deadletterqueue.topic.name"
DLQ_COPY_RECORD_ENABLE = "errors.deadletterqueue.copy.record.enable"

READ_UNCOMMITTED = "read_uncommitted"
READ_COMMITTED = "read_committed"

# The broker keys that bound the group configs and give their defaults (Kafka's
# GroupCoordinatorConfig and ShareGroupConfig); their defaults are txn.config's.
_BOUND_KEYS = tuple(
    f"group.share.{kind}.{name}"
    for name in (
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "record.lock.duration.ms",
        "delivery.count.limit",
        "partition.max.record.locks",
        "assignment.interval.ms",
    )
    for kind in ("min", "max")
) + tuple(
    f"group.consumer.{kind}.{name}"
    for name in ("session.timeout.ms", "heartbeat.interval.ms", "assignment.interval.ms")
    for kind in ("min", "max")
)
BROKER_BOUND_DEFAULTS: dict[str, int] = {key: int(default_of(key)) for key in _BOUND_KEYS}


@dataclass(frozen=True, slots=True)
class _IntConfig:
    name: str
    broker_key: str  # the broker config that gives the default
    floor: int  # Kafka's own lower bound for the type (atLeast)

    @property
    def min_key(self) -> str:
        family, _, rest = self.broker_key.partition(".")[2].partition(".")
        return f"group.{family}.min.{rest}"

    @property
    def max_key(self) -> str:
        family, _, rest = self.broker_key.partition(".")[2].partition(".")
        return f"group.{family}.max.{rest}"


_INT_CONFIGS: dict[str, _IntConfig] = {
    c.name: c
    for c in (
        _IntConfig(CONSUMER_SESSION_TIMEOUT_MS, "group.consumer.session.timeout.ms", 1),
        _IntConfig(CONSUMER_HEARTBEAT_INTERVAL_MS, "group.consumer.heartbeat.interval.ms", 1),
        _IntConfig(SESSION_TIMEOUT_MS, "group.share.session.timeout.ms", 1),
        _IntConfig(HEARTBEAT_INTERVAL_MS, "group.share.heartbeat.interval.ms", 1),
        _IntConfig(RECORD_LOCK_DURATION_MS, "group.share.record.lock.duration.ms", 1000),
        _IntConfig(DELIVERY_COUNT_LIMIT, "group.share.delivery.count.limit", 2),
        _IntConfig(PARTITION_MAX_RECORD_LOCKS, "group.share.partition.max.record.locks", 100),
        _IntConfig(CONSUMER_ASSIGNMENT_INTERVAL_MS, "group.consumer.assignment.interval.ms", 0),
        _IntConfig(SHARE_ASSIGNMENT_INTERVAL_MS, "group.share.assignment.interval.ms", 0),
    )
}

_STRING_DEFAULTS: dict[str, str] = {
    AUTO_OFFSET_RESET: "latest",
    ISOLATION_LEVEL: READ_UNCOMMITTED,
    DLQ_TOPIC_NAME: "",
}

#: Kafka 4.4's BOOLEAN group configs and their fixed defaults.
_BOOL_DEFAULTS: dict[str, str] = {
    RENEW_ACKNOWLEDGE_ENABLE: "true",
    DLQ_COPY_RECORD_ENABLE: "false",
}

#: Kafka's internal group configs (GroupConfig.isInternal): accepted, described only when set
#: (or named), each defaulting to the broker setting ``group.<name>`` (true).
INTERNAL_GROUP_CONFIGS: dict[str, str] = {
    "consumer.assignor.offload.enable": "group.consumer.assignor.offload.enable",
    "share.assignor.offload.enable": "group.share.assignor.offload.enable",
}

GROUP_CONFIG_NAMES: tuple[str, ...] = (
    *_INT_CONFIGS,
    *_STRING_DEFAULTS,
    *_BOOL_DEFAULTS,
    *STREAMS_DEFAULTS,
)
"""Every group config a group lists: the KIP-848 ``consumer.*`` ones, the share ones, the
dead-letter-queue ones and the streams ones (Kafka 4.4's GroupConfig)."""

_ACCEPTED: frozenset[str] = frozenset((*GROUP_CONFIG_NAMES, *INTERNAL_GROUP_CONFIGS))

_DURATION = re.compile(
    r"P(?:(?P<d>\d+)D)?(?:T(?=\d)(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+)(?:\.(?P<f>\d{1,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_duration_ms(text: str) -> int:
    """Milliseconds of an ISO-8601 duration ``PnDTnHnMn.nS`` (Java's ``Duration.parse`` subset).

    Raises ValueError for malformed or negative durations.
    """
    stripped = text.strip()
    if "-" in stripped:
        raise ValueError(f"negative duration {text!r}")
    match = _DURATION.fullmatch(stripped)
    if match is None or stripped.upper() in ("P", "PT"):
        raise ValueError(f"malformed duration {text!r}")
    days, hours, minutes, seconds = (int(match[g] or 0) for g in "dhms")
    millis = int((match["f"] or "0").ljust(9, "0")[:3])
    return (((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000 + millis


@dataclass(frozen=True, slots=True)
class ShareGroupConfig:
    """The effective settings of one share group (overrides over broker defaults)."""

    session_timeout_ms: int
    heartbeat_interval_ms: int
    record_lock_duration_ms: int
    delivery_count_limit: int
    auto_offset_reset: str  # "latest", "earliest" or "by_duration:<duration>"
    isolation_level: str  # "read_uncommitted" or "read_committed"
    #: ``share.partition.max.record.locks``: records in flight per share partition.
    partition_max_record_locks: int = int(default_of("group.share.partition.max.record.locks"))
    #: ``share.renew.acknowledge.enable``: whether RENEW acknowledgements are taken (KIP-1222).
    renew_acknowledge_enabled: bool = True
    #: ``errors.deadletterqueue.topic.name``: the group's dead-letter topic ("" for none)
    dlq_topic_name: str = ""
    #: ``errors.deadletterqueue.copy.record.enable``: dead letters carry the record's key/value
    dlq_copy_record: bool = False
    #: ``share.assignment.interval.ms``: the least time between two target assignments.
    assignment_interval_ms: int = int(default_of("group.share.assignment.interval.ms"))

    @property
    def read_committed(self) -> bool:
        return self.isolation_level == READ_COMMITTED

    @property
    def auto_offset_reset_strategy(self) -> str:
        """ "latest", "earliest" or "by_duration"."""
        return self.auto_offset_reset.partition(":")[0]

    @property
    def auto_offset_reset_duration_ms(self) -> int | None:
        """The look-back of ``by_duration:<d>``, else None."""
        strategy, _, duration = self.auto_offset_reset.partition(":")
        return parse_duration_ms(duration) if strategy == "by_duration" else None


class GroupConfigDefs:
    """Validates and resolves share-group configs against one broker configuration."""

    def __init__(self, broker: Mapping[str, object]) -> None:
        self._broker = broker

    def _broker_int(self, key: str) -> int:
        raw = self._broker.get(key)
        return int(str(raw if raw is not None else default_of(key)))

    def bounds(self, name: str) -> tuple[int, int]:
        """The [min, max] the broker allows for the integer group config ``name``."""
        spec = _INT_CONFIGS[name]
        return self._broker_int(spec.min_key), self._broker_int(spec.max_key)

    def defaults(self) -> dict[str, str]:
        """Every group config's value when the group does not override it."""
        out = {name: str(self._broker_int(spec.broker_key)) for name, spec in _INT_CONFIGS.items()}
        out.update(_STRING_DEFAULTS)
        out.update(_BOOL_DEFAULTS)
        out.update(STREAMS_DEFAULTS)
        return out

    def normalize(self, name: str, raw: object) -> str:
        """The stored form of one value; InvalidConfigError with a clear message if invalid."""
        if name in _INT_CONFIGS:
            return str(self._check_int(name, raw))
        if name == AUTO_OFFSET_RESET:
            return _normalize_auto_offset_reset(raw)
        if name == ISOLATION_LEVEL:
            text = str(raw).strip()
            if text not in (READ_UNCOMMITTED, READ_COMMITTED):
                raise InvalidConfigError(
                    f"Invalid value {text} for configuration {name}: "
                    f"String must be one of: {READ_COMMITTED}, {READ_UNCOMMITTED}"
                )
            return text
        if name in _BOOL_DEFAULTS or name in INTERNAL_GROUP_CONFIGS:
            return _normalize_bool(name, raw)
        if name == DLQ_TOPIC_NAME:
            return str(raw).strip()
        if name in STREAMS_GROUP_CONFIGS:
            return normalize_streams(name, raw)
        raise InvalidConfigError(f"Unknown group config name: {name}")

    def _check_int(self, name: str, raw: object) -> int:
        """Kafka's checks and words: the INT type, the config's own floor, then the broker's
        bounds."""
        spec = _INT_CONFIGS[name]
        text = str(raw)
        try:
            value = int(text.strip())
        except ValueError:
            value = INT32_MAX + 1
        if isinstance(raw, bool) or not INT32_MIN <= value <= INT32_MAX:
            raise InvalidConfigError(
                f"Invalid value {text} for configuration {name}: Not a number of type INT"
            )
        if value < spec.floor:
            raise InvalidConfigError(
                f"Invalid value {value} for configuration {name}:"
                f" Value must be at least {spec.floor}"
            )
        low, high = self.bounds(name)
        if not low <= value <= high:
            raise InvalidConfigError(f"{name} must be in the range {low} to {high} inclusive.")
        return value

    def apply_changes(
        self,
        current: Mapping[str, str],
        to_set: Mapping[str, object],
        to_delete: list[str],
    ) -> dict[str, str]:
        """The overrides after setting ``to_set`` and deleting ``to_delete``; raises if invalid."""
        for name in (*to_set, *to_delete):
            if name not in _ACCEPTED:
                raise InvalidConfigError(f"Unknown group config name: {name}")
        overrides = {k: v for k, v in current.items() if k in _ACCEPTED}
        for name in to_delete:
            overrides.pop(name, None)
        for name, raw in to_set.items():
            overrides[name] = self.normalize(name, raw)
        merged = {**self.defaults(), **overrides}
        if int(merged[SESSION_TIMEOUT_MS]) <= int(merged[HEARTBEAT_INTERVAL_MS]):
            # Kafka's cross-check of the group's configs over the broker defaults
            raise InvalidConfigError(
                f"{SESSION_TIMEOUT_MS} must be greater than {HEARTBEAT_INTERVAL_MS}"
            )
        if merged.get(DLQ_TOPIC_NAME, "").startswith("__"):
            # KIP-1191: Kafka's GroupConfig refuses an internal-looking DLQ topic name
            raise InvalidConfigError(f"{DLQ_TOPIC_NAME}: DLQ topic name must not start with '__'")
        return overrides

    def _values(self, overrides: Mapping[str, str]) -> dict[str, str]:
        """Every group config's value: the overrides (clamped to today's bounds) over the
        broker defaults."""
        values = self.defaults()
        for name, raw in overrides.items():
            if name not in values:
                continue
            if name in _INT_CONFIGS:
                low, high = self.bounds(name)
                values[name] = str(min(max(int(raw), low), high))
            else:
                values[name] = raw
        return values

    def effective(self, overrides: Mapping[str, str]) -> ShareGroupConfig:
        """The group's settings: overrides (clamped to today's bounds) over broker defaults."""
        values = self._values(overrides)
        return ShareGroupConfig(
            session_timeout_ms=int(values[SESSION_TIMEOUT_MS]),
            heartbeat_interval_ms=int(values[HEARTBEAT_INTERVAL_MS]),
            record_lock_duration_ms=int(values[RECORD_LOCK_DURATION_MS]),
            delivery_count_limit=int(values[DELIVERY_COUNT_LIMIT]),
            auto_offset_reset=values[AUTO_OFFSET_RESET],
            isolation_level=values[ISOLATION_LEVEL],
            partition_max_record_locks=int(values[PARTITION_MAX_RECORD_LOCKS]),
            renew_acknowledge_enabled=values[RENEW_ACKNOWLEDGE_ENABLE] == "true",
            dlq_topic_name=values[DLQ_TOPIC_NAME],
            dlq_copy_record=values[DLQ_COPY_RECORD_ENABLE] == "true",
            assignment_interval_ms=int(values[SHARE_ASSIGNMENT_INTERVAL_MS]),
        )

    def consumer_timing(self, overrides: Mapping[str, str]) -> tuple[int, int]:
        """A KIP-848 consumer group's (session timeout, heartbeat interval) in ms: its
        ``consumer.*`` overrides (clamped to today's bounds) over the broker's settings."""
        return (
            self._consumer_int(overrides, CONSUMER_SESSION_TIMEOUT_MS),
            self._consumer_int(overrides, CONSUMER_HEARTBEAT_INTERVAL_MS),
        )

    def consumer_assignment_interval_ms(self, overrides: Mapping[str, str]) -> int:
        """A KIP-848 consumer group's ``consumer.assignment.interval.ms`` (clamped to today's
        bounds) over the broker's ``group.consumer.assignment.interval.ms``."""
        return self._consumer_int(overrides, CONSUMER_ASSIGNMENT_INTERVAL_MS)

    def _consumer_int(self, overrides: Mapping[str, str], name: str) -> int:
        raw = overrides.get(name)
        if raw is None:
            return self._broker_int(_INT_CONFIGS[name].broker_key)
        low, high = self.bounds(name)
        return min(max(int(raw), low), high)

    def describe(self, overrides: Mapping[str, str]) -> dict[str, tuple[str, bool]]:
        """Every group config as (value, is_default), as DescribeConfigs reports it (an
        internal one only when the group sets it, as Kafka)."""
        values = self._values(overrides)
        out = {name: (values[name], name not in overrides) for name in GROUP_CONFIG_NAMES}
        for name in INTERNAL_GROUP_CONFIGS:
            if name in overrides:
                out[name] = (overrides[name], False)
        return out


def _normalize_bool(name: str, raw: object) -> str:
    """A BOOLEAN config's stored form, as Kafka's ConfigDef parses it (case-insensitive)."""
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise InvalidConfigError(
            f"Invalid value {raw} for configuration {name}:"
            " Expected value to be either true or false"
        )
    return text


def _normalize_auto_offset_reset(raw: object) -> str:
    text = str(raw).strip()
    strategy, sep, duration = text.partition(":")
    strategy = strategy.strip()  # case-sensitive, as Kafka's validator
    if strategy in ("latest", "earliest") and not sep:
        return strategy
    if strategy == "by_duration" and sep:
        try:
            parse_duration_ms(duration)
        except ValueError:
            raise InvalidConfigError(_auto_offset_reset_refusal(text)) from None
        return f"by_duration:{duration.strip().upper()}"
    raise InvalidConfigError(_auto_offset_reset_refusal(text))


def _auto_offset_reset_refusal(text: str) -> str:
    return (
        f"Invalid value {text} for configuration {AUTO_OFFSET_RESET}: Invalid value `{text}` for"
        f" configuration {AUTO_OFFSET_RESET}. The value must be either 'earliest', 'latest' or"
        " of the format 'by_duration:<PnDTnHnMn.nS>'."
    )


def group_alter_refusal(
    group_id: str, ops: list[tuple[str, int, str | None]]
) -> tuple[ErrorCode, str] | None:
    """Kafka's refusals of an IncrementalAlterConfigs on a GROUP before any value is checked:
    the default group "", a null value, APPEND or SUBTRACT (no group config is a list).
    ``ops`` are (config, operation id: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT, value)."""
    if not group_id:
        return ErrorCode.INVALID_REQUEST, "Default group resources are not allowed."
    for name, op, value in ops:
        if op != 1 and value is None:
            return ErrorCode.INVALID_REQUEST, f"Null value not supported for : {name}"
        if op in (2, 3):
            word = "APPEND" if op == 2 else "SUBTRACT"
            return (
                ErrorCode.INVALID_CONFIG,
                f"Can't {word} to key {name} because its type is not LIST.",
            )
    return None
