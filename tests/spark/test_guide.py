"""The example of docs/spark.md runs as written (bootstrap and paths substituted)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from coordinator.launcher import LocalBroker
from producer.spark.demo import prepare_input, verify

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "spark.md"
EPILOGUE = """
query.processAllAvailable()
query.stop()
eos.close(spark)
spark.stop()
print("GUIDE-DONE", flush=True)
"""


def test_the_guide_example_is_exactly_once(broker: LocalBroker, tmp_path: Path) -> None:
    text = GUIDE.read_text()
    block = re.search(r"<!-- example: spark -->\n```python\n(.*?)```", text, re.S)
    assert block, "the example is missing from docs/spark.md"
    code = block.group(1)
    assert '"127.0.0.1:9092"' in code and "/var/lib/pipelines/orders-enrich" in code
    code = code.replace('"127.0.0.1:9092"', repr(broker.bootstrap_servers)).replace(
        "/var/lib/pipelines/orders-enrich", str(tmp_path / "chk")
    )
    prepare_input(broker.bootstrap_servers, 1_000, topic="orders", output="orders-enriched")
    script = tmp_path / "guide.py"
    script.write_text(code + EPILOGUE)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=240, check=False
    )
    assert "GUIDE-DONE" in done.stdout, done.stdout[-2000:] + done.stderr[-3000:]
    verdict = verify(
        broker.bootstrap_servers,
        1_000,
        topic="orders",
        output="orders-enriched",
        group="orders-enrich",
        prefix="sharetxn-spark",
    )
    assert verdict.exactly_once, verdict
