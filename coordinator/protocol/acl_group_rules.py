"""Authorization rules of the group, offset, transaction and share-group APIs.

See the table in ``api_rules``.  The KIP-1289 RPCs mirror their KIP-98
counterparts: TxnShareAcknowledge is checked as TxnOffsetCommit (WRITE on the
transactional id, READ on the group, READ on each topic) and AddShareAcksToTxn
as AddOffsetsToTxn plus READ on its topics.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from coordinator.protocol.acl_rules import (
    CLUSTER_DENIED,
    GROUP_DENIED,
    NO_TOPIC_ID,
    OP,
    RT,
    TOPIC_DENIED,
    TXN_DENIED,
    RequestContext,
    Response,
    answer_kept,
    list_rule,
    split,
    txn_and_group_denial,
    with_body,
)
from coordinator.protocol.cluster_messages import Coordinator, FindCoordinatorResponse
from coordinator.protocol.responses import Handler
from coordinator.protocol.txn_messages import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopicResult,
    DescribedTransaction,
    DescribeTransactionsResponse,
    ListTransactionsResponse,
    TxnOffsetCommitPartition,
    TxnOffsetCommitResponse,
    TxnOffsetCommitTopic,
    TxnShareAcknowledgePartition,
    TxnShareAcknowledgeResponse,
    TxnShareAcknowledgeTopic,
)
from coordinator.protocol.wire import DecodedRequest, field
from txn.errors import ErrorCode
from txn.ids import (
    KEY_TYPE_GROUP,
    KEY_TYPE_SHARE,
    KEY_TYPE_TRANSACTION,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
)


def _offset_entry(t: Any, code: ErrorCode) -> dict[str, Any]:
    return {
        "name": t.name,
        "partitions": [
            {"partition_index": p.partition_index, "error_code": code} for p in t.partitions
        ],
    }


def _offset_denied(t: Any) -> dict[str, Any]:
    return _offset_entry(t, TOPIC_DENIED)


async def _read_topics(
    ctx: RequestContext,
    req: DecodedRequest,
    handler: Handler,
    empty: dict[str, Any] | None = None,
) -> Response:
    """READ on each topic of the offset request's [{name, partitions}]."""
    checked = split(req.body.topics, lambda t: ctx.topic(OP.READ, t.name))
    return await answer_kept(req, handler, "topics", checked, "topics", _offset_denied, empty=empty)


async def offset_commit_rule(
    ctx: RequestContext, req: DecodedRequest, handler: Handler
) -> Response:
    b = req.body
    if not ctx.group(OP.READ, b.group_id):
        return {"topics": [_offset_entry(t, GROUP_DENIED) for t in b.topics]}
    return await _read_topics(ctx, req, handler)


async def txn_offset_commit_rule(
    ctx: RequestContext, req: DecodedRequest, handler: Handler
) -> Response:
    b = req.body

    def entry(t: Any, code: ErrorCode) -> TxnOffsetCommitTopic:
        return TxnOffsetCommitTopic(
            name=t.name,
            partitions=tuple(
                TxnOffsetCommitPartition(partition_index=int(p.partition_index), error_code=code)
                for p in t.partitions
            ),
        )

    code = txn_and_group_denial(ctx, b)
    if code is not None:
        return TxnOffsetCommitResponse(topics=tuple(entry(t, code) for t in b.topics))
    checked = split(b.topics, lambda t: ctx.topic(OP.READ, t.name))
    return await answer_kept(
        req,
        handler,
        "topics",
        checked,
        "topics",
        lambda t: entry(t, TOPIC_DENIED),
        empty=TxnOffsetCommitResponse(topics=()),
    )


async def offset_delete_rule(
    ctx: RequestContext, req: DecodedRequest, handler: Handler
) -> Response:
    if not ctx.group(OP.DELETE, req.body.group_id):
        return {"error_code": GROUP_DENIED, "topics": []}
    return await _read_topics(ctx, req, handler, {"error_code": ErrorCode.NONE, "topics": []})


def _fetched_entries(topics: Iterable[Any], code: ErrorCode) -> list[dict[str, Any]]:
    return [
        {
            "name": t.name,
            "partitions": [
                {
                    "partition_index": int(p),
                    "committed_offset": -1,
                    "committed_leader_epoch": -1,
                    "metadata": "",
                    "error_code": code,
                }
                for p in t.partition_indexes
            ],
        }
        for t in topics
    ]


