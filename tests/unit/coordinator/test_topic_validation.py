"""CreateTopics and CreatePartitions validation as Apache Kafka 4.4 answers it.

The codes and messages are those Kafka answered in the differential area ``topics``
(tests/reference/differential/scenarios_topics.py); here each rule is checked alone, sans-IO.
"""

from __future__ import annotations

import random

import pytest

from coordinator.broker import BrokerCore
from coordinator.log.memory_log import MemoryLog, MemoryStorage
from coordinator.protocol.topic_requests import (
    DUPLICATE,
    added_assignments_refusal,
    assignment_refusal,
    counts_refusal,
    duplicated,
)
from coordinator.topics import TopicRegistry, partition_count_error
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode as E
from txn.errors import (
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidTopicError,
    KafkaProtocolError,
    TopicAlreadyExistsError,
)
from txn.topic_names import collision, topic_name_error

T0 = 1_700_000_000_000
NODE = {1}


def core() -> BrokerCore:
    return BrokerCore(MemoryStorage(), ManualClock(T0), BrokerConfig({}), random.Random(5))


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "Topic name is invalid: the empty string is not allowed"),
        (".", "Topic name is invalid: '.' is not allowed"),
        ("..", "Topic name is invalid: '..' is not allowed"),
        (
            "a b",
            "Topic name is invalid: 'a b' contains one or more characters other than ASCII"
            " alphanumerics, '.', '_' and '-'",
        ),
        (
            "x" * 250,
            f"Topic name is invalid: the length of '{'x' * 250}' is longer than the max allowed"
            " length 249",
        ),
        ("...", None),
        ("x" * 249, None),
        ("a.b_c-D9", None),
    ],
)
def test_name_rules(name: str, message: str | None) -> None:
    assert topic_name_error(name) == message


def test_collisions_on_dot_and_underscore() -> None:
    assert collision("a_b", ["a.b", "c"]) == "a.b"
    assert collision("a.b", ["a_b"]) == "a_b"
    assert collision("a.b", ["a.b"]) is None  # the same name is "already exists"
    assert collision("a-b", ["a_b", "a.b"]) is None  # '-' is not a collision character
    assert collision("__consumer.offsets", ["__consumer_offsets"]) == "__consumer_offsets"


def _refused(
    c: BrokerCore, name: str, configs: dict[str, str | None] | None = None
) -> KafkaProtocolError:
    with pytest.raises(KafkaProtocolError) as caught:
        c.topics.check_new(name, configs)
    return caught.value


def test_check_new_in_kafkas_order() -> None:
    c = core()
    assert c.create_topic("a.b", 1, 1).error is E.NONE
    exists = _refused(c, "a.b", {"retention.ms": "x"})
    assert isinstance(exists, TopicAlreadyExistsError)
    assert exists.message == "Topic 'a.b' already exists."
    collides = _refused(c, "a_b", {"retention.ms": "x"})
    assert isinstance(collides, InvalidTopicError)
    assert collides.message == "Topic 'a_b' collides with existing topic: a.b"
    internal = _refused(c, "__transaction.state")
    assert (
        internal.message
        == "Topic '__transaction.state' collides with existing topic: __transaction_state"
    )
    null = _refused(c, "n", {"retention.ms": None})
    assert isinstance(null, InvalidConfigError)
    assert null.message == "Null value not supported for topic configs: retention.ms"
    unknown = _refused(c, "n", {"retention.ms": "x", "no.such": "1"})
    assert unknown.message == "Unknown topic config name: no.such"
    c.topics.check_new("n", {"retention.ms": "1000"})


def test_colliding_names_are_never_created() -> None:
    c = core()
    assert c.create_topic("m.n", 1, 1).error is E.NONE
    result = c.create_topic("m_n", 1, 1)
    assert result.error is E.INVALID_TOPIC_EXCEPTION
    assert c.ensure_topic("m_n") is None  # Metadata auto-creation neither
    assert c.topics.get("m_n") is None
    assert c.delete_topic("m.n").error is E.NONE
    assert c.create_topic("m_n", 1, 1).error is E.NONE


def _collides_with(topics: TopicRegistry, name: str) -> str:
    with pytest.raises(InvalidTopicError) as caught:
        topics.check_new(name)
    prefix = f"Topic '{name}' collides with existing topic: "
    assert caught.value.message.startswith(prefix)
    return caught.value.message.removeprefix(prefix)


def test_collisions_among_many_topics_and_after_replay() -> None:
    """The check finds a topic's namesakes wherever they are among many topics, names the
    oldest one, forgets deleted ones, and is rebuilt when the metadata log is replayed."""
    log = MemoryLog()
    topics = TopicRegistry(log, random.Random(2))
    for i in range(200):
        topics.create(f"t_{i}", 1, T0)
    topics.create("a.b.c", 1, T0)
    topics.create("a_b.d", 1, T0)
    for _ in range(2):
        assert _collides_with(topics, "a_b_c") == "a.b.c"
        assert _collides_with(topics, "t.7") == "t_7"
        assert _collides_with(topics, "__consumer.offsets") == "__consumer_offsets"
        topics.check_new("a-b-c")
        topics.check_new("t_200")
        topics = TopicRegistry(log, random.Random(2))  # a restart replays the log
    topics.delete("a.b.c", T0)
    topics.check_new("a_b_c")
    topics.create("a_b_c", 1, T0)
    topics = TopicRegistry(log, random.Random(2))
    assert _collides_with(topics, "a.b.c") == "a_b_c"


