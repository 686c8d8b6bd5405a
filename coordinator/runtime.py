"""The real-time implementation of the Clock seam, on an asyncio loop."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from txn.clock import Timer

log = logging.getLogger("sharetxn.runtime")


class LoopClock:
    """Wall-clock milliseconds (persisted timestamps must survive restarts) and loop timers."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def schedule(self, delay_ms: int, callback: Callable[[], None]) -> Timer:
        def run() -> None:
            try:
                callback()
            except Exception:  # a timer must never kill the loop
                log.exception("timer callback failed")

        return self._loop.call_later(max(0, delay_ms) / 1000.0, run)
