"""``sharetxn txn``: find and safely resolve in-doubt transactions (like kafka-transactions.sh).

    sharetxn txn list [--state S] [--older-than DURATION] [--prefix P]
    sharetxn txn describe --transactional-id ID
    sharetxn txn describe-producers --topic T --partition P
    sharetxn txn find-hanging (--topic T... | --all-topics) [--max-transaction-timeout MIN]
    sharetxn txn commit --transactional-id ID --producer-id P --epoch E [--prepared-state JSON]
    sharetxn txn abort --transactional-id ID --producer-id P --epoch E
    sharetxn txn force-terminate --transactional-id ID
    sharetxn txn forget --transactional-id ID --i-understand

KIP-664's commands plus the KIP-1289 view (pending share acknowledgements per share
partition) and KIP-939's commit/abort/force-terminate of prepared transactions.  Commit,
abort and force-terminate are dry runs unless ``--execute`` is given; see docs/recovery.md.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.table import Table

from chaos.cli import recovery_support as common
from producer.admin import Admin, SharePendingAcks
from producer.protocol.types import PreparedTxnState
from producer.twophase.audit import (
    AuditLog,
    previously_applied,
    unresolved_heuristics,
)
from producer.twophase.model import (
    OPEN_STATES,
    STATE_NAMES,
    NotFoundError,
    RefusedError,
    TxnSnapshot,
    UsageError,
)
from producer.twophase.plan import Action, Evidence, EvidenceKind, Op, plan_step
from producer.twophase.scan import (
    DEFAULT_MAX_REQUESTS_PER_SECOND,
    MAX_PARTITIONS_PER_REQUEST,
    RateLimiter,
    Scanner,
    ScanPair,
)
from recovery.hanging import confirmed, find_hanging
from txn.exit_codes import ExitCode
from txn.ids import SHARE_GROUP_STATE_TOPIC, TopicPartition

EXAMPLES = """examples:
  sharetxn txn list --state Ongoing --older-than 15m
  sharetxn txn describe --transactional-id spark-q1-r-0-3
  sharetxn txn find-hanging --all-topics --max-transaction-timeout 15
  sharetxn txn commit --transactional-id job-7 --producer-id 4001 --epoch 3 \\
      --prepared-state '{"transactional_id": "job-7", "producer_id": 4001, "epoch": 3}' --execute
  sharetxn txn abort --transactional-id job-7 --producer-id 4001 --epoch 3 --execute
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
  sharetxn txn find-hanging --topic payments
  sharetxn txn find-hanging --topic payments --topic refunds --max-transaction-timeout 30
  sharetxn txn find-hanging --all-topics --max-requests-per-second 5 --json
""",
    "commit": """examples:
  # plan only (dry run)
  sharetxn txn commit --transactional-id job-7 --producer-id 4001 --epoch 3 \\
      --prepared-state "$(cat job-7.prepared.json)"
  # act; the audit log records it
  sharetxn txn commit --transactional-id job-7 --producer-id 4001 --epoch 3 \\
      --prepared-state "$(cat job-7.prepared.json)" --execute --audit-log /var/log/sharetxn.jsonl
  # a transaction in PrepareCommit needs no evidence: the tool waits for the coordinator
  sharetxn txn commit --transactional-id job-7 --producer-id 4001 --epoch 3 --execute
""",
    "abort": """examples:
  sharetxn txn abort --transactional-id job-7 --producer-id 4001 --epoch 3
  sharetxn txn abort --transactional-id job-7 --producer-id 4001 --epoch 3 --execute
""",
    "force-terminate": """examples:
  sharetxn txn force-terminate --transactional-id job-7
  sharetxn txn force-terminate --transactional-id job-7 --producer-id 4001 --epoch 3 --execute
