"""Every topic config Kafka defines, with its type and validator, checked as Kafka checks it.

Kafka's ``ConfigDef`` parses a value by its type (numbers and strings trimmed, booleans
case-insensitive, lists split on commas) and then runs the config's validator; a failure is
a ``ConfigException`` whose message the broker answers with INVALID_CONFIG:
``Invalid value <value> for configuration <name>: <reason>``.  The value in the message is
the one given when parsing failed, else the parsed one (a list shows as ``[a, b]``).  The
reasons and the accepted ranges here are Apache Kafka 4.4's, observed by the differential
suite (``tests/reference/differential/scenarios_configs.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import Final

from txn.limits import INT32_MAX, INT32_MIN, LONG_MAX, LONG_MIN

__all__ = [
    "KEEP_PRODUCER_CODEC",
    "TOPIC_CONFIG_DEFS",
    "ConfigDef",
    "ConfigOperation",
    "ConfigType",
    "at_least",
    "between",
    "canonical_value",
    "compaction_lag_conflict",
    "config_value_error",
    "list_of",
    "list_type",
    "one_of",
    "parse_list",
    "topic_config_value_error",
]


class ConfigOperation(IntEnum):
    """IncrementalAlterConfigs operations, with Kafka's ids (``AlterConfigOp.OpType``)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class ConfigType(Enum):
    BOOLEAN = "BOOLEAN"
    STRING = "STRING"
    INT = "INT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    LIST = "LIST"


Parsed = bool | str | int | float | list[str]
Validator = Callable[[Parsed], str | None]  # the reason a parsed value is refused, or None


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    type: ConfigType
    validator: Validator | None = None
    internal: bool = False  # accepted, never described (Kafka's defineInternal)


class _Invalid(ValueError):
    def __init__(self, shown: str, reason: str) -> None:
        super().__init__(reason)
        self.shown = shown
        self.reason = reason


def parse_list(value: str) -> list[str]:
    """A LIST value's items: split on commas, trimmed, empty items dropped."""
    return [item.strip() for item in value.split(",") if item.strip()]


def _parse(kind: ConfigType, value: str) -> Parsed:
    trimmed = value.strip()
    if kind is ConfigType.BOOLEAN:
        if trimmed.lower() in ("true", "false"):
            return trimmed.lower() == "true"
        raise _Invalid(value, "Expected value to be either true or false")
    if kind is ConfigType.STRING:
        return trimmed
    if kind is ConfigType.LIST:
        return parse_list(trimmed)
    if kind is ConfigType.DOUBLE:
        try:
            return float(trimmed)
        except ValueError:
            raise _Invalid(value, "Not a number of type DOUBLE") from None
    low, high = (INT32_MIN, INT32_MAX) if kind is ConfigType.INT else (LONG_MIN, LONG_MAX)
    try:
        number = int(trimmed)
    except ValueError:
        raise _Invalid(value, f"Not a number of type {kind.value}") from None
    if not low <= number <= high:
        raise _Invalid(value, f"Not a number of type {kind.value}")
    return number


def _shown(parsed: Parsed) -> str:
    if isinstance(parsed, list):
        return "[" + ", ".join(parsed) + "]"
    if isinstance(parsed, bool):
        return "true" if parsed else "false"
    return str(parsed)


# -- validators (Kafka's ConfigDef.Range, ValidString, ValidList and two of its own) --------


def at_least(low: int) -> Validator:
    def check(parsed: Parsed) -> str | None:
        assert isinstance(parsed, int | float)
        return f"Value must be at least {low}" if parsed < low else None

    return check


def between(low: int, high: int) -> Validator:
    def check(parsed: Parsed) -> str | None:
        assert isinstance(parsed, int | float)
        if parsed < low:
            return f"Value must be at least {low}"
        if parsed > high:
            return f"Value must be no more than {high}"
        return None

    return check


def one_of(*options: str) -> Validator:
    def check(parsed: Parsed) -> str | None:
        ok = parsed in options
        return None if ok else "String must be one of: " + ", ".join(options)

    return check


def list_of(*options: str) -> Validator:
    """Each item of a LIST must be one of ``options`` (the message names the item)."""

    def check(parsed: Parsed) -> str | None:
        assert isinstance(parsed, list)
        for item in parsed:
            if item not in options:
                raise _Invalid(item, "String must be one of: " + ", ".join(options))
        return None

    return check


def _gzip_level(parsed: Parsed) -> str | None:
    assert isinstance(parsed, int)
    ok = parsed == -1 or 1 <= parsed <= 9
    return None if ok else "Value must be between 1 and 9 or equal to -1"


def _throttled_replicas(name: str) -> Validator:
    def check(parsed: Parsed) -> str | None:
        assert isinstance(parsed, list)
        if parsed == ["*"] or all(_replica(item) for item in parsed):
            return None
        return (
            f"{name} must be the literal '*' or a list of replicas in the following format:"
            " [partitionId]:[brokerId],[partitionId]:[brokerId],..."
        )

    return check


def _replica(item: str) -> bool:
    partition, colon, broker = item.partition(":")
    return bool(colon) and partition.strip().isdigit() and broker.strip().isdigit()


#: compression.type's default: batches are kept in the codec the producer used.
KEEP_PRODUCER_CODEC: Final = "producer"
COMPRESSION_TYPES: Final = ("uncompressed", "zstd", "lz4", "snappy", "gzip", KEEP_PRODUCER_CODEC)
_B, _S, _I, _L, _D, _LIST = (
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
)
_LEADER_THROTTLED = "leader.replication.throttled.replicas"
_FOLLOWER_THROTTLED = "follower.replication.throttled.replicas"

