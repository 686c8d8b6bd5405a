"""Which records of a RecordBatch v2 have no key (Kafka refuses them on a compacted topic).

Reads only as far as each record's key length; a compressed batch is decompressed first.
Anything malformed raises ``BatchFormatError``.
"""

from __future__ import annotations

from txn.batch import ATTR_COMPRESSION_MASK, HEADER_SIZE, BatchFormatError, BatchHeader
from txn.codec import Reader
from txn.compression import decompress
from txn.errors import SharetxnError


def keyless_records(batch: bytes | bytearray | memoryview, header: BatchHeader) -> list[int]:
    """Indexes (within the batch) of the records whose key is null."""
    section = bytes(memoryview(batch)[HEADER_SIZE : header.size])
    codec = header.attributes & ATTR_COMPRESSION_MASK
    if codec:
        try:
            section = decompress(codec, section)
        except SharetxnError as exc:
            raise BatchFormatError(str(exc)) from exc
    reader = Reader(section, BatchFormatError)
    out: list[int] = []
    for index in range(header.records_count):
        length = reader.varint()
        start = reader.pos
        if length < 0:
            raise BatchFormatError(f"record {index} has negative length {length}")
        reader.take(">b")  # attributes
        reader.varint()  # timestamp delta
        reader.varint()  # offset delta
        if reader.varint() < 0:
            out.append(index)
        reader.pos = start
        reader.raw(length)
    return out
