"""The ``__transaction_state`` record schema (Kafka's TransactionLogKey / TransactionLogValue).

Key (version 0, not flexible)::

    version int16 = 0 | TransactionalId string (int16 length + UTF-8)

Value (version 1, flexible; version 0 is decoded too)::

    version int16 = 1
    ProducerId int64 | ProducerEpoch int16 | TransactionTimeoutMs int32
    TransactionStatus int8 (TransactionState id)
    TransactionPartitions compact nullable array of
        {Topic compact string, PartitionIds compact array of int32, tagged fields}
        (null when the state is Empty)
    TransactionLastUpdateTimestampMs int64 | TransactionStartTimestampMs int64
    tagged fields:
        0 PreviousProducerId int64 (default -1)
        1 NextProducerId int64 (default -1)
        2 ClientTransactionVersion int16 (default 0)
        3 NextProducerEpoch int16 (default -1, KIP-939)
        100 TwoPhaseCommit bool (default false; ours -- Kafka infers 2PC from timeout Int.MAX)

A null value is a tombstone: the transactional id expired.  Tagged fields are written only when
they differ from their defaults, as Kafka does.  ``read_records`` decodes the (key, value) pairs
of one uncompressed RecordBatch v2, which is how coordinator records are stored.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from txn.batch import HEADER_SIZE, BatchFormatError, parse_header
from txn.codec import Reader, compact_string, uvarint
from txn.ids import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TopicPartition
from txn.state import TransactionState

KEY_VERSION = 0
VALUE_VERSION = 1

TAG_PREVIOUS_PRODUCER_ID = 0
TAG_NEXT_PRODUCER_ID = 1
TAG_CLIENT_TRANSACTION_VERSION = 2
TAG_NEXT_PRODUCER_EPOCH = 3
TAG_TWO_PHASE_COMMIT = 100


class TxnLogFormatError(ValueError):
    """Bytes that are not a valid ``__transaction_state`` record."""


class UnknownRecordVersionError(TxnLogFormatError):
    """A key or value version this broker does not know (skipped on load, as Kafka does)."""


@dataclass(frozen=True, slots=True)
class TransactionLogValue:
    """The value of a ``__transaction_state`` record."""

    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    last_update_timestamp_ms: int
    start_timestamp_ms: int
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    next_producer_epoch: int = NO_PRODUCER_EPOCH
    client_transaction_version: int = 0
    two_phase_commit: bool = False


# --- primitives ------------------------------------------------------------------------------


def _reader(buf: bytes | bytearray | memoryview) -> Reader:
    return Reader(buf, TxnLogFormatError)


# --- key -------------------------------------------------------------------------------------


def encode_key(transactional_id: str) -> bytes:
    data = transactional_id.encode("utf-8")
    return struct.pack(">hh", KEY_VERSION, len(data)) + data


def decode_key(buf: bytes | bytearray | memoryview) -> str:
    reader = _reader(buf)
    version = reader.take(">h")
    if version != KEY_VERSION:
        raise UnknownRecordVersionError(f"unknown transaction log key version {version}")
    transactional_id = reader.text(reader.take(">h"))
    if not reader.at_end():
        raise TxnLogFormatError("trailing bytes after the transaction log key")
    return transactional_id


# --- value -----------------------------------------------------------------------------------


def _partitions_by_topic(partitions: frozenset[TopicPartition]) -> list[tuple[str, list[int]]]:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return [(topic, sorted(ids)) for topic, ids in sorted(by_topic.items())]


#: The value's tagged fields: tag -> (field, struct format, default).  A field is written only
#: when it differs from its default (the dataclass default too), as Kafka does.
_TAGGED_FIELDS: dict[int, tuple[str, str, int | bool]] = {
    TAG_PREVIOUS_PRODUCER_ID: ("previous_producer_id", ">q", NO_PRODUCER_ID),
    TAG_NEXT_PRODUCER_ID: ("next_producer_id", ">q", NO_PRODUCER_ID),
    TAG_CLIENT_TRANSACTION_VERSION: ("client_transaction_version", ">h", 0),
    TAG_NEXT_PRODUCER_EPOCH: ("next_producer_epoch", ">h", NO_PRODUCER_EPOCH),
    TAG_TWO_PHASE_COMMIT: ("two_phase_commit", ">?", False),
}


def _tagged_fields(value: TransactionLogValue) -> list[tuple[int, bytes]]:
    return [
        (tag, struct.pack(fmt, getattr(value, name)))
        for tag, (name, fmt, default) in _TAGGED_FIELDS.items()
        if getattr(value, name) != default
    ]


def encode_value(value: TransactionLogValue | None) -> bytes | None:
    """Version-1 bytes of ``value``; None (a tombstone) stays None."""
    if value is None:
        return None
    if value.state is TransactionState.EMPTY and value.topic_partitions:
        raise TxnLogFormatError("an Empty transaction cannot have partitions")
    out = bytearray(struct.pack(">h", VALUE_VERSION))
    out += struct.pack(
        ">qhib",
        value.producer_id,
        value.producer_epoch,
        value.transaction_timeout_ms,
        int(value.state),
    )
    if value.state is TransactionState.EMPTY:
        out += uvarint(0)  # null array
    else:
        topics = _partitions_by_topic(value.topic_partitions)
        out += uvarint(len(topics) + 1)
        for topic, ids in topics:
            out += compact_string(topic)
            out += uvarint(len(ids) + 1)
            for partition in ids:
                out += struct.pack(">i", partition)
            out += uvarint(0)  # no tagged fields in PartitionsSchema
    out += struct.pack(">qq", value.last_update_timestamp_ms, value.start_timestamp_ms)
    tags = _tagged_fields(value)
    out += uvarint(len(tags))
    for tag, data in tags:
        out += uvarint(tag) + uvarint(len(data)) + data
    return bytes(out)


def _decode_v0_partitions(reader: Reader) -> frozenset[TopicPartition]:
    count = reader.take(">i")
    partitions: set[TopicPartition] = set()
    for _ in range(max(count, 0)):
        topic = reader.text(reader.take(">h"))
        for _ in range(max(reader.take(">i"), 0)):
            partitions.add(TopicPartition(topic, reader.take(">i")))
    return frozenset(partitions)


def _decode_v1_partitions(reader: Reader) -> frozenset[TopicPartition]:
    count = reader.uvarint() - 1
    partitions: set[TopicPartition] = set()
    for _ in range(max(count, 0)):
        topic = reader.text(reader.uvarint() - 1)
        for _ in range(max(reader.uvarint() - 1, 0)):
            partitions.add(TopicPartition(topic, reader.take(">i")))
        reader.skip_tagged_fields()
    return frozenset(partitions)


def decode_value(buf: bytes | bytearray | memoryview | None) -> TransactionLogValue | None:
    """The value in ``buf``; None for a tombstone.  Raises TxnLogFormatError on bad bytes."""
    if buf is None:
        return None
    reader = _reader(buf)
    version = reader.take(">h")
    if version not in (0, 1):
        raise UnknownRecordVersionError(f"unknown transaction log value version {version}")
    producer_id, producer_epoch, timeout_ms, status = reader.unpack(">qhib")
    try:
        state = TransactionState(status)
    except ValueError as exc:
        raise TxnLogFormatError(f"unknown transaction status {status}") from exc
    partitions = _decode_v1_partitions(reader) if version else _decode_v0_partitions(reader)
    last_update, start = reader.unpack(">qq")
    tagged: dict[str, Any] = {}
    if version >= 1:
        for _ in range(reader.uvarint()):
            tag = reader.uvarint()
            data = _reader(reader.raw(reader.uvarint()))
            # Unknown tags are skipped: that is what tagged fields are for.
            if tag in _TAGGED_FIELDS:
                name, fmt, default = _TAGGED_FIELDS[tag]
                tagged[name] = type(default)(data.take(fmt))
    if not reader.at_end():
        raise TxnLogFormatError("trailing bytes after the transaction log value")
    if state is TransactionState.EMPTY:
        partitions = frozenset()  # Kafka ignores partitions of an Empty record
    return TransactionLogValue(
        producer_id, producer_epoch, timeout_ms, state, partitions, last_update, start, **tagged
    )


# --- records of a batch ----------------------------------------------------------------------


def read_records(
    batch: bytes | bytearray | memoryview,
) -> list[tuple[bytes | None, bytes | None]]:
    """The (key, value) pairs of one uncompressed RecordBatch v2 (headers are skipped)."""
    header = parse_header(batch)
    if header.attributes & 0x07:
        raise BatchFormatError("compressed coordinator batches are not supported")
    reader = _reader(memoryview(batch)[HEADER_SIZE : header.size])
    records: list[tuple[bytes | None, bytes | None]] = []
    for _ in range(header.records_count):
        length = reader.varint()
        body = _reader(reader.raw(length))
        body.take(">b")  # attributes
        body.varint()  # timestamp delta
        body.varint()  # offset delta
        key_len = body.varint()
        key = None if key_len < 0 else body.raw(key_len)
        value_len = body.varint()
        value = None if value_len < 0 else body.raw(value_len)
        for _ in range(body.varint()):  # headers
            body.raw(body.varint())
            header_value_len = body.varint()
            if header_value_len >= 0:
                body.raw(header_value_len)
        records.append((key, value))
    return records
