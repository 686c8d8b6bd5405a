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
    appended,
    list_rule,
    split,
    txn_and_group_denial,
    with_body,
)
from coordinator.protocol.cluster_messages import Coordinator, FindCoordinatorResponse
from coordinator.protocol.group_messages import (
    ConsumerDescribedGroup,
    ConsumerGroupDescribeResponse,
    DeletableGroupResult,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribeGroupsResponse,
    ListGroupsResponse,
    OffsetCommitResponse,
    OffsetDeleteResponse,
    OffsetFetchGroup,
    OffsetFetchPartition,
    OffsetFetchResponse,
    OffsetFetchTopic,
    PartitionError,
    TopicErrors,
)
from coordinator.protocol.request_views import (
    AddPartitionsToTxnRequestV0To3View,
    FindCoordinatorRequestView,
)
from coordinator.protocol.responses import Body, Handler
from coordinator.protocol.share_messages import (
    AlteredShareOffset,
    AlteredShareOffsetsTopic,
    AlterShareGroupOffsetsResponse,
    DeletedShareOffsetsTopic,
    DeleteShareGroupOffsetsResponse,
    DescribedShareOffset,
    DescribedShareOffsetsGroup,
    DescribedShareOffsetsTopic,
    DescribeShareGroupOffsetsResponse,
    ShareAcknowledgePartition,
    ShareAcknowledgeResponse,
    ShareAcknowledgeTopic,
    ShareDescribedGroup,
    ShareFetchPartition,
    ShareFetchResponse,
    ShareFetchTopic,
    ShareGroupDescribeResponse,
)
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
from coordinator.protocol.wire import DecodedRequest, optional
from txn.errors import ErrorCode
from txn.ids import (
    KEY_TYPE_GROUP,
    KEY_TYPE_SHARE,
    KEY_TYPE_TRANSACTION,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
)


def _offset_entry(t: Any, code: ErrorCode) -> TopicErrors:
    return TopicErrors(
        name=t.name,
        partitions=tuple(
            PartitionError(partition_index=int(p.partition_index), error_code=code)
            for p in t.partitions
        ),
    )


def _offset_denied(t: Any) -> TopicErrors:
    return _offset_entry(t, TOPIC_DENIED)


async def _read_topics(
    ctx: RequestContext, req: DecodedRequest[Any], handler: Handler, empty: Body
) -> Response:
    """READ on each topic of the offset request's [{name, partitions}]."""
    checked = split(req.body.topics, lambda t: ctx.topic(OP.READ, t.name))
    return await answer_kept(req, handler, "topics", checked, "topics", _offset_denied, empty=empty)


async def offset_commit_rule(
    ctx: RequestContext, req: DecodedRequest[Any], handler: Handler
) -> Response:
    b = req.body
    if not ctx.group(OP.READ, b.group_id):
        return OffsetCommitResponse(topics=tuple(_offset_entry(t, GROUP_DENIED) for t in b.topics))
    return await _read_topics(ctx, req, handler, OffsetCommitResponse(topics=()))


async def txn_offset_commit_rule(
    ctx: RequestContext, req: DecodedRequest[Any], handler: Handler
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
    ctx: RequestContext, req: DecodedRequest[Any], handler: Handler
) -> Response:
    if not ctx.group(OP.DELETE, req.body.group_id):
        return OffsetDeleteResponse(error_code=GROUP_DENIED)
    return await _read_topics(ctx, req, handler, OffsetDeleteResponse(error_code=ErrorCode.NONE))


def _fetched_entries(topics: Iterable[Any], code: ErrorCode) -> tuple[OffsetFetchTopic, ...]:
    return tuple(
        OffsetFetchTopic(
            name=t.name,
            partitions=tuple(
                OffsetFetchPartition(
                    partition_index=int(p),
                    committed_offset=-1,
                    committed_leader_epoch=-1,
                    metadata="",
                    error_code=code,
                )
                for p in t.partition_indexes
            ),
        )
        for t in topics
    )


