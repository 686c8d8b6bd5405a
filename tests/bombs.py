"""Decompression bombs: small compressed record batches whose records inflate enormously."""

from __future__ import annotations

import struct

import cramjam
from crc32c import crc32c

from txn.batch import build_batch
from txn.compression import Codec

_CHUNK = b"\x00" * (1 << 20)


def _varint(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zigzag >= 0x80:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def bomb_batch(codec: Codec, value_mib: int, key: bytes = b"k") -> bytes:
    """A v2 batch of one keyed record whose value is ``value_mib`` MiB of zeros, compressed
    with ``codec`` (gzip, lz4 or zstd) without ever holding the value in memory."""
    value_len = value_mib << 20
    body_len = 3 + len(_varint(len(key))) + len(key) + len(_varint(value_len)) + value_len + 1
    prefix = _varint(body_len) + b"\x00\x00\x00" + _varint(len(key)) + key + _varint(value_len)
    compressor = {
        Codec.GZIP: cramjam.gzip.Compressor,
        Codec.LZ4: cramjam.lz4.Compressor,
        Codec.ZSTD: cramjam.zstd.Compressor,
    }[codec]()
    compressor.compress(prefix)
    for _ in range(value_mib):
        compressor.compress(_CHUNK)
    compressor.compress(b"\x00")  # no headers
    records = bytes(compressor.finish())
    # Reuse build_batch's header layout for one record, then swap in the compressed records.
    plain = build_batch([(key, b"")], timestamp_ms=1, compression=0)
    after_crc = bytearray(plain[21:61]) + records
    after_crc[0:2] = struct.pack(">h", int(codec))
    batch_length = 4 + 1 + 4 + len(after_crc)
    return struct.pack(">qiibI", 0, batch_length, -1, 2, crc32c(bytes(after_crc))) + bytes(
        after_crc
    )
