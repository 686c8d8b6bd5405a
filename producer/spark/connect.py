"""Spark Connect is refused: the exactly-once sink needs the driver's Python process.

Under Spark Connect the client holds no JVM and ``foreachBatch`` runs the function in a
separate Python process that the server starts for the query.  ``ExactlyOnce`` keeps
driver-side state across batches — the progress listener that runs the commit phase after
``commits/N``, the checkpoint server that gives the source's reader Hadoop's FileSystem,
the per-batch receipts — and reaches the checkpoint through the driver's JVM; none of that
exists in the Connect client, and the server-side process is not told when Spark decides a
batch.  Rather than run with a commit phase that may never come, a Connect session is
refused before the query starts.
"""

from __future__ import annotations

from producer.spark.errors import SparkConfigError

REASON = (
    "Spark Connect is not supported by the exactly-once pipeline: foreachBatch runs in a "
    "separate Python process on the Connect server, where ExactlyOnce's driver-side state "
    "(the commit phase run by its progress listener, the checkpoint I/O through the "
    "driver's JVM) does not exist. Run the query with a classic SparkSession "
    "(spark-submit, or SparkSession.builder without .remote()); see docs/spark.md"
)


def is_connect(spark: object) -> bool:
    """Whether ``spark`` (a session or a DataFrame) belongs to Spark Connect."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def refuse_connect(spark: object) -> None:
    if is_connect(spark):
        raise SparkConfigError(REASON)
