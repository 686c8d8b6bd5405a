"""Spark's built-in Kafka connector (``format("kafka")``) for the baseline of ``spark_eos.py``.

The jars come from Maven Central through ``bench/spark_kafka/pom.xml``, copied by
``mvn dependency:copy-dependencies`` into a cache outside the repository
(``$SHARETXN_KAFKA_CACHE`` or ``~/.cache/sharetxn``, as for the reference harness); only
the jars the PySpark distribution does not ship already go to ``spark.jars``.

    python bench/spark_kafka_jars.py        # resolve (once) and print spark.jars
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

POM = Path(__file__).parent / "spark_kafka" / "pom.xml"


def _cache_root() -> Path:
    env = os.environ.get("SHARETXN_KAFKA_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "sharetxn"


def _stem(jar: str) -> str:
    """``kafka-clients-3.9.1.jar`` -> ``kafka-clients``."""
    return re.sub(r"-\d[\w.\-]*\.jar$", "", jar)


def resolve(spark_version: str) -> Path:
    """The cache directory with the connector and its dependencies, resolved on first use."""
    target = _cache_root() / f"spark-sql-kafka-{spark_version}"
    if (target / ".complete").exists():
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        msg = f"mvn is needed once to resolve spark-sql-kafka {spark_version} into {target}"
        raise RuntimeError(msg)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".spark-sql-kafka-{spark_version}-", dir=target.parent))
    try:
        cmd = [
            mvn,
            "-q",
            "-B",
            "-f",
            str(POM),
            f"-Dspark.version={spark_version}",
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={staging}",
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
        if done.returncode != 0:
            msg = f"mvn could not resolve spark-sql-kafka {spark_version}:\n{done.stdout}"
            raise RuntimeError(msg)
        (staging / ".complete").write_text(spark_version + "\n")
        with contextlib.suppress(OSError):
            staging.rename(target)  # another process may have won the race: keep theirs
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def spark_jars() -> str:
    """``spark.jars`` for the installed PySpark: the connector's jars PySpark lacks."""
    import pyspark  # noqa: PLC0415 - optional dependency

    shipped = {_stem(j.name) for j in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    jars = sorted(resolve(pyspark.__version__).glob("*.jar"))
    return ",".join(str(j) for j in jars if _stem(j.name) not in shipped)


if __name__ == "__main__":
    print(spark_jars())
