"""authorizedOperations: the bit fields of Metadata, DescribeCluster and the group Describes.

Both brokers run without an authorizer, so an entry that asks gets every operation Kafka's
AclEntry.supportedOperations lists for its resource type; one that does not ask gets
-2147483648; an entry Kafka leaves out (a failed group describe) keeps the default.
"""

from __future__ import annotations

from typing import Any

from tests.reference.differential.ctx import Ctx
from tests.reference.differential.framework import scenario
from tests.reference.differential.scenarios_groups import Member
from tests.reference.differential.share import ShareMember, share_group
from tests.reference.differential.wire import plain

AREA = "authorized-operations"


def _topics(resp: Any) -> dict[str, Any]:
    return {
        str(t.name): [plain(t.error_code, "error_code"), int(t.topic_authorized_operations)]
        for t in resp.topics
    }


@scenario(AREA)
def metadata_topic_operations(ctx: Ctx) -> Any:
    t = ctx.create_topic("ops")
    names = [{"name": n} for n in (t, ctx.name("missing"))]
    out = {}
    for version in (8, 10, 12):
        for asked in (True, False):
            body: dict[str, Any] = {
                "topics": names,
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": asked,
            }
            if version <= 10:
                body["include_cluster_authorized_operations"] = asked
            resp = ctx.call(3, body, version)
            seen: dict[str, Any] = {"topics": _topics(resp)}
            if version <= 10:
                seen["cluster"] = int(resp.cluster_authorized_operations)
            out[f"v{version} asked={asked}"] = seen
    return out


@scenario(AREA)
def describe_cluster_operations(ctx: Ctx) -> Any:
    return {
        asked: int(
            ctx.call(
                60, {"include_cluster_authorized_operations": asked}, 0
            ).cluster_authorized_operations
        )
        for asked in (True, False)
    }


@scenario(AREA)
def describe_groups_operations(ctx: Ctx) -> Any:
    g = ctx.name("classic")
    ctx.find_coordinator(g, 0)
    out = {}
    for asked in (True, False):
        resp = ctx.call(15, {"groups": [g], "include_authorized_operations": asked}, 5)
        out[str(asked)] = [
            [plain(x.error_code, "error_code"), int(x.authorized_operations)] for x in resp.groups
        ]
    return out


def _described(ctx: Ctx, api_key: int, groups: list[str]) -> dict[str, Any]:
    """Per group id (Kafka orders the answers by coordinator partition, not as asked)."""
    out = {}
    for asked in (True, False):
        resp = ctx.call(api_key, {"group_ids": groups, "include_authorized_operations": asked})
        out[str(asked)] = {
            str(x.group_id): [plain(x.error_code, "error_code"), int(x.authorized_operations)]
            for x in resp.groups
        }
    return out


@scenario(AREA)
def consumer_group_describe_operations(ctx: Ctx) -> Any:
    t = ctx.create_topic("ops")
    g = ctx.name("cg")
    ctx.find_coordinator(g, 0)
    Member(ctx, g, [t]).heartbeat()
    missing = ctx.name("missing")
    ctx.find_coordinator(missing, 0)
    return _described(ctx, 69, [g, missing])


@scenario(AREA)
def share_group_describe_operations(ctx: Ctx) -> Any:
    t = ctx.create_topic("ops")
    g = share_group(ctx)
    ShareMember(ctx, g, [t]).heartbeat()
    missing = ctx.name("missing")
    ctx.find_coordinator(missing, 0)
    return _described(ctx, 77, [g, missing])
