"""The simulator's one event loop: virtual time and a heap of callbacks, single-threaded.

Everything that happens in a simulation -- a message arriving, a client waking up, a broker
timer (lock expiry, transaction timeout, marker delivery), a fault starting or ending -- is
an event on this loop, ordered by (due time, creation sequence).  Time jumps straight to the
next event, so a run of hours of virtual time takes as long as the work it contains.

The broker core gets a ``Clock`` per incarnation (``IncarnationClock``): when the simulated
broker crashes, every timer of the dead incarnation is cancelled at once, and a callback of
a dead incarnation never runs.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(slots=True)
class _Event:
    due_ms: int
    callback: Callable[[], None]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


_heappush = heapq.heappush


class SimLoop:
    """Virtual time and the event heap."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self.start_ms = start_ms
        self._heap: list[tuple[int, int, _Event]] = []
        self._seq = itertools.count()
        self.events_run = 0

    def now_ms(self) -> int:
        return self._now

    # (``max`` is spelled out as comparisons below: these run for every event, and a builtin
    # call costs more than the rest of the line.)

    def at(self, due_ms: int, callback: Callable[[], None]) -> _Event:
        now = self._now
        due = due_ms if due_ms > now else now
        event = _Event(due, callback)
        _heappush(self._heap, (due, next(self._seq), event))
        return event

    def after(self, delay_ms: int, callback: Callable[[], None]) -> _Event:
        return self.at(self._now + delay_ms if delay_ms > 0 else self._now, callback)

    def next_due(self) -> int | None:
        heap = self._heap
        while heap and heap[0][2].cancelled:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def run_one(self) -> bool:
        """Run the next live event; False if there is none."""
        heap = self._heap
        while heap:
            due, _seq, event = heapq.heappop(heap)
            if event.cancelled:
                continue
            self._now = max(self._now, due)
            self.events_run += 1
            event.callback()
            return True
        return False

    def run_until(self, limit_ms: int, stop: Callable[[], bool] | None = None) -> None:
        """Run events due at or before ``limit_ms`` (or until ``stop()``), then set the time."""
        heap = self._heap
        pop = heapq.heappop
        while heap:
            if stop is not None and stop():
                return
            due, _seq, event = heap[0]
            if event.cancelled:
                pop(heap)
                continue
            if due > limit_ms:
                break
            pop(heap)
            self._now = due  # never earlier: ``at`` dates no event before the time it is set
            self.events_run += 1
            event.callback()
        self._now = max(self._now, limit_ms)


class IncarnationClock:
    """The ``Clock`` of one broker incarnation: its timers die with it."""

    def __init__(self, loop: SimLoop, guard: Callable[[Callable[[], None]], None]) -> None:
        self._loop = loop
        self._guard = guard  # runs broker work, turning a SimCrash into a broker crash
        self._timers: list[_Event] = []
        self.alive = True

    def now_ms(self) -> int:
        return self._loop.now_ms()

    def schedule(self, delay_ms: int, callback: Callable[[], None]) -> _Event:
        def run() -> None:
            if self.alive:
                self._guard(callback)

        event = self._loop.after(delay_ms, run)
        timers = self._timers
        timers.append(event)
        if len(timers) > 4096:
            self._timers = [t for t in timers if not t.cancelled and t.due_ms >= self.now_ms()]
        return event

    def kill(self) -> None:
        """The incarnation crashed: cancel every timer it set."""
        self.alive = False
        for event in self._timers:
            event.cancel()
        self._timers.clear()
