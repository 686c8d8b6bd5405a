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

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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

# The exports are imported on first use (PEP 562): importing a submodule (say
# ``producer.spark.source`` in one of the Python processes Spark starts for a query)
# then costs only what that submodule needs, not every client and the protocol library.
_EXPORTS: dict[str, str] = {
    "AcknowledgeType": "producer.protocol.types",
    "Admin": "producer.admin",
    "ConcurrentAccessError": "producer.consumer.share_consumer",
    "ConsumerGroupMetadata": "producer.protocol.types",
    "GroupConsumer": "producer.consumer.group_consumer",
    "IllegalStateError": "txn.errors",
    "PreparedTxnState": "producer.protocol.types",
    "Record": "producer.protocol.types",
    "RecordMetadata": "producer.produce.transactional_producer",
    "ShareAckBatch": "producer.protocol.types",
    "ShareAcknowledgements": "producer.protocol.types",
    "ShareConsumer": "producer.consumer.share_consumer",
    "ShareGroupMetadata": "producer.protocol.types",
    "TransactionalProducer": "producer.produce.transactional_producer",
}


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


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
