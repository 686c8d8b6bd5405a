"""Retention and compaction benchmark (issue 18).

1. Broker start time against history length: a compacted topic holding the same live state
   (``--keys`` keys) after 1x, 10x and 100x as many writes, once compacted (the cleaner ran)
   and once not (``log.cleaner.enable=false``).  Start time is from process start to the
   port answering (``LocalBroker.start``), the median of ``--rounds``.
2. Produce throughput while the cleaner runs, as a ratio of the same produce with the
   cleaner off: keyed 100-byte records to a compacted topic with small segments and a
   cleaner pass every 200 ms.

Usage: ``python bench/retention.py [--keys 2000] [--rounds 3]``.  Figures in
docs/performance.md.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from coordinator.launcher import LocalBroker

TOPIC = "table"


def _create(bootstrap: str, configs: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, 1, 1, config=configs)]).values():
        future.result(30)


def _produce(bootstrap: str, keys: int, total: int) -> float:
    """Write ``total`` keyed records over ``keys`` keys; records per second."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    value = b"x" * 100
    start = time.perf_counter()
    for i in range(total):
        while True:
            try:
                producer.produce(TOPIC, value, key=b"key-%d" % (i % keys))
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    producer.flush(120)
    return total / (time.perf_counter() - start)


def _start_time(data_dir: Path, config: dict[str, str], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        broker = LocalBroker(data_dir=data_dir, config=config)
        begin = time.perf_counter()
        broker.start()
        times.append(time.perf_counter() - begin)
        broker.stop()
    return statistics.median(times)


def start_times(keys: int, rounds: int) -> None:
    print(f"start time, {keys} live keys (median of {rounds}):")
    print("history  compacted  not compacted")
    configs = {
        "cleanup.policy": "compact",
        "segment.bytes": "1048576",
        "min.cleanable.dirty.ratio": "0.01",
    }
    for factor in (1, 10, 100):
        row = []
        for cleaner in (True, False):
            with tempfile.TemporaryDirectory() as tmp:
                data = Path(tmp)
                config = {
                    "log.cleaner.enable": str(cleaner).lower(),
                    "log.cleaner.backoff.ms": "500",
                }
                with LocalBroker(data_dir=data, config=config) as broker:
                    _create(broker.bootstrap_servers, configs)
                    _produce(broker.bootstrap_servers, keys, keys * factor)
                    time.sleep(3 if cleaner else 0)  # let the cleaner catch up
                row.append(_start_time(data, config, rounds))
        print(f"{factor:>5}x  {row[0]:>8.3f}s  {row[1]:>12.3f}s")


def throughput(keys: int, rounds: int) -> None:
    configs = {
        "cleanup.policy": "compact",
        "segment.bytes": "262144",
        "min.cleanable.dirty.ratio": "0.01",
    }
    rates: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(rounds):
        for cleaner in (True, False):
            config = {"log.cleaner.enable": str(cleaner).lower(), "log.cleaner.backoff.ms": "200"}
            with LocalBroker(config=config) as broker:
                _create(broker.bootstrap_servers, configs)
                rates[cleaner].append(_produce(broker.bootstrap_servers, keys, 100_000))
    on, off = statistics.median(rates[True]), statistics.median(rates[False])
    print(
        f"produce with the cleaner: {on:,.0f} rec/s; without: {off:,.0f} rec/s; "
        f"ratio {on / off:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    start_times(args.keys, args.rounds)
    throughput(args.keys, args.rounds)


if __name__ == "__main__":
    main()
