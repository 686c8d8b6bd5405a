"""Spark's own Kafka connector (``format("kafka")``) for the installed PySpark.

PySpark does not ship ``spark-sql-kafka-0-10``; a query reading Spark's Kafka source needs
its jars.  ``kafka_jars()`` resolves them once with ``mvn`` into the cache and returns the
``spark.jars`` value (only the jars PySpark lacks); ``kafka_package()`` returns the Maven
coordinate for ``spark.jars.packages``.  Both pick the connector of the installed Spark
release, or, when the repository does not serve that release, the newest one of the same
major version that is not newer than it (``connector_version``)::

    from producer.spark.kafka_connector import kafka_jars
    spark = SparkSession.builder.config("spark.jars", kafka_jars()).getOrCreate()

    sharetxn spark-kafka-jars            # the same, for spark-submit --jars
    sharetxn spark-kafka-jars --package  # the coordinate, for --packages
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from producer.spark.maven import MavenError, cache_root, resolve_with_mvn, served_versions

GROUP = "org.apache.spark"
SCALA = "2.13"
CONNECTOR = f"spark-sql-kafka-0-10_{SCALA}"
TOKEN_PROVIDER = f"spark-token-provider-kafka-0-10_{SCALA}"
POM = Path(__file__).with_name("kafka_connector_pom.xml")

_RELEASE = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


def _release(version: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of a final release; None for previews and snapshots."""
    found = _RELEASE.match(version.strip())
    return (int(found[1]), int(found[2]), int(found[3])) if found else None


def connector_version(spark_version: str, served: Sequence[str]) -> str:
    """The connector release for ``spark_version`` among the ``served`` releases.

    The same release when served; otherwise the newest served release of the same major
    version that is not newer (a connector newer than Spark may call what it lacks).
    """
    wanted = _release(spark_version)
    if wanted is None:
        msg = f"Spark {spark_version!r} is not a release version"
        raise MavenError(msg)
    if not served:
        return spark_version  # nothing listed (offline): ask for the installed release
    releases = sorted(
        (r, v) for v in served if (r := _release(v)) is not None and r[0] == wanted[0]
    )
    fitting = [v for r, v in releases if r <= wanted]
    if not fitting:
        msg = (
            f"no {CONNECTOR} release of Spark {wanted[0]}.x up to {spark_version} is served "
            f"(served: {', '.join(v for _, v in releases) or 'none'})"
        )
        raise MavenError(msg)
    return fitting[-1]


def installed_spark() -> str:
    try:
        import pyspark  # noqa: PLC0415 - optional dependency
    except ImportError:
        msg = "PySpark is not installed: pip install 'sharetxn[spark]'"
        raise MavenError(msg) from None
    return str(pyspark.__version__)


def _served(artifact: str) -> list[str]:
    try:
        return served_versions(GROUP, artifact)
    except MavenError:
        return []


def kafka_package(spark_version: str | None = None) -> str:
    """``org.apache.spark:spark-sql-kafka-0-10_2.13:V`` for ``spark.jars.packages``."""
    spark = spark_version or installed_spark()
    return f"{GROUP}:{CONNECTOR}:{connector_version(spark, _served(CONNECTOR))}"


def kafka_jars_dir(spark_version: str | None = None) -> Path:
    """The cache directory holding the connector and its dependencies (mvn, once)."""
    spark = spark_version or installed_spark()
    connector = connector_version(spark, _served(CONNECTOR))
    target = cache_root() / f"spark-sql-kafka-{connector}"
    if (target / ".complete").exists():
        return target
    # The token provider (delegation tokens, unused without them) is not served for
    # every connector release: the newest one up to the connector's release will do.
    token = connector_version(connector, _served(TOKEN_PROVIDER))
    return resolve_with_mvn(
        POM,
        target,
        f"{CONNECTOR} {connector}",
        properties={"spark.version": connector, "token.provider.version": token},
        extra=("-DincludeScope=runtime",),
    )


def _stem(jar: str) -> str:
    """``kafka-clients-3.9.1.jar`` -> ``kafka-clients``."""
    return re.sub(r"-\d[\w.\-]*\.jar$", "", jar)


def kafka_jars(spark_version: str | None = None) -> str:
    """``spark.jars`` for Spark's Kafka source and sink: the connector's jars PySpark lacks."""
    import pyspark  # noqa: PLC0415 - optional dependency

    shipped = {_stem(j.name) for j in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    jars = sorted(kafka_jars_dir(spark_version).glob("*.jar"))
    return ",".join(str(j) for j in jars if _stem(j.name) not in shipped)
