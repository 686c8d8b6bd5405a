"""The sharetxn client library: speaks the Kafka protocol to any broker.

    from producer import (
        TransactionalProducer, ShareConsumer, Admin,
        AcknowledgeType, PreparedTxnState, ShareAcknowledgements,
    )

``GroupConsumer`` reads with a consumer group (KIP-848);
``TransactionalProducer`` puts share acknowledgements into a Kafka transaction
(KIP-1289) and supports two-phase commit (KIP-939 prepare/complete, KIP-1310
resume); ``ShareConsumer`` reads share groups in ``implicit``, ``explicit``
or ``transactional`` acknowledgement mode; ``Admin`` administers topics,
transactions and share groups.  See docs/client.md.
"""

from producer.admin import Admin
from producer.consumer.group_consumer import GroupConsumer
from producer.consumer.share_consumer import ConcurrentAccessError, ShareConsumer
from producer.produce.transactional_producer import RecordMetadata, TransactionalProducer
from producer.protocol.types import (
    AcknowledgeType,
    ConsumerGroupMetadata,
    PreparedTxnState,
    Record,
    ShareAckBatch,
    ShareAcknowledgements,
    ShareGroupMetadata,
)
from txn.errors import IllegalStateError

__all__ = [
    "AcknowledgeType",
    "Admin",
    "ConcurrentAccessError",
    "ConsumerGroupMetadata",
    "GroupConsumer",
    "IllegalStateError",
    "PreparedTxnState",
    "Record",
    "RecordMetadata",
    "ShareAckBatch",
    "ShareAcknowledgements",
    "ShareConsumer",
    "ShareGroupMetadata",
    "TransactionalProducer",
]
