"""Reading topics back with stock confluent-kafka (librdkafka) consumers."""

from __future__ import annotations

import time
import uuid
from typing import Any

from confluent_kafka import Consumer, TopicPartition


def fresh_consumer(bootstrap: str, prefix: str, settings: dict[str, Any] | None = None) -> Any:
    """A stock consumer in a new group of its own (``prefix``-random) that commits nothing."""
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{prefix}-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            **(settings or {}),
        }
    )


def read_messages(
    bootstrap: str,
    topic: str,
    partitions: int,
    isolation: str,
    expect_at_least: int,
    *,
    first_idle_s: float,
    timeout_s: float,
) -> list[Any]:
    """Every message of ``topic``'s partitions from offset 0, read at ``isolation``.

    Reads until at least ``expect_at_least`` arrived and then nothing more for 1.5 s (or for
    ``first_idle_s`` when nothing came at all), so that extra (duplicate or uncommitted)
    records would be seen too; ``timeout_s`` at the most.
    """
    consumer = fresh_consumer(
        bootstrap, "verify", {"isolation.level": isolation, "fetch.wait.max.ms": 50}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[Any] = []
    idle_deadline = time.monotonic() + first_idle_s
    hard_deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < hard_deadline:
            got = [m for m in consumer.consume(500, 0.2) if m.error() is None]
            out.extend(got)
            if got:
                idle_deadline = time.monotonic() + 1.5
            elif len(out) >= expect_at_least and time.monotonic() > idle_deadline:
                break
    finally:
        consumer.close()
    return out
