"""The ``__share_group_state`` record schemas (Kafka's ShareSnapshot / ShareUpdate records).

Byte-compatible with Kafka's coordinator record serde: a key is the record type as an int16
version prefix followed by a non-flexible message, a value is an int16 value version (0)
followed by a flexible (KIP-482) message.

Key (both types, not flexible)::

    type int16 (0 = ShareSnapshot, 1 = ShareUpdate)
    GroupId string (int16 length + UTF-8) | TopicId uuid (16 bytes) | Partition int32

ShareSnapshot value (version 0, flexible)::

    version int16 = 0
    SnapshotEpoch int32 | StateEpoch int32 | LeaderEpoch int32 | StartOffset int64
    CreateTimestamp int64 | WriteTimestamp int64
    StateBatches compact array of
        {FirstOffset int64, LastOffset int64, DeliveryState int8, DeliveryCount int16, tags}
    tagged fields: 0 DeliveryCompleteCount int32 (Kafka's, KIP-1226; -1 = unknown, absent),
    this broker's 1000 FenceLeaderEpoch int32, 1001 FenceStateEpoch int32, 1002 ResetOffset int64

ShareUpdate value (version 0, flexible)::

    version int16 = 0
    SnapshotEpoch int32 | LeaderEpoch int32 | StartOffset int64 (-1 = unchanged)
    StateBatches (as above)
    tagged fields: 0 DeliveryCompleteCount int32 (-1 = unknown, absent), 1002 ResetOffset int64

A ShareUpdate has no StateEpoch.  A null value is a tombstone: the key's state is deleted
(Kafka always writes tombstones with a ShareSnapshot key; a null ShareUpdate value is decoded
as a tombstone too).  Unknown tagged fields are skipped on decode, so later versions can add
fields (the KIP-1289 staging fields) without breaking replay.

**DeliveryCompleteCount** (KIP-1226): the records at or above StartOffset whose delivery is
complete (ACKNOWLEDGED or ARCHIVED), as the share partition counted them when it wrote;
DescribeShareGroupOffsets reports lag = end offset - StartOffset - DeliveryCompleteCount.

**ResetOffset.**  Kafka persists nothing when a share partition first takes the position
``share.auto.offset.reset`` chose: StartOffset stays -1 until the first acknowledgement is
written.  This broker records that position (while StartOffset is -1) so that a restart
resumes there rather than at a later "latest"; what Kafka reports (StartOffset -1) is unchanged.

**Fence epochs.**  A key is fenced against the highest leader and state epoch any of its
records carried, and a re-initialization records a lower leader (and maybe state) epoch than
an earlier record did.  Once pruning has cut those earlier records, only the snapshot can say
how high the fences were: a ShareSnapshot carries them in two tagged fields, present only
when higher than its own LeaderEpoch / StateEpoch (so most snapshots are byte-for-byte
Kafka's, and records written before the fields existed decode as "no higher fence").  The
tags are numbered from 1000, well clear of the tags Kafka adds from 0.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, fields
from enum import IntEnum
from typing import NamedTuple

from txn.codec import Reader, uvarint
from txn.limits import INT8 as _INT8
from txn.limits import INT16 as _INT16
from txn.limits import INT32 as _INT32
from txn.limits import INT64 as _INT64

VALUE_VERSION = 0


class ShareRecordType(IntEnum):
    """The key version prefix: which record a ``__share_group_state`` key belongs to."""

    SHARE_SNAPSHOT = 0
    SHARE_UPDATE = 1


class ShareRecordFormatError(ValueError):
    """Bytes that are not a valid ``__share_group_state`` record."""


class UnknownShareRecordVersionError(ShareRecordFormatError):
    """A key type or value version this broker does not know (skipped on load, as Kafka does)."""


class StateBatch(NamedTuple):
    """One StateBatches[] entry: an inclusive offset range with one delivery state and count."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


