"""Helpers of the sink-worker tests: a broker with short timeouts, topics, a stock verifier."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from confluent_kafka import Producer

from producer.admin import Admin, TopicSpec
from tests.stock_reads import read_messages

# Short lock, session and transaction clean-up bounds so kills resolve in seconds.
BROKER_CONFIG = {
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.min.session.timeout.ms": "2000",
    "group.share.min.heartbeat.interval.ms": "500",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
}
LOCK_TIMEOUT_MS = 2000


def new_names(prefix: str = "s") -> tuple[str, str]:
    """A fresh (topic, connector name)."""
    suffix = uuid.uuid4().hex[:6]
    return f"{prefix}-in-{suffix}", f"{prefix}-{suffix}"


def create_topics(bootstrap: str, *specs: tuple[str, int]) -> None:
    with Admin(bootstrap) as admin:
        admin.create_topics([TopicSpec(name, partitions) for name, partitions in specs])


def fast_group(bootstrap: str, group: str) -> None:
    """A short session so a killed worker leaves the group in seconds."""
    with Admin(bootstrap) as admin:
        admin.alter_group_configs(
            group, {"share.session.timeout.ms": "2000", "share.heartbeat.interval.ms": "500"}
        )


def produce(bootstrap: str, topic: str, values: list[str], *, batch: int = 0) -> None:
    """Produce ``values`` (keyed by index); ``batch``: at most this many records per batch.

    Share groups acquire whole batches, so small batches let several workers share a topic.
    """
    stock = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i, value in enumerate(values):
        stock.produce(topic, value=value.encode(), key=str(i).encode())
        if batch and (i + 1) % batch == 0:
            assert stock.flush(15) == 0
    assert stock.flush(15) == 0


def input_topic(
    bootstrap: str, partitions: int, values: list[str], *, batch: int = 0, fast: bool = False
) -> tuple[str, str]:
    """A fresh (topic, connector name), the topic holding ``values`` (see ``produce``).

    ``fast``: the connector's group gets a short session (``fast_group``).
    """
    topic, name = new_names()
    create_topics(bootstrap, (topic, partitions))
    if fast:
        fast_group(bootstrap, f"connect-{name}")
    produce(bootstrap, topic, values, batch=batch)
    return topic, name


def sink_config(bootstrap: str, name: str, topic: str, **extra: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "consumer.group.protocol": "share",
        "name": name,
        "topics": topic,
        "share.acquisition.lock.timeout.ms": str(LOCK_TIMEOUT_MS),
        "consumer.override.fetch.max.wait.ms": "100",
        **extra,
    }


def eos_topics(bootstrap: str, partitions: int, target_partitions: int) -> tuple[str, str, str]:
    """(topic, connector name, target topic): new input and output topics for a copying sink."""
    topic, name = new_names("eos")
    target = f"{topic}-out"
    create_topics(bootstrap, (topic, partitions), (target, target_partitions))
    return topic, name, target


def eos_sink_config(
    bootstrap: str, name: str, topic: str, target: str, **extra: str
) -> dict[str, str]:
    """A ``KafkaTopicSink`` connector copying ``topic`` to ``target`` exactly once."""
    return sink_config(
        bootstrap,
        name,
        topic,
        **{
            "connector.class": "producer.sink.KafkaTopicSink",
            "target.topic": target,
            "share.delivery.semantics": "exactly-once",
            **extra,
        },
    )


def wait_for(predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.1)


def lines(path: Any) -> list[str]:
    try:
        with open(path, encoding="utf-8") as f:
            return [line.rstrip("\n") for line in f]
    except FileNotFoundError:
        return []


def read_topic(
    bootstrap: str,
    topic: str,
    partitions: int,
    expect_at_least: int,
    isolation: str = "read_committed",
    timeout_s: float = 30,
) -> list[Any]:
    """Every message of the topic (stock confluent-kafka consumer), with headers."""
    return read_messages(
        bootstrap,
        topic,
        partitions,
        isolation,
        expect_at_least,
        first_idle_s=2,
        timeout_s=timeout_s,
    )
