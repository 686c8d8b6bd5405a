"""Where a partition's producer-state snapshots are kept (Kafka's ``<offset>.snapshot``).

A snapshot is the producer state as of an offset (every batch below it applied): the
partition writes one when its log rolls a segment (at the new segment's base), when the
broker stops and after loading (at the log end), as Kafka's ``ProducerStateManager`` does.
On load the newest snapshot within the log is read and only the batches from its offset on
are replayed into it, so a producer whose batches retention removed is still known until
``producer.id.expiration.ms`` (``coordinator.producer_state`` encodes and checks the bytes).

``FileSnapshots`` keeps them as files in the log's directory: written to a temporary file,
fsynced, renamed and the directory fsynced, so a crash leaves the old snapshot or the new
one; a file larger than ``MAX_SNAPSHOT_BYTES`` is refused unread.  ``MemorySnapshots``
keeps them in memory (the memory storage, tests).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Protocol

from txn.durable_fs import fsync_dir

SNAPSHOT_SUFFIX = ".snapshot"
#: The largest snapshot read back (about 1.4 million producers): a larger file is refused.
MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
_NAME = re.compile(r"[0-9]{20}")


class SnapshotTooLargeError(OSError):
    """A snapshot file over ``MAX_SNAPSHOT_BYTES`` (not read)."""


class SnapshotStore(Protocol):
    def offsets(self) -> list[int]:
        """The offsets of the snapshots kept, ascending."""
        ...

    def read(self, offset: int) -> bytes:
        """The bytes of one snapshot; OSError if unreadable or too large."""
        ...

    def write(self, offset: int, data: bytes) -> None:
        """Keep ``data`` as the snapshot at ``offset``, durably (replacing one there)."""
        ...

    def delete(self, offset: int) -> None: ...


class MemorySnapshots:
    def __init__(self) -> None:
        self.files: dict[int, bytes] = {}

    def offsets(self) -> list[int]:
        return sorted(self.files)

    def read(self, offset: int) -> bytes:
        data = self.files.get(offset)
        if data is None:
            raise FileNotFoundError(offset)
        if len(data) > MAX_SNAPSHOT_BYTES:
            raise SnapshotTooLargeError(f"snapshot at {offset}: {len(data)} bytes")
        return data

    def write(self, offset: int, data: bytes) -> None:
        self.files[offset] = bytes(data)

    def delete(self, offset: int) -> None:
        self.files.pop(offset, None)


class FileSnapshots:
    def __init__(self, directory: Path) -> None:
        self._dir = directory

    def _path(self, offset: int) -> Path:
        return self._dir / f"{offset:020d}{SNAPSHOT_SUFFIX}"

    def offsets(self) -> list[int]:
        return sorted(
            int(path.stem)
            for path in self._dir.glob(f"*{SNAPSHOT_SUFFIX}")
            if _NAME.fullmatch(path.stem)
        )

    def read(self, offset: int) -> bytes:
        fd = os.open(self._path(offset), os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            if size > MAX_SNAPSHOT_BYTES:
                raise SnapshotTooLargeError(f"{self._path(offset)}: {size} bytes")
            chunks: list[bytes] = []
            left = size
            while left > 0 and (chunk := os.read(fd, left)):
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def write(self, offset: int, data: bytes) -> None:
        path = self._path(offset)
        tmp = path.with_name(path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        tmp.replace(path)
        fsync_dir(self._dir)

    def delete(self, offset: int) -> None:
        self._path(offset).unlink(missing_ok=True)
