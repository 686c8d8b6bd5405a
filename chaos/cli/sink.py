"""``sharetxn sink run CONFIG.properties [CONNECTOR.properties]``: a share sink worker process.

(``sharetxn sink standalone`` and ``sharetxn sink distributed`` run workers with Connect's
REST API: ``chaos.cli.sink_connect``.)

Shaped like ``connect-standalone.sh``: a worker properties file and a connector properties
file, or one file holding both.  Prints ``sharetxn sink NAME running ...`` once every task
has started, then a live status line (records/s, acknowledged, released, rejected, DLQ) and a
summary on exit.  SIGTERM (or Ctrl-C) stops polling, lets every task finish, acknowledge and
commit the batch it holds, and exits 0 (130 after Ctrl-C).  A bad config exits 64 with the
key at fault, an unreachable cluster 69, a task that fails (also in ``start``) 1.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

from chaos.cli import sink_connect
from chaos.cli.support import EXIT_CODES_HELP, CliError, read_properties, report_error
from producer.sink.config import SinkConfigError
from producer.sink.metrics import StatsSnapshot
from producer.sink.worker import SinkWorker, SinkWorkerError
from txn.errors import KafkaProtocolError, RetriableError
from txn.exit_codes import ExitCode

__all__ = ["add_arguments", "run"]

READY_PREFIX = "sharetxn sink "

EPILOG = (
    """example (one file):
  bootstrap.servers=127.0.0.1:9092
  consumer.group.protocol=share
  name=orders-to-file
  connector.class=producer.sink.FileSink
  topics=orders
  file=/var/data/orders.txt

"""
    + EXIT_CODES_HELP
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    run_parser = actions.add_parser(
        "run",
        help="run a connector's sink tasks on a share group until SIGTERM",
        description=(__doc__ or "").replace("``", ""),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run_parser.add_argument("config", type=Path, help="worker properties (or worker + connector)")
    run_parser.add_argument(
        "connector", type=Path, nargs="?", default=None, help="connector properties"
    )
    run_parser.add_argument(
        "--bootstrap-server",
        default=None,
        metavar="HOST:PORT",
        help="overrides bootstrap.servers of the worker properties",
    )
    run_parser.add_argument(
        "--status-interval",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="how often the status line is refreshed (default 2; 0: no status line)",
    )
    run_parser.add_argument(
        "--json", action="store_true", help="print the summary as JSON (no status line)"
    )
    sink_connect.add_parsers(actions)


def _line(snap: StatsSnapshot, rate: float) -> str:
    return (
        f"{rate:,.0f} records/s  acknowledged {snap.acknowledged:,}  released {snap.released:,}  "
        f"rejected {snap.rejected:,}  DLQ {snap.dlq:,}"
    )


def _summary(snap: StatsSnapshot, elapsed_s: float) -> dict[str, Any]:
    settled = snap.acknowledged + snap.released + snap.rejected
    return {
        "acquired": snap.acquired,
        "acknowledged": snap.acknowledged,
        "released": snap.released,
        "rejected": snap.rejected,
        "dlq": snap.dlq,
        "redelivered": snap.redelivered,
        "batches": snap.batches,
        "seconds": round(elapsed_s, 3),
        "records_per_second": round(settled / elapsed_s, 1) if elapsed_s > 0 else 0.0,
    }


def run(args: argparse.Namespace) -> int:
    if args.action == "standalone":
        return sink_connect.run_standalone(args)
    if args.action == "distributed":
        return sink_connect.run_distributed(args)
    try:
        worker_props: dict[str, Any] = dict(read_properties(args.config))
        connector_props = read_properties(args.connector) if args.connector else None
        if args.bootstrap_server:
            worker_props["bootstrap.servers"] = args.bootstrap_server
        worker = SinkWorker(worker_props, connector_props)
    except CliError as exc:
        report_error(args, str(exc), exc.exit_code)
        return int(exc.exit_code)
    except SinkConfigError as exc:
        report_error(args, f"bad config: {exc}", ExitCode.USAGE)
        return int(ExitCode.USAGE)

    interrupted: list[int] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        interrupted.append(signum)
        worker.request_stop()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        return _run(args, worker, interrupted)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run(args: argparse.Namespace, worker: SinkWorker, interrupted: list[int]) -> int:
    cfg = worker.config
    started = time.monotonic()
    try:
        worker.start()
    except SinkConfigError as exc:
        report_error(args, f"bad config: {exc}", ExitCode.USAGE)
        return int(ExitCode.USAGE)
    except SinkWorkerError as exc:
        report_error(args, str(exc), ExitCode.FAILED)
        return int(ExitCode.FAILED)
    except RetriableError as exc:
        message = f"cluster unreachable: {type(exc).__name__}: {exc}"
        report_error(args, message, ExitCode.UNAVAILABLE)
        return int(ExitCode.UNAVAILABLE)
    except KafkaProtocolError as exc:
        report_error(args, f"{type(exc).__name__}: {exc}", ExitCode.FAILED)
        return int(ExitCode.FAILED)
    print(
        f"{READY_PREFIX}{cfg.name} running: {cfg.tasks_max} task(s) on share group "
        f"{cfg.share_group_id}, {cfg.delivery_semantics}",
        flush=True,
    )
    interval = 0.0 if args.json else max(0.0, float(args.status_interval))
    tty = sys.stdout.isatty()
    last, last_at = worker.stats.snapshot(), time.monotonic()
    while not worker.wait(interval or None):
        now, snap = time.monotonic(), worker.stats.snapshot()
        settled = snap.acknowledged + snap.released + snap.rejected
        rate = (settled - (last.acknowledged + last.released + last.rejected)) / (now - last_at)
        text = _line(snap, rate)
        print(f"\r{text}   " if tty else text, end="" if tty else "\n", flush=True)
        last, last_at = snap, now
    if tty and interval:
        print()
    worker.stop()
    summary = _summary(worker.stats.snapshot(), time.monotonic() - started)
    failure = worker.failure
    if args.json:
        print(json.dumps({"connector": cfg.name, **summary, "error": _error(failure)}))
    else:
        print(
            f"sink {cfg.name} stopped: {summary['acquired']:,} acquired, "
            f"{summary['acknowledged']:,} acknowledged, {summary['released']:,} released, "
            f"{summary['rejected']:,} rejected ({summary['dlq']:,} to the DLQ), "
            f"{summary['redelivered']:,} redelivered, {summary['records_per_second']:,} "
            f"records/s over {summary['seconds']:,.1f}s",
            flush=True,
        )
    if failure is not None:
        report_error(args, f"task failed: {type(failure).__name__}: {failure}", ExitCode.FAILED)
        return int(ExitCode.FAILED)
    if signal.SIGINT in interrupted:
        return int(ExitCode.INTERRUPTED)
    return int(ExitCode.OK)


def _error(failure: BaseException | None) -> str | None:
    return None if failure is None else f"{type(failure).__name__}: {failure}"
