"""librdkafka's own statistics of one producer, over one measurement.

A producer configured with ``statistics.interval.ms`` (``Stats.config``) hands its statistics
JSON to ``stats_cb`` on every poll after each interval.  ``Stats`` keeps them and, between
``start()`` and ``stop()``, sums what the measurement needs:

* Produce requests sent (``brokers[*].req.Produce``, cumulative: the difference);
* the records per batch (``topics[*].batchcnt``) and the bytes per batch
  (``topics[*].batchsize``): rolling-window histograms, one per interval, averaged over the
  windows weighted by their counts;
* the Produce round trip (``brokers[*].rtt``, microseconds, from request sent to response
  received, likewise averaged; its p99 is the highest window p99).

``start()`` and ``stop()`` poll for one interval and a little more, so that the windows
before and after them are delivered (the clock of a measurement excludes this).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Figures:
    """librdkafka's view of one measurement."""

    produce_requests: int
    batches: int
    records_per_batch: float  # batchcnt, mean
    bytes_per_batch: float  # batchsize, mean
    rtt_ms: float  # Produce (and other) request round trip, mean
    rtt_p99_ms: float  # the highest window p99
    records: int = 0

    @property
    def records_per_request(self) -> float:
        return self.records / self.produce_requests if self.produce_requests else 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "produce_requests": self.produce_requests,
            "batches": self.batches,
            "records_per_request": self.records_per_request,
            "records_per_batch": self.records_per_batch,
            "bytes_per_batch": self.bytes_per_batch,
            "rtt_ms": self.rtt_ms,
            "rtt_p99_ms": self.rtt_p99_ms,
        }


class _Mean:
    def __init__(self) -> None:
        self.total = 0.0
        self.count = 0
        self.top = 0.0

    def add(self, histogram: dict[str, Any] | None, scale: float = 1.0) -> None:
        if not histogram or not histogram.get("cnt"):
            return
        self.total += float(histogram["avg"]) * histogram["cnt"] * scale
        self.count += int(histogram["cnt"])
        self.top = max(self.top, float(histogram.get("p99", 0)) * scale)

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else 0.0


class Stats:
    """Collects one producer's statistics (pass ``config`` to the producer)."""

    def __init__(self, interval_ms: int = 100) -> None:
        self.interval_ms = interval_ms
        self._windows: list[dict[str, Any]] = []
        self._recording = False
        self._base_requests = 0
        self._latest: dict[str, Any] = {}

    @property
    def config(self) -> dict[str, Any]:
        return {"statistics.interval.ms": self.interval_ms, "stats_cb": self._on_stats}

    def _on_stats(self, raw: str) -> None:
        stats = json.loads(raw)
        self._latest = stats
        if self._recording:
            self._windows.append(stats)

    def _settle(self, producer: Any) -> None:
        """Poll for one interval and a bit, so the current window is delivered."""
        end = time.perf_counter() + self.interval_ms * 1.5 / 1000
        while time.perf_counter() < end:
            producer.poll(0.02)

    def start(self, producer: Any) -> None:
        self._settle(producer)
        self._base_requests = _produce_requests(self._latest)
        self._windows = []
        self._recording = True

    def stop(self, producer: Any, records: int) -> Figures:
        self._settle(producer)
        self._recording = False
        batchcnt, batchsize, rtt = _Mean(), _Mean(), _Mean()
        for stats in self._windows:
            for topic in stats.get("topics", {}).values():
                batchcnt.add(topic.get("batchcnt"))
                batchsize.add(topic.get("batchsize"))
            for broker in stats.get("brokers", {}).values():
                if int(broker.get("nodeid", -1)) >= 0:
                    rtt.add(broker.get("rtt"), 1 / 1000)
        return Figures(
            produce_requests=_produce_requests(self._latest) - self._base_requests,
            batches=batchcnt.count,
            records_per_batch=batchcnt.mean,
            bytes_per_batch=batchsize.mean,
            rtt_ms=rtt.mean,
            rtt_p99_ms=rtt.top,
            records=records,
        )


def _produce_requests(stats: dict[str, Any]) -> int:
    return sum(
        int(broker.get("req", {}).get("Produce", 0)) for broker in stats.get("brokers", {}).values()
    )
