"""API key -> authorization rule (the table in ``api_rules``' docstring)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from coordinator.protocol import acl_group_rules as g
from coordinator.protocol.acl_rules import (
    CLUSTER_DENIED,
    OP,
    Handler,
    RequestContext,
    Response,
    add_offsets_to_txn_rule,
    add_share_acks_to_txn_rule,
    cluster_rule,
    configs_rule,
    create_partitions_rule,
    create_topics_rule,
    delete_records_rule,
    delete_topics_rule,
    describe_producers_rule,
    end_txn_rule,
    fetch_rule,
    group_rule,
    init_producer_id_rule,
    list_offsets_rule,
    membership_rule,
    metadata_rule,
    open_rule,
    produce_rule,
)
from coordinator.protocol.wire import DecodedRequest

Rule = Callable[[RequestContext, DecodedRequest, Handler], Awaitable[Response]]

RULES: Final[dict[int, Any]] = {
    0: produce_rule,
    1: fetch_rule,
    2: list_offsets_rule,
    3: metadata_rule,
    8: g.offset_commit_rule,
    9: g.offset_fetch_rule,
    10: g.find_coordinator_rule,
    11: group_rule(OP.READ),  # JoinGroup
    12: group_rule(OP.READ),  # Heartbeat
    13: group_rule(OP.READ),  # LeaveGroup
    14: group_rule(OP.READ),  # SyncGroup
    15: g.describe_groups_rule,
    16: g.list_groups_rule,
    18: open_rule,  # ApiVersions
    19: create_topics_rule,
    20: delete_topics_rule,
    21: delete_records_rule,
    22: init_producer_id_rule,
    24: g.add_partitions_to_txn_rule,
    25: add_offsets_to_txn_rule,
    26: end_txn_rule,
    28: g.txn_offset_commit_rule,
    32: configs_rule(OP.DESCRIBE_CONFIGS, "results"),
    35: cluster_rule(OP.DESCRIBE),  # DescribeLogDirs
    37: create_partitions_rule,
    42: g.delete_groups_rule,
    33: configs_rule(OP.ALTER_CONFIGS, "responses"),
    44: configs_rule(OP.ALTER_CONFIGS, "responses"),
    47: g.offset_delete_rule,
    60: open_rule,  # DescribeCluster
    61: describe_producers_rule,
    65: g.describe_transactions_rule,
    66: g.list_transactions_rule,
    68: membership_rule,  # ConsumerGroupHeartbeat
    69: g.consumer_group_describe_rule,
    76: membership_rule,  # ShareGroupHeartbeat
    77: g.share_group_describe_rule,
    78: g.share_fetch_rule,
    79: g.share_acknowledge_rule,
    90: g.describe_share_group_offsets_rule,
    91: g.alter_share_group_offsets_rule,
    92: g.delete_share_group_offsets_rule,
    93: g.txn_share_acknowledge_rule,  # KIP-1289, as TxnOffsetCommit
    94: add_share_acks_to_txn_rule,  # KIP-1289, as AddOffsetsToTxn + READ on topics
    95: cluster_rule(OP.DESCRIBE),  # DescribeSharePendingAcks (sharetxn admin API)
}


async def authorize_request(ctx: RequestContext, req: DecodedRequest, handler: Handler) -> Response:
    """Run ``handler`` on what the principal may do; Kafka's errors for the rest."""
    rule = RULES.get(req.api_key)
    if rule is None:
        # An API without a row in the table is served to super users only.
        if ctx.principal in ctx.authorizer.super_users:
            return await handler(req)
        return {"error_code": CLUSTER_DENIED}
    result: Response = await rule(ctx, req, handler)
    return result
