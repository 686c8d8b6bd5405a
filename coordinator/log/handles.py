"""Segment files opened on demand through one bounded cache of descriptors.

A broker with 10,000 partitions has at least 10,000 segments, more than a usual open-file
limit (``ulimit -n`` 1024 or 4096).  So no segment keeps its descriptor: each access asks
``FileHandles`` for it, which opens the file if needed and, once ``capacity`` descriptors are
open, closes the least recently used one first.  Every log of a storage shares one cache.

* **In use is never closed.**  A descriptor is valid until the next ``fd`` call that opens a
  file, and callers use it before asking for another file: a read or a write asks again at
  each system call (an iterator over a segment asks at each refill of its buffer), so an
  eviction in between costs a reopen, never a read of the wrong file.
* **fsync survives eviction.**  A writer marks its file dirty (``written``); evicting a dirty
  file fsyncs it before closing.  ``sync`` fsyncs the open descriptor if dirty, and raises an
  fsync error met at eviction (once), so a flush never reports as durable bytes whose fsync
  failed through a descriptor since closed.
* **Out of descriptors.**  An open failing with EMFILE/ENFILE closes the least recently used
  file and tries again, until nothing is left to close.

Nothing here reads the clock or starts threads; it runs on the caller's thread.
"""

from __future__ import annotations

import errno
import os
import resource
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

#: The capacity when the open-file limit is unlimited or unknown.
_UNLIMITED_CAPACITY = 65_536
#: The least capacity derived from the open-file limit.
MIN_CAPACITY = 16


def default_capacity() -> int:
    """Half the process's soft open-file limit: the rest is for connections and the rest."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return _UNLIMITED_CAPACITY
    return max(int(soft) // 2, MIN_CAPACITY)


@dataclass(slots=True)
class _Entry:
    fd: int
    dirty: bool = False


class FileHandles:
    """A least-recently-used cache of open descriptors, keyed by path."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"a file handle cache holds at least 1 file, not {capacity}")
        self.capacity = capacity
        self._open: OrderedDict[Path, _Entry] = OrderedDict()
        self._errors: dict[Path, OSError] = {}
        self.opens = 0  # files opened (a miss), over the cache's life
        self.evictions = 0  # files closed to make room

    def __len__(self) -> int:
        return len(self._open)

    def is_open(self, path: Path) -> bool:
        return path in self._open

    def fd(self, path: Path, flags: int) -> int:
        """The descriptor of ``path``, opened with ``flags`` if it is not open.

        Valid until the next call that may open a file.
        """
        entry = self._open.get(path)
        if entry is not None:
            self._open.move_to_end(path)
            return entry.fd
        while len(self._open) >= self.capacity and self._evict_one():
            pass
        while True:
            try:
                fd = os.open(path, flags, 0o644)
                break
            except OSError as exc:
                if exc.errno not in (errno.EMFILE, errno.ENFILE) or not self._evict_one():
                    raise
        self._open[path] = _Entry(fd)
        self.opens += 1
        return fd

    def written(self, path: Path) -> None:
        """Bytes were written to ``path`` (open): fsync it before it is closed."""
        entry = self._open.get(path)
        if entry is not None:
            entry.dirty = True

    def sync(self, path: Path) -> None:
        """fsync ``path``'s written bytes, wherever they were written through.

        Raises the error of an fsync made when the file was evicted, once.
        """
        failed = self.take_error(path)
        if failed is not None:
            raise failed
        entry = self._open.get(path)
        if entry is not None:  # a closed file was fsynced when evicted, if it was written
            os.fsync(entry.fd)
            entry.dirty = False

    def take_error(self, path: Path) -> OSError | None:
        """The error of an fsync made when ``path`` was evicted (reported once), if any."""
        return self._errors.pop(path, None)

    def close(self, path: Path) -> None:
        """Close ``path`` if open, without fsync (its owner synced it, or drops the bytes)."""
        self._errors.pop(path, None)
        entry = self._open.pop(path, None)
        if entry is not None:
            os.close(entry.fd)

    def close_all(self) -> None:
        for path in list(self._open):
            self.close(path)

    def _evict_one(self) -> bool:
        """Close the least recently used file; False if none is open."""
        if not self._open:
            return False
        path, entry = self._open.popitem(last=False)
        self.evictions += 1
        try:
            if entry.dirty:
                os.fsync(entry.fd)
        except OSError as exc:
            self._errors[path] = exc
        finally:
            os.close(entry.fd)
        return True
