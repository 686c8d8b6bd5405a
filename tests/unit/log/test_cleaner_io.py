"""The cleaner reads its segments through a bounded buffer (Kafka's ``log.cleaner.io.buffer
.size``): a large segment compacts with the buffer at its first size, a batch larger than it
grows it (doubled, up to the max message size, then to the batch), and the result is the one
a pass over the batches in memory gives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from coordinator.log.cleaner import CleanerPolicy, cleaner_io_buffer_bytes
from coordinator.log.cleaner_io import (
    CorruptSegmentError,
    FileRange,
    ReadBuffer,
    SegmentFile,
    memory_range,
)
from coordinator.log.cleaner_passes import CleanTarget, InlineCleanerExecutor, LogCleaner
from coordinator.log.compaction import (
    CleanerState,
    apply_clean,
    job_range,
    plan_clean,
    run_clean,
)
from coordinator.log.file_log import FileStorage
from coordinator.log.file_swap import Staged
from coordinator.log.memory_log import MemoryLog
from coordinator.log.storage import LogConfig, PartitionLog
from coordinator.log_settings import topic_log_settings
from txn.batch import build_batch
from txn.clock import ManualClock
from txn.config import BrokerConfig

T0 = 1_700_000_000_000
KIB = 1024


def _fill(log: PartitionLog, batches: int, keys: int, value_bytes: int = 900) -> None:
    for n in range(batches):
        value = b"%06d" % n + b"x" * value_bytes
        log.append(build_batch([(b"k%d" % (n % keys), value)], timestamp_ms=T0 + n), T0 + n)


def _clean(log: PartitionLog, policy: CleanerPolicy, sizes: list[int]) -> None:
    cleaner = LogCleaner(ManualClock(T0 + 10**6), InlineCleanerExecutor(sizes.append))
    target = CleanTarget("t-0", log, policy, lambda: (log.log_end_offset, []))
    cleaner.run_pass([target])


def _values(log: PartitionLog) -> list[bytes]:
    return [bytes(raw) for _h, raw in log.batches(0)]


def test_the_buffer_is_kafkas_share_of_log_cleaner_io_buffer_size() -> None:
    assert cleaner_io_buffer_bytes(512 * KIB, 1) == 256 * KIB
    assert cleaner_io_buffer_bytes(512 * KIB, 2) == 128 * KIB
    broker = BrokerConfig({"log.cleaner.io.buffer.size": 64 * KIB, "message.max.bytes": 5000})
    policy = topic_log_settings(LogConfig(), broker, {"max.message.bytes": "9000"}).cleaner
    assert (policy.io_buffer_bytes, policy.max_io_buffer_bytes) == (32 * KIB, 9000)


def test_a_large_segment_compacts_with_the_buffer_at_its_first_size(tmp_path: Path) -> None:
    """About 4 MiB of segments and 20 keys, with a 16 KiB buffer: no read grows it, and the
    log keeps the latest batch of each key -- as the same pass over a memory log."""
    policy = CleanerPolicy(min_cleanable_dirty_ratio=0.01, io_buffer_bytes=16 * KIB)
    storage = FileStorage(tmp_path, LogConfig(segment_bytes=2 * KIB * KIB))
    on_disk = storage.open_log("t", 0)
    in_memory = MemoryLog(LogConfig(segment_bytes=2 * KIB * KIB))
    for log in (on_disk, in_memory):
        _fill(log, 4500, keys=20)
    assert len(on_disk.segments()) == 3
    sizes: list[int] = []
    _clean(on_disk, policy, sizes)
    _clean(in_memory, policy, [])
    assert sizes and max(sizes) == 16 * KIB
    assert _values(on_disk) == _values(in_memory)
    # The cleaned segments hold the latest batch of each key (20), the active one the rest.
    assert sum(seg.size_bytes for seg in on_disk.segments()[:-1]) < 20 * 1000
    on_disk.close()


def test_a_batch_larger_than_the_buffer_grows_it_then_it_is_restored(tmp_path: Path) -> None:
    policy = CleanerPolicy(
        min_cleanable_dirty_ratio=0.01, io_buffer_bytes=4 * KIB, max_io_buffer_bytes=20 * KIB
    )
    storage = FileStorage(tmp_path, LogConfig(segment_bytes=64 * KIB))
    log = storage.open_log("t", 0)
    _fill(log, 30, keys=5)
    log.append(build_batch([(b"k1", b"y" * 30 * KIB)], timestamp_ms=T0 + 50), T0 + 50)
    _fill(log, 100, keys=5)
    sizes: list[int] = []
    _clean(log, policy, sizes)
    # 4 KiB doubled to 8 and 16, capped at 20 KiB, then the batch's own size; back to 4 KiB.
    assert sizes[:5] == [4 * KIB, 8 * KIB, 16 * KIB, 20 * KIB, sizes[4]]
    assert sizes[4] > 30 * KIB
    assert sizes[5] == 4 * KIB
    assert max(sizes) == sizes[4]
    log.close()


def test_a_batch_running_past_its_segment_is_corrupt(tmp_path: Path) -> None:
    raw = build_batch([(b"k", b"v" * 100)], timestamp_ms=T0)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(raw + raw[:50])
    source = FileRange((SegmentFile(str(path), 0, len(raw) + 50),))
    buffer = ReadBuffer(64, 1 << 20)
    with pytest.raises(CorruptSegmentError, match="runs past"):
        list(source.batches(0, buffer))
    assert buffer.size == 64  # restored
    assert os.path.exists(path)


def test_a_memory_range_splits_its_batches_by_segment() -> None:
    log = MemoryLog(LogConfig(segment_bytes=200))
    _fill(log, 6, keys=3, value_bytes=100)
    bases = [s.base_offset for s in log.segments()]
    split = memory_range(bases, list(log.batches(0)))
    assert [len(group) for group in split.segments] == [1] * len(bases)


def test_a_file_logs_cleaned_segments_are_staged_not_held(tmp_path: Path) -> None:
    """Little to remove (mostly distinct keys): the kept batches go to the staged files
    through the write buffer; the result names the files, the swap installs them."""
    policy = CleanerPolicy(min_cleanable_dirty_ratio=0.01, io_buffer_bytes=8 * KIB)
    storage = FileStorage(tmp_path, LogConfig(segment_bytes=256 * KIB))
    log = storage.open_log("t", 0)
    for n in range(1000):  # 100 keys written twice, the rest once
        key = b"k%d" % (n % 600) if n < 700 else b"u%d" % n
        log.append(build_batch([(key, b"x" * 900)], timestamp_ms=T0 + n), T0 + n)
    expected = _values(log)
    job = plan_clean(log, log.log_end_offset, [], T0 + 10**6, policy, CleanerState())
    assert job is not None
    sizes: list[int] = []
    result = run_clean(job, job_range(log, job), sizes.append)
    assert set(sizes) == {8 * KIB}
    assert result.contents and all(isinstance(o, Staged) for o in result.contents.values())
    staged = [Path(o.path) for o in result.contents.values() if isinstance(o, Staged)]
    assert all(p.exists() for p in staged)
    assert apply_clean(log, result)
    assert not any(p.exists() for p in staged)  # installed as the segments
    kept = _values(log)
    assert len(kept) == 900 and set(kept) <= set(expected)
    log.close()
