"""Retention and compaction benchmark (issue 18).

1. Broker start time against history length: a compacted topic holding the same live state
   (``--keys`` keys) after 1x, 10x and 100x as many writes, once compacted (the cleaner ran)
   and once not (``log.cleaner.enable=false``).  Start time is from process start to the
   port answering (``LocalBroker.start``), the median of ``--rounds``.
2. The same for the coordinator logs: ``--groups`` x ``--partitions`` committed offsets and
   ``--txn-ids`` transactional ids (the live state), after 1x, 10x and 100x as many offset
   commits and InitProducerId calls, written in-process by a ``BrokerCore`` on the data
   directory; once cleaned (``__consumer_offsets`` and ``__transaction_state`` compacted) and
   once not.  Start time as above.
3. Produce throughput while the cleaner runs, as a ratio of the same produce with the
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


INTERNAL_CONFIG = {
    "offsets.topic.segment.bytes": "65536",
    "transaction.state.log.segment.bytes": "65536",
    "log.cleaner.min.cleanable.ratio": "0.01",
}


def _write_internal_history(
    data: Path, groups: int, partitions: int, txn_ids: int, factor: int, clean: bool
) -> int:
    """Offset commits and InitProducerIds (``factor`` times the live state); the log bytes."""
    import random  # noqa: PLC0415

    from coordinator.broker import BrokerCore  # noqa: PLC0415
    from coordinator.log.file_log import FileStorage  # noqa: PLC0415
    from txn.clock import ManualClock  # noqa: PLC0415
    from txn.config import BrokerConfig  # noqa: PLC0415
    from txn.ids import TopicPartition  # noqa: PLC0415

    clock = ManualClock(int(time.time() * 1000))
    core = BrokerCore(FileStorage(data), clock, BrokerConfig(INTERNAL_CONFIG), random.Random(1))
    tps = [TopicPartition("input", p) for p in range(partitions)]
    for round_ in range(factor):
        for g in range(groups):
            offsets = {tp: (round_ * 100 + i, -1, None) for i, tp in enumerate(tps)}
            core.groups.commit_offsets(f"group-{g}", -1, "", None, offsets)
        for t in range(txn_ids):
            core.txn_coordinator.init_producer_id(f"txn-{t}", 60000)
        clock.advance(10)
    if clean:
        core.run_cleaner()
    size = sum(f.stat().st_size for f in data.rglob("*.log"))
    core.close()
    return size


def internal_start_times(groups: int, partitions: int, txn_ids: int, rounds: int) -> None:
    print(
        f"start time, coordinator logs: {groups} groups x {partitions} partitions of offsets, "
        f"{txn_ids} transactional ids (median of {rounds}):"
    )
    print("history  compacted           not compacted")
    for factor in (1, 10, 100):
        row = []
        for clean in (True, False):
            with tempfile.TemporaryDirectory() as tmp:
                data = Path(tmp)
                size = _write_internal_history(data, groups, partitions, txn_ids, factor, clean)
                config = {**INTERNAL_CONFIG, "log.cleaner.enable": "false"}
                row.append((_start_time(data, config, rounds), size))
        (t1, s1), (t2, s2) = row
        print(f"{factor:>5}x  {t1:>6.3f}s {s1 / 1e6:>6.2f} MB  {t2:>8.3f}s {s2 / 1e6:>6.2f} MB")


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
    parser.add_argument("--groups", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--txn-ids", type=int, default=50)
    parser.add_argument("--only-internal", action="store_true", help="only case 2")
    args = parser.parse_args()
    internal_start_times(args.groups, args.partitions, args.txn_ids, args.rounds)
    if args.only_internal:
        return
    start_times(args.keys, args.rounds)
    throughput(args.keys, args.rounds)


if __name__ == "__main__":
    main()
