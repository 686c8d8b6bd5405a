"""Record-batch compression codecs, as Kafka defines them, through ``cramjam``.

A RecordBatch v2 stores the codec in the low three bits of its attributes and
compresses everything after the fixed 61-byte header (the records).  Kafka's
codecs and their framing:

- 1 gzip: a gzip member (RFC 1952);
- 2 snappy: raw snappy blocks, or snappy-java's framing (``\\x82SNAPPY\\x00``, two
  int32 versions, then [int32 length][raw block]...) as Kafka's Java producer writes;
  we write raw snappy, as librdkafka does, which every Kafka client reads;
- 3 lz4: the LZ4 frame format with independent blocks (``txn.lz4_frame``: Kafka's Java
  reader refuses dependent ones);
- 4 zstd: a zstd frame.

Shared by the broker (which must read keys inside compressed batches to compact a
topic) and the client library (which compresses what it produces and decompresses
what it fetches).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from enum import IntEnum

import cramjam

from txn.errors import SharetxnError
from txn.lz4_frame import compress_frame

__all__ = [
    "CODEC_NAMES",
    "DEFAULT_LEVELS",
    "Codec",
    "CorruptCompressedDataError",
    "DecompressedTooLargeError",
    "UnsupportedCompressionError",
    "codec_by_name",
    "compress",
    "decompress",
    "decompressed_limit",
]

#: How many times its limit (``max.message.bytes``) a batch's records may take once
#: decompressed: the broker refuses a batch that inflates beyond that (a decompression
#: bomb) without holding more than the limit.  Kafka bounds the compressed batch only.
MAX_INFLATION = 64
#: The first output buffer of a bounded decompression: this many times the input (grown
#: fourfold while the data needs more, up to the limit).
_FIRST_GUESS = 8
_OVERFLOW = "failed to write whole buffer"  # cramjam's error when the output buffer is full


class Codec(IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


CODEC_NAMES = {int(c): c.name.lower() for c in Codec}


class UnsupportedCompressionError(SharetxnError):
    """A codec id Kafka does not define (only 0-4 exist)."""


class CorruptCompressedDataError(SharetxnError):
    """Bytes that do not decompress with the codec the batch names."""


class DecompressedTooLargeError(SharetxnError):
    """Records that would take more than the allowed bytes once decompressed."""


def decompressed_limit(max_message_bytes: int) -> int:
    """The most bytes a batch's records may take decompressed, for a ``max.message.bytes``."""
    return max(max_message_bytes, 1) * MAX_INFLATION


def _too_large(codec: str, max_bytes: int) -> DecompressedTooLargeError:
    return DecompressedTooLargeError(
        f"{codec} records decompress to more than {max_bytes} bytes"
        f" ({MAX_INFLATION} x max.message.bytes)"
    )


#: A topic's ``compression.type`` -> the codec its batches are stored with (None: each as
#: produced, the ``producer`` type).
TOPIC_CODECS: dict[str, Codec | None] = {
    "producer": None,
    "uncompressed": Codec.NONE,
    "gzip": Codec.GZIP,
    "snappy": Codec.SNAPPY,
    "lz4": Codec.LZ4,
    "zstd": Codec.ZSTD,
}


def topic_codec(compression_type: str | None) -> Codec | None:
    """The codec a topic's ``compression.type`` stores batches with (None: as produced)."""
    if compression_type is None:
        return None
    return TOPIC_CODECS.get(compression_type.strip().lower())


def codec_by_name(name: str) -> Codec:
    """``compression.type`` values: none, gzip, snappy, lz4, zstd."""
    try:
        return Codec[name.strip().upper()]
    except KeyError:
        msg = f"compression.type must be one of {', '.join(CODEC_NAMES.values())}, got {name!r}"
        raise UnsupportedCompressionError(msg) from None


_SNAPPY_JAVA_MAGIC = b"\x82SNAPPY\x00"
_SNAPPY_JAVA_HEADER = len(_SNAPPY_JAVA_MAGIC) + 8  # magic, version, compatible version


def _snappy_block(data: bytes, room: int | None) -> bytes:
    if room is not None and int(cramjam.snappy.decompress_raw_len(data)) > room:
        raise _too_large("snappy", room)  # the block's header states its length
    return bytes(cramjam.snappy.decompress_raw(data))


