"""Exactly-once vs at-least-once: the cost of the two-phase commit in a Spark query.

One run, one broker (127.0.0.1, default config: fsync on every append), one local
SparkSession (``--master``, local[2] by default).  The same enrichment query
(``producer.spark.job.enrich``) over the same input (``--records`` values on 3
partitions, written once per mode to a fresh topic) with the same ``kafka-share``
source, and two sinks:

* **eos**: ``ExactlyOnce``: one prepared transaction per output partition, receipts
  verified, ``intents/N.json``, commit after Spark's ``commits/N``.
* **alo**: at least once, the yardstick: each partition written by an idempotent
  producer and flushed, then the read transactions committed at once inside
  ``foreachBatch`` (acknowledge after writing; a crash in between duplicates).

Batches hold about ``--per-task`` x 3 records (10,000 by default, the issue's figure);
the broker runs with ``group.share.partition.max.record.locks=10000`` (Kafka's default,
2000 in flight per partition, would cap a batch at 6,000).
Reported per mode: records/s over the whole drain and the mean batch duration
(Spark's ``batchDuration``) without the first batch (JVM and worker warm-up); the
ratios eos/alo are printed at the end.  Modes alternate for ``--rounds`` rounds and the
medians are compared.  Both outputs are checked with a stock read_committed consumer:
every input exactly once.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from coordinator.launcher import LocalBroker
from producer.spark import ExactlyOnce
from producer.spark.demo import BROKER_CONFIG, prepare_input, verify
from producer.spark.job import JobConfig, enrich, read_stream, spark_session
from producer.spark.resolve import Connection
from producer.spark.source import RECEIPT_COLUMNS
from producer.transactional_producer import TransactionalProducer


def _plain_writer(bootstrap: str, topic: str):  # type: ignore[no-untyped-def]
    def write(rows: Iterable[Any]) -> Iterator[int]:
        producer = TransactionalProducer({"bootstrap.servers": bootstrap})
        sent = 0
        try:
            for row in rows:
                value = row[1].encode() if isinstance(row[1], str) else row[1]
                producer.send(topic, value, key=row[0])
                sent += 1
            producer.flush()
        finally:
            producer.close()
        yield sent

    return write


def _commit_reads(bootstrap: str, receipts: list[Any]) -> None:
    conn = Connection(bootstrap)
    for r in receipts:
        producer = TransactionalProducer.resume(
            str(r[1]), int(r[2]), int(r[3]), conn.producer_config()
        )
        try:
            producer.commit_transaction()
        finally:
            producer.close()


def run_mode(
    spark: SparkSession, bootstrap: str, mode: str, args: argparse.Namespace
) -> dict[str, float]:
    tag = uuid.uuid4().hex[:6]
    topic, output, group = f"in-{mode}-{tag}", f"out-{mode}-{tag}", f"g-{mode}-{tag}"
    prepare_input(bootstrap, args.records, topic=topic, output=output)
    checkpoint = str(Path(tempfile.mkdtemp(prefix=f"bench-{mode}-")))
    cfg = JobConfig(
        bootstrap_servers=bootstrap,
        group_id=group,
        input_topic=topic,
        output_topic=output,
        checkpoint=checkpoint,
        prefix=f"bench-{mode}",
        max_records_per_partition=args.per_task,
        num_partitions=3,
        trigger_interval="0 seconds",
    )
    if mode == "eos":
        eos = ExactlyOnce(bootstrap, checkpoint, transactional_id_prefix=cfg.prefix)

        def batch_fn(df: DataFrame, batch_id: int) -> None:
            eos.write(enrich(df), output, key_col="key", value_col="value")

        sink = eos.wrap(batch_fn)
    else:

        def sink(df: DataFrame, batch_id: int) -> None:
            cached = df.persist()
            try:
                receipts = cached.select(*RECEIPT_COLUMNS).distinct().collect()
                enrich(cached).rdd.mapPartitions(_plain_writer(bootstrap, output)).collect()
                _commit_reads(bootstrap, receipts)
            finally:
                cached.unpersist()

    started = time.monotonic()
    query = (
        read_stream(spark, cfg)
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="0 seconds")
        .start()
    )
    try:
        while True:
            progress = [p for p in query.recentProgress if p.numInputRows > 0]
            if sum(p.numInputRows for p in progress) >= args.records:
                break
            if query.exception() is not None:
                raise query.exception()
            if time.monotonic() - started > args.timeout:
                raise TimeoutError(mode)
            time.sleep(0.2)
        elapsed = time.monotonic() - started
    finally:
        query.stop()
        if mode == "eos":
            eos.close(spark)
    verdict = verify(
        bootstrap, args.records, topic=topic, output=output, group=group, prefix=cfg.prefix
    )
    if verdict.duplicates or verdict.lost:
        sys.exit(f"{mode}: not exactly once: {verdict}")
    durations = [p.batchDuration for p in progress[1:]] or [progress[0].batchDuration]
    return {
        "records_per_s": args.records / elapsed,
        "batch_ms": statistics.mean(durations),
        "batches": len(progress),
        "rows_per_batch": statistics.mean(p.numInputRows for p in progress),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=60_000)
    parser.add_argument("--per-task", type=int, default=3_334, help="maxRecordsPerPartition")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args()
    results: dict[str, list[dict[str, float]]] = {"alo": [], "eos": []}
    with (
        tempfile.TemporaryDirectory() as data,
        LocalBroker(data_dir=Path(data), config=BROKER_CONFIG) as broker,
    ):
        spark = spark_session(args.master)
        try:
            for r in range(args.rounds):
                for mode in ("alo", "eos") if r % 2 == 0 else ("eos", "alo"):
                    res = run_mode(spark, broker.bootstrap_servers, mode, args)
                    results[mode].append(res)
                    print(
                        f"round {r} {mode}: {res['records_per_s']:,.0f} records/s, "
                        f"mean batch {res['batch_ms']:,.0f} ms over {res['batches']} batches "
                        f"of ~{res['rows_per_batch']:,.0f} rows",
                        flush=True,
                    )
        finally:
            spark.stop()
    med = {
        m: {k: statistics.median(x[k] for x in rs) for k in ("records_per_s", "batch_ms")}
        for m, rs in results.items()
    }
    print()
    print(f"{'mode':<6}{'records/s':>12}{'mean batch ms':>16}")
    for m in ("alo", "eos"):
        print(f"{m:<6}{med[m]['records_per_s']:>12,.0f}{med[m]['batch_ms']:>16,.0f}")
    print(
        f"eos/alo: throughput {med['eos']['records_per_s'] / med['alo']['records_per_s']:.2f}x, "
        f"batch time {med['eos']['batch_ms'] / med['alo']['batch_ms']:.2f}x (goal <= 1.25x)"
    )


if __name__ == "__main__":
    main()
