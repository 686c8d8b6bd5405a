"""What ``sharetxn txn`` and ``sharetxn recover`` share: options, output, exit codes."""

from __future__ import annotations

import argparse
import os
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from chaos.cli.support import (
    CliError,
    UsageExitParser,
    add_connection_options,
    client_config,
    emit_json,
    exception_exit_code,
    make_console,
    print_rows,
    report_error,
)
from producer.admin import Admin
from producer.protocol.security import SECURITY_KEYS, ClientSecurity
from producer.twophase.audit import DEFAULT_AUDIT_LOG, AuditLog
from producer.twophase.execute import Executor, StepResult, results_exit_code
from producer.twophase.model import RecoveryError, RefusedError, UsageError
from producer.twophase.plan import Action, Step, plan_exit_code
from producer.twophase.scan import Scanner
from txn.errors import KafkaProtocolError
from txn.exit_codes import ExitCode

DEFAULT_SCAN_INTERVAL_S = 3.0
DEFAULT_WAIT_TIMEOUT_S = 30.0

SAFETY_NOTE = (
    "Dry run by default: prints the plan (preconditions and effects) and changes nothing; "
    "--execute acts, re-checking (state, producer id, epoch) immediately before each action."
)

EXIT_CODES_HELP = """exit codes:
  0  nothing to do          1  found (in doubt, hanging, or a dry run with actions)
  2  acted (--execute)      3  refused by a safety rule
  4  raced (state changed)  64 usage error           69 cluster unreachable or failed
  66 not found (transactional id, topic, partition)  130 interrupted (Ctrl-C)
"""

__all__ = [
    "EXIT_CODES_HELP",
    "UsageExitParser",
    "add_connection_options",
    "emit_json",
    "make_console",
    "print_rows",
]


def add_scan_interval(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scan-interval",
        type=_seconds,
        default=DEFAULT_SCAN_INTERVAL_S,
        metavar="SECONDS",
        help=(
            "back-off between the two scans; only what is unchanged in both is in doubt "
            f"(default {DEFAULT_SCAN_INTERVAL_S:g})"
        ),
    )


def add_apply_options(parser: argparse.ArgumentParser) -> None:
    """--execute (alias --apply), --audit-log, --operator, --scan-interval, --wait-timeout."""
    parser.add_argument(
        "--execute",
        "--apply",
        dest="apply",
        action="store_true",
        help="act; without it only the plan is printed (--apply: an alias)",
    )
    add_audit_log(parser, "append-only JSONL audit log")
    parser.add_argument(
        "--operator",
        default=None,
        help="who is acting, for the audit log (default $USER); --execute refuses without one",
    )
    add_scan_interval(parser)
    parser.add_argument(
        "--wait-timeout",
        type=_seconds,
        default=DEFAULT_WAIT_TIMEOUT_S,
        metavar="SECONDS",
        help=(
            "how long to wait for the coordinator to complete a transaction "
            f"(default {DEFAULT_WAIT_TIMEOUT_S:g})"
        ),
    )


