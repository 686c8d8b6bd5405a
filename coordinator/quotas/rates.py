"""Kafka's windowed rate (``org.apache.kafka.common.metrics.stats.Rate`` over a
``SampledStat``) and the throttle time of a quota violation (``QuotaUtils``), as Kafka
computes them, on times given by the caller (the broker's Clock).

A rate keeps ``samples`` windows of ``window_ms`` each; a value is added to the current
window, the window advancing when it is ``window_ms`` old.  Windows older than
``samples * window_ms`` are reset when measured.  The rate divides the sum by the elapsed time
since the oldest window began, but never by less than ``samples - 1`` full windows (so a
burst at start is not measured over a few milliseconds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Rate", "TokenBucket", "throttle_time_ms"]


@dataclass(slots=True)
class _Sample:
    value: float
    last_window_ms: int
    event_count: int = 0

    def reset(self, now_ms: int) -> None:
        self.value = 0.0
        self.last_window_ms = now_ms
        self.event_count = 0


class Rate:
    """A value per second over ``samples`` windows of ``window_ms`` (Kafka's Rate)."""

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = max(2, samples)  # Kafka's MetricConfig requires at least two
        self.window_ms = max(1, window_ms)
        self._samples: list[_Sample] = []
        self._current = 0
        #: When a value was last recorded (Kafka's ``Sensor.lastRecordTime``: a sensor idle
        #: for its inactive-expiration time is dropped).
        self.last_record_ms = 0

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(0.0, now_ms))
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        self._current = (self._current + 1) % self.samples
        if self._current >= len(self._samples):
            sample = _Sample(0.0, now_ms)
            self._samples.append(sample)
            return sample
        sample = self._current_sample(now_ms)
        sample.reset(now_ms)
        return sample

    def record(self, value: float, now_ms: int) -> None:
        self.last_record_ms = now_ms
        sample = self._current_sample(now_ms)
        if now_ms - sample.last_window_ms >= self.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.event_count += 1

    def _purge(self, now_ms: int) -> None:
        expire_age = self.samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.last_window_ms >= expire_age:
                sample.reset(now_ms)

    def window_size_ms(self, now_ms: int) -> int:
        """The time the rate is measured over (Kafka's ``Rate.windowSize``)."""
        self._purge(now_ms)
        if not self._samples:
            self._samples.append(_Sample(0.0, now_ms))
        oldest = min(s.last_window_ms for s in self._samples)
        elapsed = now_ms - oldest
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(elapsed, 1)

    def measure(self, now_ms: int) -> float:
        """The rate per second at ``now_ms``."""
        self._purge(now_ms)
        total = sum(s.value for s in self._samples)
        return total / (self.window_size_ms(now_ms) / 1000.0)

    def peek(self, now_ms: int) -> float:
        """The rate at ``now_ms`` without touching the samples (for another thread: the
        metrics exporter)."""
        expire_age = self.samples * self.window_ms
        live = [s for s in list(self._samples) if now_ms - s.last_window_ms < expire_age]
        oldest = min((s.last_window_ms for s in live), default=now_ms)
        if len(live) < len(self._samples):
            oldest = min(oldest, now_ms)  # an expired sample counts as one reset now
        elapsed = now_ms - oldest
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return sum(s.value for s in live) / (max(elapsed, 1) / 1000.0)

    def peek_average(self, now_ms: int) -> float:
        """The average of the values recorded in the live windows (Kafka's ``Avg`` stat over
        the same samples; NaN when there is none), without touching the samples."""
        expire_age = self.samples * self.window_ms
        live = [s for s in list(self._samples) if now_ms - s.last_window_ms < expire_age]
        count = sum(s.event_count for s in live)
        return sum(s.value for s in live) / count if count else math.nan


def throttle_time_ms(rate: Rate, bound: float, now_ms: int) -> int:
    """How long the client waits for ``rate`` to come back to ``bound`` if nothing more is
    recorded (Kafka's ``QuotaUtils.throttleTime``; 0 within the quota)."""
    value = rate.measure(now_ms)
    if value <= bound:
        return 0
    return round((value - bound) / bound * rate.window_size_ms(now_ms))


class TokenBucket:
    """Kafka's TokenBucket stat (KIP-599's controller mutation quota): credits refill at
    ``rate`` per second up to a burst of ``samples * window`` seconds' worth; a mutation
    takes credits, possibly below zero."""

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = max(2, samples)
        self.window_ms = max(1, window_ms)
        self.tokens: float | None = None
        self.last_ms = 0
        self.last_record_ms = 0

    def _refill(self, rate: float, now_ms: int) -> None:
        burst = self.samples * self.window_ms / 1000.0 * rate
        if self.tokens is None:
            self.tokens = burst
        else:
            self.tokens = min(burst, self.tokens + rate * max(0, now_ms - self.last_ms) / 1000.0)
        self.last_ms = now_ms

    def record(self, value: float, rate: float, now_ms: int) -> None:
        self.last_record_ms = now_ms
        self._refill(rate, now_ms)
        assert self.tokens is not None
        self.tokens -= value

    def available(self, rate: float, now_ms: int) -> float:
        self._refill(rate, now_ms)
        assert self.tokens is not None
        return self.tokens

    def throttle_time_ms(self, rate: float, now_ms: int) -> int:
        """The time until the credits are back at zero (0 while there are some)."""
        tokens = self.available(rate, now_ms)
        if tokens >= 0 or rate <= 0:
            return 0
        return round(-tokens / rate * 1000)
