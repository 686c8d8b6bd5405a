"""``sharetxn topics``: create, list, describe, alter and delete topics, like kafka-topics.sh.

    sharetxn topics --create --topic T [--partitions N] [--config k=v ...] [--if-not-exists]
    sharetxn topics --list [--exclude-internal]
    sharetxn topics --describe [--topic T] [--exclude-internal]
    sharetxn topics --alter --topic T --partitions N
    sharetxn topics --delete --topic T [--if-exists]

As in kafka-topics.sh, ``--topic`` is a regular expression except with ``--create``;
``--dry-run`` asks the broker to validate a create or alter without doing it.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from rich.console import Console

from chaos.cli.support import (
    EXIT_CODES_HELP,
    CliError,
    ExitCode,
    add_actions,
    add_command_options,
    emit,
    emit_json,
    error_exit_code,
    guarded,
    items_exit_code,
    report_error,
    run_admin,
)
from producer.admin import RESOURCE_TOPIC, Admin, TopicSpec
from txn.errors import ErrorCode
from txn.ids import TopicPartition

EXAMPLES = f"""examples:
  sharetxn topics --create --topic orders --partitions 6 --config retention.ms=86400000
  sharetxn topics --list
  sharetxn topics --describe --topic orders
  sharetxn topics --alter --topic orders --partitions 12
  sharetxn topics --delete --topic 'orders-.*'

