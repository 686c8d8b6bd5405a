"""Idempotent producer state of one partition (Kafka's ProducerStateManager).

For each producer id the partition keeps the epoch, the last five appended
batches (for duplicate detection, answered with the original offset) and the
first offset of the producer's open transaction on this partition.  The state
is rebuilt on start by replaying batch headers from the log, so it survives a
restart without a snapshot file.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from txn.batch import NO_SEQUENCE, BatchHeader
from txn.errors import ErrorCode
from txn.limits import next_sequence

DUPLICATE_WINDOW = 5


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp_ms: int


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=DUPLICATE_WINDOW))
    current_txn_first_offset: int | None = None
    coordinator_epoch: int = -1
    last_timestamp_ms: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE


@dataclass(frozen=True, slots=True)
class SequenceCheck:
    """Outcome of checking a batch: ok, duplicate (with the original batch) or an error."""

    error: ErrorCode
    duplicate_of: BatchMetadata | None = None


def _next_seq(seq: int) -> int:
    return next_sequence(seq)


class ProducerStateManager:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

    def get(self, producer_id: int) -> ProducerEntry | None:
        return self.producers.get(producer_id)

    def check(self, header: BatchHeader) -> SequenceCheck:
        """Validate a producer batch before append (epoch, duplicates, sequence order)."""
        entry = self.producers.get(header.producer_id)
        if entry is None:
            # Unknown producer: any sequence starts it, as in Kafka (ProducerAppendInfo: "all
            # producer records may have been deleted due to retention or DeleteRecords").
            return SequenceCheck(ErrorCode.NONE)
        if header.producer_epoch < entry.epoch:
            return SequenceCheck(ErrorCode.INVALID_PRODUCER_EPOCH)
        if header.base_sequence == NO_SEQUENCE:
            return SequenceCheck(ErrorCode.NONE)
        if header.producer_epoch > entry.epoch or not entry.batches:
            # A new epoch (or an entry holding only markers) must start from sequence 0.
            if header.base_sequence != 0:
                return SequenceCheck(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
            return SequenceCheck(ErrorCode.NONE)
        for meta in entry.batches:
            if meta.first_seq == header.base_sequence and meta.last_seq == header.last_sequence:
                return SequenceCheck(ErrorCode.NONE, duplicate_of=meta)
        if header.base_sequence != _next_seq(entry.last_seq):
            return SequenceCheck(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
        return SequenceCheck(ErrorCode.NONE)

    def on_data_batch(self, header: BatchHeader) -> ProducerEntry:
        """Record an appended data batch (live or during replay)."""
        entry = self.producers.get(header.producer_id)
        if entry is None or header.producer_epoch > entry.epoch:
            old_txn = entry.current_txn_first_offset if entry else None
            entry = ProducerEntry(header.producer_id, header.producer_epoch)
            entry.current_txn_first_offset = old_txn
            self.producers[header.producer_id] = entry
        if header.base_sequence != NO_SEQUENCE:
            entry.batches.append(
                BatchMetadata(
                    header.base_sequence,
                    header.last_sequence,
                    header.base_offset,
                    header.last_offset,
                    header.max_timestamp,
                )
            )
        if header.is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = header.base_offset
        entry.last_timestamp_ms = header.max_timestamp
        return entry

    def on_marker(self, header: BatchHeader, coordinator_epoch: int) -> int | None:
        """Record a control marker; returns the first offset of the transaction it ends."""
        entry = self.producers.get(header.producer_id)
        if entry is None:
            entry = ProducerEntry(header.producer_id, header.producer_epoch)
            self.producers[header.producer_id] = entry
        elif header.producer_epoch > entry.epoch:
            entry.epoch = header.producer_epoch
            entry.batches.clear()
        first = entry.current_txn_first_offset
        entry.current_txn_first_offset = None
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp_ms = header.max_timestamp
        return first

    def open_transactions(self) -> dict[int, int]:
        """producer id -> first offset of its open transaction."""
        return {
            pid: e.current_txn_first_offset
            for pid, e in self.producers.items()
            if e.current_txn_first_offset is not None
        }

    def remove_expired(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget idle producers with no open transaction (producer.id.expiration.ms)."""
        expired = [
            pid
            for pid, e in self.producers.items()
            if e.current_txn_first_offset is None and e.last_timestamp_ms + expiration_ms < now_ms
        ]
        for pid in expired:
            del self.producers[pid]
        return expired
