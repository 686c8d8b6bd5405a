"""Kafka's ``__consumer_offsets`` records of KIP-848 consumer groups, byte for byte.

Keys (not flexible): an int16 version naming the record, then ``group string`` and for the
per-member records ``member string``:

- 3 ConsumerGroupMetadata (group) -> value v0 ``Epoch int32``
- 5 ConsumerGroupMemberMetadata (group, member) -> value v0 ``InstanceId, RackId (nullable),
  ClientId, ClientHost, SubscribedTopicNames []string, SubscribedTopicRegex (nullable),
  RebalanceTimeoutMs int32, ServerAssignor (nullable)`` (+ tagged ClassicMemberMetadata)
- 6 ConsumerGroupTargetAssignmentMetadata (group) -> value v0 ``AssignmentEpoch int32``
  (+ tagged field 0 ``AssignmentTimestamp int64``, written when not 0, as Kafka 4.4's)
- 7 ConsumerGroupTargetAssignmentMember (group, member) -> value v0 ``TopicPartitions
  [TopicId uuid, Partitions []int32]``
- 8 ConsumerGroupCurrentMemberAssignment (group, member) -> value v0 ``MemberEpoch int32,
  PreviousMemberEpoch int32, State int8, AssignedPartitions [...], PartitionsPendingRevocation
  [...]``; each topic's entry carries, as Kafka 4.4's, the tagged field 0
  ``AssignmentEpochs []int32`` (nullable, aligned with its partitions: KIP-1251)
- 16 ConsumerGroupRegularExpression (group, regex) -> value v0 ``Topics []string, Version
  int64, Timestamp int64``: a subscribed regex's resolution (the key's second string is the
  regex, held in ``ConsumerKey.member_id``)

Values are flexible (compact strings and arrays, tagged fields); a null value is a tombstone.
Reading bounds every length by what is left.  Key version 4 (partition metadata) is not
written: the coordinator reads the subscribed topics' metadata from the topic registry.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from coordinator.group.records import (
    GroupKey,
    GroupRecordFormatError,
    GroupValue,
    OffsetKey,
    OffsetValue,
    RecordReader,
)
from txn.codec import compact_string, uvarint

GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA = 3, 4, 5
TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT = 6, 7, 8
REGULAR_EXPRESSION = 16
CONSUMER_KEY_VERSIONS = frozenset({3, 4, 5, 6, 7, 8, 16})
_TWO_STRING_KEYS = (MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT, REGULAR_EXPRESSION)

Partitions = dict[uuid.UUID, frozenset[int]]
# KIP-1251: the member epoch at which each (topic id, partition) was assigned to the member.
AssignmentEpochs = dict[tuple[uuid.UUID, int], int]


@dataclass(frozen=True, slots=True)
class ConsumerKey:
    version: int
    group_id: str
    member_id: str | None = None


@dataclass(frozen=True, slots=True)
class GroupEpochValue:
    epoch: int
    # A target assignment's AssignmentTimestamp (tagged field 0, Kafka 4.4): when it was
    # computed, in ms (0: unknown, not written); always 0 in a group epoch record.
    timestamp: int = 0


@dataclass(frozen=True, slots=True)
class ClassicMeta:
    """A member that speaks the classic protocol in a KIP-848 group (tagged field 0)."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]  # (name, consumer-protocol subscription)


@dataclass(frozen=True, slots=True)
class MemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed: tuple[str, ...]
    regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic: ClassicMeta | None = None


@dataclass(frozen=True, slots=True)
class TargetMemberValue:
    partitions: Partitions


@dataclass(frozen=True, slots=True)
class CurrentAssignmentValue:
    epoch: int
    previous_epoch: int
    state: int  # 0 stable, 1 unrevoked partitions, 2 unreleased partitions (Kafka's MemberState)
    assigned: Partitions
    revoking: Partitions
    # Each assigned or revoking partition's assignment epoch; None: the record has none (an
    # older writer's), and replay derives them from the member's earlier records.
    epochs: AssignmentEpochs | None = None


@dataclass(frozen=True, slots=True)
class RegexValue:
    """A regex's resolution: the topics it matched (that the member whose heartbeat asked
    could describe), the topic metadata's version then, and when (ms)."""

    topics: tuple[str, ...]
    version: int
    timestamp: int


