"""BROKER_LOGGER resources: the process's loggers under Kafka's names and checks."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from coordinator.protocol.broker_loggers import (
    alter_broker_loggers,
    describe_broker_loggers,
    describe_logger_resource_error,
    kafka_level,
)
from txn.errors import ErrorCode

NAME = "sharetxn.test.broker_loggers"
SET, DELETE, APPEND = 0, 1, 2


@pytest.fixture
def logger() -> Iterator[logging.Logger]:
    lg = logging.getLogger(NAME)
    level = lg.level
    yield lg
    lg.setLevel(level)


def test_levels_are_kafkas_names() -> None:
    assert [kafka_level(n) for n in (5, 10, 20, 30, 40, 50, 60)] == [
        "TRACE",
        "DEBUG",
        "INFO",
        "WARN",
        "ERROR",
        "FATAL",
        "FATAL",
    ]


def test_describe_lists_root_and_existing_loggers(logger: logging.Logger) -> None:
    logger.setLevel(logging.WARNING)
    entries = {e.name: e for e in describe_broker_loggers([NAME, "root", "nope"])}
    assert set(entries) == {NAME, "root"}
    assert entries[NAME].value == "WARN"
    assert (entries[NAME].config_source, entries[NAME].documentation) == (6, "")
    assert describe_logger_resource_error(1, "1") is None
    assert describe_logger_resource_error(1, "") == "Broker id must not be empty"
    assert describe_logger_resource_error(1, "+1") is None
    assert describe_logger_resource_error(1, " 1") == "Broker id must be an integer, but it is:  1"


def test_set_and_delete_change_the_logger(logger: logging.Logger) -> None:
    assert alter_broker_loggers(1, "1", [(NAME, SET, "TRACE")], validate_only=True) == (
        ErrorCode.NONE,
        None,
    )
    assert logger.level == logging.NOTSET  # validate-only changes nothing
    assert alter_broker_loggers(1, "1", [(NAME, SET, "ERROR")], validate_only=False)[0] is (
        ErrorCode.NONE
    )
    assert logger.level == logging.ERROR
    assert alter_broker_loggers(1, "1", [(NAME, DELETE, None)], validate_only=False)[0] is (
        ErrorCode.NONE
    )
    assert logger.level == logging.NOTSET


@pytest.mark.parametrize(
    ("name", "ops", "error", "message"),
    [
        ("2", [(NAME, SET, "DEBUG")], "INVALID_REQUEST", "Unexpected node id. Expected 1"),
        ("", [(NAME, SET, "DEBUG")], "INVALID_REQUEST", "Node id must be an integer"),
        ("1", [(NAME, SET, None)], "INVALID_REQUEST", "Null value not supported for : "),
        ("1", [(NAME, SET, "debug")], "INVALID_CONFIG", "not a supported log level"),
        ("1", [("no.such", SET, "DEBUG")], "INVALID_CONFIG", "Logger no.such does not exist!"),
        ("1", [("root", DELETE, None)], "INVALID_REQUEST", "Removing the log level of the root"),
        ("1", [(NAME, APPEND, "DEBUG")], "INVALID_REQUEST", "APPEND operation is not allowed"),
    ],
)
def test_refusals_in_kafkas_words(
    logger: logging.Logger,
    name: str,
    ops: list[tuple[str, int, str | None]],
    error: str,
    message: str,
) -> None:
    code, text = alter_broker_loggers(1, name, ops, validate_only=False)
    assert code.name == error
    assert text is not None and message in text
    assert logger.level == logging.NOTSET
