"""The ``sharetxn`` command line: one entry point for every command.

``sharetxn broker`` runs the broker (its options and serving are
``coordinator.command``, which ``python -m coordinator`` runs alone).  Every other
command is a module of this package, imported only when chosen so that ``sharetxn --help``
stays fast.  No library, broker or harness module imports this package (tests/unit/test_layout.py).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import sys
from collections.abc import Sequence

from coordinator import command as broker_command
from txn.exit_codes import UsageExitParser

# subcommand -> (module, help); each module has add_arguments(parser) and run(args) -> int
_EXTERNAL: dict[str, tuple[str, str]] = {
    "topics": (
        "chaos.cli.topics",
        "create, list, describe, alter and delete topics (like kafka-topics.sh)",
    ),
    "configs": (
        "chaos.cli.configs",
        "describe and alter topic, group and broker configs and client quotas "
        "(like kafka-configs.sh)",
    ),
    "consumer-groups": (
        "chaos.cli.consumer_groups",
        "list, describe, reset and delete consumer groups and offsets "
        "(like kafka-consumer-groups.sh)",
    ),
    "share-groups": (
        "chaos.cli.share_groups",
        "list, describe, reset and delete share groups (like kafka-share-groups.sh)",
    ),
    "delegation-tokens": (
        "chaos.cli.delegation_tokens",
        "create, renew, expire and describe delegation tokens (like kafka-delegation-tokens.sh)",
    ),
    "sink": (
        "chaos.cli.sink",
        "run share-group sink tasks (KIP-1302), at-least-once or exactly-once "
        "(like connect-standalone.sh and connect-distributed.sh, with Connect's REST API)",
    ),
    "txn": (
        "chaos.cli.transactions",
        "list, describe, find hanging, commit, abort and force-terminate transactions "
        "(like kafka-transactions.sh, plus pending share acks)",
    ),
    "recover": (
        "chaos.cli.recover",
        "resolve a Spark query's prepared transactions from its checkpoint",
    ),
    "chaos": (
        "chaos.cli.chaos_runs",
        "prove exactly-once under faults: deterministic simulation (run, replay, mutants) "
        "and real processes with kill -9 and SIGSTOP (real)",
    ),
    "demo": (
        "chaos.cli.demo",
        "the exactly-once Spark pipeline on an embedded broker: SIGKILL the driver midway, "
        "restart, verify exactly-once (needs the spark extra)",
    ),
    "spark-kafka-jars": (
        "chaos.cli.spark_kafka_jars",
        "print the spark.jars of Spark's own Kafka connector for the installed PySpark "
        "(resolved once with mvn), or its Maven coordinate",
    ),
    "copy-demo": (
        "chaos.cli.copy_demo",
        "copy records between topics in transactions, kill -9 the broker midway, "
        "verify exactly-once (no Spark)",
    ),
}

EXAMPLES = """examples:
  sharetxn broker --data-dir ./data --listen 127.0.0.1:9092
  sharetxn broker --data-dir ./data --listen 127.0.0.1:0 --set log.flush.interval.messages=1000
  sharetxn broker --data-dir ./data --set listeners=SASL_PLAINTEXT://127.0.0.1:9092 \
      --set sasl.enabled.mechanisms=SCRAM-SHA-256 \
      --add-scram 'SCRAM-SHA-256=[name=admin,password=admin-secret]'
  sharetxn demo --records 100000
  sharetxn copy-demo --records 2000
  sharetxn topics --create --topic orders --partitions 6 --bootstrap-server 127.0.0.1:9092
  sharetxn configs --entity-type topics --entity-name orders --describe
  sharetxn share-groups --describe --group orders --bootstrap-server 127.0.0.1:9092
  sharetxn sink run orders-to-file.properties
  sharetxn sink distributed connect-distributed.properties
  sharetxn txn list --state Ongoing --older-than 15m
  sharetxn recover --checkpoint /chk/orders-query --execute
"""


def _version() -> str:
    try:
        return importlib.metadata.version("sharetxn")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def build_parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """The parser; only the chosen client-side subcommand's module is imported (fast startup)."""
    parser = UsageExitParser(
        prog="sharetxn",
        description="Exactly-once processing for Kafka share groups (KIP-1289).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log at DEBUG level, tracebacks on errors"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    broker = sub.add_parser(
        "broker",
        help=broker_command.HELP,
        description=broker_command.DESCRIPTION,
        epilog=broker_command.EPILOG,
    )
    broker_command.add_arguments(broker)
    for name, (module, help_text) in _EXTERNAL.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            importlib.import_module(module).add_arguments(sp)
    _add_version(parser, f"sharetxn {_version()}")
    return parser


def _add_version(parser: argparse.ArgumentParser, version: str) -> None:
    """``--version`` on ``parser`` and on every command and action below it, as Kafka's
    tools take it after their name (``sharetxn topics --version``)."""
    # argparse has no public way to walk a parser's sub-commands
    if "--version" not in parser._option_string_actions:  # noqa: SLF001
        parser.add_argument("--version", action="version", version=version)
    for action in parser._actions:  # noqa: SLF001
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for child in action.choices.values():
                _add_version(child, version)


def _chosen_command(argv: Sequence[str]) -> str | None:
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in _EXTERNAL else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_chosen_command(arguments))
    args = parser.parse_args(arguments)
    broker_command.configure_logging(args.verbose, getattr(args, "log_format", "text"))
    if args.command == "broker":
        return broker_command.run(parser, args)
    module, _help = _EXTERNAL[args.command]
    result: int = importlib.import_module(module).run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
