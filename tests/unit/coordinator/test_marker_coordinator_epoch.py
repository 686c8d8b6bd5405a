"""A partition keeps the coordinator epoch of the markers it took (Kafka's
``ProducerStateEntry.coordinatorEpoch``): DescribeProducers shows it, a marker naming an
older one is refused TRANSACTION_COORDINATOR_FENCED, and a restart (snapshot, then the log
after it) keeps it."""

from __future__ import annotations

import random
from pathlib import Path

from coordinator.broker import BrokerCore
from coordinator.log.file_log import FileStorage
from coordinator.log.memory_log import MemoryLog, MemoryStorage
from coordinator.log.producer_snapshots import FileSnapshots
from coordinator.marker_channel import TxnMarker
from coordinator.partition import Partition
from coordinator.producer_state import ProducerEntry, decode_snapshot, encode_snapshot
from coordinator.protocol.client_markers import write_client_markers
from txn.batch import (
    ControlType,
    build_batch,
    build_control_batch,
    control_coordinator_epoch,
    parse_header,
)
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import GROUP_METADATA_TOPIC, TopicPartition

T0 = 1_700_000_000_000
TP = TopicPartition("t", 0)
PID = 7


def _core(storage: FileStorage | MemoryStorage, clock: ManualClock) -> BrokerCore:
    return BrokerCore(storage, clock, BrokerConfig(), random.Random(1))


def _marker(producer_epoch: int, coordinator_epoch: int, commit: bool = False) -> TxnMarker:
    result = ControlType.COMMIT if commit else ControlType.ABORT
    return TxnMarker("", PID, producer_epoch, coordinator_epoch, result, (TP,))


def _coordinator_epochs(core: BrokerCore, tp: TopicPartition = TP) -> dict[int, int]:
    error, producers = core.describe_producers(tp)
    assert error is ErrorCode.NONE
    return {p.producer_id: p.coordinator_epoch for p in producers}


def test_the_markers_value_gives_its_coordinator_epoch() -> None:
    for epoch in (0, 5, 70000, -1):
        batch = build_control_batch(
            ControlType.COMMIT,
            producer_id=1,
            producer_epoch=0,
            coordinator_epoch=epoch,
            timestamp_ms=T0,
        )
        assert control_coordinator_epoch(batch, 0, parse_header(batch)) == epoch


def test_a_client_marker_below_the_partitions_coordinator_epoch_is_fenced() -> None:
    core = _core(MemoryStorage(), ManualClock(T0))
    assert core.create_topic("t", 1, 1).error is ErrorCode.NONE
    assert write_client_markers(core, _marker(0, 3)) == {TP: ErrorCode.NONE}
    assert _coordinator_epochs(core) == {PID: 3}
    assert write_client_markers(core, _marker(0, 2)) == {
        TP: ErrorCode.TRANSACTION_COORDINATOR_FENCED
    }
    assert write_client_markers(core, _marker(0, 3)) == {TP: ErrorCode.NONE}  # the same epoch
    assert write_client_markers(core, _marker(1, 4)) == {TP: ErrorCode.NONE}  # a newer one
    assert _coordinator_epochs(core) == {PID: 4}
    # The producer epoch is checked first, as Kafka's appendEndTxnMarker does.
    assert write_client_markers(core, _marker(0, 2)) == {TP: ErrorCode.INVALID_PRODUCER_EPOCH}
    core.close()


def test_a_new_producer_epoch_keeps_the_coordinator_epoch() -> None:
    partition = Partition(TP, MemoryLog())
    assert partition.write_marker(PID, 0, 2, ControlType.ABORT, T0) is ErrorCode.NONE
    batch = build_batch(
        [(b"k", b"v")], timestamp_ms=T0, producer_id=PID, producer_epoch=1, base_sequence=0
    )
    assert partition.append(batch, T0).error is ErrorCode.NONE
    entry = partition.producers.get(PID)
    assert entry is not None and (entry.epoch, entry.coordinator_epoch) == (1, 2)
    assert partition.write_marker(PID, 1, 1, ControlType.ABORT, T0) is (
        ErrorCode.TRANSACTION_COORDINATOR_FENCED
    )


