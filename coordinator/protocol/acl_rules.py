"""Kafka's operation/resource table: which ACL every API needs, and its error when denied.

Each rule takes the decoded request and either answers it with Kafka's
authorization error, or hands the handler the part of the request the
principal may act on and adds error entries for the rest (as Kafka's
KafkaApis does), so a denied topic never reaches the handler and its
existence is never revealed: a topic the principal may not DESCRIBE is
TOPIC_AUTHORIZATION_FAILED whether it exists or not, and left out of
listings.  ``rule_table.RULES`` maps every API to its rule; docs/security.md
lists the operation and resource each one needs.
"""

from __future__ import annotations

import dataclasses
import typing
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from coordinator.protocol.cluster_messages import (
    DescribeConfigsResult,
    DescribeLogDirsResponse,
    MetadataResponse,
    MetadataResponseTopic,
    UpdateFeaturesResponse,
)
from coordinator.protocol.data_handlers import has_transactional_records, refused_topics
from coordinator.protocol.data_messages import (
    FetchableTopicResponse,
    FetchPartitionData,
    FetchResponse,
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
    ProduceResponse,
)
from coordinator.protocol.group_messages import (
    GroupHeartbeatResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    SyncGroupResponse,
)
from coordinator.protocol.group_request_views import ConsumerGroupHeartbeatRequestView
from coordinator.protocol.request_topics import DESCRIBABLE
from coordinator.protocol.request_views import (
    FetchRequestView,
    InitProducerIdRequestView,
    ProduceRequestView,
    WriteTxnMarkersRequestView,
)
from coordinator.protocol.responses import Body, Handler, Message
from coordinator.protocol.share_request_views import ShareGroupHeartbeatRequestView
from coordinator.protocol.topic_messages import (
    AlterConfigsResourceResponse,
    CreatableTopicResult,
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteRecordsPartitionResult,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
    DeleteTopicsResponse,
)
from coordinator.protocol.txn_messages import (
    AddOffsetsToTxnResponse,
    AddShareAcksToTxnResponse,
    DescribeProducersPartition,
    DescribeProducersResponse,
    DescribeProducersTopic,
    DescribeSharePendingAcksResponse,
    EndTxnResponse,
    InitProducerIdResponse,
    WritableTxnMarkerResult,
    WriteTxnMarkersResponse,
    marker_results,
)
from coordinator.protocol.wire import DecodedRequest, optional
from coordinator.security.acls import CLUSTER_NAME, AclOperation, Authorizer, ResourceType
from txn.api_keys import ApiKey
from txn.errors import ErrorCode
from txn.ids import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TopicPartition

OP = AclOperation
RT = ResourceType
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
TXN_DENIED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
NO_TOPIC_ID = uuid.UUID(int=0)
RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_GROUP = 2, 4, 32
RESOURCE_BROKER_LOGGER = 8

Response = Body | None
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class TopicDirectory:
    """What the rules may ask the core about topics (names of ids, existence)."""

    name_of: Callable[[uuid.UUID], str | None]
    exists: Callable[[str], bool]
    auto_create: Callable[[], bool]


_NO_TOPICS = TopicDirectory(lambda _i: None, lambda _n: False, lambda: False)


