"""Spark's own Kafka source (``format("kafka")``) into the ``ExactlyOnce`` sink, killed thrice.

The driver (``python -m tests.spark.kafka_source_job BOOTSTRAP CHECKPOINT``) reads
``INPUT`` with Spark's built-in Kafka source (offsets in Spark's checkpoint,
``maxOffsetsPerTrigger`` records per batch), writes ``UPPER(value)`` to ``OUTPUT``
through ``ExactlyOnce`` and stops once the last planned batch reaches the topic's end
and every intent is resolved.  ``run_killed_three_times`` is the scenario of the tests
against sharetxn (tests/spark) and Apache Kafka (tests/reference): one query lifetime
whose driver is SIGKILLed after a write prepare (batch 1), after an intent (batch 2) and
after ``commits/3`` before the commit phase (the last batch: the fourth start has no new
input, so only the sink's start-up recovery can commit it), then restarted to the end: four
driver starts, each checked by value by a stock read_committed consumer.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from producer.admin import Admin, TopicSpec
from producer.spark.demo import read_committed
from producer.twophase.spark_checkpoint import read_checkpoint
from txn.ids import TopicPartition

HOOKS = Path(__file__).parent / "hooks"
INPUT = "ks-input"
OUTPUT = "ks-output"
PREFIX = "ks-eos"
PARTITIONS = 2
PER_BATCH = 100  # maxOffsetsPerTrigger
DRIVER_TIMEOUT_S = 240.0
_OPEN = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")


def spark_kafka_jars() -> str:
    """``spark.jars`` for Spark's Kafka connector, resolved into the cache on first use."""
    from producer.spark.kafka_connector import kafka_jars  # noqa: PLC0415 - resolves with mvn

    return kafka_jars()


def _end_offsets(admin: Admin, topic: str) -> dict[str, int]:
    parts = admin.list_topics().get(topic, [])
    return {str(p): admin.list_offsets(TopicPartition(topic, p), -1) for p in parts}


def drained(checkpoint: Path, ends: dict[str, int]) -> bool:
    """The last planned batch is committed, reaches ``ends`` and no intent is unresolved."""
    offsets = checkpoint / "offsets"
    planned = sorted(int(p.name) for p in offsets.glob("[0-9]*")) if offsets.is_dir() else []
    if not planned or not (checkpoint / "commits" / str(planned[-1])).exists():
        return False
    lines = (offsets / str(planned[-1])).read_text().splitlines()
    source = json.loads(lines[2]) if len(lines) > 2 else {}
    if {k: int(v) for k, v in source.get(INPUT, {}).items()} != ends:
        return False
    return not read_checkpoint(checkpoint).unresolved()


def main(argv: list[str]) -> int:
    bootstrap, checkpoint = argv
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("producer.spark").setLevel(logging.INFO)
    from pyspark.sql import DataFrame, functions  # noqa: PLC0415

    from producer.spark import ExactlyOnce  # noqa: PLC0415
    from producer.spark.job import spark_session  # noqa: PLC0415

    spark = spark_session(conf={"spark.jars": spark_kafka_jars()})
    eos = ExactlyOnce(bootstrap, checkpoint, transactional_id_prefix=PREFIX)
    stream = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", INPUT)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(PER_BATCH))
        .load()
    )

    def enrich(df: DataFrame, batch_id: int) -> None:
        out = df.select("key", functions.upper(df.value.cast("string")).alias("value"))
        eos.write(out, OUTPUT, key_col="key", value_col="value")

    query = eos.write_stream(stream, enrich, trigger={"processingTime": "200 milliseconds"})
    try:
        with Admin(bootstrap) as admin:
            ends = _end_offsets(admin, INPUT)
        deadline = time.monotonic() + DRIVER_TIMEOUT_S
        while not drained(Path(checkpoint), ends):
            if query.exception() is not None:
                raise query.exception()  # type: ignore[misc]
            if time.monotonic() > deadline:
                raise TimeoutError("not drained")
            query.awaitTermination(0.2)
            eos.commit_decided()
    finally:
        query.stop()
        eos.close(spark)
        spark.stop()
    print("drained", flush=True)
    return 0


# -- the scenario ---------------------------------------------------------------------------


def input_value(i: int) -> bytes:
    return f"ks-{i:06d}".encode()


def prepare_input(bootstrap: str, records: int) -> None:
    from confluent_kafka import Producer  # noqa: PLC0415

    with Admin(bootstrap) as admin:
        admin.create_topics([TopicSpec(INPUT, PARTITIONS), TopicSpec(OUTPUT, PARTITIONS)])
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(records):
        producer.produce(INPUT, input_value(i), key=str(i).encode(), partition=i % PARTITIONS)
    producer.flush()


