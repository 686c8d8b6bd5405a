"""Delegation tokens (KIP-48, KIP-373) as Kafka 4.4's controller keeps them.

A token is an id (a random UUID), its owner, its requester, the users allowed to renew it,
and three times: issued, expiry (renewable up to) the max.  Its password is the HMAC
(HmacSHA512 over the token id, keyed by ``delegation.token.secret.key``): the broker keeps no
password, it computes it again, so a token outlives a restart only with the same key.
Without a key tokens are disabled (DELEGATION_TOKEN_AUTH_DISABLED), as in Kafka.

Sans-IO, as a coordinator shard (DESIGN §15): each operation answers the records to append
and the response; the state changes only in ``replay``, live and when the log is read at
start.  The records are Kafka's DelegationTokenRecord and RemoveDelegationTokenRecord
(``coordinator.security.token_store`` appends them to ``__cluster_metadata``).  An owner,
requester or renewer is a principal string (``User:alice``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from coordinator.security.scram import ScramCredential, ScramMechanism, make_credential
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.limits import LONG_MAX

__all__ = [
    "DelegationTokens",
    "RemoveTokenRecord",
    "TokenInfo",
    "TokenRecord",
    "TokenResult",
    "TokenSettings",
    "decode_record",
    "encode_record",
    "token_hmac",
]

USER_TYPE = "User"
#: Kafka's metadata record types (DelegationTokenRecord, RemoveDelegationTokenRecord).
TOKEN_RECORD_TYPE = 10
REMOVE_TOKEN_RECORD_TYPE = 26
_KEY = struct.Struct(">hh")
_TOKEN_KEY = _KEY.pack(0, TOKEN_RECORD_TYPE)
_REMOVE_KEY = _KEY.pack(0, REMOVE_TOKEN_RECORD_TYPE)
#: Kafka's DelegationTokenManager.ErrorTimestamp (renew/expire refused before the controller).
ERROR_TIMESTAMP = -1


@dataclass(frozen=True, slots=True)
class TokenSettings:
    """``delegation.token.*`` configs (Kafka's DelegationTokenManagerConfigs)."""

    secret_key: str | None
    max_lifetime_ms: int
    expiry_time_ms: int
    expiry_check_interval_ms: int

    @property
    def enabled(self) -> bool:
        """Kafka's ``tokenAuthEnabled``: a secret key is set and not empty."""
        return bool(self.secret_key)

    @classmethod
    def of(cls, config: BrokerConfig) -> TokenSettings:
        return cls(
            secret_key=str(config["delegation.token.secret.key"] or "") or None,
            max_lifetime_ms=config.get_int("delegation.token.max.lifetime.ms"),
            expiry_time_ms=config.get_int("delegation.token.expiry.time.ms"),
            expiry_check_interval_ms=config.get_int("delegation.token.expiry.check.interval.ms"),
        )


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """Kafka's TokenInformation."""

    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_ms: int
    max_ms: int
    expiry_ms: int

    def owner_or_renewer(self, principal: str) -> bool:
        """Kafka's ``ownerOrRenewer`` (the requester counts, KIP-373)."""
        return principal in (self.owner, self.requester) or principal in self.renewers

    def expired(self, now_ms: int) -> bool:
        return self.max_ms < now_ms or self.expiry_ms < now_ms


@dataclass(frozen=True, slots=True)
class TokenRecord:
    """DelegationTokenRecord: the token as it is now (created, renewed or expired later)."""

    token: TokenInfo


@dataclass(frozen=True, slots=True)
class RemoveTokenRecord:
    """RemoveDelegationTokenRecord."""

    token_id: str


Record = TokenRecord | RemoveTokenRecord


@dataclass(frozen=True, slots=True)
class TokenResult:
    """What an operation answers: the records to append (then replay) and the response."""

    records: tuple[Record, ...] = ()
    error: ErrorCode = ErrorCode.NONE
    token: TokenInfo | None = None
    hmac: bytes = b""
    expiry_ms: int = 0


def token_hmac(secret_key: str, token_id: str) -> bytes:
    """HmacSHA512 of the token id keyed by the secret key (UTF-8 both), Kafka's createHmac."""
    return hmac.new(secret_key.encode(), token_id.encode(), hashlib.sha512).digest()


def new_token_id() -> str:
    """A random id as Kafka's ``Uuid.randomUuid().toString()``: 16 random bytes in URL-safe
    base64 without padding, never starting with '-'."""
    while True:
        text = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        if not text.startswith("-") and text != "AAAAAAAAAAAAAAAAAAAAAA":
            return text


def _sum(now_ms: int, duration_ms: int) -> int:
    return LONG_MAX if now_ms > LONG_MAX - duration_ms else now_ms + duration_ms


def principal_type(principal: str) -> str:
    return principal.partition(":")[0]


def principal_name(principal: str) -> str:
    return principal.partition(":")[2]


class DelegationTokens:
    """The tokens, looked up by id and by HMAC, and the SCRAM credentials they give."""

    def __init__(self, settings: TokenSettings, new_id: Callable[[], str] = new_token_id) -> None:
        self.settings = settings
        self._new_id = new_id
        self.tokens: dict[str, TokenInfo] = {}
        self._by_hmac: dict[bytes, str] = {}
        self._credentials: dict[tuple[str, ScramMechanism], ScramCredential] = {}

    @property
    def enabled(self) -> bool:
        return self.settings.enabled

    def hmac_of(self, token_id: str) -> bytes:
        assert self.settings.secret_key
        return token_hmac(self.settings.secret_key, token_id)

    # -- replay: the only mutation ---------------------------------------------------------

    def replay(self, record: Record) -> None:
        if isinstance(record, TokenRecord):
            token = record.token
            self.tokens[token.token_id] = token
            if self.enabled:
                self._by_hmac[self.hmac_of(token.token_id)] = token.token_id
            return
        token_id = record.token_id
        if self.tokens.pop(token_id, None) is not None and self.enabled:
            self._by_hmac.pop(self.hmac_of(token_id), None)
        for mechanism in ScramMechanism:
            self._credentials.pop((token_id, mechanism), None)

    # -- operations --------------------------------------------------------------------------

    def create(
        self,
        requester: str,
        owner: str | None,
        renewers: Sequence[str],
        max_lifetime_ms: int,
        now_ms: int,
    ) -> TokenResult:
        """Kafka's createDelegationToken (the broker's checks come first: ``token_handlers``)."""
        if not self.enabled:
            return TokenResult(error=ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        max_life = self.settings.max_lifetime_ms
        if max_lifetime_ms > 0:
            max_life = min(max_life, max_lifetime_ms)
        max_ms = _sum(now_ms, max_life)
        expiry_ms = min(max_ms, _sum(now_ms, self.settings.expiry_time_ms))
        if any(principal_type(r) != USER_TYPE for r in renewers):
            return TokenResult(error=ErrorCode.INVALID_PRINCIPAL_TYPE)
        token = TokenInfo(
            token_id=self._new_id(),
            owner=owner or requester,
            requester=requester,
            renewers=tuple(renewers),
            issue_ms=now_ms,
            max_ms=max_ms,
            expiry_ms=expiry_ms,
        )
        return TokenResult(
            records=(TokenRecord(token),),
            token=token,
            hmac=self.hmac_of(token.token_id),
            expiry_ms=expiry_ms,
        )

    def _allowed_to_renew(self, token: TokenInfo, principal: str) -> bool:
        return principal == token.owner or principal in token.renewers

    def renew(self, principal: str, hmac_: bytes, period_ms: int, now_ms: int) -> TokenResult:
        """Kafka's renewDelegationToken: the new expiry, at most the max, at most
        ``delegation.token.expiry.time.ms`` away."""
        if not self.enabled:
            return TokenResult(error=ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        token = self.by_hmac(hmac_)
        if token is None:
            return TokenResult(error=ErrorCode.DELEGATION_TOKEN_NOT_FOUND)
        if token.expired(now_ms):
            return TokenResult(error=ErrorCode.DELEGATION_TOKEN_EXPIRED)
        if not self._allowed_to_renew(token, principal):
            return TokenResult(error=ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH)
        life = self.settings.expiry_time_ms
        if period_ms > 0:
            life = min(life, period_ms)
        expiry_ms = min(token.max_ms, now_ms + life)
        renewed = replace(token, expiry_ms=expiry_ms)
        return TokenResult(records=(TokenRecord(renewed),), token=renewed, expiry_ms=expiry_ms)

    def expire(self, principal: str, hmac_: bytes, period_ms: int, now_ms: int) -> TokenResult:
        """Kafka's expireDelegationToken: a negative period removes the token now."""
        if not self.enabled:
            return TokenResult(error=ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        token = self.by_hmac(hmac_)
        if token is None:
            return TokenResult(error=ErrorCode.DELEGATION_TOKEN_NOT_FOUND)
        if not self._allowed_to_renew(token, principal):
            return TokenResult(error=ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH)
        if period_ms < 0:
            return TokenResult(records=(RemoveTokenRecord(token.token_id),), expiry_ms=now_ms)
        if token.expired(now_ms):
            return TokenResult(error=ErrorCode.DELEGATION_TOKEN_EXPIRED)
        expiry_ms = min(token.max_ms, _sum(now_ms, period_ms))
        expired = replace(token, expiry_ms=expiry_ms)
        return TokenResult(records=(TokenRecord(expired),), token=expired, expiry_ms=expiry_ms)

    def sweep(self, now_ms: int) -> list[Record]:
        """Kafka's sweepExpiredDelegationTokens: a removal for each expired token."""
        return [RemoveTokenRecord(t.token_id) for t in self.tokens.values() if t.expired(now_ms)]

    def describe(
        self,
        requester: str,
        owners: Iterable[str] | None,
        may_describe: Callable[[TokenInfo], bool],
    ) -> list[tuple[TokenInfo, bytes]]:
        """Kafka's filterToken over every token: those of ``owners`` (None: all) the
        requester owns, renews or requested, or may describe (``may_describe``: the ACLs)."""
        wanted = None if owners is None else list(owners)
        out: list[tuple[TokenInfo, bytes]] = []
        for token in self.tokens.values():
            if wanted is not None and not any(token.owner_or_renewer(o) for o in wanted):
                continue
            if token.owner_or_renewer(requester) or may_describe(token):
                out.append((token, self.hmac_of(token.token_id)))
        return out

    # -- authentication ------------------------------------------------------------------------

    def by_hmac(self, hmac_: bytes) -> TokenInfo | None:
        token_id = self._by_hmac.get(bytes(hmac_))
        return None if token_id is None else self.tokens.get(token_id)

    def credential(self, mechanism: ScramMechanism, token_id: str) -> ScramCredential | None:
        """The SCRAM credential of a token: its HMAC in base64 is the password (Kafka's
        DelegationTokenCache, at the mechanism's minimum of 4096 iterations)."""
        if not self.enabled or token_id not in self.tokens:
            return None
        key = (token_id, mechanism)
        cred = self._credentials.get(key)
        if cred is None:
            password = base64.b64encode(self.hmac_of(token_id)).decode()
            cred = make_credential(mechanism, password)
            self._credentials[key] = cred
        return cred

    def owner(self, token_id: str) -> str | None:
        token = self.tokens.get(token_id)
        return None if token is None else token.owner


# -- records in __cluster_metadata -------------------------------------------------------------


def encode_record(record: Record) -> tuple[bytes, bytes]:
    """(key, value) of a record: Kafka's record type as the key, its fields as JSON."""
    if isinstance(record, RemoveTokenRecord):
        return _REMOVE_KEY, json.dumps({"tokenId": record.token_id}).encode()
    t = record.token
    doc = {
        "owner": t.owner,
        "requester": t.requester,
        "renewers": list(t.renewers),
        "issueTimestamp": t.issue_ms,
        "maxTimestamp": t.max_ms,
        "expirationTimestamp": t.expiry_ms,
        "tokenId": t.token_id,
    }
    return _TOKEN_KEY, json.dumps(doc, sort_keys=True).encode()


def decode_record(key: bytes | None, value: bytes | None) -> Record | None:
    """The token record of a metadata log entry, None for the log's other records."""
    if value is None or key not in (_TOKEN_KEY, _REMOVE_KEY):
        return None
    doc = json.loads(value)
    if key == _REMOVE_KEY:
        return RemoveTokenRecord(str(doc["tokenId"]))
    return TokenRecord(
        TokenInfo(
            token_id=str(doc["tokenId"]),
            owner=str(doc["owner"]),
            requester=str(doc["requester"]),
            renewers=tuple(str(r) for r in doc["renewers"]),
            issue_ms=int(doc["issueTimestamp"]),
            max_ms=int(doc["maxTimestamp"]),
            expiry_ms=int(doc["expirationTimestamp"]),
        )
    )
