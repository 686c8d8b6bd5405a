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
import functools
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
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
    GROUP,
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

#: How long the demo waits for the last driver to stop Spark and exit once it drained.
STOP_TIMEOUT_S = 120.0


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
    standby: bool = True,
) -> DemoResult:
    console = console or Console()
    started = time.monotonic()
    with _workdir(keep) as work:
        checkpoint = work / "checkpoint"
        # Short-lived drivers: C1 only, serial GC, and the class-data archive of an earlier
        # run; without one, the driver that exits normally (the restarted one) makes it for
        # the next run.
        archive = ClassArchive.find()
        dump_to = archive.dump_target() if archive is not None else None
        java_options = driver_java_options(archive)
        dumping = driver_java_options(archive, dump_to=dump_to)

        drivers: list[DriverProcess] = []

        def driver(*extra: str, dumper: bool, go: bool = False) -> DriverProcess:
            go_file = work / f"go-{len(drivers) + 1}"
            started_driver = DriverProcess(
                None if go else bootstrap,
                checkpoint,
                work / f"driver-{len(drivers) + 1}.log",
                records_per_partition=records_per_task,
                read_tasks=read_tasks,
                extra_args=(*extra, *_java_conf(dumping if dumper else java_options)),
                go_file=go_file if go else None,
            )
            drivers.append(started_driver)
            if dumper and dump_to is not None and archive is not None:
                archive.note_dumper(dump_to, started_driver.process.pid)
            return started_driver

        # The first driver starts its JVM and SparkSession while the broker starts and the
        # input is written; its query starts once the input is complete (``go``).  It holds
        # batch 1 once it is prepared: the kill lands while the batch is in doubt, however
        # small the batches are.
        bootstrap = ""
        pipeline_started = time.monotonic()
        current = (
            driver("--hold-batch", str(KILLED_BATCH), dumper=False, go=True)
            if crash
            else driver(dumper=True, go=True)
        )
        try:
            with LocalBroker(data_dir=work / "broker", config=BROKER_CONFIG) as broker:
                bootstrap = broker.bootstrap_servers
                console.print(f"broker {bootstrap}, data in {work}")
                with console.status(f"writing {records:,} input records"):
                    prepare_input(bootstrap, records, group=GROUP)
                current.go(bootstrap)
                restart: Callable[[], DriverProcess] | None = None
                if crash and standby:
                    # The second driver starts its JVM and SparkSession now, while the first
                    # one works, and waits: it starts the query from the checkpoint only
                    # once the first driver is dead (``go`` after the kill).
                    console.print(
                        "standby driver starting (it takes the checkpoint over only after the kill)"
                    )
                    waiting = driver(dumper=True, go=True)
                    restart = functools.partial(_take_over, waiting, bootstrap)
                elif crash:
                    restart = functools.partial(driver, dumper=True)
                current, kills, killed_batch = _run_drivers(
                    console, bootstrap, checkpoint, current, records, restart=restart
                )
                pipeline_seconds = time.monotonic() - pipeline_started
                # The driver stops Spark (and may write the class-data archive) meanwhile.
                with console.status("verifying with a stock read_committed consumer"):
                    verdict = verify(bootstrap, records)
                code = current.wait(STOP_TIMEOUT_S)
                if code != 0:
                    msg = f"the Spark driver failed (exit {code}):\n{current.tail()}"
                    raise RuntimeError(msg)
                if archive is not None:
                    archive.adopt()  # the restarted driver's archive, if its JVM is done
                committed, aborted = transaction_counts(checkpoint)
                result = DemoResult(
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
                if not keep:
                    broker.kill()  # the verdict is in and the data goes: no clean shutdown
                return result
        finally:
            for started_driver in drivers:
                if started_driver.poll() is None:
                    started_driver.kill()


def _take_over(standby: DriverProcess, bootstrap: str) -> DriverProcess:
    """The standby driver starts the query: called once the killed driver is gone."""
    standby.go(bootstrap)
    return standby


def _run_drivers(
    console: Console,
    bootstrap: str,
    checkpoint: Path,
    driver: DriverProcess,
    records: int,
    *,
    restart: Callable[[], DriverProcess] | None,
) -> tuple[DriverProcess, int, int | None]:
    """Show the progress until the query drained the input.

    With ``restart``: SIGKILL the driver once batch ``KILLED_BATCH`` (or a later one) is in
    doubt, and go on with the driver ``restart()`` starts.  Returns the last driver, the
    number of kills and the killed batch.
    """
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
        while not driver.drained():
            progress.update(task, completed=acknowledged(admin), note=_batches_note(checkpoint))
            code = driver.poll()
            if code is not None:
                if code != 0 or not driver.drained():
                    msg = f"the Spark driver failed (exit {code}):\n{driver.tail()}"
                    raise RuntimeError(msg)
                break
            batch = in_doubt_batch(checkpoint, admin) if restart is not None else None
            if restart is not None and batch is not None and batch >= KILLED_BATCH:
                driver.kill()
                kills += 1
                killed_batch = batch
                progress.console.print(
                    f"[yellow]SIGKILL of the Spark driver during batch {batch} "
                    "(read transactions prepared, batch not committed); restarting "
                    "the query from its checkpoint[/]"
                )
                progress.update(task, note="restarting")
                driver, restart = restart(), None
                continue
            time.sleep(POLL_S)
        progress.update(task, completed=acknowledged(admin), note="drained")
    return driver, kills, killed_batch


def _batches_note(checkpoint: Path) -> str:
    return f"batch {len(read_checkpoint(checkpoint).commits) if checkpoint.exists() else 0}"
