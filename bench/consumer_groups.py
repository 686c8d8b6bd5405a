"""Consumer groups: consumption, rebalance time, and offsets in transactions (issue: KIP-496).

Measured in one run on one sharetxn broker (``LocalBroker``, default flush policy) with the
stock confluent-kafka client:

* **consumption** -- a ``subscribe()`` consumer in a group that commits after every
  ``consume()`` batch of up to 1,000 records (auto-commit off; asynchronously, and
  synchronously as a second case), as a ratio of an
  ``assign()`` consumer that commits nothing, both reading the same ``--records`` 1 KB
  records from 3 partitions, timed from the first record (joining is the rebalance case).
  Interleaved over ``--rounds`` rounds; medians.
* **rebalance** -- a 3-member group (classic protocol, ``heartbeat.interval.ms=100``, broker
  ``group.initial.rebalance.delay.ms=0``) gets a 4th member: the time from its
  ``subscribe()`` until the four assignments are disjoint and cover the 6 partitions,
  ``--rebalances`` times; median and p99.
* **transactions** -- copying records topic to topic in transactions of 100 and 1,000
  records with our ``TransactionalProducer``: input read by a consumer group and committed
  with ``send_offsets_to_transaction``, as a ratio of the same copy reading a share group
  and committing ``send_share_acks_to_transaction`` (KIP-1289).

Example::

    python bench/consumer_groups.py                 # about 2 minutes on 2 cores
    python bench/consumer_groups.py --records 50000 --rounds 3 --json out.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import toolkit

from coordinator.launcher import LocalBroker
from producer import (
    Admin,
    ConsumerGroupMetadata,
    ShareConsumer,
    TransactionalProducer,
)
from txn.ids import TopicPartition as OurTopicPartition

PARTITIONS = 3
console = toolkit.make_console(100)


def make_topic(bootstrap: str, partitions: int, records: int, size: int) -> str:
    return toolkit.fill_topic(bootstrap, "bench", partitions, records, size)


def consume(
    bootstrap: str, topic: str, records: int, *, group: bool, sync_commit: bool = False
) -> float:
    """Records per second reading the whole topic once."""
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": f"bench-{uuid.uuid4().hex[:6]}",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 10,
    }
    consumer = Consumer(config)
    if group:
        consumer.subscribe([topic])
    else:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    seen = 0
    started = None  # from the first record: joining the group is measured as "rebalance"
    while seen < records:
        batch = [m for m in consumer.consume(1000, 1.0) if m.error() is None]
        if batch and started is None:
            started = time.perf_counter()
        seen += len(batch)
        if group and batch:
            consumer.commit(asynchronous=not sync_commit)
    assert started is not None
    elapsed = time.perf_counter() - started
    consumer.close()
    return records / elapsed


def rebalance_once(bootstrap: str, topic: str) -> float:
    group = f"rb-{uuid.uuid4().hex[:6]}"

    def member() -> Consumer:
        c = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "heartbeat.interval.ms": 100,
                "session.timeout.ms": 6000,
            }
        )
        c.subscribe([topic])
        return c

    members = [member() for _ in range(3)]
    _wait_cover(members)
    started = time.perf_counter()
    members.append(member())
    _wait_cover(members)
    elapsed = time.perf_counter() - started
    for c in members:
        c.close()
    return elapsed


def _wait_cover(members: list[Consumer], partitions: int = 6, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for c in members:
            c.poll(0.01)
        sets = [{tp.partition for tp in c.assignment()} for c in members]
        if all(sets) and sum(len(s) for s in sets) == partitions:
            return
    msg = "the group did not settle"
    raise RuntimeError(msg)


def copy(bootstrap: str, src: str, records: int, per_txn: int, *, share: bool) -> float:
    """Records per second copied in transactions of ``per_txn`` records."""
    dst = f"copy-{uuid.uuid4().hex[:6]}"
    group = f"cp-{uuid.uuid4().hex[:6]}"
    producer = TransactionalProducer(
        {"bootstrap.servers": bootstrap, "transactional.id": group, "linger.ms": 5}
    )
    producer.init_transactions()
    copied = 0
    if share:
        with Admin(bootstrap) as admin:
            admin.alter_group_configs(
                group,
                {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "60000"},
            )
        sc = ShareConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "share.acknowledgement.mode": "transactional",
                "max.poll.records": per_txn,
            }
        )
        sc.subscribe([src])
        started = time.perf_counter()
        while copied < records:
            batch = sc.poll(1.0)
            if not batch:
                continue
            producer.begin_transaction()
            for r in batch:
                producer.send(dst, r.value, key=r.key)
                sc.acknowledge(r)
            producer.send_share_acks_to_transaction(sc.acknowledgements(), sc.group_metadata())
            producer.commit_transaction()
            copied += len(batch)
        elapsed = time.perf_counter() - started
        sc.close()
    else:
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
            }
        )
        consumer.subscribe([src])
        started = time.perf_counter()
        while copied < records:
            batch = [m for m in consumer.consume(per_txn, 1.0) if m.error() is None]
            if not batch:
                continue
            producer.begin_transaction()
            for m in batch:
                producer.send(dst, m.value(), key=m.key())
            positions = {
                OurTopicPartition(tp.topic, tp.partition): tp.offset
                for tp in consumer.position(consumer.assignment())
                if tp.offset >= 0
            }
            producer.send_offsets_to_transaction(positions, ConsumerGroupMetadata(group))
            producer.commit_transaction()
            copied += len(batch)
        elapsed = time.perf_counter() - started
        consumer.close()
    producer.close()
    return copied / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    toolkit.add_int_options(
        parser, records=100_000, record_size=1024, rebalances=10, copy_records=20_000
    )
    args, run = toolkit.begin(parser, console, "consumer_groups.py", argv, rounds=3)
    results: dict[str, Any] = {}
    with LocalBroker(config={"group.initial.rebalance.delay.ms": "0"}) as broker:
        b = broker.bootstrap_servers
        topic = make_topic(b, PARTITIONS, args.records, args.record_size)

        def reading(group: bool, sync_commit: bool = False) -> Callable[[], float]:
            return lambda: consume(b, topic, args.records, group=group, sync_commit=sync_commit)

        cases = [
            toolkit.Series("assign", "assign()", reading(False)),
            toolkit.Series("group", "group, async commit/batch", reading(True)),
            toolkit.Series("group-sync", "group, sync commit/batch", reading(True, True)),
        ]
        console.print(f"consumption ({args.records} x {args.record_size} B, {args.rounds} rounds)")
        toolkit.measure_series(
            cases, rounds=args.rounds, retries=args.retries, console=console, unit="records/s"
        )
        assign, group, group_sync = cases
        ratios = [
            toolkit.series_ratio("group / assign() (goal >= 0.9x)", group, assign),
            toolkit.series_ratio("group, sync commits / assign()", group_sync, assign),
        ]
        console.print(toolkit.series_table("consumption", "records/s", cases))
        results["consumption"] = toolkit.series_json(cases)

        six = make_topic(b, 6, 0, 1)
        times = [rebalance_once(b, six) for _ in range(args.rebalances)]
        p99 = toolkit.pct(times, 99)
        results["rebalance_s"] = {"median": statistics.median(times), "p99": p99}
        console.print(f"rebalance of a 3-member group when a 4th joins ({args.rebalances} times)")
        console.print(f"  median {statistics.median(times) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms")

        results["copy"] = {}
        for per_txn in (100, 1000):

            def copying(share: bool, per_txn: int = per_txn) -> Callable[[], float]:
                def run() -> float:
                    src = make_topic(b, PARTITIONS, args.copy_records, 200)
                    return copy(b, src, args.copy_records, per_txn, share=share)

                return run

            copies = [
                toolkit.Series(f"offsets-{per_txn}", f"offsets, {per_txn}/txn", copying(False)),
                toolkit.Series(f"share-{per_txn}", f"share acks, {per_txn}/txn", copying(True)),
            ]
            toolkit.measure_series(
                copies, rounds=1, retries=args.retries, console=console, unit="records/s"
            )
            ratios.append(toolkit.series_ratio(f"offsets / share acks, {per_txn}/txn", *copies))
            results["copy"][per_txn] = toolkit.series_json(copies)
        run.save_with_ratios(args, console, results, ratios)
    return 0


if __name__ == "__main__":
    toolkit.main_guard(main, console)
