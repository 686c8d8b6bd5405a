"""What the broker answers a client that names one of its own logs, and the start-up check.

The reserved names (``txn.ids.RESERVED_TOPICS``) are the coordinators' logs, stored under
those topic-partition names.  No client API creates, writes, deletes, re-partitions or
re-configures them; the answers follow Apache Kafka 4.4 where Kafka refuses too (Produce and
DeleteRecords to an internal topic, CreateTopics of ``__cluster_metadata``) and are
INVALID_TOPIC_EXCEPTION where Kafka would let an administrator change an internal topic
(docs/conformance.md, "Internal topics").  Metadata lists Kafka's internal topics as Kafka
lists them (``listed_internal_topic``), once Kafka would have created them
(``InternalTopics``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from coordinator.log.data_dir import DataDirError
from coordinator.log.storage import PartitionLog
from coordinator.topics import TopicInfo, TopicRegistry
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import (
    CLUSTER_METADATA_TOPIC,
    GROUP_METADATA_TOPIC,
    KAFKA_INTERNAL_TOPICS,
    LEGACY_PRODUCER_IDS_LOG,
    PRIVATE_TOPICS,
    RESERVED_TOPICS,
    SHARE_GROUP_STATE_TOPIC,
    TRANSACTION_STATE_TOPIC,
)
from txn.topic_config_defs import KEEP_PRODUCER_CODEC

Refusal = tuple[ErrorCode, str | None]

# Kafka's message for an unknown topic in DeleteTopics (UnknownTopicOrPartitionException).
_NOT_HOSTED = "This server does not host this topic-partition."


#: Kafka's internal topics as Metadata lists them, each with the broker config Kafka creates
#: it with that many partitions.
_LISTED_PARTITIONS = {
    GROUP_METADATA_TOPIC: "offsets.topic.num.partitions",
    TRANSACTION_STATE_TOPIC: "transaction.state.log.num.partitions",
    SHARE_GROUP_STATE_TOPIC: "share.coordinator.state.topic.num.partitions",
}


def _created_configs(name: str, config: BrokerConfig) -> dict[str, str]:
    """The topic configs Kafka creates internal topic ``name`` with (its coordinators')."""
    if name == TRANSACTION_STATE_TOPIC:
        return {
            "cleanup.policy": "compact",
            "compression.type": "uncompressed",
            "min.insync.replicas": str(config.get_int("transaction.state.log.min.isr")),
            "segment.bytes": str(config.get_int("transaction.state.log.segment.bytes")),
            "unclean.leader.election.enable": "false",
        }
    if name == GROUP_METADATA_TOPIC:
        policy, segment = "compact", config.get_int("offsets.topic.segment.bytes")
    else:  # KIP-932: the share coordinator prunes its log itself
        policy, segment = "delete", config.get_int("share.coordinator.state.topic.segment.bytes")
    return {
        "cleanup.policy": policy,
        "compression.type": KEEP_PRODUCER_CODEC,
        "segment.bytes": str(segment),
    }


def listed_internal_topic(name: str, config: BrokerConfig, cluster_id: str) -> TopicInfo | None:
    """How Metadata and DescribeConfigs show Kafka's internal topic ``name`` (None for any
    other name).

    As Kafka 4.4 shows it once created: ``is_internal``, the partition count of its broker
    config, the topic configs Kafka creates it with, a topic id (fixed for the cluster).
    sharetxn's coordinators keep their state in their own layout under these names
    (docs/conformance.md, "Internal topics"), so nothing more of the topic is served; its
    partitions are not readable as Kafka's.
    """
    setting = _LISTED_PARTITIONS.get(name)
    if setting is None:
        return None
    topic_id = uuid.uuid5(uuid.NAMESPACE_URL, f"sharetxn:{cluster_id}:{name}")
    configs = _created_configs(name, config)
    return TopicInfo(name, topic_id, config.get_int(setting), configs, internal=True)


class InternalTopics:
    """Which of Kafka's internal topics exist, created when Kafka 4.4 creates them.

    Kafka creates each lazily: ``__consumer_offsets`` on the first FindCoordinator for a
    group, ``__transaction_state`` on the first for a transactional id,
    ``__share_group_state`` on the first for a share-state key (its group coordinator looks
    one up before it first initializes or reads a share partition's state), and any of them
    when Metadata names it with auto-creation (``auto.create.topics.enable`` and the
    request's ``allow_auto_topic_creation``).  ``create`` records the fact in the topic
    registry's log; a topic whose coordinator log holds a record exists too (the share
    coordinator's first read writes one; a data directory from before this record).
    """

    def __init__(
        self,
        registry: TopicRegistry,
        logs: Mapping[str, Mapping[int, PartitionLog]],
        config: BrokerConfig,
    ) -> None:
        self._registry = registry
        self._logs = logs
        self._config = config

    def created(self, name: str) -> bool:
        if name not in _LISTED_PARTITIONS:
            return False
        if self._registry.internal_created(name):
            return True
        return any(log.log_end_offset > 0 for log in self._logs.get(name, {}).values())

    def create(self, name: str, now_ms: int) -> None:
        """Kafka's internal topic ``name`` is created now (if it was not)."""
        if name in _LISTED_PARTITIONS and not self.created(name):
            self._registry.mark_internal(name, now_ms)

    def listed(self, name: str, cluster_id: str) -> TopicInfo | None:
        """``listed_internal_topic(name)`` once created, else None."""
        if not self.created(name):
            return None
        return listed_internal_topic(name, self._config, cluster_id)

    def all_listed(self, cluster_id: str) -> list[TopicInfo]:
        """Every created internal topic as Metadata lists it, by name."""
        out = [self.listed(name, cluster_id) for name in sorted(_LISTED_PARTITIONS)]
        return [info for info in out if info is not None]


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


def client_created(
    topics: list[TopicInfo], *, legacy_producer_ids: bool = False
) -> list[TopicInfo]:
    """The topics a client created under a reserved name (older versions allowed it).

    ``__producer_ids`` is an ordinary name now, but where an older version's producer id log
    is still to be migrated (``legacy_producer_ids``), a topic of that name was created by a
    client of that version and shares the log's files."""
    names = RESERVED_TOPICS | ({LEGACY_PRODUCER_IDS_LOG} if legacy_producer_ids else set())
    return sorted(
        (t for t in topics if t.name in names and not t.internal),
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
