"""The enrichment job: a share group in, an output topic out, exactly once.

Used by ``sharetxn demo``, the Spark tests and ``bench/spark_eos.py``; it is also the
copy-paste example of docs/spark.md.  Run as a driver process::

    python -m producer.spark.job --bootstrap-server 127.0.0.1:9092 --group enrich \\
        --input in --output out --checkpoint /tmp/chk --stop-when-drained

Each input record ``v`` becomes ``UPPER(v)|topic|partition|offset|delivery_count`` with
the same key.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession, functions

from producer.admin import Admin
from producer.spark import ExactlyOnce, register
from producer.spark.worker_python import worker_python
from producer.twophase.checkpoint_fs import is_local, local_path
from txn.ids import TopicPartition

log = logging.getLogger(__name__)

DEFAULT_MASTER = "local[2]"
#: What ``main`` prints once the query drained its input and stopped (sharetxn demo reads it).
DRAINED = "drained: "


@dataclass(frozen=True, slots=True)
class JobConfig:
    bootstrap_servers: str
    group_id: str
    input_topic: str
    output_topic: str
    checkpoint: str
    prefix: str = "sharetxn-spark"
    #: ``maxRecordsPerPartition``; None leaves it to the source's default
    max_records_per_partition: int | None = 10_000
    num_partitions: int | None = None
    trigger_interval: str = "500 milliseconds"
    starting_offsets: str | None = "earliest"
    #: ``sharetxn demo``: hold this batch after its writes are prepared, for ``hold_s``
    #: seconds, so that the demo's driver kill lands while the batch is in doubt.
    hold_batch: int | None = None
    hold_s: float = 60.0


def spark_session(
    master: str = DEFAULT_MASTER,
    app_name: str = "sharetxn-enrich",
    conf: dict[str, str] | None = None,
) -> SparkSession:
    """A local session tuned for small machines: no UI, few shuffle partitions."""
    # Python workers run this interpreter (with sharetxn installed), not whatever `python3` is,
    # importing PySpark from the installed package (producer/spark/worker_python.py).
    os.environ.setdefault("PYSPARK_PYTHON", worker_python())
    builder = SparkSession.builder
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session = (
        builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.streaming.stopTimeout", "60s")
        # Python workers forked with sharetxn imported and without re-reading PySpark's
        # zips before each task (producer/spark/worker_daemon.py, docs/spark.md "Tuning").
        .config(
            "spark.python.daemon.module",
            (conf or {}).get("spark.python.daemon.module", "producer.spark.worker_daemon"),
        )
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def enrich(df: DataFrame) -> DataFrame:
    """The transformation: upper-case the value and append where it came from."""
    return df.select(
        functions.col("key"),
        functions.concat_ws(
            "|",
            functions.upper(functions.col("value").cast("string")),
            functions.col("topic"),
            functions.col("partition").cast("string"),
            functions.col("offset").cast("string"),
            functions.col("delivery_count").cast("string"),
        ).alias("value"),
    )


def exactly_once(cfg: JobConfig) -> ExactlyOnce:
    """The job's one configuration of the source, the sink and the checkpoint."""
    return ExactlyOnce(
        bootstrap_servers=cfg.bootstrap_servers,
        checkpoint_location=cfg.checkpoint,
        transactional_id_prefix=cfg.prefix,
    )


def read_stream(spark: SparkSession, cfg: JobConfig, eos: ExactlyOnce | None = None) -> DataFrame:
    options: dict[str, str] = {}
    if cfg.max_records_per_partition is not None:
        options["maxRecordsPerPartition"] = str(cfg.max_records_per_partition)
    if cfg.num_partitions is not None:
        options["numPartitions"] = str(cfg.num_partitions)
    if cfg.starting_offsets is not None:
        options["startingOffsets"] = cfg.starting_offsets
    return (eos or exactly_once(cfg)).read_stream(
        spark, subscribe=cfg.input_topic, group_id=cfg.group_id, **options
    )


def start(
    spark: SparkSession,
    cfg: JobConfig,
    *,
    transform: Callable[[DataFrame], DataFrame] = enrich,
) -> tuple[Any, ExactlyOnce]:
    """Start the exactly-once query; returns (StreamingQuery, sink)."""
    register(spark)
    eos = exactly_once(cfg)

    def write_batch(df: DataFrame, batch_id: int) -> None:
        eos.write(transform(df), cfg.output_topic, key_col="key", value_col="value")
        if batch_id == cfg.hold_batch:
            print(f"holding batch {batch_id}: prepared, not committed", flush=True)
            time.sleep(cfg.hold_s)

    query = eos.write_stream(
        read_stream(spark, cfg, eos),
        write_batch,
        query_name="sharetxn-enrich",
        trigger={"processingTime": cfg.trigger_interval},
    )
    return query, eos


