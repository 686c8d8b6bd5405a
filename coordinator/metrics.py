"""OpenTelemetry instruments of the broker.

Share-group record counters, one per event kind, with the group id as an
attribute (``group.id``).  The meter comes from the global MeterProvider
unless one is passed, so an application (or a test with an in-memory reader)
decides where the numbers go; with no SDK installed they cost nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Counter, Meter, MeterProvider, Observation

SHARE_RECORD_EVENTS: Final = (
    "acquired",
    "acknowledged",
    "released",
    "rejected",
    "archived",
    "redelivered",
)

_DESCRIPTIONS: Final = {
    "acquired": "Records acquired by share consumers",
    "acknowledged": "Records accepted (ACKNOWLEDGED)",
    "released": "Records made available again (RELEASE, lock timeout, session close, abort)",
    "rejected": "Records rejected by consumers (REJECT)",
    "archived": "Records archived without a REJECT (delivery limit, GAP, log start, aborted data)",
    "redelivered": "Records acquired with a delivery count above 1",
}


#: KIP-1191's dead-letter queue meters (Kafka's ``ShareGroupMetrics``), per group; the event
#: kinds ``coordinator.share_dead_letters`` reports
DEAD_LETTER_QUEUE_METERS: Final = {
    "dead-letter-queue-record-count": "Dead letters written to share groups' DLQ topics",
    "dead-letter-queue-total-produce-requests": "Produce requests sent to DLQ topics",
    "dead-letter-queue-failed-produce-requests": "Produce requests to DLQ topics that failed",
}


def _broker_meter(provider: MeterProvider | None) -> Meter:
    return (provider or metrics.get_meter_provider()).get_meter("sharetxn.broker")


class _CountersPerGroup:
    """Counters by name, each counted per ``group.id``; unknown names are ignored."""

    def __init__(self, counters: dict[str, Counter]) -> None:
        self._counters = counters

    def record(self, group_id: str, name: str, count: int) -> None:
        counter = self._counters.get(name)
        if counter is not None and count > 0:
            counter.add(count, {"group.id": group_id})


class ShareGroupMetrics(_CountersPerGroup):
    """Counters ``share-group-records-<kind>`` per group, and the dead-letter queue ones."""

    def __init__(self, provider: MeterProvider | None = None) -> None:
        meter = _broker_meter(provider)
        counters = {
            kind: meter.create_counter(
                f"share-group-records-{kind}", unit="{record}", description=_DESCRIPTIONS[kind]
            )
            for kind in SHARE_RECORD_EVENTS
        }
        for name, description in DEAD_LETTER_QUEUE_METERS.items():
            counters[name] = meter.create_counter(name, description=description)
        super().__init__(counters)


GROUP_COORDINATOR_METERS: Final = {
    "offset-commits": "Offsets committed (each partition counts)",
    "offset-expirations": "Offsets expired by offsets.retention.minutes",
    "offset-deletions": "Offsets deleted by an administrator (OffsetDelete, group deletion)",
    "group-completed-rebalances": "Rebalances completed (an assignment written to the log)",
}


class GroupCoordinatorMetrics(_CountersPerGroup):
    """KIP-496's four group-coordinator meters, per ``group.id``."""

    def __init__(self, provider: MeterProvider | None = None) -> None:
        meter = _broker_meter(provider)
        super().__init__(
            {
                name: meter.create_counter(name, description=description)
                for name, description in GROUP_COORDINATOR_METERS.items()
            }
        )


class ShareTransactionMetrics:
    """KIP-1289's instruments, with the KIP's names.

    ``share-transaction-active`` (transactions holding pending share acks),
    ``share-transaction-prepare-time-ms`` (first pending ack to the coordinator's decision),
    ``share-transaction-commit-time-ms`` (applying a COMMIT marker to the share state),
    ``share-transaction-abort-total`` and ``share-transaction-timeout-total``.
    """

    def __init__(self, provider: MeterProvider | None = None) -> None:
        meter = _broker_meter(provider)
        self._active = meter.create_up_down_counter(
            "share-transaction-active", description="Active share-group transactions"
        )
        self._prepare = meter.create_histogram(
            "share-transaction-prepare-time-ms", unit="ms", description="Time to prepare"
        )
        self._commit = meter.create_histogram(
            "share-transaction-commit-time-ms", unit="ms", description="Time to commit"
        )
        self._aborts = meter.create_counter(
            "share-transaction-abort-total", description="Aborted share-ack transactions"
        )
        self._timeouts = meter.create_counter(
            "share-transaction-timeout-total", description="Timed-out share-ack transactions"
        )

    def record(self, name: str, value: int) -> None:
        if name == "share-transaction-active":
            self._active.add(value)
        elif name == "share-transaction-prepare-time-ms":
            self._prepare.record(value)
        elif name == "share-transaction-commit-time-ms":
            self._commit.record(value)
        elif name == "share-transaction-abort-total":
            self._aborts.add(value)
        elif name == "share-transaction-timeout-total":
            self._timeouts.add(value)


