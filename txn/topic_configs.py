"""The topic-level config names Kafka defines (its LogConfig), accepted on CreateTopics and
the config alters; anything else is INVALID_CONFIG, as in Kafka.  The types and validators
are ``txn.topic_config_defs``'s."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from txn.topic_config_defs import (
    TOPIC_CONFIG_DEFS,
    compaction_lag_conflict,
    parse_list,
    topic_config_value_error,
)

__all__ = [
    "CLEANUP_POLICIES",
    "TOPIC_CONFIG_NAMES",
    "cleanup_policy",
    "invalid_topic_configs",
    "topic_config_value_error",
    "unknown_topic_configs",
]

TOPIC_CONFIG_NAMES: Final = frozenset(TOPIC_CONFIG_DEFS)
CLEANUP_POLICIES: Final = ("compact", "delete")


def unknown_topic_configs(names: list[str] | set[str]) -> list[str]:
    """The names among ``names`` that are not topic configs, sorted."""
    return sorted(n for n in names if n not in TOPIC_CONFIG_NAMES)


def cleanup_policy(value: str) -> list[str]:
    """The items of a cleanup.policy list value."""
    return parse_list(value)


def invalid_topic_configs(
    configs: Mapping[str, str], defaults: Mapping[str, str] | None = None
) -> str | None:
    """The message for the first bad value among ``configs`` (by name), then for a conflict
    between them (the broker's ``defaults`` fill in what is not set), or None."""
    for name in sorted(configs):
        message = topic_config_value_error(name, configs[name])
        if message is not None:
            return message
    return compaction_lag_conflict(configs, defaults)
