"""The commit phase and the start-up recovery of a query's prepared transactions.

``commit_decided`` is the fast path, run from every commit point (the source's
``commit(end)`` and ``latestOffset``, the sink's progress listener, query stop): for each
intent whose batch is in Spark's commit log and not yet resolved, commit its prepared
transactions and write ``resolved/N``.  It is idempotent: a transaction that another
resolver already finished is reported as such and not touched.

``recover`` is the start-up path and goes through ``producer.twophase.recover`` — the same code as
``sharetxn recover --apply`` — so the query and the operator's tool always decide alike.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from producer.admin import Admin
from producer.spark.checkpoint import AUDIT_LOG, Checkpoint
from producer.spark.errors import DecidedBatchAbortedError, ResolveError
from producer.twophase.audit import AuditLog, read_audit_log
from producer.twophase.execute import Executor
from producer.twophase.execute import Outcome as StepOutcome
from producer.twophase.recover import (
    HistoryLookup,
    aborted_by_cluster,
    apply_recovery,
    history_with_begun_commits,
    plan_recovery,
)
from producer.twophase.resume import Ended, resume_and_end
from producer.twophase.scan import Scanner
from producer.twophase.spark_checkpoint import (
    COMMITTING_DIR,
    INTENTS_DIR,
    RESOLVED_DIR,
    IntentTransaction,
    Outcome,
    read_committing,
    write_resolved,
)

log = logging.getLogger(__name__)

__all__ = ["AUDIT_LOG", "Connection", "commit_decided", "fenced_transaction", "recover"]

SPARK_COMMIT = "spark-commit"
_RECOVERY_SCAN_INTERVAL_S = 0.2


@dataclasses.dataclass(frozen=True, slots=True)
class Connection:
    """How the resolver reaches the cluster (picklable: it travels to Spark's workers)."""

    bootstrap_servers: str
    client_config: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def producer_config(self) -> dict[str, Any]:
        return {"bootstrap.servers": self.bootstrap_servers, **self.client_config}


def _commit_one(
    conn: Connection,
    txn: IntentTransaction,
    ours: Callable[[], bool],
    aborted: Callable[[str], Exception],
) -> str:
    """Commit one prepared transaction; ``ours()``: an earlier commit of ours was begun.

    ``aborted(detail)`` is the error for a transaction the cluster aborted (its timeout
    ran out on a cluster without KIP-939): never "already complete", even if ours began.
    """
    result = resume_and_end(
        txn.transactional_id, txn.producer_id, txn.epoch, conn.producer_config(), commit=True
    )
    exc = result.error
    match result.ended:
        case Ended.DONE:
            return "committed"
        case Ended.COMMITTED:
            return "already complete"  # an earlier commit phase finished it
        case Ended.ABORTED:  # at the resume, or the timeout won the race with the commit
            raise aborted(result.detail) from exc
        case Ended.GONE if ours():
            return "already complete"  # an earlier commit phase of ours finished it
        case Ended.GONE:
            msg = (
                f"{txn.transactional_id}: the prepared transaction ({txn.producer_id}, "
                f"{txn.epoch}) of a decided batch is gone and no commit of ours was begun: "
                f"something else ended it (heuristic hazard: outputs or acks may be lost): {exc}"
            )
            raise ResolveError(msg) from exc
        case Ended.REPLACED:
            msg = (
                f"{txn.transactional_id}: the prepared transaction ({txn.producer_id}, "
                f"{txn.epoch}) of a decided batch was replaced: {exc}"
            )
            raise ResolveError(msg) from exc
    assert exc is not None  # SUPERSEDED or UNCONFIRMED: retried by the next commit point
    raise exc


def _commit_begun(
    conn: Connection,
    begun: Callable[[], set[tuple[str, int, int]]],
    checkpoint: Checkpoint,
    batch: int,
    txn: IntentTransaction,
) -> str:
    def aborted(detail: str) -> Exception:
        return _decided_aborted(
            checkpoint, batch, txn.transactional_id, txn.producer_id, txn.epoch, detail
        )

    return _commit_one(
        conn,
        txn,
        lambda: (txn.transactional_id, txn.producer_id, txn.epoch) in begun(),
        aborted,
    )


def _decided_aborted(
    checkpoint: Checkpoint, batch: int, tid: str, pid: int, epoch: int, detail: str
) -> DecidedBatchAbortedError:
    return DecidedBatchAbortedError(
        batch=batch,
        transactional_id=tid,
        producer_id=pid,
        epoch=epoch,
        checkpoint=checkpoint.location,
        detail=detail,
    )


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


def _step(txn: IntentTransaction, batch: int) -> dict[str, Any]:
    return {
        "action": "commit",
        "transactional_id": txn.transactional_id,
        "producer_id": txn.producer_id,
        "producer_epoch": txn.epoch,
        "batch": batch,
    }


def commit_decided(
    checkpoint: Checkpoint, conn: Connection, *, by: str, max_workers: int = 8
) -> list[int]:
    """Commit every unresolved intent whose batch is in the commit log; returns the batches.

    Before its first commit, batch N's transactions are written ahead to
    ``committing/N`` in the checkpoint (and to the local audit log), so start-up recovery
    knows a transaction that is gone from the coordinator was committed by us, even when
    the driver restarted on another host.
    """
    done: list[int] = []
    with checkpoint.resolve_lock():
        view = checkpoint.view(unresolved_only=True)
        decided = [i for i in view.unresolved() if i.batch in view.commits]
        if not decided:
            return done
        audit = AuditLog(checkpoint.audit_log(), operator=by, command=SPARK_COMMIT)
        for intent in decided:
            started = time.monotonic()
            # What earlier commit phases began: committing/N now, before this phase's
            # write-ahead; the audit log only when a transaction is gone (rare).
            earlier = _committing(checkpoint, intent.batch)
            begun = functools.cache(
                functools.partial(_begun_commits, checkpoint, None, audit.run_id, earlier)
            )
            _write_ahead(checkpoint, intent.batch, intent.transactions, earlier)
            for t in intent.transactions:
                audit.write("begin", {"step": _step(t, intent.batch), "reason": "commits/N"})
            with ThreadPoolExecutor(max_workers=max(1, max_workers)) as pool:
                commit = functools.partial(_commit_begun, conn, begun, checkpoint, intent.batch)
                results = list(pool.map(commit, intent.transactions))
            for t, result in zip(intent.transactions, results, strict=True):
                outcome = "applied" if result == "committed" else "noop"
                audit.write("end", {"step": _step(t, intent.batch), "outcome": outcome})
            write_resolved(view.state_dir, intent.batch, Outcome.COMMIT, by, checkpoint.fs)
            log.info(
                "batch %d committed in %.3fs: %d transaction(s), %d already complete",
                intent.batch,
                time.monotonic() - started,
                results.count("committed"),
                results.count("already complete"),
            )
            done.append(intent.batch)
        _forget_old(checkpoint)
    return done


def _write_ahead(
    checkpoint: Checkpoint,
    batch: int,
    transactions: tuple[IntentTransaction, ...],
    earlier: set[tuple[str, int, int]],
) -> None:
    """``committing/N``: the commits of batch N are about to begin."""
    path = checkpoint.path(COMMITTING_DIR, str(batch))
    keys = {(t.transactional_id, t.producer_id, t.epoch) for t in transactions}
    if keys <= earlier:
        return  # an earlier commit phase began them and the file names them
    named = [t.to_json() for t in transactions] + [
        {"transactional_id": tid, "producer_id": pid, "epoch": epoch}
        for tid, pid, epoch in sorted(earlier - keys)
    ]
    body = {"batch": batch, "transactions": named}
    checkpoint.fs.write_atomic(path, (json.dumps(body, sort_keys=True) + "\n").encode())


def _committing(checkpoint: Checkpoint, batch: int) -> set[tuple[str, int, int]]:
    return read_committing(checkpoint.fs, checkpoint.location, batch)


def _begun_commits(
    checkpoint: Checkpoint,
    batch: int | None,
    exclude_run: str | None = None,
    known: set[tuple[str, int, int]] | None = None,
) -> set[tuple[str, int, int]]:
    """(id, producer id, epoch) of every commit this module began (write-ahead).

    From ``committing/N`` in the checkpoint (``known``: already read; else ``batch``, or
    every batch when None) and from the local audit log; ``exclude_run`` leaves out the
    begins of the running commit phase.
    """
    out: set[tuple[str, int, int]] = set(known or ())
    if known is None:
        listed = checkpoint.fs.list(checkpoint.path(COMMITTING_DIR))
        batches = [batch] if batch is not None else [int(n) for n in listed if n.isdigit()]
        for n in batches:
            out |= _committing(checkpoint, n)
    for event in read_audit_log(checkpoint.audit_log()):
        step = event.get("step") or {}
        if (
            event.get("command") == SPARK_COMMIT
            and event.get("event") == "begin"
            and event.get("run_id") != exclude_run
        ):
            out.add(
                (
                    str(step.get("transactional_id")),
                    int(step.get("producer_id", -1)),
                    int(step.get("producer_epoch", -1)),
                )
            )
    return out


def _forget_old(checkpoint: Checkpoint) -> None:
    """Drop resolved intents older than any batch Spark still keeps (minBatchesToRetain)."""
    kept = checkpoint.planned_batches()
    if not kept:
        return
    oldest = min(kept)
    fs = checkpoint.fs
    for name in fs.list(checkpoint.path(RESOLVED_DIR)):
        if not name.isdigit() or int(name) >= oldest:
            continue
        # intent first, then the write-ahead, then resolved
        fs.delete(checkpoint.path(INTENTS_DIR, f"{name}.json"))
        fs.delete(checkpoint.path(COMMITTING_DIR, name))
        fs.delete(checkpoint.path(RESOLVED_DIR, name))


def _history(checkpoint: Checkpoint, admin: Admin) -> HistoryLookup:
    """The recovery tool's history lookup, plus the commits this module wrote ahead.

    Only a commit can end a decided prepared transaction (the decision rule never aborts it;
    a timeout-bounded one that the cluster aborted is checked by the lookup): a begun commit
    was this module's commit.
    """
    return history_with_begun_commits(
        checkpoint.audit_log(), _begun_commits(checkpoint, None), admin, "earlier commit phase"
    )


def _raise_if_decided_aborted(checkpoint: Checkpoint, view: Any, admin: Admin, step: Any) -> None:
    """A failed step of a decided batch whose transaction the cluster aborted: typed error."""
    batch, pid, epoch = step.batch, step.producer_id, step.producer_epoch
    if batch is None or batch not in view.commits or pid is None or epoch is None:
        return
    detail = aborted_by_cluster(admin, step.transactional_id, pid, epoch)
    if detail is not None:
        raise _decided_aborted(checkpoint, batch, step.transactional_id, pid, epoch, detail)


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
