"""The kafka-share columns: Spark's Kafka source's (timestampType, optional headers) first."""

from __future__ import annotations

import pytest

from producer.protocol.records import decode_batch
from producer.protocol.types import Record
from txn.batch import ATTR_TIMESTAMP_TYPE, build_batch, parse_header

pytest.importorskip("pyspark")

from producer.spark.source import arrow_schema, schema_ddl, to_arrow

KAFKA = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
SHARE = [
    "delivery_count",
    "receipt_batch",
    "receipt_transactional_id",
    "receipt_producer_id",
    "receipt_producer_epoch",
]
RECORDS = [
    Record("t", 0, 5, b"k", b"v", (("h", b"1"), ("n", None)), 1_700_000_000_000, 1, 0),
    Record("t", 1, 9, None, b"w", (), 1_700_000_000_001, 2, 1),
]


def test_headers_only_with_include_headers_as_in_sparks_kafka_source() -> None:
    assert arrow_schema().names == [*KAFKA, *SHARE]
    assert arrow_schema(include_headers=True).names == [*KAFKA, "headers", *SHARE]
    assert "headers" not in schema_ddl() and "timestampType int" in schema_ddl()
    assert "headers array<struct<key: string, value: binary>>" in schema_ddl(True)


def test_rows_carry_the_timestamp_type_and_the_headers() -> None:
    rows = to_arrow(RECORDS, 4, "tid", 7, 0, include_headers=True).to_pylist()
    assert [r["timestampType"] for r in rows] == [0, 1]  # CreateTime, LogAppendTime
    assert rows[0]["headers"] == [{"key": "h", "value": b"1"}, {"key": "n", "value": None}]
    assert rows[1]["headers"] == []
    assert [(r["delivery_count"], r["receipt_batch"]) for r in rows] == [(1, 4), (2, 4)]
    plain = to_arrow(RECORDS, 4, None, None, None).to_pylist()
    assert "headers" not in plain[0] and plain[1]["timestampType"] == 1


def test_a_log_append_time_batch_decodes_with_timestamp_type_one() -> None:
    created = build_batch([(None, b"a"), (None, b"b")], timestamp_ms=1000)
    decoded = decode_batch(created, 0, parse_header(created)).records
    assert [r.timestamp_type for r in decoded] == [0, 0]
    appended = bytearray(created)
    appended[22] |= ATTR_TIMESTAMP_TYPE  # the low byte of the batch's attributes
    header = parse_header(appended)
    decoded = decode_batch(bytes(appended), 0, header, check_crc=False).records
    assert [(r.timestamp_type, r.timestamp) for r in decoded] == [(1, 1000), (1, 1000)]
