"""Exactly-once vs at-least-once: what the two-phase commit costs in a Spark query.

One run, one broker (127.0.0.1, default config: fsync on every append), one local
SparkSession (``--master``, local[2] by default).  The same enrichment query
(``producer.spark.job.enrich``) over the same input (``--records`` values on 3
partitions, written once per mode to a fresh topic), three pipelines:

* **eos**: ``format("kafka-share")`` into ``ExactlyOnce``: one prepared transaction per
  read task and per output partition, receipts verified, ``intents/N.json``, commit
  after Spark's ``commits/N``.
* **kafka**: the baseline users run today, at least once: Spark's built-in Kafka source
  (``format("kafka")``, ``maxOffsetsPerTrigger`` = the eos batch size) feeding
  ``df.write.format("kafka")`` in ``foreachBatch``; the connector's jars are resolved
  with mvn (``bench/spark_kafka_jars.py``).  ``delivery_count`` is the literal 1.
* **alo** (``--modes``): the ``kafka-share`` source with an at-least-once sink: each
  partition written by an idempotent producer and flushed, then the read transactions
  committed inside ``foreachBatch``.
* **kafka-eos**: Spark's built-in Kafka source (as in **kafka**) into ``ExactlyOnce``:
  the case of a cluster without KIP-1289, where only the write side is transactional.

``--cluster kafka`` runs the stock-Kafka comparison on one Apache Kafka 4.4 node of the
reference harness (``tests/reference/kafka.py``, stock settings: no KIP-939, so the write
transactions are timeout-bounded) instead of sharetxn: modes **kafka** and **kafka-eos**
(the kafka-share modes need KIP-1289), ratio kafka-eos/kafka.

``--defaults`` leaves both sources' batch options unset (what a user gets: the
kafka-share source's own defaults; Spark's Kafka source without ``maxOffsetsPerTrigger``).
Otherwise a batch is one read task of up to 30,000 records (``--read-tasks`` x
``--per-task``; several read tasks of one batch starve each other, docs/spark.md
"Tuning").  The enriched batch is repartitioned in 2 for the write
(``--write-partitions``, applied to every mode, with ``--defaults`` too).  The broker runs with
``group.share.partition.max.record.locks=10000``, so a batch of the 3 partitions holds
at most 30,000 records (Kafka's default, 2,000, would cap it at 6,000).
Reported per mode: records/s over the whole drain (query start to the last record),
records/s in the steady state (the batches after the first, from the end of the first to
the end of the last: no query start, JVM or worker warm-up) and batch-duration
percentiles (Spark's ``batchDuration``, first batch left out).  Modes rotate for
``--rounds`` rounds and medians are compared; the ratios eos/kafka (and eos/alo) are
printed at the end.  Every output is checked with a stock read_committed consumer:
every input exactly once (eos), or at least once with no loss (kafka, alo).
``--json PATH`` writes every round.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession, functions

from coordinator.launcher import LocalBroker
from producer.admin import Admin
from producer.produce.transactional_producer import TransactionalProducer
from producer.spark import ExactlyOnce
from producer.spark.demo import BROKER_CONFIG, input_value, prepare_input, read_committed, verify
from producer.spark.job import JobConfig, enrich, read_stream, spark_session
from producer.spark.resolve import Connection
from producer.spark.source import RECEIPT_COLUMNS

sys.path.insert(0, str(Path(__file__).parent))
from spark_kafka_jars import spark_jars


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
        max_records_per_partition=None if args.defaults else args.per_task,
        num_partitions=None if args.defaults else args.read_tasks,
        trigger_interval="0 seconds",
    )
    kafka_source = mode in ("kafka", "kafka-eos")
    stream = kafka_stream(spark, cfg, args) if kafka_source else read_stream(spark, cfg)
    if mode in ("eos", "kafka-eos"):
        eos = ExactlyOnce(bootstrap, checkpoint, transactional_id_prefix=cfg.prefix)

        def batch_fn(df: DataFrame, batch_id: int) -> None:
            eos.write(transform(df, args), output, key_col="key", value_col="value")

        sink = eos.wrap(batch_fn)
    elif mode == "kafka":

        def sink(df: DataFrame, batch_id: int) -> None:
            (
                transform(df, args)
                .write.format("kafka")
                .option("kafka.bootstrap.servers", bootstrap)
                .option("topic", output)
                .save()
            )

    else:

        def sink(df: DataFrame, batch_id: int) -> None:
            cached = df.persist()
            try:
                receipts = cached.select(*RECEIPT_COLUMNS).distinct().collect()
                transform(cached, args).rdd.mapPartitions(
                    _plain_writer(bootstrap, output)
                ).collect()
                _commit_reads(bootstrap, receipts)
            finally:
                cached.unpersist()

    started = time.monotonic()
    query = (
        stream.writeStream.foreachBatch(sink)
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
        if mode in ("eos", "kafka-eos"):
            eos.close(spark)
    if mode == "kafka":
        check_at_least_once(bootstrap, args.records, output)
    elif mode == "kafka-eos":
        check_exactly_once(bootstrap, args.records, output, cfg.prefix)
    else:
        verdict = verify(
            bootstrap, args.records, topic=topic, output=output, group=group, prefix=cfg.prefix
        )
        if verdict.lost or (mode == "eos" and not verdict.exactly_once):
            sys.exit(f"{mode}: not exactly once: {verdict}")
    return summarise(progress, args.records, elapsed)


def transform(df: DataFrame, args: argparse.Namespace) -> DataFrame:
    """``enrich``, spread over ``--write-partitions`` Spark partitions if given."""
    out = enrich(df)
    return out.repartition(args.write_partitions) if args.write_partitions else out


def kafka_stream(spark: SparkSession, cfg: JobConfig, args: argparse.Namespace) -> DataFrame:
    """Spark's own Kafka source, shaped like the kafka-share source for ``enrich``."""
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", cfg.bootstrap_servers)
        .option("subscribe", cfg.input_topic)
        .option("startingOffsets", "earliest")
    )
    if not args.defaults:
        reader = reader.option("maxOffsetsPerTrigger", str(args.per_task * args.read_tasks))
    return reader.load().withColumn("delivery_count", functions.lit(1))


