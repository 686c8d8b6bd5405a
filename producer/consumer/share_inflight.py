"""The share consumer's in-flight bookkeeping: sessions, delivered records, pending acks."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from producer.protocol.records import (
    CorruptRecordError,
    RecordDecodeError,
    decode_batch,
    split_batches,
)
from producer.protocol.types import AcknowledgeType, Record, ShareAckBatch
from txn.errors import ErrorCode, error_for_code
from txn.ids import TopicIdPartition, TopicPartition
from txn.limits import next_share_session_epoch

__all__ = [
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "Delivery",
    "InFlight",
    "Outgoing",
    "PendingAck",
    "Session",
    "TopicIdPartition",
    "ack_ranges",
    "decode_acquired",
    "fetch_topics",
    "outside",
    "partition_error",
    "wire_batches",
]

# Partition errors after which the leader must be looked up again.
METADATA_ERRORS: Final = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.LEADER_NOT_AVAILABLE,
    }
)
_AUTHORIZATION_ERRORS: Final = frozenset(
    {ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED}
)

log = logging.getLogger("producer.share_consumer")

INITIAL_EPOCH: Final = 0
FINAL_EPOCH: Final = -1


class Delivery(NamedTuple):
    node_id: int
    generation: int
    delivery_count: int


class PendingAck(NamedTuple):
    ack_type: AcknowledgeType
    node_id: int
    generation: int


@dataclass(slots=True)
class InFlight:
    """One partition: records delivered to the application and acknowledgements not yet sent."""

    topic_id: uuid.UUID
    delivered: dict[int, Delivery] = field(default_factory=dict)
    acks: dict[int, PendingAck] = field(default_factory=dict)


@dataclass(slots=True)
class Session:
    """The client side of one share session (one per leader broker)."""

    node_id: int
    epoch: int = INITIAL_EPOCH
    generation: int = 0
    partitions: set[TopicIdPartition] = field(default_factory=set)

    def advance(self) -> None:
        self.epoch = next_share_session_epoch(self.epoch)


@dataclass(slots=True)
class Outgoing:
    """One ShareFetch about to be sent to one node."""

    session: Session
    body: dict[str, Any]
    want: set[TopicIdPartition]
    acks: dict[TopicPartition, list[tuple[int, AcknowledgeType]]]


def ack_ranges(
    offsets: Iterable[tuple[int, AcknowledgeType]],
) -> list[ShareAckBatch]:
    """Ascending ranges of consecutive offsets that share one type."""
    out: list[ShareAckBatch] = []
    for offset, ack_type in sorted(offsets):
        last = out[-1] if out else None
        if last is not None and last.last_offset + 1 == offset and last.ack_type is ack_type:
            out[-1] = ShareAckBatch(last.first_offset, offset, ack_type)
        else:
            out.append(ShareAckBatch(offset, offset, ack_type))
    return out


def wire_batches(offsets: list[tuple[int, AcknowledgeType]]) -> list[dict[str, Any]]:
    return [
        {
            "first_offset": b.first_offset,
            "last_offset": b.last_offset,
            "acknowledge_types": [int(b.ack_type)],
        }
        for b in ack_ranges(offsets)
    ]


def outside(want: set[TopicIdPartition]) -> Callable[[TopicPartition, uuid.UUID], bool]:
    def test(tp: TopicPartition, topic_id: uuid.UUID) -> bool:
        return TopicIdPartition(topic_id, tp.partition) not in want

    return test


def decode_acquired(
    tp: TopicPartition,
    session: Session,
    inflight: InFlight,
    p: Any,
    *,
    check_crcs: bool,
) -> tuple[list[Record], Exception | None]:
    """The acquired records of one partition; gaps and undecodable batches auto-acked."""
    ranges = sorted(
        (int(a.first_offset), int(a.last_offset), int(a.delivery_count)) for a in p.acquired_records
    )
    acquired: dict[int, int] = {}
    for first, last, dc in ranges:
        for offset in range(first, last + 1):
            acquired[offset] = dc
    node, gen = session.node_id, session.generation
    raw = bytes(p.records or b"")
    out: list[Record] = []
    handled: set[int] = set()
    problem: Exception | None = None
    lo, hi = ranges[0][0], ranges[-1][1]
    try:
        batches = split_batches(raw)
    except RecordDecodeError as exc:
        batches = []
        problem = exc
    for pos, header in batches:
        if header.last_offset < lo or header.base_offset > hi:
            continue
        try:
            batch = decode_batch(raw, pos, header, check_crc=check_crcs)
        except RecordDecodeError as exc:
            # Kafka rejects a corrupt batch; a codec we lack is released for another consumer.
            ack = (
                AcknowledgeType.REJECT
                if isinstance(exc, CorruptRecordError)
                else AcknowledgeType.RELEASE
            )
            for offset in range(header.base_offset, header.last_offset + 1):
                if offset in acquired:
                    inflight.acks[offset] = PendingAck(ack, node, gen)
                    handled.add(offset)
            if problem is None:
                exc.add_note(
                    f"fetched from {tp} (offsets {header.base_offset}-{header.last_offset})"
                )
                problem = exc
            continue
        for r in batch.records:
            count = acquired.get(r.offset)
            if count is None or r.offset in handled:
                continue
            handled.add(r.offset)
            inflight.delivered[r.offset] = Delivery(node, gen, count)
            out.append(
                Record(
                    topic=tp.topic,
                    partition=tp.partition,
                    offset=r.offset,
                    key=r.key,
                    value=r.value,
                    headers=r.headers,
                    timestamp=r.timestamp,
                    delivery_count=count,
                    timestamp_type=r.timestamp_type,
                )
            )
    for offset in acquired:
        if offset not in handled:
            inflight.acks[offset] = PendingAck(AcknowledgeType.GAP, node, gen)
    return out, problem


def fetch_topics(
    added: set[TopicIdPartition],
    forgotten: set[TopicIdPartition],
    acks: Mapping[TopicPartition, list[tuple[int, AcknowledgeType]]],
    topic_ids: Mapping[TopicPartition, uuid.UUID],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A ShareFetch's ``topics`` (added partitions, acknowledgements) and forgotten topics."""
    by_topic: dict[uuid.UUID, dict[int, list[dict[str, Any]]]] = {}
    for tip in added:
        by_topic.setdefault(tip.topic_id, {}).setdefault(tip.partition, [])
    for tp, offsets in acks.items():
        by_topic.setdefault(topic_ids[tp], {})[tp.partition] = wire_batches(offsets)
    gone: dict[uuid.UUID, list[int]] = {}
    for tip in forgotten:
        gone.setdefault(tip.topic_id, []).append(tip.partition)
    topics = [
        {
            "topic_id": topic_id,
            "partitions": [
                {"partition_index": p, "acknowledgement_batches": batches}
                for p, batches in sorted(parts.items())
            ],
        }
        for topic_id, parts in by_topic.items()
    ]
    return topics, [{"topic_id": t, "partitions": sorted(ps)} for t, ps in gone.items()]


def partition_error(
    tp: TopicPartition, code: int, message: str | None
) -> tuple[bool, Exception | None]:
    """A fetched partition's error: (look the leader up again?, error for the application)."""
    error_code = ErrorCode(code)
    if error_code in METADATA_ERRORS:
        return True, None
    if error_code in _AUTHORIZATION_ERRORS:
        return False, error_for_code(code)(message, topic=tp.topic, partition=tp.partition)
    log.warning("share fetch of %s failed: %s %s", tp, error_code.name, message or "")
    return False, None
