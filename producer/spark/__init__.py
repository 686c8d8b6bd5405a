"""Exactly-once PySpark pipelines on Kafka share groups (DESIGN §6, docs/spark.md).

    from producer.spark import ExactlyOnce

    eos = ExactlyOnce(bootstrap_servers="127.0.0.1:9092", checkpoint_location="s3a://b/orders")
    df = eos.read_stream(spark, subscribe="orders", group_id="orders")
    query = eos.write_stream(df, fn)    # fn(batch_df, batch_id) calls eos.write(...)

The checkpoint may be any location Spark accepts (read through Hadoop's FileSystem in the
driver's JVM).  The option form (``register(spark)``, ``format("kafka-share")`` with every
option, ``foreachBatch(eos.wrap(fn))``) works for local checkpoints.

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
    """The installed PySpark version; raises a clear error when it is missing or too old,
    or when no Java runtime can be found for it (``producer.spark.java``)."""
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
    from producer.spark.java import ensure_java  # noqa: PLC0415

    ensure_java()
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
