"""CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken and
DescribeDelegationToken (KIP-48, KIP-373) as Kafka 4.4's broker and controller answer them.

The broker's checks come first (Kafka's KafkaApis): a token-authenticated connection, a
PLAINTEXT one or one-way SSL (no client certificate) gets DELEGATION_TOKEN_REQUEST_NOT_ALLOWED;
creating a token for another owner needs CREATE_TOKENS on that USER resource
(DELEGATION_TOKEN_AUTHORIZATION_FAILED); renewers must be users (INVALID_PRINCIPAL_TYPE).
Then the controller's rules (``coordinator.security.tokens``), whose records are appended
to ``__cluster_metadata`` before the answer (``coordinator.security.token_store``).
Describe shows a requester the tokens it owns, renews or requested, plus those it may
DESCRIBE (DELEGATION_TOKEN resource) or whose owner it may DESCRIBE_TOKENS (USER resource).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from coordinator.protocol.admin_request_views import (
    CreateDelegationTokenRequestV3To3View,
    CreateDelegationTokenRequestView,
    DescribeDelegationTokenRequestView,
    ExpireDelegationTokenRequestView,
    RenewDelegationTokenRequestView,
)
from coordinator.protocol.responses import api, handler_table, millis
from coordinator.protocol.token_messages import (
    CreateDelegationTokenResponse,
    DescribedDelegationToken,
    DescribedDelegationTokenRenewer,
    DescribeDelegationTokenResponse,
    ExpireDelegationTokenResponse,
    RenewDelegationTokenResponse,
)
from coordinator.protocol.wire import DecodedRequest
from coordinator.security.acls import AclOperation, Authorizer, ResourceType
from coordinator.security.listeners import SecurityProtocol
from coordinator.security.tls import ANONYMOUS
from coordinator.security.token_store import DelegationTokenStore
from coordinator.security.tokens import (
    ERROR_TIMESTAMP,
    USER_TYPE,
    TokenInfo,
    principal_name,
    principal_type,
)
from txn.api_keys import ApiKey
from txn.errors import ErrorCode

if TYPE_CHECKING:
    from coordinator.protocol.session import Session

log = logging.getLogger("sharetxn.security")


def allow_token_requests(session: Session) -> bool:
    """Kafka's ``allowTokenRequests``: not with a token, not on PLAINTEXT, not on one-way SSL."""
    protocol = session.listener.protocol
    if session.token_authenticated or protocol is SecurityProtocol.PLAINTEXT:
        return False
    return not (protocol is SecurityProtocol.SSL and session.principal == ANONYMOUS)


