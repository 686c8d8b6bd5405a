"""Kafka's system-test workloads (``kafka-tools`` 4.4.0) as background processes.

``VerifiableProducer``, ``VerifiableConsumer``, ``VerifiableShareConsumer`` and
``TransactionalMessageCopier`` print one JSON object a line on stdout; Kafka's system tests
(``tests/kafkatest/services/``) read those lines while the tool runs and check what the
tool saw.  ``Workload`` does the same: it starts the tool's main class, collects its events
and waits on conditions over them; the checks the system tests make over a tool's events
are the functions below it.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chaos.apache_kafka import java
from coordinator.launcher import terminate
from tests.reference.kafka import classpath

Event = dict[str, Any]
TopicPartition = tuple[str, int]


#: The clients' group coordination logged at INFO (why a member rejoins: "Request joining
#: group due to ..."), everything else at WARN, on stderr.
_LOG4J2 = """\
status = warn
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c{1})%n
rootLogger.level = warn
rootLogger.appenderRef.err.ref = STDERR
logger.coordination.name = org.apache.kafka.clients.consumer.internals
logger.coordination.level = info
"""


def _log_config(logs: Path) -> Path:
    path = logs / "log4j2.properties"
    if not path.exists():
        path.write_text(_LOG4J2)
    return path


def rejoin_reasons(logs: Path) -> list[str]:
    """The consumers' own words for each rejoin, from their stderr in ``logs``."""
    return [
        line.strip()
        for path in sorted(logs.glob("*.stderr"))
        for line in path.read_text(errors="replace").splitlines()
        if "Request joining group due to" in line or "rejoin" in line.lower()
    ]


class Workload:
    """One of Kafka's tools (``org.apache.kafka.tools.NAME``) running in a JVM."""

    def __init__(self, name: str, args: list[str], logs: Path, label: str = "") -> None:
        self.name = name
        self.label = label or name  # names its stdout and stderr files in ``logs``
        self.args = args
        self.logs = logs
        self.events: list[Event] = []
        self._lock = threading.Lock()
        self.process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self.starts = 0

    def start(self) -> Workload:
        self.starts += 1
        stderr = (self.logs / f"{self.label}-{self.starts}.stderr").open("w")
        cmd = [
            java(),
            f"-Dlog4j2.configurationFile={_log_config(self.logs)}",
            "-Xmx192m",
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            "-cp",
            classpath(),
            f"org.apache.kafka.tools.{self.name}",
            *self.args,
        ]
        self.process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True)
        stderr.close()
        stdout = self.process.stdout
        assert stdout is not None

        copy = (self.logs / f"{self.label}-{self.starts}.stdout").open("w")

        def read() -> None:
            with copy:
                for line in stdout:
                    copy.write(line)
                    self._event(line)

        self._reader = threading.Thread(target=read, daemon=True, name=f"{self.name}-stdout")
        self._reader.start()
        return self

    def _event(self, line: str) -> None:
        if not line.startswith("{"):
            return
        try:
            event = json.loads(line)
        except ValueError:
            return
        if isinstance(event, dict):
            with self._lock:
                self.events.append({**event, "_run": self.starts})

    def of(self, name: str) -> list[Event]:
        """The events named ``name`` (``records_consumed`` ...) so far."""
        with self._lock:
            return [e for e in self.events if e.get("name") == name]

    def snapshot(self) -> list[Event]:
        with self._lock:
            return list(self.events)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stderr_tail(self, lines: int = 25) -> str:
        path = self.logs / f"{self.label}-{self.starts}.stderr"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def wait(self, what: str, condition: Callable[[], bool], timeout_s: float) -> None:
        """Wait until ``condition()``; fail naming ``what`` (and the tool's last words)."""
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                msg = f"{self.name}: no {what} within {timeout_s}s\n{self.stderr_tail()}"
                raise AssertionError(msg)
            time.sleep(0.1)

    def kill(self) -> None:
        """``kill -9`` the tool (no shutdown hook runs)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._join()

    def finish(self, timeout_s: float) -> int:
        """Wait for the tool to exit by itself; its exit status."""
        assert self.process is not None
        try:
            code = self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.stop()
            msg = f"{self.name} still running after {timeout_s}s\n{self.stderr_tail()}"
            raise AssertionError(msg) from None
        self._join()
        return code

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM (the tools' shutdown hook closes the client), SIGKILL after the timeout."""
        if self.process is None:
            return
        terminate(self.process, timeout_s)
        self._join()

    def _join(self) -> None:
        if self._reader is not None:
            self._reader.join(10)
            self._reader = None
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()


def counted(workload: Workload, name: str, count: int) -> Callable[[], bool]:
    """Whether ``workload`` has printed ``count`` events named ``name`` (for ``wait``)."""
    return lambda: len(workload.of(name)) >= count


def properties(path: Path, settings: dict[str, str]) -> str:
    """Write a client config file (``--command-config``); its path."""
    path.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    return str(path)


# ---------------------------------------------------------------------------------------
# VerifiableProducer


