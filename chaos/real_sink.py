"""``sharetxn chaos real --workload sink``: KIP-1302 sink workers under kill -9 and SIGSTOP.

The real-process mode with ``sharetxn sink run`` processes as the clients: each worker runs
``producer.sink.KafkaTopicSink`` with ``share.delivery.semantics=exactly-once``, copying the
input topic to the output topic, one KIP-1289 transaction per polled batch.  One run:

1. **Setup.** A ``sharetxn broker`` process on a fresh data directory, an input topic, an
   output topic, a share group with short lock and session timeouts.  A stock idempotent
   producer writes ``--records`` unique values in small batches over the first 80 % of the
   fault period, so the faults land on work in flight.
2. **Faults** for ``--duration`` seconds, one every 0.5-2.5 s from the seeded schedule:
   kill -9 of a worker and a fresh process in its slot (same ``transactional.id.prefix``, so
   the newcomer's ``init_transactions`` aborts the dead one's transaction); SIGSTOP of a
   worker for 1-7 s (past its record locks and transaction timeout) and SIGCONT; kill -9 of
   the broker and a restart on the same data directory and port; SIGSTOP of the broker for
   1-5 s.  A worker that exits on its own (a task failure) is restarted, as a supervisor
   would, and counted.
3. **Drain.** Faults stop, paused processes resume, and the workers run until the input is
   acknowledged and nothing is in flight, or the drain times out; then SIGTERM (each worker
   must exit 0).
4. **Verify** with ``chaos.real_verify``: a stock ``read_committed`` consumer reads the
   output; R1 every input exactly once, R2 nothing lost, R3 the share group acknowledged
   everything, R4 no open transaction and no pending share acknowledgement.
"""

from __future__ import annotations

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from chaos.real import BROKER_CONFIG  # the copy workload's short timeouts
from chaos.real_run import RunOptions, RunResult, keep_or_remove
from chaos.real_verify import direct_checks, quiescent, read_final, read_state, trickle_input
from coordinator.launcher import LocalBroker
from producer.admin import Admin, TopicSpec

log = logging.getLogger("sharetxn.chaos.real_sink")

INPUT = "chaos-sink-input"
OUTPUT = "chaos-sink-output"
GROUP = "chaos-sink"
DELIVERY_LIMIT = 10
FAULT_KINDS = ("worker-kill", "worker-pause", "broker-kill", "broker-pause")
_FAULT_WEIGHTS = (0.35, 0.3, 0.2, 0.15)
GROUP_CONFIG = {
    "share.session.timeout.ms": "5000",
    "share.heartbeat.interval.ms": "500",
}


@dataclass(frozen=True)
class SinkChaosOptions(RunOptions):
    workers: int = 3


@dataclass
class SinkChaosResult(RunResult[SinkChaosOptions]):
    worker_crashes: int = 0
    unclean_exits: int = 0
    quiescent: bool = False
    violations: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations and self.unclean_exits == 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "workload": "sink",
            "seed": self.options.seed,
            "duration_s": self.options.duration_s,
            "workers": self.options.workers,
            "records": self.options.records,
            "faults": dict(self.faults),
            "worker_crashes": self.worker_crashes,
            "unclean_exits": self.unclean_exits,
            "outputs": self.outputs,
            "duplicates": self.duplicates,
            "lost": self.lost,
            "quiescent": self.quiescent,
            "violations": self.violations,
            "ok": self.ok,
            "run_dir": str(self.run_dir),
        }


class _Slot:
    """One worker position: the process in it, its config, its log."""

    def __init__(self, index: int, config: Path, logs: Path) -> None:
        self.index = index
        self.config = config
        self.logs = logs
        self.generation = 0
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self.paused_until = 0.0

    def start(self) -> None:
        self.generation += 1
        if self._log is not None:
            self._log.close()
        self._log = (self.logs / f"worker{self.index}.{self.generation}.log").open("wb")
        self.process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "chaos.cli", "sink", "run", str(self.config)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.paused_until = 0.0

    def signal(self, sig: int) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        if self._log is not None:
            self._log.close()
            self._log = None


