"""ProducerIdManager: durable blocks, never reused after a restart."""

from __future__ import annotations

import pytest

from coordinator.log.memory_log import MemoryLog
from coordinator.producer_ids import (
    ProducerIdManager,
    decode_next_producer_id,
    encode_producer_ids_value,
    producer_ids_key,
)
from txn.batch import build_batch
from txn.clock import ManualClock
from txn.txn_log import read_records


def block_records(log: MemoryLog) -> list[int]:
    out = []
    for _header, batch in log.batches(0):
        for key, value in read_records(batch):
            next_id = decode_next_producer_id(key, value)
            if next_id is not None:
                out.append(next_id)
    return out


def test_ids_come_from_a_durable_block() -> None:
    log = MemoryLog()
    manager = ProducerIdManager(log, ManualClock(), block_size=3)
    assert block_records(log) == []
    assert [manager.generate_producer_id() for _ in range(3)] == [0, 1, 2]
    assert block_records(log) == [3]
    assert log.flush_count >= 1  # flushed before the first id left
    assert manager.generate_producer_id() == 3
    assert block_records(log) == [3, 6]


def test_restart_starts_at_the_next_block() -> None:
    log = MemoryLog()
    first = ProducerIdManager(log, ManualClock(), block_size=1000)
    issued = [first.generate_producer_id() for _ in range(5)]
    second = ProducerIdManager(log, ManualClock(), block_size=1000)
    assert second.generate_producer_id() == 1000
    assert max(issued) < 1000


def test_failed_block_append_hands_out_nothing() -> None:
    class Failing(MemoryLog):
        fail = True

        def append(self, batch, now_ms):  # type: ignore[no-untyped-def]
            if self.fail:
                raise OSError("disk full")
            return super().append(batch, now_ms)

    log = Failing()
    manager = ProducerIdManager(log, block_size=10)
    with pytest.raises(OSError, match="disk full"):
        manager.generate_producer_id()
    log.fail = False
    assert manager.generate_producer_id() == 0
    assert block_records(log) == [10]


def test_other_records_in_the_log_are_ignored() -> None:
    log = MemoryLog()
    log.append(build_batch([(b"other", b"value"), (None, None)], timestamp_ms=0), 0)
    log.append(
        build_batch([(producer_ids_key(), encode_producer_ids_value(0, 0, 42))], timestamp_ms=0),
        0,
    )
    assert ProducerIdManager(log).generate_producer_id() == 42
