"""A transaction's group requests: TxnOffsetCommit (KIP-98/447) and TxnShareAcknowledge (KIP-1289).

The second step of ``send_offsets_to_transaction`` and ``send_share_acks_to_transaction``:
after the coordinator added the group's partition to the transaction, the offsets go to
the group coordinator and the share acknowledgements to each data partition's leader,
retried within the caller's deadline.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from producer.produce.sender import ProducerClient, fenced_or_typed
from producer.produce.txn_manager import ABORTABLE_CODES, FATAL_CODES, TransactionManager
from producer.protocol.types import ConsumerGroupMetadata, ShareAckBatch, ShareGroupMetadata
from txn.api_keys import ApiKey
from txn.errors import (
    ErrorCode,
    KafkaProtocolError,
    NetworkError,
    RequestTimedOutError,
    RetriableError,
)
from txn.ids import KEY_TYPE_GROUP, TopicPartition

__all__ = [
    "remaining_ms",
    "txn_offset_commit",
    "txn_share_acknowledge",
]


def remaining_ms(deadline: float) -> int:
    return max(int((deadline - time.monotonic()) * 1000), 1)


def txn_offset_commit(
    client: ProducerClient,
    offsets: dict[TopicPartition, int],
    meta: ConsumerGroupMetadata,
    tid: str | None,
    pid: int,
    epoch: int,
    deadline: float,
) -> None:
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp in sorted(offsets):
        topics.setdefault(tp.topic, []).append(
            {
                "partition_index": tp.partition,
                "committed_offset": offsets[tp],
                "committed_leader_epoch": -1,
                "committed_metadata": "",
            }
        )
    body = {
        "transactional_id": tid,
        "group_id": meta.group_id,
        "producer_id": pid,
        "producer_epoch": epoch,
        "generation_id": meta.generation_id,
        "member_id": meta.member_id,
        "group_instance_id": meta.group_instance_id,
        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
    }

    def attempt() -> None:
        node = client.coordinator_for(KEY_TYPE_GROUP, meta.group_id)
        resp = client.send(node, ApiKey.TXN_OFFSET_COMMIT, body)
        for t in resp.topics:
            for p in t.partitions:
                code = int(p.error_code)
                if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
                    client.forget_coordinator(KEY_TYPE_GROUP, meta.group_id)
                if code != ErrorCode.NONE:
                    raise fenced_or_typed(
                        code,
                        None,
                        transactional_id=tid,
                        group_id=meta.group_id,
                        topic=t.name,
                        partition=int(p.partition_index),
                    )

    client.call(attempt, timeout_ms=remaining_ms(deadline))


def txn_share_acknowledge(
    client: ProducerClient,
    txn: TransactionManager,
    tid: str | None,
    batches: dict[TopicPartition, tuple[ShareAckBatch, ...]],
    group_metadata: ShareGroupMetadata,
    deadline: float,
) -> None:
    remaining = dict(batches)
    pid, epoch = txn.producer_id_and_epoch
    ids = {
        "transactional_id": tid,
        "producer_id": pid,
        "producer_epoch": epoch,
        "group_id": group_metadata.group_id,
        "member_id": group_metadata.member_id,
    }

    def attempt() -> None:
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in sorted(remaining):
            by_leader.setdefault(client.leader_for(tp), []).append(tp)
        retriable: KafkaProtocolError | None = None
        for leader, tps in by_leader.items():
            names: dict[Any, str] = {}
            per_topic: dict[Any, list[dict[str, Any]]] = {}
            for tp in tps:
                topic_id = client.topic(tp.topic).topic_id
                names[topic_id] = tp.topic
                per_topic.setdefault(topic_id, []).append(
                    {
                        "partition": tp.partition,
                        "acknowledgement_batches": [
                            {
                                "first_offset": b.first_offset,
                                "last_offset": b.last_offset,
                                "acknowledge_type": int(b.ack_type),
                            }
                            for b in remaining[tp]
                        ],
                    }
                )
            body = {
                "group_id": group_metadata.group_id,
                "transactional_id": tid,
                "producer_id": pid,
                "producer_epoch": epoch,
                "member_id": group_metadata.member_id,
                "topics": [
                    {"topic_id": topic_id, "partitions": parts}
                    for topic_id, parts in per_topic.items()
                ],
            }
            try:
                resp = client.send(leader, ApiKey.TXN_SHARE_ACKNOWLEDGE, body)
            except (NetworkError, RequestTimedOutError):
                # Unanswered: it may still stage these acks later, possibly in the next
                # transaction of this epoch; the transaction ends with an epoch bump.
                txn.request_epoch_bump()
                raise
            worst: KafkaProtocolError | None = None
            for topic in resp.topics:
                name = names.get(topic.topic_id)
                for part in topic.partitions:
                    if name is None:
                        continue
                    tp = TopicPartition(name, int(part.partition))
                    code = int(part.error_code)
                    if code == ErrorCode.NONE:
                        remaining.pop(tp, None)
                        continue
                    exc = fenced_or_typed(
                        code, part.error_message, topic=tp.topic, partition=tp.partition, **ids
                    )
                    if isinstance(exc, RetriableError) and code not in ABORTABLE_CODES:
                        retriable = exc
                    elif worst is None or (code in FATAL_CODES and worst.code not in FATAL_CODES):
                        worst = exc
            if worst is not None:
                raise worst
        if remaining:
            if retriable is None:
                missing = ", ".join(str(tp) for tp in sorted(remaining))
                retriable = NetworkError(f"no TxnShareAcknowledge result for {missing}", **ids)
            with contextlib.suppress(KafkaProtocolError, OSError):
                client.refresh_metadata(sorted({tp.topic for tp in remaining}))
            raise retriable

    client.call(attempt, timeout_ms=remaining_ms(deadline))
