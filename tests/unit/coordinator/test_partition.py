"""Partition behaviour: idempotence, transactions, LSO, aborted index, recovery by replay."""

from __future__ import annotations

from coordinator.log.memory_log import MemoryLog
from coordinator.log.storage import LogConfig
from coordinator.partition import Partition
from txn.batch import ControlType, build_batch
from txn.errors import ErrorCode
from txn.ids import TopicPartition

TP = TopicPartition("t", 0)
NOW = 1_000


def batch(n: int, pid: int = -1, epoch: int = -1, seq: int = -1, txn: bool = False) -> bytes:
    return build_batch(
        [(None, f"v{i}".encode()) for i in range(n)],
        timestamp_ms=NOW,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        transactional=txn,
    )


def allow(_tid: str, _pid: int, _epoch: int, _tp: TopicPartition) -> ErrorCode:
    return ErrorCode.NONE


def test_plain_appends_get_consecutive_offsets() -> None:
    p = Partition(TP, MemoryLog())
    assert p.append(batch(3), NOW).base_offset == 0
    assert p.append(batch(2), NOW).base_offset == 3
    assert p.high_watermark == 5 == p.last_stable_offset


def test_a_record_set_larger_than_a_segment_is_refused() -> None:
    """Kafka's UnifiedLog.append: the record set must fit in one segment."""
    one, two = len(batch(1)), len(batch(2))
    p = Partition(TP, MemoryLog(LogConfig(segment_bytes=two)))
    assert p.append(batch(2), NOW).base_offset == 0
    refused = p.append(batch(1) + batch(2), NOW)
    assert refused.error is ErrorCode.RECORD_LIST_TOO_LARGE
    assert refused.error_message is not None and f"{one + two} bytes" in refused.error_message
    assert p.high_watermark == 2
    assert p.append(batch(1), NOW).base_offset == 2


def test_a_fetch_ends_with_the_segment_it_starts_in() -> None:
    size = len(batch(1))
    p = Partition(TP, MemoryLog(LogConfig(segment_bytes=size * 2)))
    for _ in range(5):
        p.append(batch(1), NOW)
    assert len(p.fetch(0, 1 << 20, read_committed=False).records) == size * 2
    assert len(p.fetch(1, 1 << 20, read_committed=True).records) == size
    assert len(p.fetch(2, 1 << 20, read_committed=False).records) == size * 2
    assert len(p.fetch(4, 1 << 20, read_committed=False).records) == size


def test_duplicate_batch_is_answered_with_original_offset() -> None:
    p = Partition(TP, MemoryLog())
    first = p.append(batch(3, pid=7, epoch=0, seq=0), NOW)
    p.append(batch(2, pid=7, epoch=0, seq=3), NOW)
    retry = p.append(batch(3, pid=7, epoch=0, seq=0), NOW)
    assert retry.error is ErrorCode.NONE and retry.base_offset == first.base_offset
    assert p.high_watermark == 5


def test_sequence_gap_is_out_of_order() -> None:
    p = Partition(TP, MemoryLog())
    p.append(batch(3, pid=7, epoch=0, seq=0), NOW)
    assert (
        p.append(batch(1, pid=7, epoch=0, seq=5), NOW).error
        is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    )
    # An unknown producer may start anywhere (its batches may have been deleted), as Kafka.
    assert p.append(batch(1, pid=8, epoch=0, seq=4), NOW).error is ErrorCode.NONE


def test_old_epoch_is_rejected() -> None:
    p = Partition(TP, MemoryLog())
    p.append(batch(1, pid=7, epoch=2, seq=0), NOW)
    assert p.append(batch(1, pid=7, epoch=1, seq=1), NOW).error is ErrorCode.INVALID_PRODUCER_EPOCH
    assert p.append(batch(1, pid=7, epoch=3, seq=0), NOW).error is ErrorCode.NONE


def test_duplicate_window_holds_five_batches() -> None:
    p = Partition(TP, MemoryLog())
    for i in range(6):
        p.append(batch(1, pid=7, epoch=0, seq=i), NOW)
    assert p.append(batch(1, pid=7, epoch=0, seq=1), NOW).base_offset == 1
    assert (
        p.append(batch(1, pid=7, epoch=0, seq=0), NOW).error
        is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    )


def test_open_transaction_holds_lso_and_abort_is_indexed() -> None:
    p = Partition(TP, MemoryLog())
    p.append(batch(2), NOW)
    p.append(batch(3, pid=9, epoch=0, seq=0, txn=True), NOW, transactional_id="x", verifier=allow)
    p.append(batch(1), NOW)
    assert p.last_stable_offset == 2 and p.high_watermark == 6
    committed = p.fetch(0, 1 << 20, read_committed=True)
    assert committed.last_stable_offset == 2
    assert committed.aborted == ()
    assert p.write_marker(9, 0, 0, ControlType.ABORT, NOW) is ErrorCode.NONE
    assert p.last_stable_offset == p.high_watermark == 7
    data = p.fetch(0, 1 << 20, read_committed=True)
    assert [(a.producer_id, a.first_offset) for a in data.aborted or ()] == [(9, 2)]
    uncommitted = p.fetch(0, 1 << 20, read_committed=False)
    assert uncommitted.aborted is None


