"""The cleaner as Kafka 4.4's: KIP-534 delete horizons, the bounded offset map (passes), a
producer's last batch kept emptied."""

from __future__ import annotations

import random

from coordinator.broker import BrokerCore
from coordinator.log.cleaner import CleanerPolicy, offset_map_entries
from coordinator.log.cleaner_passes import CleanTarget, LogCleaner
from coordinator.log.memory_log import MemoryLog, MemoryStorage
from coordinator.log.storage import LogConfig
from coordinator.partition import Partition
from txn.batch import ATTR_DELETE_HORIZON, ControlType, build_batch, parse_header
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicPartition
from txn.limits import LONG_MAX
from txn.record_keys import records_of

T0 = 1_700_000_000_000
ONE = len(build_batch([(b"k0", b"v00")], timestamp_ms=T0))


def _log(segment_batches: int = 2) -> MemoryLog:
    return MemoryLog(LogConfig(segment_bytes=segment_batches * ONE))


def _target(log: MemoryLog, entries: int, partition: Partition | None = None) -> CleanTarget:
    policy = CleanerPolicy(
        delete_retention_ms=5000, min_cleanable_dirty_ratio=0.01, offset_map_entries=entries
    )
    if partition is None:
        return CleanTarget("t-0", log, policy, lambda: (log.log_end_offset, []))
    return CleanTarget(
        "t-0",
        log,
        policy,
        partition.transactions_for_cleaner,
        producers=partition.producers_for_cleaner,
        after=lambda result: partition.after_clean(result.end, result.kept_markers),
    )


def _history(log: MemoryLog, seed: int) -> None:
    rng = random.Random(seed)
    for n in range(60):
        key = b"k%d" % rng.randrange(12)
        value = None if rng.random() < 0.15 else b"v%02d" % (n % 100)
        log.append(build_batch([(key, value)], timestamp_ms=T0 + n), T0 + n)


def _contents(log: MemoryLog) -> list[bytes]:
    return [bytes(raw) for _h, raw in log.batches(0)]


def test_offset_map_entries_follow_the_dedupe_buffer() -> None:
    assert offset_map_entries(128 * 1024 * 1024) == 5_033_164  # Kafka's default map
    assert offset_map_entries(240) == 9
    assert offset_map_entries(0) == 1
    assert offset_map_entries(1 << 40) == offset_map_entries((1 << 31) - 1)  # one thread's


def test_a_tiny_offset_map_cleans_in_passes_to_what_one_pass_gives() -> None:
    """A map of 2 keys: each pass maps what fits from the cleaner checkpoint on, cleans the
    segments up to the last batch mapped and leaves the checkpoint there; the passes end
    with the bytes one pass with a large map writes."""
    for seed in range(5):
        whole, passes = _log(), _log()
        _history(whole, seed)
        _history(passes, seed)
        clock = ManualClock(T0 + 1000)
        LogCleaner(clock).run_pass([_target(whole, 1000)])
        assert whole.cleaned_offset == whole.segments()[-1].base_offset
        cleaner, target = LogCleaner(clock), _target(passes, 2)
        checkpoints = []
        while cleaner.run_pass([target]) or passes.cleaned_offset not in checkpoints:
            checkpoints.append(passes.cleaned_offset)
        assert len(checkpoints) > 3, checkpoints  # many passes, each further on
        assert checkpoints == sorted(checkpoints)
        assert passes.cleaned_offset == whole.cleaned_offset
        assert _contents(passes) == _contents(whole)


def test_a_tombstone_stays_delete_retention_ms_from_the_first_cleaning() -> None:
    """KIP-534: a tombstone already older than delete.retention.ms when first cleaned stays
    until that cleaning's time plus delete.retention.ms, which its batch header records
    (DELETE_HORIZON attribute, the horizon as base timestamp)."""
    log = _log()
    log.append(build_batch([(b"a", b"1")], timestamp_ms=T0), T0)
    log.append(build_batch([(b"a", None)], timestamp_ms=T0), T0)
    log.append(build_batch([(b"b", b"1")], timestamp_ms=T0), T0)
    log.append(build_batch([(b"c", b"1")], timestamp_ms=T0), T0)
    log.append(build_batch([(b"d", b"1")], timestamp_ms=T0), T0)  # the active segment
    clock = ManualClock(T0 + 60_000)  # long past the record's timestamp + 5 s
    cleaner, target = LogCleaner(clock), _target(log, 1000)
    cleaner.run_pass([target])
    tombstone = next(raw for h, raw in log.batches(0) if h.base_offset == 1)
    header = parse_header(tombstone)
    assert header.attributes & ATTR_DELETE_HORIZON
    assert header.delete_horizon_ms == T0 + 65_000
    assert [r.timestamp_ms for r in records_of(tombstone, header)] == [T0]
    clock.advance(4_999)
    cleaner.run_pass([target])
    assert 1 in [h.base_offset for h, _ in log.batches(0)]
    clock.advance(1)  # the horizon: the pass it makes due removes the tombstone
    cleaner.run_pass([target])
    assert [h.base_offset for h, _ in log.batches(0)] == [2, 3, 4]


