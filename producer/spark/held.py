"""``deliverySemantics=at-least-once``: the driver acquires, Spark's commit acknowledges.

Without KIP-1289 an acknowledgement is final the moment it is sent, so it may only be sent
after Spark wrote ``commits/N``.  Kafka accepts an acknowledgement only from the member
that acquired the records, while their acquisition lock (``share.record.lock.duration.ms``,
30 s by default) runs.  The executors' read tasks end long before Spark's commit, so here
the driver's source process owns one long-lived ``ShareConsumer`` (explicit mode; its
heartbeat thread keeps the member alive between Spark's calls):

* a batch is one ``poll``: the records travel to the read tasks inside the
  ``HeldTask`` input partitions;
* once ``commits/N`` exists the records of batch N are ACCEPTed (``commit_sync``);
  records of a batch that was not committed are RELEASEd before the next poll;
* a crash (or a lock that expired first) leaves the records to their lock: Kafka delivers
  them again, to this query or another member.  At least once, never lost.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from producer.consumer.share_consumer import ShareConsumer
from producer.protocol.types import Record
from producer.spark.options import SourceOptions
from txn.share_state import AcknowledgeType

log = logging.getLogger(__name__)

#: the most records one batch acquires (one poll); Kafka bounds a partition's in-flight
#: records by group.share.partition.max.record.locks (2000 by default) anyway
MAX_BATCH_RECORDS = 10_000


@dataclass(frozen=True)
class HeldTask(InputPartition):
    """A read task of an at-least-once batch: the records the driver acquired for it."""

    batch: int
    index: int
    records: tuple[Record, ...]


def split(records: Sequence[Record], batch: int, tasks: int) -> list[HeldTask]:
    """The batch's records as up to ``tasks`` read tasks of consecutive records."""
    if not records:
        return []
    count = max(1, min(tasks, len(records)))
    size, extra = divmod(len(records), count)
    out: list[HeldTask] = []
    start = 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        out.append(HeldTask(batch, index, tuple(records[start:end])))
        start = end
    return out


class DriverShareConsumer:
    """The at-least-once source's share consumer, living in Spark's driver-side reader."""

    def __init__(self, opts: SourceOptions, tasks: int, topics: Sequence[str]) -> None:
        self.opts = opts
        self._held: dict[int, list[Record]] = {}
        self._consumer = ShareConsumer(
            {
                "bootstrap.servers": opts.bootstrap_servers,
                "group.id": opts.group_id,
                "share.acknowledgement.mode": "explicit",
                "client.id": "sharetxn-spark-source",
                "max.poll.records": min(
                    (opts.max_records or MAX_BATCH_RECORDS) * tasks, MAX_BATCH_RECORDS
                ),
                **dict(opts.client_config),
            }
        )
        self._consumer.subscribe(topics)

    def held(self, batch: int) -> list[Record] | None:
        return self._held.get(batch)

    def acquire(self, batch: int, is_committed: Callable[[int], bool]) -> list[Record]:
        """One poll for ``batch`` (after settling every other batch still held)."""
        found = self._held.get(batch)
        if found is not None:
            return found
        # Explicit mode: every record of the last poll is acknowledged before the next one.
        self.settle(is_committed, release=True)
        records = self._consumer.poll(self.opts.poll_timeout_ms / 1000)
        if records:
            self._held[batch] = records
            lock_ms = self._consumer.acquisition_lock_timeout_ms
            log.info(
                "kafka-share (at-least-once): batch %d acquired %d records (lock %s ms)",
                batch,
                len(records),
                lock_ms,
            )
        return records

    def settle(self, is_committed: Callable[[int], bool], *, release: bool = False) -> int:
        """ACCEPT the held batches Spark committed (``release``: RELEASE the others).

        Returns how many records were accepted.  Without ``release`` a batch not committed
        yet (the one just planned) stays held.
        """
        settled: dict[int, AcknowledgeType] = {}
        for batch in sorted(self._held):
            if is_committed(batch):
                settled[batch] = AcknowledgeType.ACCEPT
            elif release:
                settled[batch] = AcknowledgeType.RELEASE
        if not settled:
            return 0
        accepted = 0
        for batch, kind in settled.items():
            for record in self._held[batch]:
                self._consumer.acknowledge(record, kind)
            if kind is AcknowledgeType.ACCEPT:
                accepted += len(self._held[batch])
            else:
                log.warning(
                    "kafka-share (at-least-once): batch %d was not committed; its %d "
                    "records are released and will be delivered again",
                    batch,
                    len(self._held[batch]),
                )
        batches = sorted(settled)
        for batch in batches:
            del self._held[batch]
        failed = {tp: e for tp, e in self._consumer.commit_sync().items() if e is not None}
        for tp, error in failed.items():
            # Typically the acquisition lock expired before Spark's commit: Kafka has
            # handed the records out again, so they are delivered twice (at least once).
            log.warning(
                "kafka-share (at-least-once): acknowledging batch(es) %s on %s failed: %s; "
                "these records will be delivered again (is a batch slower than "
                "share.record.lock.duration.ms?)",
                batches,
                tp,
                error,
            )
        return accepted

    def close(self, is_committed: Callable[[int], bool]) -> None:
        """Accept what Spark committed, then leave (Kafka releases the rest at once)."""
        try:
            self.settle(is_committed)
        finally:
            with contextlib.suppress(Exception):
                self._consumer.close()
