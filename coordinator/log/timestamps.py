"""Record timestamps as Kafka's LogValidator and time index treat them.

On append (``validate_batch``), record by record: a compacted topic refuses records without a
key; a ``CreateTime`` topic refuses a record whose timestamp (unless -1, "no timestamp") is
more than ``message.timestamp.before.max.ms`` before the broker's time or more than
``message.timestamp.after.max.ms`` after it; a batch the producer marked ``LogAppendTime``
is refused.  The batch is then stamped: its max timestamp becomes the largest record
timestamp (at least -1) under ``CreateTime``, or the append time with the timestamp-type bit
set under ``LogAppendTime`` (the base timestamp and the records' deltas are kept; a reader
gives every record of such a batch the batch's max timestamp); the CRC is recomputed.

Lookups (``record_at_or_after``, ``offset_of_max``) go record by record inside a batch, as
Kafka's ``FileRecords.searchForTimestamp`` and ``RecordBatch.offsetOfMaxTimestamp`` do.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from crc32c import crc32c

from txn.batch import ATTR_COMPRESSION_MASK, ATTR_TIMESTAMP_TYPE, HEADER_SIZE, BatchHeader
from txn.compression import decompress
from txn.errors import ErrorCode, SharetxnError
from txn.limits import LONG_MAX
from txn.record_keys import InflatedBatchError, RecordView, records_of

NO_TIMESTAMP = -1
_ATTRIBUTES_AT = 21
_MAX_TIMESTAMP_AT = 35
_CRC_AT = 17
_CRC_FROM = 21

INVALID_TIMESTAMP_MESSAGE = "One or more records have been rejected due to invalid timestamp"


@dataclass(frozen=True, slots=True)
class TimestampPolicy:
    """``message.timestamp.type`` and the two bounds (Kafka 4.4's defaults)."""

    log_append_time: bool = False
    before_max_ms: int = LONG_MAX
    after_max_ms: int = 3_600_000


@dataclass(frozen=True, slots=True)
class Refusal:
    error: ErrorCode
    message: str
    record_errors: tuple[tuple[int, str], ...]


def _java_long(value: int) -> int:
    """``value`` wrapped to a Java long (Kafka prints ``now + after`` unchecked)."""
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


def record_timestamp(header: BatchHeader, record: RecordView) -> int:
    """What a reader sees: a LogAppendTime batch's records all carry its max timestamp."""
    if header.attributes & ATTR_TIMESTAMP_TYPE:
        return header.max_timestamp
    return record.timestamp_ms


def _delta_range(section: bytes, count: int) -> tuple[int, int] | None:
    """The smallest and largest timestamp delta of ``count`` uncompressed records, read
    without decoding them (None if the bytes do not parse: the full decode says why)."""
    low = high = None
    pos = 0
    try:
        for _ in range(count):
            length, pos = _zigzag(section, pos)
            delta, _ = _zigzag(section, pos + 1)  # after the attributes byte
            if low is None or high is None:
                low = high = delta
            elif delta < low:
                low = delta
            elif delta > high:
                high = delta
            if length < 0:
                return None
            pos += length
    except IndexError:
        return None
    if low is None or high is None or pos != len(section):
        return None
    return low, high


def _zigzag(buf: bytes, pos: int) -> tuple[int, int]:
    byte = buf[pos]
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), pos + 1
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7
        if shift > 63:
            raise IndexError("varint too long")


def _fast_path(
    raw: bytes, header: BatchHeader, now_ms: int, policy: TimestampPolicy, max_bytes: int
) -> bytes | None:
    """The stored batch when no record can be refused, found without decoding records (the
    common case); None when the full validation must decide."""
    if header.attributes & ATTR_TIMESTAMP_TYPE:
        return None  # a producer may not set it: refused record by record
    if policy.log_append_time:
        return stamp(raw, header, now_ms, log_append_time=True)
    if header.attributes & ATTR_COMPRESSION_MASK:
        try:
            section = decompress(
                header.attributes & ATTR_COMPRESSION_MASK, raw[HEADER_SIZE:], max_bytes
            )
        except SharetxnError:
            return None
    else:
        section = raw[HEADER_SIZE:]
    deltas = _delta_range(section, header.records_count)
    if deltas is None:
        return None
    low, high = header.base_timestamp + deltas[0], header.base_timestamp + deltas[1]
    for ts in (low, high):
        if ts == NO_TIMESTAMP or ts - now_ms > policy.after_max_ms:
            return None
        if now_ms - ts > policy.before_max_ms:
            return None
    return stamp(raw, header, max(high, NO_TIMESTAMP), log_append_time=False)


