"""Typed responses of the security APIs: the ACL and SCRAM administration of
``acl_handlers`` and the SASL exchange of ``security_gate``, named as Kafka's newest schemas;
as ``txn_messages``, a default is the value the wire carries for a field left out."""

from __future__ import annotations

from dataclasses import dataclass

from txn.errors import ErrorCode

# -- ACLs ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AclCreationResult:
    error_code: ErrorCode
    error_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateAclsResponse:
    results: tuple[AclCreationResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AclDescription:
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeAclsResource:
    resource_type: int
    resource_name: str
    pattern_type: int
    acls: tuple[AclDescription, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeAclsResponse:
    error_code: ErrorCode
    error_message: str | None = None
    resources: tuple[DescribeAclsResource, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAclsMatchingAcl:
    error_code: ErrorCode
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int
    error_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAclsFilterResult:
    error_code: ErrorCode
    error_message: str | None = None
    matching_acls: tuple[DeleteAclsMatchingAcl, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAclsResponse:
    filter_results: tuple[DeleteAclsFilterResult, ...]


# -- SCRAM credentials --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class CredentialInfo:
    mechanism: int
    iterations: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeUserScramCredentialsResult:
    user: str
    error_code: ErrorCode
    error_message: str | None = None
    credential_infos: tuple[CredentialInfo, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeUserScramCredentialsResponse:
    error_code: ErrorCode
    error_message: str | None = None
    results: tuple[DescribeUserScramCredentialsResult, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterUserScramCredentialsResult:
    user: str
    error_code: ErrorCode
    error_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterUserScramCredentialsResponse:
    results: tuple[AlterUserScramCredentialsResult, ...]


# -- SASL ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SaslHandshakeResponse:
    error_code: ErrorCode
    mechanisms: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class SaslAuthenticateResponse:
    error_code: ErrorCode
    auth_bytes: bytes
    error_message: str | None = None
    #: KIP-368 (v1+): how long the session lives before re-authentication; 0 is forever.
    session_lifetime: int = 0
