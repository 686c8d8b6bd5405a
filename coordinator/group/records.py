"""Kafka's ``__consumer_offsets`` records for classic groups and offsets, byte for byte.

Keys start with an int16 version that says what they are:

- versions 0 and 1: an offset commit, key ``group string, topic string, partition int32``,
  value (v3) ``offset int64, leader epoch int32, metadata string, commit timestamp int64``;
- version 2: group metadata, key ``group string``, value (v3) ``protocol type string,
  generation int32, protocol nullable string, leader nullable string, current state timestamp
  int64, members [member id string, group instance id nullable string, client id string,
  client host string, rebalance timeout int32, session timeout int32, subscription bytes,
  assignment bytes]``.

A null value is a tombstone (the offset or the group was deleted).  Decoding is bounded: every
length is checked against what is left of the buffer before it is read.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3


class GroupRecordFormatError(ValueError):
    """Bytes that are not a record this coordinator knows."""


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group_id: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class OffsetValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group_id: str


@dataclass(frozen=True, slots=True)
class MemberValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    state_timestamp: int
    members: tuple[MemberValue, ...]


Key = OffsetKey | GroupKey
Value = OffsetValue | GroupValue


# --- writing --------------------------------------------------------------------------------------


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def _nullable(text: str | None) -> bytes:
    return struct.pack(">h", -1) if text is None else _string(text)


def _bytes(raw: bytes) -> bytes:
    return struct.pack(">i", len(raw)) + raw


def encode_key(key: Key) -> bytes:
    if isinstance(key, OffsetKey):
        return (
            struct.pack(">h", OFFSET_KEY_VERSION)
            + _string(key.group_id)
            + _string(key.topic)
            + struct.pack(">i", key.partition)
        )
    return struct.pack(">h", GROUP_KEY_VERSION) + _string(key.group_id)


def encode_value(value: Value | None) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, OffsetValue):
        return (
            struct.pack(">hqi", OFFSET_VALUE_VERSION, value.offset, value.leader_epoch)
            + _string(value.metadata)
            + struct.pack(">q", value.commit_timestamp)
        )
    out = bytearray(struct.pack(">h", GROUP_VALUE_VERSION))
    out += _string(value.protocol_type) + struct.pack(">i", value.generation)
    out += _nullable(value.protocol) + _nullable(value.leader)
    out += struct.pack(">qi", value.state_timestamp, len(value.members))
    for m in value.members:
        out += _string(m.member_id) + _nullable(m.group_instance_id)
        out += _string(m.client_id) + _string(m.client_host)
        out += struct.pack(">ii", m.rebalance_timeout_ms, m.session_timeout_ms)
        out += _bytes(m.subscription) + _bytes(m.assignment)
    return bytes(out)


# --- reading --------------------------------------------------------------------------------------


class RecordReader:
    """Reads a ``__consumer_offsets`` record; every bad length raises GroupRecordFormatError."""

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            msg = f"record ends early: {n} bytes wanted at {self.pos} of {len(self.buf)}"
            raise GroupRecordFormatError(msg)
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str) -> tuple[int, ...]:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))

    def _text(self, size: int) -> str:
        try:
            return self.take(size).decode()
        except UnicodeDecodeError as exc:
            raise GroupRecordFormatError(str(exc)) from None

    def int16(self) -> int:
        return self.unpack(">h")[0]

    def int32(self) -> int:
        return self.unpack(">i")[0]

    def int64(self) -> int:
        return self.unpack(">q")[0]

    def nullable(self) -> str | None:
        size = self.int16()
        return None if size < 0 else self._text(size)

    def string(self) -> str:
        text = self.nullable()
        if text is None:
            msg = "null where a string is required"
            raise GroupRecordFormatError(msg)
        return text

    def bytes_(self) -> bytes:
        return self.take(self.int32())


def decode_key(raw: bytes) -> Key:
    r = RecordReader(raw)
    version = r.int16()
    if version in (0, 1):
        return OffsetKey(r.string(), r.string(), r.int32())
    if version == GROUP_KEY_VERSION:
        return GroupKey(r.string())
    msg = f"unknown __consumer_offsets key version {version}"
    raise GroupRecordFormatError(msg)


def decode_value(key: Key, raw: bytes | None) -> Value | None:
    if raw is None:
        return None
    r = RecordReader(raw)
    version = r.int16()
    if isinstance(key, OffsetKey):
        if version not in (1, 3):  # v1 also has an expire timestamp; v3 a leader epoch
            msg = f"unsupported offset commit value version {version}"
            raise GroupRecordFormatError(msg)
        offset = r.int64()
        epoch = r.int32() if version == 3 else -1
        metadata = r.string()
        timestamp = r.int64()
        return OffsetValue(offset, epoch, metadata, timestamp)
    if version != GROUP_VALUE_VERSION:
        msg = f"unsupported group metadata value version {version}"
        raise GroupRecordFormatError(msg)
    protocol_type = r.string()
    generation = r.int32()
    protocol = r.nullable()
    leader = r.nullable()
    timestamp = r.int64()
    count = r.int32()
    if count < 0 or count > len(raw):
        msg = f"bad member count {count}"
        raise GroupRecordFormatError(msg)
    members = []
    for _ in range(count):
        members.append(
            MemberValue(
                r.string(),
                r.nullable(),
                r.string(),
                r.string(),
                r.int32(),
                r.int32(),
                r.bytes_(),
                r.bytes_(),
            )
        )
    return GroupValue(protocol_type, generation, protocol, leader, timestamp, tuple(members))


def subscribed_topics(subscription: bytes) -> frozenset[str]:
    """The topics of a consumer-protocol subscription, read as version 0 (KIP-496): an int16
    version, then ``[topic string]``; trailing bytes (user data, owned partitions) ignored."""
    r = RecordReader(subscription)
    try:
        r.int16()
        count = r.int32()
        if count < 0 or count > len(subscription):
            return frozenset()
        return frozenset(r.string() for _ in range(count))
    except GroupRecordFormatError:
        return frozenset()
