"""Spark's built-in Kafka connector (``format("kafka")``) for the baseline of ``spark_eos.py``.

The jars come from Maven Central through ``bench/spark_kafka/pom.xml``, copied by
``mvn dependency:copy-dependencies`` into a cache outside the repository
(``$SHARETXN_KAFKA_CACHE`` or ``~/.cache/sharetxn``, as for the reference harness); only
the jars the PySpark distribution does not ship already go to ``spark.jars``.

    python bench/spark_kafka_jars.py        # resolve (once) and print spark.jars
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent  # bench/ runs as a script: find tests/
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from tests.reference.kafka import cache_root, resolve_with_mvn  # noqa: E402 - after the path

POM = Path(__file__).parent / "spark_kafka" / "pom.xml"


def _stem(jar: str) -> str:
    """``kafka-clients-3.9.1.jar`` -> ``kafka-clients``."""
    return re.sub(r"-\d[\w.\-]*\.jar$", "", jar)


def resolve(spark_version: str) -> Path:
    """The cache directory with the connector and its dependencies, resolved on first use."""
    return resolve_with_mvn(
        POM,
        cache_root() / f"spark-sql-kafka-{spark_version}",
        f"spark-sql-kafka {spark_version}",
        properties={"spark.version": spark_version},
        extra=("-DincludeScope=runtime",),
    )


def spark_jars() -> str:
    """``spark.jars`` for the installed PySpark: the connector's jars PySpark lacks."""
    import pyspark  # noqa: PLC0415 - optional dependency

    shipped = {_stem(j.name) for j in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    jars = sorted(resolve(pyspark.__version__).glob("*.jar"))
    return ",".join(str(j) for j in jars if _stem(j.name) not in shipped)


if __name__ == "__main__":
    print(spark_jars())