def validate_batch(
    raw: bytes,
    header: BatchHeader,
    now_ms: int,
    policy: TimestampPolicy,
    *,
    compacted_in: str | None,
    max_bytes: int,
) -> bytes | Refusal:
    """The batch as it is stored (restamped), or why its records are refused.

    ``compacted_in`` names the partition of a compacted topic (records need keys there).
    Offsets in the messages are the producer's (the batch's base offset plus the delta)."""
    if compacted_in is None:
        fast = _fast_path(raw, header, now_ms, policy, max_bytes)
        if fast is not None:
            return fast
    try:
        records = list(records_of(raw, header, max_bytes))
    except InflatedBatchError as exc:  # a decompression bomb: refused as too large
        return Refusal(ErrorCode.MESSAGE_TOO_LARGE, str(exc), ())
    errors: list[tuple[int, str]] = []
    invalid_timestamp = False
    producer_log_append = bool(header.attributes & ATTR_TIMESTAMP_TYPE)
    max_timestamp = NO_TIMESTAMP
    for index, record in enumerate(records):
        ts = record_timestamp(header, record)
        max_timestamp = max(max_timestamp, ts)
        if compacted_in is not None and record.key is None:
            errors.append(
                (
                    index,
                    "Compacted topic cannot accept message without key in topic partition "
                    f"{compacted_in}",
                )
            )
        elif not policy.log_append_time and ts != NO_TIMESTAMP:
            if ts - now_ms > policy.after_max_ms or now_ms - ts > policy.before_max_ms:
                invalid_timestamp = True
                low = _java_long(now_ms - policy.before_max_ms)
                high = _java_long(now_ms + policy.after_max_ms)
                errors.append(
                    (
                        index,
                        f"Timestamp {ts} of message with offset {record.offset} is out of "
                        f"range. The timestamp should be within [{low}, {high}]",
                    )
                )
        elif producer_log_append:
            invalid_timestamp = True
            key = 0 if record.key is None else len(record.key)
            errors.append(
                (
                    index,
                    f"Invalid timestamp type in message DefaultRecord(offset={record.offset}, "
                    f"timestamp={ts}, key={key} bytes, value={record.value_size} bytes). "
                    "Producer should not set timestamp type to LogAppendTime.",
                )
            )
    if errors:
        if invalid_timestamp:
            return Refusal(ErrorCode.INVALID_TIMESTAMP, INVALID_TIMESTAMP_MESSAGE, tuple(errors))
        shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
        return Refusal(
            ErrorCode.INVALID_RECORD,
            f"One or more records have been rejected due to {len(errors)} record errors in "
            f"total, and only showing the first three errors at most: [{shown}]",
            tuple(errors),
        )
    if policy.log_append_time:
        return stamp(raw, header, now_ms, log_append_time=True)
    return stamp(raw, header, max_timestamp, log_append_time=False)


def stamp(raw: bytes, header: BatchHeader, max_timestamp: int, *, log_append_time: bool) -> bytes:
    """Kafka's ``setMaxTimestamp``: the timestamp type and max timestamp, and a new CRC."""
    attributes = header.attributes & ~ATTR_TIMESTAMP_TYPE
    if log_append_time:
        attributes |= ATTR_TIMESTAMP_TYPE
    if attributes == header.attributes and max_timestamp == header.max_timestamp:
        return raw
    out = bytearray(raw)
    struct.pack_into(">h", out, _ATTRIBUTES_AT, attributes)
    struct.pack_into(">q", out, _MAX_TIMESTAMP_AT, max_timestamp)
    struct.pack_into(">I", out, _CRC_AT, crc32c(memoryview(out)[_CRC_FROM:]))
    return bytes(out)


def record_at_or_after(
    raw: bytes | bytearray | memoryview, header: BatchHeader, target: int, start_offset: int
) -> tuple[int, int] | None:
    """The first record of the batch at or after ``start_offset`` whose timestamp is at
    least ``target``: (offset, timestamp)."""
    if header.max_timestamp < target:
        return None
    for record in records_of(raw, header):
        ts = record_timestamp(header, record)
        if ts >= target and record.offset >= start_offset:
            return record.offset, ts
    return None


def offset_of_max(raw: bytes | bytearray | memoryview, header: BatchHeader) -> int | None:
    """Kafka's ``offsetOfMaxTimestamp``: the first record carrying the batch's max timestamp
    (a LogAppendTime batch: its first offset)."""
    if header.attributes & ATTR_TIMESTAMP_TYPE:
        return header.base_offset
    for record in records_of(raw, header):
        if record.timestamp_ms == header.max_timestamp:
            return record.offset
    return None
