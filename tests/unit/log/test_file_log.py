"""FileLog specifics: segment files, the sparse index, crash recovery and the flush policy.

The semantics shared with MemoryLog are tested against both in test_memory_log.py.
Crashes are simulated by editing the segment files between close and reopen;
``os.fsync`` and ``os.pread`` are wrapped (not replaced) to observe I/O.
"""

from __future__ import annotations

import logging
import os
import random
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from coordinator.log import FileLog, FileStorage, LogConfig
from txn.batch import build_batch, iter_batches, parse_header
from txn.errors import OffsetOutOfRangeError

TOPIC = "events"
SEGMENT0 = "00000000000000000000.log"


def make_batch(records: int = 1, *, value: bytes = b"value-") -> bytes:
    return build_batch(
        [(b"key", value + str(i).encode()) for i in range(records)],
        base_offset=-7,
        timestamp_ms=1_700_000_000_000,
    )


def with_offset(batch: bytes, offset: int) -> bytes:
    return offset.to_bytes(8, "big", signed=True) + batch[8:]


BATCH_SIZE = len(make_batch(1))
PAIR_SIZE = len(make_batch(2))


@pytest.fixture
def storage(tmp_path: Path) -> Iterator[FileStorage]:
    st = FileStorage(tmp_path, LogConfig())
    yield st
    st.close()


def partition_dir(storage: FileStorage, partition: int = 0) -> Path:
    return storage.root_dir / f"{TOPIC}-{partition}"


def reopen(storage: FileStorage, config: LogConfig | None = None) -> tuple[FileStorage, FileLog]:
    storage.close()
    fresh = FileStorage(storage.root_dir, LogConfig())
    return fresh, fresh.open_log(TOPIC, 0, config)


def append_all(log: FileLog, count: int, records: int = 1) -> list[bytes]:
    """Append ``count`` batches of ``records`` records each; the batches as stored."""
    stored = []
    for _ in range(count):
        batch = make_batch(records)
        stored.append(with_offset(batch, log.append(batch, 0).base_offset))
    return stored


def write_closed(
    storage: FileStorage, count: int, records: int = 1, config: LogConfig | None = None
) -> list[bytes]:
    """A closed log of ``count`` batches of ``records`` records each; the batches as stored."""
    log = storage.open_log(TOPIC, 0, config)
    stored = append_all(log, count, records)
    log.close()
    return stored


def segment_names(directory: Path, suffix: str = ".log") -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(suffix))


