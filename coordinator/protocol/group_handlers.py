"""Wire handlers of the consumer-group APIs: classic membership, offsets, KIP-496, KIP-98.

Each handler turns a decoded request into a call on ``BrokerCore.groups`` (the sans-I/O
``ConsumerGroupCoordinator``) or ``BrokerCore.group_admin`` and its result into a typed message
(``group_messages``); JoinGroup and SyncGroup wait on a future that the coordinator completes
when the rebalance does.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import uuid
from collections.abc import Callable, Iterable
from typing import TypeVar, cast

from coordinator.broker import BrokerCore
from coordinator.group.offset_commands import Committer, OffsetMap
from coordinator.group.results import JoinRequest, JoinResult, SyncResult
from coordinator.protocol.group_messages import (
    ConsumerDescribedGroup,
    ConsumerGroupDescribeResponse,
    ConsumerGroupMember,
    DescribedAssignment,
    DescribedGroup,
    DescribedGroupMember,
    DescribedTopicPartitions,
    DescribeGroupsResponse,
    GroupHeartbeatResponse,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupResponse,
    LeaveGroupMember,
    LeaveGroupResponse,
    OffsetCommitResponse,
    OffsetDeleteResponse,
    OffsetFetchGroup,
    OffsetFetchPartition,
    OffsetFetchResponse,
    OffsetFetchTopic,
    PartitionError,
    SyncGroupResponse,
    TopicErrors,
    heartbeat_response,
)
from coordinator.protocol.group_request_views import (
    AddOffsetsToTxnRequestView,
    ConsumerGroupDescribeRequestView,
    ConsumerGroupHeartbeatRequestView,
    DescribeGroupsRequestView,
    HeartbeatRequestView,
    JoinGroupRequestView,
    LeaveGroupMemberView,
    LeaveGroupRequestV0To2View,
    LeaveGroupRequestView,
    OffsetCommitRequestTopicView,
    OffsetCommitRequestView,
    OffsetDeleteRequestView,
    OffsetFetchRequestGroupView,
    OffsetFetchRequestTopicView,
    OffsetFetchRequestV1To7View,
    OffsetFetchRequestView,
    SyncGroupRequestView,
    TxnOffsetCommitRequestView,
)
from coordinator.protocol.request_topics import DESCRIBABLE
from coordinator.protocol.responses import Handler, api, handler_table, millis
from coordinator.protocol.txn_messages import (
    AddOffsetsToTxnResponse,
    TxnOffsetCommitPartition,
    TxnOffsetCommitResponse,
    TxnOffsetCommitTopic,
)
from coordinator.protocol.wire import DecodedRequest, optional
from txn.api_keys import ApiKey
from txn.errors import ErrorCode, KafkaStorageError
from txn.ids import TopicPartition

log = logging.getLogger("sharetxn.groups")

R = TypeVar("R")


def _offsets(topics: Iterable[OffsetCommitRequestTopicView]) -> OffsetMap:
    """OffsetCommit's or TxnOffsetCommit's topics (the same shape) as an offset map."""
    out: OffsetMap = {}
    for topic in topics:
        for p in topic.partitions:
            epoch = int(optional(p, "committed_leader_epoch", default=-1))
            out[TopicPartition(topic.name, int(p.partition_index))] = (
                int(p.committed_offset),
                epoch,
                p.committed_metadata,
            )
    return out


def _errors_by_topic(results: dict[TopicPartition, ErrorCode]) -> tuple[TopicErrors, ...]:
    """Each partition's error, by topic in the order of ``results``."""
    topics: dict[str, list[PartitionError]] = {}
    for tp, error in results.items():
        topics.setdefault(tp.topic, []).append(
            PartitionError(partition_index=tp.partition, error_code=error)
        )
    return tuple(TopicErrors(name=name, partitions=tuple(parts)) for name, parts in topics.items())


