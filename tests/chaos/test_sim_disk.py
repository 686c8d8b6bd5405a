"""The simulated disk: durable vs unsynced bytes, torn tails, recovery; the core runs on it."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from chaos.sim_disk import APPEND_AFTER, SimCrash, SimDisk
from chaos.sim_loop import SimLoop
from coordinator.broker import BrokerCore
from coordinator.log.storage import LogConfig
from coordinator.share.manager import PartitionAcks, ShareFetchOutcome
from coordinator.share.share_partition import AckBatch
from txn.batch import build_batch
from txn.clock import Timer
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicIdPartition, TopicPartition
from txn.share_state import RecordState

pytestmark = pytest.mark.chaos

UNSYNCED = LogConfig(flush_interval_messages=1_000_000)


def batch(value: str) -> bytes:
    return build_batch([(None, value.encode())], timestamp_ms=0)


def test_synced_batches_survive_a_crash_unsynced_ones_may_not() -> None:
    disk = SimDisk(random.Random(1))
    disk.keep_unsynced_probability = 0.0
    log = disk.open_log("t", 0, UNSYNCED)
    log.append(batch("a"), 0)
    log.flush()
    log.append(batch("b"), 0)
    assert disk.unsynced() == {"t-0": 1}
    disk.crash()
    assert log.closed
    again = disk.open_log("t", 0, UNSYNCED)
    assert again.log_end_offset == 1 and disk.stats.lost_batches == 1


def test_a_torn_tail_is_truncated_on_recovery() -> None:
    torn_seen = 0
    for seed in range(40):
        disk = SimDisk(random.Random(seed))
        disk.keep_unsynced_probability = 1.0
        log = disk.open_log("t", 0, UNSYNCED)
        for k in range(3):
            log.append(batch(f"v{k}"), 0)
        log.flush()
        for k in range(3, 6):
            log.append(batch(f"v{k}"), 0)
        disk.crash()
        again = disk.open_log("t", 0, UNSYNCED)
        end = again.log_end_offset
        assert 3 <= end <= 6  # durable ones always, a whole-batch prefix of the rest
        assert [h.base_offset for h, _raw in again.batches(0)] == list(range(end))
        torn_seen += disk.stats.torn_tails
        # the recovered log takes appends at its end
        assert again.append(batch("new"), 0).base_offset == end
    assert torn_seen > 0


def test_a_crash_inside_an_append_loses_or_keeps_the_write() -> None:
    disk = SimDisk(random.Random(3))
    log = disk.open_log("t", 0, LogConfig())

    def hook(point: str, name: str) -> None:
        if point == APPEND_AFTER:
            raise SimCrash(point, name)

    disk.hook = hook
    with pytest.raises(SimCrash):
        log.append(batch("x"), 0)
    disk.hook = None
    disk.crash()
    assert disk.open_log("t", 0).log_end_offset in (0, 1)


CONFIG = BrokerConfig(
    {
        "group.share.min.record.lock.duration.ms": "1000",
        "share.coordinator.state.topic.num.partitions": "2",
    }
)


def test_broker_core_recovers_from_the_sim_disk_after_a_crash() -> None:
    """Pending transactional acks are durable: a new core over the crashed disk restores them."""
    loop = SimLoop()
    disk = SimDisk(random.Random(7))
    core = BrokerCore(disk, _Clock(loop), CONFIG, random.Random(1))
    core.create_topic("in", 1, 1)
    core.share.groups.alter_group_configs("g", {"share.auto.offset.reset": "earliest"})
    tp = TopicPartition("in", 0)
    records = build_batch([(None, f"v{i}".encode()) for i in range(3)], timestamp_ms=0)
    assert core.produce(tp, records, None).error is ErrorCode.NONE
    assert core.share.heartbeat("g", "m", 0, None, ["in"]).error is ErrorCode.NONE
    info = core.topics.get("in")
    assert info is not None
    tip = TopicIdPartition(info.topic_id, 0)
    error, session = core.share.open_or_check_session("g", "m", 0, connection_id=1)
    assert session is not None, error
    session.add([tip])
    outcome = ShareFetchOutcome(ErrorCode.NONE)
    core.share.acquire("g", "m", session, 10, 1 << 20, outcome)
    assert outcome.acquired_count == 3
    tc = core.txn_coordinator
    init = tc.init_producer_id("t", 60000, enable_2pc=True)
    state_tp = core.share.state_partition_of("g", info.topic_id, 0)
    assert (
        tc.add_partitions_to_txn("t", init.producer_id, init.producer_epoch, [state_tp])[state_tp]
        is ErrorCode.NONE
    )
    acks = core.txn_share_acknowledge(
        "g",
        "t",
        init.producer_id,
        init.producer_epoch,
        "m",
        [PartitionAcks(tip, [AckBatch(0, 2, [1])])],
    )
    assert acks[tip] is ErrorCode.NONE
    disk.crash()  # power loss: everything was fsynced, so nothing is lost
    recovered = BrokerCore(disk, _Clock(loop), CONFIG, random.Random(1))
    _error, sp = recovered.share.share_partition("g", tip)
    assert sp is not None
    assert [sp.record_state(o)[0] for o in range(3)] == [RecordState.TX_PENDING] * 3  # type: ignore[index]


class _Clock:
    """A plain ``Clock`` on the simulator's loop (no incarnations)."""

    def __init__(self, loop: SimLoop) -> None:
        self._loop = loop

    def now_ms(self) -> int:
        return self._loop.now_ms()

    def schedule(self, delay_ms: int, callback: Callable[[], None]) -> Timer:
        return self._loop.after(delay_ms, callback)