async def offset_fetch_rule(
    ctx: RequestContext, req: DecodedRequest[Any], handler: Handler
) -> Response:
    """DESCRIBE on the group; listed topics need DESCRIBE, unlisted ones are filtered out."""
    b = req.body
    groups: tuple[Any, ...] | None = optional(b, "groups", default=None)  # v8+
    if groups is None:
        if not ctx.group(OP.DESCRIBE, b.group_id):
            return OffsetFetchResponse(
                error_code=GROUP_DENIED, topics=_fetched_entries(b.topics or (), GROUP_DENIED)
            )
        if b.topics is None:
            response = await handler(req)
            assert isinstance(response, OffsetFetchResponse)
            return dataclasses.replace(
                response,
                topics=tuple(t for t in response.topics if ctx.topic(OP.DESCRIBE, t.name)),
            )
        kept, denied = split(b.topics, lambda t: ctx.topic(OP.DESCRIBE, t.name))
        if not denied:
            return await handler(req)
        response = await handler(with_body(req, topics=kept))
        assert isinstance(response, OffsetFetchResponse)
        answered = response.topics if kept else ()
        return dataclasses.replace(
            response, topics=(*answered, *_fetched_entries(denied, TOPIC_DENIED))
        )
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
    answers: list[OffsetFetchGroup] = []
    if trimmed:
        response = await handler(with_body(req, groups=tuple(trimmed)))
        assert isinstance(response, OffsetFetchResponse)
        answers = list(response.groups)
    for index, answer in enumerate(answers):
        topics = answer.topics
        if any(g.group_id == answer.group_id and g.topics is None for g in trimmed):
            topics = tuple(t for t in topics if ctx.topic(OP.DESCRIBE, t.name))
        extra = denied_topics.get(answer.group_id)
        if extra:
            topics = (*topics, *_fetched_entries(extra, TOPIC_DENIED))
        answers[index] = dataclasses.replace(answer, topics=topics)
    answers += [
        OffsetFetchGroup(group_id=g.group_id, error_code=GROUP_DENIED) for g in denied_groups
    ]
    return OffsetFetchResponse(groups=tuple(answers))


async def find_coordinator_rule(
    ctx: RequestContext, req: DecodedRequest[Any], handler: Handler
) -> Response:
    b: FindCoordinatorRequestView = req.body
    key_type = int(optional(b, "key_type", default=0))

    def denial(key: str) -> ErrorCode | None:
        if key_type == KEY_TYPE_GROUP:
            return None if ctx.group(OP.DESCRIBE, key) else GROUP_DENIED
        if key_type == KEY_TYPE_TRANSACTION:
            return None if ctx.allowed(OP.DESCRIBE, RT.TRANSACTIONAL_ID, key) else TXN_DENIED
        if key_type == KEY_TYPE_SHARE:
            return None if ctx.cluster(OP.CLUSTER_ACTION) else CLUSTER_DENIED
        return None

    single: str | None = optional(b, "key", default=None)  # v0-3
    if single is not None:
        code = denial(single)
        if code is not None:
            return FindCoordinatorResponse(error_code=code)
        return await handler(req)

    def denied_entry(k: str) -> Coordinator:
        code = denial(k)
        assert code is not None
        return Coordinator(key=k, node_id=-1, host="", port=-1, error_code=code)

    keys: tuple[str, ...] = optional(b, "coordinator_keys", default=())  # v4+
    checked = split(keys, lambda k: denial(k) is None)
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
    op: Any, list_key: str, response_key: str, entry: Callable[[str], Body], empty: Body
) -> Callable[[RequestContext, DecodedRequest[Any], Handler], Any]:
    """APIs over a list of group ids answered per group (Describe*/DeleteGroups); ``empty`` is
    the answer when no group is left to ask the handler about."""
    return list_rule(list_key, response_key, lambda ctx, g: ctx.group(op, g), entry, empty)


