"""Writing records for the benchmarks and checking that the broker holds exactly them.

* ``idempotent_producer``: the benchmarks' producer (idempotent, ``acks=all``, ``linger.ms=5``)
  and the list its error callback fills;
* ``Counter``: delivery reports, with the gaps a batch written twice (or lost) would leave;
* ``produce_n``: ``n`` records written as fast as the producer's queue takes them;
* ``watermarks``/``high_watermark_sum``: what the log holds, read back;
* ``produce_topic``: a new topic written and checked (``Topic``: its name and high watermarks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import toolkit  # bench/toolkit.py, next to this file: the shared measurement plumbing
from confluent_kafka import Consumer, Producer, TopicPartition


def idempotent_producer(
    bootstrap: str, logger: str = "bench.rdkafka", **extra: Any
) -> tuple[Producer, list[str]]:
    errors: list[str] = []
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "enable.idempotence": True,
        "linger.ms": 5,
        "acks": "all",
        "error_cb": lambda err: errors.append(str(err)),
        "logger": toolkit.quiet_logger(logger),
        **extra,
    }
    return Producer(config), errors


class Counter:
    """Delivery-report counters (the callback runs in the producing thread's poll).

    Keeps, per partition, the lowest and highest offset acknowledged and how many: a
    broker that wrote a batch twice (or lost one) leaves a gap in the acknowledged offsets.
    """

    def __init__(self) -> None:
        self.ok = 0
        self.failed = 0
        self.first_error: str | None = None
        self.ranges: dict[int, list[int]] = {}

    def __call__(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.failed += 1
            if self.first_error is None:
                self.first_error = str(err)
            return
        self.ok += 1
        offset = msg.offset()
        span = self.ranges.get(msg.partition())
        if span is None:
            self.ranges[msg.partition()] = [offset, offset, 1]
            return
        if offset < span[0]:
            span[0] = offset
        elif offset > span[1]:
            span[1] = offset
        span[2] += 1

    def gaps(self) -> list[str]:
        """Partitions whose acknowledged offsets are not one contiguous run."""
        return [
            f"partition {p}: {n} records acknowledged over offsets {lo}..{hi}"
            for p, (lo, hi, n) in sorted(self.ranges.items())
            if hi - lo + 1 != n
        ]


def produce_n(producer: Producer, topic: str, value: bytes, n: int, counter: Counter) -> None:
    produce = producer.produce
    poll = producer.poll
    i = 0
    while i < n:
        try:
            produce(topic, value, on_delivery=counter)
        except BufferError:
            poll(0.005)
            continue
        i += 1
        if not i & 255:
            poll(0)


def watermarks(
    bootstrap: str, topic: str, partitions: int, logger: str = "bench.rdkafka"
) -> list[tuple[int, int]]:
    """(low, high) watermark of each partition of ``topic``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-watermarks",
            "enable.auto.commit": False,
            "logger": toolkit.quiet_logger(logger),
        }
    )
    try:
        return [
            consumer.get_watermark_offsets(TopicPartition(topic, index), timeout=10)
            for index in range(partitions)
        ]
    finally:
        consumer.close()


def high_watermark_sum(bootstrap: str, topic: str, partitions: int) -> int:
    """How many records the partitions of ``topic`` hold."""
    return sum(high - low for low, high in watermarks(bootstrap, topic, partitions))


@dataclass
class Topic:
    name: str
    high_watermarks: list[int]  # per partition (log start is 0)

    @property
    def records(self) -> int:
        return sum(self.high_watermarks)


def produce_topic(
    bootstrap: str, name: str, partitions: int, records: int, value: bytes, **extra: Any
) -> Topic:
    """Create ``name`` and write ``records`` values to it; checks the log holds exactly them."""
    toolkit.create_topics(bootstrap, [name], partitions)
    logger = "bench.share.rdkafka"
    producer, errors = idempotent_producer(bootstrap, logger, **extra)
    counter = Counter()
    produce_n(producer, name, value, records, counter)
    remaining = producer.flush(120)
    if remaining or counter.failed or errors or counter.ok != records or counter.gaps():
        raise toolkit.CheckFailed(
            f"writing {name}: {counter.ok}/{records} delivered, {counter.failed} failed "
            f"({counter.first_error}), {remaining} pending, errors {errors[:3]}, "
            f"gaps {counter.gaps()}"
        )
    hws = []
    for index, (low, high) in enumerate(watermarks(bootstrap, name, partitions, logger)):
        if low != 0:
            raise toolkit.CheckFailed(f"{name}-{index}: log starts at {low}, expected 0")
        hws.append(high)
    if sum(hws) != records:
        raise toolkit.CheckFailed(f"{name}: log holds {sum(hws)} records, {records} were produced")
    return Topic(name, hws)
