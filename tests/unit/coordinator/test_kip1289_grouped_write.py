"""KIP-1289 TxnShareAcknowledge of several partitions: one durable write per share-state
partition (one append, one fsync), the share manager entered once, answers per partition."""

from __future__ import annotations

import random

import pytest

from coordinator.broker import BrokerCore
from coordinator.log.memory_log import MemoryLog, MemoryStorage
from coordinator.share.manager import PartitionAcks, ShareFetchOutcome, ShareManager
from coordinator.share.share_partition import AckBatch
from txn.batch import build_batch
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicIdPartition, TopicPartition
from txn.share_state import RecordState

GROUP = "g"
TID = "copier"
PARTITIONS = 3


class Grouped:
    """A broker with one share-state partition (every key on it) and a 3-partition topic
    whose 5 records per partition member m1 has acquired; the state partition is in the
    ongoing transaction of (pid, epoch)."""

    def __init__(self) -> None:
        config = BrokerConfig(
            {
                "group.share.min.record.lock.duration.ms": "1000",
                "share.coordinator.state.topic.num.partitions": "1",
            }
        )
        self.clock = ManualClock()
        self.core = BrokerCore(MemoryStorage(), self.clock, config, random.Random(3))
        core = self.core
        assert core.create_topic("in", PARTITIONS, 1).error is ErrorCode.NONE
        for p in range(PARTITIONS):
            batch = build_batch([(None, b"v")] * 5, timestamp_ms=self.clock.now_ms())
            assert core.produce(TopicPartition("in", p), batch, None).error is ErrorCode.NONE
        core.share.groups.alter_group_configs(GROUP, {"share.auto.offset.reset": "earliest"})
        assert core.share.heartbeat(GROUP, "m1", 0, None, ["in"]).error is ErrorCode.NONE
        info = core.topics.get("in")
        assert info is not None
        self.tips = [TopicIdPartition(info.topic_id, p) for p in range(PARTITIONS)]
        error, session = core.share.open_or_check_session(GROUP, "m1", 0, connection_id=1)
        assert session is not None, error
        session.add(self.tips)
        fetched = ShareFetchOutcome(ErrorCode.NONE)
        core.share.acquire(GROUP, "m1", session, 500, 1 << 20, fetched)
        assert fetched.acquired_count == 5 * PARTITIONS
        init = core.txn_coordinator.init_producer_id(TID, 60000)
        self.pid, self.epoch = init.producer_id, init.producer_epoch
        added = core.add_share_acks_to_txn(TID, self.pid, self.epoch, GROUP, {"in": [0, 1, 2]})
        assert added is ErrorCode.NONE

    @property
    def state_log(self) -> MemoryLog:
        log = self.core.share.persister._runtime.partition_log(0)
        assert isinstance(log, MemoryLog)
        return log

    def ack(self, acks: list[PartitionAcks]) -> dict[TopicIdPartition, ErrorCode]:
        return self.core.txn_share_acknowledge(GROUP, TID, self.pid, self.epoch, "m1", acks)

    def state(self, tip: TopicIdPartition, offset: int) -> RecordState | None:
        error, sp = self.core.share.share_partition(GROUP, tip)
        assert sp is not None, error
        st = sp.record_state(offset)
        return None if st is None else st[0]


def _acks(tip: TopicIdPartition, first: int = 0, last: int = 4) -> PartitionAcks:
    return PartitionAcks(tip, [AckBatch(first, last, [1])])


def test_partitions_on_one_state_partition_are_one_append_and_one_fsync() -> None:
    g = Grouped()
    end, flushes = g.state_log.log_end_offset, g.state_log.flush_count
    batches_before = len(list(g.state_log.batches(0)))
    assert g.ack([_acks(t) for t in g.tips]) == dict.fromkeys(g.tips, ErrorCode.NONE)
    assert g.state_log.flush_count == flushes + 1
    assert len(list(g.state_log.batches(0))) == batches_before + 1
    assert g.state_log.log_end_offset == end + PARTITIONS  # one ShareUpdate per partition
    assert all(g.state(t, o) is RecordState.TX_PENDING for t in g.tips for o in range(5))
    pending = g.core.share.persister.open_transactions()
    assert sorted(k.partition for _, k in pending[g.pid]) == list(range(PARTITIONS))


