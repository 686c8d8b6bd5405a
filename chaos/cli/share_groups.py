"""``sharetxn share-groups``: share-group administration shaped like kafka-share-groups.sh.

    sharetxn share-groups --list
    sharetxn share-groups --describe --group G [--members | --offsets | --state]
    sharetxn share-groups --reset-offsets --group G --topic T --to-earliest [--execute]
    sharetxn share-groups --delete-offsets --group G --topic T [--execute]
    sharetxn share-groups --delete --group G [--execute]

Tables by default, ``--json`` for machines.  Changing commands print their plan and
change nothing unless ``--execute`` is given (``--dry-run`` says so explicitly).
Resetting or deleting offsets needs an empty group (no active members), as in Kafka;
``--to-offset`` is clamped to the partition's log start and end offsets, as Kafka does.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.console import Console

from chaos.cli.support import (
    EXIT_CODES_HELP,
    CliError,
    ExitCode,
    UsageExitParser,
    add_actions,
    add_command_options,
    add_execute_options,
    add_reset_target_options,
    delete_groups_action,
    emit,
    error_exit_code,
    items_exit_code,
    known_partitions,
    offset_bounds,
    plan_note,
    report_failures,
    reset_offsets_action,
    reset_target,
    run_admin_action,
)
from producer.admin import Admin
from txn.errors import ErrorCode

EXAMPLES = f"""examples:
  sharetxn share-groups --list
  sharetxn share-groups --describe --group orders --members
  sharetxn share-groups --reset-offsets --group orders --topic payments --to-earliest
  sharetxn share-groups --reset-offsets --group orders --topic payments:0 --to-offset 42 --execute
  sharetxn share-groups --delete-offsets --group orders --topic payments --execute
  sharetxn share-groups --delete --group orders --execute

