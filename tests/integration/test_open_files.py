"""More partitions than the open-file limit: segment files are opened on demand through a
bounded cache, so a broker starts, serves and restarts on its data directory whatever
``ulimit -n`` (issue: resources that cannot brick the broker)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from coordinator.launcher import LocalBroker

pytestmark = pytest.mark.integration

Layout = list[tuple[str, int]]  # (topic, partitions)


def create(bootstrap: str, layout: Layout) -> None:
    """Create the topics, a few per CreateTopics (Kafka refuses 10,000 records per request)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for first in range(0, len(layout), 5):
        new = [NewTopic(name, count, 1) for name, count in layout[first : first + 5]]
        for future in admin.create_topics(new, operation_timeout=60).values():
            future.result(timeout=120)


def value(topic: str, partition: int) -> bytes:
    return f"{topic}/{partition}".encode()


def produce_one_each(bootstrap: str, layout: Layout) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20})
    failed: list[KafkaError] = []

    def delivered(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            failed.append(err)

    for topic, count in layout:
        for partition in range(count):
            producer.produce(
                topic, value(topic, partition), partition=partition, on_delivery=delivered
            )
            producer.poll(0)
    producer.flush(120)
    assert len(producer) == 0
    assert failed == []


def read_all(bootstrap: str, layout: Layout) -> dict[tuple[str, int], bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "reader",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    wanted = sum(count for _topic, count in layout)
    got: dict[tuple[str, int], bytes] = {}
    try:
        consumer.assign([TopicPartition(t, p, 0) for t, count in layout for p in range(count)])
        deadline = time.monotonic() + 120
        while len(got) < wanted and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=10_000, timeout=1.0):
                if msg.error() is None:
                    got[(msg.topic() or "", msg.partition() or 0)] = msg.value() or b""
    finally:
        consumer.close()
    return got


def broker_figures(broker: LocalBroker) -> tuple[int, int]:
    """(open descriptors, resident kB) of the broker process."""
    assert broker.process is not None
    pid = broker.process.pid
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    status = Path(f"/proc/{pid}/status").read_text()
    rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS"))
    return fds, rss


def start_serve_restart(data: Path, layout: Layout, limit: int) -> None:
    total = sum(count for _topic, count in layout)
    broker = LocalBroker(data_dir=data, open_files=limit, startup_timeout_s=120)
    with broker:
        create(broker.bootstrap_servers, layout)
        produce_one_each(broker.bootstrap_servers, layout)
        fds, rss = broker_figures(broker)
        assert fds < limit
        print(f"\n{total} partitions, ulimit -n {limit}: serving with {fds} fds, {rss} kB RSS")
        broker.stop()
        began = time.monotonic()
        broker.start()
        started = time.monotonic() - began
        fds, rss = broker_figures(broker)
        print(f"restart {started:.1f} s, then {fds} fds, {rss} kB RSS")
        assert fds < limit
        got = read_all(broker.bootstrap_servers, layout)
        expected = {(t, p): value(t, p) for t, count in layout for p in range(count)}
        assert got == expected
        fds, rss = broker_figures(broker)
        print(f"after reading everything back: {fds} fds, {rss} kB RSS")
        assert fds < limit


def test_more_partitions_than_the_open_file_limit(tmp_path: Path) -> None:
    # 1,200 partitions under a limit of 1,100: before segment files were cached, 600 did not fit
    start_serve_restart(tmp_path / "data", [("wide", 700), ("wider", 500)], 1100)


def test_ten_thousand_partitions_under_ulimit_4096(tmp_path: Path) -> None:
    layout = [(f"topic-{n}", 1000) for n in range(10)]
    start_serve_restart(tmp_path / "data", layout, 4096)