""",
    "forget": """examples:
  # after checking job-7's outputs with a read_committed consumer
  sharetxn txn forget --transactional-id job-7 --i-understand --operator alice
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

    def action(name: str, help_text: str, *, by_id: bool = False) -> argparse.ArgumentParser:
        """A sub-command; ``by_id``: it acts on the transaction named by --transactional-id."""
        sp = sub.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=_SUB_EXAMPLES[name] + "\n" + common.EXIT_CODES_HELP,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        common.add_connection_options(sp, nested=True)
        if by_id:
            sp.add_argument("--transactional-id", required=True, metavar="ID")
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
    _add_prepared_warn_after(lst)
    common.add_audit_log(lst, "where heuristic outcomes are recorded")
    common.add_scan_interval(lst)

    desc = action(
        "describe",
        "describe a transaction with its participants: partitions (leader view) and "
        "share-state partitions with their pending acks (share coordinator view)",
        by_id=True,
    )
    _add_prepared_warn_after(desc)

    dp = action("describe-producers", "the producers a partition's leader knows (KIP-664)")
    dp.add_argument("--topic", required=True)
    dp.add_argument("--partition", required=True, type=int)

    fh = action(
        "find-hanging",
        "open transactions the coordinator does not know, pending share acks of finished "
        "or unknown transactions, prepared 2PC transactions older than the threshold",
    )
    scope = fh.add_mutually_exclusive_group()
    scope.add_argument(
        "--topic", action="append", default=None, help="scan this topic (repeatable)"
    )
    scope.add_argument(
        "--all-topics", action="store_true", help="scan every topic (one of the two is required)"
    )
    fh.add_argument(
        "--max-requests-per-second",
        type=float,
        default=DEFAULT_MAX_REQUESTS_PER_SECOND,
        metavar="N",
        help=(
            "rate limit of the DescribeProducers requests (at most "
            f"{MAX_PARTITIONS_PER_REQUEST} partitions each; default "
            f"{DEFAULT_MAX_REQUESTS_PER_SECOND:g}; 0 = no limit)"
        ),
    )
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
        sp = action(name, help_text, by_id=True)
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
        by_id=True,
    )
    ft.add_argument("--producer-id", type=int, default=None, metavar="P", help="expected (CAS)")
    ft.add_argument("--epoch", type=int, default=None, metavar="E", help="expected (CAS)")
    common.add_apply_options(ft)

    fg = action(
        "forget",
        "remove a transaction's HEURISTIC entries (outcome not confirmed) from the tool's "
        "in-doubt bookkeeping in the audit log; needs --i-understand",
        by_id=True,
    )
    fg.add_argument(
        "--i-understand",
        action="store_true",
        help="confirm that the outputs were checked: the tool stops reporting the entry",
    )
    common.add_audit_log(fg, "the audit log holding the heuristic entries")
    fg.add_argument(
        "--operator", default=None, help="who is forgetting, for the audit log (default $USER)"
    )


