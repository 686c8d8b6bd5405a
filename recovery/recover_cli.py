"""``sharetxn recover``: resolve one Spark query's prepared transactions from its checkpoint.

    sharetxn recover --checkpoint DIR [--state-dir DIR] [--query-id ID]
                     [--transactional-id-prefix P] [--bootstrap-server HOST:PORT] [--apply]

Applies the decision rule of DESIGN §6 (``recovery.spark_checkpoint``): commit the
transactions of every unresolved intent whose batch is in Spark's commit log, abort the
others and the orphans, then write ``resolved/N``.  Stop the query first; a dry run by
default, with the same safety rules as ``sharetxn txn``.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
from pathlib import Path

from rich.console import Console

from producer.admin import Admin
from recovery import cli_common as common
from recovery.audit import previously_applied
from recovery.execute import Executor, results_exit_code
from recovery.model import UsageError
from recovery.plan import Action, plan_exit_code
from recovery.recover import apply_recovery, plan_recovery
from recovery.scan import Scanner
from recovery.spark_checkpoint import query_prefix, read_checkpoint
from txn.exit_codes import ExitCode

EXAMPLES = """examples:
  # what would be done (dry run)
  sharetxn recover --checkpoint /chk/orders-query --bootstrap-server 127.0.0.1:9092
  # do it, with the intents kept outside the checkpoint
  sharetxn recover --checkpoint /chk/orders-query --state-dir /eos/orders-query \\
      --transactional-id-prefix orders --apply --audit-log /var/log/sharetxn.jsonl

checkpoint layout (DESIGN §6, docs/design.md):
  DIR/metadata        {"id": "<queryId>"} (Spark's)
  DIR/commits/N       Spark's commit log: batch N is decided
  STATE/intents/N.json every prepared transaction of batch N (written by the sink)
  STATE/resolved/N    written once batch N's transactions are complete
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register ``sharetxn recover``'s options on ``parser``."""
    parser.__class__ = common.UsageExitParser  # usage errors exit with 64 (EX_USAGE)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "Resolve a Spark query's prepared transactions: commit the batches in its commit "
        "log, abort the rest and the orphans. " + common.SAFETY_NOTE
    )
    parser.epilog = EXAMPLES + "\n" + common.EXIT_CODES_HELP
    parser.add_argument("--checkpoint", required=True, type=Path, metavar="DIR")
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="where intents/ and resolved/ live (default: the checkpoint)",
    )
    parser.add_argument(
        "--query-id", default=None, help="the query id (default: from DIR/metadata or the intents)"
    )
    parser.add_argument(
        "--transactional-id-prefix",
        default=None,
        metavar="P",
        help="the user prefix of the query's transactional ids (default: from the intents)",
    )
    common.add_connection_options(parser, nested=False)
    common.add_apply_options(parser)


def run(args: argparse.Namespace) -> int:
    return common.run_guarded(args, lambda admin, console: _recover(admin, args, console))


def _recover(admin: Admin, args: argparse.Namespace, console: Console) -> int:
    if args.apply:
        common.require_operator(args)  # before anything is read or scanned
    if not args.checkpoint.is_dir():
        msg = f"--checkpoint {args.checkpoint} is not a directory"
        raise UsageError(msg)
    view = read_checkpoint(args.checkpoint, args.state_dir)
    if args.query_id and view.query_id and args.query_id != view.query_id:
        msg = f"--query-id {args.query_id} but the checkpoint belongs to query {view.query_id}"
        raise UsageError(msg)
    view = dataclasses.replace(view, query_id=args.query_id or view.query_id)
    if view.query_id is None:
        msg = (
            "no query id: the checkpoint has no metadata file and no intent names one; "
            "pass --query-id"
        )
        raise UsageError(msg)
    prefix = args.transactional_id_prefix or view.transactional_id_prefix()
    if prefix is None:
        msg = (
            "cannot tell the transactional id prefix from the intents; "
            "pass --transactional-id-prefix"
        )
        raise UsageError(msg)
    scanner = Scanner(admin, sleep=common.scan_sleep)
    steps = plan_recovery(
        scanner,
        view,
        prefix,
        args.scan_interval,
        history=functools.partial(previously_applied, args.audit_log),
    )
    header = {
        "command": "recover",
        "checkpoint": str(view.checkpoint),
        "state_dir": str(view.state_dir),
        "query_id": view.query_id,
        "transactional_id_prefix": query_prefix(prefix, view.query_id),
        "intents": sorted(view.intents),
        "commits": sorted(view.commits),
        "resolved": sorted(view.resolved),
    }
    title = f"recover query {view.query_id} ({view.checkpoint})"
    if not args.apply:
        code = plan_exit_code(steps)
        if args.json:
            common.emit_json(
                {
                    **header,
                    "mode": "dry-run",
                    "plan": [s.to_json() for s in steps],
                    "exit_code": int(code),
                }
            )
        else:
            common.print_plan(console, steps, f"{title}: plan (dry run, nothing changed)")
            if code is ExitCode.FOUND:
                console.print("re-run with --apply to act")
        return int(code)
    audit = common.audit_log(args, "recover")
    executor = Executor(
        scanner,
        args.bootstrap_server,
        audit,
        wait_timeout_s=args.wait_timeout,
        client_config=common.executor_config(args),
    )
    results = apply_recovery(executor, view, steps, by=f"sharetxn recover ({audit.operator})")
    if all(s.action is Action.NOOP for s in steps):
        audit.write("noop", {"reason": "nothing to do", "checkpoint": str(view.checkpoint)})
    code = results_exit_code(results)
    if args.json:
        common.emit_json(
            {
                **header,
                "mode": "apply",
                "results": [r.to_json() for r in results],
                "audit_log": str(audit.path),
                "exit_code": int(code),
            }
        )
    else:
        common.print_results(console, results, f"{title}: results")
        console.print(f"audit log: {audit.path}")
    return int(code)


def main(argv: list[str] | None = None) -> int:
    parser = common.UsageExitParser(prog="sharetxn recover", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
