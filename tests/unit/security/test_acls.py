"""The authorizer's decisions (Kafka's StandardAuthorizer rules) and durable ACLs."""

from __future__ import annotations

import pytest

from coordinator.security.acls import (
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
from coordinator.security.store import MemorySecurityStorage, SecurityMetadata

OP, RT, PT, PERM = AclOperation, ResourceType, PatternType, AclPermissionType
ALICE = "User:alice"


def acl(
    rtype: ResourceType,
    name: str,
    op: AclOperation,
    perm: AclPermissionType = PERM.ALLOW,
    *,
    principal: str = ALICE,
    pattern: PatternType = PT.LITERAL,
    host: str = "*",
) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def authorizer(*acls: AclBinding, allow_if_no_acl: bool = False) -> Authorizer:
    return Authorizer(
        acls,
        super_users=frozenset({"User:admin"}),
        allow_if_no_acl=allow_if_no_acl,
        persist=lambda _a: None,
    )


def test_no_acl_denies_unless_allow_everyone() -> None:
    assert not authorizer().authorize(ALICE, "h", OP.READ, RT.TOPIC, "t")
    assert authorizer(allow_if_no_acl=True).authorize(ALICE, "h", OP.READ, RT.TOPIC, "t")
    # Any ACL on the resource (even for someone else) turns the default off.
    other = acl(RT.TOPIC, "t", OP.READ, principal="User:bob")
    assert not authorizer(other, allow_if_no_acl=True).authorize(ALICE, "h", OP.READ, RT.TOPIC, "t")


def test_super_user_allowed_everything() -> None:
    deny = acl(RT.TOPIC, "*", OP.ALL, PERM.DENY, principal="User:*")
    assert authorizer(deny).authorize("User:admin", "h", OP.WRITE, RT.TOPIC, "t")


def test_literal_prefixed_and_wildcard_patterns() -> None:
    a = authorizer(
        acl(RT.TOPIC, "orders", OP.READ),
        acl(RT.TOPIC, "pay-", OP.WRITE, pattern=PT.PREFIXED),
        acl(RT.GROUP, "*", OP.READ),
    )
    assert a.authorize(ALICE, "h", OP.READ, RT.TOPIC, "orders")
    assert not a.authorize(ALICE, "h", OP.READ, RT.TOPIC, "orders2")
    assert a.authorize(ALICE, "h", OP.WRITE, RT.TOPIC, "pay-eu")
    assert not a.authorize(ALICE, "h", OP.WRITE, RT.TOPIC, "pa")
    assert a.authorize(ALICE, "h", OP.READ, RT.GROUP, "any-group")
    assert not a.authorize("User:bob", "h", OP.READ, RT.GROUP, "any-group")


def test_deny_wins_and_hosts_match() -> None:
    a = authorizer(
        acl(RT.TOPIC, "t", OP.ALL),
        acl(RT.TOPIC, "t", OP.WRITE, PERM.DENY, host="10.0.0.9"),
    )
    assert a.authorize(ALICE, "10.0.0.1", OP.WRITE, RT.TOPIC, "t")
    assert not a.authorize(ALICE, "10.0.0.9", OP.WRITE, RT.TOPIC, "t")
    assert a.authorize(ALICE, "10.0.0.9", OP.READ, RT.TOPIC, "t")


def test_implied_operations() -> None:
    a = authorizer(acl(RT.TOPIC, "t", OP.WRITE), acl(RT.TOPIC, "c", OP.ALTER_CONFIGS))
    assert a.authorize(ALICE, "h", OP.DESCRIBE, RT.TOPIC, "t")  # WRITE implies DESCRIBE
    assert not a.authorize(ALICE, "h", OP.READ, RT.TOPIC, "t")
    assert a.authorize(ALICE, "h", OP.DESCRIBE_CONFIGS, RT.TOPIC, "c")
    # A DENY of READ does not deny DESCRIBE.
    b = authorizer(acl(RT.TOPIC, "t", OP.DESCRIBE), acl(RT.TOPIC, "t", OP.READ, PERM.DENY))
    assert b.authorize(ALICE, "h", OP.DESCRIBE, RT.TOPIC, "t")


def test_authorize_any_topic() -> None:
    assert authorizer(acl(RT.TOPIC, "x-", OP.WRITE, pattern=PT.PREFIXED)).authorize_any(
        ALICE, "h", OP.WRITE, RT.TOPIC
    )
    assert not authorizer(acl(RT.TOPIC, "x", OP.READ)).authorize_any(ALICE, "h", OP.WRITE, RT.TOPIC)
    blocked = authorizer(acl(RT.TOPIC, "x", OP.WRITE), acl(RT.TOPIC, "*", OP.WRITE, PERM.DENY))
    assert not blocked.authorize_any(ALICE, "h", OP.WRITE, RT.TOPIC)


def test_filters() -> None:
    bindings = [
        acl(RT.TOPIC, "orders", OP.READ),
        acl(RT.TOPIC, "ord", OP.WRITE, pattern=PT.PREFIXED),
        acl(RT.TOPIC, "*", OP.DESCRIBE),
        acl(RT.GROUP, "g", OP.READ, principal="User:bob"),
    ]
    a = authorizer(*bindings)

    def flt(**kw: object) -> AclBindingFilter:
        base: dict[str, object] = {
            "resource_type": RT.ANY,
            "resource_name": None,
            "pattern_type": PT.ANY,
            "principal": None,
            "host": None,
            "operation": OP.ANY,
            "permission": PERM.ANY,
        }
        base.update(kw)
        return AclBindingFilter(**base)  # type: ignore[arg-type]

    assert a.describe(flt()) == bindings
    assert a.describe(flt(resource_type=RT.GROUP)) == bindings[3:]
    assert a.describe(flt(resource_name="orders", pattern_type=PT.MATCH)) == bindings[:3]
    assert a.describe(flt(resource_name="orders", pattern_type=PT.LITERAL)) == bindings[:1]
    assert a.describe(flt(principal="User:bob")) == bindings[3:]
    removed = a.delete([flt(pattern_type=PT.PREFIXED), flt(operation=OP.DESCRIBE)])
    assert removed == [[bindings[1]], [bindings[2]]]
    assert a.acls == [bindings[0], bindings[3]]


def test_validation() -> None:
    validate_binding(acl(RT.CLUSTER, "kafka-cluster", OP.ALTER))
    with pytest.raises(InvalidAclError, match="kafka-cluster"):
        validate_binding(acl(RT.CLUSTER, "other", OP.ALTER))
    with pytest.raises(InvalidAclError):
        validate_binding(acl(RT.TOPIC, "t", OP.ANY))
    with pytest.raises(InvalidAclError, match="principal"):
        validate_binding(acl(RT.TOPIC, "t", OP.READ, principal="alice"))
    with pytest.raises(InvalidAclError):
        validate_binding(acl(RT.TOPIC, "t", OP.READ, pattern=PT.MATCH))


def test_acls_and_scram_survive_a_reload() -> None:
    storage = MemorySecurityStorage()
    metadata = SecurityMetadata(storage)
    a = Authorizer([], super_users=frozenset(), allow_if_no_acl=False, persist=metadata.save_acls)
    binding = acl(RT.TRANSACTIONAL_ID, "tx-", OP.WRITE, pattern=PT.PREFIXED)
    a.create([binding, binding])
    reloaded = SecurityMetadata(storage)
    assert reloaded.acls == [binding]


def test_every_served_api_has_an_authorization_rule() -> None:
    from coordinator.protocol.acl_rule_table import RULES  # noqa: PLC0415
    from coordinator.protocol.api_versions import SUPPORTED  # noqa: PLC0415
    from txn.api_keys import ApiKey  # noqa: PLC0415

    own = {  # the gate's own APIs
        ApiKey.SASL_HANDSHAKE,
        ApiKey.SASL_AUTHENTICATE,
        ApiKey.DESCRIBE_ACLS,
        ApiKey.CREATE_ACLS,
        ApiKey.DELETE_ACLS,
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        ApiKey.CREATE_DELEGATION_TOKEN,
        ApiKey.RENEW_DELEGATION_TOKEN,
        ApiKey.EXPIRE_DELEGATION_TOKEN,
        ApiKey.DESCRIBE_DELEGATION_TOKEN,
        # client quotas: authorized by their handlers (coordinator.protocol.quota_handlers)
        ApiKey.DESCRIBE_CLIENT_QUOTAS,
        ApiKey.ALTER_CLIENT_QUOTAS,
    }
    assert set(SUPPORTED) - own == set(RULES)