def _add_prepared_warn_after(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--prepared-warn-after",
        type=common.parse_duration_ms,
        default=DEFAULT_PREPARED_WARN_AFTER_MS,
        metavar="DURATION",
        help="flag prepared 2PC transactions (which never time out) open longer than this "
        "(default 15m); others are flagged at 80%% of their transaction.timeout.ms",
    )


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
    if args.action == "forget":
        return common.run_offline(args, lambda console: _forget(args, console))
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
    rows = [
        _list_row(p, pending.get(p.second.producer_id), args.prepared_warn_after)
        for p in pairs.values()
    ]
    in_doubt = sum(1 for r in rows if r["in_doubt"])
    heuristic = [
        h
        for h in unresolved_heuristics(args.audit_log)
        if args.prefix is None or str(h.get("transactional_id", "")).startswith(args.prefix)
    ]
    code = ExitCode.FOUND if in_doubt or heuristic else ExitCode.NOTHING_TO_DO
    if args.json:
        common.emit_json(
            {
                "command": "txn list",
                "transactions": rows,
                "in_doubt": in_doubt,
                "heuristic": heuristic,
                "exit_code": int(code),
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
        common.print_rows(
            console,
            display,
            "transactions",
            styles=["yellow" if r["ageing"] else None for r in rows],
        )
        if heuristic:
            common.print_rows(
                console,
                [
                    {
                        "transactional_id": h.get("transactional_id"),
                        "action": (h.get("step") or {}).get("action"),
                        "producer_id": (h.get("step") or {}).get("producer_id"),
                        "epoch": (h.get("step") or {}).get("producer_epoch"),
                        "at": h.get("ts"),
                        "operator": h.get("operator"),
                        "error": h.get("error"),
                    }
                    for h in heuristic
                ],
                "HEURISTIC outcomes (audit log): check the outputs, then `txn forget`",
                styles=["red"] * len(heuristic),
            )
    return int(code)


def _list_row(
    pair: ScanPair, acks: SharePendingAcks | None, prepared_warn_after_ms: int
) -> dict[str, Any]:
    snap = pair.second
    old = ageing(snap, prepared_warn_after_ms)
    row = snap.to_json()
    row["pending_acks"] = acks.pending_records if acks is not None else 0
    row["in_doubt"] = pair.in_doubt
    row["changed_between_scans"] = not pair.unchanged
    row["ageing"] = old is not None
    row["warning"] = _warning(pair, old)
    return row


AGEING_SHARE = 0.8
"""Flag a transaction at this share of its transaction.timeout.ms (FLINK-7784)."""
DEFAULT_PREPARED_WARN_AFTER_MS = 15 * 60_000


def ageing(snap: TxnSnapshot, prepared_warn_after_ms: int) -> str | None:
    """Why an open transaction is old (FLINK-7784, KIP-994), or None.

    A transaction with a timeout is old at 80 % of it: the coordinator is about to abort
    it.  A prepared 2PC transaction (timeout Int.MAX) never times out: it is old once it
    has been open longer than ``prepared_warn_after_ms``.
    """
    age = snap.age_ms()
    if age is None:
        return None
    if snap.two_phase:
        if age >= prepared_warn_after_ms:
            return (
                f"ageing: prepared (2PC) for {common.format_age(age)}, longer than "
                f"{common.format_age(prepared_warn_after_ms)}; it never times out"
            )
        return None
    if snap.timeout_ms > 0 and age >= AGEING_SHARE * snap.timeout_ms:
        return (
            f"ageing: at {age / snap.timeout_ms:.0%} of its transaction.timeout.ms "
            f"({snap.timeout_ms} ms); the coordinator will abort it"
        )
    return None


def _warning(pair: ScanPair, old: str | None) -> str | None:
    snap = pair.second
    notes = []
    if not pair.unchanged:
        notes.append("changed between scans (live)")
    if old is not None:
        notes.append(old)
    if pair.in_doubt and snap.state == "Ongoing" and snap.two_phase:
        notes.append("prepared (2PC): resolve with commit/abort")
    if pair.in_doubt and snap.state.startswith("Prepare"):
        notes.append("markers not yet delivered")
    return "; ".join(notes) or None


# -- describe ---------------------------------------------------------------------------------


def _describe(admin: Admin, args: argparse.Namespace, console: Console) -> int:
    scanner = Scanner(admin, sleep=common.scan_sleep)
    snap = scanner.snapshot(args.transactional_id)
    _require_known(snap)
    pending = scanner.pending_acks([snap.producer_id]) if snap.known else {}
    acks = pending.get(snap.producer_id)
    participants = _participants(scanner, snap, acks)
    epoch = acks.producer_epoch if acks else None
    old = ageing(snap, args.prepared_warn_after)
    payload: dict[str, Any] = {
        "command": "txn describe",
        "transaction": {**snap.to_json(), "ageing": old is not None, "warning": old},
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
    if old is not None:
        head.add_row("warning", old, style="yellow")
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


def _require_known(snap: TxnSnapshot) -> None:
    """An id the coordinator does not know is not found (kafka-transactions.sh's
    TransactionalIdNotFoundException), for every action naming it."""
    if not snap.known:
        msg = f"transactional id {snap.transactional_id!r} not found (unknown to the coordinator)"
        raise NotFoundError(msg)


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
        raise NotFoundError(msg)
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
    if not args.topic and not args.all_topics:
        msg = (
            "find-hanging needs a scope: --topic T (repeatable) or --all-topics "
            "(as kafka-transactions.sh find-hanging needs --topic or --broker-id)"
        )
        raise UsageError(msg)
    if args.max_requests_per_second < 0:
        msg = "--max-requests-per-second must be >= 0"
        raise UsageError(msg)
    scanner = Scanner(admin, sleep=common.scan_sleep)
    max_age_ms = int(args.max_transaction_timeout * 60_000)
    topics = list(args.topic) if args.topic else None
    limiter = RateLimiter(args.max_requests_per_second)
    first = find_hanging(scanner, topics, max_age_ms, limiter)
    if first:
        scanner.sleep(args.scan_interval)
        items = confirmed(first, find_hanging(scanner, topics, max_age_ms, limiter))
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
    if args.apply:
        common.require_operator(args)  # before anything is scanned
    if (args.producer_id is None) != (args.epoch is None):
        msg = "--producer-id and --epoch go together"
        raise UsageError(msg)
    evidence = _evidence(args)
    scanner = Scanner(admin, sleep=common.scan_sleep)
    tid = args.transactional_id
    first = scanner.snapshot(tid)
    _require_known(first)
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
    header = {"command": command}
    if not args.apply:
        return common.report_dry_run(args, console, header, command, [step])
    audit = common.audit_log(args, command)
    results = common.executor(args, scanner, audit).run([step])
    if step.action is Action.NOOP:
        audit.write("noop", {"reason": step.reason, "transactional_id": tid})
    return common.report_results(args, console, header, command, results, audit)


# -- forget ---------------------------------------------------------------------------------


def _forget(args: argparse.Namespace, console: Console) -> int:
    tid = args.transactional_id
    if not args.i_understand:
        msg = (
            f"forget drops {tid!r}'s heuristic entries: the tool stops reporting an action "
            "whose outcome it never confirmed. Check the outputs with a read_committed "
            "consumer first, then re-run with --i-understand"
        )
        raise RefusedError(msg)
    operator = common.require_operator(args)
    entries = [h for h in unresolved_heuristics(args.audit_log) if h["transactional_id"] == tid]
    if entries:
        audit = AuditLog(args.audit_log, operator=operator, command="txn forget")
        audit.write(
            "forget",
            {
                "transactional_id": tid,
                "forgotten": [{"ts": h.get("ts"), "run_id": h.get("run_id")} for h in entries],
                "reason": "operator checked the outcome (--i-understand)",
            },
        )
    code = ExitCode.ACTED if entries else ExitCode.NOTHING_TO_DO
    if args.json:
        common.emit_json(
            {
                "command": "txn forget",
                "transactional_id": tid,
                "forgotten": len(entries),
                "audit_log": str(args.audit_log),
                "exit_code": int(code),
            }
        )
    elif entries:
        console.print(f"forgot {len(entries)} heuristic entr{'y' if len(entries) == 1 else 'ies'}")
    else:
        console.print(f"no heuristic entry for {tid!r} in {args.audit_log}: nothing to forget")
    return int(code)


def main(argv: list[str] | None = None) -> int:
    return common.main("sharetxn txn", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
