"""The exactly-once query on a Spark standalone cluster (a master and two workers).

An executor is SIGKILLed while a read task of batch 1 holds its prepared transaction;
Spark runs the task again on an executor that is left, whose InitProducerId fences the
dead attempt's transaction.  Then the driver is SIGKILLed after Spark decided batch 1 and
before its commit phase; the restarted driver commits it.  The output is exactly once by
value.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from coordinator.launcher import LocalBroker
from producer.spark.cluster import StandaloneCluster
from producer.spark.demo import DriverProcess, prepare_input, verify
from producer.twophase.spark_checkpoint import read_checkpoint
from tests.spark.test_exactly_once import DRIVER_TIMEOUT_S, fault_env

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]


def test_an_executor_and_the_driver_killed_on_a_standalone_cluster(
    broker: LocalBroker, tmp_path: Path
) -> None:
    records = 1_500
    prepare_input(broker.bootstrap_servers, records)
    marker = tmp_path / "read-prepared"
    local = {"SPARK_LOCAL_IP": "127.0.0.1"}
    # The executors (under the workers) hold batch 1's first read; the driver dies before
    # committing batch 1.
    executors_env = {
        **fault_env("hold-read-after-prepare:1"),
        "SHARETXN_TEST_MARKER": str(marker),
        **local,
    }
    with StandaloneCluster(tmp_path / "cluster", workers=2, cores=1, env=executors_env) as cluster:

        def driver(name: str, env: dict[str, str]) -> DriverProcess:
            return DriverProcess(
                broker.bootstrap_servers,
                tmp_path / "checkpoint",
                tmp_path / f"{name}.log",
                records_per_partition=250,
                master=cluster.url,
                env={**env, **local},
                timeout_s=DRIVER_TIMEOUT_S,
                extra_args=("--conf", "spark.executor.memory=512m"),
            )

        first = driver("killed", fault_env("kill-before-commit:1"))
        try:
            deadline = time.monotonic() + 180
            while not marker.exists():
                assert first.poll() is None, first.tail() + cluster.tail()
                assert time.monotonic() < deadline, "batch 1 never prepared a read"
                time.sleep(0.1)
            executor = cluster.executor_of(int(marker.read_text()))
            assert executor is not None and executor in cluster.executor_pids()
            os.kill(executor, signal.SIGKILL)  # mid-batch: its read is prepared, not decided
            code = first.wait(DRIVER_TIMEOUT_S + 60)
        finally:
            if first.poll() is None:
                first.kill()
        assert code == -9, first.tail(60) + cluster.tail()
        assert "Lost executor" in (tmp_path / "killed.log").read_text(errors="replace")
        view = read_checkpoint(tmp_path / "checkpoint")
        assert 1 in view.commits and 1 in view.intents and 1 not in view.resolved

        second = driver("restarted", {})
        try:
            code = second.wait(DRIVER_TIMEOUT_S + 60)
        finally:
            if second.poll() is None:
                second.kill()
        assert code == 0, second.tail(60) + cluster.tail()
    verdict = verify(broker.bootstrap_servers, records)
    assert verdict.exactly_once and verdict.outputs == records, verdict
    assert verdict.redeliveries > 0  # the dead attempt's records came back
    view = read_checkpoint(tmp_path / "checkpoint")
    assert not view.unresolved() and 1 in view.resolved
