"""What every client-side ``sharetxn`` command shares: options, output, errors, exit codes.

- options work in any position (``describe --group g --bootstrap-server b --json``);
- ``--bootstrap-server`` and ``--command-config FILE`` (a Kafka-tools properties file with
  client configs, as ``kafka-topics.sh --command-config``) on every command;
- ``--json`` prints JSON, errors included (``{"error": ..., "exit_code": ...}``);
- errors go to stderr, per-item failures of a table too; usage errors exit 64, an unknown
  topic, partition, group or transactional id 66; one exit-code table (``txn.exit_codes``);
- no traceback for a user error unless ``-v``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from producer.admin import Admin
from producer.sink import properties
from txn.errors import (
    ErrorCode,
    InvalidConfigError,
    KafkaProtocolError,
    RetriableError,
    UnknownTopicOrPartitionError,
)
from txn.exit_codes import EXIT_CODES_HELP, ExitCode, UsageExitParser
from txn.ids import TopicPartition

__all__ = [
    "EXIT_CODES_HELP",
    "CliError",
    "ExitCode",
    "UsageExitParser",
    "add_actions",
    "add_command_options",
    "add_connection_options",
    "add_execute_options",
    "add_reset_target_options",
    "client_config",
    "delete_groups_action",
    "emit",
    "emit_json",
    "error_exit_code",
    "exception_exit_code",
    "guarded",
    "items_exit_code",
    "known_partitions",
    "make_console",
    "offset_bounds",
    "offsets_result",
    "plan_note",
    "print_rows",
    "read_properties",
    "report_error",
    "report_failures",
    "reset_offsets_action",
    "reset_target",
    "run_admin",
    "run_admin_action",
    "topic_partitions",
]

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"

log = logging.getLogger(__name__)


NOT_FOUND_ERRORS = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.GROUP_ID_NOT_FOUND,
        ErrorCode.TRANSACTIONAL_ID_NOT_FOUND,
        ErrorCode.DELEGATION_TOKEN_NOT_FOUND,
    }
)
"""The broker's answers that mean "no such topic, partition, group, transactional id or
delegation token"."""


def error_exit_code(error: ErrorCode) -> ExitCode:
    """The exit code of one item the broker refused with ``error`` (NONE: OK)."""
    if error is ErrorCode.NONE:
        return ExitCode.OK
    return ExitCode.NOT_FOUND if error in NOT_FOUND_ERRORS else ExitCode.FAILED


def items_exit_code(errors: Iterable[ErrorCode]) -> ExitCode:
    """The exit code of a command over items: OK if none failed, NOT_FOUND if every failure
    was an unknown topic, partition, group or transactional id, else FAILED."""
    codes = {error_exit_code(e) for e in errors} - {ExitCode.OK}
    if not codes:
        return ExitCode.OK
    return ExitCode.NOT_FOUND if codes == {ExitCode.NOT_FOUND} else ExitCode.FAILED


def exception_exit_code(exc: KafkaProtocolError) -> ExitCode:
    """A broker error still failing after the retries: NOT_FOUND for an unknown topic,
    partition, group or transactional id; UNAVAILABLE for the network, timeouts and no
    coordinator; FAILED for any other answer to the request."""
    if exc.code in NOT_FOUND_ERRORS:
        return ExitCode.NOT_FOUND
    unreachable = isinstance(exc, RetriableError | InvalidConfigError)
    return ExitCode.UNAVAILABLE if unreachable else ExitCode.FAILED


class CliError(Exception):
    """A user-facing failure: printed as one line (or JSON), exit with ``exit_code``."""

    def __init__(self, message: str, exit_code: ExitCode = ExitCode.FAILED) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def add_connection_options(parser: argparse.ArgumentParser, *, nested: bool = False) -> None:
    """--bootstrap-server, --command-config and --json.

    Added to a command and again to each of its sub-actions with ``nested=True``, so they
    are accepted before or after the action; the nested copies only override when given.
    """
    parser.add_argument(
        "--bootstrap-server",
        default=argparse.SUPPRESS if nested else DEFAULT_BOOTSTRAP,
        metavar="HOST:PORT",
        help=f"broker address (default {DEFAULT_BOOTSTRAP})",
    )
    parser.add_argument(
        "--command-config",
        type=Path,
        default=argparse.SUPPRESS if nested else None,
        metavar="FILE",
        help="properties file with client configs (security.protocol, sasl.*, ssl.*, ...)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS if nested else False,
        help="print JSON instead of tables (errors too)",
    )


