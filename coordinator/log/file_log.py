"""Durable partition logs on segment files, laid out like Kafka's.

A partition directory ``{topic}-{partition}`` holds segments
``{base offset:020d}.log``, each with a sparse ``.index`` (8-byte entries:
int32 offset relative to the segment base, uint32 file position; one every
``index_interval_bytes``), and ``log-start-offset``, a checkpoint of the log
start offset written atomically (temp file, fsync, rename, fsync directory).

Raising the log start offset (DeleteRecords, retention) writes the checkpoint
first, then renames the segments wholly below it to ``*.log.deleted`` (Kafka's
suffix); ``purge_deleted`` removes those files later (``file.delete.delay.ms``)
and opening a log removes any left over.  A crash at any point therefore loses
nothing above the new start offset and leaves no segment below it readable.

Durability rules:

* Bytes go to the file with unbuffered ``os.write``; the flush policy decides
  when to ``fsync``.  Rolling a segment first fsyncs the old one, so only the
  active (last) segment can ever hold unsynced bytes, and creating a segment
  fsyncs the directory.  No segment keeps a descriptor: ``.log`` files are opened on
  demand through the storage's bounded cache (``coordinator.log.handles``), which fsyncs a
  written file before closing it, so a flush also covers bytes written through a
  descriptor since closed; ``.index`` files are opened for each write.
* Index files are never trusted: they are rebuilt from the segment scan on
  open, so they are written lazily (on flush, roll and close) and never fsynced.
* Recovery on open verifies every batch's framing (header parses, the batch
  fits in the file, base offsets are contiguous) in every segment, and the
  CRC32C only in the active segment, which is the only one that can be torn
  given the rule above.  Older segments are scanned header by header in large
  reads, which keeps open time low for big logs.  At the first bad batch the
  segment is truncated to the last whole batch, a warning is logged on
  ``sharetxn.log`` and every later segment is deleted.

Nothing here reads the clock, sleeps or starts threads: the broker core calls
it synchronously and passes the time in.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import logging
import os
import re
import shutil
import struct
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path

from coordinator.log import file_swap
from coordinator.log.data_dir import fsync_dir
from coordinator.log.handles import FileHandles, default_capacity
from coordinator.log.memory_log import (
    FlushPolicy,
    LogBase,
    StorageBase,
    assign_offset,
    check_config,
    check_partition,
    out_of_range,
    validate_batch,
)
from coordinator.log.producer_snapshots import FileSnapshots, SnapshotStore
from coordinator.log.segments import roll_jitter_ms, should_roll
from coordinator.log.storage import LogConfig, SegmentInfo
from txn.batch import HEADER_SIZE, BatchFormatError, BatchHeader, crc_ok, parse_header
from txn.errors import ClosedError, KafkaStorageError
from txn.limits import INT32_MAX

logger = logging.getLogger("sharetxn.log")

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
DELETED_SUFFIX = ".deleted"
START_OFFSET_FILE = "log-start-offset"
_TMP_SUFFIX = ".tmp"
_SEGMENT_NAME = re.compile(r"\d{20}")
_PARTITION_DIR = re.compile(r"(.+)-(\d+)")
_INDEX_ENTRY = struct.Struct(">iI")
_MAX_RELATIVE_OFFSET = INT32_MAX
_SEGMENT_FLAGS = os.O_RDWR | os.O_APPEND
_OWN_HANDLES = 64  # descriptors of a FileLog opened without a shared cache
_HEADER_CHUNK = 64 * 1024  # bytes per read when walking headers
_DATA_CHUNK = 1024 * 1024  # bytes per read when copying whole batches out


def _pread_exact(fd: int, size: int, pos: int) -> bytes:
    data = os.pread(fd, size, pos)
    while len(data) < size:
        more = os.pread(fd, size - len(data), pos + len(data))
        if not more:
            raise KafkaStorageError(f"segment ended at {pos + len(data)}, expected {pos + size}")
        data += more
    return data


def _write_all(fd: int, data: bytes | bytearray) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _write_index(path: Path, data: bytes | bytearray, pos: int) -> None:
    """Write ``data`` at ``pos`` of an index file and cut it after them (creating it)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.pwrite(fd, view, pos)
            view, pos = view[written:], pos + written
        os.ftruncate(fd, pos)
    finally:
        os.close(fd)