describe_groups_rule = groups_listing_rule(
    OP.DESCRIBE,
    "groups",
    "groups",
    lambda g: DescribedGroup(
        error_code=GROUP_DENIED, group_id=g, group_state="", protocol_type="", protocol_data=""
    ),
    DescribeGroupsResponse(groups=()),
)
consumer_group_describe_rule = groups_listing_rule(
    OP.DESCRIBE,
    "group_ids",
    "groups",
    lambda g: ConsumerDescribedGroup(error_code=GROUP_DENIED, group_id=g),
    ConsumerGroupDescribeResponse(groups=()),
)
share_group_describe_rule = groups_listing_rule(
    OP.DESCRIBE,
    "group_ids",
    "groups",
    lambda g: ShareDescribedGroup(error_code=GROUP_DENIED, group_id=g),
    ShareGroupDescribeResponse(groups=()),
)
delete_groups_rule = groups_listing_rule(
    OP.DELETE,
    "groups_names",
    "results",
    lambda g: DeletableGroupResult(group_id=g, error_code=GROUP_DENIED),
    DeleteGroupsResponse(results=()),
)


async def list_groups_rule(
    ctx: RequestContext, req: DecodedRequest[Any], handler: Handler
) -> Response:
    response = await handler(req)
    assert isinstance(response, ListGroupsResponse)
    if ctx.cluster(OP.DESCRIBE):
        return response
    return dataclasses.replace(
        response, groups=tuple(g for g in response.groups if ctx.group(OP.DESCRIBE, g.group_id))
    )


async def list_transactions_rule(
    ctx: RequestContext, req: DecodedRequest[Any], handler: Handler
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
    ctx: RequestContext, req: DecodedRequest[Any], handler: Handler
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
    ctx: RequestContext, req: DecodedRequest[Any], handler: Handler
) -> Response:
    if req.api_version >= 4:
        # The broker-to-broker form (KIP-890 verification): CLUSTER_ACTION.
        if not ctx.cluster(OP.CLUSTER_ACTION):
            return AddPartitionsToTxnResponse(error_code=CLUSTER_DENIED)
        return await handler(req)
    b: AddPartitionsToTxnRequestV0To3View = req.body

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


async def _share_data(
    ctx: RequestContext,
    req: DecodedRequest[Any],
    handler: Handler,
    refused: Callable[[ErrorCode], Body],
    denied_entry: Callable[[Any], Any],
) -> Response:
    """ShareFetch / ShareAcknowledge: READ on the group for the whole request, READ per topic
    id; ``refused`` answers a denied group, ``denied_entry`` a denied topic."""
    b = req.body
    if b.group_id and not ctx.group(OP.READ, b.group_id):
        return refused(GROUP_DENIED)
    kept, denied = split(b.topics, lambda t: ctx.topic_by_id(OP.READ, t.topic_id))
    if not denied:
        return await handler(req)
    response = await handler(with_body(req, topics=kept))
    assert response is not None
    return appended(response, "responses", [denied_entry(t) for t in denied])


async def share_fetch_rule(
    ctx: RequestContext, req: DecodedRequest[Any], handler: Handler
) -> Response:
    def denied_entry(t: Any) -> ShareFetchTopic:
        return ShareFetchTopic(
            topic_id=t.topic_id,
            partitions=tuple(
                ShareFetchPartition(
                    partition_index=int(p.partition_index),
                    error_code=TOPIC_DENIED,
                    acknowledge_error_code=TOPIC_DENIED,
                )
                for p in t.partitions
            ),
        )

    return await _share_data(
        ctx, req, handler, lambda code: ShareFetchResponse(error_code=code), denied_entry
    )


async def share_acknowledge_rule(
    ctx: RequestContext, req: DecodedRequest[Any], handler: Handler
) -> Response:
    def denied_entry(t: Any) -> ShareAcknowledgeTopic:
        return ShareAcknowledgeTopic(
            topic_id=t.topic_id,
            partitions=tuple(
                ShareAcknowledgePartition(
                    partition_index=int(p.partition_index), error_code=TOPIC_DENIED
                )
                for p in t.partitions
            ),
        )

    return await _share_data(
        ctx, req, handler, lambda code: ShareAcknowledgeResponse(error_code=code), denied_entry
    )