@dataclass(frozen=True, slots=True)
class RequestContext:
    authorizer: Authorizer
    principal: str
    host: str
    topics: TopicDirectory = _NO_TOPICS

    def allowed(self, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        return self.authorizer.authorize(self.principal, self.host, op, rtype, name)

    def cluster(self, op: AclOperation) -> bool:
        return self.allowed(op, RT.CLUSTER, CLUSTER_NAME)

    def topic(self, op: AclOperation, name: str) -> bool:
        return self.allowed(op, RT.TOPIC, name)

    def group(self, op: AclOperation, name: str) -> bool:
        return self.allowed(op, RT.GROUP, name)

    def txn(self, name: str) -> bool:
        return self.allowed(OP.WRITE, RT.TRANSACTIONAL_ID, name)

    def topic_by_id(self, op: AclOperation, topic_id: uuid.UUID) -> bool:
        """Unknown ids pass (the handler answers UNKNOWN_TOPIC_ID: nothing to reveal)."""
        name = self.topics.name_of(topic_id)
        return name is None or self.topic(op, name)


def with_body(req: DecodedRequest[Any], **changes: Any) -> DecodedRequest[Any]:
    return dataclasses.replace(req, body=dataclasses.replace(req.body, **changes))


def split(items: Iterable[T], ok: Callable[[T], bool]) -> tuple[tuple[T, ...], list[T]]:
    kept: list[T] = []
    denied: list[T] = []
    for item in items:
        (kept if ok(item) else denied).append(item)
    return tuple(kept), denied


async def answer_kept(
    req: DecodedRequest[Any],
    handler: Handler,
    request_key: str,
    checked: tuple[tuple[T, ...], list[T]],
    response_key: str,
    denied_entry: Callable[[T], Body],
    *,
    empty: Body | None = None,
) -> Response:
    """Filter, call, merge: the handler answers the kept items of ``request_key`` (``empty``,
    by default an empty ``response_key`` list, when none is kept) and each denied item gets
    its ``denied_entry`` appended to the ``response_key`` list."""
    kept, denied = checked
    if not denied:
        return await handler(req)
    if kept:
        response = await handler(with_body(req, **{request_key: kept}))
    else:
        response = {response_key: []} if empty is None else empty
    assert response is not None
    return appended(response, response_key, [denied_entry(d) for d in denied])


def appended(response: Body, key: str, entries: list[Any]) -> Body:
    """``response`` with ``entries`` after those of its list ``key``."""
    if isinstance(response, dict):
        response[key] = [*response[key], *entries]
        return response
    changes = {key: (*getattr(response, key), *entries)}
    return typing.cast(Body, dataclasses.replace(response, **changes))


def list_rule(
    list_key: str,
    response_key: str,
    ok: Callable[[RequestContext, Any], bool],
    denied_entry: Callable[[Any], Body],
    empty: Body | None = None,
) -> Callable[[RequestContext, DecodedRequest[Any], Handler], Any]:
    """Rules of APIs over one request list answered per item: the ``ok`` items reach the
    handler, the others get their ``denied_entry``."""

    async def rule(ctx: RequestContext, req: DecodedRequest[Any], handler: Handler) -> Response:
        checked = split(getattr(req.body, list_key), lambda item: ok(ctx, item))
        return await answer_kept(
            req, handler, list_key, checked, response_key, denied_entry, empty=empty
        )

    return rule


# -- single-resource rules ----------------------------------------------------------------------


#: The answer of each API whose whole request is denied, with Kafka's error in its top-level
#: error field (Kafka's ``getErrorResponse``), for the APIs answered by typed messages.
WHOLE_REQUEST_DENIALS: dict[int, Callable[[ErrorCode, int], Message]] = {
    ApiKey.INIT_PRODUCER_ID: lambda code, _version: InitProducerIdResponse(
        error_code=code, producer_id=NO_PRODUCER_ID, producer_epoch=0
    ),
    ApiKey.END_TXN: lambda code, _version: EndTxnResponse(
        error_code=code, producer_id=NO_PRODUCER_ID, producer_epoch=NO_PRODUCER_EPOCH
    ),
    ApiKey.ADD_OFFSETS_TO_TXN: lambda code, _version: AddOffsetsToTxnResponse(error_code=code),
    ApiKey.ADD_SHARE_ACKS_TO_TXN: lambda code, _version: AddShareAcksToTxnResponse(error_code=code),
    ApiKey.DESCRIBE_LOG_DIRS: lambda code, _version: DescribeLogDirsResponse(error_code=code),
    ApiKey.UPDATE_FEATURES: lambda code, _version: UpdateFeaturesResponse(error_code=code),
    ApiKey.DESCRIBE_SHARE_PENDING_ACKS: lambda code, _version: DescribeSharePendingAcksResponse(
        error_code=code
    ),
    ApiKey.JOIN_GROUP: lambda code, version: JoinGroupResponse(
        error_code=code,
        generation_id=-1,
        protocol_type=None,
        protocol_name=None if version >= 7 else "",
        leader="",
        member_id="",
        members=(),
    ),
    ApiKey.SYNC_GROUP: lambda code, _version: SyncGroupResponse(
        error_code=code, protocol_type=None, protocol_name=None, assignment=b""
    ),
    ApiKey.HEARTBEAT: lambda code, _version: HeartbeatResponse(error_code=code),
    ApiKey.LEAVE_GROUP: lambda code, _version: LeaveGroupResponse(error_code=code, members=()),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: lambda code, _version: GroupHeartbeatResponse(error_code=code),
    ApiKey.SHARE_GROUP_HEARTBEAT: lambda code, _version: GroupHeartbeatResponse(error_code=code),
}


def denied_request(req: DecodedRequest[Any], code: ErrorCode) -> Body:
    """The answer to ``req`` when the principal may not make it at all: its API's own
    message (``WHOLE_REQUEST_DENIALS``), ``error_code`` alone for an API without an entry."""
    typed = WHOLE_REQUEST_DENIALS.get(req.api_key)
    if typed is not None:
        return typed(code, req.api_version)
    return {"error_code": code, "error_message": None}


def guarded(
    denial: Callable[[RequestContext, Any], ErrorCode | None],
) -> Callable[[RequestContext, DecodedRequest[Any], Handler], Any]:
    """The rule that answers ``denied_request(req, error)`` when ``denial`` finds an error for the
    request body."""

    async def rule(ctx: RequestContext, req: DecodedRequest[Any], handler: Handler) -> Response:
        code = denial(ctx, req.body)
        if code is not None:
            return denied_request(req, code)
        return await handler(req)

    return rule


def group_rule(op: AclOperation) -> Callable[[RequestContext, DecodedRequest[Any], Handler], Any]:
    return guarded(lambda ctx, b: None if ctx.group(op, str(b.group_id)) else GROUP_DENIED)


def cluster_rule(op: AclOperation) -> Callable[[RequestContext, DecodedRequest[Any], Handler], Any]:
    return guarded(lambda ctx, _b: None if ctx.cluster(op) else CLUSTER_DENIED)


async def write_txn_markers_rule(
    ctx: RequestContext, req: DecodedRequest[Any], handler: Handler
) -> Response:
    """CLUSTER_ACTION on the cluster, as Kafka; without it every partition is answered
    CLUSTER_AUTHORIZATION_FAILED (the response has no top-level error)."""
    if ctx.cluster(OP.CLUSTER_ACTION):
        return await handler(req)
    body: WriteTxnMarkersRequestView = req.body
    return WriteTxnMarkersResponse(
        markers=tuple(
            WritableTxnMarkerResult(
                producer_id=int(m.producer_id),
                topics=marker_results(
                    {
                        TopicPartition(t.name, int(i)): CLUSTER_DENIED
                        for t in m.topics
                        for i in t.partition_indexes
                    }
                ),
            )
            for m in body.markers
        )
    )


async def open_rule(_ctx: RequestContext, req: DecodedRequest[Any], handler: Handler) -> Response:
    return await handler(req)


async def init_producer_id_rule(
    ctx: RequestContext, req: DecodedRequest[Any], handler: Handler
) -> Response:
    body: InitProducerIdRequestView = req.body
    tid = body.transactional_id
    if tid is not None:
        if not ctx.txn(tid):
            return denied_request(req, TXN_DENIED)
    elif not (
        ctx.cluster(OP.IDEMPOTENT_WRITE)
        or ctx.authorizer.authorize_any(ctx.principal, ctx.host, OP.WRITE, RT.TOPIC)
    ):
        return denied_request(req, CLUSTER_DENIED)
    return await handler(req)


end_txn_rule = guarded(lambda ctx, b: None if ctx.txn(b.transactional_id) else TXN_DENIED)


def txn_and_group_denial(ctx: RequestContext, b: Any) -> ErrorCode | None:
    """WRITE on the transactional id, then READ on the group (AddOffsetsToTxn's checks)."""
    if not ctx.txn(b.transactional_id):
        return TXN_DENIED
    if not ctx.group(OP.READ, b.group_id):
        return GROUP_DENIED
    return None


def _share_acks_denial(ctx: RequestContext, b: Any) -> ErrorCode | None:
    """KIP-1289 AddShareAcksToTxn: as AddOffsetsToTxn, plus READ on each data topic."""
    code = txn_and_group_denial(ctx, b)
    if code is None and any(not ctx.topic(OP.READ, t.name) for t in b.topics):
        return TOPIC_DENIED
    return code


add_offsets_to_txn_rule = guarded(txn_and_group_denial)
add_share_acks_to_txn_rule = guarded(_share_acks_denial)


async def membership_rule(
    ctx: RequestContext, req: DecodedRequest[Any], handler: Handler
) -> Response:
    """Consumer/ShareGroupHeartbeat: READ on the group, DESCRIBE on subscribed topics; a
    regex resolves to the topics the principal may describe (``request_topics``)."""
    b: ConsumerGroupHeartbeatRequestView | ShareGroupHeartbeatRequestView = req.body
    if not ctx.group(OP.READ, b.group_id):
        return denied_request(req, GROUP_DENIED)
    subscribed = b.subscribed_topic_names or ()
    refused = sorted(t for t in subscribed if not ctx.topic(OP.DESCRIBE, t))
    if refused:
        return {  # not yet typed: the group family's heartbeats
            "error_code": TOPIC_DENIED,
            "error_message": f"Topic authorization failed for topics {refused}",
        }
    token = DESCRIBABLE.set(lambda topic: ctx.topic(OP.DESCRIBE, topic))  # a regex's topics
    try:
        return await handler(req)
    finally:
        DESCRIBABLE.reset(token)


# -- multi-resource rules: filter, call, merge --------------------------------------------------


async def produce_rule(ctx: RequestContext, req: DecodedRequest[Any], handler: Handler) -> Response:
    b: ProduceRequestView = req.body
    tid = b.transactional_id
    # Kafka: transactional records need a transactional id the principal may WRITE, before
    # any topic is looked at (the handler answers a missing one alike without ACLs).
    if (tid is not None and not ctx.txn(tid)) or (tid is None and has_transactional_records(b)):
        if int(b.acks) == 0:
            return None
        return ProduceResponse(responses=refused_topics(b.topic_data, TXN_DENIED, None))
    kept, denied = split(b.topic_data, lambda t: ctx.topic(OP.WRITE, t.name))
    if not denied:
        return await handler(req)
    response = (
        await handler(with_body(req, topic_data=kept)) if kept else ProduceResponse(responses=())
    )
    if response is None or int(b.acks) == 0:
        return None
    assert isinstance(response, ProduceResponse)
    refused = refused_topics(denied, TOPIC_DENIED, None)
    return ProduceResponse(responses=(*response.responses, *refused))


def _topic_name(ctx: RequestContext, topic: Any) -> str | None:
    name: str | None = optional(topic, "topic", "name", default=None)
    if name is None:
        topic_id: uuid.UUID | None = optional(topic, "topic_id", default=None)
        return ctx.topics.name_of(topic_id) if topic_id is not None else None
    return str(name)


async def fetch_rule(ctx: RequestContext, req: DecodedRequest[Any], handler: Handler) -> Response:
    b: FetchRequestView = req.body

    def ok(t: Any) -> bool:
        name = _topic_name(ctx, t)
        return name is None or ctx.topic(OP.READ, name)

    def denied_entry(t: Any) -> FetchableTopicResponse:
        partitions = tuple(
            FetchPartitionData(
                partition_index=int(p.partition), error_code=TOPIC_DENIED, high_watermark=-1
            )
            for p in t.partitions
        )
        name: str | None = optional(t, "topic", default=None)  # v4-12
        if name is None:
            return FetchableTopicResponse(partitions=partitions, topic_id=t.topic_id)
        return FetchableTopicResponse(partitions=partitions, topic=name)

    empty = FetchResponse(error_code=ErrorCode.NONE, responses=())
    checked = split(b.topics, ok)
    return await answer_kept(
        req, handler, "topics", checked, "responses", denied_entry, empty=empty
    )


def _list_offsets_denied(t: Any) -> ListOffsetsTopicResponse:
    return ListOffsetsTopicResponse(
        name=t.name,
        partitions=tuple(
            ListOffsetsPartitionResponse(
                partition_index=int(p.partition_index), error_code=TOPIC_DENIED
            )
            for p in t.partitions
        ),
    )


list_offsets_rule = list_rule(
    "topics",
    "topics",
    lambda ctx, t: ctx.topic(OP.DESCRIBE, t.name),
    _list_offsets_denied,
    empty=ListOffsetsResponse(topics=()),
)


def _metadata_denied(name: str | None, topic_id: uuid.UUID | None) -> MetadataResponseTopic:
    return MetadataResponseTopic(
        error_code=TOPIC_DENIED,
        name=name,
        topic_id=topic_id if topic_id is not None else NO_TOPIC_ID,
        is_internal=False,
    )


async def metadata_rule(
    ctx: RequestContext, req: DecodedRequest[Any], handler: Handler
) -> Response:
    b = req.body
    requested = b.topics
    if requested is None or (req.api_version == 0 and not requested):
        response = await handler(req)
        assert isinstance(response, MetadataResponse)
        listed = tuple(t for t in response.topics if ctx.topic(OP.DESCRIBE, str(t.name)))
        return dataclasses.replace(response, topics=listed)
    auto_create = bool(optional(b, "allow_auto_topic_creation", default=True))
    kept: list[Any] = []
    refused: list[MetadataResponseTopic] = []
    for t in requested:
        topic_id: uuid.UUID | None = optional(t, "topic_id", default=None)  # v10+
        name = t.name
        if name is None and topic_id is not None:
            name = ctx.topics.name_of(topic_id)
            if name is not None and not ctx.topic(OP.DESCRIBE, name):
                refused.append(_metadata_denied(None, topic_id))
                continue
            kept.append(t)
            continue
        if not ctx.topic(OP.DESCRIBE, name) or (
            auto_create
            and ctx.topics.auto_create()
            and not ctx.topics.exists(name)
            and not (ctx.cluster(OP.CREATE) or ctx.topic(OP.CREATE, name))
        ):
            refused.append(_metadata_denied(name, None))
        else:
            kept.append(t)
    if not refused:
        return await handler(req)
    response = await handler(with_body(req, topics=tuple(kept)))
    assert isinstance(response, MetadataResponse)
    answered = response.topics if kept else ()
    return dataclasses.replace(response, topics=(*answered, *refused))


def _create_topics_denied(t: Any) -> CreatableTopicResult:
    return CreatableTopicResult(
        name=t.name, error_code=TOPIC_DENIED, error_message="Authorization failed."
    )


async def create_topics_rule(
    ctx: RequestContext, req: DecodedRequest[Any], handler: Handler
) -> Response:
    any_topic = ctx.cluster(OP.CREATE)
    checked = split(req.body.topics, lambda t: any_topic or ctx.topic(OP.CREATE, t.name))
    return await answer_kept(
        req,
        handler,
        "topics",
        checked,
        "topics",
        _create_topics_denied,
        empty=CreateTopicsResponse(topics=()),
    )


def _name_denied(t: Any) -> DeletableTopicResult:
    """The entry of a denied topic by name (DeleteTopics v0-5)."""
    return DeletableTopicResult(name=t, error_code=TOPIC_DENIED)


def _id_denied(t: Any) -> DeletableTopicResult:
    """The entry of a denied topic by name or id (DeleteTopics v6+)."""
    return DeletableTopicResult(name=t.name, topic_id=t.topic_id, error_code=TOPIC_DENIED)


_NO_DELETED_TOPICS = DeleteTopicsResponse(responses=())


async def delete_topics_rule(
    ctx: RequestContext, req: DecodedRequest[Any], handler: Handler
) -> Response:
    b = req.body
    if hasattr(b, "topic_names"):
        by_name = split(b.topic_names, lambda n: ctx.topic(OP.DELETE, n))
        return await answer_kept(
            req,
            handler,
            "topic_names",
            by_name,
            "responses",
            _name_denied,
            empty=_NO_DELETED_TOPICS,
        )

    def ok(t: Any) -> bool:
        name = t.name if t.name is not None else ctx.topics.name_of(t.topic_id)
        return name is None or ctx.topic(OP.DELETE, name)

    by_topic = split(b.topics, ok)
    return await answer_kept(
        req, handler, "topics", by_topic, "responses", _id_denied, empty=_NO_DELETED_TOPICS
    )


delete_records_rule = list_rule(
    "topics",
    "topics",
    lambda ctx, t: ctx.topic(OP.DELETE, t.name),
    lambda t: DeleteRecordsTopicResult(
        name=t.name,
        partitions=tuple(
            DeleteRecordsPartitionResult(
                partition_index=int(p.partition_index), low_watermark=-1, error_code=TOPIC_DENIED
            )
            for p in t.partitions
        ),
    ),
    empty=DeleteRecordsResponse(topics=()),
)
describe_producers_rule = list_rule(
    "topics",
    "topics",
    lambda ctx, t: ctx.topic(OP.READ, t.name),
    lambda t: DescribeProducersTopic(
        name=t.name,
        partitions=tuple(
            DescribeProducersPartition(partition_index=int(p), error_code=TOPIC_DENIED)
            for p in t.partition_indexes
        ),
    ),
    empty=DescribeProducersResponse(topics=()),
)


create_partitions_rule = list_rule(
    "topics",
    "results",
    lambda ctx, t: ctx.topic(OP.ALTER, t.name),
    lambda t: CreatePartitionsTopicResult(name=t.name, error_code=TOPIC_DENIED),
    empty=CreatePartitionsResponse(results=()),
)


def configs_rule(
    topic_op: AclOperation,
    response_key: str,
    denied_entry: Callable[[Any, ErrorCode], Body],
    empty: Body | None = None,
) -> Callable[[RequestContext, DecodedRequest[Any], Handler], Any]:
    """DescribeConfigs / (Incremental)AlterConfigs: per resource, by its type; a denied
    resource is answered ``denied_entry(resource, error)``."""

    async def rule(ctx: RequestContext, req: DecodedRequest[Any], handler: Handler) -> Response:
        def denial(r: Any) -> ErrorCode | None:
            rtype, name = int(r.resource_type), str(r.resource_name)
            if rtype == RESOURCE_TOPIC:
                return None if ctx.topic(topic_op, name) else TOPIC_DENIED
            if rtype == RESOURCE_GROUP:
                return None if ctx.group(topic_op, name) else GROUP_DENIED
            if rtype in (RESOURCE_BROKER, RESOURCE_BROKER_LOGGER):
                return None if ctx.cluster(topic_op) else CLUSTER_DENIED
            return None

        def entry(r: Any) -> Body:
            code = denial(r)
            assert code is not None
            return denied_entry(r, code)

        checked = split(req.body.resources, lambda r: denial(r) is None)
        return await answer_kept(
            req, handler, "resources", checked, response_key, entry, empty=empty
        )

    return rule


def described_config_denied(r: Any, code: ErrorCode) -> DescribeConfigsResult:
    """DescribeConfigs' entry of a resource the principal may not describe."""
    return DescribeConfigsResult(
        error_code=code,
        error_message=None,
        resource_type=int(r.resource_type),
        resource_name=r.resource_name,
    )


def altered_config_denied(r: Any, code: ErrorCode) -> AlterConfigsResourceResponse:
    """AlterConfigs' entry of a resource the principal may not alter."""
    return AlterConfigsResourceResponse(
        error_code=code,
        error_message=None,
        resource_type=int(r.resource_type),
        resource_name=r.resource_name,
    )


def incrementally_altered_config_denied(r: Any, code: ErrorCode) -> dict[str, Any]:
    """IncrementalAlterConfigs' entry of a resource the principal may not alter: a dict, as
    the rest of that response (not yet typed)."""
    return dataclasses.asdict(altered_config_denied(r, code))
