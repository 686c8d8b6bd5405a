"""The time seam of the broker core.

The core never reads the wall clock or sleeps: it asks a ``Clock`` for the
time and for timers.  The server runs the core on an asyncio loop with
``coordinator.runtime.LoopClock``; tests and the chaos simulator use
``ManualClock`` and move time by hand.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


class Timer(Protocol):
    """A scheduled callback that can be cancelled before it fires."""

    def cancel(self) -> None: ...


class Clock(Protocol):
    """Milliseconds and one-shot timers."""

    def now_ms(self) -> int: ...

    def schedule(self, delay_ms: int, callback: Callable[[], None]) -> Timer: ...


@dataclass(order=True)
class _ManualTimer:
    due_ms: int
    seq: int
    callback: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """A clock that only moves when told to; timers fire in due order.

    ``advance(ms)`` runs every timer that becomes due, in (due time, creation)
    order, with ``now_ms()`` equal to each timer's due time while it runs.
    """

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._timers: list[_ManualTimer] = []
        self._seq = itertools.count()

    def now_ms(self) -> int:
        return self._now

    def schedule(self, delay_ms: int, callback: Callable[[], None]) -> Timer:
        timer = _ManualTimer(self._now + max(0, delay_ms), next(self._seq), callback)
        heapq.heappush(self._timers, timer)
        return timer

    def advance(self, delta_ms: int) -> None:
        """Move time forward by ``delta_ms``, firing due timers on the way."""
        target = self._now + delta_ms
        while self._timers and self._timers[0].due_ms <= target:
            timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._now = max(self._now, timer.due_ms)
            timer.callback()
        self._now = target

    def run_due(self) -> None:
        """Fire timers that are due now (zero-delay work) without moving time."""
        self.advance(0)

    def next_due_ms(self) -> int | None:
        """Due time of the earliest live timer, or None."""
        while self._timers and self._timers[0].cancelled:
            heapq.heappop(self._timers)
        return self._timers[0].due_ms if self._timers else None
