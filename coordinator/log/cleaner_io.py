"""What a cleaner pass reads, and how: its planned segments through a bounded read buffer.

Kafka's cleaner reads a segment through a read buffer (``log.cleaner.io.buffer.size``, split
between its read and write buffers and its threads): the batches wholly in the buffer are
taken, the read goes on after the last of them.  A batch larger than the buffer grows it
(Kafka's ``growBuffersOrFail``): doubled up to the larger of the topic's
``max.message.bytes`` and the broker's ``message.max.bytes``; at that bound, to the batch's
own size (one written before the bound was lowered); a batch running past the segment's end
is corrupt.  After each segment the buffer is back to its first size (``restoreBuffers``).
A pass's memory is so bounded by the buffer and the largest batch, whatever the segments'
sizes.

The kept batches of a segment go out through a write buffer of the read buffer's size (as
Kafka's, grown with it): a file log's to the segment's staged file (``file_swap.staged``,
flushed whenever the buffer fills; the swap fsyncs and installs it), so a pass holds no
segment whole, read or written.

``FileRange`` names the files of a file log's planned segments (sent to the cleaner worker,
which reads them itself); ``MemoryRange`` holds a memory log's batches (already in memory)
and keeps its output in memory.  Both give the batches segment by segment, as often as the
pass asks (the offset map, then the copy).  ``ReadBuffer.on_size`` is told each size the
buffer takes (tests measure the peak with it).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from coordinator.log.file_swap import Staged, staged
from txn.batch import LOG_OVERHEAD, BatchHeader, parse_header

_LENGTH = struct.Struct(">i")  # the batch length, after the base offset
#: A segment's batches, read as the pass goes (closed early: its file is closed).
Batches = Generator[tuple[BatchHeader, bytes], None, None]


class CorruptSegmentError(ValueError):
    """A batch that runs past its segment's end, or a length that cannot be one."""


class ReadBuffer:
    """The cleaner's read buffer: its size now, grown for a large batch, restored after each
    segment."""

    def __init__(
        self,
        initial_bytes: int,
        max_bytes: int,
        on_size: Callable[[int], None] | None = None,
    ) -> None:
        self.initial = max(initial_bytes, LOG_OVERHEAD)
        self.max_bytes = max_bytes
        self.on_size = on_size
        self.size = 0
        self._resize(self.initial)

    def _resize(self, size: int) -> None:
        self.size = size
        if self.on_size is not None:
            self.on_size(size)

    def grow(self, batch_bytes: int, where: str) -> None:
        """Make room for a batch of ``batch_bytes`` (larger than the buffer), as Kafka does."""
        if self.size >= self.max_bytes:
            if batch_bytes <= self.size:
                raise CorruptSegmentError(f"batch of {batch_bytes} bytes not read in {where}")
            self._resize(batch_bytes)
            return
        self._resize(min(self.size * 2, self.max_bytes))

    def restore(self) -> None:
        if self.size != self.initial:
            self._resize(self.initial)


class SegmentWriter(Protocol):
    def write(self, raw: bytes) -> None: ...

    def finish(self, keep: bool) -> list[bytes] | Staged | None:
        """The segment's output if ``keep`` (None otherwise: anything written is dropped)."""
        ...


class MemoryWriter:
    def __init__(self) -> None:
        self.batches: list[bytes] = []

    def write(self, raw: bytes) -> None:
        self.batches.append(raw)

    def finish(self, keep: bool) -> list[bytes] | Staged | None:
        return self.batches if keep else None


