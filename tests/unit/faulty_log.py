"""A PartitionLog wrapper for storage fault injection, shared by the coordinator test benches."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from coordinator.log.memory_log import MemoryLog
from txn.batch import BatchHeader


class FaultyLog:
    """A PartitionLog wrapper that raises on chosen appends or flushes (the fault injector)."""

    def __init__(self, inner: MemoryLog) -> None:
        self.inner = inner
        self.failures: list[Exception] = []  # the next appends raise these, in order
        self.flush_failures: list[Exception] = []  # the next flushes raise these, in order
        self.on_append: Callable[[], None] | None = None  # runs once, inside the next append

    def fail_next(self, exc: Exception, times: int = 1) -> None:
        self.failures.extend([exc] * times)

    @property
    def log_start_offset(self) -> int:
        return self.inner.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.inner.log_end_offset

    def append(self, batch: bytes | bytearray | memoryview, now_ms: int) -> BatchHeader:
        if self.on_append is not None:
            hook, self.on_append = self.on_append, None
            hook()
        if self.failures:
            raise self.failures.pop(0)
        return self.inner.append(batch, now_ms)

    def read(self, offset: int, max_bytes: int) -> bytes:
        return self.inner.read(offset, max_bytes)

    def batches(self, start_offset: int = 0) -> Iterator[tuple[BatchHeader, bytes]]:
        return self.inner.batches(start_offset)

    def flush(self) -> None:
        if self.flush_failures:
            raise self.flush_failures.pop(0)
        self.inner.flush()

    def maybe_flush(self, now_ms: int) -> None:
        self.inner.maybe_flush(now_ms)

    def truncate_to(self, offset: int) -> None:
        self.inner.truncate_to(offset)

    def advance_start_offset(self, offset: int) -> None:
        self.inner.advance_start_offset(offset)

    def close(self) -> None:
        self.inner.close()
