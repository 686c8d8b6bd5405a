"""``ExactlyOnce`` on Apache Kafka 4.4 behind Spark's own Kafka source (issue 17, item 1).

* Stock Kafka settings (no KIP-939: timeout-bounded prepare, resume by stored ids): one
  query lifetime whose driver is SIGKILLed at the three points of the Spark tests, each
  restart exactly once by value (tests/spark/kafka_source_job.py).
* A decided batch whose prepared transaction the cluster aborted (its timeout ran out):
  the commit phase and the start-up recovery fail with ``DecidedBatchAbortedError``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from producer import TransactionalProducer
from producer.admin import Admin, TopicSpec
from producer.spark.checkpoint import Checkpoint
from producer.spark.errors import DecidedBatchAbortedError
from producer.spark.resolve import Connection, commit_decided, recover
from recovery.spark_checkpoint import (
    Intent,
    IntentTransaction,
    read_checkpoint,
    transactional_id,
    write_intent,
)
from tests.reference.kafka import ReferenceKafka
from tests.reference.test_two_phase_commit_against_kafka import _wait_state

pytestmark = pytest.mark.reference


@pytest.mark.spark
@pytest.mark.timeout(900)
def test_kafka_source_into_exactly_once_on_kafka_killed_at_three_points(
    reference_kafka: ReferenceKafka, tmp_path: Path
) -> None:
    pytest.importorskip("pyspark")
    from tests.spark.kafka_source_job import run_killed_three_times  # noqa: PLC0415

    run_killed_three_times(reference_kafka.bootstrap_servers, tmp_path)


def test_a_decided_batch_the_cluster_aborted_fails_typed(
    kafka_2pc: ReferenceKafka, tmp_path: Path
) -> None:
    """Timeout-bounded prepare (as on stock Kafka) that ran out before the commit phase."""
    bootstrap = kafka_2pc.bootstrap_servers
    topic = "decided-aborted"
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([TopicSpec(topic, 1, 1)])
    chk = tmp_path / "chk"
    (chk / "commits").mkdir(parents=True)
    (chk / "metadata").write_text(json.dumps({"id": "q-1"}) + "\n")
    tid = transactional_id("app", "q-1", "w", 0, 0)
    producer = TransactionalProducer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": tid,
            "transaction.two.phase.commit.enable": True,
            "sharetxn.prepare.mode": "timeout",
            "transaction.timeout.ms": 1000,
        }
    )
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, b"lost", partition=0)
        state = producer.prepare_transaction()
    finally:
        producer.close()
    txn = IntentTransaction(tid, state.producer_id, state.epoch, "w")
    write_intent(chk, Intent(0, (txn,), "q-1", "app"))
    (chk / "commits" / "0").write_text("v1\n{}\n")
    assert _wait_state(bootstrap, tid, "CompleteAbort").state == "CompleteAbort"
    conn = Connection(bootstrap)
    with pytest.raises(DecidedBatchAbortedError) as committed:
        commit_decided(Checkpoint.local(chk), conn, by="test")
    with pytest.raises(DecidedBatchAbortedError) as recovered:
        recover(Checkpoint.local(chk), conn, {"app"}, by="test")
    for raised in (committed.value, recovered.value):
        assert (raised.batch, raised.transactional_id) == (0, tid)
        assert "transaction.two.phase.commit.enable=true" in str(raised)
        assert f"{chk}/commits/0" in str(raised)
    assert 0 not in read_checkpoint(chk).resolved  # never passed off as committed
