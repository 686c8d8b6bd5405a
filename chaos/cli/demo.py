"""``sharetxn demo``: the exactly-once Spark pipeline on an embedded broker (chaos.spark_demo)."""

from __future__ import annotations

import argparse
import signal
from types import FrameType

from rich.console import Console

from chaos.spark_demo import batch_size, run_demo, summary_table
from producer.spark.demo import DEMO_READ_TASKS, DEMO_RECORDS, DEMO_RECORDS_PER_TASK, KILL_BATCHES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Run the exactly-once Spark pipeline on an embedded broker: enrich N records from a "
        "share group into an output topic, SIGKILL the Spark driver while a batch is "
        "prepared but not committed, restart the query from its checkpoint, and verify with "
        "a stock read_committed consumer that every input is in the output exactly once."
    )
    parser.add_argument(
        "--records",
        type=int,
        default=DEMO_RECORDS,
        help=f"input records (default {DEMO_RECORDS}: 3 batches of 10,000, one redelivered)",
    )
    parser.add_argument(
        "--crash",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="kill the driver midway and restart it (default: --crash)",
    )
    parser.add_argument(
        "--cold-restart",
        action="store_true",
        help="start the second driver only after the kill (default: a standby driver starts "
        "its JVM and SparkSession beforehand and takes the checkpoint over after the kill)",
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

    def terminated(signum: int, _frame: FrameType | None) -> None:
        # SIGTERM (``timeout``, a supervisor) unwinds as Ctrl-C does: the drivers and the
        # broker are stopped on the way out instead of being left running.
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        result = run_demo(
            records=args.records,
            crash=args.crash,
            keep=args.keep,
            records_per_task=per_task,
            read_tasks=args.read_tasks,
            console=console,
            standby=not args.cold_restart,
        )
    finally:
        signal.signal(signal.SIGTERM, previous)
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
