"""A Spark driver that tries each misconfiguration and prints what the user would see.

    python misconfig_driver.py BOOTSTRAP TOPIC WORKDIR

Prints one JSON object: case -> {"error": first line of the error, "seconds": how long
until it was raised}.  Run by test_misconfiguration.py in a subprocess (one JVM; the last case,
speculation, in a second SparkContext).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from producer.spark import ExactlyOnce, register
from producer.spark.job import spark_session


def main() -> None:
    bootstrap, topic, workdir = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    spark = spark_session("local[2]")
    register(spark)
    results: dict[str, dict[str, object]] = {}

    def attempt(name: str, fn: Callable[[], None]) -> None:
        started = time.monotonic()
        try:
            fn()
            error = None
        except Exception as exc:
            error = str(exc)
        results[name] = {"error": error, "seconds": round(time.monotonic() - started, 2)}

    def reader(**options: str):  # type: ignore[no-untyped-def]
        r = spark.readStream.format("kafka-share").option("kafka.bootstrap.servers", bootstrap)
        for k, v in options.items():
            r = r.option(k.replace("_", "."), v)
        return r

    def run_query(  # type: ignore[no-untyped-def]
        case: str,
        group: str,
        subscribe: str,
        sink_checkpoint: str | None = None,
        starting: str | None = None,
        drop_receipts: bool = False,
    ):
        chk = str(workdir / case)
        r = reader(group_id=group, subscribe=subscribe).option("checkpointLocation", chk)
        if starting is not None:
            r = r.option("startingOffsets", starting)
        df = r.load()
        if drop_receipts:
            df = df.select("key", "value")
        eos = ExactlyOnce(bootstrap, sink_checkpoint or chk)
        query = (
            df.writeStream.foreachBatch(eos.wrap(lambda d, n: eos.write(d, "out")))
            .option("checkpointLocation", chk)
            .start()
        )
        try:
            if starting is not None:
                query.processAllAvailable()  # must not fail
            else:
                query.awaitTermination(90)
        finally:
            query.stop()

    attempt(
        "no_checkpoint",
        lambda: reader(group_id="g", subscribe=topic).load(),
    )
    attempt("unknown_group", lambda: run_query("unknown_group", "no-such-group", topic))
    attempt("unknown_topic", lambda: run_query("unknown_topic", "g", "no-such-topic"))
    # A group created at "latest" on a topic with records: the first batch is empty.
    attempt("empty_batch", lambda: run_query("empty", "g-latest", topic, starting="latest"))
    # Configure once: the source and the query take the checkpoint and the prefix from
    # ExactlyOnce; a different one is refused before the query starts.
    eos = ExactlyOnce(bootstrap, str(workdir / "once"), "once")
    attempt(
        "read_stream_prefix",
        lambda: eos.read_stream(
            spark, subscribe=topic, group_id="g", **{"transactional.id.prefix": "other"}
        ),
    )
    attempt(
        "read_stream_checkpoint",
        lambda: eos.read_stream(
            spark, subscribe=topic, group_id="g", checkpointLocation=str(workdir / "x")
        ),
    )
    attempt(
        "write_stream_checkpoint",
        lambda: eos.write_stream(
            eos.read_stream(spark, subscribe=topic, group_id="g"),
            lambda d, n: None,
            options={"checkpointLocation": str(workdir / "elsewhere")},
        ),
    )
    # The kafka-share source with its receipt columns dropped: refused by write_stream
    # (from the plan) and, in the option form, by the first batch (from offsets/N).
    attempt(
        "write_stream_dropped_receipts",
        lambda: eos.write_stream(
            eos.read_stream(spark, subscribe=topic, group_id="g").select("key", "value"),
            lambda d, n: None,
        ),
    )
    attempt(
        "batch_dropped_receipts",
        lambda: run_query("dropped", "g", topic, drop_receipts=True),
    )
    attempt(
        "sink_checkpoint_mismatch",
        lambda: run_query("mismatch", "g", topic, sink_checkpoint=str(workdir / "elsewhere")),
    )
    spark.stop()
    # A second session in the same driver, with speculation on (a SparkContext setting).
    spark = spark_session("local[2]", conf={"spark.speculation": "true"})
    register(spark)
    attempt("speculation", lambda: run_query("speculation", "g-spec", topic))
    spark.stop()
    print("RESULTS " + json.dumps(results), flush=True)


if __name__ == "__main__":
    main()
