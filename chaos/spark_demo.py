"""``sharetxn demo``: the exactly-once Spark pipeline, with the driver killed midway.

An embedded broker (``LocalBroker``), an input topic of N records on 3 partitions, and the
enrichment query of ``producer.spark.job`` running in its own driver process (local[2]).  Midway,
while a batch is prepared but not committed, the demo kills the driver's whole process
group with SIGKILL, restarts the query from its checkpoint and lets it drain the input.
A stock read_committed consumer then checks that every input is in the output exactly
once, the share group has acknowledged every record, and no transaction is left open.

The pieces (input, driver process, verification) are ``producer.spark.demo``'s; this module
adds the broker, the kill and the console, so it lives in ``chaos`` (which may import the
broker launcher).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from coordinator.launcher import LocalBroker
from producer.admin import Admin
from producer.spark.class_archive import ClassArchive, driver_java_options
from producer.spark.committer import commit_lags_of
from producer.spark.demo import (
    BROKER_CONFIG,
    DEMO_READ_TASKS,
    DEMO_RECORDS_PER_TASK,
    KILL_BATCHES,
    KILLED_BATCH,
    POLL_S,
    DriverProcess,
    Verdict,
    acknowledged,
    in_doubt_batch,
    prepare_input,
    transaction_counts,
    verify,
)
from producer.twophase.spark_checkpoint import read_checkpoint


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
