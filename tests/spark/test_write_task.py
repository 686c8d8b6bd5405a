"""The sink's write task without Spark: the row path (PySpark's fallback without pandas)."""

from __future__ import annotations

from pathlib import Path

import pytest

from coordinator.launcher import LocalBroker
from producer.admin import Admin, TopicSpec
from producer.spark.resolve import Connection
from producer.spark.write_task import WriteTask
from producer.twophase.spark_checkpoint import transactional_id

pytestmark = pytest.mark.integration


def test_the_row_path_prepares_one_transaction_per_partition(tmp_path: Path) -> None:
    with LocalBroker(data_dir=tmp_path / "broker") as broker:
        bootstrap = broker.bootstrap_servers
        with Admin(bootstrap) as admin:
            admin.create_topics([TopicSpec("out", 1)])
        task = WriteTask(Connection(bootstrap), {}, "app", "q-1", 4, 2, "out")
        # PySpark hands BinaryType values to Python as bytearray; keys may be null.
        rows = [(bytearray(b"k1"), bytearray(b"v1")), (None, bytearray(b"v2"))]
        [(tid, pid, epoch, sent)] = list(task.rows(1, iter(rows)))
        assert tid == transactional_id("app", "q-1", "w", 4, 3)  # first_partition + index
        assert sent == 2
        assert list(task.rows(0, iter([]))) == []  # an empty partition prepares nothing
        with Admin(bootstrap) as admin:
            [desc] = admin.describe_transactions([tid])
        assert desc.state == "Ongoing"  # prepared, left for the commit phase
        assert (desc.producer_id, desc.producer_epoch) == (pid, epoch)
