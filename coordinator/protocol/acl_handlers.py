"""CreateAcls, DescribeAcls, DeleteAcls and Describe/AlterUserScramCredentials.

ACL requests need an authorizer (SECURITY_DISABLED without one, as Kafka);
with one, CreateAcls and DeleteAcls need ALTER on the cluster and DescribeAcls
DESCRIBE on it.  The SCRAM APIs work with or without an authorizer (with one:
DESCRIBE, respectively ALTER, on the cluster).  Changes are durable before
they are answered (``SecurityMetadata`` saves first).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from coordinator.protocol.acl_messages import (
    AclCreationResult,
    AclDescription,
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
    CreateAclsResponse,
    CredentialInfo,
    DeleteAclsFilterResult,
    DeleteAclsMatchingAcl,
    DeleteAclsResponse,
    DescribeAclsResource,
    DescribeAclsResponse,
    DescribeUserScramCredentialsResponse,
    DescribeUserScramCredentialsResult,
)
from coordinator.protocol.admin_request_views import (
    AlterUserScramCredentialsRequestView,
    CreateAclsRequestView,
    DeleteAclsFilterView,
    DeleteAclsRequestView,
    DescribeAclsRequestView,
    DescribeUserScramCredentialsRequestView,
    ScramCredentialUpsertionView,
)
from coordinator.protocol.responses import Message, api, handler_table
from coordinator.protocol.wire import DecodedRequest
from coordinator.security.acls import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    Authorizer,
    InvalidAclError,
    PatternType,
    ResourceType,
    validate_binding,
)
from coordinator.security.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramMechanism,
    credential_from_salted,
)
from coordinator.security.store import SecurityMetadata
from txn.api_keys import ApiKey
from txn.errors import ErrorCode

if TYPE_CHECKING:
    from coordinator.protocol.session import Session

log = logging.getLogger("sharetxn.security")

AdminHandler = Callable[["Session", DecodedRequest[Any]], Awaitable[Message]]

_NO_AUTHORIZER = "No Authorizer is configured."
_CLUSTER_DENIED = "Cluster authorization failed."


E = TypeVar("E", ResourceType, PatternType, AclOperation, AclPermissionType)


def _enum(cls: type[E], value: int) -> E:
    """The member of ``cls`` with ``value``, UNKNOWN for a value it lacks (as Kafka)."""
    try:
        return cls(int(value))
    except ValueError:
        return cls.UNKNOWN


class SecurityAdminHandlers:
    def __init__(
        self, metadata: SecurityMetadata, authorizer: Callable[[], Authorizer | None]
    ) -> None:
        self.metadata = metadata
        self._authorizer = authorizer
        self.table: dict[int, AdminHandler] = handler_table(self)

    def _cluster_allowed(self, session: Session, operation: AclOperation) -> bool:
        authorizer = self._authorizer()
        return authorizer is None or authorizer.authorize(
            session.principal, session.client_host, operation, ResourceType.CLUSTER, CLUSTER_NAME
        )

    # -- ACLs -----------------------------------------------------------------------------------

    @api(ApiKey.CREATE_ACLS)
    async def create_acls(
        self, session: Session, req: DecodedRequest[CreateAclsRequestView]
    ) -> CreateAclsResponse:
        creations = list(req.body.creations)
        authorizer = self._authorizer()

        def every(code: ErrorCode, message: str | None) -> CreateAclsResponse:
            result = AclCreationResult(error_code=code, error_message=message)
            return CreateAclsResponse(results=tuple(result for _ in creations))

        if authorizer is None:
            return every(ErrorCode.SECURITY_DISABLED, _NO_AUTHORIZER)
        if not self._cluster_allowed(session, AclOperation.ALTER):
            return every(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _CLUSTER_DENIED)
        results: list[AclCreationResult] = []
        valid: list[AclBinding] = []
        for c in creations:
            binding = AclBinding(
                _enum(ResourceType, c.resource_type),
                str(c.resource_name),
                _enum(PatternType, c.resource_pattern_type),
                str(c.principal),
                str(c.host),
                _enum(AclOperation, c.operation),
                _enum(AclPermissionType, c.permission_type),
            )
            try:
                validate_binding(binding)
            except InvalidAclError as exc:
                results.append(
                    AclCreationResult(error_code=ErrorCode.INVALID_REQUEST, error_message=str(exc))
                )
                continue
            valid.append(binding)
            results.append(AclCreationResult(error_code=ErrorCode.NONE))
        if valid:
            authorizer.create(valid)
            log.info("%s created ACLs: %s", session.principal, valid)
        return CreateAclsResponse(results=tuple(results))

    @staticmethod
    def _filter(f: DescribeAclsRequestView | DeleteAclsFilterView) -> AclBindingFilter:
        return AclBindingFilter(
            _enum(ResourceType, f.resource_type_filter),
            f.resource_name_filter,
            _enum(PatternType, f.pattern_type_filter),
            f.principal_filter,
            f.host_filter,
            _enum(AclOperation, f.operation),
            _enum(AclPermissionType, f.permission_type),
        )

    @api(ApiKey.DESCRIBE_ACLS)
    async def describe_acls(
        self, session: Session, req: DecodedRequest[DescribeAclsRequestView]
    ) -> DescribeAclsResponse:
        authorizer = self._authorizer()
        if authorizer is None:
            return DescribeAclsResponse(
                error_code=ErrorCode.SECURITY_DISABLED, error_message=_NO_AUTHORIZER
            )
        if not self._cluster_allowed(session, AclOperation.DESCRIBE):
            return DescribeAclsResponse(
                error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=_CLUSTER_DENIED
            )
        flt = self._filter(req.body)
        if PatternType.UNKNOWN in (flt.pattern_type,) or flt.resource_type is ResourceType.UNKNOWN:
            return DescribeAclsResponse(
                error_code=ErrorCode.INVALID_REQUEST, error_message="invalid filter"
            )
        grouped: dict[tuple[int, str, int], list[AclDescription]] = {}
        for a in authorizer.describe(flt):
            grouped.setdefault((a.resource_type, a.resource_name, a.pattern_type), []).append(
                AclDescription(
                    principal=a.principal,
                    host=a.host,
                    operation=int(a.operation),
                    permission_type=int(a.permission),
                )
            )
        return DescribeAclsResponse(
            error_code=ErrorCode.NONE,
            resources=tuple(
                DescribeAclsResource(
                    resource_type=t, resource_name=n, pattern_type=p, acls=tuple(acls)
                )
                for (t, n, p), acls in grouped.items()
            ),
        )

    @api(ApiKey.DELETE_ACLS)
    async def delete_acls(
        self, session: Session, req: DecodedRequest[DeleteAclsRequestView]
    ) -> DeleteAclsResponse:
        filters = list(req.body.filters)
        authorizer = self._authorizer()

        def every(code: ErrorCode, message: str | None) -> DeleteAclsResponse:
            result = DeleteAclsFilterResult(error_code=code, error_message=message)
            return DeleteAclsResponse(filter_results=tuple(result for _ in filters))

        if authorizer is None:
            return every(ErrorCode.SECURITY_DISABLED, _NO_AUTHORIZER)
        if not self._cluster_allowed(session, AclOperation.ALTER):
            return every(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _CLUSTER_DENIED)
        matched = authorizer.delete([self._filter(f) for f in filters])
        if any(matched):
            log.info("%s deleted ACLs: %s", session.principal, [a for m in matched for a in m])
        return DeleteAclsResponse(
            filter_results=tuple(
                DeleteAclsFilterResult(
                    error_code=ErrorCode.NONE,
                    matching_acls=tuple(
                        DeleteAclsMatchingAcl(
                            error_code=ErrorCode.NONE,
                            resource_type=int(a.resource_type),
                            resource_name=a.resource_name,
                            pattern_type=int(a.pattern_type),
                            principal=a.principal,
                            host=a.host,
                            operation=int(a.operation),
                            permission_type=int(a.permission),
                        )
                        for a in group
                    ),
                )
                for group in matched
            )
        )

    # -- SCRAM credentials ----------------------------------------------------------------------

    @api(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
    async def describe_user_scram_credentials(
        self, session: Session, req: DecodedRequest[DescribeUserScramCredentialsRequestView]
    ) -> DescribeUserScramCredentialsResponse:
        if not self._cluster_allowed(session, AclOperation.DESCRIBE):
            return DescribeUserScramCredentialsResponse(
                error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=_CLUSTER_DENIED
            )
        by_user: dict[str, list[CredentialInfo]] = {}
        for (user, mech), cred in sorted(self.metadata.scram.items()):
            by_user.setdefault(user, []).append(
                CredentialInfo(mechanism=int(mech), iterations=cred.iterations)
            )
        users = req.body.users
        names = sorted(by_user) if users is None else [str(u.name) for u in users]
        results: list[DescribeUserScramCredentialsResult] = []
        for name in names:
            if names.count(name) > 1:
                results.append(
                    DescribeUserScramCredentialsResult(
                        user=name,
                        error_code=ErrorCode.DUPLICATE_RESOURCE,
                        error_message=f"Cannot describe SCRAM credentials for the same user "
                        f"twice in a single request: {name}",
                    )
                )
            elif name not in by_user:
                results.append(
                    DescribeUserScramCredentialsResult(
                        user=name,
                        error_code=ErrorCode.RESOURCE_NOT_FOUND,
                        error_message=f"Attempt to describe a user credential that does not "
                        f"exist: {name}",
                    )
                )
            else:
                results.append(
                    DescribeUserScramCredentialsResult(
                        user=name,
                        error_code=ErrorCode.NONE,
                        credential_infos=tuple(by_user[name]),
                    )
                )
        return DescribeUserScramCredentialsResponse(
            error_code=ErrorCode.NONE, results=tuple(results)
        )

    @api(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
    async def alter_user_scram_credentials(
        self, session: Session, req: DecodedRequest[AlterUserScramCredentialsRequestView]
    ) -> AlterUserScramCredentialsResponse:
        body = req.body
        entries: list[tuple[str, int, ScramCredentialUpsertionView | None]] = [
            (str(d.name), int(d.mechanism), None) for d in body.deletions
        ] + [(str(u.name), int(u.mechanism), u) for u in body.upsertions]
        users = list({name: None for name, _m, _u in entries})  # in order, once each
        if not self._cluster_allowed(session, AclOperation.ALTER):
            return AlterUserScramCredentialsResponse(
                results=tuple(
                    AlterUserScramCredentialsResult(
                        user=u, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                    )
                    for u in users
                )
            )
        errors: dict[str, tuple[ErrorCode, str]] = {}
        seen: set[tuple[str, int]] = set()
        scram = dict(self.metadata.scram)
        for name, mech_id, upsert in entries:
            if name in errors:
                continue
            if (name, mech_id) in seen:
                errors[name] = (
                    ErrorCode.DUPLICATE_RESOURCE,
                    "A user credential cannot be altered twice in the same request",
                )
                continue
            seen.add((name, mech_id))
            try:
                mech = ScramMechanism(mech_id)
            except ValueError:
                errors[name] = (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
                continue
            if not name:
                errors[name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
                continue
            if upsert is None:
                if (name, mech) not in scram:
                    errors[name] = (
                        ErrorCode.RESOURCE_NOT_FOUND,
                        "Attempt to delete a user credential that does not exist",
                    )
                    continue
                del scram[(name, mech)]
                continue
            iterations = int(upsert.iterations)
            if iterations < MIN_ITERATIONS:
                errors[name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
                continue
            if iterations > MAX_ITERATIONS:
                errors[name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
                continue
            scram[(name, mech)] = credential_from_salted(
                mech, bytes(upsert.salt), bytes(upsert.salted_password), iterations
            )
        # Kafka applies the users without errors; a user with an error is left untouched.
        applied = dict(self.metadata.scram)
        for key in {*applied, *scram}:
            if key[0] in errors:
                continue
            if key in scram:
                applied[key] = scram[key]
            else:
                applied.pop(key, None)
        if applied != self.metadata.scram:
            self.metadata.save_scram(applied)
            log.info(
                "%s altered SCRAM credentials of %s",
                session.principal,
                [u for u in users if u not in errors],
            )
        return AlterUserScramCredentialsResponse(
            results=tuple(
                AlterUserScramCredentialsResult(
                    user=u,
                    error_code=errors[u][0] if u in errors else ErrorCode.NONE,
                    error_message=errors[u][1] if u in errors else None,
                )
                for u in users
            )
        )
