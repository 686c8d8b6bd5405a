"""Idle quota sensors are dropped after an hour, as Kafka's (a client cycling client ids
holds no broker memory past that hour)."""

from __future__ import annotations

import random
import sys

from coordinator.broker import BrokerCore
from coordinator.log.memory_log import MemoryStorage
from coordinator.protocol.throttling import Throttler
from coordinator.quotas.entities import AlterEntry
from coordinator.quotas.managers import INACTIVE_EXPIRATION_MS
from coordinator.quotas.store import EXPIRY_SWEEP_MS
from txn.api_keys import ApiKey
from txn.clock import ManualClock

DEFAULT_CLIENT = (("client-id", None),)


def _core() -> tuple[BrokerCore, ManualClock]:
    clock = ManualClock()
    return BrokerCore(MemoryStorage(), clock, None, random.Random(3)), clock


def _state(core: BrokerCore) -> int:
    q = core.client_quotas
    managers = (q.produce, q.fetch, q.request, q.mutation.base)
    sizes = [len(m.rates) + len(m.throttles) for m in managers]
    return sum(sizes) + len(q.mutation.buckets) + len(q.connections.rates)


def _footprint(core: BrokerCore) -> int:
    """The bytes held by the quota state: its tables, their keys and sensors."""
    q = core.client_quotas
    tables: list[dict[object, object]] = [q.mutation.buckets, q.connections.rates]
    for m in (q.produce, q.fetch, q.request, q.mutation.base):
        tables += [m.rates, m.throttles]
    size = 0
    for table in tables:
        size += sys.getsizeof(table)
        for key, value in table.items():
            size += sys.getsizeof(key) + sys.getsizeof(value)
            size += sum(sys.getsizeof(part) for part in key if isinstance(key, tuple))
            for sample in getattr(value, "_samples", ()):
                size += sys.getsizeof(sample)
    return size


def test_no_sweep_is_scheduled_without_quotas() -> None:
    core, clock = _core()
    pending = clock.next_due_ms()
    Throttler(core.client_quotas).request(ApiKey.PRODUCE, 9, "User:u", "c", 100, 1.0, True)
    assert _state(core) == 0 and clock.next_due_ms() == pending


def test_a_client_idle_for_an_hour_is_forgotten() -> None:
    core, clock = _core()
    quotas = core.client_quotas
    entry = AlterEntry(DEFAULT_CLIENT, (("producer_byte_rate", 1024.0),))
    assert quotas.alter([entry], False) == {DEFAULT_CLIENT: None}
    quotas.produce.record("u", "a", 10.0, clock.now_ms())
    clock.advance(INACTIVE_EXPIRATION_MS // 2)
    quotas.produce.record("u", "b", 10.0, clock.now_ms())
    clock.advance(INACTIVE_EXPIRATION_MS // 2 + EXPIRY_SWEEP_MS)
    assert set(quotas.produce.rates) == {("", "b")}  # "a" idle for over an hour
    clock.advance(INACTIVE_EXPIRATION_MS // 2)
    assert _state(core) == 0


def test_cycling_client_ids_holds_no_memory_after_expiry() -> None:
    core, clock = _core()
    quotas = core.client_quotas
    ops = (("producer_byte_rate", 1024.0), ("request_percentage", 50.0))
    assert quotas.alter([AlterEntry(DEFAULT_CLIENT, ops)], False) == {DEFAULT_CLIENT: None}
    throttler = Throttler(quotas)
    baseline = _footprint(core)
    for i in range(100_000):
        throttler.request(ApiKey.PRODUCE, 9, "User:u", f"id-{i}", 4096, 30.0, True)
        if i % 1000 == 0:
            clock.advance(1)
    assert _state(core) >= 200_000  # a rate per id for Produce and Request, and throttles
    grown = _footprint(core) - baseline
    clock.advance(INACTIVE_EXPIRATION_MS + EXPIRY_SWEEP_MS)
    left = _footprint(core) - baseline
    assert _state(core) == 0
    assert grown > 10_000_000
    assert left < 10_000  # the tables are rebuilt small, the sensors are gone
    assert quotas._sweep is None  # nothing left to sweep: the timer is not re-armed
