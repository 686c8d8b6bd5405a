"""A real broker process killed with SIGKILL: nothing acknowledged is lost."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from coordinator.launcher import LocalBroker
from tests.interop.test_stock_clients import create_topic, open_transaction, read_all
from tests.kafka_wire import WireClient

pytestmark = pytest.mark.integration


def test_kill_while_producing_loses_nothing_acknowledged(tmp_path: Path) -> None:
    broker = LocalBroker(data_dir=tmp_path / "d").start()
    try:
        create_topic(broker.bootstrap_servers, "crash", 3)
        acked: list[bytes] = []
        lock = threading.Lock()

        def on_delivery(err: KafkaError | None, msg: object) -> None:
            if err is None:
                with lock:
                    acked.append(msg.value())  # type: ignore[attr-defined]

        producer = Producer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "enable.idempotence": True,
                "linger.ms": 2,
                "message.timeout.ms": 60000,
            }
        )
        for i in range(3000):
            producer.produce("crash", value=f"m{i}".encode(), on_delivery=on_delivery)
            if i == 1500:
                producer.flush(10)
                broker.kill()
                broker.start()  # same directory, same port
            producer.poll(0)
        assert producer.flush(60) == 0
        values = read_all(
            broker.bootstrap_servers, "crash", 3, "read_uncommitted", expect_at_least=len(acked)
        )
        assert set(acked) <= set(values)
        assert len(values) == len(set(values)), "idempotent producer wrote duplicates"
    finally:
        broker.stop()


def test_open_transaction_is_aborted_on_timeout_after_restart(tmp_path: Path) -> None:
    broker = LocalBroker(
        data_dir=tmp_path / "d",
        config={"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"},
    ).start()
    try:
        b = broker.bootstrap_servers
        create_topic(b, "hang", 1)
        timing_out = {"transactional.id": "hangs", "transaction.timeout.ms": 2000}
        _producer = open_transaction({"bootstrap.servers": b, **timing_out}, "hang", b"open")
        broker.kill()
        broker.start()
        consumer = Consumer(
            {"bootstrap.servers": b, "group.id": "lso", "isolation.level": "read_committed"}
        )
        deadline = time.monotonic() + 30
        lso = 0
        while time.monotonic() < deadline:
            # ListOffsets(latest) under read_committed returns the LSO.
            consumer.assign([TopicPartition("hang", 0, 0)])
            _low, high = consumer.get_watermark_offsets(
                TopicPartition("hang", 0), timeout=10, cached=False
            )
            lso = _read_committed_end(b)
            if lso == high and high >= 2:
                break
            time.sleep(0.2)
        consumer.close()
        assert lso >= 2, "the LSO did not move past the timed-out transaction"
        assert read_all(b, "hang", 1, "read_committed") == []
    finally:
        broker.stop()


def _read_committed_end(bootstrap: str) -> int:
    client = WireClient(bootstrap)
    try:
        resp = client.request(
            2,
            7,
            {
                "replica_id": -1,
                "isolation_level": 1,
                "topics": [
                    {"name": "hang", "partitions": [{"partition_index": 0, "timestamp": -1}]}
                ],
            },
        )
        return int(resp.topics[0].partitions[0].offset)
    finally:
        client.close()


def test_torn_tail_is_truncated_on_restart(tmp_path: Path) -> None:
    data = tmp_path / "d"
    broker = LocalBroker(data_dir=data).start()
    b = broker.bootstrap_servers
    create_topic(b, "torn", 1)
    producer = Producer({"bootstrap.servers": b, "linger.ms": 1})
    for i in range(10):
        producer.produce("torn", value=f"t{i}".encode())
        producer.flush(10)
    broker.stop()
    segment = sorted((data / "torn-0").glob("*.log"))[-1]
    raw = segment.read_bytes()
    # Append half of a copy of the last batch: a write torn by a crash.
    with segment.open("ab") as fh:
        fh.write(raw[:40])
    broker.start()
    try:
        assert any("truncat" in line.lower() for line in broker.output), broker.output
        values = read_all(b, "torn", 1, "read_uncommitted", expect_at_least=10)
        assert values == [f"t{i}".encode() for i in range(10)]
        producer = Producer({"bootstrap.servers": b, "linger.ms": 1})
        producer.produce("torn", value=b"after")
        assert producer.flush(10) == 0
        assert read_all(b, "torn", 1, "read_uncommitted", expect_at_least=11)[-1] == b"after"
    finally:
        broker.stop()