def add_command_options(parser: argparse.ArgumentParser, examples: str) -> None:
    """``examples`` under --help (as written), then the connection options."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = examples
    add_connection_options(parser)


def add_actions(parser: argparse.ArgumentParser, actions: Mapping[str, str]) -> None:
    """The command's actions, exactly one of them required: a flag per ``{action: help}``
    entry (``reset_offsets``: ``--reset-offsets``)."""
    group = parser.add_mutually_exclusive_group(required=True)
    for name, text in actions.items():
        group.add_argument("--" + name.replace("_", "-"), action="store_true", help=text)


def read_properties(path: Path) -> dict[str, str]:
    """A Java-style properties file (``producer.sink.properties``); errors are usage errors."""
    try:
        return properties.read_properties(path)
    except OSError as exc:
        msg = f"cannot read {path}: {exc.strerror or exc}"
        raise CliError(msg, ExitCode.USAGE) from None
    except properties.PropertiesError as exc:
        raise CliError(str(exc), ExitCode.USAGE) from None


def client_config(args: argparse.Namespace, client_id: str) -> dict[str, Any]:
    """The client config of a command: --command-config, then --bootstrap-server."""
    config: dict[str, Any] = {"client.id": client_id}
    command_config = getattr(args, "command_config", None)
    if command_config is not None:
        config.update(read_properties(command_config))
    config["bootstrap.servers"] = _check_bootstrap(args.bootstrap_server)
    return config


def _check_bootstrap(text: str) -> str:
    for address in text.split(","):
        host, sep, port = address.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            msg = f"--bootstrap-server: expected HOST:PORT[,HOST:PORT...], got {text!r}"
            raise CliError(msg, ExitCode.USAGE)
    return text


def make_console() -> Console:
    """A console as wide as the terminal, or 160 columns when writing to a file or pipe."""
    return Console(width=None if sys.stdout.isatty() else 160, highlight=False)


def report_error(args: argparse.Namespace, message: str, code: ExitCode) -> None:
    """One line on stderr (JSON under --json)."""
    if getattr(args, "json", False):
        print(json.dumps({"error": message, "exit_code": int(code)}), file=sys.stderr)
    else:
        console = Console(stderr=True, highlight=False, soft_wrap=True)
        console.print(f"[red]error:[/] {escape(message)}")  # a message's [...] is no markup


def report_failures(args: argparse.Namespace, failures: Iterable[tuple[str, ErrorCode]]) -> None:
    """Each failed item of a table, ``(what, error)``, also as one line on stderr."""
    for what, error in failures:
        if error is not ErrorCode.NONE:
            report_error(args, f"{what}: {error.name}", error_exit_code(error))


def guarded(args: argparse.Namespace, body: Callable[[], int]) -> int:
    """Run ``body``; a user-facing failure becomes one line on stderr and its exit code."""
    try:
        return body()
    except CliError as exc:
        return _fail(args, str(exc), exc.exit_code)
    except KafkaProtocolError as exc:
        return _fail(args, f"{type(exc).__name__}: {exc}", exception_exit_code(exc))
    except KeyboardInterrupt:
        return _fail(args, "interrupted", ExitCode.INTERRUPTED)


def _fail(args: argparse.Namespace, message: str, code: ExitCode) -> int:
    if getattr(args, "verbose", False):
        log.exception("%s", message)
    report_error(args, message, code)
    return int(code)


def run_admin(
    args: argparse.Namespace, client_id: str, body: Callable[[Admin, Console], int]
) -> int:
    """Open an Admin from the command's options, run ``body``, map errors to exit codes."""

    def run() -> int:
        with Admin(client_config(args, client_id)) as admin:
            return body(admin, make_console())

    return guarded(args, run)


