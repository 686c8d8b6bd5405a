"""Batches our producer compresses are read by librdkafka, with every codec Kafka has."""

from __future__ import annotations

import pytest

from coordinator.launcher import LocalBroker
from producer import TransactionalProducer
from tests.interop.test_stock_clients import create_topic, read_all

pytestmark = pytest.mark.interop


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_stock_consumer_reads_our_compressed_batches(broker: LocalBroker, codec: str) -> None:
    b = broker.bootstrap_servers
    topic = f"compressed-{codec}"
    create_topic(b, topic, 2)
    producer = TransactionalProducer(
        {
            "bootstrap.servers": b,
            "transactional.id": f"zip-{codec}",
            "compression.type": codec,
            "linger.ms": 20,
        }
    )
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(500):
            producer.send(topic, f"value-{i}".encode() * 10, key=str(i).encode())
        producer.commit_transaction()
    finally:
        producer.close()
    values = read_all(b, topic, 2, "read_committed", expect_at_least=500)
    assert sorted(values) == sorted(f"value-{i}".encode() * 10 for i in range(500))


def test_unknown_compression_type_is_refused() -> None:
    with pytest.raises(ValueError, match=r"compression\.type"):
        TransactionalProducer({"bootstrap.servers": "127.0.0.1:9", "compression.type": "brotli"})
