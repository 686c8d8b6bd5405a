"""Resolving one Spark query's transactions: the decision rule turned into plans and actions.

``plan_recovery`` scans the coordinator twice, applies ``spark_checkpoint.decide`` and
returns the steps (one per transaction, then ``mark-resolved`` for each unresolved
batch); ``apply_recovery`` executes them with compare-and-set and writes ``resolved/N``
once every transaction of batch N is complete.  ``sharetxn recover`` and the Spark
source's own recovery call these two functions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Container, Mapping, Sequence
from pathlib import Path
from typing import Any

from producer.admin import Admin
from producer.produce.prepared_txn import StoredTxnStatus, classify
from producer.twophase.audit import previously_applied
from producer.twophase.checkpoint_fs import join
from producer.twophase.execute import Executor, Outcome, StepResult
from producer.twophase.model import TxnSnapshot
from producer.twophase.plan import Action, Evidence, EvidenceKind, Op, Step, plan_step
from producer.twophase.scan import Scanner
from producer.twophase.spark_checkpoint import (
    COMMITS_DIR,
    RESOLVED_DIR,
    CheckpointView,
    decide,
    query_prefix,
    write_resolved,
)
from producer.twophase.spark_checkpoint import Outcome as Decision
from txn.errors import ErrorCode

HistoryLookup = Callable[[str, int, int], Mapping[str, Any] | None]
_DONE = (Outcome.APPLIED, Outcome.NOOP)
_PAST = {Decision.COMMIT: "committed", Decision.ABORT: "aborted"}


def live_transactions(
    scanner: Scanner, view: CheckpointView, prefix: str | None
) -> dict[str, TxnSnapshot]:
    """The coordinator's view of every id the decision rule may act on."""
    tids = {t.transactional_id for i in view.unresolved() for t in i.transactions}
    if prefix and view.query_id:
        tids |= {
            t.transactional_id
            for t in scanner.listings(prefix=query_prefix(prefix, view.query_id))
            if t.state != "Empty" and not t.state.startswith("Complete")
        }
    return scanner.snapshots(tids)


def plan_recovery(
    scanner: Scanner,
    view: CheckpointView,
    prefix: str | None,
    scan_interval_s: float,
    *,
    history: HistoryLookup | None = None,
) -> list[Step]:
    """The steps of the decision rule, each checked against two scans.

    ``history(id, producer id, epoch)`` returns the audit event of an action this tool
    already applied to that transaction (see ``producer.twophase.audit.previously_applied``).
    """
    pairs = scanner.two_scans(live_transactions(scanner, view, prefix), scan_interval_s)
    decisions = decide(view, [p.second for p in pairs.values()], prefix)
    pids = sorted({p.second.producer_id for p in pairs.values() if p.second.known})
    pending = scanner.pending_acks(pids) if pids else {}
    by_batch: dict[int | None, list[Step]] = {}
    for d in decisions.transactions:
        commit = d.outcome is Decision.COMMIT
        evidence = (
            Evidence(
                EvidenceKind.SPARK_COMMIT_LOG, join(view.checkpoint, COMMITS_DIR, str(d.batch))
            )
            if commit
            else None
        )
        step = plan_step(
            Op.COMMIT if commit else Op.ABORT,
            pairs[d.transactional_id],
            producer_id=d.producer_id,
            producer_epoch=d.epoch,
            evidence=evidence,
            pending=pending.get(d.producer_id),
            decision_rule=True,
            batch=d.batch,
            history=history(d.transactional_id, d.producer_id, d.epoch) if history else None,
        )
        by_batch.setdefault(d.batch, []).append(
            dataclasses.replace(step, reason=f"{d.reason}; {step.reason}")
        )
    steps: list[Step] = []
    for batch, outcome in decisions.batches:
        steps.extend(by_batch.pop(batch, []))
        steps.append(
            Step(
                None,
                Action.MARK_RESOLVED,
                f"(batch {batch})",
                None,
                None,
                f"every transaction of batch {batch} is {_PAST[outcome]}",
                preconditions=(f"each transaction of batch {batch} ended with {outcome.value}",),
                effects=(f"writes {join(view.state_dir, RESOLVED_DIR, str(batch))}",),
                batch=batch,
                extra={"outcome": outcome.value},
            )
        )
    for rest in by_batch.values():  # resolved batches still open, and orphans (batch None)
        steps.extend(rest)
    return steps


def apply_recovery(
    executor: Executor, view: CheckpointView, steps: Sequence[Step], *, by: str
) -> list[StepResult]:
    """Execute the steps; ``resolved/N`` only after all of batch N's transactions ended."""
    results: list[StepResult] = []
    for step in steps:
        if step.action is not Action.MARK_RESOLVED:
            results.append(executor.execute(step))
            continue
        assert step.batch is not None
        unfinished = [
            r
            for r in results
            if r.step.batch == step.batch
            and r.step.action is not Action.MARK_RESOLVED
            and r.outcome not in _DONE
        ]
        if unfinished:
            results.append(
                StepResult(
                    step,
                    Outcome.PENDING,
                    f"not marked resolved: {len(unfinished)} transaction(s) of batch "
                    f"{step.batch} did not end",
                )
            )
            continue
        outcome = Decision(step.extra["outcome"])
        path = write_resolved(view.state_dir, step.batch, outcome, by, view.fs)
        executor.audit.write(
            "resolved",
            {"step": step.to_json(), "path": str(path), "outcome": outcome.value},
        )
        results.append(StepResult(step, Outcome.APPLIED, f"wrote {path}"))
    return results


def aborted_by_cluster(admin: Admin, tid: str, pid: int, epoch: int) -> str | None:
    """How the coordinator aborted (tid, pid, epoch), or None if it did not (or cannot tell).

    A commit begun on a timeout-bounded prepared transaction (Apache Kafka without
    KIP-939) may have lost the race with the timeout: a begun commit is evidence of a
    commit only where this says None.
    """
    [desc] = admin.describe_transactions([tid])
    if desc.error is not ErrorCode.NONE:
        return None
    view = classify(desc, pid, epoch)
    if view.status is not StoredTxnStatus.ABORTED:
        return None
    timeout = desc.transaction_timeout_ms
    return f"the coordinator shows {view.describe()} (transaction.timeout.ms {timeout} ms)"


def history_with_begun_commits(
    audit_log: str | Path,
    begun: Container[tuple[str, int, int]],
    admin: Admin,
    begun_at: str,
) -> HistoryLookup:
    """The tool's own applied actions (``audit_log``), and the commits ``begun`` lists.

    A begun commit of (tid, pid, epoch) counts as an applied commit (at ``begun_at``) unless
    the cluster shows that transaction aborted (a timeout-bounded prepare on Apache Kafka
    whose timeout won): the plan then refuses it as a hazard.
    """

    def lookup(tid: str, pid: int, epoch: int) -> Mapping[str, Any] | None:
        found = previously_applied(audit_log, tid, pid, epoch)
        if found is not None:
            return found
        if (tid, pid, epoch) in begun and aborted_by_cluster(admin, tid, pid, epoch) is None:
            return {
                "event": "end",
                "outcome": "applied",
                "step": {"action": "commit"},
                "ts": begun_at,
            }
        return None

    return lookup
