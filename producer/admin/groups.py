"""Consumer-group administration for ``Admin``: describe, offsets (list, alter, delete).

Mixed into ``producer.admin.Admin``; every call goes to the group's coordinator.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from producer.protocol.client import KafkaClient, check_error
from txn.api_keys import ApiKey
from txn.errors import ErrorCode
from txn.ids import KEY_TYPE_GROUP, TopicPartition


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescription:
    group_id: str
    error: ErrorCode
    state: str
    protocol_type: str
    assignor: str
    members: tuple[ConsumerGroupMember, ...]


def consumer_assignment(raw: bytes) -> tuple[TopicPartition, ...]:
    """The partitions of a consumer-protocol assignment (version, [topic, [partition]], ...)."""
    out: list[TopicPartition] = []
    try:
        pos = 2
        (topics,) = struct.unpack_from(">i", raw, pos)
        pos += 4
        for _ in range(max(0, topics)):
            (size,) = struct.unpack_from(">h", raw, pos)
            pos += 2
            topic = raw[pos : pos + size].decode()
            pos += size
            (count,) = struct.unpack_from(">i", raw, pos)
            pos += 4
            for _ in range(max(0, count)):
                (partition,) = struct.unpack_from(">i", raw, pos)
                pos += 4
                out.append(TopicPartition(topic, partition))
    except (struct.error, UnicodeDecodeError):
        return tuple(out)
    return tuple(sorted(out))


def _topics(offsets: dict[TopicPartition, Any], entry: Any) -> list[dict[str, Any]]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for tp, value in sorted(offsets.items()):
        by_topic.setdefault(tp.topic, []).append({"partition_index": tp.partition, **entry(value)})
    return [{"name": t, "partitions": ps} for t, ps in by_topic.items()]


class ConsumerGroupAdmin:
    """The consumer-group half of ``Admin`` (it needs ``self.client``)."""

    client: KafkaClient

    def _group_node(self, group_id: str) -> int:
        return self.client.call(lambda: self.client.coordinator_for(KEY_TYPE_GROUP, group_id))

    def _group_call(self, group_id: str, api_key: ApiKey, body: dict[str, Any]) -> Any:
        return self.client.call(lambda: self.client.send(self._group_node(group_id), api_key, body))

    def describe_consumer_groups(self, group_ids: list[str]) -> list[ConsumerGroupDescription]:
        out: list[ConsumerGroupDescription] = []
        for group_id in group_ids:
            resp = self._group_call(
                group_id,
                ApiKey.DESCRIBE_GROUPS,
                {"groups": [group_id], "include_authorized_operations": False},
            )
            for g in resp.groups:
                out.append(
                    ConsumerGroupDescription(
                        g.group_id,
                        ErrorCode(int(g.error_code)),
                        g.group_state,
                        g.protocol_type,
                        g.protocol_data,
                        tuple(
                            ConsumerGroupMember(
                                m.member_id,
                                getattr(m, "group_instance_id", None),
                                m.client_id,
                                m.client_host,
                                consumer_assignment(bytes(m.member_assignment)),
                            )
                            for m in g.members
                        ),
                    )
                )
        return out

    def list_consumer_group_offsets(
        self,
        group_id: str,
        partitions: list[TopicPartition] | None = None,
        *,
        require_stable: bool = False,
    ) -> dict[TopicPartition, int]:
        """Committed offsets (OffsetFetch); partitions without one are left out."""
        topics = None
        if partitions is not None:
            grouped: dict[str, list[int]] = {}
            for tp in partitions:
                grouped.setdefault(tp.topic, []).append(tp.partition)
            topics = [{"name": t, "partition_indexes": ps} for t, ps in grouped.items()]
        body = {"group_id": group_id, "topics": topics, "require_stable": require_stable}
        resp = self._group_call(group_id, ApiKey.OFFSET_FETCH, body)
        check_error(getattr(resp, "error_code", 0), group_id=group_id)
        out: dict[TopicPartition, int] = {}
        for t in resp.topics:
            for p in t.partitions:
                check_error(p.error_code, group_id=group_id, topic=t.name)
                if int(p.committed_offset) >= 0:
                    out[TopicPartition(t.name, int(p.partition_index))] = int(p.committed_offset)
        return out

    def alter_consumer_group_offsets(
        self, group_id: str, offsets: dict[TopicPartition, int]
    ) -> dict[TopicPartition, ErrorCode]:
        """OffsetCommit as an administrator (generation -1): the group must be empty."""
        body = {
            "group_id": group_id,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "retention_time": -1,
            "topics": _topics(
                offsets,
                lambda off: {
                    "committed_offset": off,
                    "committed_leader_epoch": -1,
                    "committed_metadata": "",
                },
            ),
        }
        resp = self._group_call(group_id, ApiKey.OFFSET_COMMIT, body)
        return {
            TopicPartition(t.name, int(p.partition_index)): ErrorCode(int(p.error_code))
            for t in resp.topics
            for p in t.partitions
        }

    def delete_consumer_group_offsets(
        self, group_id: str, partitions: list[TopicPartition]
    ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """OffsetDelete (KIP-496): the group's error and one per partition."""
        body = {
            "group_id": group_id,
            "topics": _topics(dict.fromkeys(partitions, 0), lambda _v: {}),
        }
        resp = self._group_call(group_id, ApiKey.OFFSET_DELETE, body)
        return ErrorCode(int(resp.error_code)), {
            TopicPartition(t.name, int(p.partition_index)): ErrorCode(int(p.error_code))
            for t in resp.topics
            for p in t.partitions
        }