def test_the_transaction_coordinators_markers_carry_its_epoch() -> None:
    clock = ManualClock(T0)
    core = _core(MemoryStorage(), clock)
    assert core.create_topic("t", 1, 1).error is ErrorCode.NONE
    txn = core.txn_coordinator
    started = txn.init_producer_id("tx", 60_000)
    pid, epoch = started.producer_id, started.producer_epoch
    assert txn.add_partitions_to_txn("tx", pid, epoch, [TP]) == {TP: ErrorCode.NONE}
    batch = build_batch(
        [(b"k", b"v")],
        timestamp_ms=T0,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=0,
        transactional=True,
    )
    assert core.produce(TP, batch, "tx").error is ErrorCode.NONE
    assert _coordinator_epochs(core) == {pid: -1}  # no marker yet
    assert txn.end_txn("tx", pid, epoch, True, tv2=False).error is ErrorCode.NONE
    clock.advance(10)  # the markers are delivered
    assert _coordinator_epochs(core) == {pid: txn.coordinator_epoch}
    core.close()


def test_a_restart_keeps_the_coordinator_epoch_from_the_snapshot_or_the_log(
    tmp_path: Path,
) -> None:
    clock = ManualClock(T0)
    core = _core(FileStorage(tmp_path), clock)
    assert core.create_topic("t", 1, 1).error is ErrorCode.NONE
    assert write_client_markers(core, _marker(0, 6)) == {TP: ErrorCode.NONE}
    core.close()
    snapshots = FileSnapshots(tmp_path / "t-0")
    assert [e.coordinator_epoch for e in decode_snapshot(snapshots.read(1))] == [6]
    core = _core(FileStorage(tmp_path), clock)  # from the snapshot
    assert _coordinator_epochs(core) == {PID: 6}
    assert write_client_markers(core, _marker(0, 5)) == {
        TP: ErrorCode.TRANSACTION_COORDINATOR_FENCED
    }
    assert write_client_markers(core, _marker(0, 8)) == {TP: ErrorCode.NONE}
    core.close()
    for offset in snapshots.offsets():
        snapshots.delete(offset)
    core = _core(FileStorage(tmp_path), clock)  # the whole log replayed
    assert _coordinator_epochs(core) == {PID: 8}
    assert write_client_markers(core, _marker(0, 7)) == {
        TP: ErrorCode.TRANSACTION_COORDINATOR_FENCED
    }
    core.close()


def test_a_snapshot_written_before_markers_kept_their_epoch_still_loads() -> None:
    """Snapshots written when every entry's coordinator epoch was -1 load as they are; the
    next marker sets it."""
    old = encode_snapshot([ProducerEntry(PID, 0, last_timestamp_ms=T0)])
    partition = Partition(TP, MemoryLog())
    partition.producers.load(decode_snapshot(old), T0, 60_000)
    entry = partition.producers.get(PID)
    assert entry is not None and entry.coordinator_epoch == -1
    assert partition.write_marker(PID, 0, 0, ControlType.COMMIT, T0) is ErrorCode.NONE
    assert entry.coordinator_epoch == 0


def test_a_client_marker_below_the_offsets_partitions_coordinator_epoch_is_fenced() -> None:
    core = _core(MemoryStorage(), ManualClock(T0))
    assert core.create_topic("t", 1, 1).error is ErrorCode.NONE
    started = core.txn_coordinator.init_producer_id("tx", 60_000)
    pid, epoch = started.producer_id, started.producer_epoch
    assert core.add_offsets_to_txn("tx", pid, epoch) is ErrorCode.NONE
    staged = core.txn_offset_commit("tx", pid, epoch, "g", -1, "", None, {TP: (5, -1, None)})
    assert staged == {TP: ErrorCode.NONE}
    core.internal_topics.create(GROUP_METADATA_TOPIC, T0)
    offsets = core.consumer_offsets_partition

    def marker(coordinator_epoch: int, producer_epoch: int = epoch) -> TxnMarker:
        return TxnMarker("", pid, producer_epoch, coordinator_epoch, ControlType.ABORT, (offsets,))

    assert write_client_markers(core, marker(5)) == {offsets: ErrorCode.NONE}
    assert _coordinator_epochs(core, offsets) == {pid: 5}
    fenced = {offsets: ErrorCode.TRANSACTION_COORDINATOR_FENCED}
    assert write_client_markers(core, marker(4)) == fenced
    assert write_client_markers(core, marker(5)) == {offsets: ErrorCode.NONE}
    core.close()
