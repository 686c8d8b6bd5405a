"""The commit phase and the start-up recovery of a query's prepared transactions.

``commit_decided`` is the fast path, run from every commit point (the source's
``commit(end)`` and ``latestOffset``, the sink's progress listener, query stop): for each
intent whose batch is in Spark's commit log and not yet resolved, commit its prepared
transactions and write ``resolved/N``.  It is idempotent: a transaction that another
resolver already finished is reported as such and not touched.

``recover`` is the start-up path and goes through ``recovery.recover`` — the same code as
``sharetxn recover --apply`` — so the query and the operator's tool always decide alike.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from producer.admin import Admin
from producer.spark.checkpoint import resolve_lock
from producer.spark.errors import ResolveError
from producer.transactional_producer import (
    DifferentPreparedTransactionError,
    NoPreparedTransactionError,
    TransactionalProducer,
)
from recovery.audit import AuditLog, previously_applied, read_audit_log
from recovery.execute import Executor
from recovery.execute import Outcome as StepOutcome
from recovery.recover import apply_recovery, plan_recovery
from recovery.scan import Scanner
from recovery.spark_checkpoint import (
    INTENTS_DIR,
    RESOLVED_DIR,
    IntentTransaction,
    Outcome,
    read_checkpoint,
    write_resolved,
)

log = logging.getLogger(__name__)

AUDIT_LOG = "sharetxn-recovery.jsonl"
SPARK_COMMIT = "spark-commit"
_RECOVERY_SCAN_INTERVAL_S = 0.2


@dataclasses.dataclass(frozen=True, slots=True)
class Connection:
    """How the resolver reaches the cluster (picklable: it travels to Spark's workers)."""

    bootstrap_servers: str
    client_config: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def producer_config(self) -> dict[str, Any]:
        return {"bootstrap.servers": self.bootstrap_servers, **self.client_config}


def _commit_one(conn: Connection, txn: IntentTransaction, ours: Callable[[], bool]) -> str:
    """Commit one prepared transaction; ``ours()``: an earlier commit of ours was begun."""
    try:
        producer = TransactionalProducer.resume(
            txn.transactional_id, txn.producer_id, txn.epoch, conn.producer_config()
        )
    except NoPreparedTransactionError as exc:
        if ours():
            return "already complete"  # an earlier commit phase of ours finished it
        msg = (
            f"{txn.transactional_id}: the prepared transaction ({txn.producer_id}, "
            f"{txn.epoch}) of a decided batch is gone and no commit of ours was begun: "
            f"something else ended it (heuristic hazard: outputs or acks may be lost): {exc}"
        )
        raise ResolveError(msg) from exc
    except DifferentPreparedTransactionError as exc:
        msg = (
            f"{txn.transactional_id}: the prepared transaction ({txn.producer_id}, "
            f"{txn.epoch}) of a decided batch was replaced: {exc}"
        )
        raise ResolveError(msg) from exc
    try:
        producer.commit_transaction()
    finally:
        producer.close()
    return "committed"


def _step(txn: IntentTransaction, batch: int) -> dict[str, Any]:
    return {
        "action": "commit",
        "transactional_id": txn.transactional_id,
        "producer_id": txn.producer_id,
        "producer_epoch": txn.epoch,
        "batch": batch,
    }


def commit_decided(
    checkpoint: Path, state_dir: Path, conn: Connection, *, by: str, max_workers: int = 8
) -> list[int]:
    """Commit every unresolved intent whose batch is in the commit log; returns the batches.

    Each commit is written ahead to the recovery audit log (``begin``), so start-up
    recovery knows a transaction that is gone from the coordinator was committed by us.
    """
    done: list[int] = []
    with resolve_lock(state_dir):
        view = read_checkpoint(checkpoint, state_dir)
        decided = [i for i in view.unresolved() if i.batch in view.commits]
        if not decided:
            return done
        audit = AuditLog(state_dir / AUDIT_LOG, operator=by, command=SPARK_COMMIT)
        # Read the audit log only when a transaction is gone (rare): it grows with the query.
        begun = functools.cache(
            lambda: _begun_commits(state_dir / AUDIT_LOG, exclude_run=audit.run_id)
        )
        for intent in decided:
            started = time.monotonic()
            for t in intent.transactions:
                audit.write("begin", {"step": _step(t, intent.batch), "reason": "commits/N"})
            with ThreadPoolExecutor(max_workers=max(1, max_workers)) as pool:
                results = list(
                    pool.map(
                        lambda t: _commit_one(
                            conn,
                            t,
                            lambda: (t.transactional_id, t.producer_id, t.epoch) in begun(),
                        ),
                        intent.transactions,
                    )
                )
            for t, result in zip(intent.transactions, results, strict=True):
                outcome = "applied" if result == "committed" else "noop"
                audit.write("end", {"step": _step(t, intent.batch), "outcome": outcome})
            write_resolved(state_dir, intent.batch, Outcome.COMMIT, by)
            log.info(
                "batch %d committed in %.3fs: %d transaction(s), %d already complete",
                intent.batch,
                time.monotonic() - started,
                results.count("committed"),
                results.count("already complete"),
            )
            done.append(intent.batch)
        _forget_old(checkpoint, state_dir)
    return done


def _begun_commits(
    audit_path: Path, *, exclude_run: str | None = None
) -> set[tuple[str, int, int]]:
    """(id, producer id, epoch) of every commit this module began (write-ahead).

    ``exclude_run`` leaves out the begins of the running commit phase itself.
    """
    out: set[tuple[str, int, int]] = set()
    for event in read_audit_log(audit_path):
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


def _forget_old(checkpoint: Path, state_dir: Path) -> None:
    """Drop resolved intents older than any batch Spark still keeps (minBatchesToRetain)."""
    offsets = checkpoint / "offsets"
    if not offsets.is_dir():
        return
    kept = [int(p.name) for p in offsets.iterdir() if p.name.isdigit()]
    if not kept:
        return
    oldest = min(kept)
    intents, resolved = state_dir / INTENTS_DIR, state_dir / RESOLVED_DIR
    if not resolved.is_dir():
        return
    for path in list(resolved.iterdir()):
        if not path.name.isdigit() or int(path.name) >= oldest:
            continue
        (intents / f"{path.name}.json").unlink(missing_ok=True)  # intent first, then resolved
        path.unlink(missing_ok=True)


def _history(audit_path: Path) -> Callable[[str, int, int], Mapping[str, Any] | None]:
    """The recovery tool's history lookup, plus the commits this module wrote ahead."""
    begun = _begun_commits(audit_path)

    def lookup(tid: str, pid: int, epoch: int) -> Mapping[str, Any] | None:
        found = previously_applied(audit_path, tid, pid, epoch)
        if found is not None:
            return found
        if (tid, pid, epoch) in begun:
            # Only a commit can end a decided prepared transaction (it never times out and
            # the decision rule never aborts it): it was this module's commit.
            return {
                "event": "end",
                "outcome": "applied",
                "step": {"action": "commit"},
                "ts": "earlier commit phase",
            }
        return None

    return lookup


@dataclasses.dataclass(frozen=True, slots=True)
class RecoveryReport:
    committed: int
    aborted: int
    noop: int
    batches: tuple[int, ...]


def recover(
    checkpoint: Path,
    state_dir: Path,
    conn: Connection,
    prefixes: set[str],
    *,
    by: str,
) -> RecoveryReport:
    """The decision rule at query start, through ``recovery.recover`` with an audit log."""
    committed = aborted = noop = 0
    batches: set[int] = set()
    with resolve_lock(state_dir), Admin(conn.producer_config()) as admin:
        view = read_checkpoint(checkpoint, state_dir)
        scanner = Scanner(admin)
        audit = AuditLog(state_dir / AUDIT_LOG, operator=by, command="spark-source-recovery")
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
                history=_history(state_dir / AUDIT_LOG),
            )
            results = apply_recovery(executor, view, steps, by=by)
            for r in results:
                if r.outcome not in (StepOutcome.APPLIED, StepOutcome.NOOP):
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
            view = read_checkpoint(checkpoint, state_dir)  # resolved/N written meanwhile
    return RecoveryReport(committed, aborted, noop, tuple(sorted(batches)))
