"""Decoding RecordBatch v2 bytes into records, for the share consumer.

A ShareFetch response carries whole batches exactly as producers wrote them,
so the client has to check them (CRC32C over bytes 21..end), decompress them
(every codec Kafka defines: gzip, snappy, lz4, zstd, through ``txn.compression``)
and walk their records.  A codec id Kafka does not define raises
``UnsupportedCompressionError`` naming it.  Control batches (transaction
markers) yield nothing.

Record layout inside a batch (after decompression)::

    length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
    keyLength varint, key, valueLength varint, value,
    headerCount varint, [headerKeyLength varint, headerKey, headerValueLength varint, value]
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from crc32c import crc32c

from txn import compression
from txn.batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_TIMESTAMP_TYPE,
    HEADER_SIZE,
    BatchFormatError,
    BatchHeader,
    parse_header,
)
from txn.compression import CODEC_NAMES
from txn.errors import SharetxnError

__all__ = [
    "CODEC_NAMES",
    "CorruptRecordError",
    "DecodedBatch",
    "DecodedRecord",
    "RecordDecodeError",
    "UnsupportedCompressionError",
    "decode_batch",
    "decode_records",
    "decompress",
    "split_batches",
]


class RecordDecodeError(SharetxnError):
    """Fetched bytes that could not be turned into records."""


class CorruptRecordError(RecordDecodeError):
    """A batch whose CRC does not match, or whose records are malformed."""


class UnsupportedCompressionError(RecordDecodeError):
    """A batch compressed with a codec this client cannot decompress."""

    def __init__(self, codec: int, detail: str = "") -> None:
        self.codec = codec
        name = CODEC_NAMES.get(codec, f"unknown codec {codec}")
        text = f"record batch compressed with {name} (attribute {codec}) cannot be decompressed"
        super().__init__(f"{text}: {detail}" if detail else text)


@dataclass(frozen=True, slots=True)
class DecodedRecord:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    #: 0 CreateTime, 1 LogAppendTime (the batch's timestamp-type attribute)
    timestamp_type: int = 0


@dataclass(frozen=True, slots=True)
class DecodedBatch:
    """One batch: its offsets, whether it is a control batch, and its data records."""

    base_offset: int
    last_offset: int
    is_control: bool
    records: tuple[DecodedRecord, ...]


# -- varints ---------------------------------------------------------------------------------------


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    if pos < len(buf) and buf[pos] < 0x80:  # one byte: most lengths, deltas and counts
        return buf[pos], pos + 1
    value = 0
    shift = 0
    while True:
        if pos >= len(buf):
            msg = "record ends inside a varint"
            raise CorruptRecordError(msg)
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            msg = "varint longer than 10 bytes"
            raise CorruptRecordError(msg)


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    raw, pos = _uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def _blob(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    size, pos = _varint(buf, pos)
    if size < 0:
        return None, pos
    end = pos + size
    if end > len(buf):
        msg = "record field runs past the end of the batch"
        raise CorruptRecordError(msg)
    return bytes(buf[pos:end]), end


# -- codecs ----------------------------------------------------------------------------------------


def decompress(codec: int, data: bytes) -> bytes:
    """The records section of a batch compressed with ``codec`` (attributes & 7)."""
    if codec == 0:
        return data
    try:
        return compression.decompress(codec, data)
    except compression.UnsupportedCompressionError as exc:
        raise UnsupportedCompressionError(codec, str(exc)) from exc
    except compression.CorruptCompressedDataError as exc:
        raise CorruptRecordError(str(exc)) from exc


# -- batches ---------------------------------------------------------------------------------------


def split_batches(buf: bytes) -> list[tuple[int, BatchHeader]]:
    """(position, header) of every complete batch; a trailing partial batch is ignored.

    Kafka may cut the last batch of a partition short at ``max_bytes``.
    """
    out: list[tuple[int, BatchHeader]] = []
    pos = 0
    while len(buf) - pos >= HEADER_SIZE:
        try:
            header = parse_header(buf, pos)
        except BatchFormatError as exc:
            msg = f"unreadable record batch at byte {pos}: {exc}"
            raise CorruptRecordError(msg) from exc
        if pos + header.size > len(buf):
            break
        out.append((pos, header))
        pos += header.size
    return out


def decode_batch(
    buf: bytes, pos: int, header: BatchHeader, *, check_crc: bool = True
) -> DecodedBatch:
    """Decode the batch at ``pos``: CRC check, decompression, then every record."""
    end = pos + header.size
    if check_crc and crc32c(memoryview(buf)[pos + 21 : end]) != header.crc:
        msg = f"record batch at offset {header.base_offset} is corrupt (CRC mismatch)"
        raise CorruptRecordError(msg)
    if header.is_control:
        return DecodedBatch(header.base_offset, header.last_offset, True, ())
    codec = header.attributes & ATTR_COMPRESSION_MASK
    # bytes (not a buffer): slices of it become the records' keys and values
    body = bytes(decompress(codec, bytes(buf[pos + HEADER_SIZE : end])))
    log_append_time = bool(header.attributes & ATTR_TIMESTAMP_TYPE)
    try:
        records = _decode_records(body, header, log_append_time)
    except IndexError as exc:
        msg = f"record batch at offset {header.base_offset} is truncated"
        raise CorruptRecordError(msg) from exc
    return DecodedBatch(header.base_offset, header.last_offset, False, tuple(records))


def _decode_records(body: bytes, header: BatchHeader, log_append_time: bool) -> list[DecodedRecord]:
    """The records of one uncompressed records section.

    The hot loop of every fetch: varints of one or two bytes (lengths up to 8 KB, deltas,
    counts) are read inline; longer ones, and every bound, go through ``_uvarint``.  An
    IndexError means the section ended inside a record.
    """
    records: list[DecodedRecord] = []
    append = records.append
    size = len(body)
    base_offset = header.base_offset
    base_timestamp = header.base_timestamp
    stamp = int(log_append_time)
    no_headers: tuple[tuple[str, bytes | None], ...] = ()
    p = 0
    for _ in range(header.records_count):
        # length (zigzag varint), inline for one and two bytes
        b = body[p]
        if b < 0x80:
            raw = b
            p += 1
        elif body[p + 1] < 0x80:
            raw = (b & 0x7F) | (body[p + 1] << 7)
            p += 2
        else:
            raw, p = _uvarint(body, p)
        length = (raw >> 1) ^ -(raw & 1)
        rec_end = p + length
        if length < 0 or rec_end > size:
            msg = f"record length {length} runs past the batch"
            raise CorruptRecordError(msg)
        p += 1  # attributes
        b = body[p]
        if b < 0x80:
            raw = b
            p += 1
        else:
            raw, p = _uvarint(body, p)
        ts_delta = (raw >> 1) ^ -(raw & 1)
        b = body[p]
        if b < 0x80:
            raw = b
            p += 1
        else:
            raw, p = _uvarint(body, p)
        offset_delta = (raw >> 1) ^ -(raw & 1)
        # key
        b = body[p]
        if b < 0x80:
            raw = b
            p += 1
        elif body[p + 1] < 0x80:
            raw = (b & 0x7F) | (body[p + 1] << 7)
            p += 2
        else:
            raw, p = _uvarint(body, p)
        n = (raw >> 1) ^ -(raw & 1)
        if n < 0:
            key = None
        else:
            if p + n > rec_end:
                msg = "record field runs past the end of the batch"
                raise CorruptRecordError(msg)
            key = body[p : p + n]
            p += n
        # value
        b = body[p]
        if b < 0x80:
            raw = b
            p += 1
        elif body[p + 1] < 0x80:
            raw = (b & 0x7F) | (body[p + 1] << 7)
            p += 2
        else:
            raw, p = _uvarint(body, p)
        n = (raw >> 1) ^ -(raw & 1)
        if n < 0:
            value = None
        else:
            if p + n > rec_end:
                msg = "record field runs past the end of the batch"
                raise CorruptRecordError(msg)
            value = body[p : p + n]
            p += n
        count, p = _varint(body, p)
        headers = no_headers
        if count > 0:
            found: list[tuple[str, bytes | None]] = []
            for _h in range(count):
                hkey, p = _blob(body, p)
                hvalue, p = _blob(body, p)
                found.append(((hkey or b"").decode("utf-8", "replace"), hvalue))
            headers = tuple(found)
        if p != rec_end:
            msg = f"record at offset delta {offset_delta} has {rec_end - p} stray bytes"
            raise CorruptRecordError(msg)
        append(
            DecodedRecord(
                base_offset + offset_delta,
                header.max_timestamp if log_append_time else base_timestamp + ts_delta,
                key,
                value,
                headers,
                stamp,
            )
        )
    return records


def decode_records(buf: bytes, *, check_crc: bool = True) -> Iterator[DecodedRecord]:
    """Every data record of every complete batch in ``buf``, control batches skipped."""
    for pos, header in split_batches(buf):
        yield from decode_batch(buf, pos, header, check_crc=check_crc).records
