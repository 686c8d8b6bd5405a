"""Partition limits and all-or-nothing topic creation (issue 25: one request bricked the broker).

Sans-IO (MemoryStorage, ManualClock); the wire answers are in
tests/integration/test_hostile_clients.py.
"""

from __future__ import annotations

import errno
import random

from coordinator.broker import BrokerCore
from coordinator.log.memory_log import MemoryStorage
from coordinator.log.storage import LogConfig, PartitionLog
from coordinator.partition_limits import (
    EXCESSIVE_ADDITIONAL,
    EXCESSIVE_BATCH,
    EXCESSIVE_PARTITIONS,
    create_partitions_refusal,
    create_topics_refusal,
    total_partitions_refusal,
)
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicPartition

T0 = 1_700_000_000_000


class FdLimitedStorage(MemoryStorage):
    """Memory storage that runs out of file descriptors after ``budget`` client logs."""

    def __init__(self, budget: int) -> None:
        super().__init__()
        self.budget = budget

    def open_log(self, topic: str, partition: int, config: LogConfig | None = None) -> PartitionLog:
        if not topic.startswith("__") and (topic, partition) not in self._data:
            if self.budget <= 0:
                raise OSError(errno.EMFILE, "Too many open files")
            self.budget -= 1
        return super().open_log(topic, partition, config)


def core(storage: MemoryStorage, **config: str) -> BrokerCore:
    return BrokerCore(storage, ManualClock(T0), BrokerConfig(config), random.Random(3))


def test_kafka_request_limits() -> None:
    assert create_topics_refusal([(10_000, 0)], 1) == (
        ErrorCode.POLICY_VIOLATION,
        EXCESSIVE_BATCH,  # a topic record and 10,000 partition records
    )
    assert create_topics_refusal([(9_999, 0)], 1) is None
    assert create_topics_refusal([(6_000, 0), (6_000, 0)], 1) == (
        ErrorCode.POLICY_VIOLATION,
        EXCESSIVE_PARTITIONS,
    )
    # -1 is the default partition count; other invalid counts are left to the topic's check
    assert create_topics_refusal([(-1, 0)] * 3, 5_000) == (
        ErrorCode.POLICY_VIOLATION,
        EXCESSIVE_PARTITIONS,
    )
    assert create_topics_refusal([(0, 0), (-7, 0)], 1) is None
    # Kafka 4.4: 4,999 + 5,001 added is accepted, 4,999 + 5,002 refused
    assert create_partitions_refusal([32_766]) == (ErrorCode.POLICY_VIOLATION, EXCESSIVE_ADDITIONAL)
    assert create_partitions_refusal([4_999, 5_001]) is None
    assert create_partitions_refusal([4_999, 5_002]) is not None
    assert total_partitions_refusal(8, 2, 10) is None
    assert total_partitions_refusal(8, 3, 10) is not None


def test_a_topic_whose_logs_cannot_be_opened_is_not_persisted() -> None:
    storage = FdLimitedStorage(budget=5)
    broker = core(storage)
    result = broker.create_topic("wide", 8, 1)
    assert result.error is ErrorCode.KAFKA_STORAGE_ERROR
    assert result.message is not None and "Too many open files" in result.message
    assert broker.topics.get("wide") is None
    assert not [tp for tp in broker.partitions if tp.topic == "wide"]
    assert not [key for key in storage._data if key[0] == "wide"]  # the made logs are gone
    storage.budget = 100
    assert core(storage).topics.get("wide") is None  # a restart does not see it either
    assert broker.create_topic("wide", 8, 1).error is ErrorCode.NONE


def test_added_partitions_whose_logs_cannot_be_opened_are_not_persisted() -> None:
    storage = FdLimitedStorage(budget=3)
    broker = core(storage)
    assert broker.create_topic("grow", 2, 1).error is ErrorCode.NONE
    assert broker.create_partitions("grow", 5).error is ErrorCode.KAFKA_STORAGE_ERROR
    info = broker.topics.get("grow")
    assert info is not None and info.num_partitions == 2
    assert TopicPartition("grow", 2) not in broker.partitions
    storage.budget = 100
    restarted = core(storage)
    grown = restarted.topics.get("grow")
    assert grown is not None and grown.num_partitions == 2


def test_total_limit_covers_create_add_and_auto_create() -> None:
    broker = core(MemoryStorage(), **{"sharetxn.max.partitions": "4", "num.partitions": "3"})
    assert broker.ensure_topic("auto") is not None  # 3 partitions
    assert broker.create_topic("two", 2, 1).error is ErrorCode.POLICY_VIOLATION
    assert broker.create_partitions("auto", 5).error is ErrorCode.POLICY_VIOLATION
    assert broker.ensure_topic("auto-too") is None
    assert broker.create_partitions("auto", 4).error is ErrorCode.NONE
    assert len(broker.partitions) == 4
