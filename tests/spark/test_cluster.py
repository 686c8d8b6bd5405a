"""The exactly-once query on a Spark standalone cluster (a master and two workers).

An executor is SIGKILLed while a read task of a batch holds its prepared transaction;
Spark runs the task again on an executor that is left, whose InitProducerId fences the
dead attempt's transaction, and the output is exactly once by value.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from coordinator.launcher import LocalBroker
from producer.spark.cluster import StandaloneCluster
from producer.spark.demo import DriverProcess, prepare_input, verify
from recovery.spark_checkpoint import read_checkpoint
from tests.spark.test_exactly_once import DRIVER_TIMEOUT_S, fault_env

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[LocalBroker]:
    with LocalBroker(data_dir=tmp_path / "broker") as running:
        yield running


def test_an_executor_killed_during_a_batch_on_a_standalone_cluster(
    broker: LocalBroker, tmp_path: Path
) -> None:
    records = 1_500
    prepare_input(broker.bootstrap_servers, records)
    marker = tmp_path / "read-prepared"
    env = {
        **fault_env("hold-read-after-prepare:1"),
        "SHARETXN_TEST_MARKER": str(marker),
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    with StandaloneCluster(tmp_path / "cluster", workers=2, cores=1, env=env) as cluster:
        driver = DriverProcess(
            broker.bootstrap_servers,
            tmp_path / "checkpoint",
            tmp_path / "driver.log",
            records_per_partition=250,
            master=cluster.url,
            env=env,
            timeout_s=DRIVER_TIMEOUT_S,
            extra_args=("--conf", "spark.executor.memory=512m"),
        )
        try:
            deadline = time.monotonic() + 180
            while not marker.exists():
                assert driver.poll() is None, driver.tail() + cluster.tail()
                assert time.monotonic() < deadline, "batch 1 never prepared a read"
                time.sleep(0.1)
            executor = cluster.executor_of(int(marker.read_text()))
            assert executor is not None and executor in cluster.executor_pids()
            os.kill(executor, signal.SIGKILL)  # mid-batch: its read is prepared, not decided
            code = driver.wait(DRIVER_TIMEOUT_S + 60)
        finally:
            if driver.poll() is None:
                driver.kill()
        assert code == 0, driver.tail(60) + cluster.tail()
    verdict = verify(broker.bootstrap_servers, records)
    assert verdict.exactly_once and verdict.outputs == records, verdict
    assert verdict.redeliveries > 0  # the dead attempt's records came back
    view = read_checkpoint(tmp_path / "checkpoint")
    assert not view.unresolved() and 1 in view.resolved
