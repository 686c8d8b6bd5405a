"""Identifiers shared by every layer."""

from __future__ import annotations

from typing import NamedTuple, NewType

ProducerId = NewType("ProducerId", int)
ProducerEpoch = NewType("ProducerEpoch", int)

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1

# FindCoordinator key types (KIP-932 added SHARE: key "group:topicId:partition").
KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1
KEY_TYPE_SHARE = 2

TRANSACTION_STATE_TOPIC = "__transaction_state"
SHARE_GROUP_STATE_TOPIC = "__share_group_state"
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
INTERNAL_TOPICS = frozenset(
    {TRANSACTION_STATE_TOPIC, SHARE_GROUP_STATE_TOPIC, CLUSTER_METADATA_TOPIC}
)


class TopicPartition(NamedTuple):
    """A (topic name, partition index) pair."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"