class FsyncCounter:
    """Wraps os.fsync, telling file syncs from directory syncs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.files = 0
        self.dirs = 0
        real = os.fsync

        def counting(fd: int) -> None:
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                self.dirs += 1
            else:
                self.files += 1
            real(fd)

        monkeypatch.setattr(os, "fsync", counting)


# -- segments and the index --------------------------------------------------------------------


def test_segments_roll_and_are_named_by_base_offset(storage: FileStorage) -> None:
    config = LogConfig(segment_bytes=PAIR_SIZE * 3)
    log = storage.open_log(TOPIC, 0, config)
    stored = append_all(log, 7, records=2)
    # Three batches of two records per segment: bases 0, 6, 12.
    assert segment_names(partition_dir(storage)) == [
        SEGMENT0,
        "00000000000000000006.log",
        "00000000000000000012.log",
    ]
    assert (partition_dir(storage) / SEGMENT0).stat().st_size == PAIR_SIZE * 3
    # A read stops at the end of the segment it starts in, as Kafka's fetch does, whatever
    # the budget; the next read starts in the next segment.
    assert log.read(5, 1) == stored[2]
    assert log.read(6, 1) == stored[3]
    assert log.read(3, 10**9) == b"".join(stored[1:3])
    assert log.read(4, PAIR_SIZE * 2) == stored[2]
    assert log.read(6, 10**9) == b"".join(stored[3:6])
    assert log.read(12, 10**9) == stored[6]
    assert [blob for _, blob in log.batches(5)] == stored[2:]
    storage, log = reopen(storage, config)
    assert log.read(0, 10**9) == b"".join(stored[:3])
    assert b"".join(blob for _, blob in log.batches(0)) == b"".join(stored)
    assert log.append(make_batch(1), 0).base_offset == 14
    storage.close()


def test_batch_larger_than_segment_gets_its_own_segment(storage: FileStorage) -> None:
    log = storage.open_log(TOPIC, 0, LogConfig(segment_bytes=100))
    big = make_batch(1, value=b"x" * 500)
    log.append(make_batch(1), 0)
    log.append(big, 0)
    log.append(make_batch(1), 0)
    assert len(segment_names(partition_dir(storage))) == 3
    assert log.read(1, 1) == with_offset(big, 1)


def test_index_narrows_reads_in_a_large_log(
    storage: FileStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = LogConfig(segment_bytes=4 * 1024 * 1024, index_interval_bytes=1024)
    log = storage.open_log(TOPIC, 0, config)
    stored = []
    for n in range(5000):
        batch = make_batch(1 + n % 3)
        stored.append(with_offset(batch, log.append(batch, 0).base_offset))
    assert len(segment_names(partition_dir(storage))) == 1  # one big segment to search
    ends = []
    offset = 0
    for n in range(5000):
        offset += 1 + n % 3
        ends.append(offset)

    calls: list[int] = []
    real_pread = os.pread

    def counting_pread(fd: int, size: int, pos: int) -> bytes:
        data = real_pread(fd, size, pos)
        calls.append(len(data))
        return data

    monkeypatch.setattr(os, "pread", counting_pread)
    rng = random.Random(1289)

    def check(log: FileLog) -> None:
        for _ in range(300):
            target = rng.randrange(log.log_end_offset)
            calls.clear()
            data = log.read(target, 1)
            n = next(i for i, end in enumerate(ends) if end > target)
            assert data == stored[n]
            # One read of headers near the indexed position and one of the batch, where a
            # scan from the segment start would need up to ~20 reads of 64 KiB.
            assert len(calls) <= 2
            assert sum(calls) <= 64 * 1024 + len(data)

    check(log)
    storage, log = reopen(storage, config)  # the rebuilt index must work the same
    check(log)
    storage.close()


def test_index_files_are_written(storage: FileStorage) -> None:
    write_closed(storage, 10, config=LogConfig(index_interval_bytes=BATCH_SIZE))
    index = partition_dir(storage) / "00000000000000000000.index"
    size = index.stat().st_size
    assert size > 0
    assert size % 8 == 0


def test_garbage_index_file_is_ignored(storage: FileStorage) -> None:
    config = LogConfig(index_interval_bytes=BATCH_SIZE)
    log = storage.open_log(TOPIC, 0, config)
    batches = [make_batch(1) for _ in range(20)]
    for batch in batches:
        log.append(batch, 0)
    log.close()
    (partition_dir(storage) / "00000000000000000000.index").write_bytes(b"\xff" * 80)
    storage, log = reopen(storage, config)
    assert log.read(13, 1) == with_offset(batches[13], 13)
    storage.close()


# -- recovery ----------------------------------------------------------------------------------


def _recovery_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "sharetxn.log"]


def reopen_warned(
    storage: FileStorage, caplog: pytest.LogCaptureFixture, config: LogConfig | None = None
) -> tuple[FileStorage, FileLog, list[str]]:
    """``reopen`` with the log's warnings captured; also the recovery warnings it logged."""
    with caplog.at_level(logging.WARNING, logger="sharetxn.log"):
        storage, log = reopen(storage, config)
    return storage, log, _recovery_warnings(caplog)


