"""A query run as docs/spark.md shows it, then left idle: ``write_stream`` + ``awaitTermination``.

``python -m tests.spark.idle_query_driver BOOTSTRAP CHECKPOINT SOURCE INPUT OUTPUT
[PRODUCER_CONFIG_JSON]``: SOURCE
is ``file`` (INPUT: a directory of text files, one file per batch) or ``kafka-share``
(INPUT: a topic, 400 records per batch).  Every input line or record value is written to
OUTPUT through ``ExactlyOnce``.  The driver never calls ``commit_decided``,
``await_termination`` or ``close``: only the sink's own commit phase can make the outputs
visible.  Once a second it prints ``commit-lag {json}`` (``ExactlyOnce.commit_lag``); it
runs until killed (exit 3 if the query fails).
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time

from pyspark.sql import DataFrame, functions

from producer.spark import ExactlyOnce
from producer.spark.job import spark_session

PREFIX = "idle-eos"
GROUP = "idle-group"
PER_BATCH = 400


def main(argv: list[str]) -> int:
    bootstrap, checkpoint, source, source_input, output = argv[:5]
    producer_config = json.loads(argv[5]) if len(argv) > 5 else {}
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("producer.spark").setLevel(logging.INFO)
    spark = spark_session()
    eos = ExactlyOnce(
        bootstrap, checkpoint, transactional_id_prefix=PREFIX, producer_config=producer_config
    )
    if source == "file":
        stream = (
            spark.readStream.format("text").option("maxFilesPerTrigger", "1").load(source_input)
        )
    else:
        stream = eos.read_stream(
            spark,
            subscribe=source_input,
            group_id=GROUP,
            startingOffsets="earliest",
            maxRecordsPerPartition=str(PER_BATCH),
            numPartitions="1",
        )

    def write(df: DataFrame, batch_id: int) -> None:
        out = df.select(functions.col("value").cast("string").alias("value"))
        eos.write(out, output, value_col="value")

    query = eos.write_stream(stream, write, trigger={"processingTime": "500 milliseconds"})

    def report() -> None:
        while True:
            print(f"commit-lag {json.dumps(eos.commit_lag.summary())}", flush=True)
            time.sleep(1)

    threading.Thread(target=report, daemon=True).start()
    try:
        query.awaitTermination()
    except Exception as exc:
        print(f"query failed: {exc!r}", flush=True)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
