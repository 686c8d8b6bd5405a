"""Topic config alters as Kafka 4.4 applies them (the differential area ``configs`` holds the
same cases against Apache Kafka): the four IncrementalAlterConfigs operations in order, then
every value and the cross-checks validated on the merged configs."""

from __future__ import annotations

import random

import pytest

from coordinator.broker import BrokerCore
from coordinator.log.memory_log import MemoryStorage
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.topic_config_defs import ConfigOperation as Op
from txn.topic_config_defs import topic_config_value_error

SET, DELETE, APPEND, SUBTRACT = Op.SET, Op.DELETE, Op.APPEND, Op.SUBTRACT


@pytest.fixture
def core() -> BrokerCore:
    broker = BrokerCore(MemoryStorage(), ManualClock(0), BrokerConfig(), random.Random(1))
    assert broker.create_topic("t", 1, 1, {}).error is ErrorCode.NONE
    return broker


def configs(core: BrokerCore) -> dict[str, str]:
    info = core.topics.get("t")
    assert info is not None
    return dict(info.configs)


def test_append_and_subtract_work_on_the_default_of_a_list(core: BrokerCore) -> None:
    ok = (ErrorCode.NONE, None)
    assert core.incremental_alter_topic_configs("t", [("cleanup.policy", APPEND, "compact")]) == ok
    assert configs(core) == {"cleanup.policy": "delete,compact"}
    assert core.incremental_alter_topic_configs("t", [("cleanup.policy", SUBTRACT, "delete")]) == ok
    assert configs(core) == {"cleanup.policy": "compact"}


@pytest.mark.parametrize(
    ("ops", "error", "message"),
    [
        (
            [("retention.ms", APPEND, "5")],
            ErrorCode.INVALID_CONFIG,
            "Can't APPEND to key retention.ms because its type is not LIST.",
        ),
        (
            [("retention.ms", SUBTRACT, "5")],
            ErrorCode.INVALID_CONFIG,
            "Can't SUBTRACT to key retention.ms because its type is not LIST.",
        ),
        (
            [("cleanup.policy", APPEND, "never")],
            ErrorCode.INVALID_CONFIG,
            "Invalid value never for configuration cleanup.policy: "
            "String must be one of: compact, delete",
        ),
        (
            [("retention.ms", SET, None)],
            ErrorCode.INVALID_REQUEST,
            "Null value not supported for : retention.ms",
        ),
        (
            [("retention.ms", SET, "1"), ("retention.ms", SET, "2")],
            ErrorCode.INVALID_REQUEST,
            "Error due to duplicate config keys",
        ),
        ([("retention.ms", 7, "1")], ErrorCode.UNKNOWN_SERVER_ERROR, None),
        (
            [("min.compaction.lag.ms", SET, "5000"), ("max.compaction.lag.ms", SET, "1000")],
            ErrorCode.INVALID_CONFIG,
            "conflict topic config setting min.compaction.lag.ms (5000) > "
            "max.compaction.lag.ms (1000)",
        ),
        ([("no.such", SET, "1")], ErrorCode.INVALID_CONFIG, "Unknown topic config name: no.such"),
        ([("no.such", DELETE, None)], ErrorCode.NONE, None),
    ],
)
def test_refusals_name_what_kafka_names(
    core: BrokerCore, ops: list[tuple[str, int, str | None]], error: ErrorCode, message: str | None
) -> None:
    assert core.incremental_alter_topic_configs("t", ops) == (error, message)
    assert configs(core) == {}


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [
        ("segment.bytes", "1048575", "Value must be at least 1048576"),
        ("segment.bytes", "2147483648", "Not a number of type INT"),
        ("min.cleanable.dirty.ratio", "1.5", "Value must be no more than 1"),
        ("compression.gzip.level", "0", "Value must be between 1 and 9 or equal to -1"),
        ("unclean.leader.election.enable", "maybe", "Expected value to be either true or false"),
        ("message.timestamp.type", "logappendtime", "String must be one of: "),
    ],
)
def test_values_are_checked_by_type_and_validator(name: str, value: str, reason: str) -> None:
    message = topic_config_value_error(name, value)
    assert message is not None and reason in message, message


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("retention.ms", " 1000 "),
        ("unclean.leader.election.enable", "TRUE"),
        ("cleanup.policy", ""),
        ("compression.type", "uncompressed"),
        ("leader.replication.throttled.replicas", "*"),
        ("internal.segment.bytes", "300"),
    ],
)
def test_values_kafka_accepts(name: str, value: str) -> None:
    assert topic_config_value_error(name, value) is None