TOPIC_CONFIG_DEFS: Final[Mapping[str, ConfigDef]] = {
    d.name: d
    for d in (
        ConfigDef("cleanup.policy", _LIST, list_of("compact", "delete")),
        ConfigDef("compression.type", _S, one_of(*COMPRESSION_TYPES)),
        ConfigDef("compression.gzip.level", _I, _gzip_level),
        ConfigDef("compression.lz4.level", _I, between(1, 17)),
        ConfigDef("compression.zstd.level", _I, between(-131072, 22)),
        ConfigDef("delete.retention.ms", _L, at_least(0)),
        ConfigDef("file.delete.delay.ms", _L, at_least(0)),
        ConfigDef("flush.messages", _L, at_least(1)),
        ConfigDef("flush.ms", _L, at_least(0)),
        ConfigDef(_FOLLOWER_THROTTLED, _LIST, _throttled_replicas(_FOLLOWER_THROTTLED)),
        ConfigDef("index.interval.bytes", _I, at_least(0)),
        ConfigDef(_LEADER_THROTTLED, _LIST, _throttled_replicas(_LEADER_THROTTLED)),
        ConfigDef("local.retention.bytes", _L, at_least(-2)),
        ConfigDef("local.retention.ms", _L, at_least(-2)),
        ConfigDef("max.compaction.lag.ms", _L, at_least(1)),
        ConfigDef("max.message.bytes", _I, at_least(0)),
        ConfigDef("message.timestamp.after.max.ms", _L, at_least(0)),
        ConfigDef("message.timestamp.before.max.ms", _L, at_least(0)),
        ConfigDef("message.timestamp.type", _S, one_of("CreateTime", "LogAppendTime")),
        ConfigDef("min.cleanable.dirty.ratio", _D, between(0, 1)),
        ConfigDef("min.compaction.lag.ms", _L, at_least(0)),
        ConfigDef("min.insync.replicas", _I, at_least(1)),
        ConfigDef("preallocate", _B),
        ConfigDef("remote.log.copy.disable", _B),
        ConfigDef("remote.log.delete.on.disable", _B),
        ConfigDef("remote.storage.enable", _B),
        ConfigDef("retention.bytes", _L),
        ConfigDef("retention.ms", _L, at_least(-1)),
        ConfigDef("segment.bytes", _I, at_least(1024 * 1024)),
        ConfigDef("segment.index.bytes", _I, at_least(4)),
        ConfigDef("segment.jitter.ms", _L, at_least(0)),
        ConfigDef("segment.ms", _L, at_least(1)),
        ConfigDef("unclean.leader.election.enable", _B),
        ConfigDef("errors.deadletterqueue.group.enable", _B),
        ConfigDef("max.decompressed.message.bytes", _I, between(1, 2147483639)),
        ConfigDef("remote.copy.lag.bytes", _L, at_least(-1)),
        ConfigDef("remote.copy.lag.ms", _L, at_least(-1)),
        # Kafka's testing override of segment.bytes (no lower bound), accepted on create/alter.
        ConfigDef("internal.segment.bytes", _I, internal=True),
    )
}


def topic_config_value_error(name: str, value: str) -> str | None:
    """Kafka's ConfigException message for ``value`` of topic config ``name``, or None."""
    definition = TOPIC_CONFIG_DEFS.get(name)
    return None if definition is None else config_value_error(definition, value)


def config_value_error(definition: ConfigDef, value: str) -> str | None:
    """Kafka's ConfigException message for ``value`` of a config so defined, or None."""
    name = definition.name
    try:
        parsed = _parse(definition.type, value)
        reason = definition.validator(parsed) if definition.validator else None
        if reason is not None:
            raise _Invalid(_shown(parsed), reason)
    except _Invalid as bad:
        return f"Invalid value {bad.shown} for configuration {name}: {bad.reason}"
    return None


def canonical_value(name: str, value: str) -> str:
    """A valid value of topic config ``name`` as Kafka shows it back (``ConfigDef``'s
    ``convertToString`` of the parsed value: trimmed, lists joined by commas, booleans in
    lower case); an unknown or unparsable value as given."""
    definition = TOPIC_CONFIG_DEFS.get(name)
    if definition is None:
        return value
    try:
        parsed = _parse(definition.type, value)
    except _Invalid:
        return value
    if isinstance(parsed, list):
        return ",".join(parsed)
    return _shown(parsed)


def _parsed_long(value: str | None, fallback: int) -> int:
    """A valid LONG config value (trimmed), or ``fallback`` when not set."""
    return fallback if value is None else int(value.strip())


def compaction_lag_conflict(
    configs: Mapping[str, str], defaults: Mapping[str, str] | None = None
) -> str | None:
    """Kafka's cross-check of a topic's merged configs: min.compaction.lag.ms may not exceed
    max.compaction.lag.ms (the broker's defaults fill in what the topic does not set)."""
    base = defaults or {}
    low = _parsed_long(configs.get("min.compaction.lag.ms", base.get("min.compaction.lag.ms")), 0)
    high_value = configs.get("max.compaction.lag.ms", base.get("max.compaction.lag.ms"))
    high = _parsed_long(high_value, LONG_MAX)
    if low > high:
        return (
            "conflict topic config setting min.compaction.lag.ms"
            f" ({low}) > max.compaction.lag.ms ({high})"
        )
    return None


def list_type(name: str) -> bool:
    """Whether ``name`` is a LIST config (APPEND and SUBTRACT apply only to those)."""
    definition = TOPIC_CONFIG_DEFS.get(name)
    return definition is not None and definition.type is ConfigType.LIST
