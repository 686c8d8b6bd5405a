"""RecordBatch v2 framing, without decoding records.

The broker stores batches exactly as producers sent them.  It only reads the
61-byte header and rewrites the base offset (bytes 0-7), which the CRC does
not cover.  Control batches (transaction markers) are built here.

Header layout (big endian)::

    0  baseOffset int64        12 partitionLeaderEpoch int32   16 magic int8
    17 crc uint32 (CRC32C of bytes 21..end)                   21 attributes int16
    23 lastOffsetDelta int32   27 baseTimestamp int64          35 maxTimestamp int64
    43 producerId int64        51 producerEpoch int16          53 baseSequence int32
    57 recordsCount int32      61 records...
    8  batchLength int32 (bytes after this field)
"""

from __future__ import annotations

import struct
from enum import IntEnum
from typing import NamedTuple

from crc32c import crc32c

from txn.codec import uvarint
from txn.compression import compress
from txn.limits import next_sequence

HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + batchLength
MAGIC_V2 = 2

ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
# KIP-534: the cleaner set the batch's delete horizon, stored as its base timestamp.
ATTR_DELETE_HORIZON = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")


class ControlType(IntEnum):
    """Control record types (the key of a control record)."""

    ABORT = 0
    COMMIT = 1


class BatchFormatError(ValueError):
    """Bytes that are not a well-formed RecordBatch v2."""


class BatchHeader(NamedTuple):
    """The fields of a RecordBatch v2 header (a named tuple: every fetch and append parses
    headers, and building a tuple from the unpacked fields costs a fifth of a frozen
    dataclass's ``__init__``).  ``header._replace(base_offset=...)`` makes a changed copy."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Total bytes of the batch on disk."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return next_sequence(self.base_sequence, self.last_offset_delta)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def delete_horizon_ms(self) -> int | None:
        """When the cleaner may remove this batch's tombstones (or the marker): set by the
        first cleaning that kept them (KIP-534), None before."""
        return self.base_timestamp if self.attributes & ATTR_DELETE_HORIZON else None


_new_tuple = tuple.__new__  # BatchHeader._make without its length check: the format has 13


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Parse the header at ``pos``; raises BatchFormatError if it is not v2 or too short."""
    if len(buf) - pos < HEADER_SIZE:
        raise BatchFormatError("buffer shorter than a RecordBatch header")
    header: BatchHeader = _new_tuple(BatchHeader, _HEADER.unpack_from(buf, pos))
    if header.magic != MAGIC_V2:
        raise BatchFormatError(f"unsupported record batch magic {header.magic}")
    if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise BatchFormatError(f"batch length {header.batch_length} is too small")
    if header.last_offset_delta < 0 or header.records_count < 0:
        raise BatchFormatError("negative record count or offset delta")
    return header


