"""Kafka's broker-wide and per-listener connection creation rate (``ConnectionQuotas``,
KIP-612): ``max.connection.creation.rate`` new connections per second over the broker and,
by ``listener.name.<listener>.max.connection.creation.rate`` (default the broker-wide
value), over each listener.

Each new connection is recorded on the broker's rate and on its listener's, even over the
quota; the listener then waits, before accepting the connection, the longer of the two
throttle times (at most one quota window), as Kafka's acceptor does.  Times come from the
caller (the broker's Clock)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from coordinator.quotas.rates import Rate, throttle_time_ms
from txn.config import BrokerConfig

__all__ = ["ConnectionCreationRates"]

KEY = "max.connection.creation.rate"


def _listener_rate(config: BrokerConfig, listener: str, default: int) -> int:
    text = config.get(f"listener.name.{listener.lower()}.{KEY}")
    if text is None:
        return default
    try:
        return int(str(text))
    except ValueError:
        return default


def _throttle(rate: Rate, quota: int, now_ms: int, window_ms: int) -> int:
    if quota <= 0:  # Kafka: an infinite throttle time, bounded by one window
        return window_ms
    return throttle_time_ms(rate, float(quota), now_ms)


@dataclass(slots=True)
class ConnectionCreationRates:
    """The broker's and its listeners' connection creation rates."""

    samples: int
    window_ms: int
    broker_quota: int
    listener_quotas: dict[str, int] = field(default_factory=dict)
    broker_rate: Rate | None = None
    listener_rates: dict[str, Rate] = field(default_factory=dict)
    #: Throttle times applied per listener (count, total ms): Kafka's
    #: ``connection-accept-throttle-time``.
    throttles: dict[str, tuple[int, int]] = field(default_factory=dict)

    @classmethod
    def from_config(
        cls, config: BrokerConfig, listeners: Iterable[str] = ()
    ) -> ConnectionCreationRates:
        out = cls(
            config.get_int("quota.window.num"),
            config.get_int("quota.window.size.seconds") * 1000,
            config.get_int(KEY),
        )
        out.broker_rate = Rate(out.samples, out.window_ms)
        out.configure(config, listeners)
        return out

    def configure(self, config: BrokerConfig, listeners: Iterable[str]) -> None:
        """New quotas (at start and on dynamic config changes); the rates are kept."""
        self.broker_quota = config.get_int(KEY)
        self.listener_quotas = {
            name.upper(): _listener_rate(config, name, self.broker_quota) for name in listeners
        }

    def record(self, listener: str, now_ms: int) -> int:
        """Count a new connection on ``listener``: the milliseconds to wait before accepting
        it (0: at once)."""
        name = listener.upper()
        assert self.broker_rate is not None
        self.broker_rate.record(1.0, now_ms)
        throttle = _throttle(self.broker_rate, self.broker_quota, now_ms, self.window_ms)
        quota = self.listener_quotas.get(name, self.broker_quota)
        rate = self.listener_rates.get(name)
        if rate is None:
            rate = self.listener_rates[name] = Rate(self.samples, self.window_ms)
        rate.record(1.0, now_ms)
        throttle = max(throttle, _throttle(rate, quota, now_ms, self.window_ms))
        throttle = min(throttle, self.window_ms)
        if throttle > 0:
            count, total = self.throttles.get(name, (0, 0))
            self.throttles[name] = (count + 1, total + throttle)
        return throttle
