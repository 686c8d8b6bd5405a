"""The consumer-group requests of the simulation, and how the simulated broker serves them.

The sans-IO counterparts of the Kafka RPCs a consume-transform-produce application sends with
a consumer group and ``sendOffsetsToTransaction`` (KIP-98, KIP-447) over the KIP-848 protocol:
ConsumerGroupHeartbeat, Fetch (read_committed), OffsetFetch (``require_stable``),
AddOffsetsToTxn and TxnOffsetCommit.  ``dispatch`` serves one against a ``BrokerCore`` the way
the Kafka-protocol handlers do (they share the core's methods).

Broker-side observations: ``offsets-staged`` (a TxnOffsetCommit accepted: the offsets wait for
the transaction's marker) and ``group-epoch`` (a heartbeat answered with a new member epoch or
assignment).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coordinator.broker import BrokerCore
from txn.errors import ErrorCode
from txn.ids import TopicPartition

Observer = Callable[[str, Any], None]

# The rebalance timeout a member sends: how long it may take to revoke partitions.
REBALANCE_TIMEOUT_MS = 5000


@dataclass(frozen=True, slots=True)
class GroupHeartbeat:
    """ConsumerGroupHeartbeat: join at epoch 0, heartbeat, or leave at epoch -1."""

    group: str
    member: str
    epoch: int
    topics: tuple[str, ...] | None  # the subscription (full requests)
    owned: tuple[tuple[str, int], ...] | None  # the partitions the member owns now


@dataclass(frozen=True, slots=True)
class Fetch:
    """Fetch at read_committed from one partition."""

    topic: str
    partition: int
    offset: int
    max_bytes: int


@dataclass(frozen=True, slots=True)
class OffsetFetch:
    group: str
    partitions: tuple[tuple[str, int], ...]
    require_stable: bool


@dataclass(frozen=True, slots=True)
class AddOffsets:
    """AddOffsetsToTxn."""

    tid: str
    pid: int
    epoch: int
    group: str


@dataclass(frozen=True, slots=True)
class TxnOffsetCommit:
    group: str
    tid: str
    pid: int
    epoch: int
    member: str
    member_epoch: int  # the generation the records were fetched under (KIP-447)
    offsets: tuple[tuple[str, int, int], ...]  # (topic, partition, next offset to consume)


GROUP_REQUESTS: tuple[type, ...] = (GroupHeartbeat, Fetch, OffsetFetch, AddOffsets, TxnOffsetCommit)


@dataclass(frozen=True, slots=True)
class GroupAnswer:
    """A response with one error code and optional fields."""

    error: ErrorCode
    fields: dict[str, Any]


@dataclass(frozen=True, slots=True)
class OffsetsAnswer:
    """Per (topic, partition) results: (error, value) -- an offset, or records for Fetch."""

    error: ErrorCode
    partitions: dict[tuple[str, int], tuple[ErrorCode, Any]]


def server_error(request: object) -> object:
    """UNKNOWN_SERVER_ERROR in the request's response shape."""
    error = ErrorCode.UNKNOWN_SERVER_ERROR
    if isinstance(request, OffsetFetch | TxnOffsetCommit | Fetch):
        return OffsetsAnswer(error, {})
    return GroupAnswer(error, {})


def dispatch(core: BrokerCore, request: object, observe: Observer) -> object:
    """Serve one consumer-group request (``request`` is one of ``GROUP_REQUESTS``)."""
    if isinstance(request, GroupHeartbeat):
        return _heartbeat(core, request, observe)
    if isinstance(request, Fetch):
        return _fetch(core, request)
    if isinstance(request, OffsetFetch):
        tps = [TopicPartition(t, p) for t, p in request.partitions]
        error, fetched = core.groups.fetch_offsets(request.group, tps, request.require_stable)
        return OffsetsAnswer(
            error,
            {(tp.topic, tp.partition): (f.error, f.offset) for tp, f in fetched.items()},
        )
    if isinstance(request, AddOffsets):
        error = core.add_offsets_to_txn(request.tid, request.pid, request.epoch)
        return GroupAnswer(error, {})
    if isinstance(request, TxnOffsetCommit):
        return _txn_offset_commit(core, request, observe)
    raise TypeError(f"not a consumer-group request: {request!r}")


def _heartbeat(core: BrokerCore, req: GroupHeartbeat, observe: Observer) -> GroupAnswer:
    owned: dict[uuid.UUID, frozenset[int]] | None = None
    if req.owned is not None:
        by_topic: dict[uuid.UUID, set[int]] = {}
        for topic, partition in req.owned:
            info = core.topics.get(topic)
            if info is not None:
                by_topic.setdefault(info.topic_id, set()).add(partition)
        owned = {t: frozenset(ps) for t, ps in by_topic.items()}
    result = core.groups.consumer_heartbeat(
        req.group,
        req.member,
        req.epoch,
        subscribed_topic_names=list(req.topics) if req.topics is not None else None,
        owned=owned,
        rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
    )
    assignment: list[tuple[str, int]] | None = None
    if result.assignment is not None:
        assignment = []
        for topic_id, parts in result.assignment.items():
            info = core.topics.by_id(topic_id)
            if info is not None:
                assignment.extend((info.name, p) for p in parts)
        assignment.sort()
    if (
        result.error is ErrorCode.NONE
        and req.epoch >= 0
        and (assignment is not None or result.member_epoch != req.epoch)
    ):
        observe(
            "group-epoch",
            {"member": req.member, "epoch": result.member_epoch, "assignment": assignment},
        )
    return GroupAnswer(
        result.error,
        {
            "member_epoch": result.member_epoch,
            "assignment": assignment,
            "heartbeat_interval_ms": result.heartbeat_interval_ms,
        },
    )


def _fetch(core: BrokerCore, req: Fetch) -> OffsetsAnswer:
    tp = TopicPartition(req.topic, req.partition)
    data = core.fetch(tp, req.offset, req.max_bytes, read_committed=True)
    return OffsetsAnswer(
        ErrorCode.NONE,
        {(req.topic, req.partition): (data.error, (data.records, data.high_watermark))},
    )


def _txn_offset_commit(core: BrokerCore, req: TxnOffsetCommit, observe: Observer) -> OffsetsAnswer:
    offsets: dict[TopicPartition, tuple[int, int, str | None]] = {
        TopicPartition(t, p): (o, -1, None) for t, p, o in req.offsets
    }
    results = core.txn_offset_commit(
        req.tid, req.pid, req.epoch, req.group, req.member_epoch, req.member, None, offsets
    )
    staged = [
        [tp.topic, tp.partition, offsets[tp][0]]
        for tp, error in sorted(results.items())
        if error is ErrorCode.NONE
    ]
    if staged:
        observe(
            "offsets-staged",
            {
                "tid": req.tid,
                "pid": req.pid,
                "epoch": req.epoch,
                "member": req.member,
                "member_epoch": req.member_epoch,
                "offsets": staged,
            },
        )
    return OffsetsAnswer(
        ErrorCode.NONE, {(tp.topic, tp.partition): (e, None) for tp, e in results.items()}
    )
