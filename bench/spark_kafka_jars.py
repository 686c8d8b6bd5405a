"""Spark's built-in Kafka connector (``format("kafka")``) for the baseline of ``spark_eos.py``.

The same resolution users get (``producer.spark.kafka_connector``, ``sharetxn
spark-kafka-jars``): the connector of the installed PySpark, or the newest served one before
it, resolved once with mvn into the cache.

    python bench/spark_kafka_jars.py        # resolve (once) and print spark.jars
"""

from __future__ import annotations

from producer.spark.kafka_connector import kafka_jars


def spark_jars() -> str:
    """``spark.jars`` for the installed PySpark: the connector's jars PySpark lacks."""
    return kafka_jars()


if __name__ == "__main__":
    print(spark_jars())