def check_at_least_once(bootstrap: str, records: int, output: str) -> None:
    values = read_committed(bootstrap, output)
    seen = {v.split(b"|", 1)[0].lower() for v in values}
    lost = len({input_value(i) for i in range(records)} - seen)
    if lost:
        sys.exit(f"kafka: {lost} records lost")


def check_exactly_once(bootstrap: str, records: int, output: str, prefix: str) -> None:
    values = read_committed(bootstrap, output)
    counts = Counter(v.split(b"|", 1)[0].lower() for v in values)
    expected = {input_value(i) for i in range(records)}
    duplicates = sum(c - 1 for c in counts.values() if c > 1)
    lost = len(expected - set(counts))
    with Admin(bootstrap) as admin:
        still_open = [
            t.transactional_id
            for t in admin.list_transactions()
            if t.state in ("Ongoing", "PrepareCommit", "PrepareAbort")
            and t.transactional_id.startswith(prefix)
        ]
    if duplicates or lost or len(counts) != len(expected) or still_open:
        sys.exit(f"kafka-eos: not exactly once: {duplicates} duplicates, {lost} lost, {still_open}")


@contextlib.contextmanager
def cluster(kind: str) -> Iterator[str]:
    """The brokers of one run: sharetxn (``LocalBroker``) or one Apache Kafka node."""
    with tempfile.TemporaryDirectory() as data:
        if kind == "kafka":
            from tests.reference.kafka import ReferenceKafka  # noqa: PLC0415 - optional

            with ReferenceKafka(Path(data)) as node:
                yield node.bootstrap_servers
        else:
            with LocalBroker(data_dir=Path(data), config=BROKER_CONFIG) as broker:
                yield broker.bootstrap_servers


def _end_ms(p: Any) -> float:
    start = datetime.fromisoformat(p.timestamp.replace("Z", "+00:00")).timestamp() * 1000
    return float(start + p.batchDuration)


def summarise(progress: list[Any], records: int, elapsed: float) -> dict[str, Any]:
    durations = sorted(p.batchDuration for p in progress[1:]) or [progress[0].batchDuration]
    steady_rows = sum(p.numInputRows for p in progress[1:])
    steady_ms = _end_ms(progress[-1]) - _end_ms(progress[0]) if len(progress) > 1 else 0
    phases: dict[str, float] = {}
    for p in progress[1:]:
        for k, v in (p.durationMs or {}).items():
            phases[k] = phases.get(k, 0.0) + v / max(1, len(progress) - 1)
    return {
        "records_per_s": records / elapsed,
        "steady_records_per_s": steady_rows / (steady_ms / 1000) if steady_ms > 0 else 0.0,
        "batch_ms": statistics.mean(durations),
        "batch_p50_ms": percentile(durations, 0.5),
        "batch_p90_ms": percentile(durations, 0.9),
        "batch_max_ms": durations[-1],
        "batches": len(progress),
        "rows_per_batch": statistics.mean(p.numInputRows for p in progress),
        "phases_ms": phases,
    }


