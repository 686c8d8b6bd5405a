"""Record-batch compression codecs, as Kafka defines them, through ``cramjam``.

A RecordBatch v2 stores the codec in the low three bits of its attributes and
compresses everything after the fixed 61-byte header (the records).  Kafka's
codecs and their framing:

- 1 gzip: a gzip member (RFC 1952);
- 2 snappy: raw snappy blocks, or snappy-java's framing (``\\x82SNAPPY\\x00``, two
  int32 versions, then [int32 length][raw block]...) as Kafka's Java producer writes;
  we write raw snappy, as librdkafka does, which every Kafka client reads;
- 3 lz4: the LZ4 frame format with independent blocks;
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

__all__ = [
    "CODEC_NAMES",
    "Codec",
    "CorruptCompressedDataError",
    "UnsupportedCompressionError",
    "codec_by_name",
    "compress",
    "decompress",
]


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


def codec_by_name(name: str) -> Codec:
    """``compression.type`` values: none, gzip, snappy, lz4, zstd."""
    try:
        return Codec[name.strip().upper()]
    except KeyError:
        msg = f"compression.type must be one of {', '.join(CODEC_NAMES.values())}, got {name!r}"
        raise UnsupportedCompressionError(msg) from None


_SNAPPY_JAVA_MAGIC = b"\x82SNAPPY\x00"
_SNAPPY_JAVA_HEADER = len(_SNAPPY_JAVA_MAGIC) + 8  # magic, version, compatible version


def _snappy_decompress(data: bytes) -> bytes:
    if not data.startswith(_SNAPPY_JAVA_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
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
        out += bytes(cramjam.snappy.decompress_raw(data[pos : pos + size]))
        pos += size
    return bytes(out)


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
    Codec.LZ4: lambda d: bytes(cramjam.lz4.compress(d)),
    Codec.ZSTD: lambda d: bytes(cramjam.zstd.compress(d)),
}


def _codec(codec: int) -> Codec:
    try:
        return Codec(codec)
    except ValueError:
        msg = f"unknown compression codec id {codec} (Kafka defines 0-4)"
        raise UnsupportedCompressionError(msg) from None


def decompress(codec: int, data: bytes) -> bytes:
    """The records section of a batch compressed with ``codec``."""
    chosen = _codec(codec)
    try:
        return _DECOMPRESS[chosen](data)
    except CorruptCompressedDataError:
        raise
    except Exception as exc:  # cramjam raises its own DecompressionError for bad input
        msg = f"{chosen.name.lower()} data is corrupt: {exc}"
        raise CorruptCompressedDataError(msg) from exc


def compress(codec: int, data: bytes) -> bytes:
    """Compress a records section with ``codec``."""
    return _COMPRESS[_codec(codec)](data)