async def offset_fetch_rule(ctx: RequestContext, req: DecodedRequest, handler: Handler) -> Response:
    """DESCRIBE on the group; listed topics need DESCRIBE, unlisted ones are filtered out."""
    b = req.body
    groups = field(b, "groups")
    if groups is None:
        if not ctx.group(OP.DESCRIBE, b.group_id):
            return {
                "error_code": GROUP_DENIED,
                "topics": _fetched_entries(b.topics or (), GROUP_DENIED),
            }
        if b.topics is None:
            response = await handler(req)
            assert isinstance(response, dict)  # not yet typed
            response["topics"] = [
                t for t in response["topics"] if ctx.topic(OP.DESCRIBE, t["name"])
            ]
            return response
        kept, denied = split(b.topics, lambda t: ctx.topic(OP.DESCRIBE, t.name))
        if not denied:
            return await handler(req)
        response = await handler(with_body(req, topics=kept))
        assert isinstance(response, dict)  # not yet typed
        if not kept:
            response["topics"] = []
        response["topics"] = [*response["topics"], *_fetched_entries(denied, TOPIC_DENIED)]
        return response
    allowed_groups, denied_groups = split(groups, lambda g: ctx.group(OP.DESCRIBE, g.group_id))
    denied_topics: dict[str, list[Any]] = {}
    trimmed = []
    for g in allowed_groups:
        if g.topics is None:
            trimmed.append(g)
            continue
        kept, denied = split(g.topics, lambda t: ctx.topic(OP.DESCRIBE, t.name))
        denied_topics[g.group_id] = denied
        trimmed.append(g if not denied else dataclasses.replace(g, topics=kept))
    answers: list[dict[str, Any]] = []
    if trimmed:
        response = await handler(with_body(req, groups=tuple(trimmed)))
        assert isinstance(response, dict)  # not yet typed
        answers = list(response["groups"])
    for answer in answers:
        if any(g.group_id == answer["group_id"] and g.topics is None for g in trimmed):
            answer["topics"] = [t for t in answer["topics"] if ctx.topic(OP.DESCRIBE, t["name"])]
        extra = denied_topics.get(answer["group_id"])
        if extra:
            answer["topics"] = [*answer["topics"], *_fetched_entries(extra, TOPIC_DENIED)]
    answers += [
        {"group_id": g.group_id, "error_code": GROUP_DENIED, "topics": []} for g in denied_groups
    ]
    return {"groups": answers}


async def find_coordinator_rule(
    ctx: RequestContext, req: DecodedRequest, handler: Handler
) -> Response:
    b = req.body
    key_type = int(field(b, "key_type", default=0))

    def denial(key: str) -> ErrorCode | None:
        if key_type == KEY_TYPE_GROUP:
            return None if ctx.group(OP.DESCRIBE, key) else GROUP_DENIED
        if key_type == KEY_TYPE_TRANSACTION:
            return None if ctx.allowed(OP.DESCRIBE, RT.TRANSACTIONAL_ID, key) else TXN_DENIED
        if key_type == KEY_TYPE_SHARE:
            return None if ctx.cluster(OP.CLUSTER_ACTION) else CLUSTER_DENIED
        return None

    single = field(b, "key")
    if single is not None:
        code = denial(single)
        if code is not None:
            return FindCoordinatorResponse(error_code=code)
        return await handler(req)

    def denied_entry(k: str) -> Coordinator:
        code = denial(k)
        assert code is not None
        return Coordinator(key=k, node_id=-1, host="", port=-1, error_code=code)

    checked = split(b.coordinator_keys, lambda k: denial(k) is None)
    return await answer_kept(
        req,
        handler,
        "coordinator_keys",
        checked,
        "coordinators",
        denied_entry,
        empty=FindCoordinatorResponse(coordinators=()),
    )


def groups_listing_rule(
    op: Any, list_key: str, response_key: str, entry: Callable[[str], dict[str, Any]]
) -> Callable[[RequestContext, DecodedRequest, Handler], Any]:
    """APIs over a list of group ids answered per group (Describe*/DeleteGroups)."""
    return list_rule(list_key, response_key, lambda ctx, g: ctx.group(op, g), entry)


describe_groups_rule = groups_listing_rule(
    OP.DESCRIBE,
    "groups",
    "groups",
    lambda g: {
        "error_code": GROUP_DENIED,
        "group_id": g,
        "group_state": "",
        "protocol_type": "",
        "protocol_data": "",
        "members": [],
    },
)
consumer_group_describe_rule = groups_listing_rule(
    OP.DESCRIBE,
    "group_ids",
    "groups",
    lambda g: {"error_code": GROUP_DENIED, "group_id": g, "group_state": "", "members": []},
)
share_group_describe_rule = consumer_group_describe_rule
delete_groups_rule = groups_listing_rule(
    OP.DELETE, "groups_names", "results", lambda g: {"group_id": g, "error_code": GROUP_DENIED}
)


