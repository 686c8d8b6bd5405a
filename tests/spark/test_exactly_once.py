"""The exactly-once Spark pipeline with real PySpark (local mode) against a real broker.

Each query runs in its own driver process (``python -m producer.spark.job``), so a test
can SIGKILL the driver with its JVM and workers, restart it on the same checkpoint and
check the outcome from outside with a stock read_committed consumer.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from coordinator.launcher import LocalBroker
from producer.spark.demo import DriverProcess, prepare_input, transaction_counts, verify
from producer.twophase.spark_checkpoint import read_checkpoint
from tests.sharetxn_cli import recover_dry_run

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

HOOKS = Path(__file__).parent / "hooks"
DRIVER_TIMEOUT_S = 240.0


def fault_env(fault: str) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(HOOKS), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "SHARETXN_TEST_FAULT": fault}


def run_driver(
    broker: LocalBroker,
    tmp_path: Path,
    name: str,
    *,
    per_task: int,
    env: dict[str, str] | None = None,
    master: str = "local[2]",
) -> int:
    driver = DriverProcess(
        broker.bootstrap_servers,
        tmp_path / "checkpoint",
        tmp_path / f"{name}.log",
        records_per_partition=per_task,
        master=master,
        env=env,
        timeout_s=DRIVER_TIMEOUT_S,
    )
    return exit_code(driver)


def exit_code(driver: DriverProcess) -> int:
    """The driver's exit code; a driver whose wait is cut short is killed."""
    try:
        return driver.wait(DRIVER_TIMEOUT_S + 60)
    except BaseException:
        driver.kill()
        raise


def recover_plan(broker: LocalBroker, checkpoint: Path) -> list[dict[str, Any]]:
    """``sharetxn recover --checkpoint DIR --json`` (a dry run): its planned steps."""
    done = recover_dry_run(broker.bootstrap_servers, checkpoint)
    assert done.returncode == 1, done.stdout + done.stderr  # 1: found something to do
    plan: list[dict[str, Any]] = json.loads(done.stdout)["plan"]
    return plan


def log_of(tmp_path: Path, name: str) -> str:
    return (tmp_path / f"{name}.log").read_text(errors="replace")[-4000:]


def assert_exactly_once(broker: LocalBroker, records: int, tmp_path: Path) -> None:
    verdict = verify(broker.bootstrap_servers, records)
    assert verdict.exactly_once, verdict
    assert verdict.outputs == records
    view = read_checkpoint(tmp_path / "checkpoint")
    assert not view.unresolved(), f"intents left unresolved: {sorted(view.intents)}"


def test_ten_thousand_records_exactly_once_without_faults(
    broker: LocalBroker, tmp_path: Path
) -> None:
    prepare_input(broker.bootstrap_servers, 10_000)
    code = run_driver(broker, tmp_path, "driver", per_task=2_000)
    assert code == 0, log_of(tmp_path, "driver")
    assert_exactly_once(broker, 10_000, tmp_path)
    verdict = verify(broker.bootstrap_servers, 10_000)
    assert verdict.redeliveries == 0
    view = read_checkpoint(tmp_path / "checkpoint")
    assert len(view.commits) >= 2  # several batches, each committed and resolved
    assert view.resolved >= view.commits & set(view.intents)
    committed, aborted = transaction_counts(tmp_path / "checkpoint")
    assert committed > 0 and aborted == 0


# One query lifetime killed at the three points of a batch's life, then run to its end. Each
# start recovers what the previous run left: batches of 600 records (3 partitions, 200 each).
KILLS = (
    "kill-before-commit:1",  # commits/1 exists: the next start commits batch 1
    "kill-after-read-prepare:2",  # reads prepared, no intent: aborted, the batch reads again
    "kill-after-intent:3",  # intent without commits/3: aborted, the batch runs again
)