def test_torn_tail_is_truncated_on_reopen(
    storage: FileStorage, caplog: pytest.LogCaptureFixture
) -> None:
    write_closed(storage, 4, records=2)
    segment = partition_dir(storage) / SEGMENT0
    whole = segment.stat().st_size
    half = make_batch(3)[: PAIR_SIZE // 2]
    with segment.open("ab") as f:
        f.write(half)

    storage, log, warnings = reopen_warned(storage, caplog)
    assert log.log_end_offset == 8
    assert segment.stat().st_size == whole
    [message] = warnings
    assert f"{TOPIC}-0" in message
    assert f"position {whole}" in message
    assert f"dropping {len(half)} bytes" in message
    batch = make_batch(1)
    assert log.append(batch, 0).base_offset == 8
    assert log.read(8, 1) == with_offset(batch, 8)
    assert segment.stat().st_size == whole + len(batch)
    storage.close()


def test_torn_header_is_truncated_on_reopen(
    storage: FileStorage, caplog: pytest.LogCaptureFixture
) -> None:
    write_closed(storage, 1)
    segment = partition_dir(storage) / SEGMENT0
    with segment.open("ab") as f:
        f.write(make_batch(1)[:20])
    storage, log, warnings = reopen_warned(storage, caplog)
    assert log.log_end_offset == 1
    assert "dropping 20 bytes" in warnings[0]
    storage.close()


def test_flipped_byte_in_last_batch_is_truncated_on_reopen(
    storage: FileStorage, caplog: pytest.LogCaptureFixture
) -> None:
    stored = write_closed(storage, 3, records=2)
    segment = partition_dir(storage) / SEGMENT0
    data = bytearray(segment.read_bytes())
    data[-3] ^= 0x01  # inside the last record's value, covered by the CRC
    segment.write_bytes(bytes(data))

    storage, log, warnings = reopen_warned(storage, caplog)
    assert log.log_end_offset == 4
    assert log.read(0, 10**9) == b"".join(stored[:2])
    [message] = warnings
    assert "CRC" in message
    assert f"position {2 * PAIR_SIZE}" in message
    assert f"dropping {PAIR_SIZE} bytes" in message
    assert log.append(make_batch(1), 0).base_offset == 4
    storage.close()


def test_damaged_framing_in_older_segment_drops_everything_after(
    storage: FileStorage, caplog: pytest.LogCaptureFixture
) -> None:
    config = LogConfig(segment_bytes=BATCH_SIZE * 3)
    stored = write_closed(storage, 9, config=config)
    directory = partition_dir(storage)
    assert len(segment_names(directory)) == 3
    first = directory / SEGMENT0
    data = bytearray(first.read_bytes())
    data[BATCH_SIZE + 16] = 0  # magic byte of the second batch
    first.write_bytes(bytes(data))

    storage, log, warnings = reopen_warned(storage, caplog, config)
    assert segment_names(directory) == [SEGMENT0]
    assert log.log_end_offset == 1
    assert log.read(0, 10**9) == stored[0]
    assert any(f"position {BATCH_SIZE}" in m for m in warnings)
    assert sum("deleting segment" in m for m in warnings) == 2
    assert log.append(make_batch(1), 0).base_offset == 1
    storage.close()


def test_missing_middle_segment_drops_later_segments(
    storage: FileStorage, caplog: pytest.LogCaptureFixture
) -> None:
    config = LogConfig(segment_bytes=BATCH_SIZE * 2)
    write_closed(storage, 6, config=config)
    directory = partition_dir(storage)
    (directory / "00000000000000000002.log").unlink()
    storage, log, warnings = reopen_warned(storage, caplog, config)
    assert log.log_end_offset == 2
    assert segment_names(directory) == [SEGMENT0]
    assert any("does not follow" in m for m in warnings)
    storage.close()


def test_clean_reopen_logs_nothing(storage: FileStorage, caplog: pytest.LogCaptureFixture) -> None:
    log = storage.open_log(TOPIC, 0, LogConfig(segment_bytes=BATCH_SIZE * 2))
    append_all(log, 5)
    with caplog.at_level(logging.DEBUG, logger="sharetxn.log"):
        storage, log = reopen(storage, LogConfig(segment_bytes=BATCH_SIZE * 2))
    assert _recovery_warnings(caplog) == []
    assert log.log_end_offset == 5
    storage.close()


# -- log start offset --------------------------------------------------------------------------


def test_start_offset_is_checkpointed_and_old_segments_deleted(storage: FileStorage) -> None:
    config = LogConfig(segment_bytes=BATCH_SIZE * 2)
    log = storage.open_log(TOPIC, 0, config)
    stored = append_all(log, 8)
    directory = partition_dir(storage)
    assert len(segment_names(directory)) == 4  # bases 0, 2, 4, 6

    log.advance_start_offset(5)
    assert segment_names(directory) == ["00000000000000000004.log", "00000000000000000006.log"]
    assert segment_names(directory, ".index") == [
        "00000000000000000004.index",
        "00000000000000000006.index",
    ]
    assert (directory / "log-start-offset").read_text().strip() == "5"
    assert not any(p.name.endswith(".tmp") for p in directory.iterdir())
    with pytest.raises(OffsetOutOfRangeError):
        log.read(4, 1)

    storage, log = reopen(storage, config)
    assert log.log_start_offset == 5
    assert log.read(5, 10**9) == stored[5]  # the rest of segment 4
    assert [blob for _, blob in log.batches(5)] == stored[5:]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(4, 1)

    log.advance_start_offset(8)  # everything: the active segment is rolled away too
    assert segment_names(directory) == ["00000000000000000008.log"]
    storage, log = reopen(storage, config)
    assert (log.log_start_offset, log.log_end_offset) == (8, 8)
    storage.close()


def test_start_offset_checkpoint_survives_crash_before_segment_deletion(
    storage: FileStorage,
) -> None:
    config = LogConfig(segment_bytes=BATCH_SIZE * 2)
    write_closed(storage, 6, config=config)
    directory = partition_dir(storage)
    (directory / "log-start-offset").write_text("4\n")  # as if deletion had not happened yet
    storage, log = reopen(storage, config)
    assert log.log_start_offset == 4
    assert segment_names(directory) == ["00000000000000000004.log"]
    storage.close()


# -- flush policy ------------------------------------------------------------------------------


def test_fsync_every_n_messages(storage: FileStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    log = storage.open_log(TOPIC, 0, LogConfig(flush_interval_messages=3))
    fsyncs = FsyncCounter(monkeypatch)
    expected = []
    for _ in range(9):
        log.append(make_batch(1), 0)
        expected.append(fsyncs.files)
    assert expected == [0, 0, 1, 1, 1, 2, 2, 2, 3]
    log.append(make_batch(4), 0)  # four messages in one batch pass the threshold at once
    assert fsyncs.files == 4
    assert log.unflushed_messages == 0
    assert fsyncs.dirs == 0


def test_default_config_fsyncs_every_append(
    storage: FileStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = storage.open_log(TOPIC, 0)
    fsyncs = FsyncCounter(monkeypatch)
    append_all(log, 5)
    assert fsyncs.files == 5


def test_maybe_flush_after_interval(storage: FileStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    config = LogConfig(flush_interval_messages=1000, flush_interval_ms=100)
    log = storage.open_log(TOPIC, 0, config)
    fsyncs = FsyncCounter(monkeypatch)
    log.maybe_flush(50_000)
    assert fsyncs.files == 0  # nothing to flush
    log.append(make_batch(1), 1_000)
    log.append(make_batch(1), 1_080)
    log.maybe_flush(1_050)
    log.maybe_flush(1_099)
    assert fsyncs.files == 0
    log.maybe_flush(1_100)  # the oldest unflushed append is now 100 ms old
    assert fsyncs.files == 1
    log.maybe_flush(1_180)
    assert fsyncs.files == 1
    log.flush()  # an explicit flush always syncs
    assert fsyncs.files == 2


def test_no_time_rule_without_interval(
    storage: FileStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = storage.open_log(TOPIC, 0, LogConfig(flush_interval_messages=1000))
    fsyncs = FsyncCounter(monkeypatch)
    log.append(make_batch(1), 0)
    log.maybe_flush(10**12)
    assert fsyncs.files == 0
    log.close()  # closing flushes
    assert fsyncs.files == 1


def test_roll_syncs_old_segment_and_directory(
    storage: FileStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = LogConfig(segment_bytes=BATCH_SIZE * 2, flush_interval_messages=1000)
    log = storage.open_log(TOPIC, 0, config)
    log.append(make_batch(1), 0)
    log.append(make_batch(1), 0)
    fsyncs = FsyncCounter(monkeypatch)
    log.append(make_batch(1), 0)  # rolls: the old segment must be durable before the new one
    assert (fsyncs.files, fsyncs.dirs) == (1, 1)
    assert log.unflushed_messages == 1


# -- storage -----------------------------------------------------------------------------------


def test_storage_lists_directories_on_disk(tmp_path: Path) -> None:
    storage = FileStorage(tmp_path, LogConfig())
    storage.open_log("a-b-c", 12).append(make_batch(1), 0)
    storage.open_log("x", 0)
    storage.close()
    (tmp_path / "not a partition").mkdir()
    fresh = FileStorage(tmp_path, LogConfig())
    assert fresh.list_logs() == [("a-b-c", 12), ("x", 0)]
    assert (tmp_path / "a-b-c-12" / SEGMENT0).exists()
    fresh.delete_log("a-b-c", 12)
    assert not (tmp_path / "a-b-c-12").exists()
    fresh.delete_log("a-b-c", 12)  # deleting twice is harmless
    fresh.close()


def test_default_config_comes_from_storage(tmp_path: Path) -> None:
    storage = FileStorage(tmp_path, LogConfig(segment_bytes=BATCH_SIZE))
    log = storage.open_log(TOPIC, 0)
    append_all(log, 3)
    assert len(segment_names(tmp_path / f"{TOPIC}-0")) == 3
    storage.close()


def test_filelog_usable_without_storage(tmp_path: Path) -> None:
    log = FileLog(tmp_path / "t-0")
    header = log.append(make_batch(2), 0)
    log.close()
    again = FileLog(tmp_path / "t-0")
    assert again.log_end_offset == header.last_offset + 1
    data = again.read(0, 1)
    assert [h.base_offset for _, h in iter_batches(data)] == [0]
    assert parse_header(data).records_count == 2
    again.close()
