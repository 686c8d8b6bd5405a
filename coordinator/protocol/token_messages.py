"""Typed responses of the delegation-token APIs (``token_handlers``), named as Kafka's newest
schemas; as ``acl_messages``, a default is the value the wire carries for a field left out."""

from __future__ import annotations

from dataclasses import dataclass

from txn.errors import ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateDelegationTokenResponse:
    error_code: ErrorCode
    principal_type: str
    principal_name: str
    token_requester_principal_type: str
    token_requester_principal_name: str
    issue_timestamp: int = 0
    expiry_timestamp: int = 0
    max_timestamp: int = 0
    token_id: str = ""
    hmac: bytes = b""


@dataclass(frozen=True, slots=True, kw_only=True)
class RenewDelegationTokenResponse:
    error_code: ErrorCode
    expiry_timestamp: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpireDelegationTokenResponse:
    error_code: ErrorCode
    expiry_timestamp: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedDelegationTokenRenewer:
    principal_type: str
    principal_name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedDelegationToken:
    principal_type: str
    principal_name: str
    token_requester_principal_type: str
    token_requester_principal_name: str
    issue_timestamp: int
    expiry_timestamp: int
    max_timestamp: int
    token_id: str
    hmac: bytes
    renewers: tuple[DescribedDelegationTokenRenewer, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeDelegationTokenResponse:
    error_code: ErrorCode
    tokens: tuple[DescribedDelegationToken, ...] = ()