async def list_groups_rule(ctx: RequestContext, req: DecodedRequest, handler: Handler) -> Response:
    response = await handler(req)
    assert isinstance(response, dict)  # not yet typed
    if not ctx.cluster(OP.DESCRIBE):
        response["groups"] = [
            g for g in response["groups"] if ctx.group(OP.DESCRIBE, g["group_id"])
        ]
    return response


async def list_transactions_rule(
    ctx: RequestContext, req: DecodedRequest, handler: Handler
) -> Response:
    response = await handler(req)
    assert isinstance(response, ListTransactionsResponse)
    return dataclasses.replace(
        response,
        transaction_states=tuple(
            t
            for t in response.transaction_states
            if ctx.allowed(OP.DESCRIBE, RT.TRANSACTIONAL_ID, t.transactional_id)
        ),
    )


async def describe_transactions_rule(
    ctx: RequestContext, req: DecodedRequest, handler: Handler
) -> Response:
    kept, denied = split(
        req.body.transactional_ids, lambda t: ctx.allowed(OP.DESCRIBE, RT.TRANSACTIONAL_ID, t)
    )
    if not denied:
        response = await handler(req)
    else:
        response = (
            await handler(with_body(req, transactional_ids=kept))
            if kept
            else DescribeTransactionsResponse(transaction_states=())
        )
    assert isinstance(response, DescribeTransactionsResponse)
    described = tuple(
        # Kafka leaves out the topics the principal may not describe.
        dataclasses.replace(
            state, topics=tuple(t for t in state.topics if ctx.topic(OP.DESCRIBE, t.topic))
        )
        for state in response.transaction_states
    )
    refused = tuple(
        DescribedTransaction(
            error_code=TXN_DENIED,
            transactional_id=t,
            transaction_state="",
            producer_id=NO_PRODUCER_ID,
            producer_epoch=NO_PRODUCER_EPOCH,
        )
        for t in denied
    )
    return DescribeTransactionsResponse(transaction_states=(*described, *refused))


async def add_partitions_to_txn_rule(
    ctx: RequestContext, req: DecodedRequest, handler: Handler
) -> Response:
    b = req.body
    if req.api_version >= 4:
        # The broker-to-broker form (KIP-890 verification): CLUSTER_ACTION.
        if not ctx.cluster(OP.CLUSTER_ACTION):
            return AddPartitionsToTxnResponse(error_code=CLUSTER_DENIED)
        return await handler(req)

    def results(code_of: Callable[[str], ErrorCode]) -> AddPartitionsToTxnResponse:
        return AddPartitionsToTxnResponse(
            results_by_topic_v3_and_below=tuple(
                AddPartitionsToTxnTopicResult(
                    name=t.name,
                    results_by_partition=tuple(
                        AddPartitionsToTxnPartitionResult(
                            partition_index=int(p), partition_error_code=code_of(t.name)
                        )
                        for p in t.partitions
                    ),
                )
                for t in b.v3_and_below_topics
            )
        )

    if not ctx.txn(b.v3_and_below_transactional_id):
        return results(lambda _n: TXN_DENIED)
    denied = {t.name for t in b.v3_and_below_topics if not ctx.topic(OP.WRITE, t.name)}
    if denied:
        # Kafka: the denied topics TOPIC_AUTHORIZATION_FAILED, the others not attempted.
        return results(lambda n: TOPIC_DENIED if n in denied else ErrorCode.OPERATION_NOT_ATTEMPTED)
    return await handler(req)


def share_data_rule(
    topic_op: Any, group_op: Any
) -> Callable[[RequestContext, DecodedRequest, Handler], Any]:
    """ShareFetch / ShareAcknowledge: the group for the whole request, READ per topic id."""

    async def rule(ctx: RequestContext, req: DecodedRequest, handler: Handler) -> Response:
        b = req.body
        if b.group_id and not ctx.group(group_op, b.group_id):
            return {"error_code": GROUP_DENIED, "error_message": None, "responses": []}
        kept, denied = split(b.topics, lambda t: ctx.topic_by_id(topic_op, t.topic_id))
        if not denied:
            return await handler(req)
        response = await handler(with_body(req, topics=kept))
        assert isinstance(response, dict)  # not yet typed
        response["responses"] = [
            *response["responses"],
            *(
                {
                    "topic_id": t.topic_id,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "error_code": TOPIC_DENIED,
                            "acknowledge_error_code": TOPIC_DENIED,
                            "records": b"",
                        }
                        for p in t.partitions
                    ],
                }
                for t in denied
            ),
        ]
        return response

    return rule


