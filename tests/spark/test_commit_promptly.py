"""A decided batch becomes visible within seconds, also when no batch follows (issue 29).

The driver (``tests/spark/idle_query_driver.py``) runs the query as a user does —
``eos.write_stream(stream, fn)`` then ``query.awaitTermination()`` — and never commits
anything itself.  Once Spark has written ``commits/N`` of the last batch the input is
idle: no later batch, no restart, no explicit call.  A stock read_committed consumer must
see every output within ``VISIBLE_WITHIN_S`` while the query still runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from coordinator.launcher import LocalBroker
from producer.admin import Admin, TopicSpec
from producer.spark.demo import DriverProcess
from producer.twophase.spark_checkpoint import read_checkpoint
from tests.stock_reads import read_messages

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

OUTPUT = "idle-out"
BATCHES = 3
PER_BATCH = 400  # the driver's maxRecordsPerPartition; the file source: one file a batch
VISIBLE_WITHIN_S = 15.0
START_TIMEOUT_S = 240.0
QUIET_S = 3.0


class _Driver(DriverProcess):
    """The idle-query driver in its own process group (killed with its JVM at the end)."""

    def __init__(self, args: list[str], log_path: Path, env: dict[str, str] | None) -> None:
        self.log_path = log_path
        self._log = log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.spark.idle_query_driver", *args],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )


@contextlib.contextmanager
def run_driver(args: list[str], log: Path, env: dict[str, str] | None = None) -> Iterator[_Driver]:
    driver = _Driver(args, log, env)
    try:
        yield driver
    finally:
        driver.kill()


def _planned(checkpoint: Path, directory: str) -> list[int]:
    found = checkpoint / directory
    return sorted(int(p.name) for p in found.glob("[0-9]*")) if found.is_dir() else []


def _await_last_decision(driver: _Driver, checkpoint: Path, batches: int | None) -> int:
    """The last batch, once Spark decided it and the query went idle.

    ``batches``: known (one file per batch); None (the kafka-share source: how many records
    one read acquires varies) means the last planned batch is decided and no batch was
    planned for ``QUIET_S``.
    """
    deadline = time.monotonic() + START_TIMEOUT_S
    quiet_since: float | None = None
    while True:
        assert driver.poll() is None, driver.tail()
        assert time.monotonic() < deadline, f"the query did not go idle:\n{driver.tail()}"
        planned = _planned(checkpoint, "offsets")
        last = planned[-1] if planned else -1
        decided = last >= 0 and (checkpoint / "commits" / str(last)).exists()
        if batches is not None and decided and last == batches - 1:
            return last
        if batches is None and decided:
            quiet_since = quiet_since or time.monotonic()
            if (
                time.monotonic() - quiet_since >= QUIET_S
                and _planned(checkpoint, "offsets")[-1] == last
            ):
                return last
        else:
            quiet_since = None
        time.sleep(0.2)


def assert_visible_while_running(
    bootstrap: str,
    driver: _Driver,
    checkpoint: Path,
    expected: list[str],
    batches: int | None = None,
    output: str = OUTPUT,
) -> None:
    last = _await_last_decision(driver, checkpoint, batches)
    decided_at = (checkpoint / "commits" / str(last)).stat().st_mtime  # wall clock
    got: list[str] = []
    while time.time() < decided_at + VISIBLE_WITHIN_S:
        messages = read_messages(
            bootstrap,
            output,
            2,
            "read_committed",
            len(expected),
            first_idle_s=0.5,
            timeout_s=max(0.5, decided_at + VISIBLE_WITHIN_S - time.time()),
        )
        got = sorted(m.value().decode() for m in messages)
        if len(got) >= len(expected):
            break
    seen_after = time.time() - decided_at
    assert got == sorted(expected), (
        f"{len(got)} of {len(expected)} outputs visible {seen_after:.1f}s after "
        f"commits/{last}:\n{driver.tail()}"
    )
    assert driver.poll() is None, driver.tail()  # the query still runs, idle
    assert _planned(checkpoint, "offsets")[-1] == last  # no later batch committed it
    view = read_checkpoint(checkpoint)
    assert last in view.intents
    assert not view.unresolved(), sorted(view.intents)
    lag = _last_lag(driver.log_path, len(view.intents))
    assert lag["batches"] == len(view.intents), lag
    assert lag["max_s"] is not None and lag["max_s"] <= VISIBLE_WITHIN_S, lag


def _last_lag(log: Path, batches: int) -> dict[str, float]:
    deadline = time.monotonic() + 5
    while True:
        lines = [
            line
            for line in log.read_text(errors="replace").splitlines()
            if line.startswith("commit-lag ")
        ]
        lag: dict[str, float] = json.loads(lines[-1].split(" ", 1)[1]) if lines else {}
        if lag.get("batches") == batches or time.monotonic() > deadline:
            return lag
        time.sleep(0.5)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[LocalBroker]:
    """A broker with Kafka 4.4's share-group assignment interval (1 s): the kafka-share
    source's read tasks join for one trigger each and wait for their assignment."""
    with LocalBroker(data_dir=tmp_path / "data") as running:
        yield running


