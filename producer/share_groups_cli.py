"""``sharetxn share-groups``: share-group administration shaped like kafka-share-groups.sh.

    sharetxn share-groups list
    sharetxn share-groups describe --group G [--members | --offsets]
    sharetxn share-groups reset-offsets --group G --topic T --to-earliest [--dry-run]
    sharetxn share-groups delete-offsets --group G --topic T [--dry-run]
    sharetxn share-groups delete --group G [--dry-run]

Tables by default, ``--json`` for machines.  Resetting or deleting offsets
needs an empty group (no active members), as in Kafka.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from producer.admin import Admin
from txn.errors import ErrorCode, KafkaProtocolError
from txn.ids import TopicPartition

EXAMPLES = """examples:
  sharetxn share-groups list
  sharetxn share-groups describe --group orders --members
  sharetxn share-groups reset-offsets --group orders --topic payments --to-earliest --dry-run
  sharetxn share-groups reset-offsets --group orders --topic payments:0 --to-offset 42
  sharetxn share-groups delete-offsets --group orders --topic payments
  sharetxn share-groups delete --group orders
"""

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 64


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EXAMPLES
    parser.add_argument(
        "--bootstrap-server",
        default="127.0.0.1:9092",
        help="broker address (default 127.0.0.1:9092)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    sub.add_parser("list", help="list share groups and their state")
    describe = sub.add_parser("describe", help="describe a share group")
    describe.add_argument("--group", required=True)
    view = describe.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true", help="members and their assignments")
    view.add_argument("--offsets", action="store_true", help="start offsets and lag (default)")
    view.add_argument("--state", action="store_true", help="group state and epochs")
    reset = sub.add_parser(
        "reset-offsets", help="move the share-partition start offset (group must be empty)"
    )
    reset.add_argument("--group", required=True)
    reset.add_argument(
        "--topic",
        required=True,
        action="append",
        help="TOPIC or TOPIC:PARTITION[,PARTITION...] (repeatable)",
    )
    target = reset.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true")
    target.add_argument("--to-latest", action="store_true")
    target.add_argument("--to-offset", type=int, metavar="N")
    reset.add_argument(
        "--dry-run", action="store_true", help="show the new offsets, change nothing"
    )
    delete_offsets = sub.add_parser(
        "delete-offsets", help="delete the share state of topics (group must be empty)"
    )
    delete_offsets.add_argument("--group", required=True)
    delete_offsets.add_argument("--topic", required=True, action="append")
    delete_offsets.add_argument("--dry-run", action="store_true")
    delete = sub.add_parser("delete", help="delete an empty share group")
    delete.add_argument("--group", required=True, action="append")
    delete.add_argument("--dry-run", action="store_true")


def _partitions(admin: Admin, spec: str) -> list[TopicPartition]:
    topic, _, parts = spec.partition(":")
    if parts:
        return [TopicPartition(topic, int(p)) for p in parts.split(",")]
    return [TopicPartition(topic, p) for p in admin.client.topic(topic).partitions]


def run(args: argparse.Namespace) -> int:
    console = Console()
    try:
        with Admin(args.bootstrap_server) as admin:
            return _dispatch(admin, args, console)
    except KafkaProtocolError as exc:
        console.print(f"[red]error:[/] {exc}")
        return EXIT_ERROR


def _emit(
    args: argparse.Namespace, console: Console, rows: list[dict[str, Any]], title: str
) -> None:
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return
    if not rows:
        console.print(f"{title}: none")
        return
    table = Table(title=title)
    for key in rows[0]:
        table.add_column(
            key.replace("_", " "), justify="right" if isinstance(rows[0][key], int) else "left"
        )
    for row in rows:
        table.add_row(*(str(v) for v in row.values()))
    console.print(table)


def _dispatch(admin: Admin, args: argparse.Namespace, console: Console) -> int:
    if args.action == "list":
        groups = [g for g in admin.list_groups(types=["share"]) if g.type == "share"]
        _emit(
            args, console, [{"group": g.group_id, "state": g.state} for g in groups], "share groups"
        )
        return EXIT_OK
    if args.action == "describe":
        return _describe(admin, args, console)
    if args.action == "reset-offsets":
        offsets: dict[TopicPartition, int] = {}
        for spec in args.topic:
            for tp in _partitions(admin, spec):
                if args.to_earliest:
                    offsets[tp] = admin.list_offsets(tp, -2)
                elif args.to_latest:
                    offsets[tp] = admin.list_offsets(tp, -1)
                else:
                    offsets[tp] = int(args.to_offset)
        rows: list[dict[str, Any]] = [
            {"topic": tp.topic, "partition": tp.partition, "new_start_offset": off}
            for tp, off in sorted(offsets.items())
        ]
        if args.dry_run:
            _emit(
                args, console, rows, f"{args.group}: new start offsets (dry run, nothing changed)"
            )
            return EXIT_OK
        results = admin.alter_share_group_offsets(args.group, offsets)
        for row in rows:
            row["result"] = results.get(
                TopicPartition(row["topic"], row["partition"]), ErrorCode.NONE
            ).name
        _emit(args, console, rows, f"{args.group}: start offsets reset")
        return EXIT_OK if all(e is ErrorCode.NONE for e in results.values()) else EXIT_ERROR
    if args.action == "delete-offsets":
        if args.dry_run:
            rows = [
                {"group": args.group, "topic": t, "action": "would delete share state"}
                for t in args.topic
            ]
            _emit(args, console, rows, "delete-offsets (dry run, nothing changed)")
            return EXIT_OK
        deleted = admin.delete_share_group_offsets(args.group, list(args.topic))
        rows = [{"topic": t, "result": e.name} for t, e in deleted.items()]
        outcome = list(deleted.values())
        _emit(args, console, rows, f"{args.group}: share state deleted")
        return EXIT_OK if all(e is ErrorCode.NONE for e in outcome) else EXIT_ERROR
    if args.action == "delete":
        if args.dry_run:
            descs = admin.describe_share_groups(list(args.group))
            rows = [
                {
                    "group": d.group_id,
                    "state": d.state,
                    "members": len(d.members),
                    "would_delete": d.state == "Empty",
                }
                for d in descs
            ]
            _emit(args, console, rows, "delete (dry run, nothing changed)")
            return EXIT_OK
        removed = admin.delete_groups(list(args.group))
        rows = [{"group": g, "result": e.name} for g, e in removed.items()]
        _emit(args, console, rows, "deleted share groups")
        return EXIT_OK if all(e is ErrorCode.NONE for e in removed.values()) else EXIT_ERROR
    return EXIT_USAGE


def _describe(admin: Admin, args: argparse.Namespace, console: Console) -> int:
    (desc,) = admin.describe_share_groups([args.group])
    if desc.error is not ErrorCode.NONE:
        console.print(f"[red]error:[/] {desc.error.name} {desc.error_message or ''}")
        return EXIT_ERROR
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
        _emit(args, console, rows, f"share group {desc.group_id}: members")
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
        _emit(args, console, rows, f"share group {desc.group_id}: state")
    else:
        rows = [
            {
                "topic": o.topic,
                "partition": o.partition,
                "start_offset": o.start_offset,
                "lag": o.lag,
            }
            for o in admin.describe_share_group_offsets(args.group)
        ]
        _emit(args, console, rows, f"share group {desc.group_id} ({desc.state}): offsets")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="sharetxn share-groups", description=__doc__.splitlines()[0]
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
