"""A Spark driver for tests/reference: ``kafka-share`` with deliverySemantics=at-least-once.

    python -m tests.reference.share_alo_driver BOOTSTRAP TOPIC GROUP CHECKPOINT OUT_DIR \
        [--hang-at-data-batch N]

Each batch's values and delivery counts go to a new file in OUT_DIR.  With
``--hang-at-data-batch N`` the batch function, after writing the output of the N-th batch
with records (from 1), creates ``OUT_DIR/hanging`` and sleeps (the test then SIGKILLs the
driver: the output is written, Spark's ``commits/`` entry is not).  The query stops when
``OUT_DIR/stop`` exists.
"""

from __future__ import annotations

import argparse
import time
import uuid
from pathlib import Path

from pyspark.sql import DataFrame

from producer.spark import register
from producer.spark.job import spark_session


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("bootstrap", "topic", "group", "checkpoint", "out"):
        parser.add_argument(name)
    parser.add_argument("--hang-at-data-batch", type=int, default=None)
    args = parser.parse_args()
    out = Path(args.out)
    spark = spark_session("local[2]", app_name="share-at-least-once")
    register(spark)
    stream = (
        spark.readStream.format("kafka-share")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.topic)
        .option("group.id", args.group)
        .option("checkpointLocation", args.checkpoint)
        .option("deliverySemantics", "at-least-once")
        .option("startingOffsets", "earliest")
        .option("maxRecordsPerPartition", "40")
        .option("pollTimeoutMs", "500")
        .load()
    )

    data_batches = 0

    def write(df: DataFrame, batch_id: int) -> None:
        nonlocal data_batches
        rows = df.select("value", "delivery_count").collect()
        if not rows:
            return
        data_batches += 1
        lines = "".join(f"{r.value.decode()} {r.delivery_count}\n" for r in rows)
        (out / f"{batch_id:05d}-{uuid.uuid4().hex[:8]}.txt").write_text(lines)
        if data_batches == args.hang_at_data_batch:
            (out / "hanging").touch()
            time.sleep(600)

    query = (
        stream.writeStream.foreachBatch(write).option("checkpointLocation", args.checkpoint).start()
    )
    while query.isActive and not (out / "stop").exists():
        time.sleep(0.2)
    query.stop()
    spark.stop()


if __name__ == "__main__":
    main()
