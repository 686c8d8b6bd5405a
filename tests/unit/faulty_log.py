"""A PartitionLog wrapper for storage fault injection, shared by the coordinator test benches."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coordinator.log.memory_log import MemoryLog
from txn.batch import BatchHeader


class FaultyLog:
    """A PartitionLog wrapper that raises on chosen appends or flushes (the fault injector).

    Everything else is the wrapped log's own.
    """

    def __init__(self, inner: MemoryLog) -> None:
        self.inner = inner
        self.failures: list[Exception] = []  # the next appends raise these, in order
        self.flush_failures: list[Exception] = []  # the next flushes raise these, in order
        self.on_append: Callable[[], None] | None = None  # runs once, inside the next append

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def fail_next(self, exc: Exception, times: int = 1) -> None:
        self.failures.extend([exc] * times)

    def append(self, batch: bytes | bytearray | memoryview, now_ms: int) -> BatchHeader:
        if self.on_append is not None:
            hook, self.on_append = self.on_append, None
            hook()
        if self.failures:
            raise self.failures.pop(0)
        return self.inner.append(batch, now_ms)

    def flush(self) -> None:
        if self.flush_failures:
            raise self.flush_failures.pop(0)
        self.inner.flush()
