"""``sharetxn txn``: find and safely resolve in-doubt transactions (like kafka-transactions.sh).

    sharetxn txn list [--state S] [--older-than DURATION] [--prefix P]
    sharetxn txn describe --transactional-id ID
    sharetxn txn describe-producers --topic T --partition P
    sharetxn txn find-hanging [--topic T] [--max-transaction-timeout MIN]
    sharetxn txn commit --transactional-id ID --producer-id P --epoch E [--prepared-state JSON]
    sharetxn txn abort --transactional-id ID --producer-id P --epoch E
    sharetxn txn force-terminate --transactional-id ID

KIP-664's commands plus the KIP-1289 view (pending share acknowledgements per share
partition) and KIP-939's commit/abort/force-terminate of prepared transactions.  Commit,
abort and force-terminate are dry runs unless ``--apply`` is given; see docs/recovery.md.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.table import Table

from producer.admin import Admin, SharePendingAcks
from producer.types import PreparedTxnState
from recovery import cli_common as common
from recovery.audit import previously_applied
from recovery.execute import Executor, results_exit_code
from recovery.hanging import confirmed, find_hanging
from recovery.model import OPEN_STATES, STATE_NAMES, ExitCode, TxnSnapshot, UsageError
from recovery.plan import Action, Evidence, EvidenceKind, Op, plan_exit_code, plan_step
from recovery.scan import Scanner, ScanPair
from txn.ids import SHARE_GROUP_STATE_TOPIC, TopicPartition

EXAMPLES = """examples:
  sharetxn txn list --state Ongoing --older-than 15m
  sharetxn txn describe --transactional-id spark-q1-r-0-3
  sharetxn txn find-hanging --max-transaction-timeout 15
  sharetxn txn commit --transactional-id job-7 --producer-id 4001 --epoch 3 \\
      --prepared-state '{"transactional_id": "job-7", "producer_id": 4001, "epoch": 3}' --apply
  sharetxn txn abort --transactional-id job-7 --producer-id 4001 --epoch 3 --apply
"""

_SUB_EXAMPLES = {
    "list": """examples:
  sharetxn txn list
  sharetxn txn list --state Ongoing --state PrepareCommit --older-than 10m --json
  sharetxn txn list --prefix spark-myquery- --scan-interval 10
""",
    "describe": """examples:
  sharetxn txn describe --transactional-id job-7
  sharetxn txn describe --transactional-id job-7 --json
""",
    "describe-producers": """examples:
  sharetxn txn describe-producers --topic payments --partition 0
""",
    "find-hanging": """examples:
  sharetxn txn find-hanging
  sharetxn txn find-hanging --topic payments --max-transaction-timeout 30
  sharetxn txn find-hanging --max-transaction-timeout 0 --scan-interval 1 --json
""",
    "commit": """examples:
  # plan only (dry run)
  sharetxn txn commit --transactional-id job-7 --producer-id 4001 --epoch 3 \\
      --prepared-state "$(cat job-7.prepared.json)"
  # act; the audit log records it
  sharetxn txn commit --transactional-id job-7 --producer-id 4001 --epoch 3 \\
      --prepared-state "$(cat job-7.prepared.json)" --apply --audit-log /var/log/sharetxn.jsonl
  # a transaction in PrepareCommit needs no evidence: the tool waits for the coordinator
  sharetxn txn commit --transactional-id job-7 --producer-id 4001 --epoch 3 --apply
""",
    "abort": """examples:
  sharetxn txn abort --transactional-id job-7 --producer-id 4001 --epoch 3
  sharetxn txn abort --transactional-id job-7 --producer-id 4001 --epoch 3 --apply
""",
    "force-terminate": """examples:
  sharetxn txn force-terminate --transactional-id job-7
  sharetxn txn force-terminate --transactional-id job-7 --producer-id 4001 --epoch 3 --apply
