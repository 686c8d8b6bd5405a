"""Reading the simulated broker's logs as a consumer and an administrator would.

The simulator's oracle (used with faults off, or between events): a read_committed consumer
(Kafka's aborted-transaction algorithm), a read_uncommitted dump, and a batch summary.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from coordinator.broker import BrokerCore
from producer.protocol.records import DecodedRecord, decode_records
from txn.batch import ControlType, control_type_of, iter_batches
from txn.errors import ErrorCode
from txn.ids import TopicPartition

T = TypeVar("T")

# -- reading like a consumer -----------------------------------------------------------------------


class CommittedReader:
    """A read_committed consumer of every output partition, polled incrementally.

    It keeps a position and the set of producers inside an aborted transaction per partition,
    as a Kafka consumer does, and returns only records it has not returned before.
    """

    def __init__(self, topic: str, partitions: int) -> None:
        self._tps = [TopicPartition(topic, p) for p in range(partitions)]
        self._position = [0] * partitions
        self._aborted: list[set[int]] = [set() for _ in range(partitions)]

    def poll(self, core: BrokerCore) -> list[tuple[int, list[list[Any]]]]:
        """[(partition, [[offset, value], ...])] for partitions with new committed records."""
        out: list[tuple[int, list[list[Any]]]] = []
        for p, tp in enumerate(self._tps):
            part = core.partition(tp.topic, tp.partition)
            if part is None:
                continue
            # min: the unsynced tail it stood on may have been lost in a crash
            position = min(self._position[p], part.high_watermark)
            if position >= part.last_stable_offset:
                self._position[p] = position
                continue
            records, self._position[p] = read_committed_from(
                core, tp, position, self._aborted[p], _offset_value
            )
            if records:
                out.append((p, [[o, v] for o, v in records]))
        return out


def _offset_value(record: DecodedRecord) -> tuple[int, str]:
    return record.offset, (record.value or b"").decode()


def read_committed_from(
    core: BrokerCore,
    tp: TopicPartition,
    offset: int,
    aborted_producers: set[int],
    entry: Callable[[DecodedRecord], T],
    end: int | None = None,
) -> tuple[list[T], int]:
    """``entry`` of each record from ``offset`` up to the LSO (or ``end``), aborted transactions
    dropped (Kafka's algorithm); ``aborted_producers`` carries the consumer's state between
    calls.  Returns the entries and the next position."""
    out: list[T] = []
    while end is None or offset < end:
        data = core.fetch(tp, offset, 1 << 20, read_committed=True)
        if data.error is not ErrorCode.NONE or not data.records:
            break
        pending = sorted(data.aborted or (), key=lambda a: a.first_offset)
        for pos, header in iter_batches(data.records):
            offset = header.last_offset + 1
            while pending and pending[0].first_offset <= header.base_offset:
                aborted_producers.add(pending.pop(0).producer_id)
            if header.is_control:
                if control_type_of(data.records, pos, header) is ControlType.ABORT:
                    aborted_producers.discard(header.producer_id)
                continue
            if header.is_transactional and header.producer_id in aborted_producers:
                continue
            raw = data.records[pos : pos + header.size]
            out.extend(entry(r) for r in decode_records(raw, check_crc=True))
    return out, offset


def read_all(core: BrokerCore, tp: TopicPartition) -> list[tuple[int, str, int, bool]]:
    """Every data record (offset, value, producer id, transactional), read_uncommitted."""
    out: list[tuple[int, str, int, bool]] = []
    part = core.partition(tp.topic, tp.partition)
    if part is None:
        return out
    offset = part.log_start_offset
    while offset < part.high_watermark:
        data = core.fetch(tp, offset, 1 << 20, read_committed=False)
        if data.error is not ErrorCode.NONE or not data.records:
            break
        for pos, header in iter_batches(data.records):
            offset = header.last_offset + 1
            if header.is_control:
                continue
            raw = data.records[pos : pos + header.size]
            for record in decode_records(raw, check_crc=True):
                out.append(
                    (
                        record.offset,
                        (record.value or b"").decode(),
                        header.producer_id,
                        header.is_transactional,
                    )
                )
    return out


def read_committed(core: BrokerCore, tp: TopicPartition) -> list[tuple[int, str]]:
    """What a read_committed consumer sees: aborted transactions dropped (Kafka's algorithm)."""
    part = core.partition(tp.topic, tp.partition)
    if part is None:
        return []
    return read_committed_from(core, tp, part.log_start_offset, set(), _offset_value)[0]


def batch_summary(core: BrokerCore, tp: TopicPartition) -> list[list[Any]]:
    """[base offset, last offset, producer id, epoch, transactional, control] per batch."""
    part = core.partition(tp.topic, tp.partition)
    if part is None:
        return []
    return [
        [
            h.base_offset,
            h.last_offset,
            h.producer_id,
            h.producer_epoch,
            h.is_transactional,
            h.is_control,
        ]
        for h, _raw in part.log.batches(part.log_start_offset)
    ]
