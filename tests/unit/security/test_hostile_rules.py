"""Authorization of the APIs issue 25 found answered too loosely (Kafka 4.4's operations)."""

from __future__ import annotations

import pytest

from coordinator.security.acls import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from tests.unit.security.test_rules import World
from txn.errors import ErrorCode as E


@pytest.fixture
def world() -> World:
    w = World()
    assert w.gate.authorizer is not None
    w.gate.authorizer.create(
        [
            AclBinding(
                rtype, name, PatternType.LITERAL, "User:bob", "*", op, AclPermissionType.ALLOW
            )
            for rtype, name, op in (
                (ResourceType.TOPIC, "allowed", AclOperation.READ),
                (ResourceType.GROUP, "g-read", AclOperation.READ),
                (ResourceType.GROUP, "g-delete", AclOperation.DELETE),
            )
        ]
    )
    w.session.principal = "User:bob"
    return w


def test_delete_share_group_offsets_needs_delete_on_the_group(world: World) -> None:
    """Kafka 4.4 (KafkaApis.handleDeleteShareGroupOffsetsRequest): DELETE on the group."""
    body = {"group_id": "g-read", "topics": [{"topic_name": "allowed"}]}
    refused = world.call(92, 0, body)
    assert refused["error_code"] == E.GROUP_AUTHORIZATION_FAILED
    body["group_id"] = "g-delete"
    allowed = world.call(92, 0, body)
    assert allowed["error_code"] == E.GROUP_ID_NOT_FOUND  # authorized; there is no such group


def test_alter_configs_needs_alter_configs_on_the_topic(world: World) -> None:
    world.session.principal = "User:alice"  # ALL on "allowed", nothing on "secret"
    body = {
        "resources": [
            {
                "resource_type": 2,
                "resource_name": n,
                "configs": [{"name": "retention.ms", "value": "1000"}],
            }
            for n in ("allowed", "secret")
        ],
        "validate_only": False,
    }
    answer = world.call(33, 2, body)
    codes = {r["resource_name"]: r["error_code"] for r in answer["responses"]}
    assert codes == {"allowed": E.NONE, "secret": E.TOPIC_AUTHORIZATION_FAILED}
    info = world.core.topics.get("allowed")
    assert info is not None and info.configs == {"retention.ms": "1000"}