def drained(admin: Admin, cfg: JobConfig, eos: ExactlyOnce | None = None) -> bool:
    """Every input record acknowledged (SPSO at the LSO) and every intent resolved."""
    partitions = admin.list_topics().get(cfg.input_topic, [])
    spso = admin.share_group_progress(cfg.group_id, [cfg.input_topic])
    for p in partitions:
        tp = TopicPartition(cfg.input_topic, p)
        end = admin.list_offsets(tp, -1, read_committed=True)
        if spso.get(tp, -1) < end:
            return False
    view = (eos or exactly_once(cfg)).checkpoint.view(unresolved_only=True)
    return not view.unresolved()


def run_until_drained(
    spark: SparkSession, cfg: JobConfig, *, timeout_s: float = 600.0, poll_s: float = 0.5
) -> dict[str, Any]:
    """Run the query until the input is drained, then stop it cleanly; returns counters."""
    query, eos = start(spark, cfg)
    deadline = time.monotonic() + timeout_s
    try:
        with Admin(cfg.bootstrap_servers) as admin:
            while True:
                if query.exception() is not None:
                    raise query.exception()
                if drained(admin, cfg, eos):
                    break
                if time.monotonic() > deadline:
                    msg = f"the input was not drained within {timeout_s}s"
                    raise TimeoutError(msg)
                query.awaitTermination(poll_s)
        progress = [p for p in query.recentProgress if p.numInputRows > 0]
    finally:
        query.stop()
        eos.close(spark)
    return {
        "batches": len(progress),
        "rows": sum(p.numInputRows for p in progress),
        "batch_ms": [p.batchDuration for p in progress],
        "durations": [p.durationMs for p in progress],
    }


def wait_for_go(path: str, timeout_s: float) -> str:
    """Wait for ``path`` to exist; returns its content (the bootstrap servers)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with open(path) as f:
                text = f.read().strip()
        except FileNotFoundError:
            text = ""
        if text:
            return text
        if time.monotonic() > deadline:
            msg = f"{path} did not appear within {timeout_s}s"
            raise TimeoutError(msg)
        time.sleep(0.05)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m producer.spark.job",
        description="Run the exactly-once enrichment query (share group in, topic out).",
    )
    parser.add_argument("--bootstrap-server", default=None)
    parser.add_argument("--group", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--prefix", default="sharetxn-spark")
    parser.add_argument("--max-records", type=int, default=10_000)
    parser.add_argument("--num-partitions", type=int, default=None)
    parser.add_argument("--master", default=os.environ.get("SHARETXN_SPARK_MASTER", DEFAULT_MASTER))
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument(
        "--hold-batch",
        type=int,
        default=None,
        metavar="N",
        help="hold batch N once its writes are prepared (sharetxn demo kills the driver then)",
    )
    parser.add_argument(
        "--go-file",
        default=None,
        metavar="PATH",
        help="start Spark, then wait for PATH to exist and read the bootstrap servers from it "
        "(sharetxn demo starts the driver while its broker starts)",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark configuration (repeatable)",
    )
    args = parser.parse_args(argv)
    if (args.bootstrap_server is None) == (args.go_file is None):
        parser.error("give one of --bootstrap-server and --go-file")
    conf = dict(c.split("=", 1) for c in args.conf)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("producer.spark").setLevel(logging.INFO)
    if is_local(args.checkpoint):
        local_path(args.checkpoint).mkdir(parents=True, exist_ok=True)
    spark = spark_session(args.master, conf=conf)
    try:
        bootstrap = args.bootstrap_server
        if args.go_file is not None:
            register(spark)  # Spark's look-up of installed data sources, while waiting
            bootstrap = wait_for_go(args.go_file, args.timeout)
        cfg = JobConfig(
            bootstrap_servers=bootstrap,
            group_id=args.group,
            input_topic=args.input,
            output_topic=args.output,
            checkpoint=args.checkpoint,
            prefix=args.prefix,
            max_records_per_partition=args.max_records,
            num_partitions=args.num_partitions,
            hold_batch=args.hold_batch,
        )
        counters = run_until_drained(spark, cfg, timeout_s=args.timeout)
        # Before the SparkContext stops: the query is stopped and every batch committed.
        print(f"{DRAINED}{json.dumps(counters)}", flush=True)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