def run_admin_action(
    args: argparse.Namespace,
    client_id: str,
    check_usage: Callable[[argparse.Namespace], None],
    dispatch: Callable[[Admin, argparse.Namespace, Console], int],
) -> int:
    """``check_usage`` (a ``CliError`` before connecting), then ``dispatch`` (``run_admin``)."""

    def body() -> int:
        check_usage(args)
        return run_admin(args, client_id, lambda admin, console: dispatch(admin, args, console))

    return guarded(args, body)


# -- output -----------------------------------------------------------------------------------


def emit_json(payload: Any) -> None:
    print(json.dumps(payload, indent=2, sort_keys=True, default=str))


def print_rows(
    console: Console,
    rows: list[dict[str, Any]],
    title: str,
    *,
    styles: Sequence[str | None] | None = None,
) -> None:
    """An aligned table of ``rows`` (numbers right-aligned); ``styles``: one per row."""
    if not rows:
        console.print(f"{title}: none")
        return
    table = Table(title=title, title_justify="left")
    for key in rows[0]:
        numeric = all(isinstance(r.get(key), int | float) for r in rows)
        table.add_column(key.replace("_", " "), justify="right" if numeric else "left")
    for i, row in enumerate(rows):
        style = styles[i] if styles is not None else None
        table.add_row(*("-" if v is None else str(v) for v in row.values()), style=style)
    console.print(table)


def emit(
    args: argparse.Namespace, console: Console, rows: list[dict[str, Any]], title: str
) -> None:
    """Rows as a table, or as a JSON list under --json."""
    if getattr(args, "json", False):
        emit_json(rows)
    else:
        print_rows(console, rows, title)


def topic_partitions(admin: Admin, spec: str) -> list[TopicPartition]:
    """``TOPIC`` (every partition) or ``TOPIC:P[,P...]``, as Kafka's group tools take --topic.

    An unknown topic or partition fails at once (NOT_FOUND), from one metadata answer.
    """
    topic, _, parts = spec.partition(":")
    wanted: list[int] | None = None
    if parts:
        try:
            wanted = [int(p) for p in parts.split(",")]
        except ValueError:
            msg = f"--topic: expected TOPIC or TOPIC:P[,P...], got {spec!r}"
            raise CliError(msg, ExitCode.USAGE) from None
    existing = known_partitions(admin, topic)
    if wanted is None:
        return [TopicPartition(topic, p) for p in existing]
    missing = [p for p in wanted if p not in existing]
    if missing:
        msg = (
            f"Topic '{topic}' has no partition {', '.join(map(str, missing))} "
            f"(it has {len(existing)}: 0-{len(existing) - 1})"
        )
        raise CliError(msg, ExitCode.NOT_FOUND)
    return [TopicPartition(topic, p) for p in wanted]


def known_partitions(admin: Admin, topic: str) -> list[int]:
    """The partitions of ``topic`` in a fresh metadata answer; NOT_FOUND if it has none."""
    admin.client.forget_topics([topic])
    try:
        return sorted(admin.client.topic(topic).partitions)
    except UnknownTopicOrPartitionError:
        raise CliError(f"Topic '{topic}' does not exist", ExitCode.NOT_FOUND) from None


def offset_bounds(admin: Admin, specs: Iterable[str]) -> Iterator[tuple[TopicPartition, int, int]]:
    """Each partition of the --topic ``specs`` with its log start and log end offsets."""
    for spec in specs:
        for tp in topic_partitions(admin, spec):
            yield tp, admin.list_offsets(tp, -2), admin.list_offsets(tp, -1)


def add_reset_target_options(
    parser: argparse.ArgumentParser, *, from_committed: bool = False
) -> None:
    """Where --reset-offsets moves a partition; ``from_committed`` adds the targets relative
    to the committed offset (--to-current, --shift-by N)."""
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--to-earliest", action="store_true", help="the log start offset")
    target.add_argument("--to-latest", action="store_true", help="the log end offset")
    if from_committed:
        target.add_argument("--to-current", action="store_true", help="the committed offset")
    target.add_argument("--to-offset", type=int, metavar="N", help="an offset (clamped)")
    if from_committed:
        target.add_argument("--shift-by", type=int, metavar="N", help="move by N (clamped)")