class BrokerMetrics:
    """The broker basics Kafka's operators watch, as OpenTelemetry instruments.

    Counted by the server adapter for every request: ``request-total`` and
    ``request-time`` (milliseconds, per ``request``, the API name), ``bytes-in-total`` and
    ``bytes-out-total`` (request and response frames). Read from the core when exported:
    ``partition-count``, ``transactions-open``, ``share-partition-inflight-records``,
    ``connection-count`` (gauges), ``log-retention-bytes-deleted`` and
    ``log-retention-runs`` (counters).
    """

    def __init__(
        self,
        gauges: Callable[[], dict[str, int]],
        provider: MeterProvider | None = None,
    ) -> None:
        meter = _broker_meter(provider)
        self._requests = meter.create_counter(
            "request-total", unit="{request}", description="Requests served, per API"
        )
        self._latency = meter.create_histogram(
            "request-time", unit="ms", description="Time from a request's frame to its answer"
        )
        self._bytes_in = meter.create_counter(
            "bytes-in-total", unit="By", description="Bytes of request frames received"
        )
        self._bytes_out = meter.create_counter(
            "bytes-out-total", unit="By", description="Bytes of response frames sent"
        )
        self._gauges = gauges
        for name, description in _GAUGES.items():
            meter.create_observable_gauge(
                name, callbacks=[self._observer(name)], description=description
            )
        for name, (unit, description) in _OBSERVED_COUNTERS.items():
            meter.create_observable_counter(
                name, callbacks=[self._observer(name)], unit=unit, description=description
            )

    def _observer(self, name: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(_options: CallbackOptions) -> Iterable[Observation]:
            try:
                value = self._gauges().get(name)
            except RuntimeError:  # the core changed under the exporter's thread: skip once
                return []
            return [] if value is None else [Observation(value)]

        return observe

    def request(self, api: str, elapsed_ms: float, bytes_in: int, bytes_out: int) -> None:
        attributes = {"request": api}
        self._requests.add(1, attributes)
        self._latency.record(elapsed_ms, attributes)
        self._bytes_in.add(bytes_in)
        if bytes_out:
            self._bytes_out.add(bytes_out)


_GAUGES: Final = {
    "partition-count": "Partitions of the topics (internal logs not counted)",
    "transactions-open": "Transactions Ongoing or preparing",
    "share-partition-inflight-records": "Records between share-partition start and end offsets",
    "connection-count": "Open client connections",
    "log-cleaner-max-dirty-percent": "Dirty ratio of the dirtiest compacted log, in percent",
}

# Cumulative figures the core keeps, read when exported.
_OBSERVED_COUNTERS: Final = {
    "log-retention-bytes-deleted": ("By", "Bytes of segments deleted by retention"),
    "log-retention-runs": ("{run}", "Retention passes over the topic partitions"),
    "log-cleaner-runs": ("{run}", "Compacted partitions cleaned"),
    "log-cleaner-bytes-removed": ("By", "Bytes the log cleaner removed"),
}


class ClientQuotaMetrics:
    """Client quota figures (``coordinator.quotas``): ``client-quota-rate`` (gauge; Kafka's
    ``byte-rate`` / ``request-time`` per ``user`` and ``client-id``), ``client-quota-throttles``
    and ``client-quota-throttle-time`` (counters, ms), ``client-quota-throttle-time-avg``
    (gauge, ms; Kafka's ``throttle-time``: the average over two windows of 30 s), each
    with a ``quota-type`` (Produce, Fetch, Request, ControllerMutation)."""

    def __init__(
        self,
        figures: Callable[[], list[tuple[str, float, dict[str, str]]]],
        provider: MeterProvider | None = None,
    ) -> None:
        meter = _broker_meter(provider)
        self._figures = figures
        meter.create_observable_gauge(
            "client-quota-rate",
            callbacks=[self._observer("client-quota-rate")],
            description="A client's measured rate against its quota (bytes/s, or percent)",
        )
        meter.create_observable_counter(
            "client-quota-throttles",
            callbacks=[self._observer("client-quota-throttles")],
            unit="{throttle}",
            description="Responses throttled by a client quota",
        )
        meter.create_observable_counter(
            "client-quota-throttle-time",
            callbacks=[self._observer("client-quota-throttle-time")],
            unit="ms",
            description="Throttle time answered to clients over a quota",
        )
        meter.create_observable_gauge(
            "client-quota-throttle-time-avg",
            callbacks=[self._observer("client-quota-throttle-time-avg")],
            unit="ms",
            description="Average throttle time over the last minute (Kafka's throttle-time)",
        )

    def _observer(self, name: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(_options: CallbackOptions) -> Iterable[Observation]:
            try:
                figures = self._figures()
            except RuntimeError:  # changed under the exporter's thread: skip once
                return []
            return [Observation(value, tags) for n, value, tags in figures if n == name]

        return observe
