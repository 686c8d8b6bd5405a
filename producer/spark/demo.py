"""``sharetxn demo``: the exactly-once Spark pipeline, with the driver killed midway.

An embedded broker, an input topic of N records on 3 partitions, and the enrichment
query of ``producer.spark.job`` running in its own driver process (local[2]).  Midway,
while a batch is prepared but not committed, the demo kills the driver's whole process
group with SIGKILL, restarts the query from its checkpoint and lets it drain the input.
A stock read_committed consumer then checks that every input is in the output exactly
once, the share group has acknowledged every record, and no transaction is left open.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from coordinator.launcher import LocalBroker
from producer.admin import Admin, TopicSpec
from producer.spark.class_archive import ClassArchive, driver_java_options
from producer.spark.committer import commit_lags_of
from recovery.spark_checkpoint import read_checkpoint
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
DEMO_READ_TASKS = 1
#: With the kill on: at least this many batches; the driver is killed in batch 1.
KILL_BATCHES = 3
KILLED_BATCH = 1
#: How often the demo looks at the progress (each look costs the broker some requests).
POLL_S = 0.2
_OPEN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")


# -- the pieces (also used by the Spark tests and bench/spark_eos.py) -----------------------


def input_value(i: int) -> bytes:
    return f"rec-{i:07d}".encode()


def prepare_input(
    bootstrap: str, records: int, *, partitions: int = 3, topic: str = INPUT, output: str = OUTPUT
) -> None:
    """Create the topics and write ``records`` unique values, spread over the partitions."""
    with Admin(bootstrap) as admin:
        admin.create_topics([TopicSpec(topic, partitions), TopicSpec(output, partitions)])
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
        spso = {
            TopicPartition(o.topic, o.partition): o.start_offset
            for o in admin.describe_share_group_offsets(group, [topic])
        }
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
        bootstrap: str,
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
    ) -> None:
        cmd = [
            sys.executable,
            "-m",
            "producer.spark.job",
            "--bootstrap-server",
            bootstrap,
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

    def poll(self) -> int | None:
        return self.process.poll()

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
    """Records acknowledged so far: the sum of the share group's start offsets."""
    return sum(max(o.start_offset, 0) for o in admin.describe_share_group_offsets(group, [topic]))


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


# -- the demo ------------------------------------------------------------------------------


@dataclass
class DemoResult:
    verdict: Verdict
    batches: int
    committed_txns: int
    aborted_txns: int
    driver_kills: int
    killed_batch: int | None
    seconds: float
    data_dir: Path
    #: from the first driver's start until every record is acknowledged (kill included)
    pipeline_seconds: float = 0.0
    #: seconds from each batch's ``commits/N`` to its transactions committed (sorted)
    commit_lags: list[float] = field(default_factory=list)

    @property
    def records_per_s(self) -> float:
        return self.verdict.inputs / self.pipeline_seconds if self.pipeline_seconds > 0 else 0.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Run the exactly-once Spark pipeline on an embedded broker: enrich N records from a "
        "share group into an output topic, SIGKILL the Spark driver while a batch is "
        "prepared but not committed, restart the query from its checkpoint, and verify with "
        "a stock read_committed consumer that every input is in the output exactly once."
    )
    parser.add_argument(
        "--records", type=int, default=100_000, help="input records (default 100000)"
    )
    parser.add_argument(
        "--crash",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="kill the driver midway and restart it (default: --crash)",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the broker data, checkpoint and driver logs for inspection",
    )
    parser.add_argument(
        "--records-per-task",
        type=int,
        default=DEMO_RECORDS_PER_TASK,
        help=f"maxRecordsPerPartition: records per read task and batch "
        f"(default {DEMO_RECORDS_PER_TASK})",
    )
    parser.add_argument(
        "--read-tasks",
        type=int,
        default=DEMO_READ_TASKS,
        help=f"numPartitions: read tasks per batch (default {DEMO_READ_TASKS})",
    )


