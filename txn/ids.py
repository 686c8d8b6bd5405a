"""Identifiers shared by every layer."""

from __future__ import annotations

import uuid
from typing import NamedTuple, NewType

ProducerId = NewType("ProducerId", int)
ProducerEpoch = NewType("ProducerEpoch", int)

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1

# FindCoordinator key types (KIP-932 added SHARE: key "group:topicId:partition").
KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1
KEY_TYPE_SHARE = 2

GROUP_METADATA_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
SHARE_GROUP_STATE_TOPIC = "__share_group_state"
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
#: Where older versions kept the producer id blocks (now in ``__cluster_metadata``, as
#: Kafka's ProducerIdsRecord): read once and removed on load (``coordinator.producer_ids``).
#: An ordinary topic name, as in Kafka.
LEGACY_PRODUCER_IDS_LOG = "__producer_ids"

# The reserved topic names: the broker's own logs, kept in the data directory under these
# topic-partition names.  No client creates, writes, deletes, re-partitions or re-configures
# a topic of these names; a client changes a coordinator's state only through its APIs.
#: Apache Kafka's internal topics (its ``Topic.INTERNAL_TOPICS``): Metadata calls them
#: internal, Produce and DeleteRecords answer INVALID_TOPIC_EXCEPTION, CreateTopics
#: TOPIC_ALREADY_EXISTS.
KAFKA_INTERNAL_TOPICS = frozenset(
    {GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_GROUP_STATE_TOPIC}
)
#: sharetxn's private log, which no client sees, as Kafka's ``__cluster_metadata`` (the
#: topics and the producer id blocks): CreateTopics answers INVALID_REQUEST, every other API
#: UNKNOWN_TOPIC_OR_PARTITION.
PRIVATE_TOPICS = frozenset({CLUSTER_METADATA_TOPIC})
RESERVED_TOPICS = KAFKA_INTERNAL_TOPICS | PRIVATE_TOPICS


def is_reserved_topic(name: str | None) -> bool:
    """Whether ``name`` is one of the broker's own logs (never a client's topic)."""
    return name in RESERVED_TOPICS


class TopicPartition(NamedTuple):
    """A (topic name, partition index) pair."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class TopicIdPartition(NamedTuple):
    """A (topic id, partition index) pair: a partition as share groups address it."""

    topic_id: uuid.UUID
    partition: int