def reset_target(
    args: argparse.Namespace, earliest: int, latest: int, committed: int | None = None
) -> int:
    """The offset the --reset-offsets target picks for a partition with log start ``earliest``
    and log end ``latest`` (``committed``: the group's offset there, if it has one).

    Kafka clamps the result to the partition's log.
    """
    current = latest if committed is None else committed
    if args.to_earliest:
        wanted = earliest
    elif args.to_latest:
        wanted = latest
    elif getattr(args, "to_current", False):
        wanted = current
    elif args.to_offset is not None:
        wanted = int(args.to_offset)
    else:
        wanted = current + int(args.shift_by)
    return min(max(wanted, earliest), latest)


def add_execute_options(parser: argparse.ArgumentParser, dry_run_help: str) -> None:
    """--execute | --dry-run: a changing action only prints its plan unless --execute."""
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--execute", action="store_true", help="act (default: print the plan)")
    mode.add_argument("--dry-run", action="store_true", help=dry_run_help)


def plan_note(args: argparse.Namespace) -> str:
    return "" if getattr(args, "execute", False) else " (plan only: add --execute to change it)"


def delete_groups_action(
    admin: Admin,
    args: argparse.Namespace,
    console: Console,
    described: list[tuple[str, str, int]],
    kind: str,
) -> int:
    """``--delete --group G...``: the plan from (group, state, members), or DeleteGroups.

    The plan reports what DeleteGroups would answer: an unknown (Dead) group is not found,
    a group with members is not empty.
    """
    if not args.execute:
        expected = {g: _expected_delete_error(state, members) for g, state, members in described}
        rows: list[dict[str, Any]] = [
            {
                "group": g,
                "state": state,
                "members": members,
                "would_delete": expected[g] is ErrorCode.NONE,
            }
            for g, state, members in described
        ]
        emit(args, console, rows, f"delete{plan_note(args)}")
        report_failures(args, ((f"group {g}", e) for g, e in expected.items()))
        return items_exit_code(expected.values())
    removed = admin.delete_groups([g for g, _state, _members in described])
    rows = [{"group": g, "result": e.name} for g, e in removed.items()]
    emit(args, console, rows, f"deleted {kind} groups")
    report_failures(args, ((f"group {g}", e) for g, e in removed.items()))
    return items_exit_code(removed.values())


def _expected_delete_error(state: str, members: int) -> ErrorCode:
    if state == "Dead":
        return ErrorCode.GROUP_ID_NOT_FOUND
    return ErrorCode.NON_EMPTY_GROUP if members or state != "Empty" else ErrorCode.NONE


def offsets_result(
    args: argparse.Namespace,
    console: Console,
    rows: list[dict[str, Any]],
    results: dict[TopicPartition, ErrorCode],
    title: str,
) -> int:
    """Mark each row (topic, partition) with its result, print them, the exit code."""
    for row in rows:
        row["result"] = results.get(
            TopicPartition(row["topic"], row["partition"]), ErrorCode.NONE
        ).name
    emit(args, console, rows, title)
    report_failures(args, ((str(tp), e) for tp, e in sorted(results.items())))
    return items_exit_code(results.values())


def reset_offsets_action(
    alter: Callable[[str, dict[TopicPartition, int]], dict[TopicPartition, ErrorCode]],
    args: argparse.Namespace,
    console: Console,
    group: str,
    plan: dict[TopicPartition, int],
    offset: str,
) -> int:
    """``--reset-offsets``: the plan (``new_<offset>`` per partition), or ``alter`` and its results.

    ``offset`` names the offsets moved (``offset``, ``start_offset``) in the column and titles.
    """
    rows: list[dict[str, Any]] = [
        {"group": group, "topic": tp.topic, "partition": tp.partition, f"new_{offset}": off}
        for tp, off in sorted(plan.items())
    ]
    what = offset.replace("_", " ") + "s"
    if not args.execute:
        emit(args, console, rows, f"{group}: new {what}{plan_note(args)}")
        return ExitCode.OK
    return offsets_result(args, console, rows, alter(group, plan), f"{group}: {what} reset")
