"""The broker's own logs are never a client's topic: the core refuses every client change.

Sans-IO (MemoryStorage, ManualClock): the answers follow Apache Kafka 4.4 as observed with
the reference harness (tests/reference/differential/scenarios_internal.py).
"""

from __future__ import annotations

import json
import random
import uuid

import pytest

from coordinator.broker import BrokerCore
from coordinator.log.data_dir import DataDirError
from coordinator.log.memory_log import MemoryStorage
from coordinator.log.storage import LogConfig, PartitionLog
from coordinator.reserved_topics import FORGET_CONFIG
from coordinator.topics import TopicRegistry
from txn.batch import build_batch
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode, InvalidTopicError
from txn.ids import (
    CLUSTER_METADATA_TOPIC,
    GROUP_METADATA_TOPIC,
    KAFKA_INTERNAL_TOPICS,
    PRIVATE_TOPICS,
    RESERVED_TOPICS,
    TRANSACTION_STATE_TOPIC,
    TopicPartition,
    is_reserved_topic,
)
from txn.txn_log import read_records

T0 = 1_700_000_000_000


def core(storage: MemoryStorage | None = None, **config: str) -> BrokerCore:
    return BrokerCore(
        storage or MemoryStorage(), ManualClock(T0), BrokerConfig(config), random.Random(3)
    )


def test_one_reserved_set() -> None:
    assert {
        "__consumer_offsets",
        "__transaction_state",
        "__share_group_state",
    } == KAFKA_INTERNAL_TOPICS
    assert {"__cluster_metadata"} == PRIVATE_TOPICS  # __producer_ids is a topic name as any
    assert RESERVED_TOPICS == KAFKA_INTERNAL_TOPICS | PRIVATE_TOPICS
    assert is_reserved_topic("__consumer_offsets")
    assert not is_reserved_topic("__consumer_offsets2")
    assert not is_reserved_topic(None)


@pytest.mark.parametrize("name", sorted(RESERVED_TOPICS))
def test_never_auto_created(name: str) -> None:
    c = core(**{"num.partitions": "3"})
    assert c.ensure_topic(name) is None
    assert c.topics.get(name) is None
    assert all(tp.topic != name for tp in c.partitions)


@pytest.mark.parametrize("validate_only", [False, True])
def test_create_topics_refused_as_kafka(validate_only: bool) -> None:
    c = core()
    for name in sorted(KAFKA_INTERNAL_TOPICS):
        result = c.create_topic(name, 1, 1, validate_only=validate_only)
        assert result.error is ErrorCode.TOPIC_ALREADY_EXISTS
        assert result.message == f"Topic '{name}' already exists."
    for name in sorted(PRIVATE_TOPICS):
        result = c.create_topic(name, 1, 1, validate_only=validate_only)
        assert result.error is ErrorCode.INVALID_REQUEST
        assert result.message == f"Creation of internal topic {name} is prohibited."
    assert not [t for t in c.topics.all() if t.name in RESERVED_TOPICS]


