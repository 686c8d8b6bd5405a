"""Decoding RecordBatch v2 bytes into records, for the share consumer.

A ShareFetch response carries whole batches exactly as producers wrote them,
so the client has to check them (CRC32C over bytes 21..end), decompress them
and walk their records.  Supported codecs: none, gzip (stdlib), snappy and
lz4 (pure-Python decoders below, used when the ``cramjam``/``lz4`` packages
are not installed) and zstd when a zstd module is importable
(``compression.zstd`` on Python 3.14+, or ``zstandard``).  Any other codec
raises ``UnsupportedCompressionError`` naming it.  Control batches
(transaction markers) yield nothing.

Record layout inside a batch (after decompression)::

    length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
    keyLength varint, key, valueLength varint, value,
    headerCount varint, [headerKeyLength varint, headerKey, headerValueLength varint, value]
"""

from __future__ import annotations

import gzip
import importlib
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from crc32c import crc32c

from txn.batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_TIMESTAMP_TYPE,
    HEADER_SIZE,
    BatchFormatError,
    BatchHeader,
    parse_header,
)
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

CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


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


def _optional_module(*names: str) -> Any:
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def _gunzip(data: bytes) -> bytes:
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        msg = f"gzip data is corrupt: {exc}"
        raise CorruptRecordError(msg) from exc


_SNAPPY_JAVA_MAGIC = b"\x82SNAPPY\x00"


def _snappy_raw(data: bytes) -> bytes:
    """Decompress one raw snappy block (format_description.txt of google/snappy)."""
    size, pos = _uvarint(data, 0)
    out = bytearray()
    n = len(data)
    while pos < n:
        tag = data[pos]
        pos += 1
        kind = tag & 3
        if kind == 0:  # literal
            length = tag >> 2
            if length >= 60:
                extra = length - 59
                length = int.from_bytes(data[pos : pos + extra], "little")
                pos += extra
            length += 1
            if pos + length > n:
                msg = "snappy literal runs past the input"
                raise CorruptRecordError(msg)
            out += data[pos : pos + length]
            pos += length
            continue
        if kind == 1:
            length = 4 + ((tag >> 2) & 7)
            offset = ((tag >> 5) << 8) | data[pos]
            pos += 1
        elif kind == 2:
            length = (tag >> 2) + 1
            offset = int.from_bytes(data[pos : pos + 2], "little")
            pos += 2
        else:
            length = (tag >> 2) + 1
            offset = int.from_bytes(data[pos : pos + 4], "little")
            pos += 4
        _copy_match(out, offset, length, "snappy")
    if len(out) != size:
        msg = f"snappy block decoded to {len(out)} bytes, header says {size}"
        raise CorruptRecordError(msg)
    return bytes(out)


def _copy_match(out: bytearray, offset: int, length: int, codec: str) -> None:
    if offset <= 0 or offset > len(out):
        msg = f"{codec} back-reference offset {offset} is out of range"
        raise CorruptRecordError(msg)
    start = len(out) - offset
    if offset >= length:
        out += out[start : start + length]
        return
    for i in range(length):  # overlapping copy: repeats the last `offset` bytes
        out.append(out[start + i])


def _snappy(data: bytes) -> bytes:
    native = _optional_module("cramjam")
    if data.startswith(_SNAPPY_JAVA_MAGIC):
        # snappy-java framing (Kafka's Java producer): 16-byte header, then [int32 size][block].
        pos = 16
        out = bytearray()
        while pos < len(data):
            if pos + 4 > len(data):
                msg = "snappy-java frame ends inside a block length"
                raise CorruptRecordError(msg)
            (size,) = struct.unpack_from(">i", data, pos)
            pos += 4
            block = data[pos : pos + size]
            pos += size
            out += _snappy_block(block, native)
        return bytes(out)
    return _snappy_block(data, native)


def _snappy_block(block: bytes, native: Any) -> bytes:
    if native is not None:
        try:
            return bytes(native.snappy.decompress_raw(block))
        except Exception as exc:
            msg = f"snappy data is corrupt: {exc}"
            raise CorruptRecordError(msg) from exc
    try:
        return _snappy_raw(block)
    except IndexError as exc:
        msg = "snappy block is truncated"
        raise CorruptRecordError(msg) from exc


_LZ4_MAGIC = 0x184D2204
_LZ4_SKIPPABLE = 0x184D2A50


def _lz4_block(data: bytes, pos: int, end: int, out: bytearray) -> None:
    """Decode one LZ4 block (lz4_Block_format.md) from data[pos:end], appending to ``out``.

    ``out`` may already hold earlier blocks of the frame, which linked blocks reference.
    """
    while pos < end:
        token = data[pos]
        pos += 1
        literal = token >> 4
        if literal == 15:
            while True:
                byte = data[pos]
                pos += 1
                literal += byte
                if byte != 255:
                    break
        if pos + literal > end:
            msg = "lz4 literal runs past the block"
            raise CorruptRecordError(msg)
        out += data[pos : pos + literal]
        pos += literal
        if pos >= end:
            return  # the last sequence has literals only
        offset = data[pos] | (data[pos + 1] << 8)
        pos += 2
        length = token & 15
        if length == 15:
            while True:
                byte = data[pos]
                pos += 1
                length += byte
                if byte != 255:
                    break
        _copy_match(out, offset, length + 4, "lz4")


