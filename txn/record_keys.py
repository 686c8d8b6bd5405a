"""Record-level reading and rewriting of RecordBatch v2, for the two places the broker looks
inside a batch: refusing key-less records on a compacted topic, and the log cleaner.

Records are never re-encoded: a rewritten batch is the retained records' bytes as they were,
under the original header with a new record count, length, max timestamp and CRC (and the
original compression).  The base offset, last offset delta, producer id, epoch and base
sequence stay, as in Kafka's ``MemoryRecords.filterTo``.  Anything malformed raises
``BatchFormatError``; records that would decompress to more than the bound the caller
gives (``txn.compression.decompressed_limit``) raise ``InflatedBatchError`` instead, before
that much memory is taken.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from crc32c import crc32c

from txn.batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchFormatError,
    BatchHeader,
)
from txn.codec import Reader, uvarint
from txn.compression import DecompressedTooLargeError, compress, decompress
from txn.errors import SharetxnError

_AFTER_CRC = struct.Struct(">hiqqqhii")
_LENGTH_AND_PREFIX = struct.Struct(">qiib")  # base offset, batch length, leader epoch, magic


class InflatedBatchError(BatchFormatError):
    """A compressed batch whose records exceed the decompression bound (Kafka: too large)."""


@dataclass(frozen=True, slots=True)
class RecordView:
    offset: int
    timestamp_ms: int
    key: bytes | None
    has_value: bool
    raw: bytes  # the whole record: its length varint and body
    value_size: int = 0  # bytes of the value (0 when null, as Kafka's DefaultRecord prints it)


def _section(
    batch: bytes | bytearray | memoryview, header: BatchHeader, max_bytes: int | None
) -> bytes:
    section = bytes(memoryview(batch)[HEADER_SIZE : header.size])
    codec = header.attributes & ATTR_COMPRESSION_MASK
    if codec:
        try:
            section = decompress(codec, section, max_bytes)
        except DecompressedTooLargeError as exc:
            raise InflatedBatchError(str(exc)) from exc
        except SharetxnError as exc:
            raise BatchFormatError(str(exc)) from exc
    return section


def records_of(
    batch: bytes | bytearray | memoryview, header: BatchHeader, max_bytes: int | None = None
) -> Iterator[RecordView]:
    """The records of one batch (``batch`` starts at the batch), decompressed within
    ``max_bytes`` when given."""
    section = _section(batch, header, max_bytes)
    reader = Reader(section, BatchFormatError)
    for index in range(header.records_count):
        begin = reader.pos
        length = reader.varint()
        start = reader.pos
        if length < 0:
            raise BatchFormatError(f"record {index} has negative length {length}")
        reader.take(">b")  # attributes
        timestamp_delta = reader.varint()
        offset_delta = reader.varint()
        key_length = reader.varint()
        key = None if key_length < 0 else reader.raw(key_length)
        value_length = reader.varint()
        reader.pos = start
        reader.raw(length)
        yield RecordView(
            header.base_offset + offset_delta,
            header.base_timestamp + timestamp_delta,
            key,
            value_length >= 0,
            section[begin : reader.pos],
            max(value_length, 0),
        )


def keyless_records(
    batch: bytes | bytearray | memoryview, header: BatchHeader, max_bytes: int | None = None
) -> list[int]:
    """Indexes (within the batch) of the records whose key is null."""
    records = records_of(batch, header, max_bytes)
    return [i for i, record in enumerate(records) if record.key is None]


def rebuild_batch(
    batch: bytes | bytearray | memoryview,
    header: BatchHeader,
    kept: list[RecordView],
    delete_horizon_ms: int | None = None,
) -> bytes:
    """``batch`` holding only the records ``kept`` (taken from it, in order).

    With ``delete_horizon_ms`` (KIP-534: the first cleaning that keeps a tombstone or the
    marker of an emptied transaction sets it), the batch gets the DELETE_HORIZON attribute
    and the horizon as its base timestamp; each record's timestamp delta is re-encoded
    against it, so the records keep their timestamps (Kafka's ``MemoryRecords.filterTo``)."""
    attributes = header.attributes
    base_timestamp = header.base_timestamp
    records = [record.raw for record in kept]
    if delete_horizon_ms is not None:
        attributes |= ATTR_DELETE_HORIZON
        base_timestamp = delete_horizon_ms
        records = [_with_delta(r.raw, r.timestamp_ms - delete_horizon_ms) for r in kept]
    body = b"".join(records)
    codec = header.attributes & ATTR_COMPRESSION_MASK
    if codec:
        body = compress(codec, body)
    max_timestamp = header.max_timestamp
    if not header.attributes & ATTR_TIMESTAMP_TYPE and kept:
        max_timestamp = max(record.timestamp_ms for record in kept)
    return _framed(header, attributes, base_timestamp, max_timestamp, len(kept), body)


def empty_batch(header: BatchHeader) -> bytes:
    """The header of ``header``'s batch with no records: what the cleaner keeps of a
    producer's last batch, so its sequence and epoch survive (Kafka's
    ``DefaultRecordBatch.writeEmptyHeader``: no compression, no delete horizon, both
    timestamps the batch's max timestamp, the same offsets)."""
    keep = ATTR_TIMESTAMP_TYPE | ATTR_TRANSACTIONAL | ATTR_CONTROL
    return _framed(
        header, header.attributes & keep, header.max_timestamp, header.max_timestamp, 0, b""
    )


def _framed(
    header: BatchHeader,
    attributes: int,
    base_timestamp: int,
    max_timestamp: int,
    count: int,
    body: bytes,
) -> bytes:
    after_crc = (
        _AFTER_CRC.pack(
            attributes,
            header.last_offset_delta,
            base_timestamp,
            max_timestamp,
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
            count,
        )
        + body
    )
    batch_length = HEADER_SIZE - LOG_OVERHEAD + len(after_crc) - _AFTER_CRC.size
    prefix = _LENGTH_AND_PREFIX.pack(
        header.base_offset, batch_length, header.partition_leader_epoch, header.magic
    )
    return prefix + struct.pack(">I", crc32c(after_crc)) + after_crc


def _with_delta(raw: bytes, timestamp_delta: int) -> bytes:
    """A record (its length varint and body) with its timestamp delta replaced."""
    reader = Reader(raw, BatchFormatError)
    reader.varint()  # the length
    attributes = reader.raw(1)
    reader.varint()  # the old delta
    body = attributes + _zigzag_varint(timestamp_delta) + raw[reader.pos :]
    return _zigzag_varint(len(body)) + body


def _zigzag_varint(value: int) -> bytes:
    return uvarint((value << 1) ^ (value >> 63))