class GroupHandlers:
    """Dispatch entries for the consumer-group APIs."""

    def __init__(self, core: BrokerCore) -> None:
        self.core = core
        self.table: dict[int, Handler] = handler_table(self)

    @staticmethod
    async def _deferred(start: Callable[[Callable[[R], None]], None]) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()

        def respond(result: R) -> None:
            if not future.done():
                future.set_result(result)

        start(respond)
        return await future

    # -- membership -----------------------------------------------------------------------------

    @api(ApiKey.JOIN_GROUP)
    async def join_group(self, req: DecodedRequest[JoinGroupRequestView]) -> JoinGroupResponse:
        b = req.body
        session = millis(b.session_timeout)
        rebalance_timeout: datetime.timedelta | None = optional(
            b, "rebalance_timeout", default=None
        )  # v1+
        rebalance = session if rebalance_timeout is None else millis(rebalance_timeout)
        request = JoinRequest(
            group_id=b.group_id,
            member_id=b.member_id or "",
            group_instance_id=optional(b, "group_instance_id", default=None),
            protocol_type=b.protocol_type,
            protocols=[(p.name, bytes(p.metadata)) for p in b.protocols],
            session_timeout_ms=session,
            rebalance_timeout_ms=rebalance,
            client_id=req.client_id or "",
            client_host=f"/{req.client_host}" if req.client_host else "",
            require_known_member_id=req.api_version >= 4,
            reason=optional(b, "reason", default=None),
            skip_assignment_supported=req.api_version >= 9,
        )
        result: JoinResult = await self._deferred(
            lambda respond: self.core.groups.join(request, respond)
        )
        nullable = req.api_version >= 7
        return JoinGroupResponse(
            error_code=result.error,
            generation_id=result.generation,
            protocol_type=result.protocol_type,
            protocol_name=result.protocol if result.protocol is not None or nullable else "",
            leader=result.leader,
            member_id=result.member_id,
            members=tuple(
                JoinGroupMember(member_id=m, group_instance_id=i, metadata=meta)
                for m, i, meta in result.members
            ),
            skip_assignment=result.skip_assignment,
        )

    @api(ApiKey.SYNC_GROUP)
    async def sync_group(self, req: DecodedRequest[SyncGroupRequestView]) -> SyncGroupResponse:
        b = req.body
        assignments = {a.member_id: bytes(a.assignment) for a in b.assignments}
        result: SyncResult = await self._deferred(
            lambda respond: self.core.groups.sync(
                b.group_id,
                int(b.generation_id),
                b.member_id,
                optional(b, "group_instance_id", default=None),
                optional(b, "protocol_type", default=None),
                optional(b, "protocol_name", default=None),
                assignments,
                respond,
            )
        )
        return SyncGroupResponse(
            error_code=result.error,
            protocol_type=result.protocol_type,
            protocol_name=result.protocol,
            assignment=result.assignment,
        )

    @api(ApiKey.HEARTBEAT)
    async def heartbeat(self, req: DecodedRequest[HeartbeatRequestView]) -> HeartbeatResponse:
        b = req.body
        error = self.core.groups.heartbeat(
            b.group_id,
            int(b.generation_id),
            b.member_id,
            optional(b, "group_instance_id", default=None),
        )
        return HeartbeatResponse(error_code=error)

    @api(ApiKey.LEAVE_GROUP)
    async def leave_group(self, req: DecodedRequest[LeaveGroupRequestView]) -> LeaveGroupResponse:
        b = req.body
        members: tuple[LeaveGroupMemberView, ...] | None = optional(b, "members", default=None)
        if members is None:  # v0-2: one member
            identities: list[tuple[str, str | None]] = [
                (cast(LeaveGroupRequestV0To2View, b).member_id, None)
            ]
        else:
            identities = [(m.member_id or "", m.group_instance_id) for m in members]
        error, results = self.core.groups.leave(b.group_id, identities)
        if members is None and results:
            error = results[0][2] if error is ErrorCode.NONE else error
        return LeaveGroupResponse(
            error_code=error,
            members=tuple(
                LeaveGroupMember(member_id=m, group_instance_id=i, error_code=e)
                for m, i, e in results
            ),
        )

    @api(ApiKey.DESCRIBE_GROUPS)
    async def describe_groups(
        self, req: DecodedRequest[DescribeGroupsRequestView]
    ) -> DescribeGroupsResponse:
        groups = tuple(
            DescribedGroup(
                error_code=d.error,
                group_id=d.group_id,
                group_state=d.state,
                protocol_type=d.protocol_type,
                protocol_data=d.protocol,
                members=tuple(
                    DescribedGroupMember(
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        member_metadata=m.metadata,
                        member_assignment=m.assignment,
                    )
                    for m in d.members
                ),
            )
            for d in self.core.group_admin.describe_groups(list(req.body.groups))
        )
        return DescribeGroupsResponse(groups=groups)

    # -- the consumer group protocol (KIP-848) -------------------------------------------------

    @api(ApiKey.CONSUMER_GROUP_HEARTBEAT)
    async def consumer_group_heartbeat(
        self, req: DecodedRequest[ConsumerGroupHeartbeatRequestView]
    ) -> GroupHeartbeatResponse:
        b = req.body
        owned = None
        if b.topic_partitions is not None:
            owned = {
                t.topic_id: frozenset(int(p) for p in t.partitions) for t in b.topic_partitions
            }
        regex: str | None = optional(b, "subscribed_topic_regex", default=None)  # v1
        result = self.core.groups.consumer_heartbeat(
            b.group_id,
            b.member_id or "",
            int(b.member_epoch),
            server_member_id=req.api_version == 0,  # KIP-1082: from v1 the client names itself
            instance_id=b.instance_id,
            rack_id=b.rack_id,
            rebalance_timeout_ms=millis(b.rebalance_timeout),
            subscribed_topic_names=None
            if b.subscribed_topic_names is None
            else list(b.subscribed_topic_names),
            subscribed_topic_regex=regex,  # "" (librdkafka's and Java's "none"): no regex
            may_describe=DESCRIBABLE.get(),
            server_assignor=b.server_assignor,
            owned=owned,
            client_id=req.client_id or "",
            client_host=f"/{req.client_host}" if req.client_host else "",
        )
        assignment = None if result.assignment is None else sorted(result.assignment.items())
        return heartbeat_response(result, assignment)

    @api(ApiKey.CONSUMER_GROUP_DESCRIBE)
    async def consumer_group_describe(
        self, req: DecodedRequest[ConsumerGroupDescribeRequestView]
    ) -> ConsumerGroupDescribeResponse:
        groups: list[ConsumerDescribedGroup] = []
        for group_id, error, group in self.core.groups.describe_consumer_protocol(
            list(req.body.group_ids)
        ):
            if group is None:
                not_found = error is ErrorCode.GROUP_ID_NOT_FOUND
                message = f"Group {group_id} not found." if not_found else None
                groups.append(
                    ConsumerDescribedGroup(
                        error_code=error, error_message=message, group_id=group_id
                    )
                )
                continue
            groups.append(
                ConsumerDescribedGroup(
                    error_code=ErrorCode.NONE,
                    group_id=group_id,
                    group_state=group.state,
                    group_epoch=group.epoch,
                    assignment_epoch=group.assignment_epoch,
                    assignor_name=group.assignor,
                    members=tuple(
                        ConsumerGroupMember(
                            member_id=m.member_id,
                            instance_id=m.instance_id,
                            rack_id=m.rack_id,
                            member_epoch=m.epoch,
                            client_id=m.client_id,
                            client_host=m.client_host,
                            subscribed_topic_names=tuple(sorted(m.subscribed)),
                            subscribed_topic_regex=m.regex or "",  # Kafka: "", no regex
                            assignment=self._named(m.assigned),
                            target_assignment=self._named(group.target.get(m.member_id, {})),
                        )
                        for m in group.members.values()
                    ),
                )
            )
        return ConsumerGroupDescribeResponse(groups=tuple(groups))

    def _named(self, parts: dict[uuid.UUID, frozenset[int]]) -> DescribedAssignment:
        out = []
        for topic_id, partitions in sorted(parts.items()):
            info = self.core.topics.by_id(topic_id)
            out.append(
                DescribedTopicPartitions(
                    topic_id=topic_id,
                    topic_name=info.name if info else "",
                    partitions=tuple(sorted(partitions)),
                )
            )
        return DescribedAssignment(topic_partitions=tuple(out))

    # -- offsets --------------------------------------------------------------------------------

    @api(ApiKey.OFFSET_COMMIT)
    async def offset_commit(
        self, req: DecodedRequest[OffsetCommitRequestView]
    ) -> OffsetCommitResponse:
        b = req.body
        offsets = _offsets(b.topics)
        # As Kafka's KafkaApis: partitions of unknown topics (or past a topic's count) are
        # answered UNKNOWN_TOPIC_OR_PARTITION before the group coordinator sees the rest.
        unknown = {
            tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for tp in offsets if not self._known(tp)
        }
        if unknown:
            offsets = {tp: v for tp, v in offsets.items() if tp not in unknown}
            if not offsets:
                return OffsetCommitResponse(topics=_errors_by_topic(unknown))
        groups = self.core.groups
        committer = Committer(
            b.group_id,
            int(b.generation_id_or_member_epoch),
            b.member_id or "",
            optional(b, "group_instance_id", default=None),
        )
        results, token = groups.commit_offsets_deferred(committer, offsets)
        if token is not None:
            # The fsync runs off the event loop (other connections go on meanwhile); the
            # offsets are applied, and answered, once it covered them.
            sync = groups.deferred_sync()
            try:
                await asyncio.get_running_loop().run_in_executor(None, sync)
            except (OSError, KafkaStorageError) as exc:
                log.error("__consumer_offsets fsync failed: %s", exc)
                groups.deferred_failed(token)
                results = dict.fromkeys(results, ErrorCode.KAFKA_STORAGE_ERROR)
            else:
                groups.durable(token)
        return OffsetCommitResponse(topics=_errors_by_topic({**unknown, **results}))

    def _known(self, tp: TopicPartition) -> bool:
        info = self.core.topics.get(tp.topic)
        return info is not None and 0 <= tp.partition < info.num_partitions

    @api(ApiKey.OFFSET_FETCH)
    async def offset_fetch(
        self, req: DecodedRequest[OffsetFetchRequestView]
    ) -> OffsetFetchResponse:
        b = req.body
        require_stable = bool(optional(b, "require_stable", default=False))
        groups: tuple[OffsetFetchRequestGroupView, ...] | None = optional(
            b, "groups", default=None
        )  # v8+
        wanted: list[tuple[str, tuple[OffsetFetchRequestTopicView, ...] | None]]
        if groups is None:
            one = cast(OffsetFetchRequestV1To7View, b)
            wanted = [(one.group_id, one.topics)]
        else:
            wanted = [(g.group_id, g.topics) for g in groups]
        answers = []
        for group_id, topics in wanted:
            partitions = None
            if topics is not None:
                partitions = [
                    TopicPartition(t.name, int(p)) for t in topics for p in t.partition_indexes
                ]
            error, fetched = self.core.groups.fetch_offsets(group_id, partitions, require_stable)
            by_name: dict[str, list[OffsetFetchPartition]] = {}
            for tp, f in fetched.items():
                by_name.setdefault(tp.topic, []).append(
                    OffsetFetchPartition(
                        partition_index=tp.partition,
                        committed_offset=f.offset,
                        committed_leader_epoch=f.leader_epoch,
                        metadata=f.metadata,
                        error_code=f.error,
                    )
                )
            answers.append(
                OffsetFetchGroup(
                    group_id=group_id,
                    error_code=error,
                    topics=tuple(
                        OffsetFetchTopic(name=name, partitions=tuple(parts))
                        for name, parts in by_name.items()
                    ),
                )
            )
        if groups is None:
            return OffsetFetchResponse(error_code=answers[0].error_code, topics=answers[0].topics)
        return OffsetFetchResponse(groups=tuple(answers))

    @api(ApiKey.OFFSET_DELETE)
    async def offset_delete(
        self, req: DecodedRequest[OffsetDeleteRequestView]
    ) -> OffsetDeleteResponse:
        b = req.body
        partitions = [
            TopicPartition(t.name, int(p.partition_index)) for t in b.topics for p in t.partitions
        ]
        error, results = self.core.groups.delete_offsets(b.group_id, partitions)
        if error is not ErrorCode.NONE:
            return OffsetDeleteResponse(error_code=error)
        return OffsetDeleteResponse(error_code=error, topics=_errors_by_topic(results))

    # -- transactional offsets (KIP-98, KIP-447) ------------------------------------------------

    @api(ApiKey.ADD_OFFSETS_TO_TXN)
    async def add_offsets_to_txn(
        self, req: DecodedRequest[AddOffsetsToTxnRequestView]
    ) -> AddOffsetsToTxnResponse:
        b = req.body
        if not b.group_id:
            return AddOffsetsToTxnResponse(error_code=ErrorCode.INVALID_GROUP_ID)
        error = self.core.add_offsets_to_txn(
            b.transactional_id, int(b.producer_id), int(b.producer_epoch)
        )
        return AddOffsetsToTxnResponse(error_code=error)

    @api(ApiKey.TXN_OFFSET_COMMIT)
    async def txn_offset_commit(
        self, req: DecodedRequest[TxnOffsetCommitRequestView]
    ) -> TxnOffsetCommitResponse:
        b = req.body
        offsets = _offsets(b.topics)
        # As Kafka's KafkaApis (and OffsetCommit): partitions of unknown topics (or past a
        # topic's count) are answered UNKNOWN_TOPIC_OR_PARTITION and not staged; the rest go
        # to the coordinators.
        results: dict[TopicPartition, ErrorCode] = {
            tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for tp in offsets if not self._known(tp)
        }
        known = {tp: v for tp, v in offsets.items() if tp not in results}
        if known:
            results |= self.core.txn_offset_commit(
                b.transactional_id,
                int(b.producer_id),
                int(b.producer_epoch),
                b.group_id,
                int(optional(b, "generation_id", default=-1)),
                optional(b, "member_id", default="") or "",
                optional(b, "group_instance_id", default=None),
                known,
            )
        topics: dict[str, list[TxnOffsetCommitPartition]] = {}
        for tp, error in results.items():
            topics.setdefault(tp.topic, []).append(
                TxnOffsetCommitPartition(partition_index=tp.partition, error_code=error)
            )
        return TxnOffsetCommitResponse(
            topics=tuple(
                TxnOffsetCommitTopic(name=name, partitions=tuple(parts))
                for name, parts in topics.items()
            )
        )
