"""The commit phase of a Spark query's decided batches: write ahead, resume, commit, audit.

``commit_decided`` is run from every commit point of the Spark integration (the source's
``commit(end)`` and ``latestOffset``, the sink's committer, query stop): for each intent
whose batch is in Spark's commit log and not yet resolved, it writes ``committing/N``
ahead, commits the batch's prepared transactions through ``resume_and_end`` (the decider
``sharetxn recover --apply`` uses too) and writes ``resolved/N``.  It is idempotent: a
transaction that another resolver already finished is reported as such and not touched.

It reads and writes the checkpoint through ``QueryCheckpoint`` (the base of
``producer.spark.checkpoint.Checkpoint``) and reaches the cluster through a ``Connection``:
a batch's whole commit phase is one call from the Spark integration into this package.
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

from producer.twophase.audit import AuditLog, read_audit_log
from producer.twophase.errors import DecidedBatchAbortedError, ResolveError
from producer.twophase.query_checkpoint import QueryCheckpoint
from producer.twophase.resume import Ended, resume_and_end
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

__all__ = [
    "SPARK_COMMIT",
    "Connection",
    "begun_commits",
    "commit_decided",
    "decided_aborted",
]

SPARK_COMMIT = "spark-commit"


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
    checkpoint: QueryCheckpoint,
    batch: int,
    txn: IntentTransaction,
) -> str:
    def aborted(detail: str) -> Exception:
        return decided_aborted(
            checkpoint, batch, txn.transactional_id, txn.producer_id, txn.epoch, detail
        )

    return _commit_one(
        conn,
        txn,
        lambda: (txn.transactional_id, txn.producer_id, txn.epoch) in begun(),
        aborted,
    )


def decided_aborted(
    checkpoint: QueryCheckpoint, batch: int, tid: str, pid: int, epoch: int, detail: str
) -> DecidedBatchAbortedError:
    """The error of a decided batch whose prepared transaction the cluster aborted."""
    return DecidedBatchAbortedError(
        batch=batch,
        transactional_id=tid,
        producer_id=pid,
        epoch=epoch,
        checkpoint=checkpoint.location,
        detail=detail,
    )


def _step(txn: IntentTransaction, batch: int) -> dict[str, Any]:
    return {
        "action": "commit",
        "transactional_id": txn.transactional_id,
        "producer_id": txn.producer_id,
        "producer_epoch": txn.epoch,
        "batch": batch,
    }


def commit_decided(
    checkpoint: QueryCheckpoint, conn: Connection, *, by: str, max_workers: int = 8
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
                functools.partial(begun_commits, checkpoint, None, audit.run_id, earlier)
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
    checkpoint: QueryCheckpoint,
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


def _committing(checkpoint: QueryCheckpoint, batch: int) -> set[tuple[str, int, int]]:
    return read_committing(checkpoint.fs, checkpoint.location, batch)


def begun_commits(
    checkpoint: QueryCheckpoint,
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


def _forget_old(checkpoint: QueryCheckpoint) -> None:
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
