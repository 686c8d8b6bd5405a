"""Plans: what the tool would do to one transaction, and why; pure functions, no I/O.

``plan_step`` turns a requested operation (commit, abort, force-terminate) and two
scans of the transaction into a ``Step``: the action, the precondition the executor
re-checks (compare-and-set) immediately before acting, the expected effects, and the
reason.  The safety rules of the recovery tool live here:

* a transaction that changed between the two scans is live: RACED, never acted on;
* the named (producer id, epoch) must be the coordinator's: otherwise RACED (the plan is
  stale) -- or, for the Spark decision rule's aborts, NOOP (a newer epoch fenced it);
* committing needs durable evidence: PrepareCommit (the coordinator is finishing), a
  PreparedTxnState naming this (producer id, epoch), or a Spark commit log entry;
* a transaction with a durable commit decision (PrepareCommit, CompleteCommit) is never
  aborted or force-terminated: REFUSE.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from producer.admin import SharePendingAcks
from producer.twophase.model import UNKNOWN, TxnSnapshot
from producer.twophase.scan import ScanPair
from txn.exit_codes import ExitCode


class Op(StrEnum):
    """What the operator (or the Spark decision rule) asked for."""

    COMMIT = "commit"
    ABORT = "abort"
    FORCE_TERMINATE = "force-terminate"


class Action(StrEnum):
    """What the tool will do about one transaction (or one Spark batch)."""

    COMMIT = "commit"  # resume the prepared transaction and commit it
    ABORT = "abort"  # resume the prepared transaction and abort it
    FORCE_TERMINATE = "force-terminate"  # InitProducerId without keep_prepared: fence + abort
    WAIT = "wait"  # the coordinator is completing it (Prepare*): wait for Complete*
    MARK_RESOLVED = "mark-resolved"  # write resolved/N in a Spark checkpoint
    NOOP = "noop"  # already in the requested end state
    REFUSE = "refuse"  # a safety rule forbids it
    RACED = "raced"  # the transaction is not (any more) the one planned for

    @property
    def acts(self) -> bool:
        return self in _ACTING


_ACTING = frozenset(
    {Action.COMMIT, Action.ABORT, Action.FORCE_TERMINATE, Action.WAIT, Action.MARK_RESOLVED}
)


class EvidenceKind(StrEnum):
    PREPARE_COMMIT = "prepare-commit"  # the coordinator's durable PREPARE_COMMIT
    PREPARED_TXN_STATE = "prepared-txn-state"  # supplied by the operator (KIP-939)
    SPARK_COMMIT_LOG = "spark-commit-log"  # commits/N of the query's checkpoint


@dataclass(frozen=True, slots=True)
class Evidence:
    """Why committing is safe: a durable record of the commit decision."""

    kind: EvidenceKind
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind.value, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class Step:
    """One planned action with its precondition (``expected``) and expected effects."""

    op: Op | None
    action: Action
    transactional_id: str
    producer_id: int | None
    producer_epoch: int | None
    reason: str
    expected: TxnSnapshot | None = None  # compare-and-set on its fingerprint before acting
    evidence: Evidence | None = None
    preconditions: tuple[str, ...] = ()
    effects: tuple[str, ...] = ()
    batch: int | None = None  # the Spark batch a step belongs to
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op.value if self.op is not None else None,
            "action": self.action.value,
            "transactional_id": self.transactional_id,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "batch": self.batch,
            "reason": self.reason,
            "evidence": self.evidence.to_json() if self.evidence else None,
            "preconditions": list(self.preconditions),
            "effects": list(self.effects),
            "expected": self.expected.to_json() if self.expected else None,
            **self.extra,
        }


def plan_exit_code(steps: Iterable[Step]) -> ExitCode:
    """The exit code of a dry run: the most urgent step decides."""
    actions = {s.action for s in steps}
    if Action.RACED in actions:
        return ExitCode.RACED
    if Action.REFUSE in actions:
        return ExitCode.REFUSED
    if any(a.acts for a in actions):
        return ExitCode.FOUND
    return ExitCode.NOTHING_TO_DO


def plan_step(
    op: Op,
    scans: ScanPair,
    *,
    producer_id: int | None = None,
    producer_epoch: int | None = None,
    evidence: Evidence | None = None,
    pending: SharePendingAcks | None = None,
    decision_rule: bool = False,
    batch: int | None = None,
    history: Mapping[str, Any] | None = None,
) -> Step:
    """Plan ``op`` on the transaction seen by ``scans``.

    ``producer_id``/``producer_epoch`` name the transaction the operator means (None: the
    current one, for force-terminate).  ``decision_rule`` is the Spark recovery's leniency:
    an abort of a transaction the coordinator no longer has (unknown id, or superseded by
    a newer epoch, which fences and aborts it) is a NOOP instead of RACED, and a commit
    that can no longer be verified is REFUSED (a heuristic hazard) instead of RACED.
    ``history`` is the audit log's last ``end`` event that applied an action to exactly
    this (id, producer id, epoch): once the coordinator has moved on, it is how a re-run
    knows the transaction ended as asked (NOOP) or the other way (REFUSE).
    """
    cur = scans.second
    tid = cur.transactional_id

    def step(action: Action, reason: str, **kw: Any) -> Step:
        return Step(
            op,
            action,
            tid,
            producer_id if producer_id is not None else _opt(cur.producer_id),
            producer_epoch if producer_epoch is not None else _opt(cur.producer_epoch),
            reason,
            batch=batch,
            **kw,
        )

    if not scans.unchanged:
        return step(
            Action.RACED,
            f"changed between the two scans ({scans.first.describe()} -> {cur.describe()}): "
            "a live transaction, not acted on",
        )
    if not cur.known:
        if decision_rule and op is not Op.COMMIT:
            return step(Action.NOOP, "unknown to the coordinator: nothing open")
        return step(Action.REFUSE, f"transactional id {tid!r} is unknown to the coordinator")
    named = producer_id is None or cur.names(producer_id, producer_epoch or 0)
    if (
        decision_rule
        and op is Op.COMMIT
        and producer_id is not None
        and _aborted_by_coordinator(cur, producer_id, producer_epoch or 0)
    ):
        # Before the history: a commit of ours that was only begun (written ahead) did
        # not finish a transaction the coordinator shows aborted -- its timeout (a prepare
        # without KIP-939) or a fencing producer ended it first.
        return step(
            Action.REFUSE,
            f"heuristic hazard: the decided transaction pid={producer_id} "
            f"epoch={producer_epoch} was aborted by the coordinator ({cur.describe()}): its "
            "transaction.timeout.ms ran out or a producer fenced it; its outputs are lost",
        )
    if history is not None and not (named and cur.is_open):
        return _from_history(op, history, step)
    if not named:
        wanted = f"pid={producer_id} epoch={producer_epoch}"
        if decision_rule and op is Op.ABORT:
            return step(
                Action.NOOP,
                f"superseded: the id is now {cur.describe()}; the newer epoch fenced and "
                f"aborted {wanted}",
            )
        if decision_rule:
            return step(
                Action.REFUSE,
                f"heuristic hazard: the commit decision is for {wanted} but the id is now "
                f"{cur.describe()}; whether it committed cannot be verified",
            )
        return step(Action.RACED, f"stale: expected {wanted}, the coordinator has {cur.describe()}")
    if op is Op.COMMIT:
        return _plan_commit(cur, evidence, pending, step)
    if op is Op.ABORT:
        return _plan_abort(cur, pending, step)
    return _plan_force_terminate(cur, pending, step)


_PAST = {
    Action.COMMIT: "committed",
    Action.ABORT: "aborted",
    Action.FORCE_TERMINATE: "force-terminated",
}


def _from_history(op: Op, history: Mapping[str, Any], step: _StepFactory) -> Step:
    done = Action((history.get("step") or {}).get("action", "abort"))
    when = f"{history.get('ts', '?')} (run {history.get('run_id', '?')})"
    wanted = Action.COMMIT if op is Op.COMMIT else Action.ABORT
    if done is wanted or (op is not Op.COMMIT and done is not Action.COMMIT):
        return step(Action.NOOP, f"already {_PAST[done]} by this tool at {when} (audit log)")
    return step(
        Action.REFUSE,
        f"this tool already applied {done.value} to it at {when} (audit log); "
        f"{op.value} would contradict that",
    )


def _aborted_by_coordinator(cur: TxnSnapshot, producer_id: int, epoch: int) -> bool:
    """The coordinator aborted (pid, epoch): an abort under those ids, or -- transaction
    version 1, where the coordinator's own abort (timeout, fencing) bumps the epoch first --
    one epoch later under the same producer id (``producer.produce.prepared_txn.classify``)."""
    if cur.producer_id != producer_id:
        return False
    if cur.producer_epoch == epoch:
        return cur.state in ("PrepareAbort", "CompleteAbort")
    return cur.producer_epoch == epoch + 1 and cur.state in (
        "PrepareAbort",
        "PrepareEpochFence",
        "CompleteAbort",
    )


def _opt(value: int) -> int | None:
    return None if value < 0 else value


def _cas(cur: TxnSnapshot) -> tuple[str, ...]:
    return (
        f"state={cur.state} pid={cur.producer_id} epoch={cur.producer_epoch} "
        f"start_time_ms={cur.start_time_ms} (compare-and-set immediately before acting)",
        "seen unchanged in two scans",
    )


def _data(cur: TxnSnapshot) -> str:
    return ", ".join(map(str, cur.data_partitions)) or "no data partition"


def _acks_effect(pending: SharePendingAcks | None, verb: str) -> tuple[str, ...]:
    if pending is None or not pending.entries:
        return ()
    return tuple(
        f"{e.pending_records} pending share acks of group {e.group_id} on "
        f"{e.topic or e.topic_id}-{e.partition} {verb}"
        for e in pending.entries
    )


_StepFactory = Callable[..., Step]


def _plan_commit(
    cur: TxnSnapshot,
    evidence: Evidence | None,
    pending: SharePendingAcks | None,
    step: _StepFactory,
) -> Step:
    state = cur.state
    if state == "Ongoing":
        if evidence is None:
            return step(
                Action.REFUSE,
                "no durable evidence of a commit decision: pass --prepared-state (the "
                "PreparedTxnState stored by the application) or use a Spark commit log",
            )
        warn = "" if cur.two_phase else " (warning: not a 2PC transaction; its timeout runs)"
        return step(
            Action.COMMIT,
            f"prepared transaction with a durable commit decision ({evidence.kind}){warn}",
            expected=cur,
            evidence=evidence,
            preconditions=_cas(cur),
            effects=(
                f"COMMIT markers to {_data(cur)}: the outputs become visible to read_committed "
                "consumers",
                *_acks_effect(pending, "applied (ACCEPT -> ACKNOWLEDGED)"),
            ),
        )
    if state == "PrepareCommit":
        return step(
            Action.WAIT,
            "PREPARE_COMMIT is durable: the coordinator is sending the COMMIT markers",
            expected=cur,
            evidence=Evidence(EvidenceKind.PREPARE_COMMIT, "coordinator state PrepareCommit"),
            preconditions=(f"state={state}",),
            effects=("none by the tool; waits for CompleteCommit",),
        )
    if state == "CompleteCommit":
        return step(Action.NOOP, "already committed")
    if state in ("PrepareAbort", "CompleteAbort", "PrepareEpochFence"):
        return step(
            Action.REFUSE,
            f"the transaction is {state}: it was aborted and cannot be committed "
            "(heuristic outcome: record it and reconcile the other participants)",
        )
    return step(Action.REFUSE, f"no transaction to commit: the id is {state}")


def _wait_for_abort(cur: TxnSnapshot, step: _StepFactory) -> Step:
    """PrepareAbort or PrepareEpochFence: the coordinator is already aborting it."""
    return step(
        Action.WAIT,
        f"{cur.state}: the coordinator is aborting it",
        expected=cur,
        preconditions=(f"state={cur.state}",),
        effects=("none by the tool; waits for CompleteAbort",),
    )


def _plan_abort(cur: TxnSnapshot, pending: SharePendingAcks | None, step: _StepFactory) -> Step:
    state = cur.state
    if state == "Ongoing":
        return step(
            Action.ABORT,
            "open transaction" + (" (prepared, 2PC: it never times out)" if cur.two_phase else ""),
            expected=cur,
            preconditions=_cas(cur),
            effects=(
                f"ABORT markers to {_data(cur)}: the outputs are discarded",
                *_acks_effect(pending, "reverted (records redelivered)"),
            ),
        )
    if state in ("PrepareCommit", "CompleteCommit"):
        return step(
            Action.REFUSE,
            f"the transaction is {state}: a durable commit decision exists and an abort "
            "would contradict it",
        )
    if state in ("PrepareAbort", "PrepareEpochFence"):
        return _wait_for_abort(cur, step)
    return step(Action.NOOP, f"nothing open ({state})")


def _plan_force_terminate(
    cur: TxnSnapshot, pending: SharePendingAcks | None, step: _StepFactory
) -> Step:
    state = cur.state
    if state == "Ongoing":
        return step(
            Action.FORCE_TERMINATE,
            "fence the producer and abort its open transaction (KIP-939 forceTerminate)",
            expected=cur,
            preconditions=_cas(cur),
            effects=(
                "InitProducerId without keep_prepared: the epoch is bumped, the current "
                "producer is fenced",
                f"ABORT markers to {_data(cur)}",
                *_acks_effect(pending, "reverted (records redelivered)"),
                "the id loses its 2PC flag until its next InitProducerId with 2PC",
            ),
        )
    if state == "PrepareCommit":
        return step(
            Action.REFUSE,
            "PREPARE_COMMIT is durable: force-terminate would contradict a commit decision; "
            "the coordinator is completing the commit",
        )
    if state in ("PrepareAbort", "PrepareEpochFence"):
        return _wait_for_abort(cur, step)
    if state == UNKNOWN:
        return step(Action.REFUSE, "unknown transactional id")
    return step(Action.NOOP, f"no open transaction ({state}): nothing to terminate")
