"""The pieces of ``sharetxn demo`` (``chaos/spark_demo.py``), also used by the Spark tests
and bench/spark_eos.py: the input, the driver process, and the exactly-once check.

An input topic of N records on 3 partitions, and the enrichment query of
``producer.spark.job`` running in its own driver process (local[2]) that ``DriverProcess``
can SIGKILL with its whole process group.  ``verify`` checks with a stock read_committed
consumer that every input is in the output exactly once, the share group has acknowledged
every record, and no transaction is left open.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from producer.admin import Admin, TopicSpec
from producer.twophase.spark_checkpoint import read_checkpoint
from txn.ids import TopicPartition

INPUT = "demo-input"
OUTPUT = "demo-output"
GROUP = "demo-enrich"
PREFIX = "sharetxn-demo"
# Kafka caps in-flight records per share partition at 2000 by default; a batch of 10,000
# records per read task needs a larger window (10,000 is the setting's maximum).
BROKER_CONFIG = {"group.share.partition.max.record.locks": "10000"}
# One read task of up to 30,000 records per batch (the 3 partitions' in-flight windows):
# few, large batches amortise Spark's per-batch cost (docs/spark.md, "Tuning").
DEMO_RECORDS_PER_TASK = 30_000
#: ``sharetxn demo``'s default input: with the kill on, batches of a third of it.  Enough
#: to show a committed batch, a killed one redelivered and the restart draining the rest;
#: more records only add steady batches to a demo of two Spark start-ups.
DEMO_RECORDS = 30_000
DEMO_READ_TASKS = 1
#: With the kill on: at least this many batches; the driver is killed in batch 1.
KILL_BATCHES = 3
KILLED_BATCH = 1
#: ``producer.spark.job.DRAINED`` (that module imports PySpark): the line the driver prints
#: once its query drained the input and stopped, before its SparkContext stops.
DRAINED = "drained: "
#: How often the demo looks at the progress (each look costs the broker some requests).
POLL_S = 0.2
_OPEN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")


def input_value(i: int) -> bytes:
    return f"rec-{i:07d}".encode()


def prepare_input(
    bootstrap: str,
    records: int,
    *,
    partitions: int = 3,
    topic: str = INPUT,
    output: str = OUTPUT,
    group: str | None = None,
) -> None:
    """Create the topics and write ``records`` unique values, spread over the partitions.

    With ``group``, that share group is created with its start offsets at 0 (as ``sharetxn
    share-groups --reset-offsets --to-earliest --execute`` does): its partitions are
    initialized before the first read task joins, which is then assigned at once instead of
    one heartbeat interval (5 s) later, as a brand-new group's first member is on Kafka 4.4.
    """
    with Admin(bootstrap) as admin:
        admin.create_topics([TopicSpec(topic, partitions), TopicSpec(output, partitions)])
        if group is not None:
            admin.alter_share_group_offsets(
                group, {TopicPartition(topic, p): 0 for p in range(partitions)}
            )
    # Batches of 100 records: a share fetch acquires whole batches, so small ones let
    # maxRecordsPerPartition cut batches finely.
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "acks": "all",
            "batch.num.messages": 100,
        }
    )
    for i in range(records):
        producer.produce(topic, input_value(i), key=str(i).encode(), partition=i % partitions)
        if i % 10_000 == 9_999:
            producer.flush()
    producer.flush()


def read_committed(bootstrap: str, topic: str, *, timeout_s: float = 120.0) -> list[bytes]:
    """Every value of ``topic`` as a stock read_committed consumer sees it."""
    with Admin(bootstrap) as admin:
        partitions = admin.list_topics().get(topic, [])
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"verify-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    try:
        ends = {
            p: consumer.get_watermark_offsets(KafkaTopicPartition(topic, p), timeout=30)[1]
            for p in partitions
        }
        consumer.assign([KafkaTopicPartition(topic, p, 0) for p in partitions])
        values: list[bytes] = []
        positions = dict.fromkeys(partitions, 0)
        deadline = time.monotonic() + timeout_s
        while any(positions[p] < ends[p] for p in partitions):
            if time.monotonic() > deadline:
                msg = f"could not read {topic} to its end within {timeout_s}s"
                raise TimeoutError(msg)
            for m in consumer.consume(5000, 0.5):
                value = m.value()
                if m.error() is None and value is not None:
                    values.append(value)
            for tp in consumer.position([KafkaTopicPartition(topic, p) for p in partitions]):
                if tp.offset >= 0:
                    positions[tp.partition] = max(positions[tp.partition], tp.offset)
    finally:
        consumer.close()
    return values


@dataclass
class Verdict:
    inputs: int
    outputs: int = 0
    duplicates: int = 0
    lost: int = 0
    unexpected: int = 0
    redeliveries: int = 0
    unacknowledged: int = 0
    open_transactions: list[str] = field(default_factory=list)

    @property
    def exactly_once(self) -> bool:
        return (
            self.duplicates == 0
            and self.lost == 0
            and self.unexpected == 0
            and self.unacknowledged == 0
            and not self.open_transactions
        )


def verify(
    bootstrap: str,
    records: int,
    *,
    topic: str = INPUT,
    output: str = OUTPUT,
    group: str = GROUP,
    prefix: str = PREFIX,
) -> Verdict:
    """Exactly once, checked from outside: the output, the share group, the coordinator."""
    values = read_committed(bootstrap, output)
    verdict = Verdict(inputs=records, outputs=len(values))
    # Output values are UPPER(input)|topic|partition|offset|delivery_count.
    counts = Counter(v.split(b"|", 1)[0].lower() for v in values)
    expected = {input_value(i) for i in range(records)}
    verdict.duplicates = sum(c - 1 for c in counts.values() if c > 1)
    verdict.lost = len(expected - set(counts))
    verdict.unexpected = len(set(counts) - expected)
    verdict.redeliveries = sum(1 for v in values if not v.endswith(b"|1"))
    with Admin(bootstrap) as admin:
        spso = admin.share_group_progress(group, [topic])
        for p in admin.list_topics().get(topic, []):
            tp = TopicPartition(topic, p)
            end = admin.list_offsets(tp, -1, read_committed=True)
            verdict.unacknowledged += max(0, end - max(spso.get(tp, 0), 0))
        verdict.open_transactions = sorted(
            t.transactional_id
            for t in admin.list_transactions()
            if t.state in _OPEN_STATES and t.transactional_id.startswith(prefix)
        )
    return verdict


class DriverProcess:
    """The Spark driver (``python -m producer.spark.job``) in its own process group.

    ``kill()`` is SIGKILL of the whole group: the Python driver, its JVM and the Python
    workers the JVM started, as when a machine or a container dies.
    """

    def __init__(
        self,
        bootstrap: str | None,
        checkpoint: Path | str,
        log_path: Path,
        *,
        records_per_partition: int = 10_000,
        read_tasks: int | None = None,
        master: str = "local[2]",
        topic: str = INPUT,
        output: str = OUTPUT,
        group: str = GROUP,
        prefix: str = PREFIX,
        timeout_s: float = 900.0,
        env: dict[str, str] | None = None,
        extra_args: tuple[str, ...] = (),
        go_file: Path | None = None,
    ) -> None:
        # ``bootstrap`` None: the driver starts Spark, then reads it from ``go_file`` once
        # ``go(bootstrap)`` wrote it (the demo starts its broker meanwhile).
        if (bootstrap is None) == (go_file is None):
            msg = "DriverProcess needs one of bootstrap and go_file"
            raise ValueError(msg)
        self.go_file = go_file
        cmd = [
            sys.executable,
            "-m",
            "producer.spark.job",
            *(["--bootstrap-server", bootstrap] if bootstrap is not None else []),
            *(["--go-file", str(go_file)] if go_file is not None else []),
            "--group",
            group,
            "--input",
            topic,
            "--output",
            output,
            "--checkpoint",
            str(checkpoint),
            "--prefix",
            prefix,
            "--max-records",
            str(records_per_partition),
            "--master",
            master,
            "--timeout",
            str(timeout_s),
            *(["--num-partitions", str(read_tasks)] if read_tasks is not None else []),
            *extra_args,
        ]
        self.log_path = log_path
        self._log: IO[bytes] = log_path.open("ab")
        self.process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            cmd,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )

    def go(self, bootstrap: str) -> None:
        """Let a driver started with ``go_file`` start its query against ``bootstrap``."""
        assert self.go_file is not None
        staging = self.go_file.with_name(f"{self.go_file.name}.tmp")
        staging.write_text(bootstrap)
        staging.replace(self.go_file)  # never seen half-written

    def poll(self) -> int | None:
        return self.process.poll()

    def drained(self) -> bool:
        """The driver printed ``DRAINED``: its query drained the input and stopped."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return False
        return any(line.startswith(DRAINED) for line in text.splitlines())

    def wait(self, timeout_s: float | None = None) -> int:
        try:
            return self.process.wait(timeout_s)
        finally:
            if self.process.poll() is not None:
                self._log.close()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self._log.close()

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def acknowledged(admin: Admin, group: str = GROUP, topic: str = INPUT) -> int:
    """Records acknowledged so far: the sum of how far the share group delivered each
    partition (``Admin.share_group_progress``)."""
    return sum(max(o, 0) for o in admin.share_group_progress(group, [topic]).values())


