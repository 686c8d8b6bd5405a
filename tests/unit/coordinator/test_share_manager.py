"""The broker's share layer through BrokerCore: membership, sessions, fetch, metrics, restart."""

from __future__ import annotations

import random

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from coordinator.broker import BrokerCore
from coordinator.log.memory_log import MemoryStorage
from coordinator.metrics import ShareGroupMetrics
from coordinator.share.manager import PartitionAcks, ShareFetchOutcome
from coordinator.share.share_partition import AckBatch
from txn.batch import build_batch
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicIdPartition, TopicPartition

CONFIG = BrokerConfig(
    {
        "group.share.min.session.timeout.ms": "1000",
        "group.share.min.heartbeat.interval.ms": "500",
        # a join is answered with the partitions it initialized (no assignment interval)
        "group.share.assignment.interval.ms": "0",
    }
)


def make_core(storage: MemoryStorage | None = None, clock: ManualClock | None = None) -> BrokerCore:
    return BrokerCore(storage or MemoryStorage(), clock or ManualClock(), CONFIG, random.Random(7))


def produce(core: BrokerCore, topic: str, n: int) -> None:
    batch = build_batch(
        [(None, f"v{i}".encode()) for i in range(n)], timestamp_ms=core.clock.now_ms()
    )
    assert core.produce(TopicPartition(topic, 0), batch, None).error is ErrorCode.NONE


def join(core: BrokerCore, group: str, member: str, topic: str) -> None:
    core.share.groups.alter_group_configs(group, {"share.auto.offset.reset": "earliest"})
    result = core.share.heartbeat(group, member, 0, None, [topic])
    assert result.error is ErrorCode.NONE
    assert result.assignment, "the join answer carries the assignment once state is initialized"


def fetch(
    core: BrokerCore, group: str, member: str, epoch: int, tip: TopicIdPartition
) -> ShareFetchOutcome:
    error, session = core.share.open_or_check_session(group, member, epoch, connection_id=1)
    assert error is ErrorCode.NONE and session is not None
    session.add([tip])
    if epoch > 0:
        core.share.sessions.advance(session)
    outcome = ShareFetchOutcome(ErrorCode.NONE)
    core.share.acquire(group, member, session, 500, 1 << 20, outcome)
    return outcome


def test_join_fetch_ack_and_metrics() -> None:
    reader = InMemoryMetricReader()
    core = make_core()
    core.add_share_event_listener(ShareGroupMetrics(MeterProvider(metric_readers=[reader])).record)
    core.create_topic("t", 1, 1)
    produce(core, "t", 5)
    join(core, "g", "m1", "t")
    tip = TopicIdPartition(core.topics.get("t").topic_id, 0)  # type: ignore[union-attr]
    outcome = fetch(core, "g", "m1", 0, tip)
    assert outcome.acquired_count == 5
    acks = core.share.acknowledge("g", "m1", [PartitionAcks(tip, [AckBatch(0, 4, [1])])])
    assert acks == {tip: ErrorCode.NONE}
    points = {
        m.name: sum(p.value for p in m.data.data_points)
        for rm in reader.get_metrics_data().resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
    }
    assert points["share-group-records-acquired"] == 5
    assert points["share-group-records-acknowledged"] == 5


def test_session_epochs_and_close_release() -> None:
    core = make_core()
    core.create_topic("t", 1, 1)
    produce(core, "t", 3)
    join(core, "g", "m1", "t")
    tip = TopicIdPartition(core.topics.get("t").topic_id, 0)  # type: ignore[union-attr]
    assert fetch(core, "g", "m1", 0, tip).acquired_count == 3
    assert (
        core.share.open_or_check_session("g", "m1", 5, 1)[0]
        is ErrorCode.INVALID_SHARE_SESSION_EPOCH
    )
    assert (
        core.share.open_or_check_session("g", "nobody", 1, 1)[0]
        is ErrorCode.SHARE_SESSION_NOT_FOUND
    )
    core.share.on_connection_closed(1)  # the records come back
    join(core, "g", "m2", "t")
    again = fetch(core, "g", "m2", 0, tip)
    assert again.acquired_count == 3


def test_expired_member_releases_records() -> None:
    clock = ManualClock()
    core = make_core(clock=clock)
    core.create_topic("t", 1, 1)
    produce(core, "t", 2)
    core.share.groups.alter_group_configs(
        "g", {"share.session.timeout.ms": "1000", "share.heartbeat.interval.ms": "500"}
    )
    join(core, "g", "m1", "t")
    tip = TopicIdPartition(core.topics.get("t").topic_id, 0)  # type: ignore[union-attr]
    assert fetch(core, "g", "m1", 0, tip).acquired_count == 2
    clock.advance(1500)  # m1 misses its session timeout
    assert core.share.groups.group("g").members == {}  # type: ignore[union-attr]
    join(core, "g", "m2", "t")
    assert fetch(core, "g", "m2", 0, tip).acquired_count == 2


def test_state_survives_a_restart() -> None:
    storage = MemoryStorage()
    core = make_core(storage)
    core.create_topic("t", 1, 1)
    produce(core, "t", 4)
    join(core, "g", "m1", "t")
    tip = TopicIdPartition(core.topics.get("t").topic_id, 0)  # type: ignore[union-attr]
    fetch(core, "g", "m1", 0, tip)
    core.share.acknowledge("g", "m1", [PartitionAcks(tip, [AckBatch(0, 1, [1])])])
    restarted = make_core(storage)
    assert restarted.share.groups.group("g") is not None
    error, sp = restarted.share.share_partition("g", tip)
    assert error is ErrorCode.NONE and sp is not None
    assert sp.start_offset == 2


def test_share_partition_max_record_locks_is_a_group_config() -> None:
    """``share.partition.max.record.locks`` (Kafka 4.4's group config) bounds the records one
    group holds in flight per partition, over the broker's default (2000)."""
    core = make_core()
    core.create_topic("t", 1, 1)
    for _ in range(3):
        produce(core, "t", 100)
    tip = TopicIdPartition(core.topics.get("t").topic_id, 0)  # type: ignore[union-attr]
    join(core, "wide", "m1", "t")
    assert fetch(core, "wide", "m1", 0, tip).acquired_count == 300
    error, _ = core.share.groups.alter_group_configs(
        "narrow", {"share.partition.max.record.locks": "100"}
    )
    assert error is ErrorCode.NONE
    join(core, "narrow", "m1", "t")
    assert fetch(core, "narrow", "m1", 0, tip).acquired_count == 100
