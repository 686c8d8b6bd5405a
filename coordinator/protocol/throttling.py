"""Client quota enforcement on the request path, as Kafka's KafkaApis applies its quota
managers (KIP-13, KIP-124, KIP-219).

For each answered request the broker records the client's usage -- a Produce its request
size against ``producer_byte_rate``, a Fetch its response size against
``consumer_byte_rate``, every request its handling time against ``request_percentage`` -- and
answers the largest throttle time in the response's ThrottleTimeMs.  A throttled Fetch
carries no data, and a Fetch never asks for more than its quota lets through in one window.
The server then mutes the connection for the throttle time after sending the response
(KIP-219); to a client too old to throttle itself (Produce below v6, Fetch below v8) the
response is sent after the wait.  The decisions are the quota managers'
(``coordinator.quotas``), on the broker's Clock.
"""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from coordinator.protocol.wire import DecodedRequest
from coordinator.quotas.managers import MutationQuotaManager, user_name
from coordinator.quotas.store import ClientQuotas
from txn.api_keys import ApiKey
from txn.errors import ErrorCode

__all__ = [
    "EXEMPT",
    "MutationQuota",
    "Throttle",
    "Throttler",
    "mutation_quota",
    "throttled_fetch",
    "with_throttle_time",
]

#: Requests no quota applies to: the ones before and during authentication.
EXEMPT = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})

#: The first version of CreateTopics, CreatePartitions and DeleteTopics whose mutations are
#: refused over the controller mutation quota (KIP-599; older ones are throttled only).
_STRICT_MUTATIONS = {ApiKey.CREATE_TOPICS: 6, ApiKey.CREATE_PARTITIONS: 3, ApiKey.DELETE_TOPICS: 5}


@dataclass(slots=True)
class MutationQuota:
    """The controller mutation quota of one CreateTopics, CreatePartitions or DeleteTopics
    (Kafka's Strict/PermissiveControllerMutationQuota)."""

    manager: MutationQuotaManager
    user: str
    client_id: str
    strict: bool
    now_ms: int
    throttle_ms: int = 0

    def permit(self, partitions: int) -> bool:
        """Take ``partitions`` mutations: False (THROTTLING_QUOTA_EXCEEDED) when a strict
        quota has no credit left before them; a permissive one only throttles."""
        m, user, client, now = self.manager, self.user, self.client_id, self.now_ms
        if self.strict:
            if m.exceeded(user, client, now):
                self.throttle_ms = m.throttle_time_ms(user, client, now)
                return False
            m.record(user, client, partitions, now)
            return True
        m.record(user, client, partitions, now)
        self.throttle_ms = max(self.throttle_ms, m.throttle_time_ms(user, client, now))
        return True


_MUTATION: contextvars.ContextVar[MutationQuota | None] = contextvars.ContextVar(
    "mutation_quota", default=None
)


def mutation_quota() -> MutationQuota | None:
    """The controller mutation quota of the request being handled (None: no quota)."""
    return _MUTATION.get()


@dataclass(frozen=True, slots=True)
class Throttle:
    """A decision: milliseconds to mute the connection for after the response.  As Kafka
    4.4's, the response is sent at once whatever its version: a client too old to throttle
    itself (before KIP-219) has its next requests wait unread."""

    ms: int = 0


NO_THROTTLE = Throttle()


def throttled_fetch(throttle_ms: int) -> dict[str, Any]:
    """Kafka's answer to a throttled Fetch: no partitions (``getThrottledResponse``)."""
    return {
        "error_code": ErrorCode.NONE,
        "responses": (),
        "session_id": 0,
        "throttle_time": throttle_ms,
    }


def with_throttle_time(body: Any, throttle_ms: int) -> dict[str, Any]:
    """The response with ThrottleTimeMs set."""
    fields = (
        dict(body)
        if isinstance(body, Mapping)
        else {f.name: getattr(body, f.name) for f in dataclasses.fields(body)}
    )
    return {**fields, "throttle_time": throttle_ms}


