"""The commit phase and start-up recovery of the Spark integration, against a real broker.

No Spark here: the checkpoint files are written as Spark and the sink would write them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coordinator.launcher import LocalBroker
from producer import TransactionalProducer
from producer.admin import Admin, TopicSpec
from producer.spark.checkpoint import Checkpoint
from producer.spark.errors import ResolveError
from producer.spark.resolve import (
    AUDIT_LOG,
    SPARK_COMMIT,
    Connection,
    commit_decided,
    recover,
)
from producer.twophase.audit import AuditLog
from producer.twophase.commit_phase import _step
from producer.twophase.spark_checkpoint import (
    Intent,
    IntentTransaction,
    read_checkpoint,
    transactional_id,
    write_intent,
)
from tests.spark_checkpoints import decided, new_checkpoint, prepared_and_left

pytestmark = pytest.mark.integration

QUERY = "q-1"
PREFIX = "app"


def prepared(bootstrap: str, tid: str) -> IntentTransaction:
    state = prepared_and_left(bootstrap, tid, "out", b"v")
    return IntentTransaction(state.transactional_id, state.producer_id, state.epoch, "w")


def checkpoint(bootstrap: str, tmp_path: Path) -> Path:
    """Topic "out" for the transactions to write to, and an empty checkpoint of QUERY."""
    with Admin(bootstrap) as admin:
        admin.create_topics([TopicSpec("out", 1)])
    return new_checkpoint(tmp_path / "chk", QUERY)


def decided_batch(b: str, chk: Path, batch: int, writers: int) -> list[IntentTransaction]:
    """Batch ``batch``'s transactions (one a writer task) prepared, and the batch decided."""
    txns = [prepared(b, transactional_id(PREFIX, QUERY, "w", batch, p)) for p in range(writers)]
    decided(chk, Intent(batch, tuple(txns), QUERY, PREFIX))
    return txns


def commit_resumed(txn: IntentTransaction, conn: Connection) -> None:
    """``txn`` committed by another producer (as a commit phase that then died would)."""
    first = TransactionalProducer.resume(
        txn.transactional_id, txn.producer_id, txn.epoch, conn.producer_config()
    )
    first.commit_transaction()
    first.close()


def states(bootstrap: str, txns: list[IntentTransaction]) -> list[str]:
    with Admin(bootstrap) as admin:
        return [d.state for d in admin.describe_transactions([t.transactional_id for t in txns])]


def test_commit_phase_is_idempotent_and_recovery_finishes_a_crashed_one(
    broker: LocalBroker, tmp_path: Path
) -> None:
    b = broker.bootstrap_servers
    chk = checkpoint(b, tmp_path)
    conn = Connection(b)
    # Batch 0: decided and committed by the commit phase, twice (idempotent).
    batch0 = decided_batch(b, chk, 0, 2)
    assert commit_decided(Checkpoint.local(chk), conn, by="test") == [0]
    assert commit_decided(Checkpoint.local(chk), conn, by="test") == []
    assert all(s.startswith("Complete") or s == "Empty" for s in states(b, batch0))

    # Batch 1: decided; the commit phase crashed after committing one of two.
    batch1 = decided_batch(b, chk, 1, 2)
    audit = AuditLog(chk / AUDIT_LOG, operator="test", command=SPARK_COMMIT)
    for t in batch1:
        audit.write("begin", {"step": _step(t, 1)})
    commit_resumed(batch1[0], conn)

    # Batch 2: an intent without commits/2 (the driver died before Spark decided).
    batch2 = [prepared(b, transactional_id(PREFIX, QUERY, "r", 0, 0))]
    write_intent(chk, Intent(2, tuple(batch2), QUERY, PREFIX))
    # An orphan: prepared with the query's prefix, named by no intent.
    orphan = prepared(b, transactional_id(PREFIX, QUERY, "r", 1, 5))

    report = recover(Checkpoint.local(chk), conn, {PREFIX}, by="test")
    assert report.committed == 1  # the second of batch 1
    assert report.aborted == 2  # batch 2 and the orphan
    view = read_checkpoint(chk)
    assert view.resolved == {0, 1, 2}
    assert not any(s == "Ongoing" for s in states(b, [*batch1, *batch2, orphan]))
    # A second recovery finds nothing to do.
    again = recover(Checkpoint.local(chk), conn, {PREFIX}, by="test")
    assert (again.committed, again.aborted) == (0, 0)


def test_a_decided_transaction_ended_by_someone_else_is_a_resolve_error(
    broker: LocalBroker, tmp_path: Path
) -> None:
    b = broker.bootstrap_servers
    chk = checkpoint(b, tmp_path)
    [txn] = decided_batch(b, chk, 0, 1)
    # A zombie (or an operator) re-initialises the id: the decided transaction is aborted.
    zombie = TransactionalProducer(
        {"bootstrap.servers": b, "transactional.id": txn.transactional_id}
    )
    zombie.init_transactions()
    zombie.close()
    with pytest.raises(ResolveError, match="heuristic hazard"):
        commit_decided(Checkpoint.local(chk), Connection(b), by="test")
    assert 0 not in read_checkpoint(chk).resolved


def test_resolved_intents_older_than_spark_keeps_are_dropped(
    broker: LocalBroker, tmp_path: Path
) -> None:
    b = broker.bootstrap_servers
    chk = checkpoint(b, tmp_path)
    (chk / "offsets").mkdir()
    for n in range(3):
        write_intent(chk, Intent(n, (), QUERY, PREFIX))
        (chk / "resolved").mkdir(exist_ok=True)
        (chk / "resolved" / str(n)).write_text("{}\n")
    # Spark keeps offsets/5 on; batch 5 is decided now.
    (chk / "offsets" / "5").write_text("v1\n{}\n")
    decided_batch(b, chk, 5, 1)
    assert commit_decided(Checkpoint.local(chk), Connection(b), by="test") == [5]
    view = read_checkpoint(chk)
    assert sorted(view.intents) == [5] and view.resolved == {5}


def test_a_commit_phase_that_died_on_another_host_is_known_by_committing_n(
    broker: LocalBroker, tmp_path: Path
) -> None:
    """The driver moved: no local audit log, but ``committing/N`` is in the checkpoint."""
    b = broker.bootstrap_servers
    chk = checkpoint(b, tmp_path)
    conn = Connection(b)
    txns = decided_batch(b, chk, 0, 2)
    # The dead commit phase wrote ahead, committed the first transaction and died.
    (chk / "committing").mkdir()
    body = {"batch": 0, "transactions": [t.to_json() for t in txns]}
    (chk / "committing" / "0").write_text(json.dumps(body))
    commit_resumed(txns[0], conn)
    assert not (chk / AUDIT_LOG).exists()
    # The commit phase on the new host finishes it: the gone one was ours, not a hazard.
    assert commit_decided(Checkpoint.local(chk), conn, by="test") == [0]
    assert read_checkpoint(chk).resolved == {0}
    assert not any(s == "Ongoing" for s in states(b, txns))
