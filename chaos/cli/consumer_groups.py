"""``sharetxn consumer-groups``: consumer-group administration shaped like kafka-consumer-groups.sh.

    sharetxn consumer-groups --list [--state]
    sharetxn consumer-groups --describe --group G [--members | --offsets | --state]
    sharetxn consumer-groups --reset-offsets --group G --topic T[:P,...] --to-earliest [--execute]
    sharetxn consumer-groups --delete-offsets --group G --topic T[:P,...] [--execute]
    sharetxn consumer-groups --delete --group G [--execute]

Changing actions print their plan and act only with ``--execute``.  Resetting offsets needs
an inactive (Empty) group, as in Kafka; ``--to-offset`` is clamped to the log.
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from chaos.cli.support import (
    EXIT_CODES_HELP,
    CliError,
    ExitCode,
    add_actions,
    add_command_options,
    add_execute_options,
    add_reset_target_options,
    delete_groups_action,
    emit,
    emit_json,
    error_exit_code,
    items_exit_code,
    offset_bounds,
    plan_note,
    report_error,
    report_failures,
    reset_offsets_action,
    reset_target,
    run_admin_action,
    topic_partitions,
)
from producer.admin import Admin
from txn.errors import ErrorCode
from txn.ids import TopicPartition

EXAMPLES = f"""examples:
  sharetxn consumer-groups --list --state
  sharetxn consumer-groups --describe --group readers            # offsets and lag
  sharetxn consumer-groups --describe --group readers --members
  sharetxn consumer-groups --reset-offsets --group readers --topic orders --to-earliest
  sharetxn consumer-groups --reset-offsets --group readers --topic orders:0 --to-offset 42 --execute
  sharetxn consumer-groups --delete-offsets --group readers --topic old-topic --execute
  sharetxn consumer-groups --delete --group readers --execute

