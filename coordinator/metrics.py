"""OpenTelemetry instruments of the broker.

Share-group record counters, one per event kind, with the group id as an
attribute (``group.id``).  The meter comes from the global MeterProvider
unless one is passed, so an application (or a test with an in-memory reader)
decides where the numbers go; with no SDK installed they cost nothing.
"""

from __future__ import annotations

from typing import Final

from opentelemetry import metrics
from opentelemetry.metrics import Counter, MeterProvider

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


class ShareGroupMetrics:
    """Counters ``share-group-records-<kind>`` per group."""

    def __init__(self, provider: MeterProvider | None = None) -> None:
        meter = (provider or metrics.get_meter_provider()).get_meter("sharetxn.broker")
        self._counters: dict[str, Counter] = {
            kind: meter.create_counter(
                f"share-group-records-{kind}", unit="{record}", description=_DESCRIPTIONS[kind]
            )
            for kind in SHARE_RECORD_EVENTS
        }

    def record(self, group_id: str, kind: str, count: int) -> None:
        counter = self._counters.get(kind)
        if counter is not None and count > 0:
            counter.add(count, {"group.id": group_id})


class ShareTransactionMetrics:
    """KIP-1289's instruments, with the KIP's names.

    ``share-transaction-active`` (transactions holding pending share acks),
    ``share-transaction-prepare-time-ms`` (first pending ack to the coordinator's decision),
    ``share-transaction-commit-time-ms`` (applying a COMMIT marker to the share state),
    ``share-transaction-abort-total`` and ``share-transaction-timeout-total``.
    """

    def __init__(self, provider: MeterProvider | None = None) -> None:
        meter = (provider or metrics.get_meter_provider()).get_meter("sharetxn.broker")
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
