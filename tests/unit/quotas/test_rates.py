"""Kafka's windowed rate and throttle times, on a manual clock."""

from __future__ import annotations

from coordinator.quotas.managers import ClientQuotaManager
from coordinator.quotas.rates import Rate, TokenBucket, throttle_time_ms

USER = (("user", "alice"),)


def test_rate_is_measured_over_at_least_samples_minus_one_windows() -> None:
    rate = Rate(11, 1000)
    rate.record(1000, 0)
    # Nothing elapsed yet: the rate divides by 10 full windows.
    assert rate.window_size_ms(0) == 10_000
    assert rate.measure(0) == 100.0
    rate.record(1000, 15_000)  # the first window is older than 11 windows: reset
    assert rate.measure(15_000) == 100.0


def test_throttle_time_as_kafka_computes_it() -> None:
    rate = Rate(11, 1000)
    rate.record(2000, 0)  # 200 B/s over 10 s against a quota of 100 B/s
    assert throttle_time_ms(rate, 100.0, 0) == 10_000  # (200 - 100) / 100 * 10 s
    assert throttle_time_ms(rate, 400.0, 0) == 0


def test_manager_throttles_a_client_over_its_quota() -> None:
    produce = ClientQuotaManager("producer_byte_rate", 11, 1000)
    assert produce.record("alice", "c1", 10**9, 0) == 0  # no quota configured: not recorded
    produce.update({USER: {"producer_byte_rate": 1024.0}})
    now = 1_000_000
    assert produce.record("alice", "c1", 5120, now) == 0  # 512 B/s over 10 s
    throttle = produce.record("alice", "c1", 10240, now + 100)  # 1536 B/s
    assert throttle == round((15360 / 10.1 - 1024) / 1024 * 10_100)
    # Another client id of the same user shares the user's rate.
    assert produce.record("alice", "c2", 1, now + 200) > 0
    assert produce.record("bob", "c1", 10**6, now + 200) == 0  # bob has no quota
    assert produce.max_value_in_window("alice", "x") == 1024.0 * 10


def test_precedence_of_quota_entities() -> None:
    m = ClientQuotaManager("consumer_byte_rate", 11, 1000)
    entities = {
        (("client-id", None),): {"consumer_byte_rate": 1.0},
        (("client-id", "c"),): {"consumer_byte_rate": 2.0},
        (("user", None),): {"consumer_byte_rate": 3.0},
        (("client-id", None), ("user", None)): {"consumer_byte_rate": 4.0},
        (("user", "u"),): {"consumer_byte_rate": 5.0},
        (("client-id", "c"), ("user", "u")): {"consumer_byte_rate": 6.0},
    }
    m.update(entities)
    assert m.quota("u", "c") == 6.0
    assert m.quota("u", "d") == 5.0
    assert m.quota("v", "c") == 4.0
    assert m.metric_tags("u", "d") == ("u", "")
    del entities[(("client-id", None), ("user", None))]
    m.update(entities)
    assert m.quota("v", "c") == 3.0
    assert m.metric_tags("v", "c") == ("v", "")
    del entities[(("user", None),)]
    m.update(entities)
    assert m.quota("v", "c") == 2.0
    assert m.quota("v", "e") == 1.0
    assert m.metric_tags("v", "e") == ("", "e")


def test_request_quota_bounds_its_throttle_by_one_window() -> None:
    m = ClientQuotaManager("request_percentage", 11, 1000, max_throttle_ms=1000)
    m.update({USER: {"request_percentage": 1.0}})
    assert m.record("alice", "c", 10_000.0, 0) == 1000


def test_token_bucket() -> None:
    bucket = TokenBucket(11, 1000)
    bucket.record(30, 2.0, 0)  # a burst of 22 credits, 30 taken
    assert bucket.available(2.0, 0) == -8
    assert bucket.throttle_time_ms(2.0, 0) == 4000
    assert bucket.throttle_time_ms(2.0, 4000) == 0


def test_peek_agrees_with_measure() -> None:
    rate = Rate(11, 1000)
    for t in range(0, 30_000, 700):
        rate.record(100, t)
        assert rate.peek(t + 350) == Rate.measure(rate, t + 350)


def test_connection_creation_rate_per_ip() -> None:
    from coordinator.quotas.managers import ConnectionRateManager  # noqa: PLC0415

    m = ConnectionRateManager(11, 1000)
    assert m.accept("10.0.0.1", 0) == 0  # no quota
    m.update({(("ip", "10.0.0.1"),): {"connection_creation_rate": 2.0}})
    accepted = [m.accept("::ffff:10.0.0.1", 0) for _ in range(25)]
    assert accepted[:20] == [0] * 20  # 20 in the first 10 s of windows
    assert all(0 < t <= 1000 for t in accepted[20:])  # at most one window
    assert m.accept("10.0.0.2", 0) == 0  # another address, and no default
    m.update({(("ip", None),): {"connection_creation_rate": 1.0}})
    assert [m.accept("10.0.0.2", 0) for _ in range(11)][-1] > 0


def test_an_ip_entity_named_by_a_host_name_counts_its_address() -> None:
    from coordinator.quotas.managers import ConnectionRateManager  # noqa: PLC0415

    m = ConnectionRateManager(11, 1000)
    # Kafka resolves the name (InetAddress.getByName, IPv4 first) when the quota is applied.
    m.update({(("ip", "localhost"),): {"connection_creation_rate": 1.0}})
    assert list(m.overrides) == ["127.0.0.1"]
    assert [m.accept("127.0.0.1", 0) for _ in range(11)][-1] > 0
    m.update({(("ip", "no-such-host.invalid"),): {"connection_creation_rate": 1.0}})
    assert m.overrides == {}  # does not resolve: not applied
