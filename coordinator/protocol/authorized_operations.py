"""``authorizedOperations`` in Metadata, DescribeCluster and the group Describe answers.

As Kafka's ``AuthHelper.authorizedOperations``: when the request asks for them, each
entry gets a bit field of the operations the principal may perform on its resource
(bit ``n`` for the operation whose code is ``n``), taken from the operations Kafka's
``AclEntry.supportedOperations`` lists for the resource type, each decided by the
authorizer as a request for it would be (so READ, WRITE, DELETE or ALTER imply
DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS).  Without an authorizer every
supported operation is set.  An entry not asked for keeps ``-2147483648``; so do the
entries Kafka leaves out: Metadata topics refused TOPIC_AUTHORIZATION_FAILED (or unknown
by id), and groups whose describe failed.  The cluster's field is 0 for a principal
that may not DESCRIBE the cluster (DescribeCluster, Metadata v8-v10).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from coordinator.protocol.wire import DecodedRequest, optional
from coordinator.security.acls import CLUSTER_NAME, AclOperation, Authorizer, ResourceType
from txn.api_keys import ApiKey
from txn.errors import ErrorCode

OP = AclOperation

#: Kafka's AclEntry.supportedOperations, per resource type.
SUPPORTED_OPERATIONS: Final[dict[ResourceType, tuple[AclOperation, ...]]] = {
    ResourceType.TOPIC: (
        OP.READ,
        OP.WRITE,
        OP.CREATE,
        OP.DESCRIBE,
        OP.DELETE,
        OP.ALTER,
        OP.DESCRIBE_CONFIGS,
        OP.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (OP.READ, OP.DESCRIBE, OP.DELETE, OP.DESCRIBE_CONFIGS, OP.ALTER_CONFIGS),
    ResourceType.CLUSTER: (
        OP.CREATE,
        OP.CLUSTER_ACTION,
        OP.DESCRIBE_CONFIGS,
        OP.ALTER_CONFIGS,
        OP.IDEMPOTENT_WRITE,
        OP.ALTER,
        OP.DESCRIBE,
    ),
}

#: The APIs whose answers carry authorized operations.
APIS: Final = frozenset(
    {
        ApiKey.METADATA,
        ApiKey.DESCRIBE_CLUSTER,
        ApiKey.DESCRIBE_GROUPS,
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        ApiKey.SHARE_GROUP_DESCRIBE,
    }
)

#: Metadata topics Kafka answers without authorized operations.
_LEFT_OUT: Final = frozenset({ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_TOPIC_ID})


def authorized_operations(
    authorizer: Authorizer | None, principal: str, host: str, rtype: ResourceType, name: str
) -> int:
    """The bit field of the supported operations on (``rtype``, ``name``) that are allowed."""
    field = 0
    for op in SUPPORTED_OPERATIONS[rtype]:
        if authorizer is None or authorizer.authorize(principal, host, op, rtype, name):
            field |= 1 << int(op)
    return field


def _get(entry: Any, name: str) -> Any:
    return entry.get(name) if isinstance(entry, dict) else getattr(entry, name, None)


def _with(entry: Any, **changes: Any) -> Any:
    if isinstance(entry, dict):
        return {**entry, **changes}
    return dataclasses.replace(entry, **changes)


def _error(entry: Any) -> int:
    code = _get(entry, "error_code")
    return 0 if code is None else int(code)


def with_authorized_operations(
    req: DecodedRequest[Any],
    body: Any,
    authorizer: Authorizer | None,
    principal: str,
    host: str,
) -> Any:
    """``body`` with the authorized operations ``req`` asked for filled in."""
    key = req.api_key

    def ops(rtype: ResourceType, name: str) -> int:
        return authorized_operations(authorizer, principal, host, rtype, name)

    def cluster_ops() -> int:
        if authorizer is not None and not authorizer.authorize(
            principal, host, OP.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME
        ):
            return 0
        return ops(ResourceType.CLUSTER, CLUSTER_NAME)

    if key == ApiKey.DESCRIBE_CLUSTER:
        if not optional(req.body, "include_cluster_authorized_operations", default=False):
            return body
        return _with(body, cluster_authorized_operations=cluster_ops())
    if key == ApiKey.METADATA:
        if optional(req.body, "include_cluster_authorized_operations", default=False):
            body = _with(body, cluster_authorized_operations=cluster_ops())
        if not optional(req.body, "include_topic_authorized_operations", default=False):
            return body
        topics = tuple(
            topic
            if _error(topic) in _LEFT_OUT or not _get(topic, "name")
            else _with(
                topic,
                topic_authorized_operations=ops(ResourceType.TOPIC, str(_get(topic, "name"))),
            )
            for topic in _get(body, "topics") or ()
        )
        return _with(body, topics=topics)
    if not optional(req.body, "include_authorized_operations", default=False):
        return body
    groups = tuple(
        group
        if _error(group) != ErrorCode.NONE
        else _with(
            group, authorized_operations=ops(ResourceType.GROUP, str(_get(group, "group_id")))
        )
        for group in _get(body, "groups") or ()
    )
    return _with(body, groups=groups)