{EXIT_CODES_HELP}"""


ACTIONS = {
    "list": "list consumer groups",
    "describe": "describe consumer groups",
    "reset_offsets": "reset committed offsets (group inactive)",
    "delete_offsets": "delete committed offsets (KIP-496)",
    "delete": "delete empty groups",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_command_options(parser, EXAMPLES)
    add_actions(parser, ACTIONS)
    parser.add_argument("--group", action="append", metavar="GROUP", help="group id")
    parser.add_argument("--all-groups", action="store_true", help="--describe: every group")
    parser.add_argument(
        "--topic", action="append", metavar="TOPIC[:P,...]", help="TOPIC or TOPIC:P[,P...]"
    )
    view = parser.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true", help="members and their partitions")
    view.add_argument("--offsets", action="store_true", help="offsets and lag (default)")
    view.add_argument("--state", action="store_true", help="state, assignor, member count")
    add_reset_target_options(parser, from_committed=True)
    add_execute_options(parser, "print the plan (the default)")


def run(args: argparse.Namespace) -> int:
    return run_admin_action(args, "sharetxn-consumer-groups", _check_usage, _dispatch)


def _check_usage(args: argparse.Namespace) -> None:
    problem = None
    if (args.reset_offsets or args.delete_offsets or args.delete) and not args.group:
        problem = "this action needs --group"
    elif args.describe and not (args.group or args.all_groups):
        problem = "--describe needs --group or --all-groups"
    elif (args.reset_offsets or args.delete_offsets) and not args.topic:
        problem = "this action needs --topic"
    elif (args.reset_offsets or args.delete_offsets) and len(args.group) > 1:
        problem = "this action takes one --group"
    elif (
        args.reset_offsets
        and not any((args.to_earliest, args.to_latest, args.to_current))
        and args.to_offset is None
        and args.shift_by is None
    ):
        problem = (
            "--reset-offsets needs --to-earliest, --to-latest, --to-current, --to-offset "
            "or --shift-by"
        )
    if problem is not None:
        raise CliError(problem, ExitCode.USAGE)


def _dispatch(admin: Admin, args: argparse.Namespace, console: Console) -> int:
    if args.list:
        groups = [g for g in admin.list_groups() if g.type in ("classic", "consumer")]
        rows: list[dict[str, Any]] = [
            {"group": g.group_id, **({"state": g.state} if args.state else {})} for g in groups
        ]
        if args.json:
            emit_json(rows)
        elif args.state:
            emit(args, console, rows, "consumer groups")
        else:
            for row in rows:
                console.print(row["group"])
        return ExitCode.OK
    if args.describe:
        ids = args.group or [
            g.group_id for g in admin.list_groups() if g.type in ("classic", "consumer")
        ]
        return max((_describe(admin, args, console, g) for g in ids), default=ExitCode.OK)
    if args.reset_offsets:
        return _reset(admin, args, console, args.group[0])
    if args.delete_offsets:
        return _delete_offsets(admin, args, console, args.group[0])
    return _delete(admin, args, console)


def _describe(admin: Admin, args: argparse.Namespace, console: Console, group: str) -> int:
    (desc,) = admin.describe_consumer_groups([group])
    if desc.error is not ErrorCode.NONE:
        raise CliError(f"{desc.error.name}: group {group}", error_exit_code(desc.error))
    if desc.state == "Dead":
        raise CliError(f"Consumer group '{group}' does not exist.", ExitCode.NOT_FOUND)
    if args.members:
        rows: list[dict[str, Any]] = [
            {
                "group": group,
                "consumer_id": m.member_id,
                "host": m.client_host,
                "client_id": m.client_id,
                "partitions": len(m.assignment),
                "assignment": ", ".join(str(tp) for tp in m.assignment) or "-",
            }
            for m in desc.members
        ]
        emit(args, console, rows, f"consumer group {group} ({desc.state}): members")
        return ExitCode.OK
    if args.state:
        rows = [
            {
                "group": group,
                "assignment_strategy": desc.assignor or "-",
                "state": desc.state,
                "members": len(desc.members),
            }
        ]
        emit(args, console, rows, f"consumer group {group}: state")
        return ExitCode.OK
    owners = {tp: m for m in desc.members for tp in m.assignment}
    committed = admin.list_consumer_group_offsets(group)
    rows = []
    for tp in sorted(set(committed) | set(owners)):
        end = admin.list_offsets(tp, -1)
        current = committed.get(tp)
        owner = owners.get(tp)
        rows.append(
            {
                "group": group,
                "topic": tp.topic,
                "partition": tp.partition,
                "current_offset": current,
                "log_end_offset": end,
                "lag": None if current is None else max(0, end - current),
                "consumer_id": owner.member_id if owner else None,
                "host": owner.client_host if owner else None,
                "client_id": owner.client_id if owner else None,
            }
        )
    emit(args, console, rows, f"consumer group {group} ({desc.state}): offsets")
    return ExitCode.OK


def _reset(admin: Admin, args: argparse.Namespace, console: Console, group: str) -> int:
    (desc,) = admin.describe_consumer_groups([group])
    if desc.state not in ("Empty", "Dead"):
        msg = (
            f"Assignments can only be reset if the group '{group}' is inactive, "
            f"but the current state is {desc.state}."
        )
        raise CliError(msg)
    committed = admin.list_consumer_group_offsets(group)
    plan: dict[TopicPartition, int] = {}
    for tp, earliest, latest in offset_bounds(admin, args.topic):
        plan[tp] = reset_target(args, earliest, latest, committed.get(tp))
    return reset_offsets_action(
        admin.alter_consumer_group_offsets, args, console, group, plan, "offset"
    )


def _delete_offsets(admin: Admin, args: argparse.Namespace, console: Console, group: str) -> int:
    """KIP-496 OffsetDelete; the plan (without --execute) checks what --execute would meet:
    an unknown group, unknown topics or partitions, topics the group is subscribed to."""
    partitions: list[TopicPartition] = []
    unknown: list[dict[str, Any]] = []
    for spec in args.topic:
        topic, _, parts = spec.partition(":")
        try:
            partitions += topic_partitions(admin, spec)
        except CliError as exc:
            if exc.exit_code is not ExitCode.NOT_FOUND:
                raise
            # The seed's form for a topic that does not exist ("Not Provided" without P).
            unknown.append(
                {
                    "topic": topic,
                    "partition": parts or "Not Provided",
                    "status": f"Error: {_message(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)}",
                }
            )
            report_error(args, str(exc), ExitCode.NOT_FOUND)
    if not args.execute:
        return _plan_delete_offsets(admin, args, console, group, partitions, unknown)
    error, results = admin.delete_consumer_group_offsets(group, partitions)
    if error is not ErrorCode.NONE:
        # The seed's group-level form: "Error: Deletion of offsets failed due to: <message>"
        raise CliError(
            f"Deletion of offsets failed due to: {_message(error)}", error_exit_code(error)
        )
    return _offsets_deleted(args, console, group, unknown, results, "offsets deleted")


def _plan_delete_offsets(
    admin: Admin,
    args: argparse.Namespace,
    console: Console,
    group: str,
    partitions: list[TopicPartition],
    unknown: list[dict[str, Any]],
) -> int:
    (desc,) = admin.describe_consumer_groups([group])
    error = desc.error
    if error is ErrorCode.NONE and desc.state == "Dead":
        error = ErrorCode.GROUP_ID_NOT_FOUND
    if error is not ErrorCode.NONE:
        raise CliError(
            f"Deletion of offsets failed due to: {_message(error)}", error_exit_code(error)
        )
    active = desc.state not in ("Empty", "Dead")
    assigned = {tp.topic for m in desc.members for tp in m.assignment}
    expected = {
        tp: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
        if active and tp.topic in assigned
        else ErrorCode.NONE
        for tp in partitions
    }
    title = f"delete offsets{plan_note(args)}"
    return _offsets_deleted(args, console, group, unknown, expected, title, plan=True)


def _offsets_deleted(
    args: argparse.Namespace,
    console: Console,
    group: str,
    unknown: list[dict[str, Any]],
    results: dict[TopicPartition, ErrorCode],
    title: str,
    *,
    plan: bool = False,
) -> int:
    done = "would delete" if plan else "Successful"
    rows: list[dict[str, Any]] = [
        {
            "topic": tp.topic,
            "partition": tp.partition,
            "status": done if e is ErrorCode.NONE else f"Error: {_message(e)}",
        }
        for tp, e in sorted(results.items())
    ]
    emit(args, console, unknown + rows, f"{group}: {title}")
    report_failures(args, ((f"group {group}: {tp}", e) for tp, e in sorted(results.items())))
    codes = list(results.values()) + [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION] * len(unknown)
    return items_exit_code(codes)


_MESSAGES = {
    ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC: "The consumer group is actively subscribed to the topic",
    ErrorCode.GROUP_ID_NOT_FOUND: "The group id does not exist",
    ErrorCode.NON_EMPTY_GROUP: "The group is not empty",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
}


def _message(error: ErrorCode) -> str:
    return _MESSAGES.get(error, error.name)


def _delete(admin: Admin, args: argparse.Namespace, console: Console) -> int:
    described = [
        (d.group_id, d.state, len(d.members))
        for d in admin.describe_consumer_groups(list(args.group))
    ]
    return delete_groups_action(admin, args, console, described, "consumer")
