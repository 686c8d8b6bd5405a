"""Which Spark Kafka connector release a PySpark gets (producer.spark.kafka_connector)."""

from __future__ import annotations

import pytest

from producer.spark.kafka_connector import connector_version
from producer.spark.maven import MavenError

SERVED = [
    "3.5.1",
    "4.0.0",
    "4.0.0-preview2",
    "4.0.1",
    "4.1.0",
    "4.1.1",
    "4.2.0",
    "4.2.0-preview5",
]


def test_the_installed_release_when_it_is_served() -> None:
    assert connector_version("4.0.1", SERVED) == "4.0.1"
    assert connector_version("4.1.1", SERVED) == "4.1.1"


def test_the_newest_earlier_release_of_the_same_major_when_it_is_not() -> None:
    assert connector_version("4.3.0", SERVED) == "4.2.0"  # not 4.2.0-preview5
    assert connector_version("4.1.3", SERVED) == "4.1.1"
    assert connector_version("4.0.2", SERVED) == "4.0.1"


def test_never_a_newer_release_nor_another_major() -> None:
    with pytest.raises(MavenError, match="no spark-sql-kafka"):
        connector_version("3.4.0", ["4.0.1", "3.5.1"])
    with pytest.raises(MavenError, match="no spark-sql-kafka"):
        connector_version("5.0.0", ["4.2.0"])


def test_offline_asks_for_the_installed_release() -> None:
    assert connector_version("4.3.0", []) == "4.3.0"


def test_a_preview_spark_is_refused_with_its_name() -> None:
    with pytest.raises(MavenError, match=r"4\.2\.0-preview5"):
        connector_version("4.2.0-preview5", SERVED)
