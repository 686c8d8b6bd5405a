"""The sink worker's metrics: KIP-1302's share sensors as OpenTelemetry instruments.

Meter ``sink-task-metrics`` (Connect's metric group), attributes ``connector`` and ``task``
(Connect's tags):

==========================  ==============  =================================================
instrument                  kind            meaning
==========================  ==============  =================================================
``sink-record-acquire``     counter         records acquired from the share group (polled)
``sink-record-acknowledge`` counter         records acknowledged with ACCEPT
``sink-record-release``     counter         records released for redelivery (RELEASE)
``sink-record-reject``      counter         records rejected (REJECT; to the DLQ if any)
``acknowledge-time``        histogram, ms   from ``poll()`` returning to the acknowledgements
                                            being committed
``sink-record-redelivery``  counter         records acquired with a delivery count above 1
==========================  ==============  =================================================

Connect's ``task-error-metrics`` group gets ``deadletterqueue-produce-requests`` and
``deadletterqueue-produce-failures``.  The instruments report to the global MeterProvider
(install an SDK provider to export them); ``WorkerStats`` keeps the same totals in the
process for the live status line of ``sharetxn sink run``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Final

from opentelemetry import metrics
from opentelemetry.metrics import Counter, Histogram, MeterProvider

__all__ = ["SINK_TASK_METRICS", "SinkTaskMetrics", "StatsSnapshot", "WorkerStats"]

SINK_TASK_METRICS: Final = {
    "sink-record-acquire": "Records acquired from the share group",
    "sink-record-acknowledge": "Records acknowledged with ACCEPT",
    "sink-record-release": "Records released for redelivery (RELEASE)",
    "sink-record-reject": "Records rejected (REJECT), to the dead-letter queue if configured",
    "sink-record-redelivery": "Records acquired with a delivery count above 1",
}
TASK_ERROR_METRICS: Final = {
    "deadletterqueue-produce-requests": "Records written to the dead-letter queue",
    "deadletterqueue-produce-failures": "Records that could not be written to the dead-letter "
    "queue",
}


@dataclass(frozen=True, slots=True)
class StatsSnapshot:
    acquired: int = 0
    acknowledged: int = 0
    released: int = 0
    rejected: int = 0
    redelivered: int = 0
    dlq: int = 0
    batches: int = 0


class WorkerStats:
    """Totals over every task of a worker process (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values = dict.fromkeys(StatsSnapshot.__slots__, 0)

    def add(self, **counts: int) -> None:
        with self._lock:
            for key, value in counts.items():
                self._values[key] += value

    def snapshot(self) -> StatsSnapshot:
        with self._lock:
            return StatsSnapshot(**self._values)


class SinkTaskMetrics:
    """The instruments of one task, with its ``connector`` and ``task`` attributes."""

    def __init__(
        self,
        connector: str,
        task: int,
        stats: WorkerStats | None = None,
        provider: MeterProvider | None = None,
    ) -> None:
        source = provider or metrics.get_meter_provider()
        meter = source.get_meter("sink-task-metrics")
        errors = source.get_meter("task-error-metrics")
        self._attrs = {"connector": connector, "task": str(task)}
        self._counters: dict[str, Counter] = {
            name: meter.create_counter(name, unit="{record}", description=description)
            for name, description in SINK_TASK_METRICS.items()
        }
        self._counters.update(
            {
                name: errors.create_counter(name, unit="{record}", description=description)
                for name, description in TASK_ERROR_METRICS.items()
            }
        )
        self._ack_time: Histogram = meter.create_histogram(
            "acknowledge-time",
            unit="ms",
            description="Time from poll() returning to the acknowledgements being committed",
        )
        self.stats = stats or WorkerStats()

    def _add(self, name: str, count: int) -> None:
        if count > 0:
            self._counters[name].add(count, self._attrs)

    def acquired(self, count: int, redelivered: int) -> None:
        self._add("sink-record-acquire", count)
        self._add("sink-record-redelivery", redelivered)
        self.stats.add(acquired=count, redelivered=redelivered)

    def settled(
        self, *, accepted: int, released: int, rejected: int, dlq: int, elapsed_ms: float
    ) -> None:
        self._add("sink-record-acknowledge", accepted)
        self._add("sink-record-release", released)
        self._add("sink-record-reject", rejected)
        self._add("deadletterqueue-produce-requests", dlq)
        self._ack_time.record(elapsed_ms, self._attrs)
        self.stats.add(
            acknowledged=accepted, released=released, rejected=rejected, dlq=dlq, batches=1
        )

    def dlq_failed(self, count: int) -> None:
        self._add("deadletterqueue-produce-failures", count)
