"""``sharetxn chaos real --workload recovery``: the Spark sink's recovery path under kill -9.

A Spark-free micro-batch driver (``chaos.eos_driver``) does what a Spark query with the
``ExactlyOnce`` sink does -- offsets in its own checkpoint, one prepared transaction per
writer and batch, ``intents/N``, ``commits/N``, the commit phase and the start-up recovery,
all through ``producer.spark.resolve`` and ``producer.twophase.spark_checkpoint`` -- against Apache
Kafka (``--target kafka``, a node of ``chaos.apache_kafka``) or a ``sharetxn broker``.
One run:

1. **Setup.** The broker on a fresh data directory (Kafka with KIP-939's
   ``transaction.two.phase.commit.enable`` on, or with stock settings: prepared transactions
   are then plain ones bounded by ``transaction.timeout.ms``); an input and an output topic;
   a stock idempotent producer writes ``--records`` values ``i0, i1, ...`` over the first
   70 % of the fault period, so batches keep coming while the faults run.
2. **Faults** from the seeded schedule, one every 1-3 s: kill -9 of the driver at a kill
   point (``prepared``, ``intent``, ``decided``, ``committing``: the driver stops itself
   there and is killed) or at a random moment, and a new driver on the same checkpoint;
   kill -9 of the broker and a restart on the same data directory and ports; SIGSTOP of
   the driver (1-6 s) or of the broker (1-4 s).  A driver that exits on its own is restarted and
   counted; one that exits with the typed failure (a decided transaction aborted by the
   coordinator) is not.
3. **Drain.** Faults stop; the driver runs until the input is written, every batch up to
   the input's end is decided and resolved; then ``stop`` and it must exit 0.
4. **Verify.** A stock ``confluent_kafka`` ``read_committed`` consumer reads the output
   (``chaos.real_verify``); ListTransactions / DescribeTransactions show what is open.
   R1 every input value at most once in the output, R2 every input value in it, R3 the
   checkpoint's committed offsets at the input's end, R4 no open transaction of the query
   and every output LSO at its high watermark, T1 no typed failure.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from chaos.eos_driver import EXIT_TYPED_FAILURE, POINTS, DriverSettings, parse_offsets
from chaos.real_run import RunOptions, RunResult, keep_or_remove, require_positive
from chaos.real_verify import IDLE_STATES, FinalState, direct_checks, read_topic, trickle_input
from producer.admin import Admin, TopicSpec
from producer.spark.checkpoint import Checkpoint
from producer.twophase.spark_checkpoint import query_prefix, read_checkpoint
from txn.ids import TopicPartition

log = logging.getLogger("sharetxn.chaos.real_recovery")

INPUT = "chaos-eos-input"
OUTPUT = "chaos-eos-output"
PREFIX = "chaos-eos"
TARGETS = ("kafka", "sharetxn")
FAULT_KINDS = ("driver-kill-at", "driver-kill", "broker-kill", "driver-pause", "broker-pause")
_FAULT_WEIGHTS = (0.4, 0.2, 0.15, 0.15, 0.1)
TRAP_WAIT_S = 8.0  # a kill point not reached in this time is given up (broker down, idle)

#: Apache Kafka 4.4 with KIP-939 (InitProducerId v6 is still an unstable API version there).
KAFKA_2PC = {
    "transaction.two.phase.commit.enable": "true",
    "unstable.api.versions.enable": "true",
}
KAFKA_BASE = {
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
    "num.partitions": "3",
}
SHARETXN_CONFIG = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"}


@dataclass(frozen=True)
class RecoveryChaosOptions(RunOptions):
    target: str = "kafka"
    kafka_2pc: bool = True
    prepare_mode: str = "auto"
    duration_s: float = 40.0
    records: int = 600
    writers: int = 3
    max_per_partition: int = 30
    transaction_timeout_ms: int = 60000
    drain_timeout_s: float = 90.0
    kafka_jars: Path | None = None

    def replay(self) -> str:
        flags = [
            f"sharetxn chaos real --workload recovery --target {self.target}",
            f"--seed {self.seed} --duration {self.duration_s:g} --records {self.records}",
        ]
        if self.prepare_mode != "auto":
            flags.append(f"--prepare-mode {self.prepare_mode}")
        if self.target == "kafka" and not self.kafka_2pc:
            flags.append("--kafka-2pc off")
        if self.transaction_timeout_ms != 60000:
            flags.append(f"--transaction-timeout-ms {self.transaction_timeout_ms}")
        return " ".join(flags)


@dataclass
class RecoveryChaosResult(RunResult[RecoveryChaosOptions]):
    kill_points: Counter[str] = field(default_factory=Counter)
    driver_starts: int = 0
    driver_crashes: int = 0
    batches: int = 0
    recovered: Counter[str] = field(default_factory=Counter)  # start-up recoveries' work
    drained: bool = False
    typed_failure: dict[str, Any] | None = None
    violations: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.violations

    def as_dict(self) -> dict[str, Any]:
        o = self.options
        return {
            "workload": "recovery",
            "target": o.target,
            "kafka_2pc": o.kafka_2pc if o.target == "kafka" else None,
            "prepare_mode": o.prepare_mode,
            "seed": o.seed,
            "duration_s": o.duration_s,
            "records": o.records,
            "faults": dict(sorted(self.faults.items())),
            "kill_points": dict(sorted(self.kill_points.items())),
            "driver_starts": self.driver_starts,
            "driver_crashes": self.driver_crashes,
            "batches": self.batches,
            "recovered": dict(sorted(self.recovered.items())),
            "outputs": self.outputs,
            "duplicates": self.duplicates,
            "lost": self.lost,
            "drained": self.drained,
            "typed_failure": self.typed_failure,
            "violations": self.violations,
            "seconds": {k: round(v, 1) for k, v in self.seconds.items()},
            "ok": self.ok,
            "replay": o.replay(),
            "run_dir": str(self.run_dir),
        }


class Broker(Protocol):
    @property
    def bootstrap_servers(self) -> str: ...
    def start(self) -> object: ...
    def kill(self) -> None: ...
    def signal(self, sig: signal.Signals) -> None: ...
    def stop(self) -> None: ...


class _Sharetxn:
    """``LocalBroker`` with the node interface."""

    def __init__(self, data_dir: Path) -> None:
        from coordinator.launcher import LocalBroker  # noqa: PLC0415

        self.broker = LocalBroker(data_dir=data_dir, config=SHARETXN_CONFIG)

    @property
    def bootstrap_servers(self) -> str:
        return self.broker.bootstrap_servers

    def start(self) -> object:
        return self.broker.start()

    def kill(self) -> None:
        self.broker.kill()

    def signal(self, sig: signal.Signals) -> None:
        process = self.broker.process
        if process is not None and process.poll() is None:
            process.send_signal(sig)

    def stop(self) -> None:
        self.signal(signal.SIGCONT)
        self.broker.stop()
        (self.broker.data_dir.parent / "broker.log").write_text("\n".join(self.broker.output))


def make_broker(options: RecoveryChaosOptions, run_dir: Path) -> Broker:
    if options.target == "sharetxn":
        return _Sharetxn(run_dir / "broker-data")
    from chaos.apache_kafka import KafkaNode  # noqa: PLC0415

    settings = {**KAFKA_BASE, **(KAFKA_2PC if options.kafka_2pc else {})}
    return KafkaNode(run_dir / "kafka", settings=settings, jars=options.kafka_jars)


class RecoveryChaosRun:
    def __init__(self, options: RecoveryChaosOptions) -> None:
        if options.target not in TARGETS:
            msg = f"--target must be one of {', '.join(TARGETS)}"
            raise ValueError(msg)
        self.o = options
        self.rng = random.Random(options.seed)
        self.dir = options.run_dir or Path(tempfile.mkdtemp(prefix="sharetxn-chaos-eos-"))
        if self.dir.exists() and any(self.dir.iterdir()):
            msg = f"run directory {self.dir} is not empty"
            raise ValueError(msg)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.checkpoint = self.dir / "checkpoint"
        self.result = RecoveryChaosResult(options, self.dir)
        self.broker = make_broker(options, self.dir)
        self.driver: subprocess.Popen[bytes] | None = None
        self._driver_log: IO[bytes] | None = None
        self.incarnation = 0
        self.driver_paused_until = 0.0
        self.broker_paused_until = 0.0
        self.trap_deadline = 0.0
        self.restart_at = 0.0
        self.failed = False  # the driver exited with the typed failure: not restarted
        self.feed_error = ""
        self.broker_thread: threading.Thread | None = None
        self.broker_error = ""
        self.events: list[str] = []

    def note(self, text: str) -> None:
        self.events.append(f"{time.monotonic():.1f} {text}")
        log.info("%s", text)

    # -- the driver -------------------------------------------------------------------------

    def start_driver(self) -> None:
        self.incarnation += 1
        settings = DriverSettings(
            bootstrap=self.broker.bootstrap_servers,
            checkpoint=str(self.checkpoint),
            run_dir=str(self.dir),
            input_topic=INPUT,
            output_topic=OUTPUT,
            prefix=PREFIX,
            writers=self.o.writers,
            max_per_partition=self.o.max_per_partition,
            prepare_mode=self.o.prepare_mode,
            transaction_timeout_ms=self.o.transaction_timeout_ms,
            incarnation=self.incarnation,
        )
        if self._driver_log is not None:
            self._driver_log.close()
        self._driver_log = (self.dir / f"driver.{self.incarnation}.log").open("wb")
        self.driver = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "chaos.eos_driver", settings.to_argv()],
            stdout=self._driver_log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.result.driver_starts += 1
        self.driver_paused_until = 0.0
        self.restart_at = 0.0

    def kill_driver(self, why: str) -> None:
        if self.driver is not None:
            if self.driver.poll() is None:
                self.driver.kill()
            self.driver.wait()
        self.driver = None
        for name in ("trap", "trapped"):
            (self.dir / name).unlink(missing_ok=True)
        self.trap_deadline = 0.0
        self.restart_at = time.monotonic() + self.rng.uniform(0.1, 1.0)
        self.note(f"driver killed -9 ({why})")

    def _driver_signal(self, sig: signal.Signals) -> None:
        if self.driver is not None and self.driver.poll() is None:
            self.driver.send_signal(sig)

    def supervise(self) -> None:
        now = time.monotonic()
        if self.broker_paused_until and now >= self.broker_paused_until:
            self.broker.signal(signal.SIGCONT)
            self.broker_paused_until = 0.0
        if self.driver_paused_until and now >= self.driver_paused_until:
            self._driver_signal(signal.SIGCONT)
            self.driver_paused_until = 0.0
        trapped = self.dir / "trapped"
        if trapped.exists():
            point = trapped.read_text().split(" ", 1)[0] or "?"
            self.result.kill_points[point] += 1
            self.kill_driver(f"at {point}")
        elif self.trap_deadline and now >= self.trap_deadline:
            (self.dir / "trap").unlink(missing_ok=True)
            self.trap_deadline = 0.0
        if self.driver is not None and self.driver.poll() is not None:
            code = self.driver.returncode
            self.driver = None
            if code == EXIT_TYPED_FAILURE:
                self.failed = True
                self.note("driver exited with the typed failure")
                return
            if code != 0 or not (self.dir / "stop").exists():
                self.result.driver_crashes += 1
                self.note(f"driver exited {code}: restarting")
                self.restart_at = now + 0.2
        if self.driver is None and not self.failed and self.restart_at and now >= self.restart_at:
            self.start_driver()

    # -- faults -----------------------------------------------------------------------------

    def inject(self) -> None:
        kind = self.rng.choices(FAULT_KINDS, _FAULT_WEIGHTS)[0]
        driver_up = self.driver is not None and not self.driver_paused_until
        if kind.startswith("driver") and (not driver_up or self.trap_deadline):
            return
        if kind.startswith("broker") and (self.broker_paused_until or self.broker_busy()):
            return
        if kind == "driver-kill-at" and (self.broker_paused_until or self.broker_busy()):
            kind = "driver-kill"  # the driver waits for the broker: no kill point is reached
        self.result.faults[kind] += 1
        if kind == "driver-kill-at":
            point = self.rng.choice(POINTS)
            (self.dir / "trap").write_text(point)
            self.trap_deadline = time.monotonic() + TRAP_WAIT_S
            self.note(f"trap set at {point}")
        elif kind == "driver-kill":
            self.kill_driver("at a random moment")
        elif kind == "driver-pause":
            self._driver_signal(signal.SIGSTOP)
            self.driver_paused_until = time.monotonic() + self.rng.uniform(1, 6)
            self.note("driver paused")
        elif kind == "broker-kill":
            down_s = self.rng.uniform(0.2, 1.5)
            self.broker.kill()
            self.note("broker killed -9")
            self.broker_thread = threading.Thread(
                target=self._restart_broker, args=(down_s,), name="chaos-eos-broker", daemon=True
            )
            self.broker_thread.start()
        else:
            self.broker.signal(signal.SIGSTOP)
            self.broker_paused_until = time.monotonic() + self.rng.uniform(1, 4)
            self.note("broker paused")

    def _restart_broker(self, down_s: float) -> None:
        """After ``down_s``, start the broker on the same data directory and ports (a thread:
        Apache Kafka takes 10-20 s to recover its logs, the driver's faults go on meanwhile)."""
        time.sleep(down_s)
        try:
            self.broker.start()
        except Exception as exc:
            self.broker_error = f"the broker did not restart: {exc}"
        self.note("broker restarted")

    def broker_busy(self) -> bool:
        return self.broker_thread is not None and self.broker_thread.is_alive()

    # -- phases -----------------------------------------------------------------------------

    def setup(self) -> None:
        self.broker.start()
        with Admin(self.broker.bootstrap_servers) as admin:
            parts = self.o.partitions
            admin.create_topics([TopicSpec(INPUT, parts, 1), TopicSpec(OUTPUT, parts, 1)])
        self.start_driver()

    def feed(self) -> None:
        """Write the input over the first 70 % of the fault period (a thread)."""
        error = trickle_input(
            self.broker.bootstrap_servers,
            INPUT,
            self.o.records,
            self.o.duration_s * 0.7,
            partitions=self.o.partitions,
        )
        self.feed_error = error or ""

    def fault_phase(self) -> None:
        end = time.monotonic() + self.o.duration_s
        next_fault = time.monotonic() + self.rng.uniform(1.0, 3.0)
        while time.monotonic() < end and not self.failed:
            self.supervise()
            if time.monotonic() >= next_fault:
                self.inject()
                next_fault = time.monotonic() + self.rng.uniform(1.0, 3.0)
            time.sleep(0.05)

    def committed_ends(self) -> tuple[int, dict[int, int], bool]:
        """(last committed batch, its end offsets, whether it is resolved)."""
        ckpt = Checkpoint.local(self.checkpoint)
        commits = ckpt.fs.list(ckpt.path("commits"))
        batches = sorted(int(n) for n in commits if n.isdigit())
        if not batches:
            return -1, {}, True
        last = batches[-1]
        data = ckpt.fs.read(ckpt.path("offsets", str(last)))
        ends = parse_offsets(data) if data is not None else {}
        resolved = ckpt.fs.exists(ckpt.path("resolved", str(last)))
        return last, ends, resolved

    def drain(self, feeder: threading.Thread) -> None:
        (self.dir / "trap").unlink(missing_ok=True)
        self.trap_deadline = 0.0
        if self.broker_paused_until:
            self.broker.signal(signal.SIGCONT)
            self.broker_paused_until = 0.0
        if self.driver_paused_until:
            self._driver_signal(signal.SIGCONT)
            self.driver_paused_until = 0.0
        deadline = time.monotonic() + self.o.drain_timeout_s
        if self.broker_thread is not None:
            self.broker_thread.join(max(0.0, deadline - time.monotonic()))
        if self.broker_error or self.broker_busy():
            self.result.violations.append(self.broker_error or "the broker did not restart")
            return
        feeder.join(max(0.0, deadline - time.monotonic()))
        if feeder.is_alive() or self.feed_error:
            self.result.violations.append(
                f"setup: {self.feed_error or 'the input was not written in time'}"
            )
            return
        with Admin(self.broker.bootstrap_servers) as admin:
            ends = {
                p: admin.list_offsets(TopicPartition(INPUT, p), -1)
                for p in range(self.o.partitions)
            }
        while time.monotonic() < deadline and not self.failed:
            self.supervise()
            _last, done, resolved = self.committed_ends()
            if resolved and all(done.get(p, 0) >= end for p, end in ends.items()):
                self.result.drained = True
                break
            time.sleep(0.3)
        (self.dir / "stop").write_text("")
        if self.driver is not None:
            try:
                code = self.driver.wait(max(5.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                code = -1
            if code == EXIT_TYPED_FAILURE:
                self.failed = True
            elif code != 0:
                self.result.violations.append(f"the driver exited {code} when stopped")
            self.driver = None

    def verify(self) -> None:
        r = self.result
        recoveries = self.dir / "recovery.jsonl"
        if recoveries.exists():
            for line in recoveries.read_text().splitlines():
                with contextlib.suppress(ValueError):
                    report = json.loads(line)
                    for key in ("committed", "aborted", "noop"):
                        r.recovered[key] += int(report.get(key, 0))
        failure = self.dir / "failure.json"
        if failure.exists():
            r.typed_failure = json.loads(failure.read_text())
            txns = r.typed_failure.get("transactions", [])
            r.violations.append(
                "T1 typed failure: a decided batch's prepared transaction was aborted by the "
                f"coordinator before it was committed: {json.dumps(txns)}"
            )
        if not r.drained:
            r.violations.append("drain: the driver did not reach the input's end in time")
        bs = self.broker.bootstrap_servers
        state = FinalState()
        with Admin(bs) as admin:
            in_ends = {
                p: admin.list_offsets(TopicPartition(INPUT, p), -1)
                for p in range(self.o.partitions)
            }
            for p in range(self.o.partitions):
                tp = TopicPartition(OUTPUT, p)
                state.lso[p] = (
                    admin.list_offsets(tp, -1, read_committed=True),
                    admin.list_offsets(tp, -1),
                )
            view = read_checkpoint(self.checkpoint)
            own = query_prefix(PREFIX, view.query_id or "")
            tids = sorted(
                t.transactional_id
                for t in admin.list_transactions()
                if t.transactional_id.startswith(own)
            )
            for d in admin.describe_transactions(tids):
                state.txns[d.transactional_id] = d.state
        state.inputs = read_topic(bs, INPUT, in_ends, "read_uncommitted")
        state.outputs = read_topic(
            bs, OUTPUT, {p: lso for p, (lso, _hw) in state.lso.items()}, "read_committed"
        )
        values = Counter(v for rs in state.inputs.values() for _o, v in rs)
        expected = {f"i{i}" for i in range(self.o.records)}
        if set(values) != expected or any(c > 1 for c in values.values()):
            r.violations.append("setup: the input does not hold each value once")
        direct = direct_checks(state, expected, {}, 1 << 30)  # no delivery counts here
        r.outputs, r.duplicates, r.lost = direct.outputs, direct.duplicates, direct.lost
        r.violations += [f"{v.invariant}: {v.message}" for v in direct.violations]
        r.batches, done, _resolved = self.committed_ends()
        r.batches += 1
        behind = {p: (done.get(p, 0), e) for p, e in in_ends.items() if done.get(p, 0) < e}
        if behind:
            r.violations.append(f"R3: committed offsets below the input's end: {behind}")
        held = {p: v for p, v in state.lso.items() if v[0] < v[1]}
        if held:
            r.violations.append(f"R4: output LSO below the high watermark (open data): {held}")
        open_ = {t: s for t, s in state.txns.items() if s not in IDLE_STATES}
        if open_ and not any(v.startswith("R4") for v in r.violations):
            r.violations.append(f"R4: open transactions {open_}")

    def run(self) -> RecoveryChaosResult:
        r = self.result
        started = time.monotonic()
        try:
            self.setup()
            r.seconds["setup"] = time.monotonic() - started
            feeder = threading.Thread(target=self.feed, name="chaos-eos-feed", daemon=True)
            feeder.start()
            mark = time.monotonic()
            self.fault_phase()
            r.seconds["faults"] = time.monotonic() - mark
            mark = time.monotonic()
            self.drain(feeder)
            r.seconds["drain"] = time.monotonic() - mark
            mark = time.monotonic()
            try:
                self.verify()
            except Exception as exc:  # the final state could not be read: not a pass
                r.violations.append(f"verify: the final state could not be read: {exc!r}")
            r.seconds["verify"] = time.monotonic() - mark
        finally:
            self.close()
            r.seconds["total"] = time.monotonic() - started
        return r

    def close(self) -> None:
        """Kill the driver, stop the broker, write the harness's event log."""
        if self.broker_thread is not None:
            self.broker_thread.join(120)
        if self.driver is not None:
            self._driver_signal(signal.SIGCONT)
            self.driver.kill()
            self.driver.wait()
            self.driver = None
        if self._driver_log is not None:
            self._driver_log.close()
            self._driver_log = None
        self.broker.stop()
        (self.dir / "events.log").write_text("\n".join(self.events) + "\n")


def main(options: RecoveryChaosOptions, *, as_json: bool) -> int:
    require_positive(
        {
            "--duration": options.duration_s,
            "--records": options.records,
            "--drain-timeout": options.drain_timeout_s,
            "--transaction-timeout-ms": options.transaction_timeout_ms,
        }
    )
    if not as_json:
        print(f"chaos real --workload recovery: seed {options.seed}; replay: {options.replay()}")
    result = RecoveryChaosRun(options).run()
    kept = keep_or_remove(
        result.run_dir, keep=options.keep or options.run_dir is not None, ok=result.ok
    )
    if as_json:
        print(json.dumps(result.as_dict(), indent=2))
        return 0 if result.ok else 1
    faults = ", ".join(f"{k} {v}" for k, v in sorted(result.faults.items())) or "none"
    points = ", ".join(f"{k} {v}" for k, v in sorted(result.kill_points.items())) or "none"
    print(f"faults: {faults}; driver killed at: {points}")
    print(
        f"driver processes: {result.driver_starts} ({result.driver_crashes} exited on their "
        f"own); batches: {result.batches}"
    )
    rec = result.recovered
    print(
        f"start-up recoveries: {rec['committed']} decided transaction(s) committed, "
        f"{rec['aborted']} undecided or orphaned aborted, {rec['noop']} found done"
    )
    print(
        f"output: {result.outputs} records, {result.duplicates} duplicates, {result.lost} lost;"
        f" drained: {result.drained}"
    )
    for v in result.violations:
        print(f"VIOLATION {v}")
    print(
        ("ok" if result.ok else f"VIOLATED (seed {options.seed}); replay: {options.replay()}")
        + (f"; run directory: {result.run_dir}" if kept else "")
    )
    return 0 if result.ok else 1
