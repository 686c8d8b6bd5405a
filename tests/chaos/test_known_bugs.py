"""The product bugs the simulation found, reproduced directly on ``BrokerCore``.

B1 and B2 (commit 0f16192), B3 and B4 are fixed: these are their regression tests.  A new bug
found by the simulation gets its reproduction here as a strict xfail until it is fixed (see
``chaos/known_bugs.py``).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from coordinator.broker import BrokerCore
from coordinator.log.memory_log import MemoryStorage
from coordinator.share.manager import PartitionAcks, ShareFetchOutcome
from coordinator.share.share_partition import AckBatch
from txn.batch import build_batch
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicIdPartition, TopicPartition

pytestmark = pytest.mark.chaos

GROUP = "g"
ACCEPT = 1


class Core:
    def __init__(
        self,
        config: BrokerConfig,
        storage: MemoryStorage | None = None,
        clock: ManualClock | None = None,
    ) -> None:
        self.config = config
        self.storage = storage or MemoryStorage()
        self.clock = clock or ManualClock()
        self.core = BrokerCore(self.storage, self.clock, config, random.Random(3))

    def restart(self) -> Core:
        return Core(self.config, self.storage, self.clock)

    @property
    def tip(self) -> TopicIdPartition:
        info = self.core.topics.get("in")
        assert info is not None
        return TopicIdPartition(info.topic_id, 0)

    def setup(self, records: int = 5) -> None:
        self.core.create_topic("in", 1, 1)
        batch = build_batch([(None, f"v{i}".encode()) for i in range(records)], timestamp_ms=0)
        assert self.core.produce(TopicPartition("in", 0), batch, None).error is ErrorCode.NONE
        self.core.share.groups.alter_group_configs(GROUP, {"share.auto.offset.reset": "earliest"})
        for member in ("m1", "m2"):
            assert self.core.share.heartbeat(GROUP, member, 0, None, ["in"]).error is ErrorCode.NONE

    def acquire(self, member: str) -> int:
        error, session = self.core.share.open_or_check_session(GROUP, member, 0, hash(member))
        assert session is not None, error
        session.add([self.tip])
        outcome = ShareFetchOutcome(ErrorCode.NONE)
        self.core.share.acquire(GROUP, member, session, 100, 1 << 20, outcome)
        return outcome.acquired_count

    def begin(self, tid: str) -> tuple[int, int]:
        tc = self.core.txn_coordinator
        result = tc.init_producer_id(tid, 60000)
        assert result.error is ErrorCode.NONE
        state_tp = self.core.share.state_partition_of(GROUP, self.tip.topic_id, 0)
        added = tc.add_partitions_to_txn(tid, result.producer_id, result.producer_epoch, [state_tp])
        assert added[state_tp] is ErrorCode.NONE
        return result.producer_id, result.producer_epoch

    def txn_ack(
        self, tid: str, pid: int, epoch: int, member: str, first: int, last: int
    ) -> ErrorCode:
        results = self.core.txn_share_acknowledge(
            GROUP,
            tid,
            pid,
            epoch,
            member,
            [PartitionAcks(self.tip, [AckBatch(first, last, [ACCEPT])])],
        )
        return results[self.tip]

    def commit(self, tid: str, pid: int, epoch: int) -> None:
        end = self.core.txn_coordinator.end_txn(tid, pid, epoch, True, tv2=False)
        assert end.error is ErrorCode.NONE
        self.clock.advance(10)  # deliver the markers


def test_b1_txn_ack_of_records_another_member_acknowledged_is_refused() -> None:
    h = Core(
        BrokerConfig(
            {
                "group.share.min.record.lock.duration.ms": "1000",
                "group.share.record.lock.duration.ms": "1000",
            }
        )
    )
    h.setup()
    assert h.acquire("m1") == 5
    h.clock.advance(2000)  # m1 stalls: its locks expire
    assert h.acquire("m2") == 5
    pid2, epoch2 = h.begin("t2")
    assert h.txn_ack("t2", pid2, epoch2, "m2", 0, 4) is ErrorCode.NONE
    h.commit("t2", pid2, epoch2)  # m2's outputs and acks commit: the SPSO moves to 5
    pid1, epoch1 = h.begin("t1")
    # m1 does not hold these records: DESIGN §4.2 says INVALID_RECORD_STATE (B1 answered NONE
    # with nothing staged, and m1 committed a second copy of the outputs).
    assert h.txn_ack("t1", pid1, epoch1, "m1", 0, 4) is ErrorCode.INVALID_RECORD_STATE


def test_b2_committed_acks_survive_pruning_and_a_restart() -> None:
    h = Core(BrokerConfig({"share.coordinator.snapshot.update.records.per.snapshot": "1"}))
    h.setup()
    assert h.acquire("m1") == 5
    pid, epoch = h.begin("t")
    assert h.txn_ack("t", pid, epoch, "m1", 0, 1) is ErrorCode.NONE  # staged, transactional
    _error, sp = h.core.share.share_partition(GROUP, h.tip)
    assert sp is not None
    # a plain acknowledgement writes a ShareSnapshot (without the staged acks) after them
    assert sp.acknowledge("m1", [AckBatch(4, 4, [ACCEPT])]) is ErrorCode.NONE
    h.commit("t", pid, epoch)
    assert sp.start_offset == 2  # 0..1 ACKNOWLEDGED
    h.core.share.persister.prune()  # passes the committed pending batch, keeps the marker
    again = h.restart()
    _error, sp2 = again.core.share.share_partition(GROUP, again.tip)
    assert sp2 is not None
    assert sp2.start_offset == 2, "the committed acknowledgements of 0..1 were lost"


def test_b3_a_share_partition_whose_initialization_failed_is_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = Core(BrokerConfig({}))
    h.setup()
    state_tp = h.core.share.state_partition_of(GROUP, h.tip.topic_id, 0)
    state_log = h.storage.open_log(state_tp.topic, state_tp.partition)
    _fail_first_append(monkeypatch, state_log)
    error, sp = h.core.share.share_partition(GROUP, h.tip)
    assert sp is None and error is not ErrorCode.NONE  # the first initialization failed
    # B3: the FAILED partition was kept and answered UNKNOWN_SERVER_ERROR forever.
    error, sp = h.core.share.share_partition(GROUP, h.tip)
    assert error is ErrorCode.NONE and sp is not None
    assert h.acquire("m1") == 5


def test_b4_a_join_answered_after_a_retried_initialization_carries_the_assignment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = ManualClock()
    # The join's second pass assigns the newly initialized partitions only with no assignment
    # interval (Kafka allows 0; with its default 1 s the member is assigned a second later).
    config = BrokerConfig({"group.share.assignment.interval.ms": 0})
    core = BrokerCore(MemoryStorage(), clock, config, random.Random(3))
    core.create_topic("in", 3, 1)
    info = core.topics.get("in")
    assert info is not None
    state_tp = core.share.state_partition_of(GROUP, info.topic_id, 0)
    state_log = core.storage.open_log(state_tp.topic, state_tp.partition)
    _fail_first_append(monkeypatch, state_log)
    first = core.share.heartbeat(GROUP, "m1", 0, None, ["in"])
    assert first.error is ErrorCode.NONE and first.assignment == [(info.topic_id, [1, 2])]
    clock.advance(10)
    # m2's join: the first pass assigns it partition 1, the retried initialization of
    # partition 0 then makes a second pass that leaves m2's assignment as it was.
    second = core.share.heartbeat(GROUP, "m2", 0, None, ["in"])
    assert second.error is ErrorCode.NONE
    view = core.share.groups.group(GROUP)
    assert view is not None
    held = sorted(tp.partition for tp in view.members["m2"].assigned)
    assert held  # the broker holds m2 to a partition
    # B4: the join was answered with no assignment at all, so m2 never fetched partition 1.
    assert second.assignment == [(info.topic_id, held)], held


def _fail_first_append(monkeypatch: pytest.MonkeyPatch, state_log: Any) -> None:
    """The share-state log's next append fails with an I/O error; later ones succeed."""
    append = state_log.append
    failures = [OSError(5, "simulated I/O error")]

    def failing_append(batch: bytes, now_ms: int) -> object:
        if failures:
            raise failures.pop()
        return append(batch, now_ms)

    monkeypatch.setattr(state_log, "append", failing_append)
