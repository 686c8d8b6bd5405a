"""The broker's client quotas: the entities recorded in ``__cluster_metadata``, the
DescribeClientQuotas and AlterClientQuotas operations on them, and the quota managers that
enforce them (``coordinator.quotas.managers``), kept in step with every change."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Protocol

from coordinator.quotas.entities import (
    CONSUMER_BYTE_RATE,
    CONTROLLER_MUTATION_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    AlterEntry,
    DescribeFilter,
    Entity,
    QuotaError,
    decode_entity,
    encode_entity,
    match_entities,
    validate_alterations,
)
from coordinator.quotas.managers import (
    ClientQuotaManager,
    ConnectionRateManager,
    MutationQuotaManager,
)
from txn.clock import Clock, Timer
from txn.config import BrokerConfig

__all__ = ["ClientQuotas", "QuotaFigure", "QuotaRecords"]

#: One figure of the quota metrics: (instrument, value, attributes).
QuotaFigure = tuple[str, float, dict[str, str]]

log = logging.getLogger("sharetxn.quotas")

#: How often idle sensors are looked for (Kafka's Metrics runs its ExpireSensorTask every
#: 30 seconds).
EXPIRY_SWEEP_MS = 30_000


class QuotaRecords(Protocol):
    """Where the quotas are recorded (``coordinator.topics.TopicRegistry``)."""

    client_quotas: dict[str, dict[str, float]]

    def set_client_quotas(self, entity: str, quotas: Mapping[str, float], now_ms: int) -> None: ...


class ClientQuotas:
    """The client quota entities and the managers enforcing them."""

    def __init__(self, records: QuotaRecords, clock: Clock, config: BrokerConfig) -> None:
        self._records = records
        self.clock = clock
        samples = config.get_int("quota.window.num")
        window_ms = config.get_int("quota.window.size.seconds") * 1000
        self.produce = ClientQuotaManager(PRODUCER_BYTE_RATE, samples, window_ms)
        self.fetch = ClientQuotaManager(CONSUMER_BYTE_RATE, samples, window_ms)
        self.request = ClientQuotaManager(
            REQUEST_PERCENTAGE, samples, window_ms, max_throttle_ms=window_ms
        )
        mutation_samples = config.get_int("controller.quota.window.num")
        mutation_window_ms = config.get_int("controller.quota.window.size.seconds") * 1000
        self.mutation = MutationQuotaManager(
            ClientQuotaManager(CONTROLLER_MUTATION_RATE, mutation_samples, mutation_window_ms)
        )
        self.connections = ConnectionRateManager(samples, window_ms)
        self._sweep: Timer | None = None
        for manager in (self.produce, self.fetch, self.request, self.mutation.base):
            manager.on_new_state = self._arm_sweep
        self.connections.on_new_state = self._arm_sweep
        self.entities: dict[Entity, dict[str, float]] = {
            decode_entity(name): dict(values) for name, values in records.client_quotas.items()
        }
        self._update_managers()

    def _update_managers(self) -> None:
        for manager in (self.produce, self.fetch, self.request, self.mutation.base):
            manager.update(self.entities)
        self.connections.update(self.entities)

    def _arm_sweep(self) -> None:
        """Sweep idle sensors every 30 s while there are any (no timer while none: a
        broker without quotas schedules nothing)."""
        if self._sweep is None:
            self._sweep = self.clock.schedule(EXPIRY_SWEEP_MS, self._expire)

    def _expire(self) -> None:
        self._sweep = None
        if self.expire(self.clock.now_ms()):
            self._arm_sweep()

    def expire(self, now_ms: int) -> int:
        """Drop every sensor idle for an hour (Kafka's inactive sensor expiration); how
        many are left."""
        left = self.connections.expire(now_ms)
        for manager in (self.produce, self.fetch, self.request):
            left += manager.expire(now_ms)
        return left + self.mutation.expire(now_ms)

    def accept_connection(self, host: str) -> int:
        """0 to accept a new connection from ``host``; else the milliseconds to hold it
        before closing it, unread (its IP's ``connection_creation_rate`` is exceeded)."""
        return self.connections.accept(host, self.clock.now_ms())

    def describe(
        self, components: Sequence[DescribeFilter], strict: bool
    ) -> list[tuple[Entity, dict[str, float]]]:
        """The entities the filter selects and their values (QuotaError for a bad filter)."""
        return [
            (e, dict(self.entities[e])) for e in match_entities(self.entities, components, strict)
        ]

    def alter(
        self, entries: Sequence[AlterEntry], validate_only: bool
    ) -> dict[Entity, QuotaError | None]:
        """Check and (unless ``validate_only``) record the alterations: each entity's result."""
        results, changes = validate_alterations(entries, self.entities)
        if validate_only or not changes:
            return results
        now = self.clock.now_ms()
        for entity, values in changes.items():
            self._records.set_client_quotas(encode_entity(entity), values, now)
            if values:
                self.entities[entity] = values
            else:
                self.entities.pop(entity, None)
            log.info("client quotas of %s now %s", dict(entity), values or "{}")
        self._update_managers()
        return results

    def figures(self) -> list[QuotaFigure]:
        """The quota metrics, per quota type and (user, client-id) as Kafka tags them:
        ``client-quota-rate`` (Kafka's ``byte-rate`` of Produce and Fetch, ``request-time`` of
        Request, in percent), ``client-quota-throttles`` and ``client-quota-throttle-time``
        (cumulative; their ratio is Kafka's ``throttle-time`` average)."""
        now = self.clock.now_ms()
        out: list[QuotaFigure] = []
        managers = (
            ("Produce", self.produce),
            ("Fetch", self.fetch),
            ("Request", self.request),
            ("ControllerMutation", self.mutation.base),
        )
        for kind, manager in managers:
            for (user, client), rate in list(manager.rates.items()):
                tags = {"quota-type": kind, "user": user, "client-id": client}
                out.append(("client-quota-rate", rate.peek(now), tags))
            for (user, client), stats in list(manager.throttles.items()):
                tags = {"quota-type": kind, "user": user, "client-id": client}
                out.append(("client-quota-throttles", float(stats.count), tags))
                out.append(("client-quota-throttle-time", float(stats.total_ms), tags))
                average = stats.window.peek_average(now)
                if not math.isnan(average):
                    out.append(("client-quota-throttle-time-avg", average, tags))
        return out