class ShareRecordKey(NamedTuple):
    record_type: ShareRecordType
    group_id: str
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True, slots=True)
class ShareSnapshotValue:
    """The complete state of one share partition."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int
    write_timestamp: int
    state_batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = -1  # tagged (KIP-1226); -1: unknown
    # The key's fences when higher than leader_epoch / state_epoch (tagged; None: not higher).
    fence_leader_epoch: int | None = None
    fence_state_epoch: int | None = None
    reset_offset: int | None = None  # tagged: the pinned reset position while start is -1


@dataclass(frozen=True, slots=True)
class ShareUpdateValue:
    """An incremental change merged into the latest snapshot (start offset -1 = unchanged)."""

    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = -1  # tagged (KIP-1226); -1: unknown
    reset_offset: int | None = None  # tagged: the pinned reset position while start is -1


ShareRecordValue = ShareSnapshotValue | ShareUpdateValue


# --- primitives ------------------------------------------------------------------------------

_BOUNDS = {"b": _INT8, "h": _INT16, "i": _INT32, "q": _INT64}
_BATCH_CODES = "qqbh"  # a StateBatch, field by field

#: Each value's fixed-size fields before its StateBatches: struct codes and field names (its
#: first dataclass fields, which are in wire order).
_VALUE_HEADS: dict[type[ShareRecordValue], tuple[str, tuple[str, ...]]] = {
    cls: (codes, tuple(field.name for field in fields(cls))[: len(codes)])
    for cls, codes in ((ShareSnapshotValue, "iiiqqq"), (ShareUpdateValue, "iiq"))
}
_VALUE_TYPES: dict[ShareRecordType, type[ShareRecordValue]] = {
    ShareRecordType.SHARE_SNAPSHOT: ShareSnapshotValue,
    ShareRecordType.SHARE_UPDATE: ShareUpdateValue,
}


#: Each value's tagged fields: tag -> (field, struct code, the value that is not written).
_TAGS: dict[type[ShareRecordValue], dict[int, tuple[str, str, int | None]]] = {
    ShareSnapshotValue: {
        0: ("delivery_complete_count", "i", -1),
        1000: ("fence_leader_epoch", "i", None),
        1001: ("fence_state_epoch", "i", None),
        1002: ("reset_offset", "q", None),
    },
    ShareUpdateValue: {
        0: ("delivery_complete_count", "i", -1),
        1002: ("reset_offset", "q", None),
    },
}


def _check_range(name: str, value: int, bounds: tuple[int, int]) -> None:
    if not bounds[0] <= value <= bounds[1]:
        raise ShareRecordFormatError(f"{name} {value} does not fit its field")


def _pack(codes: str, names: Sequence[str], values: Sequence[int]) -> bytes:
    """``values`` packed big endian, each checked first to fit its field (named in the error)."""
    for code, name, value in zip(codes, names, values, strict=True):
        _check_range(name.replace("_", " "), value, _BOUNDS[code])
    return struct.pack(">" + codes, *values)


def _reader(buf: bytes | bytearray | memoryview) -> Reader:
    return Reader(buf, ShareRecordFormatError)


# --- key -------------------------------------------------------------------------------------


def encode_key(key: ShareRecordKey) -> bytes:
    data = key.group_id.encode("utf-8")
    if len(data) > _INT16[1]:
        raise ShareRecordFormatError(f"group id longer than {_INT16[1]} bytes")
    _check_range("partition", key.partition, _INT32)
    return (
        struct.pack(">hh", int(key.record_type), len(data))
        + data
        + key.topic_id.bytes
        + struct.pack(">i", key.partition)
    )


def decode_key(buf: bytes | bytearray | memoryview) -> ShareRecordKey:
    reader = _reader(buf)
    version = reader.take(">h")
    try:
        record_type = ShareRecordType(version)
    except ValueError as exc:
        raise UnknownShareRecordVersionError(f"unknown share state key type {version}") from exc
    size = reader.take(">h")
    if size < 0:
        raise ShareRecordFormatError("null group id in a share state key")
    try:
        group_id = reader.raw(size).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ShareRecordFormatError("invalid UTF-8 group id") from exc
    topic_id = uuid.UUID(bytes=reader.raw(16))
    partition = reader.take(">i")
    if not reader.at_end():
        raise ShareRecordFormatError("trailing bytes after the share state key")
    return ShareRecordKey(record_type, group_id, topic_id, partition)


# --- values ----------------------------------------------------------------------------------


def _encode_batches(batches: tuple[StateBatch, ...]) -> bytes:
    out = bytearray(uvarint(len(batches) + 1))
    for batch in batches:
        out += _pack(_BATCH_CODES, StateBatch._fields, batch)
        out += uvarint(0)  # no tagged fields
    return bytes(out)


def _decode_batches(reader: Reader) -> tuple[StateBatch, ...]:
    count = reader.uvarint() - 1
    if count < 0:
        raise ShareRecordFormatError("null StateBatches array")
    batches: list[StateBatch] = []
    for _ in range(count):
        batch = StateBatch(*reader.unpack(">" + _BATCH_CODES))
        reader.skip_tagged_fields()
        batches.append(batch)
    return tuple(batches)


def encode_value(value: ShareRecordValue | None) -> bytes | None:
    """Version-0 bytes of ``value``; None (a tombstone) stays None."""
    if value is None:
        return None
    out = bytearray(struct.pack(">h", VALUE_VERSION))
    codes, names = _VALUE_HEADS[type(value)]
    out += _pack(codes, names, [getattr(value, name) for name in names])
    out += _encode_batches(value.state_batches)
    out += _encode_tags(value)
    return bytes(out)


def _encode_tags(value: ShareRecordValue) -> bytes:
    """The value's tagged fields that differ from their "absent" value, in tag order."""
    tagged: list[tuple[int, bytes]] = []
    for tag, (name, code, absent) in sorted(_TAGS[type(value)].items()):
        field_value = getattr(value, name)
        if field_value is not None and field_value != absent:
            tagged.append((tag, _pack(code, (name,), (field_value,))))
    out = bytearray(uvarint(len(tagged)))
    for tag, data in tagged:
        out += uvarint(tag) + uvarint(len(data)) + data
    return bytes(out)


