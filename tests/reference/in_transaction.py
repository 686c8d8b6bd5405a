"""A transactional producer already inside a transaction, for the reference tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from producer import TransactionalProducer


@contextlib.contextmanager
def in_transaction(
    bootstrap: str, tid: str, topic: str, value: bytes
) -> Iterator[TransactionalProducer]:
    """A producer of ``tid`` that began a transaction and sent ``value`` to partition 0 of
    ``topic``; closed when the block ends."""
    producer = TransactionalProducer({"bootstrap.servers": bootstrap, "transactional.id": tid})
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, value, partition=0)
        yield producer
    finally:
        producer.close()
