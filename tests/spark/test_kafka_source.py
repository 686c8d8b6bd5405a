"""``ExactlyOnce`` behind Spark's own Kafka source (``format("kafka")``), against sharetxn.

One query lifetime killed at the three points (tests/spark/kafka_source_job.py); the same
scenario runs against Apache Kafka in tests/reference/test_spark_sink_against_kafka.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from coordinator.launcher import LocalBroker
from tests.spark.kafka_source_job import run_killed_three_times

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]


def test_kafka_source_into_exactly_once_killed_at_three_points(
    broker: LocalBroker, tmp_path: Path
) -> None:
    run_killed_three_times(broker.bootstrap_servers, tmp_path)
