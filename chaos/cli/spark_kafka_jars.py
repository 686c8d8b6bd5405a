"""``sharetxn spark-kafka-jars``: the spark.jars of Spark's own Kafka connector, or its coordinate.

The work is ``producer.spark.kafka_connector``'s; this is its command.
"""

from __future__ import annotations

import argparse
import json
import sys

from producer.spark.kafka_connector import installed_spark, kafka_jars, kafka_package
from producer.spark.maven import MavenError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Print the spark.jars (comma-separated) of Spark's own Kafka connector "
        "(format('kafka')) for the installed PySpark, resolving them once with mvn; or, with "
        "--package, the Maven coordinate for spark.jars.packages / --packages."
    )
    parser.add_argument(
        "--package",
        action="store_true",
        help="print the Maven coordinate instead of resolving the jars",
    )
    parser.add_argument(
        "--spark-version",
        default=None,
        metavar="VERSION",
        help="the Spark release to match (default: the installed PySpark)",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON object")


def run(args: argparse.Namespace) -> int:
    try:
        spark = args.spark_version or installed_spark()
        value = kafka_package(spark) if args.package else kafka_jars(spark)
    except MavenError as exc:
        if args.json:
            print(json.dumps({"error": str(exc)}), file=sys.stderr)
        else:
            print(f"sharetxn spark-kafka-jars: {exc}", file=sys.stderr)
        return 1
    if args.json:
        key = "package" if args.package else "jars"
        print(json.dumps({"spark": spark, key: value if args.package else value.split(",")}))
    else:
        print(value)
    return 0