ConsumerValue = (
    GroupEpochValue | MemberMetadataValue | TargetMemberValue | CurrentAssignmentValue | RegexValue
)

# One record of __consumer_offsets partition 1: a key, and its value or None (a tombstone).
Record = tuple[OffsetKey | GroupKey | ConsumerKey, OffsetValue | GroupValue | ConsumerValue | None]


# --- writing --------------------------------------------------------------------------------------


def _cstr(text: str | None) -> bytes:
    return b"\x00" if text is None else compact_string(text)


def _partitions(parts: Partitions, epochs: AssignmentEpochs | None = None) -> bytes:
    out = uvarint(len(parts) + 1)
    for topic_id, numbers in sorted(parts.items()):
        ordered = sorted(numbers)
        out += topic_id.bytes + uvarint(len(ordered) + 1)
        out += struct.pack(f">{len(ordered)}i", *ordered)
        if epochs is None:
            out += b"\x00"  # no tagged fields
            continue
        values = [epochs.get((topic_id, p), 0) for p in ordered]
        tagged = uvarint(len(values) + 1) + struct.pack(f">{len(values)}i", *values)
        out += uvarint(1) + uvarint(0) + uvarint(len(tagged)) + tagged  # tag 0: AssignmentEpochs
    return out


def encode_consumer_key(key: ConsumerKey) -> bytes:
    raw = key.group_id.encode()
    out = struct.pack(">hh", key.version, len(raw)) + raw
    if key.member_id is not None:
        member = key.member_id.encode()
        out += struct.pack(">h", len(member)) + member
    return out


def encode_consumer_value(value: ConsumerValue | None) -> bytes | None:
    if value is None:
        return None
    out = struct.pack(">h", 0)
    if isinstance(value, GroupEpochValue):
        out += struct.pack(">i", value.epoch)
        if value.timestamp:
            return out + b"\x01" + uvarint(0) + uvarint(8) + struct.pack(">q", value.timestamp)
    elif isinstance(value, MemberMetadataValue):
        out += _cstr(value.instance_id) + _cstr(value.rack_id)
        out += _cstr(value.client_id) + _cstr(value.client_host)
        out += uvarint(len(value.subscribed) + 1) + b"".join(_cstr(t) for t in value.subscribed)
        out += _cstr(value.regex) + struct.pack(">i", value.rebalance_timeout_ms)
        out += _cstr(value.server_assignor)
        if value.classic is not None:
            tagged = struct.pack(">i", value.classic.session_timeout_ms)
            tagged += uvarint(len(value.classic.protocols) + 1)
            for name, meta in value.classic.protocols:
                tagged += _cstr(name) + uvarint(len(meta) + 1) + meta + b"\x00"
            tagged += b"\x00"  # the struct's own tagged fields
            return out + b"\x01" + uvarint(0) + uvarint(len(tagged)) + tagged
    elif isinstance(value, TargetMemberValue):
        out += _partitions(value.partitions)
    elif isinstance(value, RegexValue):
        out += uvarint(len(value.topics) + 1) + b"".join(_cstr(t) for t in value.topics)
        out += struct.pack(">qq", value.version, value.timestamp)
    else:
        out += struct.pack(">iib", value.epoch, value.previous_epoch, value.state)
        out += _partitions(value.assigned, value.epochs)
        out += _partitions(value.revoking, value.epochs)
    return out + b"\x00"  # no tagged fields


# --- reading --------------------------------------------------------------------------------------


