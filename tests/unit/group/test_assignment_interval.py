"""A KIP-848 group computes its target assignment at most once per assignment interval.

Kafka 4.4's ``group.consumer.assignment.interval.ms`` (1 s) and the group's own
``consumer.assignment.interval.ms``: an epoch bumped sooner waits for a heartbeat after the
interval; members stay at the previous target's epoch meanwhile.  The time of the last target
assignment is the AssignmentTimestamp of its metadata record, so a failover keeps it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from coordinator.assembly import consumer_group_coordinator
from coordinator.group.consumer_protocol import ConsumerHeartbeatResult
from coordinator.group.consumer_records import (
    TARGET_METADATA,
    ConsumerKey,
    GroupEpochValue,
    decode_consumer_value,
    encode_consumer_value,
)
from coordinator.group.coordinator import ConsumerGroupCoordinator
from tests.unit.group.orders_bench import OrdersBench
from txn.config import BrokerConfig
from txn.errors import ErrorCode

G = "cg"


@dataclass
class Bench(OrdersBench):
    """The broker's default interval; ``own`` holds groups' own intervals."""

    own: dict[str, int] = field(default_factory=dict)

    def broker_config(self) -> dict[str, str]:
        return {"group.initial.rebalance.delay.ms": "0"}

    def new(self) -> ConsumerGroupCoordinator:
        coord = consumer_group_coordinator(
            self.clock,
            BrokerConfig(self.broker_config()),
            self.log,
            topics=self.topics,
            consumer_assignment_interval=lambda g: self.own.get(g, 1000),
        )
        coord.load()
        return coord

    def beat(self, member: str, epoch: int, group: str = G) -> ConsumerHeartbeatResult:
        result = self.coord.consumer_heartbeat(
            group,
            member,
            epoch,
            rebalance_timeout_ms=30000,
            subscribed_topic_names=["orders"] if epoch == 0 else None,
        )
        assert result.error is ErrorCode.NONE, result
        return result

    def epochs(self, group: str = G) -> tuple[int, int]:
        (desc,) = self.coord.describe_consumer_protocol([group])
        assert desc[2] is not None
        return desc[2].epoch, desc[2].assignment_epoch


def test_a_member_joining_within_the_interval_waits_for_it() -> None:
    b = Bench()
    first = b.beat("m1", 0)
    assert first.member_epoch == 2 and first.assignment is not None
    b.clock.advance(300)
    second = b.beat("m2", 0)
    assert (second.member_epoch, second.assignment) == (2, {})
    assert b.epochs() == (3, 2)
    b.clock.advance(699)
    assert b.beat("m1", 2).member_epoch == 2
    b.clock.advance(1)
    revoking = b.beat("m1", 2)  # the new target: m1 revokes two partitions first
    assert b.epochs() == (3, 3)
    assert revoking.member_epoch == 2
    assert revoking.assignment is not None
    assert sum(len(p) for p in revoking.assignment.values()) == 2


def test_a_member_joining_after_the_interval_is_assigned_at_once() -> None:
    b = Bench()
    b.beat("m1", 0)
    b.clock.advance(1000)
    assert b.beat("m2", 0).member_epoch == 3
    assert b.epochs() == (3, 3)


def test_a_leave_bumps_the_epoch_and_the_next_heartbeat_assigns() -> None:
    b = Bench()
    b.beat("m1", 0)
    b.clock.advance(1000)
    b.beat("m2", 0)
    b.clock.advance(1000)
    assert b.coord.consumer_heartbeat(G, "m2", -1).error is ErrorCode.NONE
    assert b.epochs() == (4, 3)
    assert b.beat("m1", 2).member_epoch == 4  # it had not revoked for epoch 3 yet
    assert b.epochs() == (4, 4)


def test_the_groups_own_interval() -> None:
    b = Bench(own={"fast": 0, "slow": 5000})
    for group in ("fast", "slow"):
        b.beat("m1", 0, group)
        b.clock.advance(1500)
        b.beat("m2", 0, group)
    assert b.epochs("fast") == (3, 3)
    assert b.epochs("slow") == (3, 2)


def test_a_failover_keeps_the_time_of_the_last_assignment() -> None:
    b = Bench()
    b.beat("m1", 0)
    b.clock.advance(500)
    b.coord.close()
    b.coord = b.new()
    assert b.beat("m2", 0).member_epoch == 2
    assert b.epochs() == (3, 2)
    b.clock.advance(500)
    assert b.beat("m2", 2).member_epoch == 3


def test_the_assignment_timestamp_is_kafkas_tagged_field() -> None:
    key = ConsumerKey(TARGET_METADATA, G)
    value = GroupEpochValue(7, 1_700_000_000_123)
    raw = encode_consumer_value(value)
    assert raw == struct.pack(">hi", 0, 7) + b"\x01\x00\x08" + struct.pack(">q", value.timestamp)
    assert decode_consumer_value(key, raw) == value
    assert encode_consumer_value(GroupEpochValue(7)) == struct.pack(">hi", 0, 7) + b"\x00"