def run(args: argparse.Namespace) -> int:
    console = Console()
    if args.records < (KILL_BATCHES if args.crash else 1):
        least = f"{KILL_BATCHES} with the driver kill (or --no-crash)" if args.crash else "1"
        console.print(f"[red]--records must be at least {least}[/]")
        return 64
    from producer.spark import check_pyspark  # noqa: PLC0415 - clear message without pyspark

    try:
        version = check_pyspark()
    except ValueError as exc:
        console.print(f"[red]{exc}[/]")
        return 69
    per_task = batch_size(args.records, args.records_per_task, args.read_tasks, args.crash)
    console.print(
        f"[bold]sharetxn demo[/]: {args.records:,} records, PySpark {version}, "
        f"driver kill {'on' if args.crash else 'off'}, "
        f"{per_task * args.read_tasks:,} records a batch"
    )
    result = run_demo(
        records=args.records,
        crash=args.crash,
        keep=args.keep,
        records_per_task=per_task,
        read_tasks=args.read_tasks,
        console=console,
    )
    console.print(summary_table(result))
    if args.keep:
        console.print(f"data kept in {result.data_dir}")
    if result.verdict.exactly_once:
        console.print(
            "[bold green]exactly once: every input is in the output once, every record "
            "acknowledged, no transaction open[/]"
        )
        return 0
    console.print("[bold red]exactly-once violated[/]")
    return 1