def crc_ok(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> bool:
    """Whether the stored CRC32C matches bytes 21..end of the batch."""
    end = pos + header.size
    if end > len(buf):
        return False
    return crc32c(memoryview(buf)[pos + 21 : end]) == header.crc


def iter_batches(
    buf: bytes | bytearray | memoryview,
) -> list[tuple[int, BatchHeader]]:
    """Split a records buffer into (position, header) pairs; raises on a partial batch."""
    out: list[tuple[int, BatchHeader]] = []
    pos = 0
    n = len(buf)
    while pos < n:
        header = parse_header(buf, pos)
        end = pos + LOG_OVERHEAD + header.batch_length  # header.size, without the call
        if end > n:
            raise BatchFormatError("records end inside a batch")
        out.append((pos, header))
        pos = end
    return out


def set_base_offset(buf: bytearray, pos: int, base_offset: int) -> None:
    """Rewrite the base offset in place (not covered by the CRC)."""
    struct.pack_into(">q", buf, pos, base_offset)


def set_partition_leader_epoch(buf: bytearray, pos: int, epoch: int) -> None:
    struct.pack_into(">i", buf, pos + 12, epoch)


_ONE_BYTE_VARINTS = [bytes((zigzag,)) for zigzag in range(0x80)]


def _varint(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    return _ONE_BYTE_VARINTS[zigzag] if zigzag < 0x80 else uvarint(zigzag)


_NULL_BLOB = _varint(-1)  # a null key, value or header value
_BEFORE_CRC = struct.Struct(">qiibI")
_AFTER_CRC = struct.Struct(">hiqqqhii")


def build_batch(
    records: list[tuple[bytes | None, bytes | None]],
    *,
    base_offset: int = 0,
    timestamp_ms: int,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    transactional: bool = False,
    control: bool = False,
    headers: list[list[tuple[str, bytes | None]]] | None = None,
    compression: int = 0,
    timestamps: list[int] | None = None,
) -> bytes:
    """Encode a RecordBatch v2 of (key, value) records, compressed with codec ``compression``.

    Every record has ``timestamp_ms`` unless ``timestamps`` gives each its own (the batch's
    base timestamp is then the first record's, its max timestamp the largest, as Kafka's
    producer writes them).
    """
    body = bytearray()
    base_timestamp = max_timestamp = timestamp_ms
    if timestamps:
        base_timestamp, max_timestamp = timestamps[0], max(timestamps)
    for index, (key, value) in enumerate(records):
        rec = bytearray(b"\x00")  # record attributes
        rec += _varint(timestamps[index] - base_timestamp) if timestamps else b"\x00"
        rec += _varint(index)  # offset delta
        rec += _NULL_BLOB if key is None else _varint(len(key)) + key
        rec += _NULL_BLOB if value is None else _varint(len(value)) + value
        record_headers = headers[index] if headers else []
        rec += _varint(len(record_headers))
        for hkey, hvalue in record_headers:
            encoded = hkey.encode()
            rec += _varint(len(encoded)) + encoded
            rec += _NULL_BLOB if hvalue is None else _varint(len(hvalue)) + hvalue
        body += _varint(len(rec))
        body += rec
    attributes = (ATTR_TRANSACTIONAL if transactional else 0) | (ATTR_CONTROL if control else 0)
    if compression:
        body = bytearray(compress(compression, bytes(body)))
        attributes |= compression & ATTR_COMPRESSION_MASK
    after_crc = (
        _AFTER_CRC.pack(
            attributes,
            len(records) - 1,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
        + body
    )
    crc = crc32c(after_crc)
    batch_length = 4 + 1 + 4 + len(after_crc)
    return _BEFORE_CRC.pack(base_offset, batch_length, -1, MAGIC_V2, crc) + after_crc


def build_control_batch(
    control_type: ControlType,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp_ms: int,
) -> bytes:
    """A transaction marker: key = (version 0, type), value = (version 0, coordinator epoch)."""
    key = struct.pack(">hh", 0, int(control_type))
    value = struct.pack(">hi", 0, coordinator_epoch)
    return build_batch(
        [(key, value)],
        timestamp_ms=timestamp_ms,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transactional=True,
        control=True,
    )


def control_type_of(
    buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader
) -> ControlType:
    """Read the marker type of a control batch (its single record's key).

    A control batch with no record is what the cleaner keeps of a producer's last marker once
    its transaction is wholly cleaned (KIP-534): it reads as COMMIT, nothing to skip (Kafka's
    consumer and producer state ignore it too)."""
    if header.records_count == 0:
        return ControlType.COMMIT
    # The first record starts at pos+61: length varint, attributes, ts delta, offset delta,
    # key length varint, then the 4-byte key.  All varints here are one byte.
    view = memoryview(buf)[pos + HEADER_SIZE : pos + header.size]
    idx = 0
    for _ in range(4):  # length, attributes(int8, not varint but one byte), ts delta, offset delta
        while view[idx] & 0x80:
            idx += 1
        idx += 1
    while view[idx] & 0x80:  # key length
        idx += 1
    idx += 1
    _version, ctype = struct.unpack_from(">hh", view, idx)
    return ControlType(ctype)


def _skip_varint(view: memoryview, idx: int) -> int:
    while view[idx] & 0x80:
        idx += 1
    return idx + 1


def _zigzag_at(view: memoryview, idx: int) -> tuple[int, int]:
    raw = shift = 0
    while True:
        byte = view[idx]
        idx += 1
        raw |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), idx


def control_coordinator_epoch(
    buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader
) -> int:
    """The coordinator epoch a transaction marker carries (its record's value: version int16,
    coordinator epoch int32); -1 for a batch the cleaner emptied or a value too short."""
    if header.records_count == 0:
        return -1
    view = memoryview(buf)[pos + HEADER_SIZE : pos + header.size]
    try:
        idx = 0
        for _ in range(4):  # length, attributes (one byte), timestamp delta, offset delta
            idx = _skip_varint(view, idx)
        key_len, idx = _zigzag_at(view, idx)
        idx += max(key_len, 0)
        value_len, idx = _zigzag_at(view, idx)
        if value_len < 6 or idx + 6 > len(view):
            return -1
        return int(struct.unpack_from(">i", view, idx + 2)[0])
    except IndexError:
        return -1
