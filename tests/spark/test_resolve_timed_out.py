"""A decided batch whose prepared transaction the coordinator aborted (its timeout) is an error.

On a cluster without KIP-939 (``sharetxn.prepare.mode=timeout``, Apache Kafka's stock
settings) a prepared transaction is a plain one: the coordinator aborts it after
``transaction.timeout.ms``.  If that happens after ``commits/N`` and after the commit phase
wrote ``committing/N`` ahead but before its EndTxn (the driver died in between), the commit
phase and the start-up recovery must fail typed -- not take the aborted transaction for one
their own earlier commit finished and mark the batch resolved (its outputs would be lost).
No Spark: the checkpoint is written as Spark and the sink write it; a real broker.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from coordinator.launcher import LocalBroker
from producer.admin import Admin, TopicSpec
from producer.spark.checkpoint import Checkpoint
from producer.spark.errors import ResolveError
from producer.spark.resolve import Connection, commit_decided, recover
from producer.twophase.spark_checkpoint import (
    Intent,
    IntentTransaction,
    read_checkpoint,
    transactional_id,
)
from tests.spark_checkpoints import TIMEOUT_BOUNDED, decided, new_checkpoint, prepared_and_left

pytestmark = pytest.mark.integration

QUERY = "q-timeout"
PREFIX = "app"


@pytest.fixture
def fast_reaper(tmp_path: Path) -> Iterator[LocalBroker]:
    config = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "300"}
    with LocalBroker(data_dir=tmp_path / "data", config=config) as running:
        yield running


def _timed_out_decided_batch(bootstrap: str, chk: Path) -> IntentTransaction:
    """Batch 0 prepared (timeout-bounded), decided, its commit begun, then aborted by timeout."""
    with Admin(bootstrap) as admin:
        admin.create_topics([TopicSpec("out", 1)])
    new_checkpoint(chk, QUERY)
    tid = transactional_id(PREFIX, QUERY, "w", 0, 0)
    state = prepared_and_left(bootstrap, tid, "out", b"decided", config=TIMEOUT_BOUNDED)
    txn = IntentTransaction(state.transactional_id, state.producer_id, state.epoch, "w")
    decided(chk, Intent(0, (txn,), QUERY, PREFIX))
    # The commit phase wrote ahead and died before its EndTxn.
    (chk / "committing").mkdir()
    (chk / "committing" / "0").write_text(json.dumps({"batch": 0, "transactions": [txn.to_json()]}))
    deadline = time.monotonic() + 20
    with Admin(bootstrap) as admin:
        while True:
            [desc] = admin.describe_transactions([tid])
            if desc.state == "CompleteAbort" or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    assert desc.state == "CompleteAbort", desc
    return txn


def test_commit_phase_and_recovery_refuse_a_decided_transaction_aborted_by_its_timeout(
    fast_reaper: LocalBroker, tmp_path: Path
) -> None:
    bootstrap = fast_reaper.bootstrap_servers
    chk = tmp_path / "chk"
    _timed_out_decided_batch(bootstrap, chk)
    conn = Connection(bootstrap)
    with pytest.raises(ResolveError, match="aborted"):
        commit_decided(Checkpoint.local(chk), conn, by="test")
    assert 0 not in read_checkpoint(chk).resolved
    with pytest.raises(ResolveError, match="aborted"):
        recover(Checkpoint.local(chk), conn, {PREFIX}, by="test")
    assert 0 not in read_checkpoint(chk).resolved
