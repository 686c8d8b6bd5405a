"""A Spark standalone cluster on this machine, started from the installed PySpark.

    with StandaloneCluster(Path("/tmp/cluster"), workers=2) as cluster:
        spark = SparkSession.builder.master(cluster.url)...

One ``Master`` and N ``Worker`` processes (``spark-class org.apache.spark.deploy...``) on
127.0.0.1, each worker with ``cores`` cores and ``memory`` for executors.  Workers inherit
this process's environment (with ``env`` added), and so do the executors they launch:
that is how the executors' Python finds sharetxn (``PYTHONPATH``).  For tests and
``bench/``; a production cluster is deployed by its operators (docs/spark.md, "Deploying
on a cluster").

    python -m producer.spark.cluster --workers 2    # prints the master URL; Ctrl-C stops
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


class ClusterError(RuntimeError):
    pass


def spark_home() -> Path:
    import pyspark  # noqa: PLC0415 - optional dependency

    return Path(pyspark.__file__).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [p.decode(errors="replace") for p in raw.split(b"\0") if p]


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may contain spaces, so split after the last ')'.
    return int(stat.rsplit(")", 1)[1].split()[1])


class StandaloneCluster:
    """A master and ``workers`` workers on 127.0.0.1; stopped (SIGTERM, then SIGKILL) on exit."""

    def __init__(
        self,
        workdir: Path,
        *,
        workers: int = 2,
        cores: int = 1,
        memory: str = "1g",
        env: dict[str, str] | None = None,
        start_timeout_s: float = 90.0,
    ) -> None:
        self.workdir = workdir
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.env = {
            **os.environ,
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": "256m",
            "PYSPARK_PYTHON": sys.executable,
            **(env or {}),
        }
        self.start_timeout_s = start_timeout_s
        self.port = _free_port()
        self.ui_port = _free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self._procs: list[subprocess.Popen[bytes]] = []

    def _spawn(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        self.workdir.mkdir(parents=True, exist_ok=True)
        with (self.workdir / f"{name}.log").open("ab") as log:
            proc = subprocess.Popen(  # noqa: S603 - PySpark's own launcher
                [str(spark_home() / "bin" / "spark-class"), *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
            )
        self._procs.append(proc)
        return proc

    def __enter__(self) -> StandaloneCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def start(self) -> None:
        self._spawn(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--webui-port",
            str(self.ui_port),
        )
        for i in range(self.workers):
            self._spawn(
                f"worker-{i}",
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--cores",
                str(self.cores),
                "--memory",
                self.memory,
                "--webui-port",
                str(_free_port()),
                "--work-dir",
                str(self.workdir / f"worker-{i}"),
                self.url,
            )
        deadline = time.monotonic() + self.start_timeout_s
        while self.alive_workers() < self.workers:
            dead = [p.args for p in self._procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                msg = f"the standalone cluster did not start ({dead or 'timeout'}): {self.tail()}"
                raise ClusterError(msg)
            time.sleep(0.3)

    def state(self) -> dict[str, object]:
        """The master's JSON status (its web UI's ``/json``)."""
        url = f"http://127.0.0.1:{self.ui_port}/json/"
        with urllib.request.urlopen(url, timeout=2) as reply:
            state: dict[str, object] = json.loads(reply.read())
        return state

    def alive_workers(self) -> int:
        try:
            return int(str(self.state().get("aliveworkers", 0)))
        except (OSError, ValueError):
            return 0

    def executor_pids(self) -> list[int]:
        """The executor JVMs the workers launched."""
        workers = {p.pid for p in self._procs[1:]}
        out = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            if EXECUTOR_CLASS not in _cmdline(pid):
                continue
            ancestor = _parent(pid)
            for _ in range(4):  # worker JVM (under spark-class's shell) -> executor
                if ancestor is None or ancestor in workers:
                    break
                ancestor = _parent(ancestor)
            if ancestor in workers:
                out.append(pid)
        return sorted(out)

    @staticmethod
    def executor_of(pid: int) -> int | None:
        """The executor JVM that ``pid`` (a Python worker of a task) runs under."""
        current: int | None = pid
        for _ in range(6):
            if current is None:
                return None
            if EXECUTOR_CLASS in _cmdline(current):
                return current
            current = _parent(current)
        return None

    def tail(self, lines: int = 20) -> str:
        out = []
        for log in sorted(self.workdir.glob("*.log")):
            text = log.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"== {log.name}\n" + "\n".join(text))
        return "\n".join(out)

    def stop(self) -> None:
        for proc in reversed(self._procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for proc in self._procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self._procs.clear()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m producer.spark.cluster",
        description="Run a Spark standalone cluster on 127.0.0.1 until interrupted.",
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores", type=int, default=1)
    parser.add_argument("--memory", default="1g")
    parser.add_argument("--workdir", type=Path, default=Path("spark-cluster"))
    args = parser.parse_args(argv)
    with StandaloneCluster(
        args.workdir, workers=args.workers, cores=args.cores, memory=args.memory
    ) as cluster:
        print(cluster.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
