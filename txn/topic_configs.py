"""The topic-level config names Kafka defines (its LogConfig), accepted on CreateTopics and
IncrementalAlterConfigs; anything else is INVALID_CONFIG, as in Kafka."""

from __future__ import annotations

from typing import Final

from txn.limits import INT32_MAX as _INT_MAX
from txn.limits import LONG_MAX as _LONG_MAX

TOPIC_CONFIG_NAMES: Final = frozenset(
    {
        "cleanup.policy",
        "compression.type",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
        "delete.retention.ms",
        "file.delete.delay.ms",
        "flush.messages",
        "flush.ms",
        "follower.replication.throttled.replicas",
        "index.interval.bytes",
        "leader.replication.throttled.replicas",
        "local.retention.bytes",
        "local.retention.ms",
        "max.compaction.lag.ms",
        "max.message.bytes",
        "message.timestamp.after.max.ms",
        "message.timestamp.before.max.ms",
        "message.timestamp.type",
        "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms",
        "min.insync.replicas",
        "preallocate",
        "remote.log.copy.disable",
        "remote.log.delete.on.disable",
        "remote.storage.enable",
        "retention.bytes",
        "retention.ms",
        "segment.bytes",
        "segment.index.bytes",
        "segment.jitter.ms",
        "segment.ms",
        "unclean.leader.election.enable",
    }
)


def unknown_topic_configs(names: list[str] | set[str]) -> list[str]:
    """The names among ``names`` that are not topic configs, sorted."""
    return sorted(n for n in names if n not in TOPIC_CONFIG_NAMES)


# -- values ------------------------------------------------------------------------------------

CLEANUP_POLICIES: Final = ("compact", "delete")

# name -> (type, lowest value or None); Kafka's LogConfig definitions of the configs acted on.
_NUMERIC: Final[dict[str, tuple[str, int | None]]] = {
    "segment.bytes": ("INT", 14),
    "segment.ms": ("LONG", 1),
    "retention.bytes": ("LONG", None),
    "retention.ms": ("LONG", -1),
    "delete.retention.ms": ("LONG", 0),
    "min.compaction.lag.ms": ("LONG", 0),
    "max.compaction.lag.ms": ("LONG", 1),
    "file.delete.delay.ms": ("LONG", 0),
}


def topic_config_value_error(name: str, value: str) -> str | None:
    """Kafka's ConfigException message for a bad value of ``name``, or None if it is valid."""
    prefix = f"Invalid value {value} for configuration {name}"
    if name in _NUMERIC:
        kind, lowest = _NUMERIC[name]
        try:
            number = int(value.strip())
        except ValueError:
            return f"{prefix}: Not a number of type {kind}"
        high = _INT_MAX if kind == "INT" else _LONG_MAX
        if not (-high - 1 <= number <= high):
            return f"{prefix}: Not a number of type {kind}"
        if lowest is not None and number < lowest:
            return f"{prefix}: Value must be at least {lowest}"
    elif name == "min.cleanable.dirty.ratio":
        try:
            ratio = float(value.strip())
        except ValueError:
            return f"{prefix}: Not a number of type DOUBLE"
        if not 0 <= ratio <= 1:
            bound = "no more than 1" if ratio > 1 else "at least 0"
            return f"{prefix}: Value must be {bound}"
    elif name == "cleanup.policy":
        for item in cleanup_policy(value):
            if item not in CLEANUP_POLICIES:
                return (
                    f"Invalid value {item} for configuration {name}: String must be one of: "
                    + ", ".join(CLEANUP_POLICIES)
                )
    return None


def cleanup_policy(value: str) -> list[str]:
    """The items of a cleanup.policy list value."""
    return [item.strip() for item in value.split(",") if item.strip()]


def invalid_topic_config_value(configs: dict[str, str]) -> str | None:
    """The message for the first bad value among ``configs`` (by name), or None."""
    for name in sorted(configs):
        message = topic_config_value_error(name, configs[name])
        if message is not None:
            return message
    return None
