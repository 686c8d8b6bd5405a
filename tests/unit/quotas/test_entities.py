"""Client quota entities: AlterClientQuotas validation, DescribeClientQuotas matching and the
records in ``__cluster_metadata``, as Kafka 4.4's controller."""

from __future__ import annotations

import random

import pytest

from coordinator.broker import BrokerCore
from coordinator.log.memory_log import MemoryStorage
from coordinator.quotas.entities import (
    MATCH_DEFAULT,
    MATCH_EXACT,
    MATCH_SPECIFIED,
    AlterEntry,
    DescribeFilter,
    QuotaError,
)
from txn.clock import ManualClock
from txn.errors import ErrorCode


def core(storage: MemoryStorage) -> BrokerCore:
    return BrokerCore(storage, ManualClock(), None, random.Random(3))


def alter(c: BrokerCore, *entries: AlterEntry, validate_only: bool = False) -> list[object]:
    results = c.client_quotas.alter(list(entries), validate_only)
    return [None if e is None else (e.code, e.message) for e in results.values()]


def entry(entity: dict[str, str | None], **ops: float | None) -> AlterEntry:
    return AlterEntry(tuple(entity.items()), tuple(ops.items()))


def test_alter_validation_as_kafka() -> None:
    c = core(MemoryStorage())
    bad = ErrorCode.INVALID_REQUEST
    assert alter(c, entry({}, producer_byte_rate=1.0)) == [
        (bad, "Invalid empty client quota entity")
    ]
    assert alter(c, entry({"group": "g"}, producer_byte_rate=1.0)) == [
        (bad, "Unhandled client quota entity type: group")
    ]
    assert alter(c, entry({"user": ""}, producer_byte_rate=1.0)) == [
        (bad, "Empty user not supported")
    ]
    assert alter(c, entry({"user": "u"}, foo=1.0)) == [(bad, "Invalid configuration key foo")]
    assert alter(c, entry({"user": "u"}, producer_byte_rate=-1.0)) == [
        (bad, "Quota producer_byte_rate must be greater than 0")
    ]
    assert alter(c, entry({"user": "u"}, producer_byte_rate=1.5)) == [
        (bad, "producer_byte_rate cannot be a fractional value.")
    ]
    assert alter(c, entry({"user": "u", "ip": "1.2.3.4"}, producer_byte_rate=1.0)) == [
        (
            bad,
            "Invalid quota entity combination, IP entity shouldnot be combined with User or"
            " ClientId",
        )
    ]
    assert alter(c, entry({"ip": "1.2.3.4"}, producer_byte_rate=1.0)) == [
        (bad, "Invalid configuration key producer_byte_rate")
    ]
    assert c.client_quotas.entities == {}


def test_alter_validate_only_describe_and_restart() -> None:
    storage = MemoryStorage()
    c = core(storage)
    assert alter(c, entry({"user": "u"}, producer_byte_rate=1024.0), validate_only=True) == [None]
    assert c.client_quotas.entities == {}
    assert alter(
        c,
        entry({"user": "u"}, producer_byte_rate=1024.0, request_percentage=50.5),
        entry({"user": None, "client-id": None}, consumer_byte_rate=2048.0),
        entry({"client-id": "c"}, controller_mutation_rate=10.0),
    ) == [None, None, None]
    assert c.client_quotas.produce.quota("u", "x") == 1024.0
    again = core(storage)  # replayed from __cluster_metadata
    assert again.client_quotas.entities == c.client_quotas.entities

    def describe(strict: bool, *filters: DescribeFilter) -> list[str]:
        return sorted(str(e) for e, _ in again.client_quotas.describe(list(filters), strict))

    assert len(describe(False)) == 3
    assert describe(True) == []
    assert describe(False, DescribeFilter("user", MATCH_SPECIFIED, None)) == [
        "(('client-id', None), ('user', None))",
        "(('user', 'u'),)",
    ]
    assert describe(True, DescribeFilter("user", MATCH_SPECIFIED, None)) == ["(('user', 'u'),)"]
    assert describe(False, DescribeFilter("user", MATCH_DEFAULT, None)) == [
        "(('client-id', None), ('user', None))"
    ]
    assert describe(True, DescribeFilter("client-id", MATCH_EXACT, "c")) == [
        "(('client-id', 'c'),)"
    ]
    # Removing the last key removes the entity.
    assert alter(again, entry({"client-id": "c"}, controller_mutation_rate=None)) == [None]
    assert len(describe(False)) == 2


def test_describe_filter_errors() -> None:
    c = core(MemoryStorage())
    cases = [
        ([DescribeFilter("", MATCH_SPECIFIED, None)], "Invalid empty entity type."),
        (
            [DescribeFilter("user", MATCH_SPECIFIED, None)] * 2,
            "Entity type user cannot appear more than once in the filter.",
        ),
        (
            [DescribeFilter("user", MATCH_EXACT, None)],
            "Request specified MATCH_TYPE_EXACT, but set match string to null.",
        ),
        (
            [DescribeFilter("ip", MATCH_SPECIFIED, None), DescribeFilter("user", 2, None)],
            "Invalid entity filter component combination. IP filter component should not be"
            " used with user or clientId filter component.",
        ),
        ([DescribeFilter("user", 7, None)], "Unknown match type 7"),
    ]
    for filters, message in cases:
        with pytest.raises(QuotaError) as err:
            c.client_quotas.describe(filters, False)
        assert (err.value.code, err.value.message) == (ErrorCode.INVALID_REQUEST, message)
    with pytest.raises(QuotaError) as err:
        c.client_quotas.describe([DescribeFilter("group", MATCH_SPECIFIED, None)], False)
    assert err.value.code == ErrorCode.UNSUPPORTED_VERSION


def test_duplicate_entities_and_keys() -> None:
    c = core(MemoryStorage())
    results = alter(
        c,
        entry({"user": "u"}, producer_byte_rate=1.0),
        entry({"user": "u"}, consumer_byte_rate=1.0),
    )
    assert len(results) == 1 and isinstance(results[0], tuple)
    assert "Ignoring duplicate entity" in str(results[0][1])


def test_quota_figures_for_the_metrics() -> None:
    c = core(MemoryStorage())
    assert alter(c, entry({"client-id": "c"}, producer_byte_rate=1024.0)) == [None]
    quotas = c.client_quotas
    now = c.clock.now_ms()
    throttle = quotas.produce.record("u", "c", 102400.0, now)
    quotas.produce.throttled("u", "c", throttle, now)
    figures = {(name, tags["quota-type"]): value for name, value, tags in quotas.figures()}
    assert figures[("client-quota-rate", "Produce")] == 102400.0 / 10
    assert figures[("client-quota-throttles", "Produce")] == 1
    assert figures[("client-quota-throttle-time", "Produce")] == throttle > 0
    assert figures[("client-quota-throttle-time-avg", "Produce")] == throttle
    quotas.produce.throttled("u", "c", 2 * throttle, now + 1)
    figures = {(name, tags["quota-type"]): value for name, value, tags in quotas.figures()}
    assert figures[("client-quota-throttle-time-avg", "Produce")] == 1.5 * throttle
    c.clock.advance(60_000)  # two windows of 30 s later: no throttle to average
    names = {name for name, _value, _tags in quotas.figures()}
    assert "client-quota-throttle-time-avg" not in names
