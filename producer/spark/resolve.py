"""The commit phase and the start-up recovery of a query's prepared transactions.

``commit_decided`` is the fast path, run from every commit point (the source's
``commit(end)`` and ``latestOffset``, the sink's committer, query stop): it is
``producer.twophase.commit_phase.commit_decided`` (write ahead, resume and commit through
the decider ``sharetxn recover --apply`` uses too, write ``resolved/N``).

``recover`` is the start-up path, ``producer.twophase.startup.recover``: it goes through
``producer.twophase.recover`` — the same code as ``sharetxn recover --apply`` — so the query
and the operator's tool always decide alike.

``fenced_transaction`` is the sink's check of a batch's prepared transactions before its
intent is written.
"""

from __future__ import annotations

from producer.admin import Admin
from producer.spark.checkpoint import AUDIT_LOG
from producer.twophase.commit_phase import SPARK_COMMIT, Connection, commit_decided
from producer.twophase.spark_checkpoint import IntentTransaction
from producer.twophase.startup import RecoveryReport, recover

__all__ = [
    "AUDIT_LOG",
    "SPARK_COMMIT",
    "Connection",
    "RecoveryReport",
    "commit_decided",
    "fenced_transaction",
    "recover",
]


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