def test_unverified_transactional_write_is_refused() -> None:
    p = Partition(TP, MemoryLog())

    def deny(_tid: str, _pid: int, _epoch: int, _tp: TopicPartition) -> ErrorCode:
        return ErrorCode.TRANSACTION_ABORTABLE

    result = p.append(
        batch(1, pid=9, epoch=0, seq=0, txn=True), NOW, transactional_id="x", verifier=deny
    )
    assert result.error is ErrorCode.TRANSACTION_ABORTABLE
    assert p.high_watermark == 0 and p.last_stable_offset == 0


def test_state_is_rebuilt_from_the_log() -> None:
    log = MemoryLog()
    p = Partition(TP, log)
    p.append(batch(2, pid=9, epoch=0, seq=0, txn=True), NOW, transactional_id="x", verifier=allow)
    p.write_marker(9, 0, 0, ControlType.ABORT, NOW)
    p.append(batch(2, pid=9, epoch=0, seq=2, txn=True), NOW, transactional_id="x", verifier=allow)
    p.append(batch(1, pid=4, epoch=0, seq=0), NOW)
    reopened = Partition(TP, log)
    assert reopened.last_stable_offset == 3
    assert reopened.open_transactions() == {9: 3}
    assert [a.first_offset for a in reopened.aborted_between(0, 10)] == [0]
    # the duplicate window survived: a retry gets its original offset
    assert reopened.append(batch(1, pid=4, epoch=0, seq=0), NOW).base_offset == 5


def test_fetch_out_of_range_and_delete_records() -> None:
    p = Partition(TP, MemoryLog())
    for _ in range(4):
        p.append(batch(5), NOW)
    assert p.fetch(21, 100, read_committed=False).error is ErrorCode.OFFSET_OUT_OF_RANGE
    assert p.delete_records(10) == (ErrorCode.NONE, 10)
    assert p.fetch(5, 100, read_committed=False).error is ErrorCode.OFFSET_OUT_OF_RANGE
    assert p.delete_records(99)[0] is ErrorCode.OFFSET_OUT_OF_RANGE


def test_corrupt_and_control_batches_are_refused() -> None:
    p = Partition(TP, MemoryLog())
    raw = bytearray(batch(2))
    raw[-1] ^= 0xFF
    assert p.append(bytes(raw), NOW).error is ErrorCode.CORRUPT_MESSAGE
    assert p.append(b"\x00" * 10, NOW).error is ErrorCode.CORRUPT_MESSAGE
    control = build_batch(
        [(b"\x00\x00\x00\x00", b"")],
        timestamp_ms=NOW,
        control=True,
        producer_id=1,
        producer_epoch=0,
        transactional=True,
    )
    assert p.append(control, NOW).error is ErrorCode.INVALID_RECORD
    assert p.high_watermark == 0


def test_idle_producers_expire_but_open_transactions_do_not() -> None:
    p = Partition(TP, MemoryLog())
    p.append(batch(1, pid=4, epoch=0, seq=0), NOW)
    p.append(batch(1, pid=9, epoch=0, seq=0, txn=True), NOW, transactional_id="x", verifier=allow)
    assert p.producers.remove_expired(NOW + 10_000, expiration_ms=1_000) == [4]
    assert p.open_transactions() == {9: 1}


def test_producer_state_refusals_carry_the_log_start_offset() -> None:
    p = Partition(TP, MemoryLog())
    p.append(batch(3, pid=7, epoch=1, seq=0), NOW)
    p.append(batch(2), NOW)
    assert p.delete_records(2) == (ErrorCode.NONE, 2)
    gap = p.append(batch(1, pid=7, epoch=1, seq=9), NOW)
    old = p.append(batch(1, pid=7, epoch=0, seq=3), NOW)
    assert (gap.error, gap.log_start_offset) == (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, 2)
    assert (old.error, old.log_start_offset) == (ErrorCode.INVALID_PRODUCER_EPOCH, 2)
    # an idempotent write while the producer's transaction is open (Kafka's ProducerAppendInfo)
    p.append(batch(1, pid=9, epoch=0, seq=0, txn=True), NOW, transactional_id="x", verifier=allow)
    plain = p.append(batch(1, pid=9, epoch=0, seq=1), NOW)
    assert (plain.error, plain.log_start_offset) == (ErrorCode.INVALID_TXN_STATE, 2)