class _Window:
    """Sequential reads of a segment in big chunks, so walking headers costs few syscalls.

    It asks for ``seg.fd`` at each refill, so a segment evicted from the handle cache
    meanwhile is reopened, and one closed under a live iterator fails with EBADF instead of
    reading whatever file reuses the descriptor.
    """

    def __init__(self, seg: _Segment, end: int, chunk: int) -> None:
        self._seg = seg
        self._end = end
        self._chunk = chunk
        self._buf = b""
        self._buf_pos = 0

    def get(self, pos: int, size: int) -> tuple[bytes, int] | None:
        """A buffer holding ``size`` bytes at file position ``pos`` and their index in it.

        None if the file (as of the window's ``end``) is shorter than that.
        """
        if pos + size > self._end:
            return None
        rel = pos - self._buf_pos
        if rel < 0 or rel + size > len(self._buf):
            want = min(max(size, self._chunk), self._end - pos)
            self._buf = os.pread(self._seg.fd, want, pos)
            self._buf_pos = pos
            rel = 0
            if len(self._buf) < size:
                return None
        return self._buf, rel


def _walk(
    seg: _Segment, start: int, end: int, chunk: int
) -> Iterator[tuple[int, BatchHeader, _Window]]:
    """(position, header, window) of each batch in [start, end) of a recovered segment."""
    path = seg.log_path
    window = _Window(seg, end, chunk)
    pos = start
    while pos < end:
        got = window.get(pos, HEADER_SIZE)
        if got is None:
            raise KafkaStorageError(f"{path}: truncated header at {pos}")
        try:
            header = parse_header(got[0], got[1])
        except BatchFormatError as exc:
            raise KafkaStorageError(f"{path}: bad batch at {pos}: {exc}") from exc
        yield pos, header, window
        pos += header.size


