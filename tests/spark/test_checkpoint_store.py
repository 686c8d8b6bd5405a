"""Checkpoints on a distributed store: Hadoop's FileSystem on ``file://`` and ``s3a://``.

The S3 store is a real S3-compatible server (moto) on 127.0.0.1, reached through Hadoop's
s3a file system with the hadoop-aws jars resolved by mvn (tests/spark/s3store.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coordinator.launcher import LocalBroker
from producer.spark.demo import DriverProcess, prepare_input, verify
from tests.sharetxn_cli import recover_dry_run
from tests.spark.s3store import MotoS3
from tests.spark.test_exactly_once import DRIVER_TIMEOUT_S, exit_code, fault_env

pytest.importorskip("pyspark")
pytest.importorskip("moto")
pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

HERE = Path(__file__).parent
REPO = HERE.parent.parent


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoS3]:
    with MotoS3(tmp_path_factory.mktemp("moto") / "moto.log") as server:
        yield server


def env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


def test_hadoop_file_system_on_file_and_s3a(s3: MotoS3, tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(HERE / "checkpoint_store_driver.py"),
            json.dumps(s3.spark_conf()),
            str(tmp_path / "local"),
            s3.uri("unit"),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env=env(),
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    managers = json.loads(done.stdout.split("OK ", 1)[1])
    assert "CheckpointFileManager" in managers["s3a"]
    assert managers["file"].endswith("FileContextBasedCheckpointFileManager")
    # What the driver wrote is on the S3 server, with no temporary objects left over.
    keys = s3.keys("unit/")
    assert "unit/chk/intents/0.json" in keys and "unit/chk/metadata" in keys
    assert not [k for k in keys if ".tmp" in k or "/." in k], keys


def recover(broker: LocalBroker, s3: MotoS3, checkpoint: str) -> dict[str, Any]:
    """``sharetxn recover --checkpoint s3a://... --json`` (dry run), with no query running."""
    confs = [a for k, v in s3.spark_conf().items() for a in ("--spark-conf", f"{k}={v}")]
    done = recover_dry_run(broker.bootstrap_servers, checkpoint, *confs, timeout=180, env=env())
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]  # 1: work found
    result: dict[str, Any] = json.loads(done.stdout[done.stdout.index("{") :])
    return result


def test_exactly_once_with_the_checkpoint_on_s3a(
    broker: LocalBroker, s3: MotoS3, tmp_path: Path
) -> None:
    records = 2_000
    prepare_input(broker.bootstrap_servers, records)
    checkpoint = s3.uri("queries/enrich")
    conf = tuple(a for k, v in s3.spark_conf().items() for a in ("--conf", f"{k}={v}"))

    def run(name: str, extra_env: dict[str, str] | None = None) -> int:
        driver = DriverProcess(
            broker.bootstrap_servers,
            checkpoint,
            tmp_path / f"{name}.log",
            records_per_partition=400,
            env=extra_env,
            timeout_s=DRIVER_TIMEOUT_S,
            extra_args=conf,
        )
        return exit_code(driver)

    # The driver dies after batch 1's intent is on S3 and before Spark's commits/1.
    code = run("killed", fault_env("kill-after-intent:1"))
    assert code == -9, (tmp_path / "killed.log").read_text(errors="replace")[-4000:]
    keys = set(s3.keys("queries/enrich/"))
    assert "queries/enrich/intents/1.json" in keys
    assert "queries/enrich/commits/1" not in keys
    # The operator's tool reads the checkpoint on S3 without a running query.
    plan = recover(broker, s3, checkpoint)
    assert plan["checkpoint"] == checkpoint
    assert {s["action"] for s in plan["plan"] if s["batch"] == 1} == {"abort", "mark-resolved"}

    code = run("restarted")
    assert code == 0, (tmp_path / "restarted.log").read_text(errors="replace")[-4000:]
    verdict = verify(broker.bootstrap_servers, records)
    assert verdict.exactly_once and verdict.outputs == records, verdict
    assert verdict.redeliveries > 0  # batch 1 was aborted and read again
    keys = set(s3.keys("queries/enrich/"))
    intents = {k.rsplit("/", 1)[1].removesuffix(".json") for k in keys if "/intents/" in k}
    resolved = {k.rsplit("/", 1)[1] for k in keys if "/resolved/" in k}
    assert intents and intents <= resolved, (intents, resolved)
