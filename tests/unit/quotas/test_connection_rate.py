"""``max.connection.creation.rate``, broker-wide and per listener, as Kafka's
ConnectionQuotas: every new connection is counted, and one over either rate waits the longer
throttle time (at most one quota window) before it is accepted."""

from __future__ import annotations

from coordinator.quotas.connection_rate import ConnectionCreationRates
from txn.config import BrokerConfig


def _rates(**configs: str) -> ConnectionCreationRates:
    config = BrokerConfig({"quota.window.num": "3", **configs})
    return ConnectionCreationRates.from_config(config, ["PLAINTEXT", "INTERNAL"])


def test_no_wait_by_default() -> None:
    rates = _rates()
    assert all(rates.record("PLAINTEXT", 0) == 0 for _ in range(10_000))


def test_broker_wide_rate_counts_every_listener() -> None:
    rates = _rates(**{"max.connection.creation.rate": "2"})
    # Two windows of 1 s at least: four connections at once, then waits of at most 1 s.
    assert [rates.record(n, 0) for n in ("PLAINTEXT", "INTERNAL") * 2] == [0, 0, 0, 0]
    wait = rates.record("INTERNAL", 0)
    assert wait == 500  # (5/2 s - 2) / 2 * 2000 ms
    assert rates.record("PLAINTEXT", 0) == 1000  # bounded by one window
    assert rates.throttles == {"INTERNAL": (1, 500), "PLAINTEXT": (1, 1000)}


def test_listener_rate_overrides_the_broker_wide_one() -> None:
    key = "listener.name.internal.max.connection.creation.rate"
    rates = _rates(**{key: "1"})
    assert [rates.record("INTERNAL", 0) for _ in range(3)] == [0, 0, 1000]
    assert rates.record("PLAINTEXT", 0) == 0  # its own rate, and no broker-wide limit
    rates.configure(BrokerConfig({"quota.window.num": "3"}), ["PLAINTEXT", "INTERNAL"])
    assert rates.record("INTERNAL", 0) == 0


def test_zero_waits_one_window() -> None:
    rates = _rates(**{"max.connection.creation.rate": "0"})
    assert rates.record("PLAINTEXT", 0) == 1000