class _Segment:
    """One ``.log`` file, its in-memory sparse index and its ``.index`` file.

    Neither file stays open: the ``.log`` file's descriptor comes from the storage's
    ``FileHandles`` on each access (``fd``), and the ``.index`` file, only ever written, is
    opened for each write.
    """

    def __init__(self, directory: Path, base: int, handles: FileHandles, *, create: bool) -> None:
        self.base = base
        self.log_path = directory / f"{base:020d}{LOG_SUFFIX}"
        self.index_path = directory / f"{base:020d}{INDEX_SUFFIX}"
        self._handles = handles
        self._closed = False
        if create:
            fd = handles.fd(self.log_path, _SEGMENT_FLAGS | os.O_CREAT)
            stat = os.fstat(fd)
            _write_index(self.index_path, b"", 0)
        else:
            stat = os.stat(self.log_path)
        self.size = stat.st_size
        # Kafka's "created" and "last modified" times; a loaded segment gets its file's mtime.
        self.created_ms = self.modified_ms = stat.st_mtime_ns // 1_000_000
        self.max_timestamp_ms = -1
        self.first_timestamp_ms = -1  # largest timestamp of the first batch (segment.ms rule)
        self.roll_jitter_ms = 0  # segment.jitter.ms: drawn when the log creates or loads it
        self.next_offset = base
        self.index_offsets = array("q")
        self.index_positions = array("q")
        self.index_written = 0  # entries already in the .index file
        self.bytes_since_index = 0
        self.dirty = False
        self.crc_checked = False

    @property
    def fd(self) -> int:
        """The ``.log`` file's descriptor, valid until the next segment file is opened."""
        if self._closed:
            raise OSError(errno.EBADF, f"segment {self.log_path} is closed")
        return self._handles.fd(self.log_path, _SEGMENT_FLAGS)

    def written(self) -> None:
        self.dirty = True
        self._handles.written(self.log_path)

    def record(self, header: BatchHeader, pos: int, interval: int) -> None:
        """Account for the batch at ``pos`` (Kafka's rule: index it once enough bytes passed)."""
        if self.bytes_since_index > interval:
            self.index_offsets.append(header.base_offset)
            self.index_positions.append(pos)
            self.bytes_since_index = 0
        self.bytes_since_index += header.size
        self.next_offset = header.last_offset + 1
        if pos == 0:
            self.first_timestamp_ms = header.max_timestamp
        self.max_timestamp_ms = max(self.max_timestamp_ms, header.max_timestamp)

    def reset_index(self) -> None:
        self.index_offsets = array("q")
        self.index_positions = array("q")
        self.index_written = 0
        self.bytes_since_index = 0
        self.next_offset = self.base
        self.max_timestamp_ms = self.first_timestamp_ms = -1

    def index_lookup(self, offset: int) -> int:
        """File position of an indexed batch with base offset <= ``offset`` (0 if none)."""
        slot = bisect.bisect_right(self.index_offsets, offset) - 1
        return self.index_positions[slot] if slot >= 0 else 0

    def headers(self, start_pos: int) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of every batch from ``start_pos`` (a batch boundary)."""
        for pos, header, _window in _walk(self, start_pos, self.size, _HEADER_CHUNK):
            yield pos, header

    def write_pending_index(self) -> None:
        """Append index entries not yet in the ``.index`` file (not fsynced: rebuilt on open)."""
        count = len(self.index_offsets)
        if self.index_written == count:
            return
        data = bytearray()
        for slot in range(self.index_written, count):
            data += _INDEX_ENTRY.pack(
                self.index_offsets[slot] - self.base, self.index_positions[slot]
            )
        _write_index(self.index_path, data, self.index_written * _INDEX_ENTRY.size)
        self.index_written = count

    def rewrite_index(self) -> None:
        data = b"".join(
            _INDEX_ENTRY.pack(offset - self.base, position)
            for offset, position in zip(self.index_offsets, self.index_positions, strict=True)
        )
        _write_index(self.index_path, data, 0)
        self.index_written = len(self.index_offsets)

    def truncate(self, pos: int, next_offset: int) -> None:
        """Cut the file at batch boundary ``pos``; ``next_offset`` is the first offset removed."""
        os.ftruncate(self.fd, pos)
        self.written()
        self.size = pos
        self.next_offset = next_offset
        keep = bisect.bisect_left(self.index_positions, pos)
        del self.index_offsets[keep:]
        del self.index_positions[keep:]
        self.bytes_since_index = pos - (self.index_positions[-1] if keep else 0)
        self.index_written = min(self.index_written, keep)
        _write_index(self.index_path, b"", self.index_written * _INDEX_ENTRY.size)

    def sync(self) -> None:
        self.write_pending_index()
        self._handles.sync(self.log_path)
        self.dirty = False

    def close(self) -> None:
        """Release the descriptor (unsynced bytes stay unsynced: ``sync`` first to keep them).

        Later accesses fail with EBADF."""
        self._closed = True
        self._handles.close(self.log_path)

    def delete(self) -> None:
        self.close()
        self.log_path.unlink(missing_ok=True)
        self.index_path.unlink(missing_ok=True)

    def retire(self, *, keep_index: bool = False) -> None:
        """Rename to ``*.log.deleted`` (a free name of that form), to be removed later; reads
        through this object go on from the renamed file until then.  The ``.index`` file is
        removed, unless a new segment of the same base owns it (``keep_index``)."""
        self._handles.close(self.log_path)  # a new file may take the old path
        retired = self.log_path.with_name(self.log_path.name + DELETED_SUFFIX)
        number = 0
        while retired.exists():  # an earlier swap of this base is still awaiting removal
            number += 1
            retired = self.log_path.with_name(f"{self.log_path.name}.{number}{DELETED_SUFFIX}")
        self.log_path.rename(retired)
        self.log_path = retired
        if not keep_index:
            self.index_path.unlink(missing_ok=True)

    def info(self) -> SegmentInfo:
        largest = self.max_timestamp_ms if self.max_timestamp_ms >= 0 else self.modified_ms
        return SegmentInfo(self.base, self.next_offset, self.size, largest, self.first_timestamp_ms)


class FileLog(LogBase):
    """A ``PartitionLog`` on segment files in ``directory``; opening it runs recovery.

    Its segment files are opened through ``handles``, the storage's shared cache (a cache of
    its own, of ``_OWN_HANDLES`` files, when none is given).
    """

    def __init__(
        self,
        directory: Path,
        config: LogConfig | None = None,
        handles: FileHandles | None = None,
    ) -> None:
        self._dir = Path(directory)
        self._handles = handles if handles is not None else FileHandles(_OWN_HANDLES)
        self._config = config or LogConfig()
        check_config(self._config)
        self.name = self._dir.name
        self._policy = FlushPolicy(self._config)
        self._segments: list[_Segment] = []
        self._bases: list[int] = []
        self._start = 0
        self._end = 0
        self._closed = False
        self._retired: list[tuple[int, _Segment]] = []  # (mark, segment) awaiting removal
        self._retired_mark = 0  # segments retired over the log's life
        self._cleaned_offset: int | None = None  # set once the cleaner has run
        try:
            self._open()
        except BaseException:
            for seg in self._segments:
                seg.close()
            self._closed = True
            raise

    # -- PartitionLog -------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._start

    @property
    def log_end_offset(self) -> int:
        return self._end

    @property
    def directory(self) -> Path:
        return self._dir

    def append(self, batch: bytes | bytearray | memoryview, now_ms: int) -> BatchHeader:
        """Validate, assign the next offset, write; applies the message flush rule.

        A failed write is cut back off the file and raised as KafkaStorageError,
        leaving the log as it was.
        """
        return self._append(batch, now_ms, flush=True)

    def append_unflushed(self, batch: bytes | bytearray | memoryview, now_ms: int) -> BatchHeader:
        """``append``, with the message flush rule's fsync left to the caller (group commit:
        ``flush_due`` says whether the rule wants one, ``fsync_later`` does it)."""
        return self._append(batch, now_ms, flush=False)

    def _append(
        self, batch: bytes | bytearray | memoryview, now_ms: int, *, flush: bool
    ) -> BatchHeader:
        self._check_open()
        header = validate_batch(batch)._replace(base_offset=self._end)
        buf = assign_offset(batch, header.base_offset)
        seg = self._segments[-1]
        if seg.size > 0 and (
            should_roll(
                size=seg.size,
                first_timestamp_ms=seg.first_timestamp_ms,
                created_ms=seg.created_ms,
                batch=header,
                now_ms=now_ms,
                config=self._config,
                jitter_ms=seg.roll_jitter_ms,
            )
            or header.last_offset - seg.base > _MAX_RELATIVE_OFFSET
        ):
            seg = self._roll(now_ms)
        pos = seg.size
        try:
            fd = seg.fd
            seg.written()
            _write_all(fd, buf)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(seg.fd, pos)
            raise KafkaStorageError(f"{self.name}: append failed: {exc}") from exc
        seg.size = pos + header.size
        seg.record(header, pos, self._config.index_interval_bytes)
        seg.modified_ms = now_ms
        self._end = header.last_offset + 1
        if self._policy.record_append(header.records_count, now_ms) and flush:
            self.flush()
        return header

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one containing ``offset``, the first regardless of size, up
        to ``max_bytes`` and never past the end of the segment that holds the first one (as
        Kafka reads one segment per fetch); a segment with nothing at or after ``offset`` (the
        cleaner's gaps) passes the read on to the next.

        The index narrows the scan to at most ``index_interval_bytes`` of headers.
        """
        self._check_open()
        if offset < self._start or offset > self._end:
            raise out_of_range(offset, self._start, self._end)
        if offset == self._end:
            return b""
        first = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        for seg in self._segments[first:]:
            start_pos = end_pos = seg.index_lookup(offset)
            total = 0
            for pos, header in seg.headers(start_pos):
                if header.last_offset < offset:
                    start_pos = end_pos = pos + header.size
                    continue
                if total > 0 and total + header.size > max_bytes:
                    break
                total += header.size
                end_pos = pos + header.size
            if end_pos > start_pos:
                return _pread_exact(seg.fd, end_pos - start_pos, start_pos)
        return b""

    def batches(self, start_offset: int = 0) -> Iterator[tuple[BatchHeader, bytes]]:
        """Batches with last offset >= max(start_offset, log_start_offset), as of this call.

        Do not truncate or delete segments while iterating.
        """
        self._check_open()
        start = max(start_offset, self._start)
        if start >= self._end:
            return iter(())
        first = max(bisect.bisect_right(self._bases, start) - 1, 0)
        plan = [(seg, seg.size) for seg in self._segments[first:]]
        return self._iter_batches(plan, start)

    def flush(self) -> None:
        """fsync the active segment (older ones were synced when rolled)."""
        self._check_open()
        try:
            self._segments[-1].sync()
        except OSError as exc:
            raise KafkaStorageError(f"{self.name}: fsync failed: {exc}") from exc
        self._policy.reset()

    def fsync_later(self) -> Callable[[], None]:
        """A callable that makes every batch appended so far durable, to run on another thread
        while appends go on: it fsyncs a duplicate of the active segment's descriptor (older
        segments were synced when rolled), so a roll or a close meanwhile does not matter.
        An evicted active segment was fsynced when closed: the callable raises that fsync's
        error, if it failed."""
        self._check_open()
        seg = self._segments[-1]
        failed = self._handles.take_error(seg.log_path)
        if failed is not None:
            name = self.name

            def report() -> None:
                raise KafkaStorageError(f"{name}: fsync failed: {failed}") from failed

            return report
        fd = os.dup(seg.fd)

        def sync() -> None:
            try:
                os.fsync(fd)
            except OSError as exc:
                raise KafkaStorageError(f"{self.name}: fsync failed: {exc}") from exc
            finally:
                os.close(fd)

        return sync

    def truncate_to(self, offset: int) -> None:
        """Drop batches with base offset >= ``offset``, durably.

        Below the log start offset the whole log goes and restarts empty at
        ``offset`` (Kafka's truncateFullyAndStartAt).
        """
        if not self._truncates(offset, self._end):
            return
        full = offset < self._start
        removed = False
        while self._segments and (full or self._segments[-1].base >= offset):
            self._segments.pop().delete()
            self._bases.pop()
            removed = True
        if not self._segments:
            self._add_segment(offset)
        else:
            seg = self._segments[-1]
            cut_pos, cut_offset = seg.size, seg.next_offset
            for pos, header in seg.headers(seg.index_lookup(offset)):
                if header.base_offset >= offset:
                    cut_pos, cut_offset = pos, header.base_offset
                    break
            seg.truncate(cut_pos, cut_offset)
            seg.max_timestamp_ms = seg.first_timestamp_ms = -1
            for pos, header in seg.headers(0):
                if pos == 0:
                    seg.first_timestamp_ms = header.max_timestamp
                seg.max_timestamp_ms = max(seg.max_timestamp_ms, header.max_timestamp)
            seg.sync()
            if removed:
                fsync_dir(self._dir)
        self._end = self._segments[-1].next_offset
        self._policy.reset()
        if self._start > self._end:  # a full truncation, or a cut inside the straddling batch
            self._start = self._end
            self._write_start_checkpoint()

    def advance_start_offset(self, offset: int) -> None:
        """Persist a higher log start offset, then delete the segments wholly below it."""
        if not self._advances(offset, self._start, self._end):
            return
        self._start = offset
        self._write_start_checkpoint()
        self._delete_segments_below(offset)

    def segments(self) -> list[SegmentInfo]:
        self._check_open()
        return [seg.info() for seg in self._segments]

    @property
    def active_segment_base(self) -> int:
        return self._bases[-1]

    @property
    def snapshots(self) -> SnapshotStore | None:
        return FileSnapshots(self._dir)

    @property
    def cleaned_offset(self) -> int:
        return self._cleaned_offset or 0

    def replace_segments(self, contents: file_swap.Contents, cleaned_offset: int) -> None:
        """The cleaner's swap (``file_swap``), as Kafka's replaceSegments: only the cleaned
        segments change.  Each new segment keeps the old one's times and is walked header by
        header for its index (the cleaner wrote it whole); the old files are retired, to be
        removed by ``purge_deleted`` after ``file.delete.delay.ms``; the other segments, the
        active one included, are left as they are (no rescan)."""
        self._check_open()
        if not contents:  # nothing changed: only the checkpoint moves
            file_swap.write_checkpoint(self._dir, cleaned_offset)
            self._cleaned_offset = cleaned_offset
            return
        if max(contents) >= self._segments[-1].base:
            raise ValueError("the active segment cannot be replaced")
        old = {seg.base: seg for seg in self._segments}
        mtimes = {base: old[base].modified_ms for base in contents}
        replaced, removed = file_swap.stage_and_commit(
            self._dir, contents, self._segments[0].base, cleaned_offset, mtimes
        )
        for base in replaced:
            self._retire(old[base], keep_index=True)
            file_swap.install(self._dir, base)
            new = _Segment(self._dir, base, self._handles, create=False)
            new.created_ms, new.modified_ms = old[base].created_ms, old[base].modified_ms
            self._scan(new, verify_crc=False, gaps=True)
            new.rewrite_index()
            self._segments[self._bases.index(base)] = new
        for base in removed:
            self._retire(old[base])
            number = self._bases.index(base)
            del self._segments[number], self._bases[number]
        file_swap.complete(self._dir, cleaned_offset)
        self._cleaned_offset = cleaned_offset

    @property
    def retired_mark(self) -> int:
        """How many segments were retired so far (``purge_deleted``'s ``through``)."""
        return self._retired_mark

    def purge_deleted(self, through: int | None = None) -> int:
        """Remove the files of retired segments (those among the first ``through`` retired,
        or all); bytes freed.  Reads of a removed segment fail with EBADF."""
        freed = 0
        keep: list[tuple[int, _Segment]] = []
        for mark, seg in self._retired:
            if through is not None and mark > through:
                keep.append((mark, seg))
                continue
            seg.close()
            with contextlib.suppress(FileNotFoundError):
                freed += seg.log_path.stat().st_size
                seg.log_path.unlink()
        self._retired = keep
        return freed

    def close(self, *, flush: bool = True) -> None:
        """Flush (unless the log is being deleted) and release the files.

        Later calls raise ClosedError; closing twice is harmless.
        """
        if self._closed:
            return
        try:
            if flush:
                self.flush()
        finally:
            self._closed = True
            for seg in self._segments:
                seg.close()
            for _mark, seg in self._retired:
                seg.close()

    # -- internals ---------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError(f"log {self.name} is closed")

    def _iter_batches(
        self, plan: list[tuple[_Segment, int]], start: int
    ) -> Iterator[tuple[BatchHeader, bytes]]:
        for number, (seg, end) in enumerate(plan):
            first_pos = seg.index_lookup(start) if number == 0 else 0
            for pos, header, window in _walk(seg, first_pos, end, _DATA_CHUNK):
                if header.last_offset < start:
                    continue
                got = window.get(pos, header.size)
                if got is None:
                    raise KafkaStorageError(f"{seg.log_path}: truncated batch at {pos}")
                buf, rel = got
                yield header, buf[rel : rel + header.size]

    def _add_segment(self, base: int, now_ms: int | None = None) -> _Segment:
        seg = _Segment(self._dir, base, self._handles, create=True)
        seg.roll_jitter_ms = roll_jitter_ms(self._config)
        if now_ms is not None:
            seg.created_ms = seg.modified_ms = now_ms
        self._segments.append(seg)
        self._bases.append(base)
        fsync_dir(self._dir)
        return seg

    def _roll(self, now_ms: int | None = None) -> _Segment:
        """Start a segment at the log end, syncing the old one first so only the last can tear."""
        old = self._segments[-1]
        if old.dirty:
            old.sync()
            self._policy.reset()
        else:
            old.write_pending_index()
        return self._add_segment(self._end, now_ms if now_ms is not None else old.modified_ms)

    def _delete_segments_below(self, offset: int) -> None:
        """Retire segments wholly below ``offset`` (rolling first if that is all of them)."""
        segs = self._segments
        if segs[-1].size > 0 and segs[-1].next_offset <= offset:
            self._roll()
        deleted = False
        while len(segs) > 1 and segs[1].base <= offset:
            self._retire(segs.pop(0))
            self._bases.pop(0)
            deleted = True
        if deleted:
            fsync_dir(self._dir)

    def _retire(self, seg: _Segment, *, keep_index: bool = False) -> None:
        seg.retire(keep_index=keep_index)
        self._retired_mark += 1
        self._retired.append((self._retired_mark, seg))

    def _write_start_checkpoint(self) -> None:
        path = self._dir / START_OFFSET_FILE
        tmp = path.with_name(path.name + _TMP_SUFFIX)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(fd, f"{self._start}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        tmp.replace(path)
        fsync_dir(self._dir)

    def _read_start_checkpoint(self) -> int | None:
        path = self._dir / START_OFFSET_FILE
        try:
            text = path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            return None
        try:
            return int(text)
        except ValueError:
            logger.warning("%s: ignoring unreadable %s: %r", self.name, START_OFFSET_FILE, text)
            return None

    def _open(self) -> None:
        """Find the segments, recover them, and restore the start offset."""
        created = not self._dir.exists()
        self._dir.mkdir(parents=True, exist_ok=True)
        if created:
            fsync_dir(self._dir.parent)
        for tmp in self._dir.glob(f"*{_TMP_SUFFIX}"):
            tmp.unlink()
        for leftover in self._dir.glob(f"*{DELETED_SUFFIX}"):
            leftover.unlink()
        file_swap.finish(self._dir)
        self._cleaned_offset = file_swap.read_checkpoint(self._dir)
        bases = sorted(
            int(path.stem)
            for path in self._dir.glob(f"*{LOG_SUFFIX}")
            if _SEGMENT_NAME.fullmatch(path.stem)
        )
        live = {f"{base:020d}" for base in bases}
        for index in self._dir.glob(f"*{INDEX_SUFFIX}"):
            if index.stem not in live:
                index.unlink()
        checkpoint = self._read_start_checkpoint()
        if not bases:
            self._add_segment(checkpoint or 0)
        for base in bases:
            self._segments.append(_Segment(self._dir, base, self._handles, create=False))
            self._bases.append(base)
        if bases:
            self._recover()
        self._segments[-1].roll_jitter_ms = roll_jitter_ms(self._config)
        self._end = self._segments[-1].next_offset
        self._start = min(max(checkpoint or 0, self._segments[0].base), self._end)
        if checkpoint is not None and self._start < checkpoint:
            self._write_start_checkpoint()
        self._delete_segments_below(self._start)
        self.purge_deleted()

    def _recover(self) -> None:
        """Scan every segment; cut at the first bad batch and drop everything after it."""
        segs = self._segments
        # Compaction leaves gaps between batches and may empty the first segment.
        gaps = self._cleaned_offset is not None
        # An empty segment that is not the last holds nothing and would break contiguity.
        for number in range(len(segs) - 2, -1 if not gaps else 0, -1):
            if segs[number].size == 0:
                logger.warning(
                    "%s: removing empty segment %s", self.name, segs[number].log_path.name
                )
                segs.pop(number).delete()
                self._bases.pop(number)
        expected = segs[0].base
        number = 0
        while number < len(segs):
            seg = segs[number]
            is_last = number == len(segs) - 1
            if seg.base != expected and not (gaps and seg.base > expected):
                self._drop_from(
                    number, f"segment base {seg.base} does not follow offset {expected}"
                )
                break
            if not self._scan(seg, verify_crc=is_last, gaps=gaps):
                self._drop_from(number + 1, "it follows a damaged segment")
                break
            expected = seg.next_offset
            number += 1
        if not segs[-1].crc_checked:  # the last segment changed: it may be the torn one
            self._scan(segs[-1], verify_crc=True, gaps=gaps)
        for seg in segs:
            seg.rewrite_index()

    def _drop_from(self, number: int, reason: str) -> None:
        dropped = self._segments[number:]
        if not dropped:
            return
        del self._segments[number:], self._bases[number:]
        for seg in dropped:
            logger.warning(
                "%s: deleting segment %s (%d bytes) during recovery: %s",
                self.name,
                seg.log_path.name,
                seg.size,
                reason,
            )
            seg.delete()
        fsync_dir(self._dir)

    def _scan(self, seg: _Segment, *, verify_crc: bool, gaps: bool = False) -> bool:
        """Rebuild ``seg``'s index from its batches; truncate at the first bad one.

        Returns True if the whole file was intact.
        """
        seg.reset_index()
        window = _Window(seg, seg.size, _DATA_CHUNK if verify_crc else _HEADER_CHUNK)
        interval = self._config.index_interval_bytes
        pos = 0
        expected = seg.base
        problem: str | None = None
        while pos < seg.size:
            got = window.get(pos, HEADER_SIZE)
            if got is None:
                problem = "torn batch header"
                break
            try:
                header = parse_header(got[0], got[1])
            except BatchFormatError as exc:
                problem = f"bad batch header: {exc}"
                break
            if header.base_offset != expected and not (gaps and header.base_offset > expected):
                problem = f"batch base offset {header.base_offset}, expected {expected}"
                break
            if pos + header.size > seg.size:
                problem = f"torn batch ({header.size} bytes, {seg.size - pos} present)"
                break
            if verify_crc:
                got = window.get(pos, header.size)
                if got is None or not crc_ok(got[0], got[1], header):
                    problem = "CRC32C mismatch"
                    break
            seg.record(header, pos, interval)
            pos += header.size
            expected = header.last_offset + 1
        seg.crc_checked = verify_crc
        if problem is None:
            return True
        logger.warning(
            "%s: recovery truncating %s at position %d, dropping %d bytes: %s",
            self.name,
            seg.log_path.name,
            pos,
            seg.size - pos,
            problem,
        )
        seg.truncate(pos, expected)
        os.fsync(seg.fd)
        return False


class FileStorage(StorageBase[FileLog]):
    """A ``Storage`` of FileLogs, one directory per partition under ``root_dir``."""

    def __init__(
        self,
        root_dir: Path,
        default_config: LogConfig | None = None,
        *,
        open_files: int | None = None,
    ) -> None:
        """``open_files``: most segment files open at once (``handles.default_capacity()``,
        half the open-file limit, when None)."""
        self._root = Path(root_dir)
        self._root.mkdir(parents=True, exist_ok=True)
        super().__init__(default_config)
        self.handles = FileHandles(open_files if open_files is not None else default_capacity())

    @property
    def root_dir(self) -> Path:
        return self._root

    def _new_log(self, topic: str, partition: int, config: LogConfig) -> FileLog:
        return FileLog(self._root / f"{topic}-{partition}", config, self.handles)

    def list_logs(self) -> list[tuple[str, int]]:
        found = []
        for path in self._root.iterdir():
            match = _PARTITION_DIR.fullmatch(path.name)
            if match and path.is_dir():
                found.append((match.group(1), int(match.group(2))))
        return sorted(found)

    def delete_log(self, topic: str, partition: int) -> None:
        """Close (without flushing: the data is going) and remove the partition directory."""
        check_partition(topic, partition)
        log = self._open.pop((topic, partition), None)
        if log is not None and not log.closed:
            log.close(flush=False)
        path = self._root / f"{topic}-{partition}"
        if path.exists():
            shutil.rmtree(path)
            fsync_dir(self._root)

    def close(self) -> None:
        logs = list(self._open.values())
        self._open.clear()
        for log in logs:
            log.close()
        self.handles.close_all()