""",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register ``sharetxn txn``'s options and actions on ``parser``."""
    # Usage errors exit with 64 (EX_USAGE), also for this level's own options.
    parser.__class__ = common.UsageExitParser
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "List, describe, find hanging, commit, abort and force-terminate transactions. "
        + common.SAFETY_NOTE
    )
    parser.epilog = EXAMPLES + "\n" + common.EXIT_CODES_HELP
    common.add_connection_options(parser, nested=False)
    sub = parser.add_subparsers(
        dest="action", required=True, metavar="ACTION", parser_class=common.UsageExitParser
    )

    def action(name: str, help_text: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=_SUB_EXAMPLES[name] + "\n" + common.EXIT_CODES_HELP,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        common.add_connection_options(sp, nested=True)
        return sp

    lst = action("list", "list transactions; open ones unchanged in two scans are in doubt")
    lst.add_argument(
        "--state",
        action="append",
        default=[],
        metavar="STATE",
        help=f"only this state (repeatable): {', '.join(STATE_NAMES)}",
    )
    lst.add_argument(
        "--older-than",
        type=common.parse_duration_ms,
        default=None,
        metavar="DURATION",
        help="only open transactions running longer than this (90s, 15m, 2h, 1d; bare = ms)",
    )
    lst.add_argument("--prefix", default=None, help="only transactional ids with this prefix")
    common.add_scan_interval(lst)

    desc = action(
        "describe",
        "describe a transaction with its participants: partitions (leader view) and "
        "share-state partitions with their pending acks (share coordinator view)",
    )
    desc.add_argument("--transactional-id", required=True, metavar="ID")

    dp = action("describe-producers", "the producers a partition's leader knows (KIP-664)")
    dp.add_argument("--topic", required=True)
    dp.add_argument("--partition", required=True, type=int)

    fh = action(
        "find-hanging",
        "open transactions the coordinator does not know, pending share acks of finished "
        "or unknown transactions, prepared 2PC transactions older than the threshold",
    )
    fh.add_argument("--topic", action="append", default=None, help="limit to a topic (repeat)")
    fh.add_argument(
        "--max-transaction-timeout",
        type=float,
        default=15.0,
        metavar="MIN",
        help="report only transactions open longer than this many minutes (default 15)",
    )
    common.add_scan_interval(fh)

    for name, help_text in (
        ("commit", "commit a prepared transaction; needs durable evidence of the decision"),
        ("abort", "abort an open transaction; refused after a durable commit decision"),
    ):
        sp = action(name, help_text)
        sp.add_argument("--transactional-id", required=True, metavar="ID")
        sp.add_argument("--producer-id", required=True, type=int, metavar="P")
        sp.add_argument("--epoch", required=True, type=int, metavar="E")
        if name == "commit":
            sp.add_argument(
                "--prepared-state",
                default=None,
                metavar="JSON",
                help="the PreparedTxnState the application stored (str(state)): the evidence",
            )
        common.add_apply_options(sp)
    ft = action(
        "force-terminate",
        "fence the id's producer and abort its open transaction (InitProducerId without "
        "keep_prepared_txn); refused in PrepareCommit",
    )
    ft.add_argument("--transactional-id", required=True, metavar="ID")
    ft.add_argument("--producer-id", type=int, default=None, metavar="P", help="expected (CAS)")
    ft.add_argument("--epoch", type=int, default=None, metavar="E", help="expected (CAS)")
    common.add_apply_options(ft)


def run(args: argparse.Namespace) -> int:
    handlers = {
        "list": _list,
        "describe": _describe,
        "describe-producers": _describe_producers,
        "find-hanging": _find_hanging,
        "commit": _resolve,
        "abort": _resolve,
        "force-terminate": _resolve,
    }
    handler = handlers[args.action]
    return common.run_guarded(args, lambda admin, console: handler(admin, args, console))


# -- list -------------------------------------------------------------------------------------


def _states(names: list[str]) -> list[str]:
    by_lower = {s.lower(): s for s in STATE_NAMES}
    out = []
    for name in names:
        state = by_lower.get(name.lower())
        if state is None:
            msg = f"unknown state {name!r}; one of {', '.join(STATE_NAMES)}"
            raise UsageError(msg)
        out.append(state)
    return out


def _list(admin: Admin, args: argparse.Namespace, console: Console) -> int:
    scanner = Scanner(admin, sleep=common.scan_sleep)
    states = _states(args.state)
    listings = scanner.listings(states=states, prefix=args.prefix)
    first = scanner.snapshots(t.transactional_id for t in listings)
    if args.older_than is not None:
        first = {
            tid: s
            for tid, s in first.items()
            if (age := s.age_ms()) is not None and age >= args.older_than
        }
    pairs = scanner.two_scans(first, args.scan_interval)
    pending = scanner.pending_acks() if pairs else {}
    rows = [_list_row(p, pending.get(p.second.producer_id)) for p in pairs.values()]
    in_doubt = sum(1 for r in rows if r["in_doubt"])
    if args.json:
        common.emit_json(
            {
                "command": "txn list",
                "transactions": rows,
                "in_doubt": in_doubt,
                "exit_code": int(ExitCode.FOUND if in_doubt else ExitCode.NOTHING_TO_DO),
            }
        )
    else:
        display = [
            {
                "transactional_id": r["transactional_id"],
                "state": r["state"],
                "producer_id": r["producer_id"],
                "epoch": r["producer_epoch"],
                "2pc": "yes" if r["two_phase_commit"] else "no",
                "age": common.format_age(r["age_ms"]),
                "partitions": len(r["partitions"]),
                "pending_acks": r["pending_acks"],
                "in_doubt": "IN DOUBT" if r["in_doubt"] else "",
                "note": r["warning"] or "",
            }
            for r in rows
        ]
        common.print_rows(console, display, "transactions")
    return int(ExitCode.FOUND if in_doubt else ExitCode.NOTHING_TO_DO)


def _list_row(pair: ScanPair, acks: SharePendingAcks | None) -> dict[str, Any]:
    snap = pair.second
    row = snap.to_json()
    row["pending_acks"] = acks.pending_records if acks is not None else 0
    row["in_doubt"] = pair.in_doubt
    row["changed_between_scans"] = not pair.unchanged
    row["warning"] = _warning(pair)
    return row


def _warning(pair: ScanPair) -> str | None:
    snap = pair.second
    if not pair.unchanged:
        return "changed between scans (live)"
    age = snap.age_ms()
    if snap.state == "Ongoing" and snap.two_phase and pair.in_doubt:
        return "prepared (2PC): resolve with commit/abort"
    if snap.state == "Ongoing" and age is not None and snap.timeout_ms > 0:
        share = age / snap.timeout_ms
        if share >= 0.8:
            return f"at {share:.0%} of its timeout"
    if snap.state.startswith("Prepare") and pair.in_doubt:
        return "markers not yet delivered"
    return None


# -- describe ---------------------------------------------------------------------------------


def _describe(admin: Admin, args: argparse.Namespace, console: Console) -> int:
    scanner = Scanner(admin, sleep=common.scan_sleep)
    snap = scanner.snapshot(args.transactional_id)
    pending = scanner.pending_acks([snap.producer_id]) if snap.known else {}
    acks = pending.get(snap.producer_id)
    participants = _participants(scanner, snap, acks)
    epoch = acks.producer_epoch if acks else None
    payload: dict[str, Any] = {
        "command": "txn describe",
        "transaction": snap.to_json(),
        "participants": participants,
        "pending_acks": [
            {
                "group_id": e.group_id,
                "topic": e.topic,
                "topic_id": str(e.topic_id),
                "partition": e.partition,
                "state_partition": e.state_partition,
                "pending_records": e.pending_records,
                "first_offset": e.first_offset,
                "last_offset": e.last_offset,
                "producer_epoch": epoch,
            }
            for e in (acks.entries if acks else ())
        ],
    }
    code = ExitCode.FOUND if snap.is_open else ExitCode.NOTHING_TO_DO
    payload["exit_code"] = int(code)
    if args.json:
        common.emit_json(payload)
        return int(code)
    head = Table(
        title=f"transaction {snap.transactional_id}", title_justify="left", show_header=False
    )
    head.add_column("field")
    head.add_column("value")
    start = snap.start_time_ms
    for key, value in (
        ("state", snap.state),
        ("producer id", snap.producer_id),
        ("producer epoch", snap.producer_epoch),
        (
            "timeout ms",
            f"{snap.timeout_ms} (2PC: never times out)" if snap.two_phase else snap.timeout_ms,
        ),
        (
            "start time",
            datetime.fromtimestamp(start / 1000, UTC).isoformat() if start > 0 else "-",
        ),
        ("age", common.format_age(snap.age_ms())),
        ("partitions", ", ".join(map(str, snap.partitions)) or "-"),
        ("pending share acks", acks.pending_records if acks else 0),
        ("observed at", datetime.fromtimestamp(snap.observed_at_ms / 1000, UTC).isoformat()),
    ):
        head.add_row(key, str(value))
    console.print(head)
    common.print_rows(console, participants, "participants (coordinator vs participant views)")
    common.print_rows(
        console,
        [
            {
                "group": r["group_id"],
                "topic": r["topic"] or r["topic_id"],
                "partition": r["partition"],
                "state_partition": r["state_partition"],
                "pending_acks": r["pending_records"],
                "offsets": f"{r['first_offset']}-{r['last_offset']}",
            }
            for r in payload["pending_acks"]
        ],
        "pending share acks per share-partition",
    )
    return int(code)


def _participants(
    scanner: Scanner, snap: TxnSnapshot, acks: SharePendingAcks | None
) -> list[dict[str, Any]]:
    """One row per participant: the coordinator's view next to the participant's own."""
    rows: list[dict[str, Any]] = []
    listed = set(snap.partitions)
    for tp in snap.data_partitions:
        producers = [p for p in scanner.producers(tp) if p.producer_id == snap.producer_id]
        start = producers[0].current_txn_start_offset if producers else -1
        flag = ""
        if snap.is_open and start < 0:
            flag = "no open transaction on the partition yet"
        rows.append(
            {
                "participant": str(tp),
                "kind": "data partition",
                "coordinator": f"in {snap.state} transaction",
                "participant_view": (
                    f"open transaction from offset {start}" if start >= 0 else "nothing open"
                ),
                "flag": flag,
            }
        )
    entries = list(acks.entries) if acks else []
    for tp in snap.share_state_partitions:
        here = [e for e in entries if e.state_partition == tp.partition]
        count = sum(e.pending_records for e in here)
        flag = ""
        if not snap.is_open and count:
            flag = "DISAGREE: pending acks of a finished transaction"
        elif acks is not None and acks.producer_epoch != snap.producer_epoch and count:
            flag = f"DISAGREE: staged by epoch {acks.producer_epoch}"
        rows.append(
            {
                "participant": str(tp),
                "kind": "share-state partition",
                "coordinator": f"in {snap.state} transaction",
                "participant_view": f"{count} pending acks"
                + (
                    " (" + ", ".join(f"{e.group_id}/{e.topic}-{e.partition}" for e in here) + ")"
                    if here
                    else ""
                ),
                "flag": flag,
            }
        )
    for e in entries:
        tp = TopicPartition(SHARE_GROUP_STATE_TOPIC, e.state_partition)
        if tp not in listed:
            rows.append(
                {
                    "participant": str(tp),
                    "kind": "share-state partition",
                    "coordinator": "not in the transaction",
                    "participant_view": f"{e.pending_records} pending acks "
                    f"({e.group_id}/{e.topic}-{e.partition})",
                    "flag": "DISAGREE: hanging pending acks",
                }
            )
    return rows


# -- describe-producers -----------------------------------------------------------------------


def _describe_producers(admin: Admin, args: argparse.Namespace, console: Console) -> int:
    scanner = Scanner(admin, sleep=common.scan_sleep)
    tp = TopicPartition(args.topic, args.partition)
    if args.partition not in scanner.partitions(args.topic):
        msg = f"topic {args.topic!r} has no partition {args.partition}"
        raise UsageError(msg)
    producers = scanner.producers(tp)
    by_pid = {t.producer_id: t for t in scanner.listings()}
    rows = []
    flagged = 0
    for p in producers:
        listing = by_pid.get(p.producer_id)
        flag = ""
        if p.current_txn_start_offset >= 0 and (
            listing is None or listing.state not in OPEN_STATES
        ):
            flag = "HANGING? the coordinator has no open transaction for it"
            flagged += 1
        rows.append(
            {
                "producer_id": p.producer_id,
                "producer_epoch": p.producer_epoch,
                "latest_coordinator_epoch": p.coordinator_epoch,
                "last_sequence": p.last_sequence,
                "last_timestamp_ms": p.last_timestamp_ms,
                "current_txn_start_offset": p.current_txn_start_offset,
                "transactional_id": listing.transactional_id if listing else None,
                "coordinator_state": listing.state if listing else None,
                "flag": flag,
            }
        )
    code = ExitCode.FOUND if flagged else ExitCode.NOTHING_TO_DO
    if args.json:
        common.emit_json(
            {
                "command": "txn describe-producers",
                "partition": str(tp),
                "producers": rows,
                "exit_code": int(code),
            }
        )
    else:
        common.print_rows(console, rows, f"producers of {tp} (leader view)")
    return int(code)


# -- find-hanging -----------------------------------------------------------------------------


def _find_hanging(admin: Admin, args: argparse.Namespace, console: Console) -> int:
    scanner = Scanner(admin, sleep=common.scan_sleep)
    max_age_ms = int(args.max_transaction_timeout * 60_000)
    topics = list(args.topic) if args.topic else None
    first = find_hanging(scanner, topics, max_age_ms)
    if first:
        scanner.sleep(args.scan_interval)
        items = confirmed(first, find_hanging(scanner, topics, max_age_ms))
    else:
        items = []
    code = ExitCode.FOUND if items else ExitCode.NOTHING_TO_DO
    if args.json:
        common.emit_json(
            {
                "command": "txn find-hanging",
                "hanging": [i.to_json() for i in items],
                "exit_code": int(code),
            }
        )
    else:
        common.print_rows(
            console,
            [
                {
                    "kind": i.kind,
                    "where": i.where,
                    "producer_id": i.producer_id,
                    "epoch": i.producer_epoch,
                    "transactional_id": i.transactional_id,
                    "coordinator": i.coordinator_state,
                    "start_offset": i.start_offset,
                    "pending": i.pending_records,
                    "age": common.format_age(i.age_ms),
                    "reason": i.reason,
                }
                for i in items
            ],
            "hanging transactions and pending share acks (seen in two scans)",
        )
    return int(code)


# -- commit / abort / force-terminate ---------------------------------------------------------


def _evidence(args: argparse.Namespace) -> Evidence | None:
    text = getattr(args, "prepared_state", None)
    if text is None:
        return None
    try:
        state = PreparedTxnState.parse(text)
    except (ValueError, KeyError, TypeError) as exc:
        msg = f"--prepared-state is not a PreparedTxnState: {exc!r}"
        raise UsageError(msg) from None
    wanted = (args.transactional_id, args.producer_id, args.epoch)
    if (state.transactional_id, state.producer_id, state.epoch) != wanted:
        msg = (
            f"--prepared-state names {state}, not --transactional-id {wanted[0]} "
            f"--producer-id {wanted[1]} --epoch {wanted[2]}"
        )
        raise UsageError(msg)
    return Evidence(EvidenceKind.PREPARED_TXN_STATE, str(state))


def _resolve(admin: Admin, args: argparse.Namespace, console: Console) -> int:
    op = Op(args.action)
    if (args.producer_id is None) != (args.epoch is None):
        msg = "--producer-id and --epoch go together"
        raise UsageError(msg)
    evidence = _evidence(args)
    scanner = Scanner(admin, sleep=common.scan_sleep)
    tid = args.transactional_id
    first = scanner.snapshot(tid)
    pair = scanner.two_scans({tid: first}, args.scan_interval)[tid]
    pid = pair.second.producer_id
    acks = scanner.pending_acks([pid]).get(pid) if pair.second.known else None
    history = None
    if args.producer_id is not None:
        history = previously_applied(args.audit_log, tid, args.producer_id, args.epoch)
    step = plan_step(
        op,
        pair,
        producer_id=args.producer_id,
        producer_epoch=args.epoch,
        evidence=evidence,
        pending=acks,
        history=history,
    )
    command = f"txn {op.value}"
    if not args.apply:
        code = plan_exit_code([step])
        if args.json:
            common.emit_json(
                {
                    "command": command,
                    "mode": "dry-run",
                    "plan": [step.to_json()],
                    "exit_code": int(code),
                }
            )
        else:
            common.print_plan(console, [step], f"{command}: plan (dry run, nothing changed)")
            if step.action.acts:
                console.print("re-run with --apply to act")
        return int(code)
    audit = common.audit_log(args, command)
    executor = Executor(scanner, args.bootstrap_server, audit, wait_timeout_s=args.wait_timeout)
    results = executor.run([step])
    if step.action is Action.NOOP:
        audit.write("noop", {"reason": step.reason, "transactional_id": tid})
    code = results_exit_code(results)
    if args.json:
        common.emit_json(
            {
                "command": command,
                "mode": "apply",
                "results": [r.to_json() for r in results],
                "audit_log": str(audit.path),
                "exit_code": int(code),
            }
        )
    else:
        common.print_results(console, results, f"{command}: results")
        console.print(f"audit log: {audit.path}")
    return int(code)


def main(argv: list[str] | None = None) -> int:
    parser = common.UsageExitParser(prog="sharetxn txn", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