def in_doubt_batch(checkpoint: Path, admin: Admin, prefix: str = PREFIX) -> int | None:
    """A planned, uncommitted batch whose read transactions are open (prepared), if any."""
    offsets = checkpoint / "offsets"
    if not offsets.is_dir():
        return None
    planned = sorted(int(p.name) for p in offsets.iterdir() if p.name.isdigit())
    if not planned or (checkpoint / "commits" / str(planned[-1])).exists():
        return None
    batch = planned[-1]
    marker = f"-r-{batch % 2}-"
    open_reads = [
        t
        for t in admin.list_transactions(["Ongoing"])
        if t.transactional_id.startswith(prefix) and marker in t.transactional_id
    ]
    return batch if open_reads else None


def transaction_counts(checkpoint: Path) -> tuple[int, int]:
    """(committed, aborted) transactions, from the resolved intents and the recovery audit."""
    view = read_checkpoint(checkpoint)
    committed = sum(
        len(view.intents[b].transactions)
        for b in view.resolved
        if b in view.intents and b in view.commits
    )
    aborted = 0
    audit = checkpoint / "sharetxn-recovery.jsonl"
    if audit.exists():
        for line in audit.read_text().splitlines():
            event = json.loads(line)
            step = event.get("step") or {}
            if (
                event.get("event") == "end"
                and event.get("outcome") == "applied"
                and step.get("action") in ("abort", "force-terminate")
            ):
                aborted += 1
    return committed, aborted
