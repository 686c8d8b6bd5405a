"""Hand decoding of responses kio cannot read.

kio rejects negative timestamps, but Kafka sends ``TransactionStartTimeMs =
-1`` for Empty and unknown transactions in DescribeTransactions, so that
response is decoded here field by field (v0 is flexible: compact strings and
arrays, tagged fields).
"""

from __future__ import annotations

from typing import Any

from producer.protocol.types import TransactionDescription
from txn.api_keys import ApiKey
from txn.codec import Reader
from txn.errors import ErrorCode
from txn.ids import TopicPartition


class _Reader(Reader):
    """The response field by field; one that ends early raises ValueError."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data, ValueError)

    def int16(self) -> int:
        return self.take(">h")

    def int32(self) -> int:
        return self.take(">i")

    def int64(self) -> int:
        return self.take(">q")

    def compact_string(self) -> str | None:
        n = self.uvarint() - 1
        return None if n < 0 else self.text(n)


def describe_transactions_raw(
    conn: Any, version: int, transactional_id: str
) -> TransactionDescription:

    body = conn.request_raw(
        ApiKey.DESCRIBE_TRANSACTIONS, version, {"transactional_ids": [transactional_id]}
    )
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
        r.skip_tagged_fields()

    return TransactionDescription(
        tid, error, state, producer_id, epoch, timeout_ms, start_ms, tuple(partitions)
    )
