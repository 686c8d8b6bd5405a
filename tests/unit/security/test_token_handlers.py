"""The delegation-token RPCs as the gate answers them: Kafka's broker checks (listener,
token-authenticated connection, CREATE_TOKENS for another owner) and the ACLs that let a
user describe other users' tokens."""

from __future__ import annotations

import asyncio
import datetime
import random
from types import SimpleNamespace
from typing import Any

from coordinator.broker import BrokerCore
from coordinator.log.memory_log import MemoryStorage
from coordinator.protocol.session import Session
from coordinator.protocol.token_handlers import DelegationTokenHandlers
from coordinator.protocol.wire import DecodedRequest
from coordinator.security.acls import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    Authorizer,
    PatternType,
    ResourceType,
)
from coordinator.security.listeners import Listener, SecurityProtocol
from coordinator.security.token_store import DelegationTokenStore
from txn.api_keys import ApiKey
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode

NO_LIMIT = datetime.timedelta(milliseconds=-1)


def _store() -> DelegationTokenStore:
    config = BrokerConfig({"delegation.token.secret.key": "k"})
    return BrokerCore(MemoryStorage(), ManualClock(0), config, random.Random(1)).tokens


def _session(user: str, protocol: SecurityProtocol = SecurityProtocol.SASL_PLAINTEXT) -> Session:
    return Session(Listener(protocol.value, "127.0.0.1", 0, protocol), "127.0.0.1", f"User:{user}")


def _req(key: ApiKey, version: int, **body: Any) -> DecodedRequest[Any]:
    return DecodedRequest(key, version, 1, "t", SimpleNamespace(**body))


def _renewer(name: str) -> SimpleNamespace:
    return SimpleNamespace(principal_type="User", principal_name=name)


def _grant(
    authorizer: Authorizer, user: str, op: AclOperation, rt: ResourceType, name: str
) -> None:
    authorizer.create(
        [
            AclBinding(
                rt, name, PatternType.LITERAL, f"User:{user}", "*", op, AclPermissionType.ALLOW
            )
        ]
    )


def test_broker_checks_and_acls() -> None:
    store = _store()
    authorizer = Authorizer(
        [], super_users=frozenset(), allow_if_no_acl=False, persist=lambda _a: None
    )
    handlers = DelegationTokenHandlers(lambda: store, lambda: authorizer)

    def create(session: Session, owner: str | None = None, version: int = 3) -> Any:
        body: dict[str, Any] = {"renewers": (_renewer("bob"),), "max_lifetime": NO_LIMIT}
        if version >= 3:
            body |= {
                "owner_principal_type": "User" if owner else None,
                "owner_principal_name": owner,
            }
        req = _req(ApiKey.CREATE_DELEGATION_TOKEN, version, **body)
        return asyncio.run(handlers.create_delegation_token(session, req))

    def describe(session: Session, owners: Any = None) -> list[str]:
        req = _req(ApiKey.DESCRIBE_DELEGATION_TOKEN, 3, owners=owners)
        resp = asyncio.run(handlers.describe_delegation_token(session, req))
        assert resp.error_code is ErrorCode.NONE
        return [t.token_id for t in resp.tokens]

    plaintext = create(_session("alice", SecurityProtocol.PLAINTEXT))
    assert plaintext.error_code is ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    assert plaintext.issue_timestamp == -1 and plaintext.principal_name == "alice"
    one_way_ssl = Session(
        Listener("SSL", "127.0.0.1", 0, SecurityProtocol.SSL), "127.0.0.1", "User:ANONYMOUS"
    )
    assert create(one_way_ssl).error_code is ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    with_token = _session("alice")
    with_token.token_authenticated = True
    assert create(with_token).error_code is ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED

    alices = create(_session("alice"), version=1)
    assert alices.error_code is ErrorCode.NONE and alices.principal_name == "alice"
    for_carol = create(_session("alice"), owner="carol")
    assert for_carol.error_code is ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
    _grant(authorizer, "alice", AclOperation.CREATE_TOKENS, ResourceType.USER, "User:carol")
    carols = create(_session("alice"), owner="carol")
    assert (carols.error_code, carols.principal_name) == (ErrorCode.NONE, "carol")

    assert describe(_session("alice")) == [alices.token_id, carols.token_id]  # requester too
    assert describe(_session("bob")) == [alices.token_id, carols.token_id]  # renewer
    assert describe(_session("dave")) == []
    assert describe(_session("dave"), owners=()) == []
    _grant(authorizer, "dave", AclOperation.DESCRIBE_TOKENS, ResourceType.USER, "User:carol")
    assert describe(_session("dave")) == [carols.token_id]
    _grant(
        authorizer, "dave", AclOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN, alices.token_id
    )
    assert describe(_session("dave")) == [alices.token_id, carols.token_id]
    assert describe(_session("dave"), owners=(_renewer("carol"),)) == [carols.token_id]

    # The requester may describe carol's token but not renew it: only owner and renewers.
    renew = _req(ApiKey.RENEW_DELEGATION_TOKEN, 2, hmac=carols.hmac, renew_period=NO_LIMIT)
    refused = asyncio.run(handlers.renew_delegation_token(_session("alice"), renew))
    assert refused.error_code is ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    renewed = asyncio.run(handlers.renew_delegation_token(_session("bob"), renew))
    assert renewed.error_code is ErrorCode.NONE


def test_disabled_answers() -> None:
    store = BrokerCore(MemoryStorage(), ManualClock(0), BrokerConfig(), random.Random(1)).tokens
    handlers = DelegationTokenHandlers(lambda: store, lambda: None)
    session = _session("alice")
    req = _req(ApiKey.DESCRIBE_DELEGATION_TOKEN, 3, owners=None)
    described = asyncio.run(handlers.describe_delegation_token(session, req))
    assert described.error_code is ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    req = _req(ApiKey.CREATE_DELEGATION_TOKEN, 2, renewers=(), max_lifetime=NO_LIMIT)
    created = asyncio.run(handlers.create_delegation_token(session, req))
    assert created.error_code is ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    assert (created.issue_timestamp, created.token_id, created.hmac) == (0, "", b"")
