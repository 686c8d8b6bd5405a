"""The drain's quiescence judgment for the consumer group, on a core with a manual clock.

A short history (``--ops 50``: 20 inputs over up to four partitions) may leave an input
partition empty.  No transaction ever commits an offset for it, so OffsetFetch answers -1
(none committed) for ever; the consumer starts such a partition at its log start
(``auto.offset.reset=earliest``), so it is consumed.  The drain used to compare -1 with the
log end (0), never saw quiescence and reported I13 after 300 simulated seconds of idle
polling (3 of the first 20 seeds of ``chaos run --ops 50``).
"""

from __future__ import annotations

import random

import pytest

from chaos.group_reads import group_quiescent, group_waiting_for
from chaos.workload import WorkloadConfig
from coordinator.broker import BrokerCore
from coordinator.group.offset_commands import Committer
from coordinator.log.memory_log import MemoryStorage
from txn.batch import build_batch
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicPartition

pytestmark = pytest.mark.chaos

CFG = WorkloadConfig(input_partitions=2, output_partitions=1, group_workers=1)
ADMIN = Committer(CFG.consumer_group, -1, "", None)


def _core(records: dict[int, int]) -> BrokerCore:
    """Input partitions with ``records[p]`` records each; the group output topic empty."""
    clock = ManualClock()
    core = BrokerCore(MemoryStorage(), clock, BrokerConfig({}), random.Random(1))
    core.create_topic(CFG.input_topic, CFG.input_partitions, 1)
    core.create_topic(CFG.group_output_topic, CFG.output_partitions, 1)
    for partition, count in records.items():
        if count:
            batch = build_batch([(None, f"i{k}".encode()) for k in range(count)], timestamp_ms=0)
            tp = TopicPartition(CFG.input_topic, partition)
            assert core.produce(tp, batch, None).error is ErrorCode.NONE
    clock.advance(10)
    return core


def _commit(core: BrokerCore, partition: int, offset: int) -> None:
    tp = TopicPartition(CFG.input_topic, partition)
    answer = core.groups.commit_offsets(ADMIN, {tp: (offset, -1, None)})
    assert answer == {tp: ErrorCode.NONE}


def test_an_empty_input_partition_without_a_committed_offset_is_consumed() -> None:
    core = _core({0: 3, 1: 0})
    assert not group_quiescent(core, CFG)  # partition 0: nothing committed, 3 records
    _commit(core, 0, 2)
    assert group_waiting_for(core, CFG) == (  # partition 0: one record left
        "the consumer group to consume in-0 (committed 2, log end 3)"
    )
    _commit(core, 0, 3)
    assert group_quiescent(core, CFG)  # partition 1 is empty: none committed is its log end


def test_a_partition_with_records_and_no_committed_offset_is_not_consumed() -> None:
    core = _core({0: 0, 1: 2})
    assert not group_quiescent(core, CFG)
    _commit(core, 1, 2)
    assert group_quiescent(core, CFG)
