"""``Admin``: topics, configs, transactions, consumer and share groups (like Kafka's Admin).

``client`` holds ``Admin`` and its result types; ``groups`` its consumer-group calls;
``tokens`` its delegation-token calls.
"""

from producer.admin.client import (
    CONFIG_DELETE,
    CONFIG_SET,
    RESOURCE_BROKER,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    Admin,
    ConfigEntry,
    GroupListing,
    ItemResult,
    ProducerState,
    ShareGroupDescription,
    ShareMember,
    ShareOffset,
    SharePendingAckEntry,
    SharePendingAcks,
    TopicDescription,
    TopicSpec,
    TransactionListing,
    topic_id_of,
)
from producer.admin.tokens import DelegationToken

__all__ = [
    "CONFIG_DELETE",
    "CONFIG_SET",
    "RESOURCE_BROKER",
    "RESOURCE_BROKER_LOGGER",
    "RESOURCE_GROUP",
    "RESOURCE_TOPIC",
    "Admin",
    "ConfigEntry",
    "DelegationToken",
    "GroupListing",
    "ItemResult",
    "ProducerState",
    "ShareGroupDescription",
    "ShareMember",
    "ShareOffset",
    "SharePendingAckEntry",
    "SharePendingAcks",
    "TopicDescription",
    "TopicSpec",
    "TransactionListing",
    "topic_id_of",
]