def test_zero_partitions_message() -> None:
    with pytest.raises(InvalidPartitionsError, match="invalid non-positive value"):
        core().topics.create("z", 0, T0)


def test_duplicated_names() -> None:
    assert duplicated(["a", "b", "a", "c", "b", "a"]) == ["a", "b"]
    assert duplicated(["a", "b"]) == []
    assert DUPLICATE == (E.INVALID_REQUEST, "Duplicate topic name.")


NOT_MINUS_ONE_RF = (
    "A manual partition assignment was specified, but replication factor was not set to -1."
)
NOT_MINUS_ONE_NP = (
    "A manual partition assignment was specified, but numPartitions was not set to -1."
)
NOT_CONSECUTIVE = "partitions should be a consecutive 0-based integer sequence"


@pytest.mark.parametrize(
    ("assignments", "partitions", "replication", "expected"),
    [
        ([(0, [1])], -1, -1, None),
        ([(0, [1]), (1, [1])], -1, -1, None),
        ([(0, [1])], 1, 1, (E.INVALID_REQUEST, NOT_MINUS_ONE_RF)),
        ([(0, [1])], 1, -1, (E.INVALID_REQUEST, NOT_MINUS_ONE_NP)),
        (
            [(0, [1]), (0, [1])],
            -1,
            -1,
            (
                E.INVALID_REPLICA_ASSIGNMENT,
                "Found multiple manual partition assignments for partition 0",
            ),
        ),
        (
            [(0, [])],
            -1,
            -1,
            (
                E.INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes an empty replica list.",
            ),
        ),
        (
            [(0, [1, 7])],
            -1,
            -1,
            (
                E.INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes broker 7, but no such broker is"
                " registered.",
            ),
        ),
        (
            [(0, [1, 1])],
            -1,
            -1,
            (
                E.INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes the broker 1 more than once.",
            ),
        ),
        ([(0, [1]), (2, [1])], -1, -1, (E.INVALID_REPLICA_ASSIGNMENT, NOT_CONSECUTIVE)),
        ([(1, [1])], -1, -1, (E.INVALID_REPLICA_ASSIGNMENT, NOT_CONSECUTIVE)),
        ([(-1, [1])], -1, -1, (E.INVALID_REPLICA_ASSIGNMENT, NOT_CONSECUTIVE)),
    ],
)
def test_explicit_assignments(
    assignments: list[tuple[int, list[int]]],
    partitions: int,
    replication: int,
    expected: tuple[E, str] | None,
) -> None:
    assert assignment_refusal(assignments, partitions, replication, NODE) == expected


def test_uneven_replica_counts() -> None:
    code, message = assignment_refusal([(0, [1]), (1, [1, 2])], -1, -1, {1, 2}) or (E.NONE, "")
    assert code is E.INVALID_REPLICA_ASSIGNMENT
    assert message == (
        "The manual partition assignment includes a partition with 2 replica(s), but this is"
        " not consistent with previous partitions, which have 1 replica(s)."
    )


REPLICATION_NON_POSITIVE = (
    E.INVALID_REPLICATION_FACTOR,
    "Replication factor must be larger than 0, or -1 to use the default value.",
)


def test_counts_in_kafkas_order() -> None:
    assert counts_refusal(1, 1, 1) is None
    assert counts_refusal(0, 0, 1) == REPLICATION_NON_POSITIVE  # the factor is checked first
    assert counts_refusal(0, 3, 1) == (
        E.INVALID_PARTITIONS,
        "Number of partitions was set to an invalid non-positive value.",
    )
    assert counts_refusal(1, -2, 1) == REPLICATION_NON_POSITIVE
    assert counts_refusal(1, 2, 1) == (
        E.INVALID_REPLICATION_FACTOR,
        "Unable to replicate the partition 2 time(s): The target replication factor of 2 cannot"
        " be reached because only 1 broker(s) are registered or some brokers have all their log"
        " directories cordoned.",
    )


def test_create_partitions_counts_and_assignments() -> None:
    assert partition_count_error("t", 2, 2) == "Topic already has 2 partition(s)."
    assert partition_count_error("t", 2, 1) == (
        "The topic t currently has 2 partition(s); 1 would not be an increase."
    )
    assert partition_count_error("t", 2, 3) is None
    assert added_assignments_refusal(2, [[1], [1]], NODE, 1) is None
    assert added_assignments_refusal(1, [], NODE, 1) == (
        E.INVALID_REPLICA_ASSIGNMENT,
        "Attempted to add 1 additional partition(s), but only 0 assignment(s) were specified.",
    )
    refused = added_assignments_refusal(1, [[1, 2]], {1, 2}, 1)
    assert refused is not None
    assert "with 2 replica(s)" in refused[1]
