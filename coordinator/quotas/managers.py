"""Kafka's client quota managers: ``ClientQuotaManager`` for the produce and fetch byte rates
and (``ClientRequestQuotaManager``) the request-time percentage, and the controller mutation
quota of KIP-599 (``ControllerMutationQuotaManager``).

A client is known by its user (the principal's name) and client id.  The quota that applies
is the most specific one configured, in Kafka's order of precedence:

1. ``user=U, client-id=C``, 2. ``user=U, client-id=<default>``, 3. ``user=U``,
4. ``user=<default>, client-id=C``, 5. ``user=<default>, client-id=<default>``,
6. ``user=<default>``, 7. ``client-id=C``, 8. ``client-id=<default>``.

Usage is measured per metric tags (user, client-id) as Kafka's DefaultQuotaCallback
chooses them: clients whose quota is a user's share that user's rate; clients under a
default each have their own.  Times come from the caller (the broker's Clock).
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from coordinator.quotas.entities import CLIENT_ID, CONNECTION_CREATION_RATE, IP, USER, Entity
from coordinator.quotas.rates import Rate, TokenBucket, throttle_time_ms

__all__ = [
    "ClientQuotaManager",
    "ConnectionRateManager",
    "MutationQuotaManager",
    "Part",
    "QuotaKey",
    "user_name",
]

#: One side of a quota entity: None absent, (None,) the default, (name,) a given name.
Part = tuple[str | None] | None
#: Kafka's KafkaQuotaEntity: (user part, client-id part).
QuotaKey = tuple[Part, Part]

_DEFAULT: tuple[str | None] = (None,)

log = logging.getLogger("sharetxn.quotas")

NO_QUOTAS = 0
CLIENT_ID_QUOTA_ENABLED = 1
USER_QUOTA_ENABLED = 2
USER_CLIENT_ID_QUOTA_ENABLED = 4

#: Kafka's ClientQuotaManager.InactiveSensorExpirationTimeSeconds (and ConnectionQuotas'):
#: a client's rate, throttle-time and connection-rate sensors are dropped after an hour
#: without a value recorded, so a client cycling ids holds no memory past that hour.
INACTIVE_EXPIRATION_MS = 3600 * 1000
#: Kafka's default metric windows (``metrics.num.samples``, ``metrics.sample.window.ms``),
#: which its ``throttle-time`` average is measured over.
THROTTLE_SAMPLES = 2
THROTTLE_WINDOW_MS = 30_000

_K = TypeVar("_K")
_V = TypeVar("_V")

#: Called when a manager starts keeping state for a new client (to arm the expiry sweep).
NewState = Callable[[], None]


def _expire(table: dict[_K, _V], last: Callable[[_V], int], now_ms: int) -> dict[_K, _V]:
    """``table`` without the entries idle for more than the inactive-expiration time (Kafka's
    ``Sensor.hasExpired``: strictly more).  The table is in the order of last use
    (``_touch``), so the idle ones are at its front and only they are looked at; the dict is
    rebuilt when many go, as a dict never gives back the memory of deleted entries."""
    idle: list[_K] = []
    for key, value in table.items():
        if now_ms - last(value) <= INACTIVE_EXPIRATION_MS:
            break
        idle.append(key)
    for key in idle:
        del table[key]
    return dict(table) if len(idle) > len(table) else table


def _touch(table: dict[_K, _V], key: _K, value: _V) -> None:
    """Move ``key`` to the end of ``table`` (the most recently used)."""
    del table[key]
    table[key] = value


def user_name(principal: str) -> str:
    """The user of a principal (``User:alice`` -> ``alice``), as Kafka's ``getName``."""
    return principal.split(":", 1)[1] if ":" in principal else principal