class StagedWriter:
    """Writes a segment's kept batches to its staged file through a write buffer of the read
    buffer's current size (the file is created on the first flush)."""

    def __init__(self, path: Path, buffer: ReadBuffer) -> None:
        self._path = path
        self._buffer = buffer
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._fd: int | None = None
        self._written = 0

    def write(self, raw: bytes) -> None:
        self._pending.append(raw)
        self._pending_bytes += len(raw)
        if self._pending_bytes >= self._buffer.size:
            self._flush()

    def _flush(self) -> None:
        if self._fd is None:
            self._fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for raw in self._pending:
            view = memoryview(raw)
            while view:
                view = view[os.write(self._fd, view) :]
        self._written += self._pending_bytes
        self._pending.clear()
        self._pending_bytes = 0

    def finish(self, keep: bool) -> list[bytes] | Staged | None:
        try:
            if keep:
                self._flush()
        finally:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
        if not keep:
            self._path.unlink(missing_ok=True)
            return None
        return Staged(str(self._path), self._written)


@dataclass(frozen=True, slots=True)
class SegmentFile:
    path: str
    base_offset: int
    size_bytes: int  # as planned: the read stops there


@dataclass(frozen=True, slots=True)
class FileRange:
    """The planned segments of a file log, read from their files; the batches wholly below
    the log start offset are left out, as the log's own reads leave them out."""

    segments: tuple[SegmentFile, ...]
    log_start: int = 0

    def writer(self, index: int, buffer: ReadBuffer) -> SegmentWriter:
        seg = self.segments[index]
        return StagedWriter(staged(Path(seg.path).parent, seg.base_offset), buffer)

    def batches(self, index: int, buffer: ReadBuffer) -> Batches:
        seg = self.segments[index]
        fd = os.open(seg.path, os.O_RDONLY)
        try:
            for header, raw in _read_segment(fd, seg, buffer):
                if header.last_offset >= self.log_start:
                    yield header, raw
        finally:
            os.close(fd)
            buffer.restore()


def _read_segment(
    fd: int, seg: SegmentFile, buffer: ReadBuffer
) -> Iterator[tuple[BatchHeader, bytes]]:
    position = 0
    while position < seg.size_bytes:
        chunk = os.pread(fd, min(buffer.size, seg.size_bytes - position), position)
        if not chunk:
            raise CorruptSegmentError(f"{seg.path} ends at {position}, planned {seg.size_bytes}")
        taken = 0
        view = memoryview(chunk)
        while len(chunk) - taken >= LOG_OVERHEAD:
            size = LOG_OVERHEAD + _LENGTH.unpack_from(chunk, taken + 8)[0]
            if size <= LOG_OVERHEAD:
                raise CorruptSegmentError(f"{seg.path}: bad batch length at {position + taken}")
            if taken + size > len(chunk):
                break
            raw = bytes(view[taken : taken + size])
            yield parse_header(raw), raw
            taken += size
        if taken == 0:
            if len(chunk) < LOG_OVERHEAD:
                raise CorruptSegmentError(f"{seg.path}: a partial batch at {position}")
            size = LOG_OVERHEAD + _LENGTH.unpack_from(chunk, 8)[0]
            if size > seg.size_bytes - position:
                raise CorruptSegmentError(
                    f"{seg.path}: batch of {size} bytes at {position} runs past the segment"
                )
            buffer.grow(size, f"{seg.path} at {position}")
        position += taken


@dataclass(frozen=True, slots=True)
class MemoryRange:
    """The planned segments of a memory log: their batches, by segment."""

    segments: tuple[tuple[tuple[BatchHeader, bytes], ...], ...]

    def writer(self, index: int, buffer: ReadBuffer) -> SegmentWriter:
        del index, buffer
        return MemoryWriter()

    def batches(self, index: int, buffer: ReadBuffer) -> Batches:
        del buffer  # in memory already
        yield from self.segments[index]


def memory_range(bases: Sequence[int], batches: Sequence[tuple[BatchHeader, bytes]]) -> MemoryRange:
    """``batches`` (of the planned range, in order) split by the segments starting at
    ``bases``."""
    groups: list[list[tuple[BatchHeader, bytes]]] = [[] for _ in bases]
    number = 0
    for header, raw in batches:
        while number + 1 < len(bases) and header.base_offset >= bases[number + 1]:
            number += 1
        groups[number].append((header, raw))
    return MemoryRange(tuple(tuple(group) for group in groups))


CleanRange = FileRange | MemoryRange