def _snappy_decompress(data: bytes, max_bytes: int | None = None) -> bytes:
    if not data.startswith(_SNAPPY_JAVA_MAGIC):
        return _snappy_block(data, max_bytes)
    out = bytearray()
    pos = _SNAPPY_JAVA_HEADER
    while pos < len(data):
        if pos + 4 > len(data):
            msg = "snappy-java frame ends inside a block length"
            raise CorruptCompressedDataError(msg)
        (size,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if size < 0 or pos + size > len(data):
            msg = f"snappy-java block of {size} bytes runs past the data"
            raise CorruptCompressedDataError(msg)
        room = None if max_bytes is None else max_bytes - len(out)
        out += _snappy_block(data[pos : pos + size], room)
        pos += size
    return bytes(out)


_DECOMPRESS_INTO: dict[Codec, Callable[[bytes, bytearray], int]] = {
    Codec.GZIP: cramjam.gzip.decompress_into,
    Codec.LZ4: cramjam.lz4.decompress_into,
    Codec.ZSTD: cramjam.zstd.decompress_into,
}


def _bounded(codec: Codec, data: bytes, max_bytes: int) -> bytes:
    """Decompress into buffers of bounded size: never more than ``max_bytes`` (+1) held.

    cramjam stops with an error when the output buffer is full; the buffer grows fourfold
    and decompression starts over, until the data fits or the buffer passed ``max_bytes``.
    """
    if codec is Codec.NONE:
        if len(data) > max_bytes:
            raise _too_large("uncompressed", max_bytes)
        return data
    if codec is Codec.SNAPPY:
        return _snappy_decompress(data, max_bytes)
    size = min(max_bytes + 1, max(1 << 16, _FIRST_GUESS * len(data)))
    while True:
        out = bytearray(size)
        try:
            n = _DECOMPRESS_INTO[codec](data, out)
        except cramjam.DecompressionError as exc:
            if _OVERFLOW not in str(exc):
                raise
            if size > max_bytes:
                raise _too_large(codec.name.lower(), max_bytes) from None
            size = min(max_bytes + 1, size * 4)
            continue
        if n > max_bytes:
            raise _too_large(codec.name.lower(), max_bytes)
        return bytes(memoryview(out)[:n])


_DECOMPRESS: dict[Codec, Callable[[bytes], bytes]] = {
    Codec.NONE: bytes,
    Codec.GZIP: lambda d: bytes(cramjam.gzip.decompress(d)),
    Codec.SNAPPY: _snappy_decompress,
    Codec.LZ4: lambda d: bytes(cramjam.lz4.decompress(d)),
    Codec.ZSTD: lambda d: bytes(cramjam.zstd.decompress(d)),
}

_COMPRESS: dict[Codec, Callable[[bytes], bytes]] = {
    Codec.NONE: bytes,
    Codec.GZIP: lambda d: bytes(cramjam.gzip.compress(d)),
    Codec.SNAPPY: lambda d: bytes(cramjam.snappy.compress_raw(d)),
    Codec.LZ4: compress_frame,  # independent blocks, as Kafka's Java reader requires
    Codec.ZSTD: lambda d: bytes(cramjam.zstd.compress(d)),
}


def _codec(codec: int) -> Codec:
    try:
        return Codec(codec)
    except ValueError:
        msg = f"unknown compression codec id {codec} (Kafka defines 0-4)"
        raise UnsupportedCompressionError(msg) from None


def decompress(codec: int, data: bytes, max_bytes: int | None = None) -> bytes:
    """The records section of a batch compressed with ``codec``.

    With ``max_bytes``, DecompressedTooLargeError as soon as the output would exceed it
    (the memory held stays within about that bound, whatever the data claims).
    """
    chosen = _codec(codec)
    try:
        if max_bytes is not None:
            return _bounded(chosen, data, max_bytes)
        return _DECOMPRESS[chosen](data)
    except (CorruptCompressedDataError, DecompressedTooLargeError):
        raise
    except Exception as exc:  # cramjam raises its own DecompressionError for bad input
        msg = f"{chosen.name.lower()} data is corrupt: {exc}"
        raise CorruptCompressedDataError(msg) from exc


#: Kafka's default level of each codec that has levels (KIP-390): gzip's -1 is zlib's 6; lz4's
#: 9 is lz4's fast compressor (any other level its high-compression one).
DEFAULT_LEVELS: dict[Codec, int] = {Codec.GZIP: 6, Codec.LZ4: 9, Codec.ZSTD: 3}


def _compress_at(codec: Codec, data: bytes, level: int) -> bytes:
    if codec is Codec.GZIP:
        return bytes(cramjam.gzip.compress(data, level=6 if level == -1 else level))
    if codec is Codec.LZ4:
        return compress_frame(data, None if level == DEFAULT_LEVELS[Codec.LZ4] else level)
    if codec is Codec.ZSTD:
        return bytes(cramjam.zstd.compress(data, level=level))
    return _COMPRESS[codec](data)


def compress(codec: int, data: bytes, level: int | None = None) -> bytes:
    """Compress a records section with ``codec``; at ``level`` (a topic's
    ``compression.<codec>.level``, Kafka's meaning) when given, else the codec's default."""
    chosen = _codec(codec)
    if level is None:
        return _COMPRESS[chosen](data)
    return _compress_at(chosen, data, level)
