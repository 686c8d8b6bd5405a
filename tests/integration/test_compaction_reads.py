"""A stock consumer reads a compacted topic from its start while the broker's cleaner keeps
swapping segments under it: it reads to the end, in offset order, and never stalls.

Kafka's rule (``LocalLog.read``): a fetch whose offset the cleaner removed -- the tail of a
segment, or a whole segment -- reads on from the next batch, so a consumer below the high
watermark always gets data.  An empty answer there would have the consumer fetch the same
offset forever.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from coordinator.launcher import LocalBroker
from tests.stock_reads import fresh_consumer

pytestmark = pytest.mark.interop

CLEANER = {
    "log.cleaner.backoff.ms": "200",
    "log.retention.check.interval.ms": "200",
    "log.initial.task.delay.ms": "200",
}
KEYS = 5
STALL_S = 10.0  # no record for this long while behind the end offset is a stall


def _write(producer: Producer, topic: str, index: int, latest: dict[bytes, bytes]) -> None:
    key = b"k%d" % (index % KEYS)
    value = b"v%06d-" % index + uuid.uuid4().hex.encode() * 4
    errors: list[KafkaError] = []
    producer.produce(
        topic,
        value,
        key=key,
        partition=0,
        on_delivery=lambda err, _msg: errors.append(err) if err else None,
    )
    producer.flush(10)  # one record a batch: a few records a 1000-byte segment
    assert not errors
    latest[key] = value


def _cleaned_offset(directory: Path) -> int:
    try:
        return int((directory / "cleaner-offset-checkpoint").read_text().strip())
    except (FileNotFoundError, ValueError):
        return -1


def test_a_stock_consumer_reads_a_compacted_topic_while_the_cleaner_runs(tmp_path: Path) -> None:
    with LocalBroker(data_dir=tmp_path / "data", config=CLEANER) as broker:
        bootstrap = broker.bootstrap_servers
        topic = "table"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        configs = {
            "cleanup.policy": "compact",
            "internal.segment.bytes": "1000",
            "min.cleanable.dirty.ratio": "0.01",
        }
        for future in admin.create_topics([NewTopic(topic, 1, 1, config=configs)]).values():
            future.result(30)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        latest: dict[bytes, bytes] = {}
        for index in range(300):
            _write(producer, topic, index, latest)
        directory = broker.data_dir / f"{topic}-0"
        cleaned_before = _cleaned_offset(directory)

        # More versions keep coming while the consumer reads, so the cleaner keeps passing.
        stop = threading.Event()
        written = [300]

        def keep_writing() -> None:
            while not stop.is_set():
                _write(producer, topic, written[0], latest)
                written[0] += 1
                time.sleep(0.02)

        writer = threading.Thread(target=keep_writing, daemon=True)
        writer.start()
        # One batch a fetch: the read takes many fetches, and cleaner passes land among them.
        consumer = fresh_consumer(
            bootstrap,
            "during-clean",
            {
                "max.partition.fetch.bytes": 1,
                "fetch.max.bytes": 1000,  # librdkafka's least (message.max.bytes)
                "message.max.bytes": 1000,
                "fetch.wait.max.ms": 100,
            },
        )
        seen: dict[bytes, bytes] = {}
        offsets: list[int] = []
        try:
            consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
            writing_until = time.monotonic() + 6.0
            end: int | None = None
            progress = time.monotonic()
            while end is None or not offsets or offsets[-1] < end - 1:
                if end is None and time.monotonic() > writing_until:
                    stop.set()
                    writer.join(30)
                    end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
                message = consumer.poll(0.2)
                if message is not None and message.error() is None:
                    offsets.append(message.offset())
                    seen[message.key()] = message.value()
                    progress = time.monotonic()
                elif message is not None:
                    pytest.fail(f"consumer error: {message.error()}")
                stalled = time.monotonic() - progress
                assert stalled < STALL_S, (
                    f"no record for {stalled:.1f} s after offset {offsets[-1:]}"
                )
        finally:
            stop.set()
            consumer.close()
        cleaned_after = _cleaned_offset(directory)
        assert end is not None
        assert offsets == sorted(set(offsets)), "offsets went back or repeated"
        assert offsets[-1] == end - 1
        assert seen == latest
        # The cleaner did pass during the read, and removed records before the consumer got
        # to them.
        assert cleaned_after > cleaned_before
        assert len(offsets) < written[0]
