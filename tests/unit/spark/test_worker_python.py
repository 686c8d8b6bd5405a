"""The Python Spark starts its processes with: PySpark's own archives off ``PYTHONPATH``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from producer.spark.worker_python import launcher_text, shipped_archives, worker_python

pytestmark = pytest.mark.skipif(os.name != "posix", reason="a /bin/sh launcher")

SHOW = "import os; print(os.environ.get('PYTHONPATH', '<unset>'))"


def _launcher(tmp_path: Path, archives: list[str]) -> Path:
    launcher = tmp_path / "python"
    launcher.write_text(launcher_text(sys.executable, archives))
    launcher.chmod(0o755)
    return launcher


def _pythonpath(launcher: Path, pythonpath: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    done = subprocess.run(
        [str(launcher), "-c", SHOW], capture_output=True, text=True, check=True, env=env
    )
    return done.stdout.strip()


def test_the_archives_leave_pythonpath_and_the_rest_stays_in_order(tmp_path: Path) -> None:
    zips = [str(tmp_path / "lib" / "pyspark.zip"), str(tmp_path / "lib" / "py4j-0.10-src.zip")]
    launcher = _launcher(tmp_path, zips)
    kept = f"/opt/a b/c:{tmp_path}/x*"  # spaces and glob characters pass untouched
    assert _pythonpath(launcher, f"{zips[0]}:{zips[1]}:{kept}") == kept
    assert _pythonpath(launcher, f"/first:{zips[1]}:/last") == "/first:/last"
    assert _pythonpath(launcher, zips[0]) == "<unset>"
    assert _pythonpath(launcher, None) == "<unset>"
    other = str(tmp_path / "elsewhere" / "pyspark.zip")  # another Spark's archive stays
    assert _pythonpath(launcher, other) == other


def test_the_launcher_runs_this_interpreter(tmp_path: Path) -> None:
    launcher = _launcher(tmp_path, [str(tmp_path / "pyspark.zip")])
    done = subprocess.run(
        [str(launcher), "-c", "import sys; print(sys.executable)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert os.path.samefile(done.stdout.strip(), sys.executable)


def test_worker_python_is_a_launcher_in_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pyspark")
    if not shipped_archives():
        pytest.skip("this PySpark ships no python/lib archives")
    monkeypatch.setenv("SHARETXN_KAFKA_CACHE", str(tmp_path))
    made = Path(worker_python())
    assert made.parent.parent == tmp_path and os.access(made, os.X_OK)
    assert worker_python() == str(made)  # made once, then reused
    assert _pythonpath(made, os.pathsep.join(shipped_archives())) == "<unset>"


def test_the_demo_reads_the_line_the_job_prints() -> None:
    pytest.importorskip("pyspark")
    from producer.spark.demo import DRAINED  # noqa: PLC0415
    from producer.spark.job import DRAINED as JOB_DRAINED  # noqa: PLC0415

    assert DRAINED == JOB_DRAINED
