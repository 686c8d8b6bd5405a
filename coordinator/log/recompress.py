"""A topic's ``compression.type``: the codec its batches are stored with.

Kafka's LogValidator keeps a producer's batch as it came when the topic's type is
``producer`` (no target codec) or names the batch's own codec; otherwise it builds the batch
again (``buildRecordsAndAssignOffsets``) with the topic's codec (``uncompressed``: none) at
the topic's ``compression.<codec>.level`` (KIP-390), keeping the producer id, epoch,
sequence, transactional bit and the batch's timestamp type and max timestamp.  Each record
is written again as Kafka's MemoryRecordsBuilder writes it: attributes 0, offset deltas
0, 1, 2 ..., timestamp deltas from the first record's timestamp (the batch's base timestamp),
key, value and headers unchanged.  A batch written the way Kafka's producer writes it comes
out with the same records.  Decompression here is bounded as on every append
(``decompressed_limit``); the new batch must still fit in ``max.message.bytes`` (Kafka
checks a recompressed batch's size again: MESSAGE_TOO_LARGE).
"""

from __future__ import annotations

import struct

from crc32c import crc32c

from txn.batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchFormatError,
    BatchHeader,
)
from txn.codec import Reader, uvarint
from txn.compression import Codec, compress, decompress

_HEAD = struct.Struct(">qiib")  # base offset, batch length, partition leader epoch, magic
_AFTER_CRC = struct.Struct(">hiqqqhii")


def _varint(value: int) -> bytes:
    return uvarint((value << 1) ^ (value >> 63))


def _rebuilt_records(section: bytes, count: int) -> tuple[bytes, int]:
    """The records of an uncompressed section written again (Kafka's DefaultRecord), and
    the first record's timestamp delta (the new base timestamp is the batch's plus it)."""
    reader = Reader(section, BatchFormatError)
    deltas: list[int] = []
    rests: list[bytes] = []
    for _ in range(count):
        length = reader.varint()
        end = reader.pos + length
        if length < 0 or end > len(section):
            msg = "a record's length runs past its batch"
            raise BatchFormatError(msg)
        reader.take(">b")  # attributes: Kafka writes 0
        deltas.append(reader.varint())
        reader.varint()  # offset delta: assigned again
        rests.append(section[reader.pos : end])  # key, value and headers
        reader.pos = end
    first = deltas[0] if deltas else 0
    parts: list[bytes] = []
    for index, (delta, rest) in enumerate(zip(deltas, rests, strict=True)):
        body = b"\x00" + _varint(delta - first) + _varint(index) + rest
        parts.append(_varint(len(body)) + body)
    return b"".join(parts), first


def recompress(
    raw: bytes,
    header: BatchHeader,
    target: Codec | None,
    max_bytes: int,
    level: int | None = None,
) -> bytes:
    """``raw`` (a validated batch) as the topic stores it: with ``target``'s codec at
    ``level`` (None: the codec's default).

    Raises the decompression errors of ``txn.compression`` (DecompressedTooLargeError past
    ``max_bytes``) and BatchFormatError for records that do not parse."""
    source = header.attributes & ATTR_COMPRESSION_MASK
    if target is None or int(target) == source:
        return raw
    if not source and header.attributes & ATTR_CONTROL:
        return raw  # Kafka does not compress control records written uncompressed
    section = raw[HEADER_SIZE:]
    if source:
        section = decompress(source, section, max_bytes)
    records, first_delta = _rebuilt_records(section, header.records_count)
    if target is not Codec.NONE:
        records = compress(int(target), records, level)
    attributes = (header.attributes & ~ATTR_COMPRESSION_MASK) | int(target)
    after_crc = (
        _AFTER_CRC.pack(
            attributes,
            header.records_count - 1 if header.records_count else header.last_offset_delta,
            header.base_timestamp + first_delta,
            header.max_timestamp,
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
            header.records_count,
        )
        + records
    )
    batch_length = HEADER_SIZE - LOG_OVERHEAD + len(records)
    head = _HEAD.pack(header.base_offset, batch_length, header.partition_leader_epoch, header.magic)
    return head + struct.pack(">I", crc32c(after_crc)) + after_crc
