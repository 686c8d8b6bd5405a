"""Named timers of the consumer-group coordinator."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from txn.clock import Clock, Timer


@dataclass(slots=True)
class Timers:
    """Named timers on the Clock; arming a name again replaces its timer."""

    by_key: dict[tuple[str, ...], Timer] = field(default_factory=dict)

    def arm(
        self, clock: Clock, key: tuple[str, ...], delay_ms: int, fn: Callable[[], None]
    ) -> None:
        self.cancel(key)
        self.by_key[key] = clock.schedule(max(0, delay_ms), fn)

    def cancel(self, key: tuple[str, ...]) -> None:
        timer = self.by_key.pop(key, None)
        if timer is not None:
            timer.cancel()

    def cancel_all(self) -> None:
        for timer in self.by_key.values():
            timer.cancel()
        self.by_key.clear()
