"""ProducerIdManager: durable blocks, never reused after a restart."""

from __future__ import annotations

import itertools
import random

import pytest

from coordinator.log.memory_log import MemoryLog
from coordinator.producer_ids import (
    ID_SPACE,
    IdScrambler,
    ProducerIdManager,
    decode_next_producer_id,
    encode_producer_ids_value,
    producer_id_key_record_key,
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


def test_scrambled_ids_are_unique_unguessable_and_kept_across_restarts() -> None:
    log = MemoryLog()
    first = ProducerIdManager(log, ManualClock(), block_size=10, scramble_rng=random.Random(1))
    issued = [first.generate_producer_id() for _ in range(25)]
    assert len(set(issued)) == 25
    assert all(0 <= pid < ID_SPACE for pid in issued)
    assert sorted(issued) != issued  # not handed out in order
    assert min(b - a for a, b in itertools.pairwise(sorted(issued))) > 1000
    # the key is in the log: a restart (any rng) goes on with the same permutation
    second = ProducerIdManager(log, ManualClock(), block_size=10, scramble_rng=random.Random(2))
    more = [second.generate_producer_id() for _ in range(25)]
    assert not set(more) & set(issued)
    assert more[0] == IdScrambler(_key_of(log)).permute(30)  # the next block's first slot


def test_scrambling_an_older_directory_skips_its_sequential_ids() -> None:
    log = MemoryLog()
    legacy = ProducerIdManager(log, block_size=1000)
    old = [legacy.generate_producer_id() for _ in range(3)]
    assert old == [0, 1, 2]
    scrambled = ProducerIdManager(log, block_size=1000, scramble_rng=random.Random(3))
    new = [scrambled.generate_producer_id() for _ in range(50)]
    assert all(pid >= 1000 for pid in new)  # below the legacy bound nothing is handed out


def test_the_feistel_network_is_a_bijection() -> None:
    scrambler = IdScrambler(b"k" * 16)
    slots = list(range(5000)) + [ID_SPACE - 1 - i for i in range(5000)]
    ids = [scrambler.permute(slot) for slot in slots]
    assert len(set(ids)) == len(slots)
    assert all(0 <= pid < ID_SPACE for pid in ids)


def _key_of(log: MemoryLog) -> bytes:
    for _header, batch in log.batches(0):
        for key, value in read_records(batch):
            if key == producer_id_key_record_key() and value is not None:
                return value[2:18]
    raise AssertionError("no key record")
