"""The share-group coordinator's log records: a JSON key and a JSON value (or a tombstone).

Kafka keeps share groups in ``__consumer_offsets`` as binary ShareGroup* records.  This broker
keeps them in its own group-coordinator log, one record per entity, with **JSON** keys and
values so that a person can read the log:

* ``["group", g]``: group epoch and the subscribed topics' metadata (ShareGroupMetadata);
* ``["member", g, m]``: rack, client id/host, subscribed topic names (ShareGroupMemberMetadata);
* ``["current", g, m]``: member epoch, previous epoch, assigned partitions
  (ShareGroupCurrentMemberAssignment);
* ``["target", g]``: assignment epoch and every member's target assignment
  (ShareGroupTargetAssignmentMetadata + ShareGroupTargetAssignmentMember);
* ``["partitions", g]``: initializing / initialized / deleting share partitions
  (ShareGroupStatePartitionMetadata);
* ``["config", g]``: the group's config overrides (a KRaft ConfigRecord in Kafka).

A null value is a tombstone for its key.  Every value carries ``"v": 0``; a reader that meets a
newer version skips the record (``GroupRecordVersionError``) instead of misreading it.  Topic ids
are UUID strings; partitions are sorted integer lists.  Keys are per entity, so the log can be
compacted by key.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from txn.ids import TopicIdPartition

VERSION = 0

Kind = Literal["group", "member", "current", "target", "partitions", "config"]


class GroupRecordError(ValueError):
    """A record that cannot be decoded (corrupt or not ours)."""


class GroupRecordVersionError(GroupRecordError):
    """A record written by a newer version of this broker."""


PartitionSets = Mapping[uuid.UUID, frozenset[int]]


@dataclass(frozen=True, slots=True)
class GroupEpochRecord:
    group_id: str
    epoch: int
    # Subscribed topic name -> (topic id, partition count), as the epoch was computed.
    subscription_metadata: Mapping[str, tuple[uuid.UUID, int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class MemberRecord:
    group_id: str
    member_id: str
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CurrentAssignmentRecord:
    group_id: str
    member_id: str
    member_epoch: int
    previous_member_epoch: int
    assigned: frozenset[TopicIdPartition]


@dataclass(frozen=True, slots=True)
class TargetAssignmentRecord:
    group_id: str
    assignment_epoch: int
    assignment: Mapping[str, frozenset[TopicIdPartition]]
    # When the assignment was computed (the clock's ms; 0: unknown), as Kafka 4.4's
    # AssignmentTimestamp: the group's next assignment waits for its assignment interval.
    timestamp_ms: int = 0


@dataclass(frozen=True, slots=True)
class PartitionStateRecord:
    group_id: str
    initializing: PartitionSets
    initialized: PartitionSets
    deleting: PartitionSets
    topic_names: Mapping[uuid.UUID, str]  # for people reading the log and describe output


@dataclass(frozen=True, slots=True)
class GroupConfigRecord:
    group_id: str
    configs: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Tombstone:
    kind: Kind
    group_id: str
    member_id: str | None = None


GroupRecord = (
    GroupEpochRecord
    | MemberRecord
    | CurrentAssignmentRecord
    | TargetAssignmentRecord
    | PartitionStateRecord
    | GroupConfigRecord
    | Tombstone
)


# --- encoding ---------------------------------------------------------------------------------


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _partition_sets(sets: PartitionSets) -> dict[str, list[int]]:
    return {str(topic_id): sorted(parts) for topic_id, parts in sorted(sets.items()) if parts}


def _assignment(assigned: frozenset[TopicIdPartition]) -> dict[str, list[int]]:
    by_topic: dict[uuid.UUID, set[int]] = {}
    for tp in assigned:
        by_topic.setdefault(tp.topic_id, set()).add(tp.partition)
    return _partition_sets({t: frozenset(p) for t, p in by_topic.items()})


def key_of(record: GroupRecord) -> bytes:
    """The record's key: its kind, group and (for member records) member id."""
    if isinstance(record, Tombstone):
        kind: str = record.kind
        member_id = record.member_id
    else:
        kind = _KIND_OF[type(record)]
        member_id = getattr(record, "member_id", None)
    parts = [kind, record.group_id] + ([member_id] if member_id is not None else [])
    return _dumps(parts)


def encode(record: GroupRecord) -> tuple[bytes, bytes | None]:
    """(key, value) bytes of a record; a tombstone has a null value."""
    return key_of(record), _encode_value(record)


