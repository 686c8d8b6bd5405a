"""Apache Kafka as the reference: resolve its jars, format KRaft storage, run one node.

``ReferenceKafka`` starts a single combined broker+controller on 127.0.0.1 (free ports) with
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
import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

KAFKA_VERSION = "4.4.0"
POM = Path(__file__).with_name("pom.xml")

#: The Java main classes of Kafka's scripts in bin/ (4.x).
TOOLS: dict[str, str] = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-console-share-consumer": "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-server-start": "kafka.Kafka",
}

#: Broker settings for a small single node.  Internal topics have one replica and a few
#: partitions (fast to create); everything else is Kafka's default, so behaviour is Kafka's.
DEFAULT_SETTINGS: dict[str, str] = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "3",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "share.coordinator.state.topic.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
    "num.partitions": "1",
}

LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.kafka.name = org.apache.kafka
logger.kafka.level = INFO
"""


class ReferenceError(RuntimeError):
    """The reference Kafka could not be resolved, formatted or started."""


def java_available() -> bool:
    return shutil.which("java") is not None


def cache_root() -> Path:
    env = os.environ.get("SHARETXN_KAFKA_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "sharetxn"


def jars_dir(version: str = KAFKA_VERSION) -> Path:
    return cache_root() / f"kafka-{version}"


def resolve_with_mvn(
    pom: Path,
    target: Path,
    what: str,
    *,
    properties: dict[str, str] | None = None,
    extra: tuple[str, ...] = (),
    error: type[Exception] = RuntimeError,
    timeout_s: int = 900,
) -> Path:
    """``target``, holding ``pom``'s dependencies copied by mvn on first use (the cache of
    Java artifacts the tests and benchmarks share; another process may resolve at once)."""
    if (target / ".complete").exists():
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise error(f"mvn is needed once to resolve {what} into {target}")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        cmd = [mvn, "-q", "-B", "-f", str(pom)]
        cmd += [f"-D{k}={v}" for k, v in (properties or {}).items()]
        cmd += ["dependency:copy-dependencies", *extra, f"-DoutputDirectory={staging}"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
        if done.returncode != 0:
            raise error(f"mvn could not resolve {what}:\n{done.stdout}{done.stderr}")
        (staging / ".complete").write_text(what + "\n")
        with contextlib.suppress(OSError):
            staging.rename(target)  # another process may have won the race: keep theirs
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


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


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        msg = "java is not installed (Apache Kafka needs a Java 17 runtime)"
        raise ReferenceError(msg)
    return java


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def random_cluster_id() -> str:
    # As Kafka's Uuid.randomUuid: never one starting with "-" (command lines would read it
    # as an option).
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class ReferenceKafka:
    """One Apache Kafka node (KRaft, combined broker+controller) in a child process."""

    def __init__(
        self,
        data_dir: Path | None = None,
        *,
        port: int = 0,
        settings: Mapping[str, str] | None = None,
        heap: str = "512m",
        version: str = KAFKA_VERSION,
        ready_timeout_s: float = 90.0,
    ) -> None:
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if data_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="reference-kafka-")
            data_dir = Path(self._tmp.name)
        self.dir = Path(data_dir)
        self.port = port or free_port()
        self.controller_port = free_port()
        self.settings = {**DEFAULT_SETTINGS, **(settings or {})}
        self.heap = heap
        self.version = version
        self.ready_timeout_s = ready_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.dir / "server.log"

    def properties(self) -> dict[str, str]:
        return {
            **self.settings,
            "listeners": (
                f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}"
            ),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.quorum.voters": f"{self.settings['node.id']}@127.0.0.1:"
            f"{self.controller_port}",
            "log.dirs": str(self.dir / "logs"),
        }

    def _write_configs(self) -> tuple[Path, Path]:
        self.dir.mkdir(parents=True, exist_ok=True)
        props = self.dir / "server.properties"
        props.write_text("".join(f"{k}={v}\n" for k, v in sorted(self.properties().items())))
        log4j = self.dir / "log4j2.properties"
        log4j.write_text(LOG4J2.format(log=self.log_file))
        return props, log4j

    def _jvm(self, log4j: Path) -> list[str]:
        return [
            _java(),
            f"-Xmx{self.heap}",
            "-Xms128m",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j}",
            "-cp",
            classpath(self.version),
        ]

    def format(self) -> None:
        """Format the KRaft metadata log (``kafka-storage format``) unless already done."""
        props, log4j = self._write_configs()
        if (self.dir / "logs" / "meta.properties").exists():
            return
        cmd = [
            *self._jvm(log4j),
            TOOLS["kafka-storage"],
            "format",
            "-t",
            random_cluster_id(),
            "-c",
            str(props),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            msg = f"kafka-storage format failed:\n{done.stdout}{done.stderr}"
            raise ReferenceError(msg)

    def start(self) -> ReferenceKafka:
        self.format()
        props, log4j = self._write_configs()
        out = (self.dir / "stdout.log").open("ab")
        try:
            self.proc = subprocess.Popen(
                [*self._jvm(log4j), TOOLS["kafka-server-start"], str(props)],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            out.close()
        try:
            wait_ready(self.bootstrap_servers, self.ready_timeout_s, alive=self.alive)
        except BaseException:
            self.stop()
            raise
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM (a controlled shutdown), SIGKILL if it does not end in time."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> ReferenceKafka:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_file.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def probe(bootstrap: str, timeout_s: float = 2.0) -> int:
    """How many brokers Metadata lists (0 if ApiVersions or Metadata is not answered)."""
    from producer.connection import BrokerConnection  # noqa: PLC0415 - only when probing

    host, _, port = bootstrap.rpartition(":")
    conn = BrokerConnection(host, int(port), client_id="reference-probe", timeout_s=timeout_s)
    try:
        conn.connect()
        version = conn.pick_version(3, 12, 1)
        resp = conn.request(3, version, {"topics": [], "allow_auto_topic_creation": False})
        return len(resp.brokers)
    except Exception:  # not ready yet, whatever the reason
        return 0
    finally:
        conn.close()


def wait_ready(bootstrap: str, timeout_s: float, *, alive: object = None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if callable(alive) and not alive():
            msg = f"Apache Kafka on {bootstrap} exited during start-up"
            raise ReferenceError(msg)
        if probe(bootstrap) > 0:
            return
        time.sleep(0.25)
    msg = f"Apache Kafka on {bootstrap} did not answer Metadata within {timeout_s:.0f}s"
    raise ReferenceError(msg)


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