def acked(producer: Workload) -> dict[tuple[str, int, int], str]:
    """(topic, partition, offset) -> value of every ``producer_send_success``."""
    return {
        (e["topic"], e["partition"], e["offset"]): e["value"]
        for e in producer.of("producer_send_success")
    }


# ---------------------------------------------------------------------------------------
# VerifiableConsumer (--verbose)


def consumed_records(consumer: Workload) -> list[tuple[str, int, int, str]]:
    """(topic, partition, offset, value) of each ``record_data``, in order."""
    return [
        (e["topic"], e["partition"], e["offset"], e["value"]) for e in consumer.of("record_data")
    ]


class ConsumerVerifier:
    """What ``kafkatest.services.verifiable_consumer.ConsumerEventHandler`` checks.

    Positions follow ``records_consumed`` (each batch must start where the last one of its
    partition ended, unless a revocation came between, and never below the last commit),
    commits may not pass the position, and every rebalance (``partitions_assigned``) is
    counted.  ``global_position`` and ``committed`` outlive revocations (the service's
    ``current_position`` and ``last_commit``).
    """

    def __init__(self) -> None:
        self.position: dict[TopicPartition, int] = {}
        self.global_position: dict[TopicPartition, int] = {}
        self.committed: dict[TopicPartition, int] = {}
        self.assignment: set[TopicPartition] = set()
        self.total_consumed = 0
        self.rebalances = 0
        self.failed_commits = 0

    def replay(self, events: list[Event]) -> ConsumerVerifier:
        for event in events:
            name = event.get("name")
            if name == "partitions_assigned":
                self.rebalances += 1
                self.assignment |= {(p["topic"], p["partition"]) for p in event["partitions"]}
            elif name == "partitions_revoked":
                revoked = {(p["topic"], p["partition"]) for p in event["partitions"]}
                self.assignment -= revoked
                for tp in revoked:
                    self.position.pop(tp, None)
            elif name == "records_consumed":
                self._consumed(event)
            elif name == "offsets_committed":
                self._committed(event)
        return self

    def _consumed(self, event: Event) -> None:
        for batch in event["partitions"]:
            tp = (batch["topic"], batch["partition"])
            assert tp in self.assignment, f"consumed {tp} while not assigned: {event}"
            if tp in self.position:
                assert self.position[tp] == batch["minOffset"], (
                    f"consumed from an unexpected offset {batch['minOffset']} of {tp} "
                    f"(position {self.position[tp]})"
                )
            assert batch["minOffset"] >= self.committed.get(tp, 0), (
                f"consumed {tp} from {batch['minOffset']}, behind its last commit "
                f"{self.committed[tp]}"
            )
            self.position[tp] = self.global_position[tp] = batch["maxOffset"] + 1
        self.total_consumed += event["count"]

    def _committed(self, event: Event) -> None:
        if not event["success"]:
            self.failed_commits += 1
            return
        for commit in event["offsets"]:
            if commit.get("error"):
                continue
            tp = (commit["topic"], commit["partition"])
            assert tp in self.position, f"committed {tp} with no position: {event}"
            assert commit["offset"] <= self.position[tp], (
                f"committed offset {commit['offset']} of {tp} passed the position "
                f"{self.position[tp]}"
            )
            self.committed[tp] = commit["offset"]


# ---------------------------------------------------------------------------------------
# VerifiableShareConsumer


def share_offsets(consumer: Workload, name: str, *, success: bool | None = None) -> set[Any]:
    """(topic, partition, offset) in ``records_consumed`` or ``offsets_acknowledged`` events
    (only those whose ``success`` is ``success``, when given)."""
    seen: set[tuple[str, int, int]] = set()
    for event in consumer.of(name):
        if success is not None and event.get("success") is not success:
            continue
        for part in event["partitions"]:
            seen.update((part["topic"], part["partition"], o) for o in part["offsets"])
    return seen


def share_count(consumer: Workload, name: str, *, success: bool | None = None) -> int:
    return sum(
        e["count"] for e in consumer.of(name) if success is None or e.get("success") is success
    )


# ---------------------------------------------------------------------------------------
# TransactionalMessageCopier


def copier_progress(copier: Workload) -> Event | None:
    """The last progress line (``consumed``, ``remaining``, ``stage``) of the copier's
    current run (Kafka's service forgets the progress of a run it restarts)."""
    lines = [e for e in copier.snapshot() if "remaining" in e and e["_run"] == copier.starts]
    return lines[-1] if lines else None


def copier_percent(copier: Workload) -> float:
    """``TransactionalMessageCopier.progress_percent`` of Kafka's service."""
    last = copier_progress(copier)
    if last is None:
        return 0.0
    total = last["consumed"] + last["remaining"]
    return 100.0 * last["consumed"] / total if total else 100.0


def copied(copier: Workload, percent: float) -> Callable[[], bool]:
    """Whether the copier's current run has copied ``percent`` of its input (for ``wait``)."""
    return lambda: copier_percent(copier) >= percent


def copier_done(copier: Workload) -> bool:
    """Kafka's ``is_done``: the copier shut down with nothing left to copy."""
    last = copier_progress(copier)
    return last is not None and last["stage"] == "ShutdownComplete" and last["remaining"] == 0