{EXIT_CODES_HELP}"""

ACTIONS = {
    "create": "create a topic",
    "list": "list topic names",
    "describe": "partitions, offsets, configs",
    "alter": "add partitions to a topic",
    "delete": "delete topics",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_command_options(parser, EXAMPLES)
    add_actions(parser, ACTIONS)
    parser.add_argument(
        "--topic", help="topic name; a regular expression except with --create", metavar="TOPIC"
    )
    parser.add_argument("--partitions", type=int, metavar="N", help="number of partitions")
    parser.add_argument(
        "--replication-factor",
        type=int,
        default=-1,
        metavar="N",
        help="replication factor (a single-node broker accepts only 1)",
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a topic config for --create (repeatable)",
    )
    parser.add_argument(
        "--if-not-exists", action="store_true", help="--create: no error if it exists"
    )
    parser.add_argument(
        "--if-exists", action="store_true", help="--alter/--delete: no error if absent"
    )
    parser.add_argument(
        "--exclude-internal",
        action="store_true",
        help="--list/--describe: leave out the internal topics (__consumer_offsets, ...)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="--create/--alter: validate only, change nothing"
    )


def run(args: argparse.Namespace) -> int:
    chosen = next(a for a in ACTIONS if getattr(args, a))
    handler = {
        "create": _create,
        "list": _list,
        "describe": _describe,
        "alter": _alter,
        "delete": _delete,
    }[chosen]

    def body() -> int:
        _check_usage(args, chosen)
        return run_admin(args, "sharetxn-topics", lambda admin, con: handler(admin, con, args))

    return guarded(args, body)


def _check_usage(args: argparse.Namespace, chosen: str) -> None:
    problem = None
    if chosen in ("create", "alter", "delete") and not args.topic:
        problem = f"--{chosen} needs --topic"
    elif chosen == "alter" and args.partitions is None:
        problem = "--alter needs --partitions (the new total)"
    elif args.config and chosen != "create":
        problem = "--config goes with --create; use `sharetxn configs --alter` on a topic"
    if problem is not None:
        raise CliError(problem, ExitCode.USAGE)


def _parse_configs(items: list[str]) -> dict[str, str]:
    configs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            msg = f"--config: expected KEY=VALUE, got {item!r}"
            raise CliError(msg, ExitCode.USAGE)
        configs[key.strip()] = value.strip()
    return configs


def _matching(admin: Admin, pattern: str | None, *, exclude_internal: bool) -> list[str]:
    names = [d.name for d in admin.describe_topics() if not (exclude_internal and d.internal)]
    if pattern is None:
        return names
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        msg = f"--topic {pattern!r} is not a valid regular expression: {exc}"
        raise CliError(msg, ExitCode.USAGE) from None
    return [n for n in names if regex.fullmatch(n)]


def _create(admin: Admin, console: Console, args: argparse.Namespace) -> int:
    spec = TopicSpec(
        args.topic,
        num_partitions=-1 if args.partitions is None else args.partitions,
        replication_factor=args.replication_factor,
        configs=_parse_configs(args.config),
    )
    result = admin.create_topics_detailed([spec], validate_only=args.dry_run)[args.topic]
    exists = result.error is ErrorCode.TOPIC_ALREADY_EXISTS
    ok = result.error is ErrorCode.NONE or (exists and args.if_not_exists)
    if args.json:
        emit_json(
            {
                "topic": args.topic,
                "result": result.error.name,
                "message": result.message,
                "dry_run": args.dry_run,
            }
        )
        if not ok:  # the failure on stderr too
            report_error(
                args, f"cannot create topic {args.topic!r}: {result.describe()}", ExitCode.FAILED
            )
    elif result.error is ErrorCode.NONE:
        verb = "would be created (dry run)" if args.dry_run else "created"
        console.print(f"Topic {args.topic} {verb}.")
    elif not ok:
        raise CliError(f"cannot create topic {args.topic!r}: {result.describe()}")
    return ExitCode.OK if ok else ExitCode.FAILED


def _list(admin: Admin, console: Console, args: argparse.Namespace) -> int:
    names = _matching(admin, args.topic, exclude_internal=args.exclude_internal)
    if args.json:
        emit_json(names)
    else:
        for name in names:
            console.print(name)
    return ExitCode.OK


def _describe(admin: Admin, console: Console, args: argparse.Namespace) -> int:
    names = _matching(admin, args.topic, exclude_internal=args.exclude_internal)
    if args.topic is not None and not names:
        raise CliError(f"Topic '{args.topic}' does not exist as expected", ExitCode.NOT_FOUND)
    descriptions = [d for d in admin.describe_topics(names) if d.error is ErrorCode.NONE]
    out: list[dict[str, Any]] = []
    sizes = admin.describe_log_dirs(
        [TopicPartition(d.name, p) for d in descriptions for p in d.leaders]
    )
    for d in descriptions:
        entries = admin.describe_config_entries(RESOURCE_TOPIC, d.name)
        configs = {e.name: e.value for e in entries if e.explicit}
        effective = {e.name: e.value for e in entries}
        # the offsets of the internal topics (the coordinators' logs under Kafka's names) are
        # not served (docs/conformance.md, "Internal topics")
        partitions = []
        for p, leader in sorted(d.leaders.items()):
            tp = TopicPartition(d.name, p)
            partitions.append(
                {
                    "partition": p,
                    "leader": leader,
                    "log_start_offset": None if d.internal else admin.list_offsets(tp, -2),
                    "log_end_offset": None if d.internal else admin.list_offsets(tp, -1),
                    "size_bytes": sizes.get(tp, 0),
                }
            )
        out.append(
            {
                "topic": d.name,
                "topic_id": str(d.topic_id),
                "partition_count": len(d.leaders),
                "replication_factor": 1,
                "internal": d.internal,
                "cleanup_policy": effective.get("cleanup.policy") or "delete",
                "configs": configs,
                "partitions": partitions,
            }
        )
    if args.json:
        emit_json(out)
        return ExitCode.OK
    for topic in out:
        configs_text = ",".join(f"{k}={v}" for k, v in sorted(topic["configs"].items())) or "-"
        console.print(
            f"Topic: {topic['topic']}\tTopicId: {topic['topic_id']}\t"
            f"PartitionCount: {topic['partition_count']}\tReplicationFactor: 1\t"
            f"CleanupPolicy: {topic['cleanup_policy']}\tConfigs: {configs_text}"
        )
        emit(args, console, topic["partitions"], f"{topic['topic']}: partitions")
    if not out:
        console.print("no topics")
    return ExitCode.OK


def _existing(admin: Admin, args: argparse.Namespace) -> list[str]:
    """The topics --topic matches (internal ones aside); none is an error unless --if-exists."""
    names = _matching(admin, args.topic, exclude_internal=True)
    if not names and not args.if_exists:
        raise CliError(f"Topic '{args.topic}' does not exist as expected", ExitCode.NOT_FOUND)
    return names


def _alter(admin: Admin, console: Console, args: argparse.Namespace) -> int:
    names = _existing(admin, args)
    if not names:
        return ExitCode.OK
    results = admin.create_partitions(
        dict.fromkeys(names, args.partitions), validate_only=args.dry_run
    )
    return _report(
        args, console, results, "partitions added" + (" (dry run)" if args.dry_run else "")
    )


def _delete(admin: Admin, console: Console, args: argparse.Namespace) -> int:
    names = _existing(admin, args)
    if not names:
        return ExitCode.OK
    return _report(args, console, admin.delete_topics(names), "deleted topics")


def _report(args: argparse.Namespace, console: Console, results: Any, title: str) -> int:
    rows = [
        {"topic": name, "result": r.error.name, "message": r.message or ""}
        for name, r in sorted(results.items())
    ]
    emit(args, console, rows, title)
    for name, r in sorted(results.items()):
        if r.error is not ErrorCode.NONE:
            report_error(args, f"topic {name}: {r.describe()}", error_exit_code(r.error))
    return items_exit_code(r.error for r in results.values())
