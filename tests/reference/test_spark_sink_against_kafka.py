"""``ExactlyOnce`` on Apache Kafka 4.4 behind Spark's own Kafka source (issue 17, item 1).

* Stock Kafka settings (no KIP-939: timeout-bounded prepare, resume by stored ids): one
  query lifetime whose driver is SIGKILLed at the three points of the Spark tests, each
  restart exactly once by value (tests/spark/kafka_source_job.py).
* KIP-939 on (``Enable2Pc``): the example of docs/spark.md "On Apache Kafka" runs as
  written (brokers, paths and the connector's jars substituted).
* A decided batch whose prepared transaction the cluster aborted (its timeout ran out):
  the commit phase and the start-up recovery fail with ``DecidedBatchAbortedError``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from producer.admin import Admin, TopicSpec
from producer.spark.checkpoint import Checkpoint
from producer.spark.errors import DecidedBatchAbortedError
from producer.spark.resolve import Connection, commit_decided, recover
from producer.twophase.spark_checkpoint import (
    Intent,
    IntentTransaction,
    read_checkpoint,
    transactional_id,
)
from tests.reference.kafka import ReferenceKafka
from tests.reference.test_two_phase_commit_against_kafka import _wait_state
from tests.sharetxn_cli import recover_dry_run
from tests.spark_checkpoints import TIMEOUT_BOUNDED, decided, new_checkpoint, prepared_and_left
from tests.spark_guide import guide_example, run_guide_script
from txn.limits import INT32_MAX

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
    new_checkpoint(chk, "q-1")
    tid = transactional_id("app", "q-1", "w", 0, 0)
    state = prepared_and_left(bootstrap, tid, topic, b"lost", 0, TIMEOUT_BOUNDED)
    txn = IntentTransaction(tid, state.producer_id, state.epoch, "w")
    decided(chk, Intent(0, (txn,), "q-1", "app"))
    # A commit phase began (its write-ahead) and died before its EndTxn: no evidence of a
    # commit once the cluster shows the transaction aborted.
    (chk / "committing").mkdir()
    (chk / "committing" / "0").write_text(json.dumps({"batch": 0, "transactions": [txn.to_json()]}))
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
    # The operator's tool refuses it too (a hazard), instead of calling it committed.
    done = recover_dry_run(bootstrap, chk)
    plan = json.loads(done.stdout)["plan"]
    steps = [s for s in plan if s["transactional_id"] == tid]
    assert [s["action"] for s in steps] == ["refuse"], plan
    assert "heuristic hazard" in steps[0]["reason"], steps


@pytest.mark.spark
@pytest.mark.timeout(400)
def test_the_guide_example_on_kafka_with_kip939(kafka_2pc: ReferenceKafka, tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    from confluent_kafka import Producer  # noqa: PLC0415

    from producer.spark.demo import read_committed  # noqa: PLC0415

    bootstrap = kafka_2pc.bootstrap_servers
    code = guide_example("kafka")
    for placeholder in ('"127.0.0.1:9092"', "/var/lib/pipelines/clicks-upper", "kafka_jars()"):
        assert placeholder in code, placeholder
    code = code.replace('"127.0.0.1:9092"', repr(bootstrap)).replace(
        "/var/lib/pipelines/clicks-upper", str(tmp_path / "chk")
    )
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([TopicSpec("clicks", 2, 1), TopicSpec("clicks-upper", 2, 1)])
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(500):
        producer.produce("clicks", f"click-{i}".encode(), key=str(i).encode())
    producer.flush()
    run_guide_script(tmp_path / "guide.py", code, timeout=300)
    counts = Counter(read_committed(bootstrap, "clicks-upper"))
    assert counts == Counter({f"CLICK-{i}".encode(): 1 for i in range(500)})
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        ours = [
            t for t in admin.list_transactions() if t.transactional_id.startswith("sharetxn-spark-")
        ]
        assert ours and all(t.state == "CompleteCommit" for t in ours), ours
        described = admin.describe_transactions([t.transactional_id for t in ours])
    # prepared with KIP-939's Enable2Pc: no timeout
    assert {d.transaction_timeout_ms for d in described} == {INT32_MAX}
