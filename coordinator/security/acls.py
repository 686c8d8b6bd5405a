"""The authorizer (sans-IO): Kafka's ACL model and StandardAuthorizer's decision rule.

An ACL binds a resource pattern (type, name, LITERAL or PREFIXED) to an entry
(principal, host, operation, ALLOW or DENY).  ``authorize`` decides as
Kafka's StandardAuthorizer: a super user is allowed everything; a matching
DENY (the operation or ALL) wins; then a matching ALLOW of the operation, of
ALL, or of an operation that implies it (READ, WRITE, DELETE and ALTER imply
DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS) allows; a resource that no
ACL names at all is allowed only with ``allow.everyone.if.no.acl.found``.
Matching: a LITERAL pattern names the resource or is ``*``; a PREFIXED one is a
prefix of its name; principal ``User:*`` and host ``*`` match everyone.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass

CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# operation asked -> ALLOWed operations that also grant it (Kafka's implied operations)
_IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset(
        {AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.ALTER_CONFIGS}),
}


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def matches_resource(self, rtype: ResourceType, name: str) -> bool:
        if self.resource_type is not rtype:
            return False
        if self.pattern_type is PatternType.LITERAL:
            return self.resource_name in (name, WILDCARD)
        return name.startswith(self.resource_name)


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """A Describe/DeleteAcls filter; None and ANY match everything."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission: AclPermissionType

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type is not ResourceType.ANY and acl.resource_type is not (
            self.resource_type
        ):
            return False
        if not self._pattern_matches(acl):
            return False
        if self.principal is not None and acl.principal != self.principal:
            return False
        if self.host is not None and acl.host != self.host:
            return False
        if self.operation is not AclOperation.ANY and acl.operation is not self.operation:
            return False
        return self.permission is AclPermissionType.ANY or acl.permission is self.permission

    def _pattern_matches(self, acl: AclBinding) -> bool:
        name = self.resource_name
        if self.pattern_type is PatternType.MATCH:
            if name is None:
                return True
            if acl.pattern_type is PatternType.LITERAL:
                return acl.resource_name in (name, WILDCARD)
            return name.startswith(acl.resource_name)
        if self.pattern_type is not PatternType.ANY and acl.pattern_type is not self.pattern_type:
            return False
        return name is None or acl.resource_name == name


class InvalidAclError(ValueError):
    """A binding CreateAcls refuses (Kafka answers INVALID_REQUEST with this message)."""


# What makes a binding invalid, with CreateAcls' message, in the order they are checked.
_INVALID_BINDING: tuple[tuple[Callable[[AclBinding], bool], str], ...] = (
    (
        lambda acl: acl.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN),
        "Invalid resource type: the ACL must name one resource type",
    ),
    (
        lambda acl: acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED),
        "Invalid pattern type: the ACL must be LITERAL or PREFIXED",
    ),
    (
        lambda acl: acl.operation in (AclOperation.ANY, AclOperation.UNKNOWN),
        "Invalid operation: the ACL must name one operation",
    ),
    (
        lambda acl: acl.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY),
        "Invalid permission type: the ACL must be ALLOW or DENY",
    ),
    (lambda acl: not acl.resource_name, "Invalid resource name: it must not be empty"),
    (
        lambda acl: acl.resource_type is ResourceType.CLUSTER and acl.resource_name != CLUSTER_NAME,
        f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}",
    ),
)


def validate_binding(acl: AclBinding) -> None:
    for invalid, msg in _INVALID_BINDING:
        if invalid(acl):
            raise InvalidAclError(msg)
    kind, sep, name = acl.principal.partition(":")
    if not sep or not kind or not name:
        msg = f"Could not parse principal from `{acl.principal}` (no colon is present separating "
        msg += "the principal type from the principal name)"
        raise InvalidAclError(msg)


def parse_principals(text: str | None) -> frozenset[str]:
    """``super.users``: semicolon-separated ``User:name`` principals."""
    if not text:
        return frozenset()
    return frozenset(p.strip() for p in text.split(";") if p.strip())


class Authorizer:
    """ACLs in memory; every change is handed to ``persist`` (the durable store) first."""

    def __init__(
        self,
        acls: Iterable[AclBinding],
        *,
        super_users: frozenset[str],
        allow_if_no_acl: bool,
        persist: Callable[[list[AclBinding]], None],
    ) -> None:
        self._acls: list[AclBinding] = list(dict.fromkeys(acls))
        self.super_users = super_users
        self.allow_if_no_acl = allow_if_no_acl
        self._persist = persist

    @property
    def acls(self) -> list[AclBinding]:
        return list(self._acls)

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        rtype: ResourceType,
        name: str,
    ) -> bool:
        if principal in self.super_users:
            return True
        matching = [a for a in self._acls if a.matches_resource(rtype, name)]
        if not matching:
            return self.allow_if_no_acl
        mine = [
            a
            for a in matching
            if a.principal in (principal, WILDCARD_PRINCIPAL) and a.host in (host, WILDCARD)
        ]
        if any(
            a.permission is AclPermissionType.DENY and a.operation in (operation, AclOperation.ALL)
            for a in mine
        ):
            return False
        granting = {operation, AclOperation.ALL} | _IMPLIED_BY.get(operation, frozenset())
        return any(
            a.permission is AclPermissionType.ALLOW and a.operation in granting for a in mine
        )

    def authorize_any(
        self, principal: str, host: str, operation: AclOperation, rtype: ResourceType
    ) -> bool:
        """Whether some resource of ``rtype`` may be acted on (Kafka's authorizeByResourceType).

        True for a super user, for an ALLOW of the operation (or ALL) on any pattern of the
        type that no DENY of the whole type (``*`` or the empty prefix) cancels, and, with no
        ACL on the type at all, if ``allow.everyone.if.no.acl.found``.
        """
        if principal in self.super_users:
            return True
        of_type = [a for a in self._acls if a.resource_type is rtype]
        if not of_type:
            return self.allow_if_no_acl
        mine = [
            a
            for a in of_type
            if a.principal in (principal, WILDCARD_PRINCIPAL) and a.host in (host, WILDCARD)
        ]
        for a in mine:
            whole_type = (
                a.pattern_type is PatternType.LITERAL and a.resource_name == WILDCARD
            ) or (a.pattern_type is PatternType.PREFIXED and a.resource_name == "")
            if (
                whole_type
                and a.permission is AclPermissionType.DENY
                and a.operation in (operation, AclOperation.ALL)
            ):
                return False
        return any(
            a.permission is AclPermissionType.ALLOW and a.operation in (operation, AclOperation.ALL)
            for a in mine
        )

    def create(self, bindings: list[AclBinding]) -> None:
        """Add bindings (already validated); duplicates are kept once."""
        merged = list(dict.fromkeys([*self._acls, *bindings]))
        self._persist(merged)
        self._acls = merged

    def describe(self, flt: AclBindingFilter) -> list[AclBinding]:
        return [a for a in self._acls if flt.matches(a)]

    def delete(self, filters: list[AclBindingFilter]) -> list[list[AclBinding]]:
        """Remove the bindings each filter matches; the matches per filter, in order."""
        matched = [[a for a in self._acls if f.matches(a)] for f in filters]
        gone = {a for group in matched for a in group}
        if gone:
            remaining = [a for a in self._acls if a not in gone]
            self._persist(remaining)
            self._acls = remaining
        return matched
