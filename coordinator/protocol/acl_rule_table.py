"""API key -> authorization rule (the table in ``api_rules``' docstring)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from coordinator.protocol import acl_group_rules as g
from coordinator.protocol.acl_rules import (
    CLUSTER_DENIED,
    OP,
    RequestContext,
    Response,
    add_offsets_to_txn_rule,
    add_share_acks_to_txn_rule,
    altered_config_denied,
    cluster_rule,
    configs_rule,
    create_partitions_rule,
    create_topics_rule,
    delete_records_rule,
    delete_topics_rule,
    denied_request,
    describe_producers_rule,
    described_config_denied,
    end_txn_rule,
    fetch_rule,
    group_rule,
    incrementally_altered_config_denied,
    init_producer_id_rule,
    list_offsets_rule,
    membership_rule,
    metadata_rule,
    open_rule,
    produce_rule,
    write_txn_markers_rule,
)
from coordinator.protocol.cluster_messages import DescribeConfigsResponse
from coordinator.protocol.responses import Handler
from coordinator.protocol.topic_messages import AlterConfigsResponse
from coordinator.protocol.wire import DecodedRequest
from txn.api_keys import ApiKey

Rule = Callable[[RequestContext, DecodedRequest[Any], Handler], Awaitable[Response]]

RULES: Final[dict[int, Any]] = {
    ApiKey.PRODUCE: produce_rule,
    ApiKey.FETCH: fetch_rule,
    ApiKey.LIST_OFFSETS: list_offsets_rule,
    ApiKey.METADATA: metadata_rule,
    ApiKey.OFFSET_COMMIT: g.offset_commit_rule,
    ApiKey.OFFSET_FETCH: g.offset_fetch_rule,
    ApiKey.FIND_COORDINATOR: g.find_coordinator_rule,
    ApiKey.JOIN_GROUP: group_rule(OP.READ),
    ApiKey.HEARTBEAT: group_rule(OP.READ),
    ApiKey.LEAVE_GROUP: group_rule(OP.READ),
    ApiKey.SYNC_GROUP: group_rule(OP.READ),
    ApiKey.DESCRIBE_GROUPS: g.describe_groups_rule,
    ApiKey.LIST_GROUPS: g.list_groups_rule,
    ApiKey.API_VERSIONS: open_rule,
    ApiKey.CREATE_TOPICS: create_topics_rule,
    ApiKey.DELETE_TOPICS: delete_topics_rule,
    ApiKey.DELETE_RECORDS: delete_records_rule,
    ApiKey.INIT_PRODUCER_ID: init_producer_id_rule,
    ApiKey.ADD_PARTITIONS_TO_TXN: g.add_partitions_to_txn_rule,
    ApiKey.ADD_OFFSETS_TO_TXN: add_offsets_to_txn_rule,
    ApiKey.END_TXN: end_txn_rule,
    ApiKey.WRITE_TXN_MARKERS: write_txn_markers_rule,
    ApiKey.TXN_OFFSET_COMMIT: g.txn_offset_commit_rule,
    ApiKey.DESCRIBE_CONFIGS: configs_rule(
        OP.DESCRIBE_CONFIGS,
        "results",
        described_config_denied,
        empty=DescribeConfigsResponse(results=()),
    ),
    ApiKey.DESCRIBE_LOG_DIRS: cluster_rule(OP.DESCRIBE),
    ApiKey.CREATE_PARTITIONS: create_partitions_rule,
    ApiKey.DELETE_GROUPS: g.delete_groups_rule,
    ApiKey.ALTER_CONFIGS: configs_rule(
        OP.ALTER_CONFIGS,
        "responses",
        altered_config_denied,
        empty=AlterConfigsResponse(responses=()),
    ),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: configs_rule(
        OP.ALTER_CONFIGS, "responses", incrementally_altered_config_denied
    ),
    ApiKey.OFFSET_DELETE: g.offset_delete_rule,
    ApiKey.DESCRIBE_CLUSTER: open_rule,
    ApiKey.UPDATE_FEATURES: cluster_rule(OP.ALTER),
    ApiKey.DESCRIBE_PRODUCERS: describe_producers_rule,
    ApiKey.DESCRIBE_TRANSACTIONS: g.describe_transactions_rule,
    ApiKey.LIST_TRANSACTIONS: g.list_transactions_rule,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: membership_rule,
    ApiKey.CONSUMER_GROUP_DESCRIBE: g.consumer_group_describe_rule,
    ApiKey.SHARE_GROUP_HEARTBEAT: membership_rule,
    ApiKey.SHARE_GROUP_DESCRIBE: g.share_group_describe_rule,
    ApiKey.SHARE_FETCH: g.share_fetch_rule,
    ApiKey.SHARE_ACKNOWLEDGE: g.share_acknowledge_rule,
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: g.describe_share_group_offsets_rule,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: g.alter_share_group_offsets_rule,
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: g.delete_share_group_offsets_rule,
    ApiKey.TXN_SHARE_ACKNOWLEDGE: g.txn_share_acknowledge_rule,  # KIP-1289, as TxnOffsetCommit
    # KIP-1289, as AddOffsetsToTxn + READ on topics
    ApiKey.ADD_SHARE_ACKS_TO_TXN: add_share_acks_to_txn_rule,
    ApiKey.DESCRIBE_SHARE_PENDING_ACKS: cluster_rule(OP.DESCRIBE),  # sharetxn admin API
}


async def authorize_request(
    ctx: RequestContext, req: DecodedRequest[Any], handler: Handler
) -> Response:
    """Run ``handler`` on what the principal may do; Kafka's errors for the rest."""
    rule = RULES.get(req.api_key)
    if rule is None:
        # An API without a row in the table is served to super users only.
        if ctx.principal in ctx.authorizer.super_users:
            return await handler(req)
        return denied_request(req, CLUSTER_DENIED)
    result: Response = await rule(ctx, req, handler)
    return result
