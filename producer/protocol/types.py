"""Values shared by the producer and the share consumer (DESIGN §5)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from txn.errors import ErrorCode
from txn.ids import TopicPartition
from txn.share_state import AcknowledgeType

__all__ = [
    "AcknowledgeType",
    "PreparedTxnState",
    "Record",
    "ShareAckBatch",
    "ShareAcknowledgements",
    "ShareGroupMetadata",
]


@dataclass(frozen=True, slots=True)
class Record:
    """One record returned by ``ShareConsumer.poll``."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp: int = -1
    delivery_count: int = 1
    #: 0 CreateTime, 1 LogAppendTime (Kafka's TimestampType ids)
    timestamp_type: int = 0

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class ShareAckBatch:
    """An inclusive offset range acknowledged with one type."""

    first_offset: int
    last_offset: int
    ack_type: AcknowledgeType


@dataclass(frozen=True, slots=True)
class ShareAcknowledgements:
    """Acknowledgements recorded in ``share.acknowledgement.mode=transactional``.

    ``batches`` maps each topic partition to ascending, non-overlapping ranges;
    ``member_id`` is the member that acquired the records (sent as
    TxnShareAcknowledge's MemberId so the broker can check ownership).
    """

    group_id: str
    member_id: str
    batches: dict[TopicPartition, tuple[ShareAckBatch, ...]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return any(self.batches.values())

    @property
    def record_count(self) -> int:
        return sum(b.last_offset - b.first_offset + 1 for bs in self.batches.values() for b in bs)


@dataclass(frozen=True, slots=True)
class ShareGroupMetadata:
    """What ``send_share_acks_to_transaction`` needs to know about the consumer's group."""

    group_id: str
    member_id: str
    member_epoch: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadata:
    """What ``send_offsets_to_transaction`` needs to know about a consumer group member.

    With the member id and generation (KIP-447), the group coordinator fences a zombie whose
    generation is gone; ``ConsumerGroupMetadata(group_id)`` alone commits without that check.
    """

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class PreparedTxnState:
    """A prepared (2PC) transaction: enough to finish it from another process.

    Store ``str(state)`` durably next to your own decision and later call
    ``TransactionalProducer.resume(...)`` or ``complete_transaction(state)``.
    """

    transactional_id: str
    producer_id: int
    epoch: int

    def __str__(self) -> str:
        return json.dumps(
            {
                "transactional_id": self.transactional_id,
                "producer_id": self.producer_id,
                "epoch": self.epoch,
            },
            sort_keys=True,
        )

    @classmethod
    def parse(cls, text: str) -> PreparedTxnState:
        data = json.loads(text)
        return cls(str(data["transactional_id"]), int(data["producer_id"]), int(data["epoch"]))


@dataclass(frozen=True, slots=True)
class TransactionDescription:
    """One transactional id as DescribeTransactions reports it."""

    transactional_id: str
    error: ErrorCode
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int
    partitions: tuple[TopicPartition, ...]
