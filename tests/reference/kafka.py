"""Apache Kafka as the reference: resolve its jars, format KRaft storage, run one node.

``ReferenceKafka`` (the node is ``chaos.apache_kafka.KafkaNode``, which the chaos harness
kills and restarts too) starts a single combined broker+controller on 127.0.0.1 (free ports) with
transactions and share groups on, waits until it answers ApiVersions and Metadata, and stops
it with SIGTERM (Kafka's controlled shutdown).  The jars come from Maven Central through the
small ``pom.xml`` beside this file, copied by ``mvn dependency:copy-dependencies`` into a
cache outside the repository (``$SHARETXN_KAFKA_CACHE`` or ``~/.cache/sharetxn``).

For people::

    python -m tests.reference.kafka fetch     # resolve the jars into the cache
    python -m tests.reference.kafka start     # prints the bootstrap servers
    python -m tests.reference.kafka status
    python -m tests.reference.kafka stop

``run_tool`` runs one of Kafka's command-line tools as its Java main class (what
``bin/kafka-topics.sh`` and friends run), against any broker.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from chaos.apache_kafka import (
    DEFAULT_SETTINGS,
    KAFKA_VERSION,
    LOG4J2,
    TOOLS,
    KafkaNode,
    KafkaNodeError,
    cache_root,
    free_port,
    jars_dir,
    java_available,
    probe,
    random_cluster_id,
    wait_ready,
)
from chaos.apache_kafka import java as _java
from producer.spark.maven import resolve_with_mvn

__all__ = [
    "DEFAULT_SETTINGS",
    "KAFKA_VERSION",
    "LOG4J2",
    "TOOLS",
    "ReferenceError",
    "ReferenceKafka",
    "cache_root",
    "classpath",
    "ensure_jars",
    "free_port",
    "jars_dir",
    "java_available",
    "probe",
    "random_cluster_id",
    "resolve_with_mvn",
    "run_tool",
    "wait_ready",
]

POM = Path(__file__).with_name("pom.xml")

ReferenceError = KafkaNodeError  # the reference Kafka could not be resolved or started


def ensure_jars(version: str = KAFKA_VERSION) -> Path:
    """The directory holding Kafka's jars, resolving them with mvn on first use."""
    return resolve_with_mvn(
        POM,
        jars_dir(version),
        f"Apache Kafka {version}",
        properties={"kafka.version": version},
        error=ReferenceError,
        timeout_s=600,
    )


def classpath(version: str = KAFKA_VERSION) -> str:
    return str(ensure_jars(version) / "*")


def run_tool(
    tool: str,
    args: Sequence[str],
    *,
    input: str | None = None,
    timeout: float = 60.0,
    version: str = KAFKA_VERSION,
    heap: str = "256m",
) -> subprocess.CompletedProcess[str]:
    """Run a Kafka command-line tool (``kafka-topics`` ...) as its Java main class."""
    main = TOOLS.get(tool, tool)
    cmd = [
        _java(),
        f"-Xmx{heap}",
        "-XX:TieredStopAtLevel=1",
        "-XX:+UseSerialGC",
        "-cp",
        classpath(version),
        main,
        *args,
    ]
    return subprocess.run(
        cmd, input=input, capture_output=True, text=True, timeout=timeout, check=False
    )


class ReferenceKafka(KafkaNode):
    """``chaos.apache_kafka.KafkaNode`` whose jars are resolved with mvn on first use."""

    def classpath(self) -> str:
        return str(self.jars / "*") if self.jars is not None else classpath(self.version)


# ---------------------------------------------------------------------------------------
# The command for people: one detached node whose state lives in a directory.


def _state_dir(given: str | None) -> Path:
    return Path(given) if given else cache_root() / "reference-run"


def _read_state(state_dir: Path) -> dict[str, object] | None:
    try:
        data = json.loads((state_dir / "reference.json").read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.reference.kafka",
        description=f"Run Apache Kafka {KAFKA_VERSION} (the reference) on 127.0.0.1.",
    )
    parser.add_argument("command", choices=["fetch", "start", "stop", "status"])
    parser.add_argument("--dir", help="state and data directory (default: in the cache)")
    parser.add_argument("--port", type=int, default=0, help="client port (default: a free one)")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="a broker setting"
    )
    args = parser.parse_args(argv)
    state_dir = _state_dir(args.dir)
    state = _read_state(state_dir)
    running = state is not None and _pid_alive(int(str(state["pid"])))

    if args.command == "fetch":
        print(ensure_jars())
        return 0
    if args.command == "status":
        if not running or state is None:
            print("stopped")
            return 3
        brokers = probe(str(state["bootstrap"]))
        print(
            f"{'running' if brokers else 'not answering'} on {state['bootstrap']}"
            f" (pid {state['pid']}, log {state_dir / 'server.log'})"
        )
        return 0 if brokers else 1
    if args.command == "stop":
        if not running or state is None:
            print("stopped")
            return 0
        pid = int(str(state["pid"]))
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while _pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
        (state_dir / "reference.json").unlink(missing_ok=True)
        print("stopped")
        return 0
    # start
    if running and state is not None:
        print(f"already running on {state['bootstrap']}")
        return 0
    settings = dict(item.split("=", 1) for item in args.set)
    node = ReferenceKafka(state_dir, port=args.port, settings=settings)
    try:
        node.start()
    except ReferenceError as exc:
        print(f"{exc}\n{node.log_tail()}", file=sys.stderr)
        return 1
    assert node.proc is not None
    (state_dir / "reference.json").write_text(
        json.dumps({"pid": node.proc.pid, "bootstrap": node.bootstrap_servers})
    )
    node.proc = None  # detached: it outlives this command
    print(f"Apache Kafka {KAFKA_VERSION} ready on {node.bootstrap_servers}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