def add_audit_log(parser: argparse.ArgumentParser, what: str) -> None:
    """--audit-log, described as ``what`` plus its default."""
    parser.add_argument(
        "--audit-log",
        type=Path,
        default=Path(DEFAULT_AUDIT_LOG),
        metavar="PATH",
        help=f"{what} (default ./{DEFAULT_AUDIT_LOG})",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        msg = f"expected seconds, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None
    if value < 0:
        msg = "must be >= 0"
        raise argparse.ArgumentTypeError(msg)
    return value


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?\s*$")
_UNIT_MS = {"ms": 1, None: 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}


def parse_duration_ms(text: str) -> int:
    """``500ms``, ``90s``, ``15m``, ``2h``, ``1d``; a bare number is milliseconds (Kafka's)."""
    match = _DURATION.match(text)
    if match is None:
        msg = f"expected a duration such as 90s, 15m, 2h or 1d, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    unit = match.group(2)
    per = 86_400_000 if unit == "d" else _UNIT_MS[unit]
    return int(float(match.group(1)) * per)


def require_operator(args: argparse.Namespace) -> str:
    """Who acts: ``--operator`` or ``$USER``; acting anonymously is refused (exit 3).

    The broker has no ACLs, so the tool cannot check a privilege; it at least insists on
    a name for the audit log.  Once the broker has ACLs, authorization is its job.
    """
    operator = (getattr(args, "operator", None) or os.environ.get("USER") or "").strip()
    if not operator:
        msg = (
            "acting needs an operator name for the audit log: pass --operator NAME "
            "(or set $USER); nothing was changed"
        )
        raise RefusedError(msg)
    return operator


def executor_config(args: argparse.Namespace) -> dict[str, Any]:
    """The producer settings of acting steps: --command-config's security settings."""
    config = client_config(args, "sharetxn-recovery")
    return {k: v for k, v in config.items() if k in SECURITY_KEYS}


def audit_log(args: argparse.Namespace, command: str) -> AuditLog:
    """The audit log, naming the operator and the principal the broker authenticates."""
    security = ClientSecurity.from_config(client_config(args, "sharetxn-recovery"))
    return AuditLog(
        args.audit_log,
        operator=require_operator(args),
        command=command,
        principal=security.principal,
    )


def executor(args: argparse.Namespace, scanner: Scanner, audit: AuditLog) -> Executor:
    """The executor of --execute: acting steps, each re-checked first, recorded in ``audit``."""
    return Executor(
        scanner,
        args.bootstrap_server,
        audit,
        wait_timeout_s=args.wait_timeout,
        client_config=executor_config(args),
    )


def scan_sleep(seconds: float) -> None:
    """The back-off between two scans, with a spinner on a terminal (on stderr)."""
    err = Console(stderr=True)
    if not err.is_terminal:
        time.sleep(seconds)
        return
    with err.status(f"second scan in {seconds:g}s: only what is unchanged is in doubt"):
        time.sleep(seconds)


def main(
    prog: str,
    doc: str,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    run: Callable[[argparse.Namespace], int],
    argv: list[str] | None,
) -> int:
    """A command run on its own: ``prog``, described by the first line of its ``doc``."""
    parser = UsageExitParser(prog=prog, description=doc.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run_guarded(args: argparse.Namespace, body: Callable[[Admin, Console], int]) -> int:
    """Open an Admin, run ``body``, map errors to exit codes."""
    console = make_console()
    try:
        with Admin(client_config(args, "sharetxn-recovery")) as admin:
            return body(admin, console)
    except RecoveryError as exc:
        _error(args, console, str(exc), exc.exit_code)
        return int(exc.exit_code)
    except KafkaProtocolError as exc:
        # An unknown topic, partition, group or id: NOT_FOUND; anything else: UNAVAILABLE.
        code = exception_exit_code(exc)
        code = ExitCode.NOT_FOUND if code is ExitCode.NOT_FOUND else ExitCode.UNAVAILABLE
        _error(args, console, f"{type(exc).__name__}: {exc}", code)
        return int(code)
    except CliError as exc:  # e.g. a malformed --bootstrap-server or --command-config
        _error(args, console, str(exc), exc.exit_code)
        return int(exc.exit_code)
    except ValueError as exc:
        _error(args, console, str(exc), ExitCode.USAGE)
        return int(ExitCode.USAGE)
    except KeyboardInterrupt:
        _error(args, console, "interrupted", ExitCode.INTERRUPTED)
        return int(ExitCode.INTERRUPTED)


def run_offline(args: argparse.Namespace, body: Callable[[Console], int]) -> int:
    """Run a command that needs no cluster (``txn forget``), mapping errors to exit codes."""
    console = make_console()
    try:
        return body(console)
    except RecoveryError as exc:
        _error(args, console, str(exc), exc.exit_code)
        return int(exc.exit_code)


def _error(args: argparse.Namespace, _console: Console, message: str, code: ExitCode) -> None:
    report_error(args, message, code)


def require(condition: bool, message: str) -> None:
    if not condition:
        raise UsageError(message)


# -- output -----------------------------------------------------------------------------------


_ACTION_STYLE = {
    Action.COMMIT: "green",
    Action.ABORT: "yellow",
    Action.FORCE_TERMINATE: "yellow",
    Action.WAIT: "cyan",
    Action.MARK_RESOLVED: "green",
    Action.NOOP: "dim",
    Action.REFUSE: "red",
    Action.RACED: "magenta",
}


def report_dry_run(
    args: argparse.Namespace,
    console: Console,
    header: dict[str, Any],
    title: str,
    steps: Sequence[Step],
) -> int:
    """Show a dry run's plan (``header`` leads the --json object); its exit code."""
    code = plan_exit_code(steps)
    if args.json:
        plan = [s.to_json() for s in steps]
        emit_json({**header, "mode": "dry-run", "plan": plan, "exit_code": int(code)})
    else:
        print_plan(console, steps, f"{title}: plan (dry run, nothing changed)")
        if code is ExitCode.FOUND:
            console.print("re-run with --execute to act")
    return int(code)


def report_results(
    args: argparse.Namespace,
    console: Console,
    header: dict[str, Any],
    title: str,
    results: Sequence[StepResult],
    audit: AuditLog,
) -> int:
    """Show what --execute did (``header`` leads the --json object); its exit code."""
    code = results_exit_code(results)
    if args.json:
        emit_json(
            {
                **header,
                "mode": "apply",
                "results": [r.to_json() for r in results],
                "audit_log": str(audit.path),
                "exit_code": int(code),
            }
        )
    else:
        print_results(console, results, f"{title}: results")
        console.print(f"audit log: {audit.path}")
    return int(code)


def print_plan(console: Console, steps: Sequence[Step], title: str) -> None:
    """The plan: one row per step with its preconditions and effects."""
    if not steps:
        console.print(f"{title}: nothing to do")
        return
    table = Table(title=title, title_justify="left", show_lines=True)
    for name in ("action", "transactional id", "pid", "epoch", "batch", "reason"):
        table.add_column(name, justify="right" if name in ("pid", "epoch", "batch") else "left")
    table.add_column("preconditions / effects")
    for s in steps:
        style = _ACTION_STYLE[s.action]
        details = [f"requires: {p}" for p in s.preconditions] + [f"effect: {e}" for e in s.effects]
        if s.evidence is not None:
            details.insert(0, f"evidence: {s.evidence.kind}: {s.evidence.detail}")
        table.add_row(
            f"[{style}]{s.action.value}[/]",
            s.transactional_id,
            _dash(s.producer_id),
            _dash(s.producer_epoch),
            _dash(s.batch),
            s.reason,
            "\n".join(details) or "-",
        )
    console.print(table)


def print_results(console: Console, results: Sequence[StepResult], title: str) -> None:
    if not results:
        console.print(f"{title}: nothing to do")
        return
    table = Table(title=title, title_justify="left", show_lines=True)
    for name in ("action", "transactional id", "pid", "epoch", "batch", "outcome", "detail"):
        table.add_column(name, justify="right" if name in ("pid", "epoch", "batch") else "left")
    table.add_column("before -> after")
    for r in results:
        s = r.step
        change = "-"
        if r.before is not None and r.after is not None:
            change = f"{r.before.describe()} -> {r.after.describe()}"
        table.add_row(
            f"[{_ACTION_STYLE[s.action]}]{s.action.value}[/]",
            s.transactional_id,
            _dash(s.producer_id),
            _dash(s.producer_epoch),
            _dash(s.batch),
            r.outcome.value,
            r.detail,
            change,
        )
    console.print(table)


def _dash(value: object) -> str:
    return "-" if value is None else str(value)


def format_age(ms: int | None) -> str:
    if ms is None:
        return "-"
    seconds = ms / 1000
    if seconds < 120:
        return f"{seconds:.1f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    if seconds < 172800:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"
