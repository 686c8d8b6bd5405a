"""The consumer-group shard: a membership manager and an offset manager, each with its state
and its replay.

The shard holds what ``__consumer_offsets`` makes of the groups -- the classic groups and the
KIP-848 groups (``MembershipManager``), the committed offsets and the transactional offsets
pending per producer (``OffsetManager``) -- and nothing else: no log, no timers.  The
coordinator computes the records of a change; the ``CoordinatorRuntime`` that owns the shard
encodes them (``GroupRecordCodec``), appends and flushes them, and only then calls ``replay``:
the one place the log-backed state changes, for live writes and on load alike.

A classic group's rebalance (its state, the joins and syncs waiting, pending members) is in
memory only, as in Kafka: its record is written when a rebalance completes (and when the group
becomes empty), and replaying it makes the group's log-backed fields -- generation, protocol,
leader, members and their assignments -- what the record says.
"""

from __future__ import annotations

from collections.abc import Callable

from coordinator.group.classic import ClassicGroup
from coordinator.group.consumer_model import (
    ConsumerMember,
    ConsumerProtocolGroup,
    assignment_epochs,
)
from coordinator.group.consumer_records import (
    CONSUMER_KEY_VERSIONS,
    GROUP_METADATA,
    MEMBER_METADATA,
    REGULAR_EXPRESSION,
    TARGET_MEMBER,
    ConsumerKey,
    ConsumerValue,
    CurrentAssignmentValue,
    GroupEpochValue,
    MemberMetadataValue,
    Record,
    RegexValue,
    TargetMemberValue,
    decode_consumer_key,
    decode_consumer_value,
    encode_consumer_key,
    encode_consumer_value,
)
from coordinator.group.offsets import OffsetEntry, OffsetStore
from coordinator.group.records import (
    GroupKey,
    GroupValue,
    OffsetKey,
    OffsetValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from coordinator.shard_runtime import CoordinatorRuntime
from coordinator.shard_runtime import Record as RawRecord
from txn.ids import NO_PRODUCER_ID, TopicPartition

__all__ = [
    "ConsumerGroupShard",
    "GroupMeter",
    "GroupRecordCodec",
    "GroupRuntime",
    "MembershipManager",
    "OffsetManager",
]


class GroupRecordCodec:
    """``Record`` (typed key, value) <-> ``__consumer_offsets`` records; errors are
    ValueErrors (``GroupRecordFormatError``)."""

    def encode(self, record: Record) -> RawRecord:
        key, value = record
        if isinstance(key, ConsumerKey):
            if isinstance(value, OffsetValue | GroupValue):
                raise ValueError(f"a {type(value).__name__} under a KIP-848 key")
            return encode_consumer_key(key), encode_consumer_value(value)
        if value is not None and not isinstance(value, OffsetValue | GroupValue):
            raise ValueError(f"a {type(value).__name__} under a classic key")
        return encode_key(key), encode_value(value)

    def decode(self, key: bytes | None, value: bytes | None) -> Record:
        if key is None:
            raise ValueError("a __consumer_offsets record without a key")
        raw_key, raw_value = bytes(key), None if value is None else bytes(value)
        if int.from_bytes(raw_key[:2], "big") in CONSUMER_KEY_VERSIONS:
            consumer_key = decode_consumer_key(raw_key)
            return consumer_key, decode_consumer_value(consumer_key, raw_value)
        group_key = decode_key(raw_key)
        return group_key, decode_value(group_key, raw_value)


_CODEC = GroupRecordCodec()


class GroupMeter:
    """The consumer groups' metric emitter, shared by the coordinator and its shard:
    ``sink(group id, meter name, count)`` gets offset-commits, offset-expirations,
    offset-deletions and group-completed-rebalances (KIP-496's meters); none, nothing."""

    def __init__(self, sink: Callable[[str, str, int], None] | None = None) -> None:
        self.sink = sink

    def emit(self, group_id: str, meter: str, count: int) -> None:
        if self.sink is not None and count > 0:
            self.sink(group_id, meter, count)


class OffsetManager:
    """Committed offsets per group, transactional offsets pending per producer, and the
    latest epoch of each producer with pending offsets."""

    def __init__(self) -> None:
        self.store = OffsetStore()
        self.pending_epochs: dict[int, int] = {}

    def reset(self) -> None:
        self.store.committed.clear()
        self.store.pending.clear()
        self.pending_epochs.clear()

    def replay(
        self,
        key: OffsetKey,
        value: OffsetValue | None,
        record_offset: int,
        producer_id: int | None,
    ) -> bool:
        """An offset record (staged under ``producer_id`` when transactional); True when it
        committed an offset (the group then exists)."""
        tp = TopicPartition(key.topic, key.partition)
        if value is None:
            self.store.delete(key.group_id, tp)
            if producer_id is None:
                # As in Kafka: a tombstone also drops the pending transactional offsets.
                self.store.drop_pending(key.group_id, tp)
            return False
        entry = OffsetEntry(
            value.offset, value.leader_epoch, value.metadata, value.commit_timestamp, record_offset
        )
        if producer_id is not None:
            self.store.stage(producer_id, key.group_id, tp, entry)
            return False
        self.store.commit(key.group_id, tp, entry)
        return True

    def replay_marker(self, producer_id: int, commit: bool) -> list[tuple[str, TopicPartition]]:
        """A transaction marker: the producer's pending offsets committed or dropped; the
        (group, partition) pairs it committed."""
        applied = self.store.complete(producer_id, commit)
        self.pending_epochs.pop(producer_id, None)
        return applied


class MembershipManager:
    """The classic groups and the KIP-848 groups, by group id (one namespace)."""

    def __init__(self) -> None:
        self.groups: dict[str, ClassicGroup] = {}
        self.consumer_groups: dict[str, ConsumerProtocolGroup] = {}

    def reset(self) -> None:
        self.groups.clear()
        self.consumer_groups.clear()

    def has_group(self, group_id: str) -> bool:
        return group_id in self.groups or group_id in self.consumer_groups

    def ensure_group(self, group_id: str, state_timestamp: int = -1) -> None:
        """Offsets committed to an unknown group id make it an (empty) classic group."""
        if not self.has_group(group_id):
            self.groups[group_id] = ClassicGroup(group_id, state_timestamp=state_timestamp)

    def replay_classic(self, key: GroupKey, value: GroupValue | None) -> bool:
        """A classic group's record; for a tombstone, True when a group was removed."""
        if value is None:
            return self.groups.pop(key.group_id, None) is not None
        group = self.groups.get(key.group_id)
        if group is None:
            self.consumer_groups.pop(key.group_id, None)  # the id became a classic group
            self.groups[key.group_id] = ClassicGroup.from_value(key.group_id, value)
        else:
            group.install(value)
        return False

    def replay_consumer(self, key: ConsumerKey, value: ConsumerValue | None) -> None:
        """One KIP-848 record."""
        group = self.consumer_groups.get(key.group_id)
        if key.version == GROUP_METADATA and value is None:
            self.consumer_groups.pop(key.group_id, None)
            return
        if group is None:
            if value is None:
                return
            # The id's later records are a KIP-848 group's: an earlier classic group (or the
            # placeholder its offsets made) was converted.
            self.groups.pop(key.group_id, None)
            group = self.consumer_groups[key.group_id] = ConsumerProtocolGroup(key.group_id)
        member_id = key.member_id or ""
        if isinstance(value, GroupEpochValue):
            if key.version == GROUP_METADATA:
                group.epoch = value.epoch
            else:
                group.assignment_epoch = value.epoch
                group.assignment_timestamp = value.timestamp
        elif key.version == TARGET_MEMBER:
            if isinstance(value, TargetMemberValue):
                group.target[member_id] = dict(value.partitions)
            else:
                group.target.pop(member_id, None)
        elif key.version == MEMBER_METADATA and value is None:
            group.members.pop(member_id, None)
        elif isinstance(value, MemberMetadataValue):
            member = group.members.setdefault(
                member_id, ConsumerMember(member_id, None, None, "", "", frozenset(), None, -1)
            )
            member.instance_id, member.rack_id = value.instance_id, value.rack_id
            member.client_id, member.client_host = value.client_id, value.client_host
            member.subscribed = frozenset(value.subscribed)
            member.rebalance_timeout_ms = value.rebalance_timeout_ms
            member.server_assignor = value.server_assignor
            member.classic = value.classic
            member.regex = value.regex
            resolution = group.resolved.get(value.regex) if value.regex else None
            member.regex_topics = frozenset(resolution.topics) if resolution else frozenset()
        elif key.version == REGULAR_EXPRESSION:
            if isinstance(value, RegexValue):
                group.resolved[member_id] = value
            else:
                group.resolved.pop(member_id, None)
            topics = frozenset(value.topics) if isinstance(value, RegexValue) else frozenset()
            for member in group.members.values():
                if member.regex == member_id:  # the key's second string is the regex
                    member.regex_topics = topics
        elif isinstance(value, CurrentAssignmentValue) and member_id in group.members:
            member = group.members[member_id]
            # KIP-1251: the record's assignment epochs; an older record without them: derived
            # from the member's earlier records (a partition it held keeps its epoch).
            member.assignment_epochs = (
                dict(value.epochs)
                if value.epochs is not None
                else assignment_epochs(member, value.epoch, value.assigned, value.revoking)
            )
            member.epoch, member.previous_epoch = value.epoch, value.previous_epoch
            member.assigned, member.revoking = dict(value.assigned), dict(value.revoking)


class ConsumerGroupShard:
    """Every consumer group of the broker and its offsets, as ``__consumer_offsets`` makes
    them.  ``meter``: where the offsets a transaction marker commits are counted
    (``offset-commits``)."""

    def __init__(self, meter: GroupMeter) -> None:
        self.membership = MembershipManager()
        self.offsets = OffsetManager()
        self._meter = meter

    @property
    def codec(self) -> GroupRecordCodec:
        return _CODEC

    def reset(self) -> None:
        """Forget everything (before a load)."""
        self.membership.reset()
        self.offsets.reset()

    def replay(
        self, partition: int, offset: int, producer_id: int, producer_epoch: int, record: Record
    ) -> None:
        """Make one record's state current (once durable, and on load)."""
        key, value = record
        if isinstance(key, ConsumerKey):
            assert not isinstance(value, OffsetValue | GroupValue)
            self.membership.replay_consumer(key, value)
            return
        transactional = producer_id != NO_PRODUCER_ID
        if transactional:
            self.offsets.pending_epochs[producer_id] = producer_epoch
        if isinstance(key, OffsetKey):
            assert value is None or isinstance(value, OffsetValue)
            pid = producer_id if transactional else None
            if self.offsets.replay(key, value, offset, pid):
                assert value is not None
                self.membership.ensure_group(key.group_id, value.commit_timestamp)
            return
        assert value is None or isinstance(value, GroupValue)
        if self.membership.replay_classic(key, value):
            self.offsets.store.drop_group(key.group_id)

    def replay_marker(
        self, partition: int, producer_id: int, producer_epoch: int, commit: bool
    ) -> None:
        """A COMMIT/ABORT marker: the producer's staged offsets, committed or dropped."""
        applied = self.offsets.replay_marker(producer_id, commit)
        for group_id, _tp in applied:
            self.membership.ensure_group(group_id)
        for group_id in {g for g, _tp in applied}:
            self._meter.emit(
                group_id, "offset-commits", sum(1 for g, _ in applied if g == group_id)
            )


GroupRuntime = CoordinatorRuntime[ConsumerGroupShard]