def test_the_share_manager_is_entered_once_per_request(monkeypatch: pytest.MonkeyPatch) -> None:
    g = Grouped()
    entered: list[str] = []
    for name in ("state_partition_of", "txn_share_acknowledge"):
        original = getattr(ShareManager, name)

        def counted(
            self: ShareManager, *args: object, _f: object = original, _n: str = name
        ) -> object:
            entered.append(_n)
            return _f(self, *args)  # type: ignore[operator]

        monkeypatch.setattr(ShareManager, name, counted)
    assert g.ack([_acks(t) for t in g.tips]) == dict.fromkeys(g.tips, ErrorCode.NONE)
    assert entered == ["txn_share_acknowledge"]


def test_a_validation_failure_answers_only_its_partition() -> None:
    g = Grouped()
    assert g.ack([_acks(g.tips[1], 0, 0)]) == {g.tips[1]: ErrorCode.NONE}
    flushes = g.state_log.flush_count
    acks = [_acks(g.tips[0]), _acks(g.tips[1]), _acks(g.tips[2])]  # tips[1] 0 is TX_PENDING
    assert g.ack(acks) == {
        g.tips[0]: ErrorCode.NONE,
        g.tips[1]: ErrorCode.INVALID_RECORD_STATE,
        g.tips[2]: ErrorCode.NONE,
    }
    assert g.state_log.flush_count == flushes + 1
    assert g.state(g.tips[1], 1) is RecordState.ACQUIRED
    assert g.state(g.tips[2], 0) is RecordState.TX_PENDING


def test_a_failed_write_answers_every_partition_in_it(monkeypatch: pytest.MonkeyPatch) -> None:
    g = Grouped()
    assert g.ack([_acks(g.tips[1], 0, 0)]) == {g.tips[1]: ErrorCode.NONE}
    end = g.state_log.log_end_offset

    def broken_flush() -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(g.state_log, "flush", broken_flush)
    results = g.ack([_acks(g.tips[0]), _acks(g.tips[1]), _acks(g.tips[2])])
    assert results[g.tips[1]] is ErrorCode.INVALID_RECORD_STATE  # its own error, as before
    written = {results[g.tips[0]], results[g.tips[2]]}
    assert len(written) == 1 and ErrorCode.NONE not in written
    assert g.state_log.log_end_offset == end  # the unflushed batch is truncated away
    assert g.state(g.tips[0], 0) is g.state(g.tips[2], 0) is RecordState.ACQUIRED
    staged = g.core.share.persister.open_transactions()[g.pid]
    assert [k.partition for _, k in staged] == [1]  # only the earlier request's


def test_the_same_partition_twice_is_planned_after_the_first_is_pending() -> None:
    g = Grouped()
    tip = g.tips[0]
    # The second entry overlaps the first: it sees the first's records TX_PENDING.
    results = g.ack([_acks(tip, 0, 2), _acks(g.tips[1]), _acks(tip, 2, 4)])
    assert results == {tip: ErrorCode.INVALID_RECORD_STATE, g.tips[1]: ErrorCode.NONE}
    assert list(results) == [tip, g.tips[1]]  # the request's order
    assert [g.state(tip, o) for o in range(5)] == [RecordState.TX_PENDING] * 3 + [
        RecordState.ACQUIRED
    ] * 2
    # A disjoint second entry is staged too.
    assert g.ack([_acks(tip, 3, 3), _acks(tip, 4, 4)]) == {tip: ErrorCode.NONE}
    assert g.state(tip, 4) is RecordState.TX_PENDING