def output_topic(bootstrap: str, name: str = OUTPUT) -> None:
    with Admin(bootstrap) as admin:
        admin.create_topics([TopicSpec(name, 2)])


def test_behind_a_file_source_the_last_batch_is_visible_while_the_query_idles(
    broker: LocalBroker, tmp_path: Path
) -> None:
    output_topic(broker.bootstrap_servers)
    source = tmp_path / "in"
    source.mkdir()
    expected = [f"line-{f}-{i}" for f in range(BATCHES) for i in range(PER_BATCH)]
    for f in range(BATCHES):
        lines = expected[f * PER_BATCH : (f + 1) * PER_BATCH]
        (source / f"part-{f}.txt").write_text("\n".join(lines) + "\n")
    checkpoint = tmp_path / "checkpoint"
    args = [broker.bootstrap_servers, str(checkpoint), "file", str(source), OUTPUT]
    with run_driver(args, tmp_path / "driver.log") as driver:
        assert_visible_while_running(
            broker.bootstrap_servers, driver, checkpoint, expected, BATCHES
        )


def test_behind_kafka_share_the_last_batch_is_visible_while_the_query_idles(
    broker: LocalBroker, tmp_path: Path
) -> None:
    output_topic(broker.bootstrap_servers)
    with Admin(broker.bootstrap_servers) as admin:
        admin.create_topics([TopicSpec("idle-in", 1)])
    expected = [f"record-{i}" for i in range(BATCHES * PER_BATCH)]
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i, value in enumerate(expected):
        producer.produce("idle-in", value.encode())
        if i % PER_BATCH == PER_BATCH - 1:
            producer.flush()  # a record batch per PER_BATCH records: several Spark batches
    checkpoint = tmp_path / "checkpoint"
    args = [broker.bootstrap_servers, str(checkpoint), "kafka-share", "idle-in", OUTPUT]
    with run_driver(args, tmp_path / "driver.log") as driver:
        assert_visible_while_running(broker.bootstrap_servers, driver, checkpoint, expected)


def test_behind_spark_kafka_source_the_last_batch_is_visible_while_the_query_idles(
    broker: LocalBroker, tmp_path: Path
) -> None:
    """Spark's ``format("kafka")`` stops planning batches once the topic is read: only the
    sink's committer can make the last batch visible."""
    output_topic(broker.bootstrap_servers)
    with Admin(broker.bootstrap_servers) as admin:
        admin.create_topics([TopicSpec("idle-kafka-in", 1)])
    expected = [f"kafka-record-{i}" for i in range(BATCHES * PER_BATCH)]
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for value in expected:
        producer.produce("idle-kafka-in", value.encode())
    producer.flush()
    checkpoint = tmp_path / "checkpoint"
    args = [broker.bootstrap_servers, str(checkpoint), "kafka", "idle-kafka-in", OUTPUT]
    with run_driver(args, tmp_path / "driver.log") as driver:
        assert_visible_while_running(
            broker.bootstrap_servers, driver, checkpoint, expected, BATCHES
        )
