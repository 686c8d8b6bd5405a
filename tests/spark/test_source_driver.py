"""The kafka-share source's driver side and read tasks, without a Spark session."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from coordinator.launcher import LocalBroker
from producer.admin import RESOURCE_GROUP, Admin, TopicSpec

pytest.importorskip("pyspark")

from producer.spark.options import SourceOptions
from producer.spark.source import ReadTask, ShareStreamReader, arrow_schema, read_task

pytestmark = pytest.mark.integration


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[LocalBroker]:
    """A broker with Kafka 4.4's share-group assignment interval (1 s): a new group's
    partitions come at the member's next heartbeat, and each read task waits for them."""
    with LocalBroker(data_dir=tmp_path / "data") as running:
        yield running


def reader(broker: LocalBroker, chk: Path, **extra: str) -> ShareStreamReader:
    chk.mkdir(parents=True, exist_ok=True)
    (chk / "metadata").write_text(json.dumps({"id": "q-1"}) + "\n")
    options = {
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "group.id": "g",
        "subscribe": "in",
        "checkpointLocation": str(chk),
        **extra,
    }
    return ShareStreamReader(SourceOptions.parse(options))


def test_the_source_reads_committed_records_only(broker: LocalBroker, tmp_path: Path) -> None:
    b = broker.bootstrap_servers
    with Admin(b) as admin:
        admin.create_topics([TopicSpec("in", 1)])
        admin.alter_group_configs("g", {"share.auto.offset.reset": "earliest"})
    txn = Producer({"bootstrap.servers": b, "transactional.id": "upstream"})
    txn.init_transactions()
    txn.begin_transaction()
    txn.produce("in", b"aborted")
    txn.flush()
    txn.abort_transaction()
    txn.begin_transaction()
    txn.produce("in", b"committed")
    txn.commit_transaction()

    r = reader(broker, tmp_path / "chk")
    assert r.initialOffset() == {"v": 1, "batch": -1}  # starts: checks and configures
    with Admin(b) as admin:
        configs = admin.describe_configs(RESOURCE_GROUP, "g", explicit_only=True)
    assert configs["share.isolation.level"] == "read_committed"
    assert configs["share.auto.offset.reset"] == "earliest"  # left as the user set it
    task = ReadTask(b, "g", ("in",), "q-1", "sharetxn-spark", 0, 0, 100, 1000)
    batches = list(read_task(task))  # one Arrow record batch, in Spark's schema
    assert [batch.schema for batch in batches] == [arrow_schema()]
    rows = [row for batch in batches for row in batch.to_pylist()]
    assert [row["value"] for row in rows] == [b"committed"]
    assert rows[0]["receipt_transactional_id"] == task.transactional_id
    r.stop()


def test_no_new_data_repeats_the_ticket_spark_stored(broker: LocalBroker, tmp_path: Path) -> None:
    with Admin(broker.bootstrap_servers) as admin:
        admin.create_topics([TopicSpec("in", 1)])
    chk = tmp_path / "chk"
    r = reader(broker, chk, startingOffsets="latest")
    # Batch 1 was a no-data batch (a stateful query): Spark stored batch 0's ticket again.
    for n, stored in ((0, 0), (1, 0)):
        for d in ("offsets", "commits"):
            (chk / d).mkdir(exist_ok=True)
        (chk / "offsets" / str(n)).write_text(
            'v1\n{"batchWatermarkMs":0}\n' + json.dumps({"v": 1, "batch": stored}) + "\n"
        )
        (chk / "commits" / str(n)).write_text("v1\n{}\n")
    assert r.latestOffset() == {"v": 1, "batch": 0}  # nothing to read: unchanged
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    p.produce("in", b"x")
    p.flush()
    assert r.latestOffset() == {"v": 1, "batch": 2}  # records: Spark's next batch id
    r.stop()


def test_unknown_group_without_starting_offsets_fails_fast(
    broker: LocalBroker, tmp_path: Path
) -> None:
    with Admin(broker.bootstrap_servers) as admin:
        admin.create_topics([TopicSpec("in", 1)])
    r = reader(broker, tmp_path / "chk")
    with pytest.raises(ValueError, match="share group 'g' does not exist"):
        r.initialOffset()
    r.stop()


def test_subscribe_pattern_is_resolved_at_start_and_at_every_trigger(
    broker: LocalBroker, tmp_path: Path
) -> None:
    b = broker.bootstrap_servers
    with Admin(b) as admin:
        admin.create_topics([TopicSpec("in-1", 2), TopicSpec("in-x", 1), TopicSpec("out", 1)])
    chk = tmp_path / "chk"
    chk.mkdir()
    (chk / "metadata").write_text(json.dumps({"id": "q-1"}) + "\n")
    r = ShareStreamReader(
        SourceOptions.parse(
            {
                "kafka.bootstrap.servers": b,
                "kafka.share.group.id": "g",
                "subscribePattern": r"in-\d",
                "includeHeaders": "true",
                "startingOffsets": "earliest",
                "checkpointLocation": str(chk),
            }
        )
    )
    assert r.initialOffset() == {"v": 1, "batch": -1}
    assert r.latestOffset() == {"v": 1, "batch": -1}  # in-1 is empty: no batch
    with Admin(b) as admin:
        admin.create_topics([TopicSpec("in-2", 1)])  # created while the query runs
    p = Producer({"bootstrap.servers": b})
    p.produce("in-2", b"x", headers=[("h", b"1")])
    p.flush()
    assert r.latestOffset() == {"v": 1, "batch": 0}  # found in-2 and its record
    tasks = r.partitions({"v": 1, "batch": -1}, {"v": 1, "batch": 0})
    assert len(tasks) == 1  # one read task by default (several starve each other)
    task = tasks[0]
    assert isinstance(task, ReadTask)
    assert task.max_records == 30_000  # in-1's two partitions and in-2's one, 10,000 each
    assert (task.topics, task.include_headers) == (("in-1", "in-2"), True)
    rows = [row for batch in read_task(task) for row in batch.to_pylist()]
    assert [(row["value"], row["headers"], row["timestampType"]) for row in rows] == [
        (b"x", [{"key": "h", "value": b"1"}], 0)
    ]
    r.stop()
