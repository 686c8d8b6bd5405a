"""``sharetxn recover``: resolve one Spark query's prepared transactions from its checkpoint.

    sharetxn recover --checkpoint DIR|URI [--state-dir DIR|URI] [--query-id ID]
                     [--transactional-id-prefix P] [--bootstrap-server HOST:PORT] [--execute]
                     [--spark-conf KEY=VALUE ...]

Applies the decision rule of DESIGN §6 (``producer.twophase.spark_checkpoint``): commit the
transactions of every unresolved intent whose batch is in Spark's commit log, abort the
others and the orphans, then write ``resolved/N``.  Stop the query first; a dry run by
default, with the same safety rules as ``sharetxn txn``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from rich.console import Console

from chaos.cli import recovery_support as common
from producer.admin import Admin
from producer.twophase.checkpoint_fs import LOCAL, CheckpointFS, is_local, local_path
from producer.twophase.model import UsageError
from producer.twophase.plan import Action
from producer.twophase.recover import (
    HistoryLookup,
    apply_recovery,
    history_with_begun_commits,
    plan_recovery,
)
from producer.twophase.scan import Scanner
from producer.twophase.spark_checkpoint import (
    CheckpointView,
    begun_commits,
    query_prefix,
    read_checkpoint,
)

EXAMPLES = """examples:
  # what would be done (dry run)
  sharetxn recover --checkpoint /chk/orders-query --bootstrap-server 127.0.0.1:9092
  # a checkpoint on S3 (read through Hadoop's FileSystem in a local Spark JVM)
  sharetxn recover --checkpoint s3a://bucket/chk/orders --bootstrap-server 127.0.0.1:9092 \
      --spark-conf spark.driver.extraClassPath='/opt/jars/*' \
      --spark-conf spark.hadoop.fs.s3a.endpoint=https://s3.example.com
  # do it, with the intents kept outside the checkpoint
  sharetxn recover --checkpoint /chk/orders-query --state-dir /eos/orders-query \\
      --transactional-id-prefix orders --execute --audit-log /var/log/sharetxn.jsonl

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
    parser.add_argument(
        "--checkpoint",
        required=True,
        metavar="DIR|URI",
        help="the query's checkpointLocation: a local path, or any URI Spark accepts "
        "(hdfs://, s3a://, abfss://, ...: read through Hadoop's FileSystem in a local Spark "
        "JVM, configured by --spark-conf and spark-defaults.conf)",
    )
    parser.add_argument(
        "--state-dir",
        default=None,
        metavar="DIR|URI",
        help="where intents/ and resolved/ live (default: the checkpoint)",
    )
    parser.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting for the JVM that reads a non-local checkpoint (repeatable), "
        "e.g. spark.driver.extraClassPath for hadoop-aws, spark.hadoop.fs.s3a.*",
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
    fs, checkpoint, state_dir = _open(args)
    if not fs.exists(checkpoint):
        msg = f"--checkpoint {args.checkpoint} does not exist"
        raise UsageError(msg)
    view = read_checkpoint(checkpoint, state_dir, fs=fs)
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
        history=_history(args.audit_log, view, admin),
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
        return common.report_dry_run(args, console, header, title, steps)
    audit = common.audit_log(args, "recover")
    executor = common.executor(args, scanner, audit)
    results = apply_recovery(executor, view, steps, by=f"sharetxn recover ({audit.operator})")
    if all(s.action is Action.NOOP for s in steps):
        audit.write("noop", {"reason": "nothing to do", "checkpoint": str(view.checkpoint)})
    return common.report_results(args, console, header, title, results, audit)


def _open(args: argparse.Namespace) -> tuple[CheckpointFS, str, str | None]:
    """The checkpoint's store: POSIX for local paths, else Hadoop's FileSystem in a JVM."""
    locations = [args.checkpoint, *([args.state_dir] if args.state_dir else [])]
    if all(is_local(loc) for loc in locations):
        state = str(local_path(args.state_dir)) if args.state_dir else None
        return LOCAL, str(local_path(args.checkpoint)), state
    conf: dict[str, str] = {}
    for item in args.spark_conf:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            msg = f"--spark-conf {item!r}: expected KEY=VALUE"
            raise UsageError(msg)
        conf[key.strip()] = value
    try:
        from producer.twophase.hadoop_fs import standalone  # noqa: PLC0415 - needs PySpark
    except ImportError as exc:
        msg = f"--checkpoint {args.checkpoint}: a non-local checkpoint needs PySpark ({exc})"
        raise UsageError(msg) from None
    fs = standalone(args.checkpoint, conf)
    state = fs.qualify(args.state_dir) if args.state_dir else None
    return fs, fs.root, state


def _history(audit_log: str, view: CheckpointView, admin: Admin) -> HistoryLookup:
    """This tool's own applied actions, and the commits the query's commit phase began."""
    return history_with_begun_commits(
        audit_log, begun_commits(view), admin, "the query's commit phase (committing/N)"
    )


def main(argv: list[str] | None = None) -> int:
    return common.main("sharetxn recover", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
