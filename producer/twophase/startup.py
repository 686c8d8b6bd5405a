"""Start-up recovery of a Spark query: the decision rule applied before its first batch.

``recover`` plans with ``producer.twophase.recover.plan_recovery`` and acts with
``apply_recovery`` -- the same code as ``sharetxn recover --apply`` -- under the query's
resolve lock, with an audit log and a history that counts the commits the commit phase
wrote ahead (``committing/N``) as ours.  A step it cannot finish is a ``ResolveError``
(a ``DecidedBatchAbortedError`` when the cluster aborted a decided batch's transaction).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from producer.admin import Admin
from producer.twophase.audit import AuditLog
from producer.twophase.commit_phase import Connection, begun_commits, decided_aborted
from producer.twophase.errors import ResolveError
from producer.twophase.execute import Executor
from producer.twophase.execute import Outcome as StepOutcome
from producer.twophase.query_checkpoint import QueryCheckpoint
from producer.twophase.recover import (
    HistoryLookup,
    aborted_by_cluster,
    apply_recovery,
    history_with_begun_commits,
    plan_recovery,
)
from producer.twophase.scan import Scanner

__all__ = ["RecoveryReport", "recover"]

_RECOVERY_SCAN_INTERVAL_S = 0.2


def _history(checkpoint: QueryCheckpoint, admin: Admin) -> HistoryLookup:
    """The recovery tool's history lookup, plus the commits the commit phase wrote ahead.

    Only a commit can end a decided prepared transaction (the decision rule never aborts it;
    a timeout-bounded one that the cluster aborted is checked by the lookup): a begun commit
    was the commit phase's commit.
    """
    return history_with_begun_commits(
        checkpoint.audit_log(), begun_commits(checkpoint, None), admin, "earlier commit phase"
    )


def _raise_if_decided_aborted(
    checkpoint: QueryCheckpoint, view: Any, admin: Admin, step: Any
) -> None:
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
    checkpoint: QueryCheckpoint,
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
