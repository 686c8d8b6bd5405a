"""DescribeProducers on the coordinators' own logs (Kafka's internal topics' partitions).

In Kafka a transactional offset commit is a transactional batch in ``__consumer_offsets``,
so the partition's producer state lists its producer (``kafka-transactions.sh find-hanging``
looks there for a transaction left open).  sharetxn's coordinators write their transactional
records the same way (the group coordinator's offset commits, KIP-1289's share-state
writes), in their own logs; this view rebuilds that producer state from a log when asked.

As Kafka's producer state of a coordinator's batch (written with base sequence 0): the last
sequence is the batch's record count minus one, the transaction starts at the first
transactional batch and ends at the producer's marker, which sets the coordinator epoch.  A
producer idle longer than ``producer.id.expiration.ms`` with no open transaction is left
out, as Kafka expires it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from coordinator.log.storage import PartitionLog
from coordinator.txn_results import ActiveProducer
from txn.batch import NO_SEQUENCE, BatchHeader
from txn.txn_log import read_records

_MARKER_VALUE = struct.Struct(">hi")  # version, coordinator epoch


@dataclass(slots=True)
class _Entry:
    epoch: int
    last_sequence: int = NO_SEQUENCE
    last_timestamp: int = -1
    coordinator_epoch: int = -1
    txn_start: int = -1


def _coordinator_epoch(raw: bytes | bytearray | memoryview) -> int:
    records = read_records(raw)
    value = records[0][1] if records else None
    if value is None or len(value) < _MARKER_VALUE.size:
        return -1
    return int(_MARKER_VALUE.unpack_from(value)[1])


def _apply(entries: dict[int, _Entry], header: BatchHeader, raw: bytes) -> None:
    entry = entries.get(header.producer_id)
    if entry is None or header.producer_epoch > entry.epoch:
        txn_start = entry.txn_start if entry is not None else -1
        entry = entries[header.producer_id] = _Entry(header.producer_epoch, txn_start=txn_start)
    entry.last_timestamp = header.max_timestamp
    if header.is_control:
        entry.coordinator_epoch = _coordinator_epoch(raw)
        entry.txn_start = -1
        return
    if header.base_sequence != NO_SEQUENCE:
        entry.last_sequence = header.last_sequence
    else:
        entry.last_sequence = header.records_count - 1
    if header.is_transactional and entry.txn_start < 0:
        entry.txn_start = header.base_offset


def producers_of(log: PartitionLog | None, now_ms: int, expiration_ms: int) -> list[ActiveProducer]:
    """The producers of a coordinator log (None: no log), as DescribeProducers lists them."""
    if log is None:
        return []
    entries: dict[int, _Entry] = {}
    for header, raw in log.batches(log.log_start_offset):
        if header.has_producer_id:
            _apply(entries, header, bytes(raw))
    return [
        ActiveProducer(
            producer_id=pid,
            producer_epoch=e.epoch,
            last_sequence=e.last_sequence,
            last_timestamp=e.last_timestamp,
            coordinator_epoch=e.coordinator_epoch,
            current_txn_start_offset=e.txn_start,
        )
        for pid, e in sorted(entries.items())
        if e.txn_start >= 0 or e.last_timestamp + expiration_ms >= now_ms
    ]
