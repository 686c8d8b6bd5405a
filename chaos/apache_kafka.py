"""One Apache Kafka node in a child process: format, start, stop, kill -9, pause, restart.

``KafkaNode`` runs a single combined broker+controller (KRaft) on 127.0.0.1 with free ports,
from the jars of an Apache Kafka release: a distribution's ``libs/`` directory, or the cache
the reference harness fills (``$SHARETXN_KAFKA_CACHE`` or ``~/.cache/sharetxn``, then
``kafka-<version>``; from a source checkout ``python -m tests.reference.kafka fetch``
resolves it with mvn).  ``start`` formats the storage once, so a node that was killed
(``kill``: SIGKILL, nothing of Kafka's shutdown runs) starts again on the same data
directory and ports and recovers its logs as after a crash.  The chaos harness's
``--target kafka`` runs its broker faults through this class; ``tests/reference/kafka.py``
builds the reference harness on it.
"""

from __future__ import annotations

import base64
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Self

from producer.spark.maven import cache_root
from txn.api_keys import ApiKey

KAFKA_VERSION = "4.4.0"

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


class KafkaNodeError(RuntimeError):
    """The Apache Kafka node could not be found, formatted or started."""


def java_available() -> bool:
    return shutil.which("java") is not None


def jars_dir(version: str = KAFKA_VERSION) -> Path:
    return cache_root() / f"kafka-{version}"


def java() -> str:
    found = shutil.which("java")
    if found is None:
        msg = "java is not installed (Apache Kafka needs a Java 17 runtime)"
        raise KafkaNodeError(msg)
    return found


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


class KafkaNode:
    """One Apache Kafka node (KRaft, combined broker+controller) in a child process.

    ``jars``: a directory of Kafka's jars (a distribution's ``libs/``); by default the
    cache of ``version`` (``jars_dir``), which must hold a complete copy.
    """

    def __init__(
        self,
        data_dir: Path | None = None,
        *,
        port: int = 0,
        settings: Mapping[str, str] | None = None,
        heap: str = "512m",
        version: str = KAFKA_VERSION,
        ready_timeout_s: float = 90.0,
        jars: Path | None = None,
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
        self.jars = jars
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.dir / "server.log"

    def classpath(self) -> str:
        """Kafka's jars as a Java class path (``dir/*``)."""
        jars = self.jars or jars_dir(self.version)
        if self.jars is None and not (jars / ".complete").exists():
            msg = (
                f"no Apache Kafka {self.version} jars in {jars}: resolve them once with "
                "`python -m tests.reference.kafka fetch` (source checkout), or pass the "
                "libs/ directory of a Kafka distribution"
            )
            raise KafkaNodeError(msg)
        if not any(jars.glob("kafka_*.jar")) and not any(jars.glob("kafka-server*.jar")):
            msg = f"{jars} holds no Apache Kafka jars"
            raise KafkaNodeError(msg)
        return str(jars / "*")

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
            java(),
            f"-Xmx{self.heap}",
            "-Xms128m",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j}",
            "-cp",
            self.classpath(),
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
        done = subprocess.run(  # noqa: S603 - java and Kafka's storage tool
            cmd, capture_output=True, text=True, timeout=120, check=False
        )
        if done.returncode != 0:
            msg = f"kafka-storage format failed:\n{done.stdout}{done.stderr}"
            raise KafkaNodeError(msg)

    def start(self) -> Self:
        """Start (or restart, on the same data directory and ports) and wait until ready."""
        self.format()
        props, log4j = self._write_configs()
        out = (self.dir / "stdout.log").open("ab")
        try:
            self.proc = subprocess.Popen(  # noqa: S603 - java and Kafka's main class
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

    def kill(self) -> None:
        """SIGKILL: a crash (no controlled shutdown, unflushed pages stay in the OS)."""
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
            proc.wait()

    def signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` (SIGSTOP, SIGCONT) to the running JVM."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM (a controlled shutdown), SIGKILL if it does not end in time."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGCONT)  # a paused JVM cannot shut down
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_file.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def probe(bootstrap: str, timeout_s: float = 2.0) -> int:
    """How many brokers Metadata lists (0 if ApiVersions or Metadata is not answered)."""
    from producer.protocol.connection import BrokerConnection  # noqa: PLC0415 - only when probing

    host, _, port = bootstrap.rpartition(":")
    conn = BrokerConnection(host, int(port), client_id="reference-probe", timeout_s=timeout_s)
    try:
        conn.connect()
        version = conn.pick_version(ApiKey.METADATA, 12, 1)
        resp = conn.request(
            ApiKey.METADATA, version, {"topics": [], "allow_auto_topic_creation": False}
        )
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
            raise KafkaNodeError(msg)
        if probe(bootstrap) > 0:
            return
        time.sleep(0.25)
    msg = f"Apache Kafka on {bootstrap} did not answer Metadata within {timeout_s:.0f}s"
    raise KafkaNodeError(msg)
