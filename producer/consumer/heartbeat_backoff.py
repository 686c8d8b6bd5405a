"""Back-off and reachability logging shared by the heartbeat threads of the consumers.

While heartbeats cannot reach the group coordinator, ``poll()`` returns nothing: say so in the
log at once and every ``UNREACHABLE_LOG_EVERY_S`` seconds (not only at debug level), and say
when the coordinator answers again.
"""

from __future__ import annotations

import logging
import time

UNREACHABLE_LOG_EVERY_S = 10.0


class HeartbeatBackoff:
    """Exponential back-off between failed heartbeats, and the unreachable warning."""

    def __init__(
        self, logger: logging.Logger, what: str, backoff_ms: int, backoff_max_ms: int
    ) -> None:
        self._log = logger
        self._what = what  # "share group orders"
        self._low = max(backoff_ms, 1)
        self._high = max(backoff_max_ms, self._low)
        self._failures = 0
        self._since: float | None = None
        self._logged: float | None = None

    def next_ms(self) -> int:
        """The wait before the next attempt after a failure (doubling, capped)."""
        self._failures += 1
        return min(self._low * int(2 ** min(self._failures - 1, 10)), self._high)

    def crashed(self) -> int:
        """A heartbeat raised: log it with its traceback; the wait before the next attempt."""
        self._log.exception("%s: heartbeat failed", self._what)
        return self.next_ms()

    def unreachable(self, exc: Exception) -> None:
        now = time.monotonic()
        if self._since is None:
            self._since = now
        if self._logged is None or now - self._logged >= UNREACHABLE_LOG_EVERY_S:
            self._logged = now
            self._log.warning(
                "%s: cannot reach the group coordinator for %.0fs (%s); "
                "poll() returns no records until it can",
                self._what,
                now - self._since,
                exc,
            )

    def succeeded(self) -> None:
        if self._since is not None:
            self._log.info("%s: the group coordinator is reachable again", self._what)
            self._since = self._logged = None
        self._failures = 0
