"""Group commit: one fsync per log covers every append that asked for one meanwhile.

The Produce path appends on the event loop without the flush policy's inline fsync
(``FileLog.append_unflushed``) and asks ``GroupCommit.request`` for durability.  A round
takes every log asked for since the previous round began, snapshots each (``fsync_later``:
a duplicate of the active segment's descriptor, so appends go on meanwhile) and runs the
fsyncs off the loop, one per log; the requests that arrived while it ran, from any
connection and for any partition, share the next round.  Each request is answered once a
round that began after its append has finished, so an acknowledged batch was fsynced
exactly as with the inline flush; only the waiting moved off the event loop.

A log that cannot sync later (the memory log of tests) is flushed at once instead.

``others_waiting`` (the server's count of requests being handled, against the requests the
round answers) lets a round run its fsyncs on the event loop itself when nothing else could
overlap them, or when fsyncs are fast (a moving average under ``INLINE_BELOW_S``): handing
them to a thread costs two thread switches and two GIL hand-overs per round, which on a
loaded machine are scheduling delays of milliseconds, more than a fast fsync blocks the
loop.  Requests that become ready meanwhile still share the next round.  The Produce
handler asks ``fast()`` first and, while fsyncs are fast, fsyncs at once (``sync_now``)
without a round at all.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Protocol, runtime_checkable


class Flushable(Protocol):
    """A log the group commit makes durable (any ``PartitionLog``)."""

    def flush(self) -> None: ...


@runtime_checkable
class DeferredSync(Protocol):
    """A log whose fsync can run on another thread while appends go on (``FileLog``)."""

    @property
    def unflushed_messages(self) -> int: ...

    @property
    def closed(self) -> bool: ...

    def fsync_later(self) -> Callable[[], None]: ...

    def synced(self, messages: int) -> None: ...


#: The outcome of one round: the logs whose fsync failed, with the error.
Failures = dict[Flushable | DeferredSync, BaseException]
#: Runs a round's fsyncs off the event loop (a worker thread by default).
Runner = Callable[[Callable[[], Failures]], Awaitable[Failures]]


#: fsyncs faster than this on average (seconds) run on the event loop even when other
#: requests wait: cheaper than the thread switches
INLINE_BELOW_S = 0.002


async def _in_thread(work: Callable[[], Failures]) -> Failures:
    return await asyncio.get_running_loop().run_in_executor(None, work)


class GroupCommit:
    """Rounds of fsyncs for the logs that asked; at most one round runs at a time."""

    def __init__(
        self, runner: Runner | None = None, others_waiting: Callable[[int], bool] | None = None
    ) -> None:
        self._runner: Runner = runner or _in_thread
        #: given the requests a round answers: whether other requests are being handled
        self.others_waiting = others_waiting
        self._waiters = 0  # requests waiting for the next round
        self.fsync_s = 0.0  # moving average of one round's fsyncs, in seconds
        self._pending: dict[int, DeferredSync] = {}  # id(log) -> log, for the next round
        self._next: asyncio.Future[Failures] | None = None
        self._task: asyncio.Task[None] | None = None
        #: rounds run and fsyncs issued (one per log per round), for tests and metrics
        self.rounds = 0
        self.fsyncs = 0

    def request(self, logs: Iterable[Flushable | DeferredSync]) -> asyncio.Future[Failures]:
        """A future that resolves, with the logs that failed, once every log in ``logs`` was
        fsynced by a round that began after this call (a failed log: KafkaStorageError)."""
        loop = asyncio.get_running_loop()
        if self._next is None:
            self._next = loop.create_future()
        future = self._next
        self._waiters += 1
        failed: Failures = {}
        for log in logs:
            if not isinstance(log, DeferredSync):
                try:
                    log.flush()
                except Exception as exc:  # reported like a failed round
                    failed[log] = exc
                continue
            self._pending[id(log)] = log
        if not self._pending:
            self._next = None
            self._waiters = 0
            done: asyncio.Future[Failures] = loop.create_future()
            done.set_result(failed)
            return done
        if failed:
            return _merged(loop, future, failed)
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._rounds())
        return future

    def fast(self) -> bool:
        """True while fsyncs are fast enough to do at once, on the event loop (the server's
        choice: ``others_waiting`` set)."""
        return self.others_waiting is not None and self.fsync_s < INLINE_BELOW_S

    def sync_now(self, logs: Iterable[Flushable]) -> Failures:
        """fsync ``logs`` at once on this thread (each log's own ``flush``); the failures."""
        failed: Failures = {}
        began = time.perf_counter()
        for log in logs:
            self.fsyncs += 1
            try:
                log.flush()
            except Exception as exc:
                failed[log] = exc
        self.fsync_s += (time.perf_counter() - began - self.fsync_s) / 8
        return failed

    async def _rounds(self) -> None:
        while self._pending:
            logs, self._pending = list(self._pending.values()), {}
            future, self._next = self._next, None
            waiters, self._waiters = self._waiters, 0
            assert future is not None
            failed: Failures = {}
            syncs: list[tuple[DeferredSync, int, Callable[[], None]]] = []
            for target in logs:
                try:
                    syncs.append((target, target.unflushed_messages, target.fsync_later()))
                except Exception as exc:  # closed (deleted) meanwhile
                    failed[target] = exc
            self.rounds += 1
            self.fsyncs += len(syncs)

            def work(syncs: list[tuple[DeferredSync, int, Callable[[], None]]] = syncs) -> Failures:
                errors: Failures = {}
                began = time.perf_counter()
                for target, _count, sync in syncs:
                    try:
                        sync()
                    except Exception as exc:
                        errors[target] = exc
                self.fsync_s += (time.perf_counter() - began - self.fsync_s) / 8
                return errors

            try:
                if self.others_waiting is not None and (
                    self.fsync_s < INLINE_BELOW_S or not self.others_waiting(waiters)
                ):
                    failed.update(work())  # nothing to overlap: no thread switches
                else:
                    failed.update(await self._runner(work))
            except Exception as exc:
                failed.update({log: exc for log in logs})
            for target, count, _sync in syncs:
                if target not in failed and not target.closed:
                    target.synced(count)
            if not future.done():
                future.set_result(failed)


def _merged(
    loop: asyncio.AbstractEventLoop, future: asyncio.Future[Failures], failed: Failures
) -> asyncio.Future[Failures]:
    """``future``'s failures plus ``failed`` (logs flushed at once that failed)."""
    merged: asyncio.Future[Failures] = loop.create_future()

    def done(f: asyncio.Future[Failures]) -> None:
        if not merged.done():
            merged.set_result({**(f.result() if not f.cancelled() else {}), **failed})

    future.add_done_callback(done)
    return merged
