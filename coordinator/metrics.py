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