def percentile(ordered: list[float], q: float) -> float:
    return float(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--per-task", type=int, default=30_000, help="maxRecordsPerPartition")
    parser.add_argument(
        "--read-tasks", type=int, default=1, help="numPartitions of the kafka-share source"
    )
    parser.add_argument(
        "--write-partitions",
        type=int,
        default=2,
        help="repartition the enriched batch before writing, 0 to keep the input's (default 2)",
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument(
        "--modes",
        default=None,
        help="comma-separated: kafka, eos, alo, kafka-eos (default kafka,eos; with "
        "--cluster kafka: kafka,kafka-eos)",
    )
    parser.add_argument(
        "--cluster",
        choices=("sharetxn", "kafka"),
        default="sharetxn",
        help="kafka: one Apache Kafka 4.4 node of the reference harness (stock settings)",
    )
    parser.add_argument(
        "--defaults",
        action="store_true",
        help="leave the sources' batch options unset (kafka-share: no maxRecordsPerPartition "
        "or numPartitions; Kafka source: no maxOffsetsPerTrigger): what a user gets",
    )
    parser.add_argument("--json", type=Path, help="write every round's figures here")
    args = parser.parse_args()
    default = "kafka,kafka-eos" if args.cluster == "kafka" else "kafka,eos"
    modes = [m.strip() for m in (args.modes or default).split(",") if m.strip()]
    if args.cluster == "kafka" and {"eos", "alo"} & set(modes):
        sys.exit("--cluster kafka: the kafka-share modes (eos, alo) need KIP-1289")
    results: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
    with cluster(args.cluster) as bootstrap:
        kafka_source = {"kafka", "kafka-eos"} & set(modes)
        conf = {"spark.jars": spark_jars()} if kafka_source else {}
        spark = spark_session(args.master, conf=conf)
        try:
            for r in range(args.rounds):
                shift = r % len(modes)
                for mode in modes[shift:] + modes[:shift]:
                    res = run_mode(spark, bootstrap, mode, args)
                    results[mode].append(res)
                    phases = ", ".join(f"{k} {v:,.0f}" for k, v in res["phases_ms"].items())
                    print(
                        f"round {r} {mode}: {res['records_per_s']:,.0f} records/s "
                        f"(steady {res['steady_records_per_s']:,.0f}), batch p50 "
                        f"{res['batch_p50_ms']:,.0f} ms p90 {res['batch_p90_ms']:,.0f} ms over "
                        f"{res['batches']} batches of ~{res['rows_per_batch']:,.0f} rows; "
                        f"mean ms: {phases}",
                        flush=True,
                    )
        finally:
            spark.stop()
    keys = ("records_per_s", "steady_records_per_s", "batch_p50_ms", "batch_p90_ms", "batch_max_ms")
    med = {m: {k: statistics.median(x[k] for x in rs) for k in keys} for m, rs in results.items()}
    print()
    print(f"{'mode':<10}{'records/s':>12}{'steady/s':>12}{'p50 ms':>9}{'p90 ms':>9}{'max ms':>9}")
    for m in modes:
        f = med[m]
        print(
            f"{m:<10}{f['records_per_s']:>12,.0f}{f['steady_records_per_s']:>12,.0f}"
            f"{f['batch_p50_ms']:>9,.0f}{f['batch_p90_ms']:>9,.0f}{f['batch_max_ms']:>9,.0f}"
        )
    for top, base in (("eos", "kafka"), ("eos", "alo"), ("kafka-eos", "kafka")):
        if top in med and base in med:
            e, b = med[top], med[base]
            # With --defaults Spark's Kafka source may drain in one batch: no steady state.
            steady = (
                f"{e['steady_records_per_s'] / b['steady_records_per_s']:.2f}x"
                if b["steady_records_per_s"]
                else "n/a"
            )
            print(
                f"{top}/{base}: throughput {e['records_per_s'] / b['records_per_s']:.2f}x, "
                f"steady {steady}, batch p50 {e['batch_p50_ms'] / b['batch_p50_ms']:.2f}x"
            )
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {"args": vars(args) | {"json": str(args.json)}, "rounds": results, "medians": med},
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