def _idempotent(seq: int, key: bytes, pid: int = 7) -> bytes:
    return build_batch(
        [(key, b"v%d" % seq)],
        timestamp_ms=T0,
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
    )


def test_a_producers_last_batch_stays_empty_so_its_sequence_survives_a_restart() -> None:
    """Every record of an idempotent producer was superseded: its last batch stays as an
    empty batch (Kafka's RETAIN_EMPTY), so after a restart its next sequence is checked
    against it -- an out-of-order one is refused, the next one accepted."""
    log = _log()
    partition = Partition(TopicPartition("t", 0), log)
    for seq in range(2):
        assert partition.append(_idempotent(seq, b"a"), T0).error is ErrorCode.NONE
    for key in (b"a", b"b", b"c"):  # another writer supersedes the producer's records
        assert partition.append(build_batch([(key, b"x")], timestamp_ms=T0), T0).error is (
            ErrorCode.NONE
        )
    LogCleaner(ManualClock(T0 + 1000)).run_pass([_target(log, 1000, partition)])
    kept = [(h.base_offset, h.records_count, h.producer_id) for h, _ in log.batches(0)]
    assert kept == [(1, 0, 7), (2, 1, -1), (3, 1, -1), (4, 1, -1)]
    restarted = Partition(TopicPartition("t", 0), log)
    assert restarted.append(_idempotent(5, b"a"), T0).error is (
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    )
    duplicate = restarted.append(_idempotent(1, b"a"), T0)
    assert duplicate.error is ErrorCode.NONE and duplicate.base_offset == 1
    assert restarted.append(_idempotent(2, b"a"), T0).error is ErrorCode.NONE


def test_the_broker_sizes_the_offset_map_from_the_dedupe_buffer() -> None:
    core = BrokerCore(
        MemoryStorage(),
        ManualClock(T0),
        BrokerConfig({"log.cleaner.dedupe.buffer.size": "2400"}),
        random.Random(1),
    )
    assert core.create_topic("t", 1, 1, {"cleanup.policy": "compact"}).error is ErrorCode.NONE
    settings = [s for _tp, _p, s in core._client_partitions()]
    assert [s.cleaner.offset_map_entries for s in settings] == [90]
    core.close()


def test_a_marker_behind_an_emptied_last_batch_asks_for_no_pass() -> None:
    """A transactional producer's only batch was superseded: it stays, emptied (the
    producer's last batch), so its COMMIT marker stays too (a pass traverses the batch,
    as Kafka's CleanedTransactionMetadata): no later pass can remove the marker, so none
    is made due for it."""
    log = _log()
    partition = Partition(TopicPartition("t", 0), log)
    raw = build_batch(
        [(b"a", b"1")],
        timestamp_ms=T0,
        producer_id=9,
        producer_epoch=0,
        base_sequence=0,
        transactional=True,
    )
    assert partition.append(raw, T0, transactional_id="x").error is ErrorCode.NONE
    assert partition.write_marker(9, 0, 0, ControlType.COMMIT, T0) is ErrorCode.NONE
    for key in (b"a", b"b", b"c"):
        plain = build_batch([(key, b"x")], timestamp_ms=T0)
        assert partition.append(plain, T0).error is ErrorCode.NONE
    cleaner = LogCleaner(ManualClock(T0 + 1000))
    cleaner.run_pass([_target(log, 1000, partition)])
    kept = [(h.base_offset, h.records_count, h.is_control) for h, _ in log.batches(0)]
    assert kept[:2] == [(0, 0, False), (1, 1, True)]
    assert cleaner.state("t-0").due_ms == LONG_MAX