def check_exactly_once(bootstrap: str, records: int) -> dict[str, Any]:
    """Stock read_committed consumer: every input exactly once by value; nothing open."""
    values = read_committed(bootstrap, OUTPUT)
    counts = Counter(values)
    expected = {input_value(i).upper() for i in range(records)}
    with Admin(bootstrap) as admin:
        open_txns = [
            t.transactional_id
            for t in admin.list_transactions()
            if t.state in _OPEN and t.transactional_id.startswith(PREFIX)
        ]
    return {
        "outputs": len(values),
        "duplicates": sum(c - 1 for c in counts.values() if c > 1),
        "lost": len(expected - set(counts)),
        "unexpected": len(set(counts) - expected),
        "open": open_txns,
    }


def run_driver(bootstrap: str, checkpoint: Path, log: Path, fault: str | None) -> int:
    """One driver start in its own process group (the hooks SIGKILL the group); its code."""
    env = dict(os.environ)
    if fault is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(HOOKS), os.environ.get("PYTHONPATH", "")) if p
        )
        env["SHARETXN_TEST_FAULT"] = fault
    with log.open("ab") as out:
        driver = subprocess.Popen(
            [sys.executable, "-m", "tests.spark.kafka_source_job", bootstrap, str(checkpoint)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
        try:
            return driver.wait(DRIVER_TIMEOUT_S + 60)
        finally:
            if driver.poll() is None:
                os.killpg(driver.pid, 9)
                driver.wait()


def _cli(bootstrap: str, *argv: str) -> tuple[int, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "chaos.cli", *argv, "--bootstrap-server", bootstrap, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    try:
        return done.returncode, json.loads(done.stdout)
    except json.JSONDecodeError:
        return done.returncode, done.stdout + done.stderr


#: One query lifetime killed at the three points in successive batches; each restart recovers
#: what the previous run left.
FAULTS = ("kill-after-write-prepare:1", "kill-after-intent:2", "kill-before-commit:3")


def run_killed_three_times(bootstrap: str, tmp_path: Path, records: int = 400) -> None:
    """The scenario (asserts); every run is checked exactly once by value at its end.

    400 records on 2 partitions, 100 per batch: batches 0 to 3. After the last kill no input
    is left, so instead of a fourth query start the operator's ``sharetxn recover --apply``
    commits the decided batch 3 (the query's own start-up recovery does the same for the
    first two kills).
    """
    prepare_input(bootstrap, records)
    checkpoint = tmp_path / "checkpoint"
    for n, fault in enumerate(FAULTS):
        log = tmp_path / f"driver-{n}.log"
        code = run_driver(bootstrap, checkpoint, log, fault)
        tail = log.read_text(errors="replace")[-4000:]
        seen = check_exactly_once(bootstrap, records)
        # What is visible is never a duplicate nor anything but the inputs, killed or not.
        assert seen["duplicates"] == 0 and seen["unexpected"] == 0, (fault, seen)
        view = read_checkpoint(checkpoint)
        assert code == -9, f"the driver was not killed at {fault}:\n{tail}"
        batch = int(fault.rpartition(":")[2])
        assert batch - 1 in view.resolved and batch not in view.resolved, fault
        assert seen["open"], f"{fault}: the killed batch left nothing prepared"
        if fault.startswith("kill-after-write-prepare"):
            assert batch not in view.intents
            # the operator's tool sees the prepared writes as open transactions
            code, listed = _cli(bootstrap, "txn", "list", "--prefix", PREFIX, "--state", "Ongoing")
            assert code in (0, 1), listed
            assert listed, listed
        elif fault.startswith("kill-after-intent"):
            assert batch in view.intents and batch not in view.commits
            code, plan = _cli(bootstrap, "recover", "--checkpoint", str(checkpoint))
            assert code == 1, plan
            actions = {s["action"] for s in plan["plan"] if s["batch"] == batch}
            assert actions == {"abort", "mark-resolved"}, plan
        else:
            assert batch in view.commits and batch in view.intents
            code, plan = _cli(bootstrap, "recover", "--checkpoint", str(checkpoint))
            assert code == 1, plan
            assert {s["action"] for s in plan["plan"] if s["batch"] == batch} >= {"commit"}, plan

    code, done = _cli(
        bootstrap,
        "recover",
        "--checkpoint",
        str(checkpoint),
        "--apply",
        "--operator",
        "test",
        "--audit-log",
        str(tmp_path / "audit.jsonl"),
    )
    assert code == 2, done  # 2: acted
    assert {r["outcome"] for r in done["results"]} == {"applied"}, done
    assert max(int(b.name) for b in (checkpoint / "offsets").glob("[0-9]*")) == 3
    seen = check_exactly_once(bootstrap, records)
    assert seen == {
        "outputs": records,
        "duplicates": 0,
        "lost": 0,
        "unexpected": 0,
        "open": [],
    }, seen
    assert not read_checkpoint(checkpoint).unresolved()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
