"""Segment files opened on demand through one bounded cache shared by a storage's logs."""

from __future__ import annotations

import errno
import os
import resource
from pathlib import Path

import pytest

from coordinator.log import FileStorage, LogConfig
from coordinator.log.file_log import FileLog
from coordinator.log.handles import MIN_CAPACITY, FileHandles, default_capacity
from txn.batch import build_batch, iter_batches
from txn.errors import KafkaStorageError

TOPIC = "many"
# Coordinator logs' settings: no fsync on append, only on flush.
LAZY = LogConfig(flush_interval_messages=1 << 62)


def batch(value: bytes) -> bytes:
    return build_batch([(b"k", value)], base_offset=0, timestamp_ms=1_700_000_000_000)


def values(raw: bytes) -> list[bytes]:
    """The value of each one-record batch of ``raw`` (it ends the batch, before a 0 byte)."""
    out = []
    for pos, header in iter_batches(raw):
        one = raw[pos : pos + header.size]
        out.append(one[len(batch(b"")) - 1 : -1])
    return out


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_more_logs_than_the_cache_holds_keep_their_data(tmp_path: Path) -> None:
    storage = FileStorage(tmp_path, LogConfig(), open_files=4)
    before = open_fds()
    logs = [storage.open_log(TOPIC, p) for p in range(20)]
    for round_ in range(3):
        for p, log in enumerate(logs):
            log.append(batch(f"{p}-{round_}".encode()), 0)
            assert len(storage.handles) <= 4
    assert open_fds() - before <= 4
    for p, log in enumerate(logs):
        assert values(log.read(0, 1 << 20)) == [f"{p}-{r}".encode() for r in range(3)]
    assert storage.handles.evictions > 0
    storage.close()
    assert open_fds() == before
    # Restart: recovery of 20 logs through 4 descriptors.
    again = FileStorage(tmp_path, LogConfig(), open_files=4)
    for p in range(20):
        log = again.open_log(TOPIC, p)
        assert log.log_end_offset == 3
        assert len(again.handles) <= 4
    assert values(again.open_log(TOPIC, 7).read(1, 1 << 20)) == [b"7-1", b"7-2"]
    again.close()


def test_an_iterator_survives_the_eviction_of_its_segment(tmp_path: Path) -> None:
    storage = FileStorage(tmp_path, LogConfig(), open_files=1)
    first = storage.open_log(TOPIC, 0)
    second = storage.open_log(TOPIC, 1)
    for n in range(5):
        first.append(batch(b"a%d" % n), 0)
    seen = []
    for header, raw in first.batches(0):
        second.append(batch(b"b"), 0)  # takes the only descriptor
        seen += values(raw)
        assert header.base_offset == len(seen) - 1
    assert seen == [b"a%d" % n for n in range(5)]
    storage.close()


def test_evicting_a_written_file_fsyncs_it_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = FileStorage(tmp_path, LAZY, open_files=1)
    first = storage.open_log(TOPIC, 0)
    second = storage.open_log(TOPIC, 1)
    synced: list[str] = []
    real_fsync = os.fsync

    def recording(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording)
    first.append(batch(b"x"), 0)
    assert synced == []
    second.append(batch(b"y"), 0)  # evicts the first log's active segment
    assert [Path(p).parent.name for p in synced] == [f"{TOPIC}-0"]
    assert values(first.read(0, 100)) == [b"x"]  # evicts the second, written too
    assert [Path(p).parent.name for p in synced] == [f"{TOPIC}-0", f"{TOPIC}-1"]
    synced.clear()
    assert values(second.read(0, 100)) == [b"y"]  # evicts the first, only read since
    assert synced == []
    storage.close()


def test_a_failed_fsync_at_eviction_fails_the_next_flush(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = FileStorage(tmp_path, LAZY, open_files=1)
    first = storage.open_log(TOPIC, 0)
    second = storage.open_log(TOPIC, 1)
    first.append(batch(b"x"), 0)
    real_fsync = os.fsync

    def failing(fd: int) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "fsync", failing)
    second.append(batch(b"y"), 0)  # evicts the dirty segment: its fsync fails
    monkeypatch.setattr(os, "fsync", real_fsync)
    with pytest.raises(KafkaStorageError, match="I/O error"):
        first.flush()
    first.flush()  # reported once; the file is fine now
    storage.close()


def test_a_failed_fsync_at_eviction_fails_the_deferred_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = FileStorage(tmp_path, LAZY, open_files=1)
    first = storage.open_log(TOPIC, 0)
    second = storage.open_log(TOPIC, 1)
    first.append(batch(b"x"), 0)

    def failing(fd: int) -> None:
        raise OSError(errno.EIO, "I/O error")

    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", failing)
    second.append(batch(b"y"), 0)
    monkeypatch.setattr(os, "fsync", real_fsync)
    sync = first.fsync_later()
    with pytest.raises(KafkaStorageError, match="I/O error"):
        sync()
    first.fsync_later()()  # reported once
    storage.close()


def test_out_of_descriptors_closes_cached_files_and_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = FileStorage(tmp_path, LogConfig(), open_files=100)
    logs = [storage.open_log(TOPIC, p) for p in range(3)]
    for log in logs:
        log.append(batch(b"v"), 0)
    assert len(storage.handles) == 3
    real_open = os.open
    refusals = 2

    def scarce(path: str | os.PathLike[str], flags: int, mode: int = 0o777) -> int:
        nonlocal refusals
        if str(path).endswith(".log") and refusals:
            refusals -= 1
            raise OSError(errno.EMFILE, "Too many open files")
        return real_open(path, flags, mode)

    monkeypatch.setattr(os, "open", scarce)
    storage.handles.close(logs[0]._segments[-1].log_path)
    assert values(logs[0].read(0, 100)) == [b"v"]
    assert len(storage.handles) == 1  # the two others were closed to make room
    storage.close()


def test_out_of_descriptors_with_nothing_to_close_is_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    handles = FileHandles(10)

    def refused(path: str | os.PathLike[str], flags: int, mode: int = 0o777) -> int:
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(os, "open", refused)
    with pytest.raises(OSError) as caught:
        handles.fd(tmp_path / "x", os.O_RDONLY)
    assert caught.value.errno == errno.EMFILE


def test_a_standalone_log_has_a_bounded_cache_of_its_own(tmp_path: Path) -> None:
    log = FileLog(tmp_path / "t-0", LogConfig(segment_bytes=100))
    for n in range(100):
        log.append(batch(b"%d" % n), 0)
    assert len(log.segments()) > 64
    assert len(log._handles) <= 64
    everything = b"".join(blob for _, blob in log.batches(0))
    assert values(everything) == [b"%d" % n for n in range(100)]
    log.close()
    assert len(log._handles) == 0


def test_the_default_capacity_is_half_the_open_file_limit() -> None:
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        pytest.skip("no open-file limit")
    assert default_capacity() == max(soft // 2, MIN_CAPACITY)


def test_a_cache_holds_at_least_one_file() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        FileHandles(0)


def test_the_least_recently_used_file_is_closed_first(tmp_path: Path) -> None:
    handles = FileHandles(2)
    a, b, c = (tmp_path / name for name in "abc")
    flags = os.O_RDWR | os.O_CREAT
    fd_a = handles.fd(a, flags)
    handles.fd(b, flags)
    assert handles.fd(a, flags) == fd_a  # a hit, and a is now the most recent
    handles.fd(c, flags)
    assert handles.is_open(a)
    assert not handles.is_open(b)
    assert handles.is_open(c)
    assert (handles.opens, handles.evictions) == (3, 1)
    handles.close_all()
    assert len(handles) == 0
