"""Kafka API handlers for share groups (KIP-932): the wire side of ``ShareManager``.

ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch (with piggybacked
acknowledgements and long polling), ShareAcknowledge, ListGroups,
DeleteGroups, the share-group offset admin APIs, group configs through
IncrementalAlterConfigs/DescribeConfigs, and the persister RPCs
(Initialize/Read/Write/Delete/ReadSummary ShareGroupState) served directly by
the share coordinator.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from coordinator.broker import BrokerCore
from coordinator.protocol.broker_config_alter import broker_alter_refusal
from coordinator.protocol.responses import (
    OPERATIONS_NOT_REQUESTED,
    Handler,
    WaitForAppend,
    api,
    handler_table,
    heartbeat_response,
    millis,
    undescribed_group,
)
from coordinator.protocol.txn_messages import (
    AddShareAcksToTxnResponse,
    DescribeSharePendingAcksResponse,
    PendingAcksEntry,
    PendingAcksProducer,
    TxnShareAcknowledgePartition,
    TxnShareAcknowledgeResponse,
    TxnShareAcknowledgeTopic,
)
from coordinator.protocol.wire import DecodedRequest, field
from coordinator.share.group_config import group_alter_refusal
from coordinator.share.group_model import ShareGroupDescription, ShareGroupMemberDescription
from coordinator.share.manager import PartitionAcks, ShareFetchOutcome
from coordinator.share.persister import ShareStateKey
from coordinator.share.sessions import INITIAL_EPOCH
from coordinator.share.share_partition import AckBatch
from txn.api_keys import ApiKey
from txn.errors import ErrorCode
from txn.ids import TopicIdPartition, TopicPartition
from txn.limits import INT32_MAX, SHARE_FETCH_MAX_RECORDS

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_GROUP = 32
OP_SET = 0
OP_DELETE = 1
_SHARE_FETCH_POLL_MS = 50


def _described_group(d: ShareGroupDescription) -> dict[str, Any]:
    """A ShareGroupDescribe entry."""
    if d.error is not ErrorCode.NONE:
        return undescribed_group(d.group_id, d.error, d.error_message)
    return {
        "error_code": d.error,
        "error_message": d.error_message,
        "group_id": d.group_id,
        "group_state": d.group_state,
        "group_epoch": d.group_epoch,
        "assignment_epoch": d.assignment_epoch,
        "assignor_name": d.assignor_name,
        "members": [_described_member(m) for m in d.members],
        "authorized_operations": OPERATIONS_NOT_REQUESTED,
    }


def _described_member(m: ShareGroupMemberDescription) -> dict[str, Any]:
    topic_partitions = [
        {"topic_id": tp.topic_id, "topic_name": tp.topic_name, "partitions": list(tp.partitions)}
        for tp in m.assignment
    ]
    return {
        "member_id": m.member_id,
        "rack_id": m.rack_id,
        "member_epoch": m.member_epoch,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "subscribed_topic_names": list(m.subscribed_topic_names),
        "assignment": {"topic_partitions": topic_partitions},
    }


def _acks_of(topics: Any) -> list[PartitionAcks]:
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
                    PartitionAcks(TopicIdPartition(topic.topic_id, int(p.partition_index)), batches)
                )
    return out


class ShareHandlers:
    """Share-group request handlers; registered into the server's dispatch table."""

    def __init__(
        self,
        core: BrokerCore,
        wait_for_append: WaitForAppend,
        broker_endpoint: Callable[[], dict[str, Any]],
    ) -> None:
        self.core = core
        self.share = core.share
        self._wait_for_append = wait_for_append
        self._endpoint = broker_endpoint
        self.table: dict[int, Handler] = handler_table(self)

    # -- membership -----------------------------------------------------------------------------

    @api(ApiKey.SHARE_GROUP_HEARTBEAT)
    async def share_group_heartbeat(self, req: DecodedRequest) -> dict[str, Any]:
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
    async def share_group_describe(self, req: DecodedRequest) -> dict[str, Any]:
        descriptions = self.share.groups.describe(list(req.body.group_ids))
        return {"groups": [_described_group(d) for d in descriptions]}

    @api(ApiKey.LIST_GROUPS)
    async def list_groups(self, req: DecodedRequest) -> dict[str, Any]:
        b = req.body
        states = list(field(b, "states_filter", default=()) or ())
        types = list(field(b, "types_filter", default=()) or ())
        listings = [
            {
                "group_id": g.group_id,
                "protocol_type": "share",
                "group_state": g.group_state,
                "group_type": g.group_type,
            }
            for g in self.share.groups.list_groups(states, types)
        ]
        listings += [
            {
                "group_id": g.group_id,
                "protocol_type": g.protocol_type,
                "group_state": g.state,
                "group_type": g.group_type,
            }
            for g in self.core.groups.list_groups(states, types)
        ]
        listings.sort(key=lambda g: str(g["group_id"]))
        return {"error_code": ErrorCode.NONE, "groups": listings}

    @api(ApiKey.DELETE_GROUPS)
    async def delete_groups(self, req: DecodedRequest) -> dict[str, Any]:
        names = list(req.body.groups_names)
        consumer = [n for n in names if self.core.groups.has_group(n)]
        results = self.share.groups.delete_groups([n for n in names if n not in consumer])
        results.update(self.core.groups.delete_groups(consumer))
        results = {n: results[n] for n in names}
        for group_id, error in results.items():
            if error is ErrorCode.NONE:
                self.share.do_state_work(group_id)
        return {"results": [{"group_id": g, "error_code": e} for g, e in results.items()]}

    # -- fetch and acknowledge ------------------------------------------------------------------

    def _session_of(self, b: Any) -> tuple[str, str, int, int]:
        """ShareFetch's and ShareAcknowledge's group id, member id and session epoch, and the
        group's record lock duration (0 without a group)."""
        group_id = b.group_id or ""
        member_id = b.member_id or ""
        epoch = int(b.share_session_epoch)
        lock_ms = self.share.partition_config(group_id).record_lock_duration_ms if group_id else 0
        return group_id, member_id, epoch, lock_ms

    @api(ApiKey.SHARE_FETCH)
    async def share_fetch(self, req: DecodedRequest) -> dict[str, Any]:
        b = req.body
        group_id, member_id, epoch, lock_ms = self._session_of(b)
        outcome = ShareFetchOutcome(ErrorCode.NONE)
        if not group_id or not member_id:
            return self._fetch_response(
                ShareFetchOutcome(ErrorCode.INVALID_REQUEST, "group and member id are required"),
                lock_ms,
            )
        acks = _acks_of(b.topics)
        if epoch == INITIAL_EPOCH and acks:
            return self._fetch_response(
                ShareFetchOutcome(
                    ErrorCode.INVALID_REQUEST, "acknowledgements need an open share session"
                ),
                lock_ms,
            )
        error, session = self.share.open_or_check_session(
            group_id, member_id, epoch, req.connection_id
        )
        if session is None or error is not ErrorCode.NONE:
            return self._fetch_response(ShareFetchOutcome(error), lock_ms)
        requested = [
            TopicIdPartition(t.topic_id, int(p.partition_index))
            for t in b.topics
            for p in t.partitions
        ]
        forgotten = [
            TopicIdPartition(t.topic_id, int(p))
            for t in field(b, "forgotten_topics_data", default=())
            for p in t.partitions
        ]
        # Acknowledgements first: records they release may be acquired by this same fetch.
        if acks:
            for tip, ack_error in self.share.acknowledge(group_id, member_id, acks).items():
                entry = outcome.partitions.setdefault(tip, _entry(tip))
                entry.ack_error = ack_error
                entry.acked = True
        if self.share.is_final(epoch):
            self.share.close_session(group_id, member_id)
            return self._fetch_response(outcome, lock_ms, full=epoch == INITIAL_EPOCH)
        session.add(requested)
        session.forget(forgotten)
        if epoch != INITIAL_EPOCH:  # a new session already expects epoch 1
            self.share.sessions.advance(session)
        max_records = int(field(b, "max_records", default=SHARE_FETCH_MAX_RECORDS) or 0)
        if max_records <= 0:
            max_records = SHARE_FETCH_MAX_RECORDS
        max_bytes = int(b.max_bytes) if int(b.max_bytes) > 0 else INT32_MAX
        clock = self.core.clock
        deadline_ms = clock.now_ms() + millis(b.max_wait)
        min_bytes = max(int(b.min_bytes), 1)
        while True:
            self.share.acquire(group_id, member_id, session, max_records, max_bytes, outcome)
            got = sum(
                len(p.result.records) for p in outcome.partitions.values() if p.result is not None
            )
            now_ms = clock.now_ms()
            if got >= min_bytes or now_ms >= deadline_ms or outcome.acquired_count > 0:
                break
            if self.share.sessions.get(group_id, member_id) is not session:
                break  # closed or replaced while we waited
            # Records also come back without an append (lock expiry, release): look again soon.
            await self._wait_for_append(min(deadline_ms, now_ms + _SHARE_FETCH_POLL_MS))
        return self._fetch_response(outcome, lock_ms, full=epoch == INITIAL_EPOCH)

    def _fetch_response(
        self, outcome: ShareFetchOutcome, lock_ms: int, *, full: bool = True
    ) -> dict[str, Any]:
        """The response; an incremental one (``full`` False) leaves out quiet partitions."""
        by_topic: dict[uuid.UUID, list[dict[str, Any]]] = {}
        for tip, entry in outcome.partitions.items():
            result = entry.result
            if (
                not full
                and entry.error is ErrorCode.NONE
                and int(entry.ack_error) == ErrorCode.NONE
                and not entry.acked
                and (result is None or not result.acquired)
            ):
                continue  # as Kafka: an incremental answer omits partitions with nothing new
            by_topic.setdefault(tip.topic_id, []).append(
                {
                    "partition_index": tip.partition,
                    "error_code": entry.error,
                    "error_message": None,
                    "acknowledge_error_code": int(entry.ack_error),
                    "acknowledge_error_message": None,
                    "current_leader": {"leader_id": self.core.node_id, "leader_epoch": 0},
                    "records": result.records if result is not None else b"",
                    "acquired_records": [
                        {
                            "first_offset": r.first_offset,
                            "last_offset": r.last_offset,
                            "delivery_count": r.delivery_count,
                        }
                        for r in (result.acquired if result is not None else [])
                    ],
                }
            )
        return {
            "error_code": outcome.error,
            "error_message": outcome.error_message,
            "acquisition_lock_timeout": lock_ms,
            "responses": [{"topic_id": t, "partitions": ps} for t, ps in by_topic.items()],
            "node_endpoints": [self._endpoint()],
        }

    @api(ApiKey.SHARE_ACKNOWLEDGE)
    async def share_acknowledge(self, req: DecodedRequest) -> dict[str, Any]:
        b = req.body
        group_id, member_id, epoch, lock_ms = self._session_of(b)
        base: dict[str, Any] = {
            "acquisition_lock_timeout": lock_ms,
            "node_endpoints": [self._endpoint()],
        }
        if not group_id or not member_id:
            return {
                **base,
                "error_code": ErrorCode.INVALID_REQUEST,
                "error_message": "group and member id are required",
                "responses": [],
            }
        if epoch == INITIAL_EPOCH:
            return {
                **base,
                "error_code": ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                "error_message": "ShareAcknowledge cannot open a session",
                "responses": [],
            }
        error, session = self.share.open_or_check_session(
            group_id, member_id, epoch, req.connection_id
        )
        if session is None or error is not ErrorCode.NONE:
            return {**base, "error_code": error, "error_message": None, "responses": []}
        results = self.share.acknowledge(group_id, member_id, _acks_of(b.topics))
        if self.share.is_final(epoch):
            self.share.close_session(group_id, member_id)
        else:
            self.share.sessions.advance(session)
        by_topic: dict[uuid.UUID, list[dict[str, Any]]] = {}
        for tip, ack_error in results.items():
            by_topic.setdefault(tip.topic_id, []).append(
                {
                    "partition_index": tip.partition,
                    "error_code": ack_error,
                    "error_message": None,
                    "current_leader": {"leader_id": self.core.node_id, "leader_epoch": 0},
                }
            )
        return {
            **base,
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "responses": [{"topic_id": t, "partitions": ps} for t, ps in by_topic.items()],
        }

    # -- KIP-1289 -------------------------------------------------------------------------------

    @api(ApiKey.ADD_SHARE_ACKS_TO_TXN)
    async def add_share_acks_to_txn(self, req: DecodedRequest) -> AddShareAcksToTxnResponse:
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
    async def txn_share_acknowledge(self, req: DecodedRequest) -> TxnShareAcknowledgeResponse:
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
        self, req: DecodedRequest
    ) -> DescribeSharePendingAcksResponse:
        """DescribeSharePendingAcks (sharetxn admin API): staged acks per producer.

        Read from the share coordinator's staged transactional updates: per producer id, each
        share partition with pending acknowledgements, their count and offset range.
        """
        coordinator = self.share.persister
        if (error := coordinator.availability()) is not ErrorCode.NONE:
            return DescribeSharePendingAcksResponse(error_code=error)
        wanted = {int(p) for p in req.body.producer_ids}
        producers = []
        for producer_id, places in sorted(coordinator.open_transactions().items()):
            if wanted and producer_id not in wanted:
                continue
            epoch, entries = -1, list[PendingAcksEntry]()
            for index, key in sorted(places):
                count, first, last = 0, -1, -1
                for pid, pending_epoch, batches in coordinator.pending_for(key):
                    if pid != producer_id:
                        continue
                    epoch = max(epoch, pending_epoch)
                    for b in batches:
                        count += b.last_offset - b.first_offset + 1
                        first = b.first_offset if first < 0 else min(first, b.first_offset)
                        last = max(last, b.last_offset)
                entries.append(
                    PendingAcksEntry(
                        group_id=key.group_id,
                        topic_id=key.topic_id,
                        partition=key.partition,
                        state_partition=index,
                        pending_records=count,
                        first_offset=first,
                        last_offset=last,
                    )
                )
            producers.append(
                PendingAcksProducer(
                    producer_id=producer_id, producer_epoch=epoch, entries=tuple(entries)
                )
            )
        return DescribeSharePendingAcksResponse(
            error_code=ErrorCode.NONE, producers=tuple(producers)
        )

    # -- share-group offsets (admin) ------------------------------------------------------------

    @api(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)
    async def describe_share_group_offsets(self, req: DecodedRequest) -> dict[str, Any]:
        groups = []
        for g in req.body.groups:
            group_id = g.group_id
            initialized = self.share.groups.initialized_partitions(group_id)
            if g.topics is None:
                wanted: list[tuple[str, list[int]]] = []
                for topic_id, parts in initialized.items():
                    info = self.core.topics.by_id(topic_id)
                    if info is not None:
                        wanted.append((info.name, sorted(parts)))
            else:
                wanted = [(t.topic_name, [int(p) for p in t.partitions]) for t in g.topics]
            topics = []
            for name, wanted_parts in sorted(wanted):
                info = self.core.topics.get(name)
                rows = []
                for p in wanted_parts:
                    if info is None or p >= info.num_partitions:
                        rows.append(
                            {
                                "partition_index": p,
                                "start_offset": -1,
                                "leader_epoch": -1,
                                "lag": -1,
                                "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                "error_message": None,
                            }
                        )
                        continue
                    summary = self.share.persister.read_state_summary(
                        ShareStateKey(group_id, info.topic_id, p), 0
                    )
                    start = summary.start_offset if summary.error is ErrorCode.NONE else -1
                    data = self.core.partitions.get(TopicPartition(name, p))
                    lag = -1
                    if data is not None and start >= 0:
                        lag = max(0, data.high_watermark - start)
                    rows.append(
                        {
                            "partition_index": p,
                            "start_offset": start,
                            "leader_epoch": 0,
                            "lag": lag,
                            "error_code": ErrorCode.NONE,
                            "error_message": None,
                        }
                    )
                topics.append(
                    {
                        "topic_name": name,
                        "topic_id": info.topic_id if info else uuid.UUID(int=0),
                        "partitions": rows,
                    }
                )
            groups.append(
                {
                    "group_id": group_id,
                    "topics": topics,
                    "error_code": ErrorCode.NONE,
                    "error_message": None,
                }
            )
        return {"groups": groups}

    def _refuse_non_empty(self, group_id: str) -> dict[str, Any] | None:
        """NON_EMPTY_GROUP while the share group has members: offsets change only when empty."""
        if self.share.groups.is_empty(group_id):
            return None
        return {
            "error_code": ErrorCode.NON_EMPTY_GROUP,
            "error_message": f"share group {group_id} is not empty",
            "responses": [],
        }

    @api(ApiKey.ALTER_SHARE_GROUP_OFFSETS)
    async def alter_share_group_offsets(self, req: DecodedRequest) -> dict[str, Any]:
        b = req.body
        group_id = b.group_id
        if (refused := self._refuse_non_empty(group_id)) is not None:
            return refused
        if self.share.groups.group(group_id) is None and self.share.groups.is_foreign_group(
            group_id
        ):
            # An unknown id creates a share group (as in Kafka); a consumer group's id cannot.
            return {
                "error_code": ErrorCode.GROUP_ID_NOT_FOUND,
                "error_message": f"Group {group_id} is not a share group.",
                "responses": [],
            }
        view = self.share.groups.group(group_id)
        state_epoch = (view.group_epoch if view is not None else 0) + 1
        responses = []
        for t in b.topics:
            info = self.core.topics.get(t.topic_name)
            rows = []
            done: list[int] = []
            for p in t.partitions:
                index = int(p.partition_index)
                if info is None or index >= info.num_partitions:
                    rows.append(
                        {
                            "partition_index": index,
                            "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                            "error_message": None,
                        }
                    )
                    continue
                key = ShareStateKey(group_id, info.topic_id, index)
                current = self.share.persister.state(key)
                epoch = max(state_epoch, (current.state_epoch + 1) if current is not None else 0)
                error = self.share.persister.initialize_state(key, epoch, int(p.start_offset))
                if error is ErrorCode.NONE:
                    self.share.share_partitions.pop((group_id, info.topic_id, index), None)
                    done.append(index)
                rows.append({"partition_index": index, "error_code": error, "error_message": None})
            if info is not None and done:
                self.share.groups.mark_offsets_reset(group_id, info.topic_id, done)
            responses.append(
                {
                    "topic_name": t.topic_name,
                    "topic_id": info.topic_id if info else uuid.UUID(int=0),
                    "partitions": rows,
                }
            )
        return {"error_code": ErrorCode.NONE, "error_message": None, "responses": responses}

    @api(ApiKey.DELETE_SHARE_GROUP_OFFSETS)
    async def delete_share_group_offsets(self, req: DecodedRequest) -> dict[str, Any]:
        b = req.body
        group_id = b.group_id
        if (refused := self._refuse_non_empty(group_id)) is not None:
            return refused
        if self.share.groups.group(group_id) is None:  # as Kafka: nothing to delete from
            return {
                "error_code": ErrorCode.GROUP_ID_NOT_FOUND,
                "error_message": f"Group {group_id} not found.",
                "responses": [],
            }
        responses = []
        for t in b.topics:
            info = self.core.topics.get(t.topic_name)
            if info is None:
                responses.append(
                    {
                        "topic_name": t.topic_name,
                        "topic_id": uuid.UUID(int=0),
                        "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        "error_message": None,
                    }
                )
                continue
            self.share.groups.mark_offsets_deleted(group_id, info.topic_id)
            self.share.do_state_work(group_id)
            responses.append(
                {
                    "topic_name": t.topic_name,
                    "topic_id": info.topic_id,
                    "error_code": ErrorCode.NONE,
                    "error_message": None,
                }
            )
        return {"error_code": ErrorCode.NONE, "error_message": None, "responses": responses}

    # -- group configs --------------------------------------------------------------------------

    @api(ApiKey.INCREMENTAL_ALTER_CONFIGS)
    async def incremental_alter_configs(self, req: DecodedRequest) -> dict[str, Any]:
        b = req.body
        responses = []
        for r in b.resources:
            rtype = int(r.resource_type)
            if rtype not in (RESOURCE_GROUP, RESOURCE_TOPIC):
                code = ErrorCode.INVALID_REQUEST
                refusal: str | None = f"configs of resource type {rtype} cannot be altered"
                if rtype == RESOURCE_BROKER:
                    ops = [(c.name, int(c.config_operation), c.value) for c in r.configs]
                    code, refusal = broker_alter_refusal(
                        self.core.node_id, r.resource_name, ops, validate_only=bool(b.validate_only)
                    )
                responses.append(
                    {
                        "error_code": code,
                        "error_message": refusal,
                        "resource_type": rtype,
                        "resource_name": r.resource_name,
                    }
                )
                continue
            if rtype == RESOURCE_TOPIC:
                ops = [(c.name, int(c.config_operation), c.value) for c in r.configs]
                error, message = self.core.incremental_alter_topic_configs(
                    r.resource_name, ops, validate_only=bool(b.validate_only)
                )
                responses.append(
                    {
                        "error_code": error,
                        "error_message": message,
                        "resource_type": rtype,
                        "resource_name": r.resource_name,
                    }
                )
                continue
            to_set = {c.name: c.value or "" for c in r.configs if int(c.config_operation) == OP_SET}
            to_delete = [c.name for c in r.configs if int(c.config_operation) == OP_DELETE]
            ops = [(c.name, int(c.config_operation), c.value) for c in r.configs]
            if (refused := group_alter_refusal(r.resource_name, ops)) is not None:
                responses.append(
                    {
                        "error_code": refused[0],
                        "error_message": refused[1],
                        "resource_type": rtype,
                        "resource_name": r.resource_name,
                    }
                )
                continue
            error, message = self.share.groups.alter_group_configs(
                r.resource_name, to_set, to_delete, bool(b.validate_only)
            )
            responses.append(
                {
                    "error_code": error,
                    "error_message": message,
                    "resource_type": rtype,
                    "resource_name": r.resource_name,
                }
            )
        return {"responses": responses}

    def describe_group_configs(self, group_id: str) -> list[dict[str, Any]]:
        return [
            {
                "name": name,
                "value": value,
                "read_only": False,
                "config_source": 5 if is_default else 8,  # DEFAULT_CONFIG / GROUP_CONFIG
                "is_sensitive": False,
                "synonyms": [],
                "config_type": 0,
                "documentation": None,
            }
            for name, (value, is_default) in sorted(
                self.share.groups.describe_group_configs(group_id).items()
            )
        ]


def _entry(tip: TopicIdPartition) -> Any:
    from coordinator.share.manager import PartitionFetch  # noqa: PLC0415

    return PartitionFetch(tip)
