"""Idempotent producer state of one partition (Kafka's ProducerStateManager).

For each producer id the partition keeps the epoch, the last five appended
batches (for duplicate detection, answered with the original offset) and the
first offset of the producer's open transaction on this partition.  The state
is rebuilt on start from the newest snapshot (``encode_snapshot``, Kafka's
ProducerSnapshot v1 layout, kept by ``coordinator.log.producer_snapshots``) and
the batches after it, or from the whole log when there is none.
"""

from __future__ import annotations

import logging
import struct
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from crc32c import crc32c

from coordinator.log.storage import PartitionLog
from txn.batch import NO_SEQUENCE, BatchHeader
from txn.errors import ErrorCode
from txn.limits import next_sequence

log = logging.getLogger("sharetxn.partition")

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


class SnapshotFormatError(ValueError):
    """Bytes that are not a producer-state snapshot (refused: the log is replayed instead)."""


_SNAPSHOT_VERSION = 1
_SNAPSHOT_HEAD = struct.Struct(">hIi")  # version, CRC32C of the rest, entry count
_SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")


def encode_snapshot(entries: Iterable[ProducerEntry]) -> bytes:
    """Kafka's ProducerSnapshot v1: per producer its epoch, last batch (last sequence, last
    offset, offset delta), last timestamp, coordinator epoch and open transaction's first
    offset (-1: none).  Only the last batch is kept, as in Kafka's snapshots."""
    body = bytearray()
    count = 0
    for e in entries:
        last = e.batches[-1] if e.batches else None
        body += _SNAPSHOT_ENTRY.pack(
            e.producer_id,
            e.epoch,
            last.last_seq if last else NO_SEQUENCE,
            last.last_offset if last else -1,
            last.last_offset - last.first_offset if last else 0,
            e.last_timestamp_ms,
            e.coordinator_epoch,
            -1 if e.current_txn_first_offset is None else e.current_txn_first_offset,
        )
        count += 1
    rest = struct.pack(">i", count) + bytes(body)
    return struct.pack(">hI", _SNAPSHOT_VERSION, crc32c(rest)) + rest


def decode_snapshot(data: bytes) -> list[ProducerEntry]:
    """The entries of a snapshot; SnapshotFormatError unless it is exactly one, intact."""
    if len(data) < _SNAPSHOT_HEAD.size:
        raise SnapshotFormatError(f"{len(data)} bytes: shorter than a snapshot header")
    version, crc, count = _SNAPSHOT_HEAD.unpack_from(data)
    if version != _SNAPSHOT_VERSION:
        raise SnapshotFormatError(f"unknown snapshot version {version}")
    if count < 0 or len(data) != _SNAPSHOT_HEAD.size + count * _SNAPSHOT_ENTRY.size:
        raise SnapshotFormatError(f"{count} entries do not fill {len(data)} bytes")
    if crc32c(memoryview(data)[6:]) != crc:
        raise SnapshotFormatError("snapshot CRC mismatch")
    out: list[ProducerEntry] = []
    for pos in range(_SNAPSHOT_HEAD.size, len(data), _SNAPSHOT_ENTRY.size):
        pid, epoch, last_seq, last_offset, delta, ts, coord, txn = _SNAPSHOT_ENTRY.unpack_from(
            data, pos
        )
        if pid < 0 or delta < 0:
            raise SnapshotFormatError(f"bad snapshot entry for producer {pid}")
        entry = ProducerEntry(pid, epoch, coordinator_epoch=coord, last_timestamp_ms=ts)
        entry.current_txn_first_offset = txn if txn >= 0 else None
        if last_offset >= 0:
            first_seq = last_seq if last_seq == NO_SEQUENCE else next_sequence(last_seq, -delta)
            entry.batches.append(
                BatchMetadata(first_seq, last_seq, last_offset - delta, last_offset, ts)
            )
        out.append(entry)
    return out


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
            # A new epoch keeps the coordinator epoch of the last marker, as in Kafka.
            coordinator_epoch = entry.coordinator_epoch if entry else -1
            entry = ProducerEntry(
                header.producer_id, header.producer_epoch, coordinator_epoch=coordinator_epoch
            )
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

    def check_marker(
        self, producer_id: int, producer_epoch: int, coordinator_epoch: int
    ) -> ErrorCode:
        """Whether a marker may end ``producer_id``'s transaction here, as Kafka's
        ``appendEndTxnMarker`` checks one: INVALID_PRODUCER_EPOCH below the producer's epoch,
        then TRANSACTION_COORDINATOR_FENCED below the coordinator epoch of the last marker
        the partition took (a zombie coordinator, or a client naming an older one)."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return ErrorCode.NONE
        if producer_epoch < entry.epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if coordinator_epoch < entry.coordinator_epoch:
            log.info(
                "marker of producer %d refused: coordinator epoch %d (zombie), %d (current)",
                producer_id,
                coordinator_epoch,
                entry.coordinator_epoch,
            )
            return ErrorCode.TRANSACTION_COORDINATOR_FENCED
        return ErrorCode.NONE

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

    def load(self, entries: Iterable[ProducerEntry], now_ms: int, expiration_ms: int) -> None:
        """Replace the state with a snapshot's entries, leaving out the producers already
        expired (no open transaction, idle ``expiration_ms`` or more), as Kafka loads one."""
        self.producers = {
            e.producer_id: e
            for e in entries
            if e.current_txn_first_offset is not None
            or now_ms - e.last_timestamp_ms < expiration_ms
        }

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


def load_snapshot(log_: PartitionLog, name: str) -> tuple[int, list[ProducerEntry]] | None:
    """The newest readable snapshot of ``log_`` above its start offset and at most its end,
    as Kafka's ``truncateAndReload`` picks one: those out of that range are deleted, and so
    is one that is unreadable, too large or malformed (logged; the next older is tried, and
    with none left the log is replayed from its start)."""
    store = log_.snapshots
    if store is None:
        return None
    try:
        offsets = store.offsets()
        for offset in offsets:
            if offset <= log_.log_start_offset or offset > log_.log_end_offset:
                store.delete(offset)
        for offset in reversed(offsets):
            if log_.log_start_offset < offset <= log_.log_end_offset:
                try:
                    return offset, decode_snapshot(store.read(offset))
                except (OSError, SnapshotFormatError) as exc:
                    log.warning("%s: producer snapshot at %d refused: %s", name, offset, exc)
                    store.delete(offset)
    except OSError as exc:
        log.error("%s: producer snapshots unreadable, replaying the log: %s", name, exc)
    return None


def write_snapshot(
    log_: PartitionLog, offset: int, entries: Iterable[ProducerEntry], name: str
) -> bool:
    """Keep the producer state as of ``offset``; False if there is no store or it failed
    (logged: the state is then rebuilt from an older snapshot and the log)."""
    store = log_.snapshots
    if store is None:
        return False
    try:
        store.write(offset, encode_snapshot(entries))
    except OSError as exc:
        log.error("%s: writing the producer snapshot at %d failed: %s", name, offset, exc)
        return False
    return True


def delete_snapshots_below(log_: PartitionLog, offset: int) -> None:
    """Retention or DeleteRecords moved the log start: the snapshots below it go (Kafka
    deletes a segment's snapshot with it); the state in memory stays."""
    store = log_.snapshots
    if store is None:
        return
    try:
        for at in store.offsets():
            if at < offset:
                store.delete(at)
    except OSError as exc:
        log.error("deleting producer snapshots below %d failed: %s", offset, exc)
