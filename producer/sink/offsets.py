"""Altering and resetting a sink connector's offsets (KIP-875) on its share group.

Connect's ``PATCH``/``DELETE /connectors/{name}/offsets`` change a sink connector's consumer
group offsets.  A share sink's progress is its share group's (KIP-1302), so the closest
equivalents are used:

- ``PATCH`` with ``{"kafka_offset": n}`` for a partition: AlterShareGroupOffsets, the
  partition's start offset becomes ``n`` (the next record delivered is the one at ``n``).
- ``PATCH`` with ``null`` for a partition: Connect deletes that partition's committed
  offset.  DeleteShareGroupOffsets works per topic, so ``null`` must name every partition
  of its topic; the topic's share-partition state is then deleted, and the group starts it
  again from ``share.auto.offset.reset``.
- ``DELETE``: DeleteShareGroupOffsets for every topic the share group has state for
  (Connect deletes the connector's consumer group).

As in Connect the connector must be ``STOPPED`` (so none of its tasks is a member of the
group) and the request body is parsed with Connect's rules and messages
(``SinkUtils.parseSinkConnectorOffsets``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from producer.admin import Admin
from producer.sink.herder import BadRequest, HerderError
from txn.errors import ErrorCode, GroupIdNotFoundError, KafkaProtocolError
from txn.ids import TopicPartition

__all__ = ["alter_share_offsets", "check_body", "parse_sink_offsets", "reset_share_offsets"]

TOPIC_KEY: Final = "kafka_topic"
PARTITION_KEY: Final = "kafka_partition"
OFFSET_KEY: Final = "kafka_offset"

ALTERED: Final = (
    "The Connect framework-managed offsets for this connector have been altered successfully. "
    "However, if this connector manages offsets externally, they will need to be manually "
    "altered in the system that the connector uses."
)
RESET: Final = ALTERED.replace("altered", "reset")
_ZOMBIES: Final = (
    "Failed to {verb} consumer group offsets for connector {name} either because its tasks "
    "haven't stopped completely yet or the connector was resumed before the request to {verb} "
    "its offsets could be successfully completed. If the connector is in a stopped state, this "
    "operation can be safely retried. If it doesn't eventually succeed, the Connect cluster may "
    "need to be restarted to get rid of the zombie sink tasks."
)
_BUSY: Final = (ErrorCode.NON_EMPTY_GROUP, ErrorCode.UNKNOWN_MEMBER_ID)


def check_body(body: Any) -> list[Any]:
    """The ``offsets`` list of a ``PATCH`` body; Connect's 400 when there is none."""
    offsets = body.get("offsets") if isinstance(body, dict) else None
    if not isinstance(offsets, list) or not offsets:
        raise BadRequest("Partitions / offsets need to be provided for an alter offsets request")
    return offsets


def parse_sink_offsets(entries: list[Any]) -> dict[TopicPartition, int | None]:
    """Connect's sink offsets (``partition``/``offset`` maps) as partition -> offset."""
    out: dict[TopicPartition, int | None] = {}
    for entry in entries:
        partition = entry.get("partition") if isinstance(entry, dict) else None
        if not isinstance(partition, dict):
            raise BadRequest("The partition for a sink connector offset cannot be null or missing")
        if TOPIC_KEY not in partition or PARTITION_KEY not in partition:
            raise BadRequest(
                "The partition for a sink connector offset must contain the keys "
                f"'{TOPIC_KEY}' and '{PARTITION_KEY}'"
            )
        if partition[TOPIC_KEY] is None:
            raise BadRequest("Kafka topic names must be valid strings and may not be null")
        if partition[PARTITION_KEY] is None:
            raise BadRequest("Kafka partitions must be valid numbers and may not be null")
        raw_partition = partition[PARTITION_KEY]
        number = _integer(raw_partition)
        if number is None:
            raise BadRequest(
                "Failed to parse the following Kafka partition value in the provided offsets: "
                f"'{_text(raw_partition)}'. Partition values for sink connectors need to be "
                "integers."
            )
        tp = TopicPartition(_text(partition[TOPIC_KEY]), number)
        offset = entry.get("offset")
        if offset is None:
            out[tp] = None
            continue
        if not isinstance(offset, dict) or OFFSET_KEY not in offset:
            raise BadRequest(
                f"The offset for a sink connector should either be null or contain the key "
                f"'{OFFSET_KEY}'"
            )
        value = _integer(offset[OFFSET_KEY])
        if value is None:
            raise BadRequest(
                "Failed to parse the following Kafka offset value in the provided offsets: "
                f"'{_text(offset[OFFSET_KEY])}'. Offset values for sink connectors need to be "
                "integers."
            )
        out[tp] = value
    return out


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return int(str(value))
    except ValueError:
        return None


def alter_share_offsets(
    admin_config: Mapping[str, Any],
    name: str,
    group: str,
    offsets: dict[TopicPartition, int | None],
) -> dict[str, str]:
    """Apply ``offsets`` to the share group (see the module docstring)."""
    wanted = {tp: o for tp, o in offsets.items() if o is not None}
    deleted = sorted({tp.topic for tp, o in offsets.items() if o is None})
    try:
        with Admin(dict(admin_config)) as admin:
            topics = admin.list_topics()
            for topic in deleted:
                given = {tp.partition for tp in offsets if tp.topic == topic}
                if topic in topics and given != set(topics[topic]):
                    raise BadRequest(
                        f"A null offset resets a share group's whole topic: give every "
                        f"partition of {topic} ({len(topics[topic])}) a null offset, or "
                        "an offset"
                    )
            if wanted:
                errors = admin.alter_share_group_offsets(group, dict(wanted))
                _raise_first(errors.values(), name, "alter")
            if deleted:
                found = admin.delete_share_group_offsets(group, deleted)
                _raise_first(found.values(), name, "alter")
    except HerderError:
        raise
    except GroupIdNotFoundError:
        if wanted:
            raise HerderError(
                f"Failed to alter consumer group offsets for connector {name}: its share "
                f"group {group} does not exist yet (no task of it ever ran)"
            ) from None
    except KafkaProtocolError as exc:
        _raise_first([exc.code], name, "alter")
        raise
    return {"message": ALTERED}


def reset_share_offsets(admin_config: Mapping[str, Any], name: str, group: str) -> dict[str, str]:
    """Delete every topic's share-partition state of the share group."""
    try:
        with Admin(dict(admin_config)) as admin:
            topics = sorted({o.topic for o in admin.describe_share_group_offsets(group)})
            if topics:
                found = admin.delete_share_group_offsets(group, topics)
                _raise_first(found.values(), name, "reset")
    except GroupIdNotFoundError:
        pass  # as Connect: a group already deleted is reset
    except KafkaProtocolError as exc:
        _raise_first([exc.code], name, "reset")
        raise
    return {"message": RESET}


def _raise_first(codes: Any, name: str, verb: str) -> None:
    for code in codes:
        if code in _BUSY:
            raise HerderError(_ZOMBIES.format(verb=verb, name=name))
        if code not in (ErrorCode.NONE, ErrorCode.GROUP_ID_NOT_FOUND):
            raise HerderError(
                f"Failed to {verb} consumer group offsets for connector {name}: "
                f"{ErrorCode(code).name}"
            )
