"""The example of docs/spark.md runs as written (bootstrap and paths substituted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from coordinator.launcher import LocalBroker
from producer.spark.demo import prepare_input
from tests.spark_guide import guide_example, run_guide_script, verify_orders

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]


def test_the_guide_example_is_exactly_once(broker: LocalBroker, tmp_path: Path) -> None:
    code = guide_example("spark")
    assert '"127.0.0.1:9092"' in code and "/var/lib/pipelines/orders-enrich" in code
    code = code.replace('"127.0.0.1:9092"', repr(broker.bootstrap_servers)).replace(
        "/var/lib/pipelines/orders-enrich", str(tmp_path / "chk")
    )
    prepare_input(broker.bootstrap_servers, 1_000, topic="orders", output="orders-enriched")
    run_guide_script(tmp_path / "guide.py", code)
    verdict = verify_orders(broker.bootstrap_servers)
    assert verdict.exactly_once, verdict