class Throttler:
    """Applies the broker's client quotas to answered requests."""

    def __init__(self, quotas: ClientQuotas) -> None:
        self.quotas = quotas

    @staticmethod
    def _decision(ms: int) -> Throttle:
        return Throttle(ms) if ms > 0 else NO_THROTTLE

    def request(
        self,
        key: int,
        version: int,
        principal: str,
        client_id: str | None,
        request_bytes: int,
        handler_ms: float,
        answered: bool,
    ) -> Throttle:
        """The throttle of a request other than a Fetch (``answered``: it has a response;
        an acks=0 Produce has none and no request-time quota, as Kafka)."""
        if key in EXEMPT:
            return NO_THROTTLE
        user, client = user_name(principal), client_id or ""
        now = self.quotas.clock.now_ms()
        bandwidth = 0
        if key == ApiKey.PRODUCE:
            bandwidth = self.quotas.produce.record(user, client, request_bytes, now)
        request_ms = (
            self.quotas.request.record(user, client, handler_ms / 10.0, now) if answered else 0
        )
        mutation = _MUTATION.get()
        if mutation is not None:
            _MUTATION.set(None)
            bandwidth = max(bandwidth, mutation.throttle_ms)
        if bandwidth > request_ms:
            manager = self.quotas.produce if mutation is None else self.quotas.mutation.base
            manager.throttled(user, client, bandwidth, now)
        else:
            self.quotas.request.throttled(user, client, request_ms, now)
        return self._decision(max(bandwidth, request_ms))

    def begin(self, key: int, version: int, principal: str, client_id: str | None) -> None:
        """Before a request is handled: the controller mutation quota of a topic mutation."""
        manager = self.quotas.mutation
        if key not in _STRICT_MUTATIONS or not manager.base.enabled:
            _MUTATION.set(None)
            return
        strict = version >= _STRICT_MUTATIONS[ApiKey(key)]
        now = self.quotas.clock.now_ms()
        quota = MutationQuota(manager, user_name(principal), client_id or "", strict, now)
        _MUTATION.set(quota)

    def limit_fetch(self, principal: str, request: DecodedRequest[Any]) -> DecodedRequest[Any]:
        """A consumer Fetch or a ShareFetch asks for at most what its ``consumer_byte_rate``
        lets through in one window (Kafka: ``maxValueInQuotaWindow`` caps max_bytes, and
        min_bytes by it)."""
        cap = self.quotas.fetch.max_value_in_window(user_name(principal), request.client_id or "")
        body = request.body
        if cap is None or int(body.max_bytes) <= cap:
            return request
        max_bytes = int(cap)
        limited = dataclasses.replace(
            body, max_bytes=max_bytes, min_bytes=min(int(body.min_bytes), max_bytes)
        )
        return dataclasses.replace(request, body=limited)

    def share_fetch(
        self,
        version: int,
        principal: str,
        client_id: str | None,
        request_bytes: int,
        handler_ms: float,
        body: object,
    ) -> Throttle:
        """The throttle of a ShareFetch: as Kafka 4.4's KafkaApis, a ShareFetch answered with
        a top-level error alone (``getErrorResponse``) is under the request-time quota, any
        other is sent without a quota (neither ``consumer_byte_rate`` nor
        ``request_percentage`` records or throttles it)."""
        fields = body if isinstance(body, Mapping) else None
        none = ErrorCode.NONE
        error = fields.get("error_code", none) if fields else getattr(body, "error_code", none)
        responses = fields.get("responses", ()) if fields else getattr(body, "responses", ())
        if error == none or responses:
            return NO_THROTTLE
        return self.request(
            ApiKey.SHARE_FETCH,
            version,
            principal,
            client_id,
            request_bytes,
            handler_ms,
            answered=True,
        )

    def fetch(
        self,
        version: int,
        principal: str,
        client_id: str | None,
        response_bytes: int,
        handler_ms: float,
    ) -> Throttle:
        """The throttle of a consumer Fetch answering ``response_bytes``."""
        user, client = user_name(principal), client_id or ""
        now = self.quotas.clock.now_ms()
        bandwidth = self.quotas.fetch.record(user, client, response_bytes, now)
        request_ms = self.quotas.request.record(user, client, handler_ms / 10.0, now)
        if bandwidth > 0 or request_ms > 0:
            # Kafka answers a throttled Fetch with no data (``throttled_fetch``): its bytes
            # are taken back from the rate.
            self.quotas.fetch.unrecord(user, client, response_bytes, now)
        if bandwidth > request_ms:
            self.quotas.fetch.throttled(user, client, bandwidth, now)
        else:
            self.quotas.request.throttled(user, client, request_ms, now)
        return self._decision(max(bandwidth, request_ms))
