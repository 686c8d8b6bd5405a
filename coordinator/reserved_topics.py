"""What the broker answers a client that names one of its own logs, and the start-up check.

The reserved names (``txn.ids.RESERVED_TOPICS``) are the coordinators' logs, stored under
those topic-partition names.  No client API creates, writes, deletes, re-partitions or
re-configures them; the answers follow Apache Kafka 4.4 where Kafka refuses too (Produce and
DeleteRecords to an internal topic, CreateTopics of ``__cluster_metadata``) and are
INVALID_TOPIC_EXCEPTION where Kafka would let an administrator change an internal topic
(docs/conformance.md, "Internal topics").
"""

from __future__ import annotations

from coordinator.log.data_dir import DataDirError
from coordinator.topics import TopicInfo
from txn.errors import ErrorCode
from txn.ids import (
    CLUSTER_METADATA_TOPIC,
    KAFKA_INTERNAL_TOPICS,
    PRIVATE_TOPICS,
    RESERVED_TOPICS,
)

Refusal = tuple[ErrorCode, str | None]

# Kafka's message for an unknown topic in DeleteTopics (UnknownTopicOrPartitionException).
_NOT_HOSTED = "This server does not host this topic-partition."


def create_refusal(name: str) -> Refusal | None:
    """CreateTopics: Kafka's internal topics always exist here; the private logs are
    refused as Kafka refuses ``__cluster_metadata``."""
    if name in KAFKA_INTERNAL_TOPICS:
        return ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
    if name in PRIVATE_TOPICS:
        return ErrorCode.INVALID_REQUEST, f"Creation of internal topic {name} is prohibited."
    return None


def delete_refusal(name: str) -> Refusal | None:
    """DeleteTopics (Kafka 4.4 deletes an internal topic; here it is the coordinator's log)."""
    if name in KAFKA_INTERNAL_TOPICS:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot delete internal topic {name}."
    if name in PRIVATE_TOPICS:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, _NOT_HOSTED
    return None


def partitions_refusal(name: str) -> Refusal | None:
    """CreatePartitions (Kafka 4.4 adds partitions to an internal topic; not here)."""
    if name in KAFKA_INTERNAL_TOPICS:
        return (
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Cannot change the partition count of internal topic {name}.",
        )
    if name in PRIVATE_TOPICS:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    return None


def alter_configs_refusal(name: str) -> Refusal | None:
    """IncrementalAlterConfigs on a topic (Kafka 4.4 alters an internal topic's configs)."""
    if name in KAFKA_INTERNAL_TOPICS:
        return (
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Cannot alter the configs of internal topic {name}.",
        )
    if name in PRIVATE_TOPICS:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
    return None


def write_refusal(name: str) -> ErrorCode | None:
    """Produce and DeleteRecords: Kafka's INVALID_TOPIC_EXCEPTION for an internal topic (its
    message, "Cannot append to internal topic", is not sent), UNKNOWN_TOPIC_OR_PARTITION for
    a private log (as Kafka for ``__cluster_metadata``)."""
    if name in KAFKA_INTERNAL_TOPICS:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    if name in PRIVATE_TOPICS:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return None


FORGET_CONFIG = "sharetxn.forget.client.created.internal.topics"


def client_created(topics: list[TopicInfo]) -> list[TopicInfo]:
    """The topics a client created under a reserved name (older versions allowed it)."""
    return sorted(
        (t for t in topics if t.name in RESERVED_TOPICS and not t.internal),
        key=lambda t: t.name,
    )


def refuse_client_created(bad: list[TopicInfo], data_dir: str) -> DataDirError:
    """The start-up refusal for a data directory holding ``bad`` (see ``client_created``).

    Metadata auto-creation (and Produce after it) let clients write such a topic; its
    partitions are the same files as the coordinator's own log, so what clients wrote there
    is replayed as coordinator state.  Serving on would keep that state.
    """
    lines = [
        f"data directory {data_dir} holds {len(bad)} topic(s) that a client created under"
        " the name of one of the broker's own logs (an older sharetxn let Metadata"
        " auto-create them), so clients could write into those logs:"
    ]
    for info in bad:
        dirs = ", ".join(f"{info.name}-{i}" for i in range(info.num_partitions))
        lines.append(f"  {info.name!r}: {info.num_partitions} partition(s), directories {dirs}")
    lines.append(
        "The coordinator state in those directories (committed offsets, transactions,"
        " share-group state, topic metadata or producer ids) cannot be trusted, and the"
        " broker refuses to start on it. To fix: stop every client and keep a copy of the"
        " data directory; then restore it from a backup taken before the topic appeared,"
        " or remove the directories listed above (the state in them is lost; for"
        f" {CLUSTER_METADATA_TOPIC}-0, every topic's metadata: restore a backup instead) and"
        f" start once with --set {FORGET_CONFIG}=true, which forgets the topics' records."
        ' See "Internal topics" in docs/security.md.'
    )
    return DataDirError("\n".join(lines))
