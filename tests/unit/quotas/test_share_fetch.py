"""ShareFetch and the client quotas, as Kafka 4.4's KafkaApis: its MaxBytes is capped by the
``consumer_byte_rate`` window, its responses are sent without a quota unless they carry a
top-level error alone (then the request-time quota applies, as to other requests)."""

from __future__ import annotations

import dataclasses
import random
import uuid

from coordinator.broker import BrokerCore
from coordinator.log.memory_log import MemoryStorage
from coordinator.protocol.share_messages import ShareFetchResponse, ShareFetchTopic
from coordinator.protocol.throttling import NO_THROTTLE, Throttler
from coordinator.protocol.wire import DecodedRequest
from coordinator.quotas.entities import AlterEntry
from txn.api_keys import ApiKey
from txn.clock import ManualClock
from txn.errors import ErrorCode

CLIENT = (("client-id", "c"),)


@dataclasses.dataclass(frozen=True)
class _Body:
    max_bytes: int
    min_bytes: int


def _throttler(**ops: float) -> tuple[Throttler, BrokerCore]:
    core = BrokerCore(MemoryStorage(), ManualClock(), None, random.Random(3))
    assert core.client_quotas.alter([AlterEntry(CLIENT, tuple(ops.items()))], False) == {
        CLIENT: None
    }
    return Throttler(core.client_quotas), core


def test_share_fetch_max_bytes_is_capped_by_the_consumer_byte_rate() -> None:
    throttler, _core = _throttler(consumer_byte_rate=1024.0)
    request = DecodedRequest(ApiKey.SHARE_FETCH, 1, 1, "c", _Body(1 << 20, 1 << 20))
    limited = throttler.limit_fetch("User:u", request)
    assert limited.body == _Body(1024 * 10, 1024 * 10)  # quota x (quota.window.num - 1) s
    renew = DecodedRequest(ApiKey.SHARE_FETCH, 2, 1, "c", _Body(0, 0))
    assert throttler.limit_fetch("User:u", renew) is renew


def test_share_fetch_answers_are_not_throttled_nor_recorded() -> None:
    throttler, core = _throttler(request_percentage=0.01, consumer_byte_rate=1.0)
    topic = ShareFetchTopic(topic_id=uuid.UUID(int=1), partitions=())
    answer = ShareFetchResponse(error_code=ErrorCode.NONE, responses=(topic,))
    for body in (answer, ShareFetchResponse(error_code=ErrorCode.NONE)):
        assert throttler.share_fetch(2, "User:u", "c", 100, 500.0, body) == NO_THROTTLE
    quotas = core.client_quotas
    assert not quotas.request.rates and not quotas.fetch.rates


def test_a_share_fetch_error_response_is_under_the_request_quota() -> None:
    throttler, core = _throttler(request_percentage=0.01)
    error = ShareFetchResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    assert throttler.share_fetch(2, "User:u", "c", 100, 500.0, error).ms > 0
    mapped = {"error_code": ErrorCode.INVALID_REQUEST, "responses": []}
    assert throttler.share_fetch(2, "User:u", "c", 100, 500.0, mapped).ms > 0
    assert core.client_quotas.request.rates
