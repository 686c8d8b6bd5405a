"""Issue 29 on Apache Kafka 4.4: a decided batch is committed within seconds of commits/N.

Stock settings (no KIP-939): the write transactions are prepared with a timeout, so a
decided batch left waiting for a later batch would be aborted by the coordinator during a
lull.  With a short ``transaction.timeout.ms`` and a lull longer than it, nothing is lost
and nothing stops: every batch is committed before its timeout, the query keeps running
and processes the input that comes after the lull.  The same with KIP-939 on.  And a
commit phase that stalls past the timeout (a fault hook) is not passed over: the query
fails, loudly.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.reference.kafka import ReferenceKafka
from tests.spark.test_commit_promptly import (
    OUTPUT,
    PER_BATCH,
    assert_visible_while_running,
    output_topic,
    run_driver,
)
from tests.spark.test_exactly_once import fault_env

pytestmark = [pytest.mark.reference, pytest.mark.spark, pytest.mark.timeout(900)]

TRANSACTION_TIMEOUT_MS = 6_000
LULL_S = 10.0  # longer than the transaction timeout


def _lull_then_more_input(kafka: ReferenceKafka, tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    bootstrap = kafka.bootstrap_servers
    output_topic(bootstrap)
    source = tmp_path / "in"
    source.mkdir()
    expected: list[str] = []

    def add_file(f: int) -> None:
        lines = [f"line-{f}-{i}" for i in range(PER_BATCH)]
        (source / f".part-{f}.tmp").write_text("\n".join(lines) + "\n")
        (source / f".part-{f}.tmp").rename(source / f"part-{f}.txt")  # whole files only
        expected.extend(lines)

    for f in range(2):
        add_file(f)
    checkpoint = tmp_path / "checkpoint"
    config = json.dumps({"transaction.timeout.ms": TRANSACTION_TIMEOUT_MS})
    args = [bootstrap, str(checkpoint), "file", str(source), OUTPUT, config]
    with run_driver(args, tmp_path / "driver.log") as driver:
        assert_visible_while_running(bootstrap, driver, checkpoint, expected, 2)
        time.sleep(LULL_S)  # idle past the transaction timeout
        assert driver.poll() is None, driver.tail()
        add_file(2)
        assert_visible_while_running(bootstrap, driver, checkpoint, expected, 3)
        assert "query failed" not in driver.tail(200)


def test_behind_spark_kafka_source_a_lull_loses_nothing_on_stock_kafka(
    reference_kafka: ReferenceKafka, tmp_path: Path
) -> None:
    """Spark's own ``format("kafka")`` source, which plans no batch while the topic is idle."""
    pytest.importorskip("pyspark")
    from confluent_kafka import Producer  # noqa: PLC0415

    from producer.admin import Admin, TopicSpec  # noqa: PLC0415

    bootstrap = reference_kafka.bootstrap_servers
    output = "lull-kafka-out"  # the Kafka is shared with the file-source tests
    output_topic(bootstrap, output)
    with Admin(bootstrap) as admin:
        admin.create_topics([TopicSpec("lull-kafka-in", 1, 1)])
    producer = Producer({"bootstrap.servers": bootstrap})
    expected: list[str] = []

    def add_batch(n: int) -> None:
        values = [f"kafka-{n}-{i}" for i in range(PER_BATCH)]
        for value in values:
            producer.produce("lull-kafka-in", value.encode())
        producer.flush()
        expected.extend(values)

    for n in range(2):
        add_batch(n)
    checkpoint = tmp_path / "checkpoint"
    config = json.dumps({"transaction.timeout.ms": TRANSACTION_TIMEOUT_MS})
    args = [bootstrap, str(checkpoint), "kafka", "lull-kafka-in", output, config]
    with run_driver(args, tmp_path / "driver.log") as driver:
        assert_visible_while_running(bootstrap, driver, checkpoint, expected, 2, output)
        time.sleep(LULL_S)  # idle past the transaction timeout
        assert driver.poll() is None, driver.tail()
        add_batch(2)
        assert_visible_while_running(bootstrap, driver, checkpoint, expected, 3, output)
        assert "query failed" not in driver.tail(200)


def test_a_lull_longer_than_the_transaction_timeout_loses_nothing_on_stock_kafka(
    reference_kafka: ReferenceKafka, tmp_path: Path
) -> None:
    _lull_then_more_input(reference_kafka, tmp_path)


def test_a_lull_longer_than_the_transaction_timeout_loses_nothing_with_kip_939(
    kafka_2pc: ReferenceKafka, tmp_path: Path
) -> None:
    _lull_then_more_input(kafka_2pc, tmp_path)


def test_a_commit_phase_stalled_past_the_timeout_fails_the_idle_query(
    reference_kafka: ReferenceKafka, tmp_path: Path
) -> None:
    """The committer gives up on a decided batch the cluster aborted: the query stops and
    the driver's plain ``query.awaitTermination()`` raises ``DecidedBatchAbortedError``."""
    pytest.importorskip("pyspark")
    bootstrap = reference_kafka.bootstrap_servers
    output_topic(bootstrap)
    source = tmp_path / "in"
    source.mkdir()
    (source / "part-0.txt").write_text("".join(f"line-{i}\n" for i in range(PER_BATCH)))
    config = json.dumps({"transaction.timeout.ms": 3_000})
    args = [bootstrap, str(tmp_path / "checkpoint"), "file", str(source), OUTPUT, config]
    env = {**fault_env("delay-commit:0"), "SHARETXN_TEST_DELAY_S": "20"}
    with run_driver(args, tmp_path / "driver.log", env) as driver:
        deadline = time.monotonic() + 300
        while driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        log = driver.tail(400)
        assert driver.poll() == 3, log  # awaitTermination raised
    assert "query failed: DecidedBatchAbortedError" in log, log
    assert "stopping the query" in log, log