async def txn_share_acknowledge_rule(
    ctx: RequestContext, req: DecodedRequest[Any], handler: Handler
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


def _share_offsets_rule(
    group_op: Any,
    answer: Callable[[ErrorCode], Body],
    denied_entry: Callable[[Any], Any],
) -> Callable[..., Any]:
    """Alter/DeleteShareGroupOffsets: one group, topics by name (READ on each); ``answer``
    answers a denied group (and, with NONE, a request with no topic left)."""

    async def rule(ctx: RequestContext, req: DecodedRequest[Any], handler: Handler) -> Response:
        b = req.body
        if not ctx.group(group_op, b.group_id):
            return answer(GROUP_DENIED)
        checked = split(b.topics, lambda t: ctx.topic(OP.READ, t.topic_name))
        return await answer_kept(
            req,
            handler,
            "topics",
            checked,
            "responses",
            denied_entry,
            empty=answer(ErrorCode.NONE),
        )

    return rule


alter_share_group_offsets_rule = _share_offsets_rule(
    OP.READ,
    lambda code: AlterShareGroupOffsetsResponse(error_code=code),
    lambda t: AlteredShareOffsetsTopic(
        topic_name=t.topic_name,
        topic_id=NO_TOPIC_ID,
        partitions=tuple(
            AlteredShareOffset(partition_index=int(p.partition_index), error_code=TOPIC_DENIED)
            for p in t.partitions
        ),
    ),
)
# Kafka 4.4 requires DELETE on the group to delete its offsets (READ on the topics).
delete_share_group_offsets_rule = _share_offsets_rule(
    OP.DELETE,
    lambda code: DeleteShareGroupOffsetsResponse(error_code=code),
    lambda t: DeletedShareOffsetsTopic(
        topic_name=t.topic_name, topic_id=NO_TOPIC_ID, error_code=TOPIC_DENIED
    ),
)


async def describe_share_group_offsets_rule(
    ctx: RequestContext, req: DecodedRequest[Any], handler: Handler
) -> Response:
    allowed_groups, denied_groups = split(
        req.body.groups, lambda g: ctx.group(OP.DESCRIBE, g.group_id)
    )
    answers: list[DescribedShareOffsetsGroup] = []
    if allowed_groups:
        response = await handler(with_body(req, groups=allowed_groups))
        assert isinstance(response, DescribeShareGroupOffsetsResponse)
        answers = list(response.groups)
    listed_all = {g.group_id for g in allowed_groups if g.topics is None}
    for index, answer in enumerate(answers):
        if answer.group_id in listed_all:
            # All the group's topics: those the principal may not describe are left out.
            topics = tuple(t for t in answer.topics if ctx.topic(OP.DESCRIBE, t.topic_name))
        else:
            topics = tuple(
                t if ctx.topic(OP.DESCRIBE, t.topic_name) else _offsets_denied(t)
                for t in answer.topics
            )
        answers[index] = dataclasses.replace(answer, topics=topics)
    answers += [
        DescribedShareOffsetsGroup(group_id=g.group_id, error_code=GROUP_DENIED)
        for g in denied_groups
    ]
    return DescribeShareGroupOffsetsResponse(groups=tuple(answers))


def _offsets_denied(t: DescribedShareOffsetsTopic) -> DescribedShareOffsetsTopic:
    """A described topic the principal may not describe: its partitions, each refused."""
    return DescribedShareOffsetsTopic(
        topic_name=t.topic_name,
        topic_id=NO_TOPIC_ID,
        partitions=tuple(
            DescribedShareOffset(
                partition_index=p.partition_index,
                start_offset=-1,
                leader_epoch=0,
                error_code=TOPIC_DENIED,
            )
            for p in t.partitions
        ),
    )
