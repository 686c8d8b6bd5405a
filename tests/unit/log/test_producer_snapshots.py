"""Producer-state snapshots (Kafka's ``<offset>.snapshot``): a producer whose batches
retention removed is still known after a restart, until producer.id.expiration.ms; the
files are written crash-safely and hostile ones are refused, not trusted."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from coordinator.broker import BrokerCore
from coordinator.log.file_log import FileStorage
from coordinator.log.memory_log import MemoryLog
from coordinator.log.producer_snapshots import MAX_SNAPSHOT_BYTES, FileSnapshots
from coordinator.log.storage import LogConfig
from coordinator.partition import Partition
from coordinator.producer_state import (
    ProducerEntry,
    SnapshotFormatError,
    decode_snapshot,
    encode_snapshot,
)
from txn.batch import build_batch
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicPartition

HOUR = 3_600_000
T0 = 1_700_000_000_000
TP = TopicPartition("idem", 0)


def _core(tmp_path: Path, clock: ManualClock, expiration_ms: int = 24 * HOUR) -> BrokerCore:
    config = BrokerConfig(
        {
            "log.retention.check.interval.ms": 1000,
            "log.initial.task.delay.ms": 1000,
            "producer.id.expiration.ms": expiration_ms,
        }
    )
    return BrokerCore(FileStorage(tmp_path), clock, config, random.Random(1))


def _idem(seq: int, ts: int, pid: int = 9) -> bytes:
    return build_batch(
        [(b"k", b"v%d" % seq)],
        timestamp_ms=ts,
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
    )


def _history(tmp_path: Path, clock: ManualClock) -> None:
    """Producer 9 writes three batches; later writes roll on; retention removes the
    producer's segments (not the later ones); the broker stops."""
    core = _core(tmp_path, clock)
    configs = {"retention.ms": str(HOUR), "internal.segment.bytes": "100"}
    assert core.create_topic("idem", 1, 1, configs).error is ErrorCode.NONE
    for seq in range(3):
        assert core.produce(TP, _idem(seq, T0), None).error is ErrorCode.NONE
    clock.advance(HOUR)
    for n in range(2):
        plain = build_batch([(b"x", b"%d" % n)], timestamp_ms=clock.now_ms())
        assert core.produce(TP, plain, None).error is ErrorCode.NONE
    clock.advance(HOUR // 2)
    assert core.partitions[TP].log_start_offset == 3  # the producer's batches are gone
    core.close()
    assert FileSnapshots(tmp_path / "idem-0").offsets()[-1] == 5  # at the log end, on stop


def test_a_producer_whose_batches_retention_removed_is_known_after_a_restart(
    tmp_path: Path,
) -> None:
    """As Kafka: the snapshot holds the producer, so its sequence is checked -- a gap is
    OUT_OF_ORDER_SEQUENCE_NUMBER, its last batch again is a duplicate, the next is taken."""
    clock = ManualClock(T0)
    _history(tmp_path, clock)
    core = _core(tmp_path, clock)
    assert core.produce(TP, _idem(5, clock.now_ms()), None).error is (
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    )
    duplicate = core.produce(TP, _idem(2, clock.now_ms()), None)
    assert duplicate.error is ErrorCode.NONE and duplicate.base_offset == 2
    taken = core.produce(TP, _idem(3, clock.now_ms()), None)
    assert taken.error is ErrorCode.NONE and taken.base_offset == 5
    core.close()


def test_after_producer_id_expiration_ms_the_snapshot_entry_is_not_loaded(
    tmp_path: Path,
) -> None:
    """Kafka leaves out of a loaded snapshot the producers idle producer.id.expiration.ms:
    the producer is unknown, and an unknown producer may start at any sequence."""
    clock = ManualClock(T0)
    _history(tmp_path, clock)
    clock = ManualClock(clock.now_ms() + 2 * HOUR)  # the stopped broker's timers stay behind
    core = _core(tmp_path, clock, expiration_ms=2 * HOUR)
    assert core.produce(TP, _idem(5, clock.now_ms()), None).error is ErrorCode.NONE
    core.close()


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\x00\x01",
        b"\x00\x07" + bytes(8),  # an unknown version
        b"\x00\x01\x00\x00\x00\x00\x7f\xff\xff\xff",  # a huge entry count
        b"garbage" * 100,
    ],
)
def test_a_hostile_snapshot_is_refused_and_the_log_replayed(tmp_path: Path, content: bytes) -> None:
    clock = ManualClock(T0)
    _history(tmp_path, clock)
    directory = tmp_path / "idem-0"
    store = FileSnapshots(directory)
    offsets = store.offsets()
    assert offsets == [3, 4, 5]  # the rolls at 3 and 4, the stop at 5
    (directory / f"{5:020d}.snapshot").write_bytes(content)
    (directory / "junk.snapshot").write_bytes(b"x")  # not a snapshot's name: left alone
    core = _core(tmp_path, clock)
    # The newest is refused and deleted; the one of the roll at 4 holds the producer.
    assert core.produce(TP, _idem(5, clock.now_ms()), None).error is (
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    )
    core.close()
    assert decode_snapshot(store.read(5))  # written again, whole, on the stop
    for offset in store.offsets():
        (directory / f"{offset:020d}.snapshot").write_bytes(content)
    core = _core(tmp_path, clock)
    # None readable: the log is replayed, and the producer's batches are gone from it.
    assert core.produce(TP, _idem(5, clock.now_ms()), None).error is ErrorCode.NONE
    core.close()
    assert (directory / "junk.snapshot").read_bytes() == b"x"


def test_a_snapshot_over_the_size_bound_is_not_read(tmp_path: Path) -> None:
    store = FileSnapshots(tmp_path)
    with (tmp_path / f"{7:020d}.snapshot").open("wb") as f:
        f.truncate(MAX_SNAPSHOT_BYTES + 1)  # sparse: nothing is written
    with pytest.raises(OSError, match="bytes"):
        store.read(7)


def test_snapshots_round_trip_and_refuse_a_flipped_bit() -> None:
    entry = ProducerEntry(9, 2, coordinator_epoch=4, last_timestamp_ms=T0)
    idle = ProducerEntry(10, 0, last_timestamp_ms=T0)
    idle.current_txn_first_offset = 17
    manager = Partition(TopicPartition("t", 0), MemoryLog()).producers
    data = encode_snapshot([entry, idle])
    assert [
        (e.producer_id, e.epoch, e.current_txn_first_offset) for e in decode_snapshot(data)
    ] == [
        (9, 2, None),
        (10, 0, 17),
    ]
    flipped = bytearray(data)
    flipped[-1] ^= 1
    with pytest.raises(SnapshotFormatError):
        decode_snapshot(bytes(flipped))
    manager.load(decode_snapshot(data), T0 + HOUR, HOUR)  # 9 expired, 10 has a transaction
    assert sorted(manager.producers) == [10]


def test_a_roll_writes_a_snapshot_at_the_new_segments_base() -> None:
    log = MemoryLog(LogConfig(segment_bytes=100))
    partition = Partition(TopicPartition("t", 0), log)
    for seq in range(3):
        assert partition.append(_idem(seq, T0), T0).error is ErrorCode.NONE
    store = log.snapshots
    assert store is not None
    assert store.offsets() == [1, 2]  # each batch rolled a segment
    state_at_2 = decode_snapshot(store.read(2))
    assert [(e.producer_id, e.last_seq) for e in state_at_2] == [(9, 1)]
