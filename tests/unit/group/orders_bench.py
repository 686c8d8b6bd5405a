"""A consumer-group coordinator over one memory log with the topic "orders" (four partitions)."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field

from coordinator.assembly import consumer_group_coordinator
from coordinator.group.coordinator import ConsumerGroupCoordinator
from coordinator.log.memory_log import MemoryLog
from coordinator.topics import TopicRegistry
from txn.clock import ManualClock
from txn.config import BrokerConfig


@dataclass
class OrdersBench:
    clock: ManualClock = field(default_factory=ManualClock)
    log: MemoryLog = field(default_factory=MemoryLog)
    topics: TopicRegistry = field(
        default_factory=lambda: TopicRegistry(MemoryLog(), random.Random(3))
    )
    coord: ConsumerGroupCoordinator = field(init=False)

    def __post_init__(self) -> None:
        self.topics.create("orders", 4, 0)
        self.coord = self.new()

    def broker_config(self) -> dict[str, str]:
        # Assign at once (Kafka allows an assignment interval of 0); the interval's own tests
        # set it.
        return {
            "group.initial.rebalance.delay.ms": "0",
            "group.consumer.assignment.interval.ms": "0",
        }

    def new(self) -> ConsumerGroupCoordinator:
        """A coordinator loaded from the bench's log."""
        coord = consumer_group_coordinator(
            self.clock, BrokerConfig(self.broker_config()), self.log, topics=self.topics
        )
        coord.load()
        return coord

    @property
    def orders(self) -> uuid.UUID:
        info = self.topics.get("orders")
        assert info is not None
        return info.topic_id