class _Reader(RecordReader):
    """The flexible encoding of the KIP-848 values on top of the plain reader."""

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 35:
                msg = "varint too long"
                raise GroupRecordFormatError(msg)

    def string(self) -> str:
        """A key's group or member id: a null length fails as a record that ends early."""
        (size,) = self.unpack(">h")
        return self._text(size)

    def cstr(self) -> str | None:
        size = self.uvarint() - 1
        return None if size < 0 else self._text(size)

    def count(self) -> int:
        n = self.uvarint() - 1
        if n < 0 or n > len(self.buf) - self.pos:
            msg = f"bad array length {n}"
            raise GroupRecordFormatError(msg)
        return n

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):  # a plain count, not count + 1
            self.uvarint()  # tag
            self.take(self.uvarint())

    def partitions(self, epochs: AssignmentEpochs | None = None) -> Partitions:
        """A ``[]TopicPartitions``; each topic's AssignmentEpochs (tag 0) go into ``epochs``
        when they match its partitions one for one (Kafka ignores them otherwise)."""
        out: Partitions = {}
        for _ in range(self.count()):
            topic_id = uuid.UUID(bytes=self.take(16))
            n = self.count()
            numbers = self.unpack(f">{n}i")
            out[topic_id] = frozenset(numbers)
            for _ in range(self.uvarint()):
                tag, size = self.uvarint(), self.uvarint()
                end = self.pos + size
                if tag == 0 and epochs is not None:
                    count = self.uvarint() - 1  # -1: null
                    if count == n:
                        values = self.unpack(f">{n}i")
                        epochs.update(
                            ((topic_id, p), e) for p, e in zip(numbers, values, strict=True)
                        )
                self.pos = end
        return out


def decode_consumer_key(raw: bytes) -> ConsumerKey:
    r = _Reader(raw)
    (version,) = r.unpack(">h")
    if version not in CONSUMER_KEY_VERSIONS:
        msg = f"not a consumer-group key version: {version}"
        raise GroupRecordFormatError(msg)
    group = r.string()
    member = r.string() if version in _TWO_STRING_KEYS else None
    return ConsumerKey(version, group, member)


def decode_consumer_value(key: ConsumerKey, raw: bytes | None) -> ConsumerValue | None:
    if raw is None:
        return None
    r = _Reader(raw)
    (version,) = r.unpack(">h")
    if version != 0:
        msg = f"unsupported value version {version} for key version {key.version}"
        raise GroupRecordFormatError(msg)
    value: ConsumerValue
    if key.version in (GROUP_METADATA, TARGET_METADATA):
        (epoch,) = r.unpack(">i")
        timestamp = 0
        for _ in range(r.uvarint()):
            tag, size = r.uvarint(), r.uvarint()
            end = r.pos + size
            if tag == 0 and key.version == TARGET_METADATA and size == 8:
                (timestamp,) = r.unpack(">q")
            r.pos = end
        return GroupEpochValue(epoch, timestamp)
    elif key.version == MEMBER_METADATA:
        instance, rack = r.cstr(), r.cstr()
        client, host = r.cstr() or "", r.cstr() or ""
        topics = tuple(r.cstr() or "" for _ in range(r.count()))
        regex = r.cstr()
        (timeout,) = r.unpack(">i")
        assignor = r.cstr()
        classic = None
        for _ in range(r.uvarint()):
            tag, size = r.uvarint(), r.uvarint()
            end = r.pos + size
            if tag == 0:
                classic = _classic_meta(r)
            r.pos = end
        value = MemberMetadataValue(
            instance, rack, client, host, topics, regex, timeout, assignor, classic
        )
        return value
    elif key.version == TARGET_MEMBER:
        value = TargetMemberValue(r.partitions())
    elif key.version == CURRENT_ASSIGNMENT:
        epoch, previous, state = r.unpack(">iib")
        epochs: AssignmentEpochs = {}
        assigned, revoking = r.partitions(epochs), r.partitions(epochs)
        complete = all(
            (t, p) in epochs for parts in (assigned, revoking) for t in parts for p in parts[t]
        )
        value = CurrentAssignmentValue(
            epoch, previous, state, assigned, revoking, epochs if complete and epochs else None
        )
    elif key.version == REGULAR_EXPRESSION:
        topics = tuple(r.cstr() or "" for _ in range(r.count()))
        version, timestamp = r.unpack(">qq")
        value = RegexValue(topics, version, timestamp)
    else:
        msg = f"key version {key.version} has no value this coordinator reads"
        raise GroupRecordFormatError(msg)
    r.skip_tags()
    return value


def _classic_meta(r: _Reader) -> ClassicMeta:
    (session_timeout,) = r.unpack(">i")
    protocols: list[tuple[str, bytes]] = []
    for _ in range(r.count()):
        name = r.cstr() or ""
        size = r.uvarint() - 1
        protocols.append((name, r.take(max(size, 0))))
        r.skip_tags()
    r.skip_tags()
    return ClassicMeta(session_timeout, tuple(protocols))