def batch_size(records: int, per_task: int, read_tasks: int, crash: bool) -> int:
    """Records per read task: the asked size, smaller when the kill needs more batches.

    The kill lands in the second batch and the restart has a third to run, so a demo with
    the kill on has at least ``KILL_BATCHES`` batches, whatever ``--records``.
    """
    if not crash:
        return per_task
    return max(1, min(per_task, -(-records // (KILL_BATCHES * max(1, read_tasks)))))


def summary_table(result: DemoResult) -> Table:
    v = result.verdict
    table = Table(title="exactly-once Spark pipeline on a share group")
    table.add_column("measure")
    table.add_column("value", justify="right")
    rows: list[tuple[str, Any, bool]] = [
        ("inputs", f"{v.inputs:,}", False),
        ("outputs (read_committed)", f"{v.outputs:,}", False),
        ("duplicates", v.duplicates, True),
        ("lost", v.lost, True),
        ("unacknowledged inputs", v.unacknowledged, True),
        ("open transactions", len(v.open_transactions), True),
        ("batches", result.batches, False),
        ("transactions committed", result.committed_txns, False),
        ("transactions aborted", result.aborted_txns, False),
        ("redeliveries", v.redeliveries, False),
        (
            "driver SIGKILLs",
            f"{result.driver_kills}"
            + (f" (batch {result.killed_batch})" if result.killed_batch is not None else ""),
            False,
        ),
        (
            "records/s",
            f"{result.records_per_s:,.0f} ({result.pipeline_seconds:.1f} s, Spark start-ups "
            "and the kill included)",
            False,
        ),
        ("commit lag p50 / p99", _lag_text(result.commit_lags), False),
        ("wall time", f"{result.seconds:.1f} s", False),
    ]
    for name, value, must_be_zero in rows:
        if must_be_zero:
            style = "green" if value == 0 else "bold red"
            table.add_row(name, f"[{style}]{value}[/]")
        else:
            table.add_row(name, str(value))
    return table


def _lag_text(lags: list[float]) -> str:
    """p50 / p99 of the commit lag (``commits/N`` to committed), as the demo table shows it."""
    if not lags:
        return "-"
    ordered = sorted(lags)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    return f"{at(0.5):.2f} s / {at(0.99):.2f} s ({len(ordered)} batches)"


def _java_conf(options: str) -> tuple[str, ...]:
    return ("--conf", f"spark.driver.extraJavaOptions={options}")


@contextlib.contextmanager
def _workdir(keep: bool) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="sharetxn-demo-"))
    try:
        yield path
    finally:
        if not keep:
            shutil.rmtree(path, ignore_errors=True)


def run_demo(
    *,
    records: int,
    crash: bool = True,
    keep: bool = False,
    records_per_task: int = DEMO_RECORDS_PER_TASK,
    read_tasks: int | None = DEMO_READ_TASKS,
    console: Console | None = None,
) -> DemoResult:
    console = console or Console()
    started = time.monotonic()
    with (
        _workdir(keep) as work,
        LocalBroker(data_dir=work / "broker", config=BROKER_CONFIG) as broker,
    ):
        bootstrap = broker.bootstrap_servers
        checkpoint = work / "checkpoint"
        console.print(f"broker {bootstrap}, data in {work}")
        with console.status(f"writing {records:,} input records"):
            prepare_input(bootstrap, records)
        kills = 0
        killed_batch: int | None = None
        progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[note]}"),
            TimeElapsedColumn(),
            console=console,
        )
        with progress, Admin(bootstrap) as admin:
            task = progress.add_task("acknowledged", total=records, note="starting Spark")
            # Short-lived drivers: C1 only, serial GC, and the class-data archive of an
            # earlier run; without one, the driver that exits normally (the restarted one)
            # makes it for the next run.
            archive = ClassArchive.find()
            dump_to = archive.dump_target() if archive is not None else None
            java_options = driver_java_options(archive)
            dumping = driver_java_options(archive, dump_to=dump_to)
            pipeline_started = time.monotonic()
            # The first driver holds batch 1 once it is prepared: the kill lands while the
            # batch is in doubt, however small the batches are.
            driver = DriverProcess(
                bootstrap,
                checkpoint,
                work / "driver-1.log",
                records_per_partition=records_per_task,
                read_tasks=read_tasks,
                extra_args=(
                    ("--hold-batch", str(KILLED_BATCH), *_java_conf(java_options))
                    if crash
                    else _java_conf(dumping)
                ),
            )
            if dump_to is not None and archive is not None and not crash:
                archive.note_dumper(dump_to, driver.process.pid)
            crash_at = 0 if crash else None
            while True:
                done = acknowledged(admin)
                batches = len(read_checkpoint(checkpoint).commits) if checkpoint.exists() else 0
                progress.update(task, completed=done, note=f"batch {batches}")
                code = driver.poll()
                if code is not None:
                    if code != 0:
                        msg = f"the Spark driver failed (exit {code}):\n{driver.tail()}"
                        raise RuntimeError(msg)
                    break
                if crash_at is not None and done >= crash_at:
                    batch = in_doubt_batch(checkpoint, admin)
                    if batch is not None and batch >= KILLED_BATCH:
                        driver.kill()
                        kills += 1
                        killed_batch = batch
                        crash_at = None
                        progress.console.print(
                            f"[yellow]SIGKILL of the Spark driver during batch {batch} "
                            "(read transactions prepared, batch not committed); restarting "
                            "the query from its checkpoint[/]"
                        )
                        progress.update(task, note="restarting")
                        driver = DriverProcess(
                            bootstrap,
                            checkpoint,
                            work / "driver-2.log",
                            records_per_partition=records_per_task,
                            read_tasks=read_tasks,
                            extra_args=_java_conf(dumping),
                        )
                        if dump_to is not None and archive is not None:
                            archive.note_dumper(dump_to, driver.process.pid)
                        continue
                time.sleep(POLL_S)
            pipeline_seconds = time.monotonic() - pipeline_started
            if archive is not None:
                archive.adopt()  # the restarted driver's archive, if its JVM is done
            progress.update(task, completed=acknowledged(admin), note="drained")
        with console.status("verifying with a stock read_committed consumer"):
            verdict = verify(bootstrap, records)
        committed, aborted = transaction_counts(checkpoint)
        return DemoResult(
            verdict=verdict,
            batches=len(read_checkpoint(checkpoint).commits),
            committed_txns=committed,
            aborted_txns=aborted,
            driver_kills=kills,
            killed_batch=killed_batch,
            seconds=time.monotonic() - started,
            data_dir=work,
            pipeline_seconds=pipeline_seconds,
            commit_lags=commit_lags_of(checkpoint),
        )
