"""Kafka 4.4's streams-group configs (KIP-1071), accepted, checked and described on any group
as Kafka does (``kafka-configs --entity-type groups``); sharetxn serves no streams groups,
so nothing reads them.

Each takes its default from a broker setting Kafka names ``group.streams.*``; sharetxn has
none of those settings, so the defaults are Kafka's (as a broker left at its defaults
describes them), and so are the bounds a value is checked against:

* ``streams.session.timeout.ms`` (45000; at least 1, within 45000..60000),
* ``streams.heartbeat.interval.ms`` (5000; at least 1, within 5000..15000),
* ``streams.num.standby.replicas`` (0; at least 0, at most 2),
* ``streams.initial.rebalance.delay.ms`` (3000; at least 0),
* ``streams.assignment.interval.ms`` (1000; at least 0, within 0..15000),
* ``streams.assignor.name`` (``sticky``, the only assignor registered;
  its broker setting is ``group.streams.assignors``),
* ``streams.rack.aware.assignment.tags`` (a list, empty; no empty item).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from txn.errors import InvalidConfigError
from txn.limits import INT32_MAX, INT32_MIN

__all__ = [
    "STREAMS_DEFAULTS",
    "STREAMS_DOCS",
    "STREAMS_GROUP_CONFIGS",
    "STREAMS_LISTS",
    "STREAMS_STRINGS",
    "normalize_streams",
    "streams_synonym",
]

ASSIGNOR_NAME = "streams.assignor.name"
RACK_AWARE_TAGS = "streams.rack.aware.assignment.tags"
#: The task assignors a broker registers by default (``group.streams.assignors``).
ASSIGNORS: Final = ("sticky",)


@dataclass(frozen=True, slots=True)
class _Int:
    default: int
    floor: int
    low: int | None = None  # the range Kafka names in its refusal, when it has one
    high: int | None = None


_INTS: Final[dict[str, _Int]] = {
    "streams.session.timeout.ms": _Int(45000, 1, 45000, 60000),
    "streams.heartbeat.interval.ms": _Int(5000, 1, 5000, 15000),
    "streams.num.standby.replicas": _Int(0, 0, None, 2),
    "streams.initial.rebalance.delay.ms": _Int(3000, 0),
    "streams.assignment.interval.ms": _Int(1000, 0, 0, 15000),
}

#: Each streams group config -> its default, as Kafka describes it.
STREAMS_DEFAULTS: Final[dict[str, str]] = {
    **{name: str(spec.default) for name, spec in _INTS.items()},
    ASSIGNOR_NAME: ASSIGNORS[0],
    RACK_AWARE_TAGS: "",
}
STREAMS_GROUP_CONFIGS: Final = frozenset(STREAMS_DEFAULTS)
STREAMS_STRINGS: Final = frozenset({ASSIGNOR_NAME})
STREAMS_LISTS: Final = frozenset({RACK_AWARE_TAGS})

_BROKER_KEYS: Final[dict[str, str]] = {
    **{name: f"group.{name}" for name in _INTS},
    ASSIGNOR_NAME: "group.streams.assignors",
    RACK_AWARE_TAGS: f"group.{RACK_AWARE_TAGS}",
}

#: DescribeConfigs documentation (sharetxn's words).
STREAMS_DOCS: Final[dict[str, str]] = {
    "streams.session.timeout.ms": "How long a streams group member may go without heartbeating"
    " (sharetxn serves no streams groups).",
    "streams.heartbeat.interval.ms": "Heartbeat interval of a streams group's members"
    " (sharetxn serves no streams groups).",
    "streams.num.standby.replicas": "Standby replicas of each task of a streams group"
    " (sharetxn serves no streams groups).",
    "streams.initial.rebalance.delay.ms": "How long a new streams group waits for members"
    " before its first assignment (sharetxn serves no streams groups).",
    "streams.assignment.interval.ms": "How often a streams group's assignment is computed"
    " (sharetxn serves no streams groups).",
    ASSIGNOR_NAME: "The task assignor of a streams group, by name (sharetxn serves no streams"
    " groups).",
    RACK_AWARE_TAGS: "Client tag keys standby tasks are spread over (sharetxn serves no streams"
    " groups).",
}


def streams_synonym(name: str) -> tuple[str, str]:
    """The broker setting that gives streams group config ``name`` its default, and its value."""
    return _BROKER_KEYS[name], STREAMS_DEFAULTS[name]


def normalize_streams(name: str, raw: object) -> str:
    """The stored form of a streams group config's value; InvalidConfigError with Kafka's
    words if refused."""
    text = str(raw)
    if name == ASSIGNOR_NAME:
        if text.strip() not in ASSIGNORS:
            registered = ", ".join(ASSIGNORS)
            msg = (
                f"{name} '{text}' is not a registered task assignor. "
                f"Registered assignors are: [{registered}]."
            )
            raise InvalidConfigError(msg)
        return text.strip()
    if name == RACK_AWARE_TAGS:
        items = [item.strip() for item in text.split(",")] if text.strip() else []
        if any(not item for item in items):
            raise InvalidConfigError(f"Configuration '{name}' values must not be empty.")
        return ",".join(items)
    spec = _INTS[name]
    try:
        value = int(text.strip())
    except ValueError:
        value = INT32_MAX + 1
    if isinstance(raw, bool) or not INT32_MIN <= value <= INT32_MAX:
        msg = f"Invalid value {text} for configuration {name}: Not a number of type INT"
        raise InvalidConfigError(msg)
    if value < spec.floor:
        msg = f"Invalid value {value} for configuration {name}: Value must be at least {spec.floor}"
        raise InvalidConfigError(msg)
    if spec.low is not None and spec.high is not None and not spec.low <= value <= spec.high:
        raise InvalidConfigError(
            f"{name} must be in the range {spec.low} to {spec.high} inclusive."
        )
    if spec.low is None and spec.high is not None and value > spec.high:
        raise InvalidConfigError(f"{name} must be less than or equal to {spec.high}")
    return str(value)