class DelegationTokenHandlers:
    def __init__(
        self,
        store: Callable[[], DelegationTokenStore | None],
        authorizer: Callable[[], Authorizer | None],
    ) -> None:
        self._store = store
        self._authorizer = authorizer
        self.table = handler_table(self)

    def _allowed(
        self, session: Session, operation: AclOperation, resource: ResourceType, name: str
    ) -> bool:
        authorizer = self._authorizer()
        return authorizer is None or authorizer.authorize(
            session.principal, session.client_host, operation, resource, name
        )

    @api(ApiKey.CREATE_DELEGATION_TOKEN)
    async def create_delegation_token(
        self, session: Session, req: DecodedRequest[CreateDelegationTokenRequestView]
    ) -> CreateDelegationTokenResponse:
        body = req.body
        requester = session.principal
        owner = requester
        if req.api_version >= 3:
            v3 = cast(CreateDelegationTokenRequestV3To3View, body)
            if v3.owner_principal_name:
                owner = f"{v3.owner_principal_type}:{v3.owner_principal_name}"
        renewers = [f"{r.principal_type}:{r.principal_name}" for r in body.renewers]

        def answer(code: ErrorCode, **fields: object) -> CreateDelegationTokenResponse:
            return CreateDelegationTokenResponse(
                error_code=code,
                principal_type=principal_type(owner),
                principal_name=principal_name(owner),
                token_requester_principal_type=principal_type(requester),
                token_requester_principal_name=principal_name(requester),
                **fields,  # type: ignore[arg-type]
            )

        def refused(code: ErrorCode) -> CreateDelegationTokenResponse:
            # Kafka's prepareResponse before the controller: -1 times, no id, no HMAC.
            t = ERROR_TIMESTAMP
            return answer(code, issue_timestamp=t, expiry_timestamp=t, max_timestamp=t)

        if not allow_token_requests(session):
            return refused(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
        if owner != requester and not self._allowed(
            session, AclOperation.CREATE_TOKENS, ResourceType.USER, owner
        ):
            return refused(ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED)
        if any(principal_type(r) != USER_TYPE for r in renewers):
            return refused(ErrorCode.INVALID_PRINCIPAL_TYPE)
        store = self._store()
        if store is None or not store.tokens.enabled:
            return answer(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        result = store.tokens.create(
            requester, owner, renewers, millis(body.max_lifetime), store.now_ms()
        )
        if result.error is not ErrorCode.NONE or result.token is None:
            return answer(result.error)
        store.apply(result.records)
        token = result.token
        log.info("%s created delegation token %s for %s", requester, token.token_id, owner)
        return answer(
            ErrorCode.NONE,
            issue_timestamp=token.issue_ms,
            expiry_timestamp=token.expiry_ms,
            max_timestamp=token.max_ms,
            token_id=token.token_id,
            hmac=result.hmac,
        )

    @api(ApiKey.RENEW_DELEGATION_TOKEN)
    async def renew_delegation_token(
        self, session: Session, req: DecodedRequest[RenewDelegationTokenRequestView]
    ) -> RenewDelegationTokenResponse:
        if not allow_token_requests(session):
            return RenewDelegationTokenResponse(
                error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
                expiry_timestamp=ERROR_TIMESTAMP,
            )
        store = self._store()
        if store is None or not store.tokens.enabled:
            return RenewDelegationTokenResponse(error_code=ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        result = store.tokens.renew(
            session.principal,
            bytes(req.body.hmac),
            millis(req.body.renew_period),
            store.now_ms(),
        )
        store.apply(result.records)
        return RenewDelegationTokenResponse(
            error_code=result.error, expiry_timestamp=result.expiry_ms
        )

    @api(ApiKey.EXPIRE_DELEGATION_TOKEN)
    async def expire_delegation_token(
        self, session: Session, req: DecodedRequest[ExpireDelegationTokenRequestView]
    ) -> ExpireDelegationTokenResponse:
        if not allow_token_requests(session):
            return ExpireDelegationTokenResponse(
                error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
                expiry_timestamp=ERROR_TIMESTAMP,
            )
        store = self._store()
        if store is None or not store.tokens.enabled:
            return ExpireDelegationTokenResponse(
                error_code=ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
            )
        result = store.tokens.expire(
            session.principal,
            bytes(req.body.hmac),
            millis(req.body.expiry_time_period),
            store.now_ms(),
        )
        store.apply(result.records)
        return ExpireDelegationTokenResponse(
            error_code=result.error, expiry_timestamp=result.expiry_ms
        )

    @api(ApiKey.DESCRIBE_DELEGATION_TOKEN)
    async def describe_delegation_token(
        self, session: Session, req: DecodedRequest[DescribeDelegationTokenRequestView]
    ) -> DescribeDelegationTokenResponse:
        if not allow_token_requests(session):
            return DescribeDelegationTokenResponse(
                error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
            )
        store = self._store()
        if store is None or not store.tokens.enabled:
            return DescribeDelegationTokenResponse(
                error_code=ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
            )
        owners = req.body.owners
        if owners is not None and not owners:
            return DescribeDelegationTokenResponse(error_code=ErrorCode.NONE)
        wanted = (
            None if owners is None else [f"{o.principal_type}:{o.principal_name}" for o in owners]
        )

        def may_describe(token: TokenInfo) -> bool:
            return self._allowed(
                session, AclOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token.token_id
            ) or self._allowed(
                session, AclOperation.DESCRIBE_TOKENS, ResourceType.USER, token.owner
            )

        found = store.tokens.describe(session.principal, wanted, may_describe)
        return DescribeDelegationTokenResponse(
            error_code=ErrorCode.NONE,
            tokens=tuple(
                DescribedDelegationToken(
                    principal_type=principal_type(t.owner),
                    principal_name=principal_name(t.owner),
                    token_requester_principal_type=principal_type(t.requester),
                    token_requester_principal_name=principal_name(t.requester),
                    issue_timestamp=t.issue_ms,
                    expiry_timestamp=t.expiry_ms,
                    max_timestamp=t.max_ms,
                    token_id=t.token_id,
                    hmac=hmac,
                    renewers=tuple(
                        DescribedDelegationTokenRenewer(
                            principal_type=principal_type(r), principal_name=principal_name(r)
                        )
                        for r in t.renewers
                    ),
                )
                for t, hmac in found
            ),
        )