def test_driver_killed_at_three_points_then_restarted_is_exactly_once(
    broker: LocalBroker, tmp_path: Path
) -> None:
    records = 3_000
    prepare_input(broker.bootstrap_servers, records)
    checkpoint = tmp_path / "checkpoint"
    redeliveries: list[int] = []  # seen by a read_committed consumer after each killed run
    for n, fault in enumerate(KILLS):
        name = f"killed-{n}"
        code = run_driver(broker, tmp_path, name, per_task=200, env=fault_env(fault))
        assert code == -9, f"the driver was not killed at {fault}:\n{log_of(tmp_path, name)}"
        point, _, at = fault.rpartition(":")
        batch = int(at)
        view = read_checkpoint(checkpoint)
        assert batch - 1 in view.resolved and batch not in view.resolved, fault
        if point == "kill-before-commit":
            assert batch in view.commits and batch in view.intents
        elif point == "kill-after-intent":
            assert batch in view.intents and batch not in view.commits
            # The operator's tool sees the same decision as the query's own recovery.
            plan = recover_plan(broker, checkpoint)
            assert {s["action"] for s in plan if s["batch"] == batch} == {"abort", "mark-resolved"}
        else:
            assert batch not in view.intents
        redeliveries.append(verify(broker.bootstrap_servers, records).redeliveries)

    code = run_driver(broker, tmp_path, "restarted", per_task=200)
    assert code == 0, log_of(tmp_path, "restarted")
    assert_exactly_once(broker, records, tmp_path)
    final = verify(broker.bootstrap_servers, records).redeliveries
    # Batch 1 (killed before its commit) was committed by the next start, nothing read twice;
    # batch 2 (killed after its read prepare) and batch 3 (killed after its intent) read again.
    assert redeliveries[1] == 0, redeliveries
    assert redeliveries[2] > redeliveries[1], redeliveries
    assert final > redeliveries[2], (redeliveries, final)
    _committed, aborted = transaction_counts(checkpoint)
    assert aborted > 0


def test_a_retried_read_task_fences_its_first_attempt(broker: LocalBroker, tmp_path: Path) -> None:
    records = 2_000
    prepare_input(broker.bootstrap_servers, records)
    code = run_driver(
        broker,
        tmp_path,
        "driver",
        per_task=500,
        env=fault_env("fail-read-once:0"),
        master="local[2,3]",  # up to 3 attempts per task
    )
    assert code == 0, log_of(tmp_path, "driver")
    assert "injected failure of read task 0" in (tmp_path / "driver.log").read_text()
    assert_exactly_once(broker, records, tmp_path)
    # The first attempt's acks were aborted by the fencing: its records came back.
    assert verify(broker.bootstrap_servers, records).redeliveries > 0


def test_broker_killed_and_restarted_while_the_query_runs(
    broker: LocalBroker, tmp_path: Path
) -> None:
    records = 4_000
    prepare_input(broker.bootstrap_servers, records)
    checkpoint = tmp_path / "checkpoint"
    driver = DriverProcess(
        broker.bootstrap_servers,
        checkpoint,
        tmp_path / "driver-0.log",
        records_per_partition=300,
        timeout_s=DRIVER_TIMEOUT_S,
    )
    runs = 0
    try:
        deadline = time.monotonic() + 120
        while not (checkpoint / "commits" / "1").exists():
            assert driver.poll() is None, driver.tail()
            assert time.monotonic() < deadline, "no second batch within 120 s"
            time.sleep(0.05)
        broker.kill()
        time.sleep(3)
        broker.start()
        # The query either rides over the outage or fails; a failed one is restarted.
        while True:
            code = driver.wait(DRIVER_TIMEOUT_S + 60)
            if code == 0:
                break
            runs += 1
            assert runs <= 3, driver.tail()
            driver = DriverProcess(
                broker.bootstrap_servers,
                checkpoint,
                tmp_path / f"driver-{runs}.log",
                records_per_partition=300,
                timeout_s=DRIVER_TIMEOUT_S,
            )
    finally:
        if driver.poll() is None:
            driver.kill()
    assert_exactly_once(broker, records, tmp_path)
