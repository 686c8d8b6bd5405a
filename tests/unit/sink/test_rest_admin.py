"""Connect's offsets bodies (KIP-875) and ``/admin/loggers`` over Python logging."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from producer.sink.herder import BadRequest
from producer.sink.loggers import Loggers, level_name
from producer.sink.offsets import check_body, parse_sink_offsets
from txn.ids import TopicPartition


def entry(partition: Any, offset: Any) -> dict[str, Any]:
    return {"partition": partition, "offset": offset}


def test_parse_sink_offsets() -> None:
    parsed = parse_sink_offsets(
        [
            entry({"kafka_topic": "t", "kafka_partition": 0}, {"kafka_offset": 5}),
            entry({"kafka_topic": "t", "kafka_partition": "1"}, {"kafka_offset": "7"}),
            entry({"kafka_topic": "u", "kafka_partition": 0}, None),
        ]
    )
    assert parsed == {
        TopicPartition("t", 0): 5,
        TopicPartition("t", 1): 7,
        TopicPartition("u", 0): None,
    }


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (entry(None, None), "The partition for a sink connector offset cannot be null or missing"),
        (
            entry({"kafka_topic": "t"}, None),
            "The partition for a sink connector offset must contain the keys 'kafka_topic' and "
            "'kafka_partition'",
        ),
        (
            entry({"kafka_topic": None, "kafka_partition": 0}, None),
            "Kafka topic names must be valid strings and may not be null",
        ),
        (
            entry({"kafka_topic": "t", "kafka_partition": None}, None),
            "Kafka partitions must be valid numbers and may not be null",
        ),
        (
            entry({"kafka_topic": "t", "kafka_partition": "x"}, None),
            "Failed to parse the following Kafka partition value in the provided offsets: 'x'. "
            "Partition values for sink connectors need to be integers.",
        ),
        (
            entry({"kafka_topic": "t", "kafka_partition": 0}, {"other": 1}),
            "The offset for a sink connector should either be null or contain the key "
            "'kafka_offset'",
        ),
        (
            entry({"kafka_topic": "t", "kafka_partition": 0}, {"kafka_offset": "1.5"}),
            "Failed to parse the following Kafka offset value in the provided offsets: '1.5'. "
            "Offset values for sink connectors need to be integers.",
        ),
    ],
)
def test_parse_errors_are_connects(bad: dict[str, Any], message: str) -> None:
    with pytest.raises(BadRequest) as caught:
        parse_sink_offsets([bad])
    assert caught.value.message == message


@pytest.mark.parametrize("body", [None, {}, {"offsets": []}, {"offsets": None}, []])
def test_alter_needs_offsets(body: Any) -> None:
    with pytest.raises(BadRequest, match="Partitions / offsets need to be provided"):
        check_body(body)


@pytest.fixture
def scratch() -> Iterator[str]:
    name = "sharetxn.test.loggers"
    yield name
    for logger in (logging.getLogger(name), logging.getLogger(name + ".child")):
        logger.setLevel(logging.NOTSET)


def test_loggers(scratch: str) -> None:
    loggers = Loggers()
    assert loggers.level(scratch + ".never") is None
    logging.getLogger(scratch + ".child")
    assert loggers.set_level(scratch, "debug") == [scratch, scratch + ".child"]
    got = loggers.level(scratch + ".child")
    assert got is not None and got["level"] == "DEBUG" and got["last_modified"] > 0
    assert loggers.all_levels()[scratch]["level"] == "DEBUG"
    assert "root" not in loggers.all_levels()  # as Kafka 4.4, unless set here
    assert loggers.set_level(scratch + ".child", "TRACE") == [scratch + ".child"]
    assert logging.getLogger(scratch + ".child").level == 5
    assert [level_name(v) for v in (60, 50, 40, 30, 20, 10, 5, 1)] == [
        "OFF",
        "FATAL",
        "ERROR",
        "WARN",
        "INFO",
        "DEBUG",
        "TRACE",
        "ALL",
    ]
