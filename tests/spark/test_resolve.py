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
    _step,
    commit_decided,
    recover,
)
from recovery.audit import AuditLog
from recovery.spark_checkpoint import (
    Intent,
    IntentTransaction,
    read_checkpoint,
    transactional_id,
    write_intent,
)

pytestmark = pytest.mark.integration

QUERY = "q-1"
PREFIX = "app"


def prepared(bootstrap: str, tid: str) -> IntentTransaction:
    p = TransactionalProducer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": tid,
            "transaction.two.phase.commit.enable": True,
        }
    )
    try:
        p.init_transactions()
        p.begin_transaction()
        p.send("out", b"v")
        state = p.prepare_transaction()
    finally:
        p.close()
    return IntentTransaction(state.transactional_id, state.producer_id, state.epoch, "w")


def checkpoint(tmp_path: Path) -> Path:
    chk = tmp_path / "chk"
    (chk / "commits").mkdir(parents=True)
    (chk / "metadata").write_text(json.dumps({"id": QUERY}) + "\n")
    return chk


def states(bootstrap: str, txns: list[IntentTransaction]) -> list[str]:
    with Admin(bootstrap) as admin:
        return [d.state for d in admin.describe_transactions([t.transactional_id for t in txns])]


def test_commit_phase_is_idempotent_and_recovery_finishes_a_crashed_one(
    broker: LocalBroker, tmp_path: Path
) -> None:
    b = broker.bootstrap_servers
    with Admin(b) as admin:
        admin.create_topics([TopicSpec("out", 1)])
    chk = checkpoint(tmp_path)
    conn = Connection(b)
    # Batch 0: decided and committed by the commit phase, twice (idempotent).
    batch0 = [prepared(b, transactional_id(PREFIX, QUERY, "w", 0, p)) for p in range(2)]
    write_intent(chk, Intent(0, tuple(batch0), QUERY, PREFIX))
    (chk / "commits" / "0").write_text("v1\n{}\n")
    assert commit_decided(Checkpoint.local(chk), conn, by="test") == [0]
    assert commit_decided(Checkpoint.local(chk), conn, by="test") == []
    assert all(s.startswith("Complete") or s == "Empty" for s in states(b, batch0))

    # Batch 1: decided; the commit phase crashed after committing one of two.
    batch1 = [prepared(b, transactional_id(PREFIX, QUERY, "w", 1, p)) for p in range(2)]
    write_intent(chk, Intent(1, tuple(batch1), QUERY, PREFIX))
    (chk / "commits" / "1").write_text("v1\n{}\n")
    audit = AuditLog(chk / AUDIT_LOG, operator="test", command=SPARK_COMMIT)
    for t in batch1:
        audit.write("begin", {"step": _step(t, 1)})
    first = TransactionalProducer.resume(
        batch1[0].transactional_id, batch1[0].producer_id, batch1[0].epoch, conn.producer_config()
    )
    first.commit_transaction()
    first.close()

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
    with Admin(b) as admin:
        admin.create_topics([TopicSpec("out", 1)])
    chk = checkpoint(tmp_path)
    txn = prepared(b, transactional_id(PREFIX, QUERY, "w", 0, 0))
    write_intent(chk, Intent(0, (txn,), QUERY, PREFIX))
    (chk / "commits" / "0").write_text("v1\n{}\n")
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
    with Admin(b) as admin:
        admin.create_topics([TopicSpec("out", 1)])
    chk = checkpoint(tmp_path)
    (chk / "offsets").mkdir()
    for n in range(3):
        write_intent(chk, Intent(n, (), QUERY, PREFIX))
        (chk / "resolved").mkdir(exist_ok=True)
        (chk / "resolved" / str(n)).write_text("{}\n")
    # Spark keeps offsets/5 on; batch 5 is decided now.
    (chk / "offsets" / "5").write_text("v1\n{}\n")
    txn = prepared(b, transactional_id(PREFIX, QUERY, "w", 5, 0))
    write_intent(chk, Intent(5, (txn,), QUERY, PREFIX))
    (chk / "commits" / "5").write_text("v1\n{}\n")
    assert commit_decided(Checkpoint.local(chk), Connection(b), by="test") == [5]
    view = read_checkpoint(chk)
    assert sorted(view.intents) == [5] and view.resolved == {5}


def test_a_commit_phase_that_died_on_another_host_is_known_by_committing_n(
    broker: LocalBroker, tmp_path: Path
) -> None:
    """The driver moved: no local audit log, but ``committing/N`` is in the checkpoint."""
    b = broker.bootstrap_servers
    with Admin(b) as admin:
        admin.create_topics([TopicSpec("out", 1)])
    chk = checkpoint(tmp_path)
    conn = Connection(b)
    txns = [prepared(b, transactional_id(PREFIX, QUERY, "w", 0, p)) for p in range(2)]
    write_intent(chk, Intent(0, tuple(txns), QUERY, PREFIX))
    (chk / "commits" / "0").write_text("v1\n{}\n")
    # The dead commit phase wrote ahead, committed the first transaction and died.
    (chk / "committing").mkdir()
    body = {"batch": 0, "transactions": [t.to_json() for t in txns]}
    (chk / "committing" / "0").write_text(json.dumps(body))
    first = TransactionalProducer.resume(
        txns[0].transactional_id, txns[0].producer_id, txns[0].epoch, conn.producer_config()
    )
    first.commit_transaction()
    first.close()
    assert not (chk / AUDIT_LOG).exists()
    # The commit phase on the new host finishes it: the gone one was ours, not a hazard.
    assert commit_decided(Checkpoint.local(chk), conn, by="test") == [0]
    assert read_checkpoint(chk).resolved == {0}
    assert not any(s == "Ongoing" for s in states(b, txns))