{EXIT_CODES_HELP}"""

ACTIONS = {
    "list": "list share groups and their state",
    "describe": "describe share groups",
    "reset_offsets": "move share-partition start offsets (group must be empty)",
    "delete_offsets": "delete the share state of topics (group must be empty)",
    "delete": "delete empty share groups",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_command_options(parser, EXAMPLES)
    add_actions(parser, ACTIONS)
    parser.add_argument("--group", action="append", metavar="GROUP", help="group id")
    parser.add_argument(
        "--topic",
        action="append",
        metavar="TOPIC[:P,...]",
        help="TOPIC or TOPIC:PARTITION[,PARTITION...] (repeatable)",
    )
    view = parser.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true", help="members and their assignments")
    view.add_argument("--offsets", action="store_true", help="start offsets and lag (default)")
    view.add_argument("--state", action="store_true", help="group state and epochs")
    add_reset_target_options(parser)
    add_execute_options(parser, "print the plan, change nothing (the default)")


def run(args: argparse.Namespace) -> int:
    return run_admin_action(args, "sharetxn-share-groups", _check_usage, _dispatch)


def _check_usage(args: argparse.Namespace) -> None:
    problem = None
    needs_group = args.describe or args.reset_offsets or args.delete_offsets or args.delete
    if needs_group and not args.group:
        problem = "this action needs --group"
    elif (args.reset_offsets or args.delete_offsets) and not args.topic:
        problem = "this action needs --topic"
    elif args.reset_offsets and not (
        args.to_earliest or args.to_latest or args.to_offset is not None
    ):
        problem = "--reset-offsets needs --to-earliest, --to-latest or --to-offset N"
    elif (args.reset_offsets or args.delete_offsets) and len(args.group) > 1:
        problem = "this action takes one --group"
    if problem is not None:
        raise CliError(problem, ExitCode.USAGE)


def _dispatch(admin: Admin, args: argparse.Namespace, console: Console) -> int:
    if args.list:
        groups = [g for g in admin.list_groups(types=["share"]) if g.type == "share"]
        emit(
            args, console, [{"group": g.group_id, "state": g.state} for g in groups], "share groups"
        )
        return ExitCode.OK
    if args.describe:
        return max(_describe(admin, args, console, group) for group in args.group)
    if args.reset_offsets:
        return _reset_offsets(admin, args, console, args.group[0])
    if args.delete_offsets:
        return _delete_offsets(admin, args, console, args.group[0])
    described = [
        (d.group_id, "Dead" if d.error is ErrorCode.GROUP_ID_NOT_FOUND else d.state, len(d.members))
        for d in admin.describe_share_groups(list(args.group))
    ]
    return delete_groups_action(admin, args, console, described, "share")


def _existing_group(admin: Admin, group: str, *, may_be_new: bool = False) -> None:
    """What AlterShareGroupOffsets and DeleteShareGroupOffsets check first, for a plan: the
    group has no members, and (unless ``may_be_new``: a reset creates it) it exists."""
    (desc,) = admin.describe_share_groups([group])
    if desc.error is ErrorCode.GROUP_ID_NOT_FOUND and may_be_new:
        return
    if desc.error is not ErrorCode.NONE:
        msg = f"{desc.error.name}: {desc.error_message or group}"
        raise CliError(msg, error_exit_code(desc.error))
    if desc.members:
        msg = f"NonEmptyGroupError: share group {group} is not empty ({len(desc.members)} members)"
        raise CliError(msg)


def _delete_offsets(admin: Admin, args: argparse.Namespace, console: Console, group: str) -> int:
    topics = [spec.partition(":")[0] for spec in args.topic]
    if not args.execute:
        _existing_group(admin, group)
        expected: dict[str, ErrorCode] = {}
        for t in topics:
            try:
                known_partitions(admin, t)
                expected[t] = ErrorCode.NONE
            except CliError:
                expected[t] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        rows: list[dict[str, Any]] = [
            {
                "group": group,
                "topic": t,
                "action": "would delete share state" if e is ErrorCode.NONE else e.name,
            }
            for t, e in expected.items()
        ]
        emit(args, console, rows, f"{group}: delete offsets{plan_note(args)}")
    else:
        expected = admin.delete_share_group_offsets(group, topics)
        rows = [{"topic": t, "result": e.name} for t, e in expected.items()]
        emit(args, console, rows, f"{group}: share state deleted")
    report_failures(args, ((f"group {group}: topic {t}", e) for t, e in expected.items()))
    return items_exit_code(expected.values())


def _reset_offsets(admin: Admin, args: argparse.Namespace, console: Console, group: str) -> int:
    offsets = {
        tp: reset_target(args, earliest, latest)
        for tp, earliest, latest in offset_bounds(admin, args.topic)
    }
    if not args.execute:
        _existing_group(admin, group, may_be_new=True)  # a new group is created, as in Kafka
    return reset_offsets_action(
        admin.alter_share_group_offsets, args, console, group, offsets, "start_offset"
    )


def _describe(admin: Admin, args: argparse.Namespace, console: Console, group: str) -> int:
    (desc,) = admin.describe_share_groups([group])
    if desc.error is not ErrorCode.NONE:
        msg = f"{desc.error.name}: {desc.error_message or group}"
        raise CliError(msg, error_exit_code(desc.error))
    if args.members:
        rows = [
            {
                "member_id": m.member_id,
                "client_id": m.client_id,
                "host": m.client_host,
                "epoch": m.member_epoch,
                "assignment": ", ".join(str(tp) for tp in m.assignment) or "-",
            }
            for m in desc.members
        ]
        emit(args, console, rows, f"share group {desc.group_id}: members")
    elif args.state:
        rows = [
            {
                "group": desc.group_id,
                "state": desc.state,
                "group_epoch": desc.group_epoch,
                "assignment_epoch": desc.assignment_epoch,
                "assignor": desc.assignor,
                "members": len(desc.members),
            }
        ]
        emit(args, console, rows, f"share group {desc.group_id}: state")
    else:
        rows = [
            {
                "topic": o.topic,
                "partition": o.partition,
                "start_offset": o.start_offset,
                "lag": o.lag,
            }
            for o in admin.describe_share_group_offsets(group)
        ]
        emit(args, console, rows, f"share group {desc.group_id} ({desc.state}): offsets")
    return ExitCode.OK


def main(argv: list[str] | None = None) -> int:
    parser = UsageExitParser(prog="sharetxn share-groups", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
