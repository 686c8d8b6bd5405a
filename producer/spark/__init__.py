"""Exactly-once PySpark pipelines on Kafka share groups (DESIGN §6, docs/spark.md).

    from producer.spark import ExactlyOnce, register

    register(spark)
    df = (spark.readStream.format("kafka-share")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("group.id", "orders").option("subscribe", "orders")
          .option("checkpointLocation", "/chk/orders").load())
    eos = ExactlyOnce(bootstrap_servers="127.0.0.1:9092", checkpoint_location="/chk/orders")
    df.writeStream.foreachBatch(eos.wrap(fn)).option("checkpointLocation", "/chk/orders").start()

Needs ``pip install 'sharetxn[spark]'`` (PySpark 4.0.1 or later).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from producer.spark.errors import BatchFencedError, ResolveError, SparkConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from producer.spark.sink import ExactlyOnce
    from producer.spark.source import ShareDataSource

MIN_PYSPARK = (4, 0, 1)

__all__ = [
    "BatchFencedError",
    "ExactlyOnce",
    "ResolveError",
    "ShareDataSource",
    "SparkConfigError",
    "check_pyspark",
    "register",
]


def check_pyspark() -> str:
    """The installed PySpark version; raises a clear error when it is missing or too old."""
    try:
        import pyspark  # noqa: PLC0415 - optional dependency
    except ImportError:
        msg = "the Spark integration needs PySpark: pip install 'sharetxn[spark]'"
        raise SparkConfigError(msg) from None
    version = pyspark.__version__
    parts = tuple(int(p) for p in version.split(".")[:3] if p.isdigit())
    if parts < MIN_PYSPARK:
        wanted = ".".join(map(str, MIN_PYSPARK))
        msg = f"PySpark {version} is too old: the kafka-share source needs {wanted} or later"
        raise SparkConfigError(msg)
    return version


def register(spark: SparkSession) -> None:
    """Register the ``kafka-share`` format on ``spark``."""
    check_pyspark()
    from producer.spark.connect import refuse_connect  # noqa: PLC0415
    from producer.spark.source import ShareDataSource  # noqa: PLC0415

    refuse_connect(spark)

    spark.dataSource.register(ShareDataSource)


def __getattr__(name: str) -> object:
    # PySpark is optional: import the Spark-facing classes only when asked for.
    if name == "ExactlyOnce":
        check_pyspark()
        from producer.spark.sink import ExactlyOnce  # noqa: PLC0415

        return ExactlyOnce
    if name == "ShareDataSource":
        check_pyspark()
        from producer.spark.source import ShareDataSource  # noqa: PLC0415

        return ShareDataSource
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
