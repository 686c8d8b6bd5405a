"""A real query configured with the option names of Spark's proposed kafka-share source."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from coordinator.launcher import LocalBroker
from producer.admin import Admin, TopicSpec
from tests.stock_reads import read_messages

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.timeout(400)]

DRIVER = Path(__file__).parent / "spark_names_driver.py"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[LocalBroker]:
    """A broker with Kafka 4.4's share-group assignment interval (1 s): the source's read
    tasks, each a share-group member for one trigger, wait for their assignment."""
    with LocalBroker(data_dir=tmp_path / "data") as running:
        yield running


def test_spark_names_read_the_pattern_with_headers_and_timestamp_type(
    broker: LocalBroker, tmp_path: Path
) -> None:
    b = broker.bootstrap_servers
    with Admin(b) as admin:
        admin.create_topics(
            [TopicSpec(t, n) for t, n in (("names-1", 1), ("names-2", 2), ("xy", 1), ("out", 1))]
        )
    producer = Producer({"bootstrap.servers": b})
    for topic in ("names-1", "names-2", "xy"):  # xy: not matched by names-\d
        for i in range(3):
            producer.produce(topic, f"{topic}/{i}".encode(), headers=[("n", str(i).encode())])
    producer.produce("names-1", b"bare")  # no headers
    producer.flush()

    done = subprocess.run(
        [sys.executable, str(DRIVER), b, str(tmp_path / "chk"), "out", "7"],
        capture_output=True,
        text=True,
        timeout=360,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULTS ")]
    assert lines, done.stdout[-3000:] + done.stderr[-3000:]
    found: dict[str, Any] = json.loads(lines[-1].removeprefix("RESULTS "))

    # Spark's Kafka source columns in its order, headers requested, then the share group's.
    assert found["columns"][:8] == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]
    assert found["columns"][8] == "delivery_count"
    rows = sorted(found["rows"], key=lambda r: r["value"])
    expected = [
        {"topic": t, "value": f"{t}/{i}", "timestampType": 0, "headers": [["n", str(i)]]}
        for t in ("names-1", "names-2")
        for i in range(3)
    ]
    bare = {"topic": "names-1", "value": "bare", "timestampType": 0, "headers": []}
    assert rows == sorted([*expected, bare], key=lambda r: r["value"])
    # ... and the sink wrote them once (xy was never read).
    out = read_messages(b, "out", 1, "read_committed", 7, first_idle_s=5, timeout_s=30)
    assert sorted(m.value().decode() for m in out) == sorted(r["value"] for r in rows)