def _encode_value(record: GroupRecord) -> bytes | None:
    body: dict[str, Any]
    match record:
        case Tombstone():
            return None
        case GroupEpochRecord():
            body = {
                "epoch": record.epoch,
                "topics": {
                    name: [str(topic_id), partitions]
                    for name, (topic_id, partitions) in sorted(record.subscription_metadata.items())
                },
            }
        case MemberRecord():
            body = {
                "rack_id": record.rack_id,
                "client_id": record.client_id,
                "client_host": record.client_host,
                "subscribed_topic_names": list(record.subscribed_topic_names),
            }
        case CurrentAssignmentRecord():
            body = {
                "member_epoch": record.member_epoch,
                "previous_member_epoch": record.previous_member_epoch,
                "assigned": _assignment(record.assigned),
            }
        case TargetAssignmentRecord():
            body = {
                "assignment_epoch": record.assignment_epoch,
                "members": {m: _assignment(a) for m, a in sorted(record.assignment.items())},
            }
            if record.timestamp_ms:
                body["timestamp_ms"] = record.timestamp_ms
        case PartitionStateRecord():
            body = {
                "initializing": _partition_sets(record.initializing),
                "initialized": _partition_sets(record.initialized),
                "deleting": _partition_sets(record.deleting),
                "topic_names": {str(t): n for t, n in sorted(record.topic_names.items())},
            }
        case GroupConfigRecord():
            body = {"configs": dict(sorted(record.configs.items()))}
    body["v"] = VERSION
    return _dumps(body)


_KIND_OF: dict[type, Kind] = {
    GroupEpochRecord: "group",
    MemberRecord: "member",
    CurrentAssignmentRecord: "current",
    TargetAssignmentRecord: "target",
    PartitionStateRecord: "partitions",
    GroupConfigRecord: "config",
}


# --- decoding ---------------------------------------------------------------------------------


def _uuid(text: object) -> uuid.UUID:
    return uuid.UUID(str(text))


def _read_sets(raw: object) -> dict[uuid.UUID, frozenset[int]]:
    if not isinstance(raw, dict):
        raise GroupRecordError(f"expected an object of partition lists, got {raw!r}")
    return {_uuid(t): frozenset(int(p) for p in parts) for t, parts in raw.items()}


def _read_assignment(raw: object) -> frozenset[TopicIdPartition]:
    return frozenset(
        TopicIdPartition(topic_id, p) for topic_id, parts in _read_sets(raw).items() for p in parts
    )


def decode(key: bytes | None, value: bytes | None) -> GroupRecord:
    """The record a (key, value) pair holds; GroupRecordError if it is not a valid record."""
    if key is None:
        raise GroupRecordError("share-group record without a key")
    try:
        parts = json.loads(key)
        if not isinstance(parts, list) or len(parts) not in (2, 3):
            raise GroupRecordError(f"bad share-group record key {key!r}")
        kind, group_id = str(parts[0]), str(parts[1])
        member_id = str(parts[2]) if len(parts) == 3 else None
        if kind not in _KIND_OF.values():
            raise GroupRecordError(f"unknown share-group record kind {kind!r}")
        if (member_id is not None) != (kind in ("member", "current")):
            raise GroupRecordError(f"bad share-group record key {key!r}")
        if value is None:
            return Tombstone(kind, group_id, member_id)  # type: ignore[arg-type]
        body = json.loads(value)
        if not isinstance(body, dict):
            raise GroupRecordError(f"share-group record value is not an object: {value!r}")
        version = int(body.get("v", -1))
        if version > VERSION:
            raise GroupRecordVersionError(f"{kind} record version {version} > {VERSION}")
        return _decode_body(kind, group_id, member_id, body)
    except GroupRecordError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise GroupRecordError(f"corrupt share-group record {key!r}: {exc}") from exc


def _decode_body(
    kind: str, group_id: str, member_id: str | None, body: dict[str, Any]
) -> GroupRecord:
    if kind == "group":
        topics = body["topics"]
        return GroupEpochRecord(
            group_id,
            int(body["epoch"]),
            {str(name): (_uuid(tid), int(n)) for name, (tid, n) in topics.items()},
        )
    if kind == "member":
        assert member_id is not None
        rack = body["rack_id"]
        return MemberRecord(
            group_id,
            member_id,
            None if rack is None else str(rack),
            str(body["client_id"]),
            str(body["client_host"]),
            tuple(str(n) for n in body["subscribed_topic_names"]),
        )
    if kind == "current":
        assert member_id is not None
        return CurrentAssignmentRecord(
            group_id,
            member_id,
            int(body["member_epoch"]),
            int(body["previous_member_epoch"]),
            _read_assignment(body["assigned"]),
        )
    if kind == "target":
        members = body["members"]
        return TargetAssignmentRecord(
            group_id,
            int(body["assignment_epoch"]),
            {str(m): _read_assignment(a) for m, a in members.items()},
            int(body.get("timestamp_ms", 0)),
        )
    if kind == "partitions":
        return PartitionStateRecord(
            group_id,
            _read_sets(body["initializing"]),
            _read_sets(body["initialized"]),
            _read_sets(body["deleting"]),
            {_uuid(t): str(n) for t, n in body.get("topic_names", {}).items()},
        )
    configs = body["configs"]
    return GroupConfigRecord(group_id, {str(k): str(v) for k, v in configs.items()})