def _decode_tags(reader: Reader, value_type: type[ShareRecordValue]) -> dict[str, int]:
    """A value's known tagged fields by name (unknown tags are skipped)."""
    known: dict[str, int] = {}
    tags = _TAGS[value_type]
    for _ in range(reader.uvarint()):
        tag = reader.uvarint()
        data = reader.raw(reader.uvarint())
        if tag not in tags:
            continue
        name, code, _absent = tags[tag]
        if len(data) != struct.calcsize(">" + code):
            raise ShareRecordFormatError(f"tagged field {tag} is {len(data)} bytes")
        (known[name],) = struct.unpack(">" + code, data)
    return known


def decode_value(
    record_type: ShareRecordType, buf: bytes | bytearray | memoryview | None
) -> ShareRecordValue | None:
    """The value of a record with key type ``record_type``; None for a tombstone."""
    if buf is None:
        return None
    reader = _reader(buf)
    version = reader.take(">h")
    if version != VALUE_VERSION:
        raise UnknownShareRecordVersionError(f"unknown {record_type.name} value version {version}")
    value_type = _VALUE_TYPES[record_type]
    codes, names = _VALUE_HEADS[value_type]
    head = dict(zip(names, reader.unpack(">" + codes), strict=True))
    batches = _decode_batches(reader)
    value = value_type(**head, state_batches=batches, **_decode_tags(reader, value_type))
    if not reader.at_end():
        raise ShareRecordFormatError(f"trailing bytes after the {record_type.name} value")
    return value


# --- whole records ---------------------------------------------------------------------------


def encode_record(
    key: ShareRecordKey, value: ShareRecordValue | None
) -> tuple[bytes, bytes | None]:
    """The (key, value) bytes of one record; the value must match the key's type."""
    if value is not None:
        expected = (
            ShareRecordType.SHARE_SNAPSHOT
            if isinstance(value, ShareSnapshotValue)
            else ShareRecordType.SHARE_UPDATE
        )
        if key.record_type is not expected:
            msg = f"a {type(value).__name__} cannot be written under a {key.record_type.name} key"
            raise ShareRecordFormatError(msg)
    return encode_key(key), encode_value(value)


def decode_record(
    key: bytes | bytearray | memoryview | None, value: bytes | bytearray | memoryview | None
) -> tuple[ShareRecordKey, ShareRecordValue | None]:
    """Decode one (key, value) pair read from the log."""
    if key is None:
        raise ShareRecordFormatError("share state record without a key")
    decoded_key = decode_key(key)
    return decoded_key, decode_value(decoded_key.record_type, value)
