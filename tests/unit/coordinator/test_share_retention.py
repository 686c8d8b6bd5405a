"""Share groups when retention or DeleteRecords moves the log start offset (issue item 4).

Through BrokerCore on a manual clock: the share partition follows the new log start offset at
once (AVAILABLE records below it archived, the SPSO moved), and a KIP-1289 transaction whose
pending acknowledgements cover records retention removed meanwhile commits or aborts as
docs/design.md records: commit applies them (nothing below the SPSO is delivered again),
abort archives them (they are gone from the log) and releases the rest.
"""

from __future__ import annotations

import random

from coordinator.broker import BrokerCore
from coordinator.log.memory_log import MemoryStorage
from coordinator.share.manager import PartitionAcks
from coordinator.share.share_partition import AckBatch, SharePartition
from tests.unit.coordinator.test_kip1289_core import GROUP, Harness
from txn.batch import build_batch
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicPartition
from txn.share_state import RecordState

HOUR = 3_600_000
ACCEPT, RELEASE = 1, 2


class RetentionHarness(Harness):
    """Ten one-record batches in ten segments; the first five two hours old."""

    def __init__(self) -> None:
        super().__init__()
        # Retention runs only when the test calls it.
        config = BrokerConfig(
            {
                **{k: str(v) for k, v in self.core.config.items() if v is not None},
                "log.initial.task.delay.ms": str(100 * HOUR),
            }
        )
        self.core.close()
        self.storage = MemoryStorage()
        self.core = BrokerCore(self.storage, self.clock, config, random.Random(3))

    def setup(self, records: int = 10, **group_configs: str) -> None:
        configs = {"retention.ms": str(HOUR), "internal.segment.bytes": "100"}
        assert self.core.create_topic("in", 1, 1, configs).error is ErrorCode.NONE
        now = self.clock.now_ms()
        for i in range(records):
            ts = now - 2 * HOUR if i < 5 else now
            batch = build_batch([(b"k", f"v{i}".encode())], timestamp_ms=ts)
            assert self.core.produce(TopicPartition("in", 0), batch, None).error is ErrorCode.NONE
        self.core.share.groups.alter_group_configs(
            GROUP, {"share.auto.offset.reset": "earliest", **group_configs}
        )
        assert self.core.share.heartbeat(GROUP, "m1", 0, None, ["in"]).error is ErrorCode.NONE

    def acquire(self, member: str = "m1") -> int:
        """Everything ``member`` can acquire now: a ShareFetch reads one segment, as in
        Kafka, so it takes one per segment."""
        total = 0
        while got := super().acquire(member):
            total += got
        return total

    def sp(self) -> SharePartition:
        _error, sp = self.core.share.share_partition(GROUP, self.tip)
        assert sp is not None
        return sp

    def ack(self, first: int, last: int, ack: int, member: str = "m1") -> ErrorCode:
        results = self.core.share.acknowledge(
            GROUP, member, [PartitionAcks(self.tip, [AckBatch(first, last, [ack])])]
        )
        return results[self.tip]


def test_retention_moves_the_share_partition_forward_at_once() -> None:
    h = RetentionHarness()
    h.setup()
    assert h.acquire() == 10
    assert h.ack(0, 2, RELEASE) is ErrorCode.NONE  # AVAILABLE again
    assert h.core.run_retention() > 0
    assert h.core.partitions[TopicPartition("in", 0)].log_start_offset == 5
    sp = h.sp()
    assert sp.start_offset == 5
    assert sp.record_state(0) is None  # archived and evicted below the SPSO
    # The records still ACQUIRED below the new start stay with their owner; acknowledging
    # them is accepted and changes nothing; nothing below the start is delivered again.
    assert h.ack(3, 4, ACCEPT) is ErrorCode.NONE
    assert h.acquire("m2") == 0  # 5..9 are still acquired by m1
    assert h.ack(5, 9, RELEASE) is ErrorCode.NONE
    assert h.acquire("m2") == 5


def test_delete_records_moves_the_share_partition_without_waiting_for_an_append() -> None:
    h = RetentionHarness()
    h.setup()
    assert h.acquire() == 10
    assert h.ack(0, 9, RELEASE) is ErrorCode.NONE
    assert h.core.delete_records(TopicPartition("in", 0), 7) == (ErrorCode.NONE, 7)
    assert h.sp().start_offset == 7
    assert h.acquire("m2") == 3


def _pending_then_retention(h: RetentionHarness) -> tuple[int, int]:
    h.setup()
    assert h.acquire() == 10
    pid, epoch = h.init()
    assert h.add_share_acks(pid, epoch) is ErrorCode.NONE
    assert h.txn_ack(pid, epoch, 0, 9) is ErrorCode.NONE
    assert h.sp().record_state(0) == (RecordState.TX_PENDING, 1, "m1")
    h.core.run_retention()  # removes offsets 0..4 while their acks are pending
    assert h.sp().start_offset == 5
    assert h.sp().record_state(3) == (RecordState.TX_PENDING, 1, "m1")
    return pid, epoch


def test_commit_of_acks_for_records_retention_removed() -> None:
    h = RetentionHarness()
    pid, epoch = _pending_then_retention(h)
    h.end(pid, epoch, commit=True)
    sp = h.sp()
    assert sp.start_offset == 10  # all acknowledged: the removed ones count as done
    assert h.acquire("m2") == 0
    restarted = h.restart()
    _error, sp2 = restarted.core.share.share_partition(GROUP, restarted.tip)
    assert sp2 is not None and sp2.start_offset == 10


def test_abort_of_acks_for_records_retention_removed() -> None:
    h = RetentionHarness()
    pid, epoch = _pending_then_retention(h)
    h.end(pid, epoch, commit=False)
    sp = h.sp()
    assert sp.start_offset == 5
    assert sp.record_state(3) is None  # archived: gone from the log, never redelivered
    assert sp.record_state(5) == (RecordState.AVAILABLE, 1, "")
    assert h.acquire("m2") == 5  # only what the log still holds
