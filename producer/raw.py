"""Hand decoding of responses kio cannot read.

kio rejects negative timestamps, but Kafka sends ``TransactionStartTimeMs =
-1`` for Empty and unknown transactions in DescribeTransactions, so that
response is decoded here field by field (v0 is flexible: compact strings and
arrays, tagged fields).
"""

from __future__ import annotations

import struct
from typing import Any

from producer.types import TransactionDescription
from txn.errors import ErrorCode
from txn.ids import TopicPartition


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, fmt: str) -> Any:
        value = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return value

    def int16(self) -> int:
        return int(self._take(">h"))

    def int32(self) -> int:
        return int(self._take(">i"))

    def int64(self) -> int:
        return int(self._take(">q"))

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    def compact_string(self) -> str | None:
        n = self.uvarint() - 1
        if n < 0:
            return None
        text = self.data[self.pos : self.pos + n].decode()
        self.pos += n
        return text

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            size = self.uvarint()
            self.pos += size


def describe_transactions_raw(
    conn: Any, version: int, transactional_id: str
) -> TransactionDescription:

    body = conn.request_raw(65, version, {"transactional_ids": [transactional_id]})
    r = _Reader(body)
    r.int32()  # throttle
    count = r.uvarint() - 1
    assert count >= 1
    error = ErrorCode(r.int16())
    tid = r.compact_string() or ""
    state = r.compact_string() or ""
    timeout_ms = r.int32()
    start_ms = r.int64()
    producer_id = r.int64()
    epoch = r.int16()
    partitions: list[TopicPartition] = []
    for _ in range(r.uvarint() - 1):
        topic = r.compact_string() or ""
        for _ in range(r.uvarint() - 1):
            partitions.append(TopicPartition(topic, r.int32()))
        r.skip_tags()

    return TransactionDescription(
        tid, error, state, producer_id, epoch, timeout_ms, start_ms, tuple(partitions)
    )
