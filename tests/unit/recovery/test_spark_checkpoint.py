"""The Spark checkpoint contract and the decision rule (DESIGN §6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from producer.twophase.model import CheckpointFormatError, TxnSnapshot
from producer.twophase.spark_checkpoint import (
    Intent,
    IntentTransaction,
    Outcome,
    decide,
    parse_intent,
    read_checkpoint,
    transactional_id,
    write_intent,
    write_resolved,
)

QID = "3f1c-query"


def live(tid: str, state: str, pid: int, epoch: int) -> TxnSnapshot:
    return TxnSnapshot(tid, state, pid, epoch, 2147483647, 1, (), 2)


def tid(role: str, batch: int, partition: int = 0) -> str:
    return transactional_id("orders", QID, role, batch, partition)


def make_checkpoint(root: Path) -> Path:
    root.mkdir()
    (root / "metadata").write_text(json.dumps({"id": QID}) + "\n")
    (root / "commits").mkdir()
    for n in (0, 1):
        (root / "commits" / str(n)).write_text('v1\n{"nextBatchWatermarkMs":0}\n')
    (root / "commits" / ".1.crc").write_text("x")  # Hadoop checksum files are ignored
    for n, pid in ((0, 10), (1, 11), (2, 12)):
        write_intent(
            root,
            Intent(
                n,
                (
                    IntentTransaction(tid("r", n), pid, 0, "r"),
                    IntentTransaction(tid("w", n), pid + 100, 0, "w"),
                ),
                query_id=QID,
            ),
        )
    write_resolved(root, 0, Outcome.COMMIT, "test")
    return root


def test_ids_and_layout(tmp_path: Path) -> None:
    assert tid("r", 5, 3) == f"orders-{QID}-r-1-3"
    with pytest.raises(ValueError, match="role"):
        transactional_id("orders", QID, "x", 0, 0)
    view = read_checkpoint(make_checkpoint(tmp_path / "chk"))
    assert view.query_id == QID
    assert sorted(view.intents) == [0, 1, 2]
    assert view.commits == frozenset({0, 1})
    assert view.resolved == frozenset({0})
    assert [i.batch for i in view.unresolved()] == [1, 2]
    assert view.transactional_id_prefix() == "orders"
    assert view.intents[1].transactions[1] == IntentTransaction(tid("w", 1), 111, 0, "w")
    # the atomic writer leaves no temporary file behind
    assert sorted(p.name for p in (tmp_path / "chk" / "intents").iterdir()) == [
        "0.json",
        "1.json",
        "2.json",
    ]


def test_decision_rule_both_directions_and_orphans(tmp_path: Path) -> None:
    view = read_checkpoint(make_checkpoint(tmp_path / "chk"))
    coordinator = [
        live(tid("r", 1), "Ongoing", 11, 0),
        live(tid("w", 1), "Ongoing", 111, 0),
        live(tid("r", 2), "Ongoing", 12, 0),
        live(tid("w", 2), "CompleteAbort", 112, 0),
        live(f"orders-{QID}-r-1-7", "Ongoing", 99, 4),  # no intent: an orphan
        live("orders-other-query-r-0-0", "Ongoing", 98, 0),  # another query: untouched
        live(tid("r", 0), "Ongoing", 10, 0),  # resolved/0 but still open: commit again
    ]
    decisions = decide(view, coordinator, "orders")
    got = {(d.transactional_id, d.producer_id, d.outcome, d.batch) for d in decisions.transactions}
    assert got == {
        (tid("r", 1), 11, Outcome.COMMIT, 1),
        (tid("w", 1), 111, Outcome.COMMIT, 1),
        (tid("r", 2), 12, Outcome.ABORT, 2),
        (tid("w", 2), 112, Outcome.ABORT, 2),
        (f"orders-{QID}-r-1-7", 99, Outcome.ABORT, None),
        (tid("r", 0), 10, Outcome.COMMIT, 0),
    }
    assert decisions.batches == ((1, Outcome.COMMIT), (2, Outcome.ABORT))
    orphans = [d for d in decisions.transactions if d.orphan]
    assert len(orphans) == 1 and "orphan" in orphans[0].reason


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"{not json", "not JSON"),
        (b"[]", "JSON object"),
        (b'{"batch": 3, "transactions": []}', "named for batch 4"),
        (b'{"version": 2, "batch": 4, "transactions": []}', "version"),
        (b'{"batch": 4}', "'transactions' must be a list"),
        (b'{"batch": 4, "transactions": [{"producer_id": 1, "epoch": 0}]}', "transactional_id"),
        (
            b'{"batch": 4, "transactions": [{"transactional_id": "t", "producer_id": -1, '
            b'"epoch": 0}]}',
            "producer_id",
        ),
        (
            b'{"batch": 4, "transactions": [{"transactional_id": "t", "producer_id": 1, '
            b'"epoch": true}]}',
            "epoch",
        ),
        (
            b'{"batch": 4, "transactions": [{"transactional_id": "t", "producer_id": 1, '
            b'"epoch": 0, "role": "x"}]}',
            "role",
        ),
    ],
)
def test_malformed_intents_are_refused(body: bytes, match: str) -> None:
    with pytest.raises(CheckpointFormatError, match=match):
        parse_intent(body, "intents/4.json", 4)


def test_an_intent_of_another_query_is_refused(tmp_path: Path) -> None:
    root = make_checkpoint(tmp_path / "chk")
    write_intent(root, Intent(5, (), query_id="someone-else"))
    with pytest.raises(CheckpointFormatError, match="someone-else"):
        read_checkpoint(root)


def test_state_dir_and_query_id_from_intents(tmp_path: Path) -> None:
    chk, state = tmp_path / "chk", tmp_path / "eos"
    chk.mkdir()
    write_intent(state, Intent(0, (IntentTransaction(tid("r", 0), 1, 0),), query_id=QID))
    view = read_checkpoint(chk, state)
    assert view.query_id == QID and list(view.intents) == [0]
    assert view.decision_for(0) is Outcome.ABORT
    with pytest.raises(CheckpointFormatError, match="not a directory"):
        read_checkpoint(tmp_path / "missing")
