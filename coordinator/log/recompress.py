"""A topic's ``compression.type``: the codec its batches are stored with.

Kafka's LogValidator keeps a producer's batch as it came when the topic's type is
``producer`` (no target codec) or names the batch's own codec; otherwise it decompresses
the records and writes them again with the topic's codec (``uncompressed``: none), keeping
every header field but the codec bits (producer id, epoch, sequence, transactional bit,
timestamps).  Decompression here is bounded as on every append (``decompressed_limit``);
the new batch must still fit in ``max.message.bytes`` (Kafka checks a recompressed batch's
size again: MESSAGE_TOO_LARGE).
"""

from __future__ import annotations

import struct

from crc32c import crc32c

from txn.batch import ATTR_COMPRESSION_MASK, HEADER_SIZE, LOG_OVERHEAD, BatchHeader
from txn.compression import Codec, compress, decompress

_LENGTH_AT = 8
_CRC_AT = 17
_ATTRIBUTES_AT = 21


def recompress(raw: bytes, header: BatchHeader, target: Codec | None, max_bytes: int) -> bytes:
    """``raw`` (a validated batch) as the topic stores it: with ``target``'s codec.

    Raises the decompression errors of ``txn.compression`` (DecompressedTooLargeError past
    ``max_bytes``)."""
    source = header.attributes & ATTR_COMPRESSION_MASK
    if target is None or int(target) == source:
        return raw
    section = raw[HEADER_SIZE:]
    if source:
        section = decompress(source, section, max_bytes)
    if target is not Codec.NONE:
        section = compress(int(target), section)
    out = bytearray(raw[:HEADER_SIZE])
    out += section
    attributes = (header.attributes & ~ATTR_COMPRESSION_MASK) | int(target)
    struct.pack_into(">i", out, _LENGTH_AT, len(out) - LOG_OVERHEAD)
    struct.pack_into(">h", out, _ATTRIBUTES_AT, attributes)
    struct.pack_into(">I", out, _CRC_AT, crc32c(memoryview(out)[_ATTRIBUTES_AT:]))
    return bytes(out)
