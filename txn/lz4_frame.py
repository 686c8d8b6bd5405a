"""LZ4 frames as Kafka writes them: independent 64 KiB blocks, no checksums.

Kafka's Java reader (``KafkaLZ4BlockInputStream``) refuses a frame whose blocks depend on
each other ("Dependent block stream is unsupported"), which is what a general-purpose LZ4
frame compressor writes by default.  This writes the frame Kafka's own producer writes: the
magic number, a descriptor with version 1 and the block-independence flag only, a maximum
block size of 64 KiB, the descriptor's checksum byte, then each block (compressed, or stored
as is when compression would not shrink it) and the end mark.  Reading goes through the
general LZ4 frame decoder, which accepts every variant.
"""

from __future__ import annotations

import struct

import cramjam

__all__ = ["compress_frame"]

_MAGIC = b"\x04\x22\x4d\x18"
_FLG = 0x60  # version 01, independent blocks; no block or content checksum, no content size
_BD = 0x40  # maximum block size 64 KiB
_BLOCK = 64 * 1024
_STORED = 0x80000000  # the block-size bit that marks an uncompressed block
_END_MARK = b"\x00\x00\x00\x00"

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_MASK = 0xFFFFFFFF


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK


def _xxh32_short(data: bytes, seed: int = 0) -> int:
    """XXH32 of fewer than 16 bytes (all a frame descriptor ever is)."""
    assert len(data) < 16
    h = (seed + _P5 + len(data)) & _MASK
    pos = 0
    while pos + 4 <= len(data):
        (lane,) = struct.unpack_from("<I", data, pos)
        h = (_rotl((h + lane * _P3) & _MASK, 17) * _P4) & _MASK
        pos += 4
    for byte in data[pos:]:
        h = (_rotl((h + byte * _P5) & _MASK, 11) * _P1) & _MASK
    h ^= h >> 15
    h = (h * _P2) & _MASK
    h ^= h >> 13
    h = (h * _P3) & _MASK
    h ^= h >> 16
    return h


_HEADER = _MAGIC + bytes([_FLG, _BD, (_xxh32_short(bytes([_FLG, _BD])) >> 8) & 0xFF])


def compress_frame(data: bytes, level: int | None = None) -> bytes:
    """``data`` as one LZ4 frame of independent blocks, readable by every Kafka client: with
    lz4's fast compressor, or its high-compression one at ``level`` (1-17), as Kafka's
    ``compression.lz4.level`` other than 9 asks."""
    if level is not None:
        return _high_compression_frame(data, level)
    out = bytearray(_HEADER)
    view = memoryview(data)
    for start in range(0, len(data), _BLOCK):
        chunk = view[start : start + _BLOCK]
        packed = bytes(cramjam.lz4.compress_block(bytes(chunk), store_size=False))
        if len(packed) < len(chunk):
            out += struct.pack("<I", len(packed)) + packed
        else:
            out += struct.pack("<I", len(chunk) | _STORED) + chunk
    out += _END_MARK
    return bytes(out)


_FLG_BLOCK_CHECKSUM = 0x10
_FLG_CONTENT_SIZE = 0x08


def _high_compression_frame(data: bytes, level: int) -> bytes:
    """The blocks lz4's high-compression frame encoder writes at ``level`` (independent, 64
    KiB), framed again as Kafka's writer frames them (no block or content checksums)."""
    compressor = cramjam.lz4.Compressor(level=level, block_linked=False, content_checksum=False)
    compressor.compress(data)
    frame = bytes(compressor.finish())
    flg = frame[4]
    pos = 7 + (8 if flg & _FLG_CONTENT_SIZE else 0)  # magic, FLG, BD, [content size], HC
    checksum = 4 if flg & _FLG_BLOCK_CHECKSUM else 0
    if frame[:4] != _MAGIC or frame[5] != _BD:
        msg = "lz4's frame encoder wrote an unexpected frame header"
        raise ValueError(msg)
    out = bytearray(_HEADER)
    while True:
        (size,) = struct.unpack_from("<I", frame, pos)
        if size == 0:
            break
        end = pos + 4 + (size & ~_STORED)
        out += frame[pos:end]
        pos = end + checksum
    out += _END_MARK
    return bytes(out)