share_fetch_rule = share_data_rule(OP.READ, OP.READ)
share_acknowledge_rule = share_data_rule(OP.READ, OP.READ)


async def txn_share_acknowledge_rule(
    ctx: RequestContext, req: DecodedRequest, handler: Handler
) -> Response:
    """KIP-1289 TxnShareAcknowledge: checked as TxnOffsetCommit."""
    b = req.body

    def entry(t: Any, code: ErrorCode) -> TxnShareAcknowledgeTopic:
        return TxnShareAcknowledgeTopic(
            topic_id=t.topic_id,
            partitions=tuple(
                TxnShareAcknowledgePartition(partition=int(p.partition), error_code=code)
                for p in t.partitions
            ),
        )

    code = txn_and_group_denial(ctx, b)
    if code is not None:
        return TxnShareAcknowledgeResponse(topics=tuple(entry(t, code) for t in b.topics))
    checked = split(b.topics, lambda t: ctx.topic_by_id(OP.READ, t.topic_id))
    return await answer_kept(
        req,
        handler,
        "topics",
        checked,
        "topics",
        lambda t: entry(t, TOPIC_DENIED),
        empty=TxnShareAcknowledgeResponse(topics=()),
    )


def share_offsets_rule(group_op: Any, topic_op: Any, with_partitions: bool) -> Callable[..., Any]:
    """Alter/DeleteShareGroupOffsets: one group, topics by name."""

    def denied_entry(t: Any) -> dict[str, Any]:
        entry: dict[str, Any] = {"topic_name": t.topic_name, "topic_id": NO_TOPIC_ID}
        if with_partitions:
            entry["partitions"] = [
                {"partition_index": p.partition_index, "error_code": TOPIC_DENIED}
                for p in t.partitions
            ]
        else:
            entry["error_code"] = TOPIC_DENIED
        return entry

    async def rule(ctx: RequestContext, req: DecodedRequest, handler: Handler) -> Response:
        b = req.body
        if not ctx.group(group_op, b.group_id):
            return {"error_code": GROUP_DENIED, "error_message": None, "responses": []}
        checked = split(b.topics, lambda t: ctx.topic(topic_op, t.topic_name))
        return await answer_kept(
            req,
            handler,
            "topics",
            checked,
            "responses",
            denied_entry,
            empty={"error_code": ErrorCode.NONE, "error_message": None, "responses": []},
        )

    return rule


alter_share_group_offsets_rule = share_offsets_rule(OP.READ, OP.READ, with_partitions=True)
# Kafka 4.4 requires DELETE on the group to delete its offsets (READ on the topics).
delete_share_group_offsets_rule = share_offsets_rule(OP.DELETE, OP.READ, with_partitions=False)


async def describe_share_group_offsets_rule(
    ctx: RequestContext, req: DecodedRequest, handler: Handler
) -> Response:
    allowed_groups, denied_groups = split(
        req.body.groups, lambda g: ctx.group(OP.DESCRIBE, g.group_id)
    )
    answers: list[dict[str, Any]] = []
    if allowed_groups:
        response = await handler(with_body(req, groups=allowed_groups))
        assert isinstance(response, dict)  # not yet typed
        answers = list(response["groups"])
    listed_all = {g.group_id for g in allowed_groups if g.topics is None}
    for answer in answers:
        topics = answer.get("topics", [])
        if answer.get("group_id") in listed_all:
            # All the group's topics: those the principal may not describe are left out.
            answer["topics"] = [t for t in topics if ctx.topic(OP.DESCRIBE, t["topic_name"])]
            continue
        answer["topics"] = [
            t
            if ctx.topic(OP.DESCRIBE, t["topic_name"])
            else {
                "topic_name": t["topic_name"],
                "topic_id": NO_TOPIC_ID,
                "partitions": [
                    {
                        "partition_index": p["partition_index"],
                        "start_offset": -1,
                        "error_code": TOPIC_DENIED,
                    }
                    for p in t.get("partitions", [])
                ],
            }
            for t in topics
        ]
    answers += [
        {"group_id": g.group_id, "error_code": GROUP_DENIED, "error_message": None, "topics": []}
        for g in denied_groups
    ]
    return {"groups": answers}
