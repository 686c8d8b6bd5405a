"""The sharetxn client library: speaks the Kafka protocol to any broker.

``from producer import Admin`` administers topics, transactions and share
groups.  The transactional producer and share consumer arrive with KIP-1289.
"""

from producer.admin import Admin

__all__ = ["Admin"]