class SinkChaosRun:
    def __init__(self, options: SinkChaosOptions) -> None:
        self.options = options
        self.rng = random.Random(options.seed)
        own = options.run_dir is None
        self.run_dir = options.run_dir or Path(tempfile.mkdtemp(prefix="sharetxn-chaos-sink-"))
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._own_dir = own
        self.result = SinkChaosResult(options, self.run_dir)
        self.broker = LocalBroker(data_dir=self.run_dir / "data", config=BROKER_CONFIG)
        self.slots: list[_Slot] = []
        self._broker_paused_until = 0.0
        self.feed_error = ""

    # -- setup ------------------------------------------------------------------------------

    def _setup(self) -> None:
        bs = self.broker.bootstrap_servers
        with Admin(bs) as admin:
            parts = self.options.partitions
            admin.create_topics([TopicSpec(INPUT, parts), TopicSpec(OUTPUT, parts)])
            admin.alter_group_configs(GROUP, GROUP_CONFIG)
        for i in range(self.options.workers):
            config = self.run_dir / f"worker{i}.properties"
            props = {
                "bootstrap.servers": bs,
                "consumer.group.protocol": "share",
                "name": "chaos-sink",
                "share.group.id": GROUP,
                "connector.class": "producer.sink.KafkaTopicSink",
                "topics": INPUT,
                "target.topic": OUTPUT,
                "share.delivery.semantics": "exactly-once",
                "share.acquisition.lock.timeout.ms": "3000",
                "share.max.delivery.count": str(DELIVERY_LIMIT),
                "consumer.override.auto.offset.reset": "earliest",
                "consumer.override.max.poll.records": "50",
                "producer.override.transaction.timeout.ms": "4000",
                "producer.override.max.block.ms": "15000",
                "transactional.id.prefix": f"chaos-sink-w{i}",
            }
            config.write_text("".join(f"{k}={v}\n" for k, v in props.items()), encoding="utf-8")
            self.slots.append(_Slot(i, config, self.run_dir))

    # -- faults -----------------------------------------------------------------------------

    def _feed(self) -> None:
        """Write the input in chunks over the first 80 % of the fault period (a thread)."""
        seconds = self.options.duration_s * 0.8
        error = trickle_input(self.broker.bootstrap_servers, INPUT, self.options.records, seconds)
        self.feed_error = error or ""

    def _supervise(self) -> None:
        now = time.monotonic()
        if self._broker_paused_until and now >= self._broker_paused_until:
            self._broker_signal(signal.SIGCONT)
            self._broker_paused_until = 0.0
        for slot in self.slots:
            if slot.paused_until and now >= slot.paused_until:
                slot.signal(signal.SIGCONT)
                slot.paused_until = 0.0
            if slot.process is not None and slot.process.poll() is not None:
                self.result.worker_crashes += 1
                log.info(
                    "worker %d exited with %s; restarting", slot.index, slot.process.returncode
                )
                slot.start()

    def _broker_signal(self, sig: int) -> None:
        process = self.broker.process
        if process is not None and process.poll() is None:
            process.send_signal(sig)

    def _fault(self) -> None:
        kind = self.rng.choices(FAULT_KINDS, _FAULT_WEIGHTS)[0]
        slot = self.rng.choice(self.slots)
        if kind == "worker-kill":
            slot.signal(signal.SIGKILL)
            if slot.process is not None:
                slot.process.wait(10)
            slot.start()
        elif kind == "worker-pause":
            if slot.paused_until:
                return
            slot.signal(signal.SIGSTOP)
            slot.paused_until = time.monotonic() + self.rng.uniform(1, 7)
        elif kind == "broker-kill":
            if self._broker_paused_until:
                return
            self.broker.kill()
            self.broker.start()
        else:
            if self._broker_paused_until:
                return
            self._broker_signal(signal.SIGSTOP)
            self._broker_paused_until = time.monotonic() + self.rng.uniform(1, 5)
        self.result.faults[kind] += 1

    # -- the run ----------------------------------------------------------------------------

    def run(self) -> SinkChaosResult:
        self.broker.start()
        try:
            self._setup()
            for slot in self.slots:
                slot.start()
            feeder = threading.Thread(target=self._feed, name="chaos-sink-feed", daemon=True)
            feeder.start()
            end = time.monotonic() + self.options.duration_s
            next_fault = time.monotonic() + self.rng.uniform(0.5, 2.5)
            while time.monotonic() < end:
                self._supervise()
                if time.monotonic() >= next_fault:
                    self._fault()
                    next_fault = time.monotonic() + self.rng.uniform(0.5, 2.5)
                time.sleep(0.05)
            self._drain(feeder)
            self._verify()
        finally:
            for slot in self.slots:
                slot.close()
            self.broker.stop()
        return self.result

    def _drain(self, feeder: threading.Thread) -> None:
        if self._broker_paused_until:
            self._broker_signal(signal.SIGCONT)
            self._broker_paused_until = 0.0
        for slot in self.slots:
            if slot.paused_until:
                slot.signal(signal.SIGCONT)
                slot.paused_until = 0.0
        deadline = time.monotonic() + self.options.drain_timeout_s
        feeder.join(max(0.0, deadline - time.monotonic()))
        if feeder.is_alive() or self.feed_error:
            self.result.violations.append(self.feed_error or "the input was not written in time")
        bs = self.broker.bootstrap_servers
        tids = {f"chaos-sink-w{i}-0" for i in range(self.options.workers)}
        while time.monotonic() < deadline:
            self._supervise()
            try:
                with Admin(bs) as admin:
                    if quiescent(read_state(admin, INPUT, OUTPUT, GROUP, tids)):
                        self.result.quiescent = True
                        break
            except Exception as exc:
                log.info("drain: state not readable yet (%s)", exc)
            time.sleep(0.5)
        for slot in self.slots:
            slot.signal(signal.SIGTERM)
        for slot in self.slots:
            if slot.process is None:
                continue
            try:
                code = slot.process.wait(60)
            except subprocess.TimeoutExpired:
                code = -1
            if code != 0:
                self.result.unclean_exits += 1
                self.result.violations.append(
                    f"worker {slot.index} exited {code} after SIGTERM (see worker logs)"
                )

    def _verify(self) -> None:
        bs = self.broker.bootstrap_servers
        tids = {f"chaos-sink-w{i}-0" for i in range(self.options.workers)}
        with Admin(bs) as admin:
            state = read_final(bs, admin, INPUT, OUTPUT, GROUP, tids)
        expected = {f"i{i}" for i in range(self.options.records)}
        direct = direct_checks(state, expected, {}, DELIVERY_LIMIT)
        self.result.outputs = direct.outputs
        self.result.duplicates = direct.duplicates
        self.result.lost = direct.lost
        self.result.violations += [f"{v.invariant}: {v.message}" for v in direct.violations]
        if not self.result.quiescent:
            self.result.violations.append("the drain did not reach a quiescent state")


def main(options: SinkChaosOptions, *, as_json: bool) -> int:
    if not as_json:
        print(
            f"chaos real --workload sink: seed {options.seed}, {options.workers} workers, "
            f"{options.records} records"
        )
    result = SinkChaosRun(options).run()
    kept = keep_or_remove(
        result.run_dir, keep=options.keep or options.run_dir is not None, ok=result.ok
    )
    if as_json:
        print(json.dumps(result.as_dict(), indent=2))
    else:
        faults = ", ".join(f"{k} {v}" for k, v in sorted(result.faults.items())) or "none"
        print(f"faults: {faults}; worker crashes restarted: {result.worker_crashes}")
        print(
            f"output: {result.outputs} records, {result.duplicates} duplicates, "
            f"{result.lost} lost; quiescent: {result.quiescent}"
        )
        for v in result.violations:
            print(f"VIOLATION {v}")
        print(
            f"{'ok' if result.ok else 'VIOLATED'}"
            + (f"; run directory: {result.run_dir}" if kept else "")
        )
    return 0 if result.ok else 1