def quota_key(entity: Entity) -> QuotaKey | None:
    """The (user, client-id) key of a user / client-id entity; None for an IP entity."""
    parts = dict(entity)
    if set(parts) - {USER, CLIENT_ID}:
        return None
    user: Part = (parts[USER],) if USER in parts else None
    client: Part = (parts[CLIENT_ID],) if CLIENT_ID in parts else None
    return user, client


@dataclass(slots=True)
class ThrottleStats:
    """Kafka's ``throttle-time`` Avg per metric tags, kept as a count and a total."""

    count: int = 0
    total_ms: int = 0
    last_record_ms: int = 0
    #: Kafka's ``throttle-time`` sensor: an Avg over the broker's default metric windows
    #: (``metrics.num.samples`` 2 x ``metrics.sample.window.ms`` 30 s).
    window: Rate = field(default_factory=lambda: Rate(THROTTLE_SAMPLES, THROTTLE_WINDOW_MS))


@dataclass(slots=True)
class ClientQuotaManager:
    """The quota of one key (``producer_byte_rate``, ``consumer_byte_rate``,
    ``request_percentage``) over every client."""

    key: str
    samples: int
    window_ms: int
    #: Kafka's ClientRequestQuotaManager bounds a throttle time by one window.
    max_throttle_ms: int | None = None
    overrides: dict[QuotaKey, float] = field(default_factory=dict)
    types_enabled: int = NO_QUOTAS
    rates: dict[tuple[str, str], Rate] = field(default_factory=dict)
    throttles: dict[tuple[str, str], ThrottleStats] = field(default_factory=dict)
    on_new_state: NewState | None = None

    def update(self, entities: Mapping[Entity, Mapping[str, float]]) -> None:
        """Take the quotas now configured (the values of this manager's key)."""
        overrides: dict[QuotaKey, float] = {}
        for entity, values in entities.items():
            qkey = quota_key(entity)
            if qkey is not None and self.key in values:
                overrides[qkey] = values[self.key]
        types = NO_QUOTAS
        for user, client in overrides:
            if user is not None and client is not None:
                types |= USER_CLIENT_ID_QUOTA_ENABLED
            elif user is not None:
                types |= USER_QUOTA_ENABLED
            else:
                types |= CLIENT_ID_QUOTA_ENABLED
        self.overrides = overrides
        self.types_enabled = types

    @property
    def enabled(self) -> bool:
        return self.types_enabled != NO_QUOTAS

    def metric_tags(self, user: str, client_id: str) -> tuple[str, str]:
        """Kafka's DefaultQuotaCallback.quotaMetricTags: (user tag, client-id tag)."""
        types = self.types_enabled
        if types in (NO_QUOTAS, CLIENT_ID_QUOTA_ENABLED):
            return "", client_id
        if types == USER_QUOTA_ENABLED:
            return user, ""
        if types == USER_CLIENT_ID_QUOTA_ENABLED:
            return user, client_id
        o = self.overrides
        u, c = (user,), (client_id,)
        if (u, c) in o or (u, _DEFAULT) in o:
            return user, client_id
        if (u, None) in o:
            return user, ""
        if (_DEFAULT, c) in o or (_DEFAULT, _DEFAULT) in o:
            return user, client_id
        if (_DEFAULT, None) in o:
            return user, ""
        return "", client_id

    def limit(self, tags: tuple[str, str]) -> float | None:
        """Kafka's DefaultQuotaCallback.quotaLimit for the metric tags (None: no quota)."""
        user, client_id = tags
        o = self.overrides
        u, c = (user,), (client_id,)
        if user and client_id:
            order: tuple[QuotaKey, ...] = ((u, c), (u, _DEFAULT), (_DEFAULT, c))
            order += ((_DEFAULT, _DEFAULT),)
        elif user:
            order = ((u, None), (_DEFAULT, None))
        elif client_id:
            order = ((None, c), (None, _DEFAULT))
        else:
            return None
        for qkey in order:
            if qkey in o:
                return o[qkey]
        return None

    def quota(self, user: str, client_id: str) -> float | None:
        """The quota that applies to this client (None: none does)."""
        return self.limit(self.metric_tags(user, client_id))

    def _rate(self, tags: tuple[str, str]) -> Rate:
        rate = self.rates.get(tags)
        if rate is None:
            rate = self.rates[tags] = Rate(self.samples, self.window_ms)
            if self.on_new_state is not None:
                self.on_new_state()
        else:
            _touch(self.rates, tags, rate)  # a value is recorded next
        return rate

    def expire(self, now_ms: int) -> int:
        """Drop the rates and throttle figures idle for an hour; how many are left."""
        self.rates = _expire(self.rates, lambda r: r.last_record_ms, now_ms)
        self.throttles = _expire(self.throttles, lambda t: t.last_record_ms, now_ms)
        return len(self.rates) + len(self.throttles)

    def record(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record ``value`` for the client; the throttle time (ms) its quota asks for, 0
        within it (Kafka's maybeRecordAndGetThrottleTimeMs: nothing recorded while no quota
        of this key is configured)."""
        if not self.enabled:
            return 0
        tags = self.metric_tags(user, client_id)
        rate = self._rate(tags)
        rate.record(value, now_ms)
        bound = self.limit(tags)
        if bound is None:
            return 0
        throttle = throttle_time_ms(rate, bound, now_ms)
        if self.max_throttle_ms is not None:
            throttle = min(throttle, self.max_throttle_ms)
        return throttle

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back a recorded value (Kafka: a throttled fetch answers no data)."""
        if self.enabled:
            self._rate(self.metric_tags(user, client_id)).record(-value, now_ms)

    def max_value_in_window(self, user: str, client_id: str) -> float | None:
        """The most one request may carry without being throttled for sure (Kafka's
        maxValueInQuotaWindow; None: no limit)."""
        if not self.enabled:
            return None
        bound = self.quota(user, client_id)
        if bound is None:
            return None
        return bound * (self.samples - 1) * self.window_ms / 1000.0

    def throttled(self, user: str, client_id: str, throttle_ms: int, now_ms: int) -> None:
        """Count a throttle applied (the ``throttle-time`` metric)."""
        if throttle_ms > 0:
            tags = self.metric_tags(user, client_id)
            stats = self.throttles.get(tags)
            if stats is None:
                stats = self.throttles[tags] = ThrottleStats()
                if self.on_new_state is not None:
                    self.on_new_state()
            else:
                _touch(self.throttles, tags, stats)
            stats.count += 1
            stats.total_ms += throttle_ms
            stats.last_record_ms = now_ms
            stats.window.record(throttle_ms, now_ms)


@dataclass(slots=True)
class MutationQuotaManager:
    """KIP-599's controller mutation quota (``controller_mutation_rate``): partitions created
    or deleted per second, as a token bucket per client."""

    base: ClientQuotaManager
    buckets: dict[tuple[str, str], TokenBucket] = field(default_factory=dict)

    def _bucket(self, tags: tuple[str, str], now_ms: int) -> TokenBucket:
        bucket = self.buckets.get(tags)
        if bucket is None:
            bucket = self.buckets[tags] = TokenBucket(self.base.samples, self.base.window_ms)
            bucket.last_record_ms = now_ms  # Kafka: a new sensor counts as just recorded
            if self.base.on_new_state is not None:
                self.base.on_new_state()
        return bucket

    def expire(self, now_ms: int) -> int:
        """Drop the buckets idle for an hour (and the base's figures); how many are left."""
        idle = now_ms - INACTIVE_EXPIRATION_MS
        kept = {k: b for k, b in self.buckets.items() if b.last_record_ms >= idle}
        if len(kept) < len(self.buckets):  # (read without a record: not in use order)
            self.buckets = kept
        return len(self.buckets) + self.base.expire(now_ms)

    def exceeded(self, user: str, client_id: str, now_ms: int) -> bool:
        """Whether the client has no credit left (a strict request is refused then)."""
        if not self.base.enabled:
            return False
        tags = self.base.metric_tags(user, client_id)
        bound = self.base.limit(tags)
        return bound is not None and self._bucket(tags, now_ms).available(bound, now_ms) < 0

    def record(self, user: str, client_id: str, mutations: int, now_ms: int) -> None:
        if not self.base.enabled or mutations <= 0:
            return
        tags = self.base.metric_tags(user, client_id)
        bound = self.base.limit(tags)
        if bound is not None:
            self._bucket(tags, now_ms).record(mutations, bound, now_ms)

    def throttle_time_ms(self, user: str, client_id: str, now_ms: int) -> int:
        if not self.base.enabled:
            return 0
        tags = self.base.metric_tags(user, client_id)
        bound = self.base.limit(tags)
        if bound is None:
            return 0
        return self._bucket(tags, now_ms).throttle_time_ms(bound, now_ms)


def _address(text: str) -> str:
    """An address in one form (``::ffff:10.0.0.1`` and ``10.0.0.1`` alike); a host name as
    given (see ``_resolve``)."""
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return text
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def _resolve(name: str) -> str | None:
    """The address an IP entity stands for: itself, or a host name's first address, IPv4
    first as Java's ``InetAddress.getByName`` (Kafka resolves the name when the quota is
    applied, and counts the connections from that address); None when it does not resolve."""
    try:
        ipaddress.ip_address(name)
        return _address(name)
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(name, None)
    except (OSError, UnicodeError):
        return None
    found = [str(info[4][0]) for info in infos]
    v4 = [a for a in found if ":" not in a]
    return _address((v4 or found)[0]) if found else None


@dataclass(slots=True)
class ConnectionRateManager:
    """KIP-612's per-IP ``connection_creation_rate`` (Kafka's ConnectionQuotas): new
    connections per second from one address, its own quota or the default IP entity's."""

    samples: int
    window_ms: int
    overrides: dict[str | None, float] = field(default_factory=dict)
    rates: dict[str, Rate] = field(default_factory=dict)
    throttled: int = 0
    on_new_state: NewState | None = None

    def expire(self, now_ms: int) -> int:
        """Drop the addresses' rates idle for an hour; how many are left."""
        self.rates = _expire(self.rates, lambda r: r.last_record_ms, now_ms)
        return len(self.rates)

    def update(self, entities: Mapping[Entity, Mapping[str, float]]) -> None:
        overrides: dict[str | None, float] = {}
        for entity, values in entities.items():
            parts = dict(entity)
            if set(parts) == {IP} and CONNECTION_CREATION_RATE in values:
                name = parts[IP]
                address = None if name is None else _resolve(name)
                if name is not None and address is None:
                    # Kafka's ClientQuotaMetadataManager fails on it; the quota is not applied.
                    log.warning("IP quota entity %s does not resolve: not applied", name)
                    continue
                overrides[address] = values[CONNECTION_CREATION_RATE]
        self.overrides = overrides

    def accept(self, host: str, now_ms: int) -> int:
        """Count a new connection from ``host``: 0 to accept it, else how long Kafka holds it
        before closing it unread (at most one window; the connection is not counted)."""
        address = _address(host)
        bound = self.overrides.get(address, self.overrides.get(None))
        if bound is None:
            return 0
        rate = self.rates.get(address)
        if rate is None:
            rate = self.rates[address] = Rate(self.samples, self.window_ms)
            if self.on_new_state is not None:
                self.on_new_state()
        else:
            _touch(self.rates, address, rate)
        rate.record(1.0, now_ms)
        throttle = min(throttle_time_ms(rate, bound, now_ms), self.window_ms)
        if throttle > 0:
            rate.record(-1.0, now_ms)  # refused: not counted
            self.throttled += 1
        return throttle
