"""Reading the cluster: transactions, producers on partitions and pending share acks.

``Scanner`` wraps ``producer.admin.Admin`` and turns its answers into ``TxnSnapshot``
values stamped with the time they were observed.  ``two_scans`` implements the rule
that a transaction is only *in doubt* if it was seen unchanged in two scans separated by
a back-off (Narayana's two-pass recovery), so a live transaction is not mistaken for a
stuck one.
"""

from __future__ import annotations

import functools
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from producer.admin import Admin, ProducerState, SharePendingAcks, TransactionListing
from producer.protocol.client import check_error
from producer.twophase.model import NotFoundError, TxnSnapshot
from txn.api_keys import ApiKey
from txn.errors import (
    ErrorCode,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
    raise_for_code,
)
from txn.ids import TopicPartition

MAX_PARTITIONS_PER_REQUEST = 500
"""Partitions per DescribeProducers request in a batched scan (kafka-transactions.sh's 500)."""
DEFAULT_MAX_REQUESTS_PER_SECOND = 20.0


class RateLimiter:
    """At most ``per_second`` calls of ``acquire`` per second (evenly spaced; 0 = no limit)."""

    def __init__(
        self,
        per_second: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.interval_s = 1.0 / per_second if per_second > 0 else 0.0
        self.clock = clock
        self.sleep = sleep
        self._next = float("-inf")
        self.acquired = 0

    def acquire(self) -> None:
        now = self.clock()
        if now < self._next:
            self.sleep(self._next - now)
            now = self._next
        self._next = now + self.interval_s
        self.acquired += 1


def wall_clock_ms() -> int:
    """Wall-clock milliseconds: the coordinator stamps transaction start times with it."""
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class ScanPair:
    """A transactional id seen by two scans (``second`` is the newer view)."""

    first: TxnSnapshot
    second: TxnSnapshot

    @property
    def unchanged(self) -> bool:
        return self.first.fingerprint == self.second.fingerprint

    @property
    def in_doubt(self) -> bool:
        """Open in both scans and unchanged: not a live transaction making progress."""
        return self.unchanged and self.second.is_open


class Scanner:
    """Read-only views of the cluster for the recovery tool."""

    def __init__(
        self,
        admin: Admin,
        *,
        now_ms: Callable[[], int] = wall_clock_ms,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.admin = admin
        self.now_ms = now_ms
        self.sleep = sleep
        self.pending_acks_supported = True

    # -- transactions -------------------------------------------------------------------------

    def listings(
        self,
        *,
        states: Sequence[str] = (),
        prefix: str | None = None,
        older_than_ms: int = -1,
    ) -> list[TransactionListing]:
        """ListTransactions, filtered by state, age (server side) and id prefix."""
        found = self.admin.list_transactions(list(states), None, older_than_ms)
        return sorted(
            (t for t in found if prefix is None or t.transactional_id.startswith(prefix)),
            key=lambda t: t.transactional_id,
        )

    def snapshot(self, transactional_id: str) -> TxnSnapshot:
        """DescribeTransactions for one id; an unknown id gives ``TxnSnapshot.unknown``."""
        (desc,) = self.admin.describe_transactions([transactional_id])
        now = self.now_ms()
        if desc.error is ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
            return TxnSnapshot.unknown(transactional_id, now)
        raise_for_code(desc.error, transactional_id=transactional_id)
        return TxnSnapshot(
            transactional_id=transactional_id,
            state=desc.state,
            producer_id=desc.producer_id,
            producer_epoch=desc.producer_epoch,
            timeout_ms=desc.transaction_timeout_ms,
            start_time_ms=desc.transaction_start_time_ms,
            partitions=tuple(desc.partitions),
            observed_at_ms=now,
        )

    def snapshots(self, transactional_ids: Iterable[str]) -> dict[str, TxnSnapshot]:
        return {tid: self.snapshot(tid) for tid in sorted(set(transactional_ids))}

    def two_scans(self, first: dict[str, TxnSnapshot], interval_s: float) -> dict[str, ScanPair]:
        """Describe every id of ``first`` again, after ``interval_s`` seconds if any was open.

        Only an open transaction can be in doubt, so without one there is no back-off.
        """
        if interval_s > 0 and any(s.is_open for s in first.values()):
            self.sleep(interval_s)
        return {tid: ScanPair(snap, self.snapshot(tid)) for tid, snap in first.items()}

    # -- participants -------------------------------------------------------------------------

    def producers(self, tp: TopicPartition) -> list[ProducerState]:
        """DescribeProducers on the partition's leader (the leader's view)."""
        return self.admin.describe_producers(tp)

    def producers_batched(
        self,
        partitions: Sequence[TopicPartition],
        limiter: RateLimiter,
        *,
        batch_size: int = MAX_PARTITIONS_PER_REQUEST,
    ) -> dict[TopicPartition, list[ProducerState]]:
        """DescribeProducers for many partitions: one request per leader and ``batch_size``
        partitions, each request first taking a token of ``limiter`` (the scan's rate limit).
        """
        client = self.admin.client
        by_leader: dict[int, list[TopicPartition]] = defaultdict(list)
        for tp in partitions:
            by_leader[client.call(functools.partial(client.leader_for, tp))].append(tp)
        out: dict[TopicPartition, list[ProducerState]] = {}
        for leader, tps in sorted(by_leader.items()):
            for i in range(0, len(tps), batch_size):
                chunk = tps[i : i + batch_size]
                limiter.acquire()
                out.update(self._describe_producers(leader, chunk))
        return out

    def _describe_producers(
        self, leader: int, chunk: Sequence[TopicPartition]
    ) -> dict[TopicPartition, list[ProducerState]]:
        client = self.admin.client
        topics: dict[str, list[int]] = defaultdict(list)
        for tp in chunk:
            topics[tp.topic].append(tp.partition)
        body = {
            "topics": [{"name": t, "partition_indexes": ps} for t, ps in sorted(topics.items())]
        }
        resp: Any = client.call(lambda: client.send(leader, ApiKey.DESCRIBE_PRODUCERS, body))
        out: dict[TopicPartition, list[ProducerState]] = {}
        for topic in resp.topics:
            for part in topic.partitions:
                tp = TopicPartition(topic.name, int(part.partition_index))
                check_error(
                    part.error_code, part.error_message, topic=tp.topic, partition=tp.partition
                )
                out[tp] = [ProducerState.from_wire(p) for p in part.active_producers]
        return out

    def pending_acks(
        self, producer_ids: Sequence[int] | None = None
    ) -> dict[int, SharePendingAcks]:
        """The share coordinators' staged (TX_PENDING) acknowledgements per producer id.

        Empty against a cluster without the sharetxn API (a Kafka cluster): the rest of
        the tool works there, without the KIP-1289 view (``pending_acks_supported``).
        """
        if not self.pending_acks_supported:
            return {}
        try:
            found = self.admin.describe_share_pending_acks(list(producer_ids or []))
        except UnsupportedVersionError:
            self.pending_acks_supported = False
            return {}
        return {p.producer_id: p for p in found}

    def topics(self) -> list[str]:
        """The user topics (``list_topics`` leaves out the internal ones)."""
        return list(self.admin.list_topics())

    def partitions(self, topic: str) -> list[int]:
        """The topic's partitions; an unknown topic is not found (NotFoundError)."""
        try:
            return self.admin.client.topic(topic).partitions
        except UnknownTopicOrPartitionError:
            msg = f"unknown topic {topic!r}"
            raise NotFoundError(msg) from None
