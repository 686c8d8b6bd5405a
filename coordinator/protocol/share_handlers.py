"""Kafka API handlers for share groups (KIP-932): the wire side of ``ShareManager``.

ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch (with piggybacked acknowledgements and
long polling), ShareAcknowledge, ListGroups, DeleteGroups, the share-group offset admin APIs,
group configs through IncrementalAlterConfigs (DescribeConfigs of a group is
``config_describe.describe_group_configs``) and the KIP-1289 RPCs.  Each handler translates a
decoded request into a call on the core (``ShareManager``, ``BrokerCore.group_admin``,
``BrokerCore.share_fetches``) and its result into a typed message (``share_messages``,
``group_messages``, ``txn_messages``); ShareFetch's long poll waits here, between the core's
acquisition passes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import cast

from coordinator.broker import BrokerCore
from coordinator.protocol.broker_config_alter import broker_alter_refusal, tls_store_refusal
from coordinator.protocol.broker_loggers import alter_broker_loggers
from coordinator.protocol.group_messages import (
    DeletableGroupResult,
    DeleteGroupsResponse,
    GroupHeartbeatResponse,
    ListedGroup,
    ListGroupsResponse,
    heartbeat_response,
)
from coordinator.protocol.group_request_views import (
    DeleteGroupsRequestView,
    ListGroupsRequestView,
)
from coordinator.protocol.request_views import IncrementalAlterConfigsRequestView
from coordinator.protocol.responses import Handler, WaitForAppend, api, handler_table, millis
from coordinator.protocol.share_messages import (
    AcquiredRecords,
    AlteredShareOffset,
    AlteredShareOffsetsTopic,
    AlterShareGroupOffsetsResponse,
    DeletedShareOffsetsTopic,
    DeleteShareGroupOffsetsResponse,
    DescribedShareOffset,
    DescribedShareOffsetsGroup,
    DescribedShareOffsetsTopic,
    DescribeShareGroupOffsetsResponse,
    IncrementalAlterConfigsResponse,
    LeaderIdAndEpoch,
    NodeEndpoint,
    ShareAcknowledgePartition,
    ShareAcknowledgeResponse,
    ShareAcknowledgeTopic,
    ShareAssignment,
    ShareDescribedGroup,
    ShareFetchPartition,
    ShareFetchResponse,
    ShareFetchTopic,
    ShareGroupDescribeResponse,
    ShareGroupMember,
    ShareTopicPartitions,
)
from coordinator.protocol.share_request_views import (
    AcknowledgeTopicView,
    AddShareAcksToTxnRequestView,
    AlterShareGroupOffsetsRequestView,
    DeleteShareGroupOffsetsRequestView,
    DescribeShareGroupOffsetsRequestView,
    DescribeSharePendingAcksRequestView,
    ShareAcknowledgeRequestView,
    ShareFetchRequestView,
    ShareGroupDescribeRequestView,
    ShareGroupHeartbeatRequestView,
    TxnShareAcknowledgeRequestView,
)
from coordinator.protocol.topic_messages import AlterConfigsResourceResponse
from coordinator.protocol.txn_messages import (
    AddShareAcksToTxnResponse,
    DescribeSharePendingAcksResponse,
    PendingAcksEntry,
    PendingAcksProducer,
    TxnShareAcknowledgePartition,
    TxnShareAcknowledgeResponse,
    TxnShareAcknowledgeTopic,
)
from coordinator.protocol.wire import DecodedRequest, optional
from coordinator.share.group_model import ShareGroupDescription, ShareGroupMemberDescription
from coordinator.share.manager import PartitionAcks
from coordinator.share.share_partition import AckBatch
from coordinator.share_fetch import ShareFetchPoll, ShareFetchRequest, ShareSessionKey
from txn.api_keys import ApiKey
from txn.errors import ErrorCode
from txn.ids import TopicIdPartition

RESOURCE_TOPIC = 2
ACQUIRE_RECORD_LIMIT = 1  # ShareFetch v2 ShareAcquireMode (0: batch_optimized), KIP-1206
RESOURCE_BROKER = 4
RESOURCE_BROKER_LOGGER = 8
RESOURCE_GROUP = 32


def _described_group(d: ShareGroupDescription) -> ShareDescribedGroup:
    """A ShareGroupDescribe entry."""
    if d.error is not ErrorCode.NONE:
        return ShareDescribedGroup(
            error_code=d.error, error_message=d.error_message, group_id=d.group_id
        )
    return ShareDescribedGroup(
        error_code=d.error,
        error_message=d.error_message,
        group_id=d.group_id,
        group_state=d.group_state,
        group_epoch=d.group_epoch,
        assignment_epoch=d.assignment_epoch,
        assignor_name=d.assignor_name,
        members=tuple(_described_member(m) for m in d.members),
    )


def _described_member(m: ShareGroupMemberDescription) -> ShareGroupMember:
    topic_partitions = tuple(
        ShareTopicPartitions(
            topic_id=tp.topic_id, topic_name=tp.topic_name, partitions=tuple(tp.partitions)
        )
        for tp in m.assignment
    )
    return ShareGroupMember(
        member_id=m.member_id,
        rack_id=m.rack_id,
        member_epoch=m.member_epoch,
        client_id=m.client_id,
        client_host=m.client_host,
        subscribed_topic_names=tuple(m.subscribed_topic_names),
        assignment=ShareAssignment(topic_partitions=topic_partitions),
    )


def _id(topic_id: uuid.UUID | None) -> uuid.UUID:
    """A requested topic id: kio decodes the zero id as None, passed on as it was before the
    request was typed (the view says ``UUID | None``, ``TopicIdPartition`` takes a UUID)."""
    return cast(uuid.UUID, topic_id)


def _acks_of(topics: Iterable[AcknowledgeTopicView]) -> list[PartitionAcks]:
    """ShareFetch's or ShareAcknowledge's acknowledgements (the same shape), by partition."""
    out: list[PartitionAcks] = []
    for topic in topics:
        for p in topic.partitions:
            batches = [
                AckBatch(
                    int(b.first_offset), int(b.last_offset), [int(t) for t in b.acknowledge_types]
                )
                for b in p.acknowledgement_batches
            ]
            if batches:
                out.append(
                    PartitionAcks(
                        TopicIdPartition(_id(topic.topic_id), int(p.partition_index)), batches
                    )
                )
    return out


class ShareHandlers:
    """Share-group request handlers; registered into the server's dispatch table."""

    def __init__(
        self,
        core: BrokerCore,
        wait_for_append: WaitForAppend,
        endpoint: Callable[[], tuple[str, int]],
    ) -> None:
        self.core = core
        self.share = core.share
        self._wait_for_append = wait_for_append
        self._address = endpoint
        self.table: dict[int, Handler] = handler_table(self)

    def _endpoint(self) -> NodeEndpoint:
        """This broker, at the address of the listener the current request came in on."""
        host, port = self._address()
        return NodeEndpoint(node_id=self.core.node_id, host=host, port=port)

    def _leader(self) -> LeaderIdAndEpoch:
        return LeaderIdAndEpoch(leader_id=self.core.node_id, leader_epoch=0)

    # -- membership -----------------------------------------------------------------------------

    @api(ApiKey.SHARE_GROUP_HEARTBEAT)
    async def share_group_heartbeat(
        self, req: DecodedRequest[ShareGroupHeartbeatRequestView]
    ) -> GroupHeartbeatResponse:
        b = req.body
        subscribed = None if b.subscribed_topic_names is None else list(b.subscribed_topic_names)
        result = self.share.heartbeat(
            b.group_id,
            b.member_id,
            int(b.member_epoch),
            b.rack_id,
            subscribed,
            client_id=req.client_id or "",
            client_host=req.client_host,
        )
        return heartbeat_response(result, result.assignment)

    @api(ApiKey.SHARE_GROUP_DESCRIBE)
    async def share_group_describe(
        self, req: DecodedRequest[ShareGroupDescribeRequestView]
    ) -> ShareGroupDescribeResponse:
        descriptions = self.share.groups.describe(list(req.body.group_ids))
        return ShareGroupDescribeResponse(groups=tuple(_described_group(d) for d in descriptions))

    @api(ApiKey.LIST_GROUPS)
    async def list_groups(self, req: DecodedRequest[ListGroupsRequestView]) -> ListGroupsResponse:
        b = req.body
        states_filter: tuple[str, ...] = optional(b, "states_filter", default=())  # v4+
        types_filter: tuple[str, ...] = optional(b, "types_filter", default=())  # v5+
        states = list(states_filter or ())
        types = list(types_filter or ())
        listings = tuple(
            ListedGroup(
                group_id=g.group_id,
                protocol_type=g.protocol_type,
                group_state=g.state,
                group_type=g.group_type,
            )
            for g in self.core.group_admin.list_groups(states, types)
        )
        return ListGroupsResponse(error_code=ErrorCode.NONE, groups=listings)

    @api(ApiKey.DELETE_GROUPS)
    async def delete_groups(
        self, req: DecodedRequest[DeleteGroupsRequestView]
    ) -> DeleteGroupsResponse:
        results = self.core.group_admin.delete_groups(list(req.body.groups_names))
        return DeleteGroupsResponse(
            results=tuple(
                DeletableGroupResult(group_id=g, error_code=e) for g, e in results.items()
            )
        )

    # -- fetch and acknowledge ------------------------------------------------------------------

    @staticmethod
    def _session_of(
        req: DecodedRequest[ShareFetchRequestView] | DecodedRequest[ShareAcknowledgeRequestView],
    ) -> ShareSessionKey:
        """ShareFetch's and ShareAcknowledge's group id, member id and session epoch."""
        b = req.body
        epoch = int(b.share_session_epoch)
        return ShareSessionKey(b.group_id or "", b.member_id or "", epoch, req.connection_id)

    @api(ApiKey.SHARE_FETCH)
    async def share_fetch(self, req: DecodedRequest[ShareFetchRequestView]) -> ShareFetchResponse:
        b = req.body
        request = ShareFetchRequest(
            self._session_of(req),
            requested=[
                TopicIdPartition(_id(t.topic_id), int(p.partition_index))
                for t in b.topics
                for p in t.partitions
            ],
            forgotten=[
                TopicIdPartition(_id(t.topic_id), int(p))
                for t in b.forgotten_topics_data
                for p in t.partitions
            ],
            acks=_acks_of(b.topics),
            max_records=int(b.max_records or 0),
            max_bytes=int(b.max_bytes),
            min_bytes=int(b.min_bytes),
            max_wait_ms=millis(b.max_wait),
            # v2+: ShareAcquireMode
            record_limit=optional(b, "share_acquire_mode", default=0) == ACQUIRE_RECORD_LIMIT,
            batch_size=int(b.batch_size),
            renew_ack=bool(optional(b, "is_renew_ack", default=False)),
        )
        poll = self.core.share_fetches.fetch(request)
        while (wake_ms := poll.step()) is not None:
            await self._wait_for_append(wake_ms)
        return self._fetch_response(poll)

    def _fetch_response(self, poll: ShareFetchPoll) -> ShareFetchResponse:
        by_topic: dict[uuid.UUID, list[ShareFetchPartition]] = {}
        for entry in poll.answered():
            result = entry.result
            by_topic.setdefault(entry.tip.topic_id, []).append(
                ShareFetchPartition(
                    partition_index=entry.tip.partition,
                    error_code=entry.error,
                    acknowledge_error_code=entry.ack_error,
                    current_leader=self._leader(),
                    records=result.records if result is not None else b"",
                    acquired_records=tuple(
                        AcquiredRecords(
                            first_offset=r.first_offset,
                            last_offset=r.last_offset,
                            delivery_count=r.delivery_count,
                        )
                        for r in (result.acquired if result is not None else [])
                    ),
                )
            )
        outcome = poll.outcome
        return ShareFetchResponse(
            error_code=outcome.error,
            error_message=outcome.error_message,
            acquisition_lock_timeout=poll.lock_ms,
            responses=tuple(
                ShareFetchTopic(topic_id=t, partitions=tuple(ps)) for t, ps in by_topic.items()
            ),
            node_endpoints=(self._endpoint(),),
        )

    @api(ApiKey.SHARE_ACKNOWLEDGE)
    async def share_acknowledge(
        self, req: DecodedRequest[ShareAcknowledgeRequestView]
    ) -> ShareAcknowledgeResponse:
        result = self.core.share_fetches.acknowledge(
            self._session_of(req),
            _acks_of(req.body.topics),
            renew_ack=bool(optional(req.body, "is_renew_ack", default=False)),
        )
        by_topic: dict[uuid.UUID, list[ShareAcknowledgePartition]] = {}
        for tip, ack_error in result.results.items():
            by_topic.setdefault(tip.topic_id, []).append(
                ShareAcknowledgePartition(
                    partition_index=tip.partition,
                    error_code=ack_error,
                    current_leader=self._leader(),
                )
            )
        return ShareAcknowledgeResponse(
            error_code=result.error,
            error_message=result.message,
            acquisition_lock_timeout=result.lock_ms,
            responses=tuple(
                ShareAcknowledgeTopic(topic_id=t, partitions=tuple(ps))
                for t, ps in by_topic.items()
            ),
            node_endpoints=(self._endpoint(),),
        )

    # -- KIP-1289 -------------------------------------------------------------------------------

    @api(ApiKey.ADD_SHARE_ACKS_TO_TXN)
    async def add_share_acks_to_txn(
        self, req: DecodedRequest[AddShareAcksToTxnRequestView]
    ) -> AddShareAcksToTxnResponse:
        """AddShareAcksToTxn: add each (group, topic partition)'s share-state partition."""
        b = req.body
        topics: dict[str, list[int]] = {}
        for topic in b.topics:
            topics.setdefault(topic.name, []).extend(int(p) for p in topic.partitions)
        error = self.core.add_share_acks_to_txn(
            b.transactional_id, int(b.producer_id), int(b.producer_epoch), b.group_id, topics
        )
        return AddShareAcksToTxnResponse(error_code=error)

    @api(ApiKey.TXN_SHARE_ACKNOWLEDGE)
    async def txn_share_acknowledge(
        self, req: DecodedRequest[TxnShareAcknowledgeRequestView]
    ) -> TxnShareAcknowledgeResponse:
        b = req.body
        acks: list[PartitionAcks] = []
        by_topic: dict[uuid.UUID, list[TxnShareAcknowledgePartition]] = {}
        for topic in b.topics:
            if topic.topic_id is None:  # the zero id names no topic (Kafka: UNKNOWN_TOPIC_ID)
                by_topic.setdefault(uuid.UUID(int=0), []).extend(
                    TxnShareAcknowledgePartition(
                        partition=int(p.partition), error_code=ErrorCode.UNKNOWN_TOPIC_ID
                    )
                    for p in topic.partitions
                )
                continue
            for p in topic.partitions:
                batches = [
                    AckBatch(int(x.first_offset), int(x.last_offset), [int(x.acknowledge_type)])
                    for x in p.acknowledgement_batches
                ]
                acks.append(
                    PartitionAcks(TopicIdPartition(topic.topic_id, int(p.partition)), batches)
                )
        results = self.core.txn_share_acknowledge(
            b.group_id,
            b.transactional_id,
            int(b.producer_id),
            int(b.producer_epoch),
            b.member_id,
            acks,
        )
        for tip, error in results.items():
            by_topic.setdefault(tip.topic_id, []).append(
                TxnShareAcknowledgePartition(partition=tip.partition, error_code=error)
            )
        return TxnShareAcknowledgeResponse(
            topics=tuple(
                TxnShareAcknowledgeTopic(topic_id=t, partitions=tuple(ps))
                for t, ps in by_topic.items()
            )
        )

    @api(ApiKey.DESCRIBE_SHARE_PENDING_ACKS)
    async def describe_share_pending_acks(
        self, req: DecodedRequest[DescribeSharePendingAcksRequestView]
    ) -> DescribeSharePendingAcksResponse:
        """DescribeSharePendingAcks (sharetxn admin API): staged acks per producer."""
        ids = [int(p) for p in req.body.producer_ids]
        error, producers = self.core.group_admin.share_pending_acks(ids)
        return DescribeSharePendingAcksResponse(
            error_code=error,
            producers=tuple(
                PendingAcksProducer(
                    producer_id=p.producer_id,
                    producer_epoch=p.producer_epoch,
                    entries=tuple(
                        PendingAcksEntry(
                            group_id=e.group_id,
                            topic_id=e.topic_id,
                            partition=e.partition,
                            state_partition=e.state_partition,
                            pending_records=e.records,
                            first_offset=e.first_offset,
                            last_offset=e.last_offset,
                        )
                        for e in p.pending
                    ),
                )
                for p in producers
            ),
        )

    # -- share-group offsets (admin) ------------------------------------------------------------

    @api(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)
    async def describe_share_group_offsets(
        self, req: DecodedRequest[DescribeShareGroupOffsetsRequestView]
    ) -> DescribeShareGroupOffsetsResponse:
        admin = self.core.group_admin
        groups = []
        for g in req.body.groups:
            wanted = None
            if g.topics is not None:
                wanted = [(t.topic_name, [int(p) for p in t.partitions]) for t in g.topics]
            topics = admin.describe_share_offsets(g.group_id, wanted)
            groups.append(
                DescribedShareOffsetsGroup(
                    group_id=g.group_id,
                    topics=tuple(
                        DescribedShareOffsetsTopic(
                            topic_name=t.name,
                            topic_id=t.topic_id,
                            partitions=tuple(
                                DescribedShareOffset(
                                    partition_index=p.partition,
                                    start_offset=p.start_offset,
                                    leader_epoch=p.leader_epoch,
                                    lag=p.lag,
                                    error_code=p.error,
                                )
                                for p in t.partitions
                            ),
                        )
                        for t in topics
                    ),
                    error_code=ErrorCode.NONE,
                )
            )
        return DescribeShareGroupOffsetsResponse(groups=tuple(groups))

    @api(ApiKey.ALTER_SHARE_GROUP_OFFSETS)
    async def alter_share_group_offsets(
        self, req: DecodedRequest[AlterShareGroupOffsetsRequestView]
    ) -> AlterShareGroupOffsetsResponse:
        b = req.body
        starts = [
            (t.topic_name, [(int(p.partition_index), int(p.start_offset)) for p in t.partitions])
            for t in b.topics
        ]
        change = self.core.group_admin.alter_share_offsets(b.group_id, starts)
        return AlterShareGroupOffsetsResponse(
            error_code=change.error,
            error_message=change.message,
            responses=tuple(
                AlteredShareOffsetsTopic(
                    topic_name=t.name,
                    topic_id=t.topic_id,
                    partitions=tuple(
                        AlteredShareOffset(partition_index=p.partition, error_code=p.error)
                        for p in t.partitions
                    ),
                )
                for t in change.altered
            ),
        )

    @api(ApiKey.DELETE_SHARE_GROUP_OFFSETS)
    async def delete_share_group_offsets(
        self, req: DecodedRequest[DeleteShareGroupOffsetsRequestView]
    ) -> DeleteShareGroupOffsetsResponse:
        b = req.body
        change = self.core.group_admin.delete_share_offsets(
            b.group_id, [t.topic_name for t in b.topics]
        )
        return DeleteShareGroupOffsetsResponse(
            error_code=change.error,
            error_message=change.message,
            responses=tuple(
                DeletedShareOffsetsTopic(topic_name=t.name, topic_id=t.topic_id, error_code=t.error)
                for t in change.deleted
            ),
        )

    # -- group configs --------------------------------------------------------------------------

    @api(ApiKey.INCREMENTAL_ALTER_CONFIGS)
    async def incremental_alter_configs(
        self, req: DecodedRequest[IncrementalAlterConfigsRequestView]
    ) -> IncrementalAlterConfigsResponse:
        b = req.body
        responses: list[AlterConfigsResourceResponse] = []
        for r in b.resources:
            rtype = int(r.resource_type)
            if rtype not in (RESOURCE_GROUP, RESOURCE_TOPIC):
                code = ErrorCode.INVALID_REQUEST
                refusal: str | None = f"configs of resource type {rtype} cannot be altered"
                ops = [(c.name, int(c.config_operation), c.value) for c in r.configs]
                if rtype == RESOURCE_BROKER:
                    code, refusal = broker_alter_refusal(self.core.node_id, r.resource_name, ops)
                    stores = tls_store_refusal(
                        self.core.dynamic.static, self.core.dynamic.configs_of(r.resource_name), ops
                    )
                    if code is ErrorCode.NONE and stores is not None:
                        code, refusal = stores
                    if code is ErrorCode.NONE and not b.validate_only:
                        self.core.alter_broker_configs(r.resource_name, ops)
                elif rtype == RESOURCE_BROKER_LOGGER:
                    code, refusal = alter_broker_loggers(
                        self.core.node_id, r.resource_name, ops, validate_only=bool(b.validate_only)
                    )
                responses.append(
                    AlterConfigsResourceResponse(
                        error_code=code,
                        error_message=refusal,
                        resource_type=rtype,
                        resource_name=r.resource_name,
                    )
                )
                continue
            if rtype == RESOURCE_TOPIC:
                ops = [(c.name, int(c.config_operation), c.value) for c in r.configs]
                error, message = self.core.incremental_alter_topic_configs(
                    r.resource_name, ops, validate_only=bool(b.validate_only)
                )
                responses.append(
                    AlterConfigsResourceResponse(
                        error_code=error,
                        error_message=message,
                        resource_type=rtype,
                        resource_name=r.resource_name,
                    )
                )
                continue
            ops = [(c.name, int(c.config_operation), c.value) for c in r.configs]
            error, message = self.core.group_admin.incremental_alter_group_configs(
                r.resource_name, ops, validate_only=bool(b.validate_only)
            )
            responses.append(
                AlterConfigsResourceResponse(
                    error_code=error,
                    error_message=message,
                    resource_type=rtype,
                    resource_name=r.resource_name,
                )
            )
        return IncrementalAlterConfigsResponse(responses=tuple(responses))
