"""DescribeClientQuotas / AlterClientQuotas handlers: ACLs (DESCRIBE_CONFIGS and
ALTER_CONFIGS on the cluster), results per entity, validate_only."""

from __future__ import annotations

import asyncio
import random
from types import SimpleNamespace
from typing import Any, cast

from coordinator.broker import BrokerCore
from coordinator.log.memory_log import MemoryStorage
from coordinator.protocol.quota_handlers import QuotaHandlers
from coordinator.protocol.session import Session
from coordinator.protocol.wire import DecodedRequest
from coordinator.security.acls import AclOperation, Authorizer
from coordinator.security.listeners import Listener, SecurityProtocol
from txn.api_keys import ApiKey
from txn.clock import ManualClock
from txn.errors import ErrorCode


class _Deny:
    def __init__(self, allowed: set[AclOperation]) -> None:
        self.allowed = allowed
        self.asked: list[AclOperation] = []

    def authorize(self, _principal: str, _host: str, op: AclOperation, *_rest: Any) -> bool:
        self.asked.append(op)
        return op in self.allowed


def _session() -> Session:
    listener = Listener("PLAINTEXT", "127.0.0.1", 0, SecurityProtocol.PLAINTEXT)
    return Session(listener, "127.0.0.1", "User:alice")


def _request(key: ApiKey, body: Any) -> DecodedRequest[Any]:
    return DecodedRequest(key, 1, 1, "c", body)


def _alter_body(validate_only: bool) -> Any:
    op = SimpleNamespace(key="producer_byte_rate", value=1024.0, remove=False)
    entity = [SimpleNamespace(entity_type="user", entity_name="u")]
    return SimpleNamespace(
        entries=(SimpleNamespace(entity=tuple(entity), ops=(op,)),), validate_only=validate_only
    )


def test_acls_and_validate_only() -> None:
    core = BrokerCore(MemoryStorage(), ManualClock(), None, random.Random(1))
    authorizer = _Deny(set())
    as_authorizer = cast("Authorizer", authorizer)  # a fake with the one method used
    handlers = QuotaHandlers(core.client_quotas, lambda: as_authorizer)
    describe = SimpleNamespace(components=(), strict=False)

    def run(key: ApiKey, body: Any) -> Any:
        return asyncio.run(handlers.table[key](_session(), _request(key, body)))

    denied = run(ApiKey.DESCRIBE_CLIENT_QUOTAS, describe)
    assert denied.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert denied.entries is None
    refused = run(ApiKey.ALTER_CLIENT_QUOTAS, _alter_body(False))
    assert [e.error_code for e in refused.entries] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
    assert authorizer.asked == [AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS]
    authorizer.allowed = {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
    checked = run(ApiKey.ALTER_CLIENT_QUOTAS, _alter_body(True))
    assert [e.error_code for e in checked.entries] == [ErrorCode.NONE]
    assert run(ApiKey.DESCRIBE_CLIENT_QUOTAS, describe).entries == ()
    run(ApiKey.ALTER_CLIENT_QUOTAS, _alter_body(False))
    (entry,) = run(ApiKey.DESCRIBE_CLIENT_QUOTAS, describe).entries
    assert [(e.entity_type, e.entity_name) for e in entry.entity] == [("user", "u")]
    assert [(v.key, v.value) for v in entry.values] == [("producer_byte_rate", 1024.0)]