def test_partitions_delete_and_configs_refused() -> None:
    c = core()
    for name in sorted(KAFKA_INTERNAL_TOPICS):
        assert c.create_partitions(name, 10).error is ErrorCode.INVALID_TOPIC_EXCEPTION
        assert c.create_partitions(name, 10, validate_only=True).error is (
            ErrorCode.INVALID_TOPIC_EXCEPTION
        )
        assert c.delete_topic(name).error is ErrorCode.INVALID_TOPIC_EXCEPTION
        error, message = c.alter_topic_configs(name, {"retention.ms": "1"}, [])
        assert error is ErrorCode.INVALID_TOPIC_EXCEPTION
        assert message is not None and name in message
    for name in sorted(PRIVATE_TOPICS):
        assert c.create_partitions(name, 10).error is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert c.delete_topic(name).error is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        error, _ = c.alter_topic_configs(name, {"retention.ms": "1"}, [])
        assert error is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_produce_and_delete_records_refused_and_nothing_written() -> None:
    c = core()
    batch = build_batch([(b"k", b"v")], timestamp_ms=T0)
    for name in sorted(KAFKA_INTERNAL_TOPICS):
        for index in (0, 1):
            tp = TopicPartition(name, index)
            assert c.produce(tp, batch, None).error is ErrorCode.INVALID_TOPIC_EXCEPTION
            assert c.produce(tp, batch, "txn").error is ErrorCode.INVALID_TOPIC_EXCEPTION
            assert c.delete_records(tp, 0) == (ErrorCode.INVALID_TOPIC_EXCEPTION, -1)
    for name in sorted(PRIVATE_TOPICS):
        tp = TopicPartition(name, 0)
        assert c.produce(tp, batch, None).error is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert c.delete_records(tp, 0) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)
    assert c.fetch(
        TopicPartition(GROUP_METADATA_TOPIC, 1), 0, 1000, read_committed=False
    ).error is (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    assert c.visible_topics() == []


def _legacy_topic(storage: MemoryStorage, name: str, partitions: int = 2) -> None:
    """What an older sharetxn wrote when Metadata auto-created ``name``."""
    append_legacy_topic_record(
        storage.open_log(CLUSTER_METADATA_TOPIC, 0, LogConfig()), name, partitions, T0
    )


def append_legacy_topic_record(log: PartitionLog, name: str, partitions: int, now: int) -> None:
    """The ``"type": "topic"`` record (not internal) that auto-creation appended."""
    record = {
        "type": "topic",
        "name": name,
        "id": str(uuid.uuid4()),
        "partitions": partitions,
        "configs": {},
        "internal": False,
    }
    value = json.dumps(record, sort_keys=True).encode()
    log.append(build_batch([(None, value)], timestamp_ms=now), now)
    log.flush()


def test_registry_refuses_reserved_names() -> None:
    registry = TopicRegistry(
        MemoryStorage().open_log(CLUSTER_METADATA_TOPIC, 0, LogConfig()), random.Random(1)
    )
    for name in sorted(RESERVED_TOPICS):
        with pytest.raises(InvalidTopicError):
            registry.create(name, 1, T0)
    assert registry.all() == []


def test_data_dir_with_client_created_internal_topic_is_refused() -> None:
    storage = MemoryStorage()
    _legacy_topic(storage, GROUP_METADATA_TOPIC)
    with pytest.raises(DataDirError) as raised:
        core(storage)
    text = str(raised.value)
    assert "'__consumer_offsets'" in text
    assert "__consumer_offsets-0, __consumer_offsets-1" in text
    assert f"--set {FORGET_CONFIG}=true" in text
    assert "docs/security.md" in text


def test_forget_flag_drops_the_record_once() -> None:
    storage = MemoryStorage()
    _legacy_topic(storage, GROUP_METADATA_TOPIC)
    first = core(storage, **{FORGET_CONFIG: "true"})
    assert first.topics.get(GROUP_METADATA_TOPIC) is None
    assert all(tp.topic != GROUP_METADATA_TOPIC for tp in first.partitions)
    # the delete record is durable: later starts need no flag
    again = core(storage)
    assert again.topics.get(GROUP_METADATA_TOPIC) is None


def test_internal_record_is_not_refused() -> None:
    """A topic record marked internal is the broker's own, never a client's."""
    storage = MemoryStorage()
    registry = TopicRegistry(
        storage.open_log(CLUSTER_METADATA_TOPIC, 0, LogConfig()), random.Random(1)
    )
    registry.create(GROUP_METADATA_TOPIC, 2, T0, internal=True)
    c = core(storage)
    assert all(tp.topic != GROUP_METADATA_TOPIC for tp in c.partitions)


def _listed(c: BrokerCore) -> list[str]:
    return [t.name for t in c.internal_topics.all_listed("cluster")]


def test_internal_topics_exist_once_created_and_after_restart() -> None:
    """As in Kafka 4.4, each internal topic exists from its first trigger on (FindCoordinator
    or Metadata auto-creation); the fact is one record in the topic registry's log."""
    storage = MemoryStorage()
    c = core(storage)
    assert _listed(c) == []
    assert c.internal_topics.listed(GROUP_METADATA_TOPIC, "cluster") is None
    version = c.topics.version
    c.internal_topics.create(TRANSACTION_STATE_TOPIC, T0)
    c.internal_topics.create(TRANSACTION_STATE_TOPIC, T0)  # recorded once
    c.internal_topics.create("orders", T0)  # not an internal topic: nothing
    c.internal_topics.create(CLUSTER_METADATA_TOPIC, T0)
    assert c.topics.version == version  # no topic changed
    assert _listed(c) == [TRANSACTION_STATE_TOPIC]
    listed = c.internal_topics.listed(TRANSACTION_STATE_TOPIC, "cluster")
    assert listed is not None and listed.internal and listed.num_partitions == 50
    metadata_log = storage.open_log(CLUSTER_METADATA_TOPIC, 0, LogConfig())
    records = [json.loads(v) for _h, raw in metadata_log.batches(0) if (v := _record_value(raw))]
    assert records == [{"name": TRANSACTION_STATE_TOPIC, "type": "internal"}]
    assert c.topics.all() == []
    again = core(storage)
    assert _listed(again) == [TRANSACTION_STATE_TOPIC]
    assert again.topics.all() == []


def test_internal_topic_with_coordinator_records_exists() -> None:
    """A coordinator log that holds a record (a data directory written before the registry
    recorded the creation, or the share coordinator's first read) makes its topic exist."""
    storage = MemoryStorage()
    c = core(storage)
    result = c.txn_coordinator.init_producer_id("t1", 60_000)
    assert result.error is ErrorCode.NONE
    assert _listed(c) == [TRANSACTION_STATE_TOPIC]
    again = core(storage)
    assert _listed(again) == [TRANSACTION_STATE_TOPIC]
    assert not again.topics.internal_created(TRANSACTION_STATE_TOPIC)


def _record_value(raw: bytes) -> bytes | None:
    """A topic record's value (None for the producer id records, which have a key)."""
    ((key, value),) = read_records(raw)
    if key is not None:
        return None
    assert value is not None
    return bytes(value)
