"""A kafka-share query configured with Spark's option names, printing what it read.

    python spark_names_driver.py BOOTSTRAP CHECKPOINT OUTPUT_TOPIC RECORDS

Reads with ``kafka.share.group.id``, ``subscribePattern`` and ``includeHeaders=true``
(the names of Spark's proposed kafka-share source) into the ``ExactlyOnce`` sink until
RECORDS rows were seen, then prints ``RESULTS {"columns": [...], "rows": [...]}``.
Run by test_spark_option_names.py in a subprocess.
"""

from __future__ import annotations

import json
import sys
import time

from pyspark.sql import DataFrame

from producer.spark import ExactlyOnce, register
from producer.spark.job import spark_session

GROUP = "spark-names"
PATTERN = r"names-\d"


def main() -> int:
    bootstrap, checkpoint, output, wanted = sys.argv[1:5]
    spark = spark_session("local[2]")
    register(spark)
    eos = ExactlyOnce(bootstrap, checkpoint)
    stream = (
        spark.readStream.format("kafka-share")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("kafka.share.group.id", GROUP)
        .option("subscribePattern", PATTERN)
        .option("includeHeaders", "true")
        .option("startingOffsets", "earliest")
        .option("kafka.share.parallelism", "1")
        .option("checkpointLocation", checkpoint)
        .load()
    )
    seen: list[dict[str, object]] = []

    def batch(df: DataFrame, batch_id: int) -> None:
        for row in df.select("topic", "value", "timestampType", "headers").collect():
            headers = [[h["key"], bytes(h["value"]).decode()] for h in row["headers"] or []]
            seen.append(
                {
                    "topic": row["topic"],
                    "value": bytes(row["value"]).decode(),
                    "timestampType": row["timestampType"],
                    "headers": headers,
                }
            )
        eos.write(df.select("value"), output, value_col="value")

    query = (
        stream.writeStream.foreachBatch(eos.wrap(batch))
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    deadline = time.monotonic() + 180
    while len(seen) < int(wanted) and time.monotonic() < deadline and query.isActive:
        time.sleep(0.5)
    query.processAllAvailable()  # the batch that completed ``seen`` is committed too
    query.stop()
    eos.close(spark)
    print("RESULTS " + json.dumps({"columns": stream.columns, "rows": seen}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
