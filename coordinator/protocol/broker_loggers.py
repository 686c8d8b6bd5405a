"""BROKER_LOGGER resources (type 8): the broker's loggers under Kafka's API.

Kafka serves its log4j loggers as configs of a BROKER_LOGGER resource named by the broker's id
(``kafka-configs.sh --entity-type broker-loggers``); sharetxn serves its Python loggers the
same way.  DescribeConfigs lists ``root`` and every logger the process has created, each with
its effective level in Kafka's names (TRACE, DEBUG, INFO, WARN, ERROR, FATAL), source
DYNAMIC_BROKER_LOGGER_CONFIG, type UNKNOWN, no synonyms and an empty documentation.
IncrementalAlterConfigs SET gives a logger a level, DELETE makes it follow its parents again
(root's level cannot be removed); Kafka's checks and words (``RuntimeLoggerManager``): the
resource name must be this broker's id, the logger must exist, the level must be one of
Kafka's six, APPEND and SUBTRACT are refused.  Changes last until the broker stops, as in
Kafka.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Sequence

from coordinator.protocol.cluster_messages import DescribeConfigsResourceResult
from txn.errors import ErrorCode
from txn.limits import INT32_MAX, INT32_MIN
from txn.topic_config_defs import ConfigOperation

__all__ = [
    "KAFKA_LEVELS",
    "ROOT",
    "alter_broker_loggers",
    "describe_broker_loggers",
    "describe_logger_resource_error",
]

ROOT = "root"
TRACE = 5  # below Python's DEBUG, as log4j's TRACE is below its DEBUG
_TO_PYTHON = {
    "TRACE": TRACE,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
}
KAFKA_LEVELS: tuple[str, ...] = tuple(sorted(_TO_PYTHON))
_DYNAMIC_BROKER_LOGGER = 6  # ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG
_UNKNOWN_TYPE = 0
_JAVA_INT = re.compile(r"[+-]?[0-9]+")

Op = tuple[str, int, str | None]


def _java_int(text: str) -> int | None:
    """``Integer.parseInt``: digits with an optional sign, within int32; None otherwise."""
    if not _JAVA_INT.fullmatch(text):
        return None
    value = int(text)
    return value if INT32_MIN <= value <= INT32_MAX else None


def kafka_level(level: int) -> str:
    """A Python level in Kafka's (log4j's) names."""
    for name in ("TRACE", "DEBUG", "INFO", "WARN", "ERROR"):
        if level <= _TO_PYTHON[name]:
            return name
    return "FATAL"


def _loggers() -> dict[str, logging.Logger]:
    existing = logging.Logger.manager.loggerDict.items()
    out: dict[str, logging.Logger] = {ROOT: logging.getLogger()}
    out.update((name, lg) for name, lg in existing if isinstance(lg, logging.Logger))
    return out


def describe_logger_resource_error(node_id: int, name: str) -> str | None:
    """Why DescribeConfigs refuses BROKER_LOGGER ``name``, in Kafka's words; None if it is
    this broker's id."""
    if name == "":
        return "Broker id must not be empty"
    number = _java_int(name)
    if number is None:
        return f"Broker id must be an integer, but it is: {name}"
    if number != node_id:
        return f"Unexpected broker id, expected {node_id} but received {name}"
    return None


def describe_broker_loggers(keys: Collection[str] | None) -> list[DescribeConfigsResourceResult]:
    """Each logger (those named, when ``keys`` is given: unknown names are left out) and its
    effective level."""
    out = []
    for name, lg in sorted(_loggers().items()):
        if keys is not None and name not in keys:
            continue
        out.append(
            DescribeConfigsResourceResult(
                name=name,
                value=kafka_level(lg.getEffectiveLevel()),
                read_only=False,
                config_source=_DYNAMIC_BROKER_LOGGER,
                is_sensitive=False,
                synonyms=(),
                config_type=_UNKNOWN_TYPE,
                documentation="",  # Kafka answers an empty one, asked for or not
            )
        )
    return out


def _refusal(node_id: int, name: str, ops: Sequence[Op]) -> tuple[ErrorCode, str] | None:
    number = _java_int(name)
    if number is None:
        return ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}"
    if number != node_id:
        message = f"Unexpected node id. Expected {node_id}, but received {name}"
        return ErrorCode.INVALID_REQUEST, message
    for logger, op, value in ops:
        if op != ConfigOperation.DELETE and value is None:
            return ErrorCode.INVALID_REQUEST, f"Null value not supported for : {logger}"
    loggers = _loggers()
    for logger, op, value in ops:
        if op in (ConfigOperation.APPEND, ConfigOperation.SUBTRACT):
            word = ConfigOperation(op).name
            message = f"{word} operation is not allowed for the BROKER_LOGGER resource"
            return ErrorCode.INVALID_REQUEST, message
        if op not in (ConfigOperation.SET, ConfigOperation.DELETE):
            message = f"Unknown operation type {op} is not allowed for the BROKER_LOGGER resource"
            return ErrorCode.INVALID_REQUEST, message
        if logger not in loggers:
            return ErrorCode.INVALID_CONFIG, f"Logger {logger} does not exist!"
        if op == ConfigOperation.DELETE:
            if logger == ROOT:
                message = f"Removing the log level of the {ROOT} logger is not allowed"
                return ErrorCode.INVALID_REQUEST, message
        elif value not in _TO_PYTHON:
            return ErrorCode.INVALID_CONFIG, (
                f"Cannot set the log level of {logger} to {value} as it is not a supported log"
                f" level. Valid log levels are {', '.join(KAFKA_LEVELS)}"
            )
    return None


def alter_broker_loggers(
    node_id: int, name: str, ops: Sequence[Op], *, validate_only: bool
) -> tuple[ErrorCode, str | None]:
    """IncrementalAlterConfigs on BROKER_LOGGER ``name``: every operation is checked, then
    (unless ``validate_only``) applied to the process's loggers."""
    refused = _refusal(node_id, name, ops)
    if refused is not None:
        return refused
    if validate_only:
        return ErrorCode.NONE, None
    log = logging.getLogger(__name__)
    loggers = _loggers()
    for logger, op, value in ops:
        if op == ConfigOperation.SET and value is not None:
            loggers[logger].setLevel(_TO_PYTHON[value])
            log.warning("Updated the log level of %s to %s", logger, value)
        else:
            loggers[logger].setLevel(logging.NOTSET)
            log.warning("Unset the log level of %s", logger)
    return ErrorCode.NONE, None
