"""The commit phase and the start-up recovery of a query's prepared transactions.

``commit_decided`` is the fast path, run from every commit point (the source's
``commit(end)`` and ``latestOffset``, the sink's committer, query stop): it is
``producer.twophase.commit_phase.commit_decided`` (write ahead, resume and commit through
the decider ``sharetxn recover --apply`` uses too, write ``resolved/N``).

``recover`` is the start-up path and goes through ``producer.twophase.recover`` — the same
code as ``sharetxn recover --apply`` — so the query and the operator's tool always decide
alike.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from producer.admin import Admin
from producer.spark.checkpoint import AUDIT_LOG, Checkpoint
from producer.spark.errors import ResolveError
from producer.twophase.audit import AuditLog
from producer.twophase.commit_phase import (
    SPARK_COMMIT,
    Connection,
    begun_commits,
    commit_decided,
    decided_aborted,
)
from producer.twophase.execute import Executor
from producer.twophase.execute import Outcome as StepOutcome
from producer.twophase.recover import (
    HistoryLookup,
    aborted_by_cluster,
    apply_recovery,
    history_with_begun_commits,
    plan_recovery,
)
from producer.twophase.scan import Scanner
from producer.twophase.spark_checkpoint import IntentTransaction

__all__ = [
    "AUDIT_LOG",
    "SPARK_COMMIT",
    "Connection",
    "commit_decided",
    "fenced_transaction",
    "recover",
]

_RECOVERY_SCAN_INTERVAL_S = 0.2


def fenced_transaction(
    admin: Admin, transactions: list[IntentTransaction]
) -> tuple[IntentTransaction, str] | None:
    """The first prepared transaction no longer open with its recorded ids, and what it is now.

    What it is now: ``missing``, or ``STATE (producer id, epoch)``; None while all are open.
    """
    ids = [t.transactional_id for t in transactions]
    found = {d.transactional_id: d for d in admin.describe_transactions(ids)}
    for t in transactions:
        d = found.get(t.transactional_id)
        if d is None:
            return t, "missing"
        if d.state != "Ongoing" or (d.producer_id, d.producer_epoch) != (t.producer_id, t.epoch):
            return t, f"{d.state} ({d.producer_id}, {d.producer_epoch})"
    return None


def _history(checkpoint: Checkpoint, admin: Admin) -> HistoryLookup:
    """The recovery tool's history lookup, plus the commits this module wrote ahead.

    Only a commit can end a decided prepared transaction (the decision rule never aborts it;
    a timeout-bounded one that the cluster aborted is checked by the lookup): a begun commit
    was this module's commit.
    """
    return history_with_begun_commits(
        checkpoint.audit_log(), begun_commits(checkpoint, None), admin, "earlier commit phase"
    )


def _raise_if_decided_aborted(checkpoint: Checkpoint, view: Any, admin: Admin, step: Any) -> None:
    """A failed step of a decided batch whose transaction the cluster aborted: typed error."""
    batch, pid, epoch = step.batch, step.producer_id, step.producer_epoch
    if batch is None or batch not in view.commits or pid is None or epoch is None:
        return
    detail = aborted_by_cluster(admin, step.transactional_id, pid, epoch)
    if detail is not None:
        raise decided_aborted(checkpoint, batch, step.transactional_id, pid, epoch, detail)


@dataclasses.dataclass(frozen=True, slots=True)
class RecoveryReport:
    committed: int
    aborted: int
    noop: int
    batches: tuple[int, ...]


def recover(
    checkpoint: Checkpoint,
    conn: Connection,
    prefixes: set[str],
    *,
    by: str,
) -> RecoveryReport:
    """The decision rule at query start, through ``producer.twophase.recover`` with an audit log."""
    committed = aborted = noop = 0
    batches: set[int] = set()
    with checkpoint.resolve_lock(), Admin(conn.producer_config()) as admin:
        view = checkpoint.view()
        scanner = Scanner(admin)
        audit = AuditLog(checkpoint.audit_log(), operator=by, command="spark-source-recovery")
        executor = Executor(
            scanner, conn.bootstrap_servers, audit, client_config=dict(conn.client_config)
        )
        ordered: list[str | None] = [*sorted(prefixes)] or [None]
        for prefix in ordered:
            steps = plan_recovery(
                scanner,
                view,
                prefix,
                _RECOVERY_SCAN_INTERVAL_S,
                history=_history(checkpoint, admin),
            )
            results = apply_recovery(executor, view, steps, by=by)
            for r in results:
                if r.outcome not in (StepOutcome.APPLIED, StepOutcome.NOOP):
                    _raise_if_decided_aborted(checkpoint, view, admin, r.step)
                    msg = (
                        f"start-up recovery of {checkpoint} could not finish "
                        f"{r.step.transactional_id}: {r.outcome.value}: "
                        f"{r.detail}; see `sharetxn recover --checkpoint {checkpoint}`"
                    )
                    raise ResolveError(msg)
                kind = r.step.action.value
                if r.outcome is StepOutcome.NOOP:
                    noop += 1
                elif kind == "commit":
                    committed += 1
                elif kind in ("abort", "force-terminate"):
                    aborted += 1
                if r.step.batch is not None:
                    batches.add(r.step.batch)
            view = checkpoint.view()  # resolved/N written meanwhile
    return RecoveryReport(committed, aborted, noop, tuple(sorted(batches)))