def _lz4(data: bytes) -> bytes:
    native = _optional_module("lz4.frame")
    if native is not None:
        try:
            return bytes(native.decompress(data))
        except Exception as exc:
            msg = f"lz4 data is corrupt: {exc}"
            raise CorruptRecordError(msg) from exc
    try:
        return _lz4_frames(data)
    except IndexError as exc:
        msg = "lz4 frame is truncated"
        raise CorruptRecordError(msg) from exc


def _lz4_frames(data: bytes) -> bytes:
    """Decode LZ4 frames (lz4_Frame_format.md); Kafka's v2 batches use the frame format."""
    out = bytearray()
    pos = 0
    while pos < len(data):
        (magic,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if magic & 0xFFFFFFF0 == _LZ4_SKIPPABLE:
            (size,) = struct.unpack_from("<I", data, pos)
            pos += 4 + size
            continue
        if magic != _LZ4_MAGIC:
            msg = f"not an lz4 frame (magic {magic:#x})"
            raise CorruptRecordError(msg)
        flg = data[pos]
        pos += 2  # FLG, BD
        if flg >> 6 != 1:
            msg = f"unsupported lz4 frame version {flg >> 6}"
            raise CorruptRecordError(msg)
        block_checksum = bool(flg & 0x10)
        content_checksum = bool(flg & 0x04)
        if flg & 0x08:
            pos += 8  # content size
        if flg & 0x01:
            pos += 4  # dictionary id
        pos += 1  # header checksum
        while True:
            (size,) = struct.unpack_from("<I", data, pos)
            pos += 4
            if size == 0:
                break
            raw = bool(size & 0x80000000)
            size &= 0x7FFFFFFF
            end = pos + size
            if end > len(data):
                msg = "lz4 block runs past the frame"
                raise CorruptRecordError(msg)
            if raw:
                out += data[pos:end]
            else:
                _lz4_block(data, pos, end, out)
            pos = end + (4 if block_checksum else 0)
        if content_checksum:
            pos += 4
    return bytes(out)


def _zstd(data: bytes) -> bytes:
    module = _optional_module("compression.zstd", "zstandard", "cramjam")
    if module is None:
        raise UnsupportedCompressionError(
            4, "install the 'zstandard' package (or use Python 3.14+) to read zstd batches"
        )
    try:
        if module.__name__ == "cramjam":
            return bytes(module.zstd.decompress(data))
        if module.__name__ == "zstandard":
            return bytes(module.ZstdDecompressor().decompressobj().decompress(data))
        return bytes(module.decompress(data))
    except Exception as exc:
        msg = f"zstd data is corrupt: {exc}"
        raise CorruptRecordError(msg) from exc


_CODECS: dict[int, Callable[[bytes], bytes]] = {1: _gunzip, 2: _snappy, 3: _lz4, 4: _zstd}


def decompress(codec: int, data: bytes) -> bytes:
    """The records section of a batch compressed with ``codec`` (attributes & 7)."""
    if codec == 0:
        return data
    fn = _CODECS.get(codec)
    if fn is None:
        raise UnsupportedCompressionError(codec)
    return fn(data)


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
    body = decompress(codec, bytes(buf[pos + HEADER_SIZE : end]))
    log_append_time = bool(header.attributes & ATTR_TIMESTAMP_TYPE)
    records: list[DecodedRecord] = []
    p = 0
    try:
        for _ in range(header.records_count):
            length, p = _varint(body, p)
            rec_end = p + length
            if length < 0 or rec_end > len(body):
                msg = f"record length {length} runs past the batch"
                raise CorruptRecordError(msg)
            p += 1  # attributes
            ts_delta, p = _varint(body, p)
            offset_delta, p = _varint(body, p)
            key, p = _blob(body, p)
            value, p = _blob(body, p)
            count, p = _varint(body, p)
            headers: list[tuple[str, bytes | None]] = []
            for _h in range(count):
                hkey, p = _blob(body, p)
                hvalue, p = _blob(body, p)
                headers.append(((hkey or b"").decode("utf-8", "replace"), hvalue))
            if p != rec_end:
                msg = f"record at offset delta {offset_delta} has {rec_end - p} stray bytes"
                raise CorruptRecordError(msg)
            timestamp = (
                header.max_timestamp if log_append_time else header.base_timestamp + ts_delta
            )
            records.append(
                DecodedRecord(
                    header.base_offset + offset_delta, timestamp, key, value, tuple(headers)
                )
            )
    except IndexError as exc:
        msg = f"record batch at offset {header.base_offset} is truncated"
        raise CorruptRecordError(msg) from exc
    return DecodedBatch(header.base_offset, header.last_offset, False, tuple(records))


def decode_records(buf: bytes, *, check_crc: bool = True) -> Iterator[DecodedRecord]:
    """Every data record of every complete batch in ``buf``, control batches skipped."""
    for pos, header in split_batches(buf):
        yield from decode_batch(buf, pos, header, check_crc=check_crc).records
