"""``sharetxn chaos real``: the real broker process, real client processes, kill -9 and SIGSTOP.

The simulation (``chaos.runner``) runs the broker core on a virtual clock; this mode runs what
a user runs.  One run:

1. **Setup.** A ``sharetxn broker`` process (``coordinator.launcher.LocalBroker``) on a fresh
   data directory, an input topic holding ``--records`` unique values ``i0, i1, ...`` (written
   by a stock idempotent producer) and an output topic, a share group with short timeouts.
2. **Faults** for ``--duration`` seconds.  ``--clients`` client processes
   (``chaos.real_worker``) run consume-transform-produce transactions with our library while a
   seeded fault loop injects, every 0.5-2.5 s: kill -9 of the broker and a restart on the same
   data directory and port; SIGSTOP of the broker for 1-7 s (past request, lock and
   transaction timeouts) and SIGCONT; kill -9 of a client and a fresh process in its place;
   SIGSTOP of a client for 1-9 s and SIGCONT; and a *zombie*: a client is stopped, a new
   process takes its slot (fencing it) and the old one is resumed later -- it must be fenced
   and exit; and the *operator*: the recovery tool (``sharetxn txn commit|abort|
   force-terminate --apply``) run on a 2PC client's id as the client's decision file says,
   racing the live client, sometimes killed -9 midway and run again.
3. **Drain.** Faults stop, everything is resumed, the clients stop aborting on purpose and
   work until the input is consumed and nothing is in flight (liveness) or the drain times out.
4. **Verify.** A stock ``confluent_kafka.Consumer`` with ``isolation.level=read_committed``
   reads the output; the share group's start offsets, the open transactions and the pending
   share acknowledgements are read with ``Admin``.  The clients' histories and the harness's
   fault events are merged into one history in the simulation's format, ``chaos.checker``
   judges it, and the direct checks of ``chaos.real_verify`` (R1-R4) run on the final state.

The seed fixes the fault schedule (which fault, which target, how long), not the timing of
real processes, so a run cannot be replayed exactly; ``--keep`` leaves the data directory,
the broker's and clients' logs and every history for a post-mortem.

Which checker invariants apply: the history holds what the clients did and saw and what the
harness read at the end, but none of the broker-internal observations the simulator records
(acquisitions as the broker made them, staged pending acknowledgements, marker applications,
coordinator state changes, accepted produces).  So I2 (torn transactions, output side), I3,
I4, I5, I13, I14 (output and input log sanity) and I15 (a committed transaction's outputs
visible, a failed one's not) are checked, and I16 on the operator's tool runs and their
audit logs; I1, I6, I7, I8, I9, I10, I11, E0 and the durability part of I14 have nothing to
read and pass vacuously -- the direct checks R1-R4 cover their end-to-end consequences.
"""

from __future__ import annotations

import heapq
import itertools
import json
import logging
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from chaos.checker import AUDIT, RECOVERY_TOOL, Violation, check
from chaos.history import COMPLETIONS, FINAL, NEMESIS, Entry, History
from chaos.real_run import RunOptions, RunResult, keep_or_remove, require_positive
from chaos.real_verify import (
    DIRECT_NAMES,
    FinalState,
    direct_checks,
    final_events,
    quiescent,
    read_final,
    read_state,
)
from chaos.real_worker import WorkerSettings
from coordinator.launcher import LocalBroker
from producer.admin import Admin, TopicSpec
from producer.twophase.audit import read_audit_log

log = logging.getLogger("sharetxn.chaos.real")

INPUT = "chaos-input"
OUTPUT = "chaos-output"
GROUP = "chaos-real"
DELIVERY_LIMIT = 10  # the broker's maximum: archiving needs ten failed deliveries of a record

FAULT_KINDS = (
    "broker-kill",
    "broker-pause",
    "client-kill",
    "client-pause",
    "client-zombie",
    "operator",
)
_FAULT_WEIGHTS = (0.15, 0.15, 0.3, 0.2, 0.2, 0.3)
OPERATOR_KILL_P = 0.3  # an operator run is killed -9 midway and run again (fault 28)
OPERATOR_TIMEOUT_S = 40.0  # an operator run still going after this is killed (recorded info)

# Short timeouts, so that paused processes outlive them within a one-minute run.
BROKER_CONFIG = {
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.min.session.timeout.ms": "2000",
    "group.share.min.heartbeat.interval.ms": "500",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
}
GROUP_CONFIG = {
    "share.auto.offset.reset": "earliest",
    "share.delivery.count.limit": str(DELIVERY_LIMIT),
    "share.record.lock.duration.ms": "5000",
    "share.session.timeout.ms": "5000",
    "share.heartbeat.interval.ms": "500",
}


@dataclass(frozen=True)
class RealOptions(RunOptions):
    clients: int = 3


@dataclass
class RealResult(RunResult[RealOptions]):
    ops: int = 0
    commits: int = 0
    aborts: int = 0
    unknown: int = 0
    fenced: int = 0
    zombie_exits: int = 0
    operator_exits: Counter[str] = field(default_factory=Counter)  # the tool's exit codes
    client_crashes: int = 0
    quiescent: bool = False
    violations: list[Violation] = field(default_factory=list)
    described: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    kept: bool = False

    @property
    def ok(self) -> bool:
        return not self.violations

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "seed": self.options.seed,
            "duration_s": self.options.duration_s,
            "clients": self.options.clients,
            "records": self.options.records,
            "faults": dict(sorted(self.faults.items())),
            "ops": self.ops,
            "commits": self.commits,
            "aborts": self.aborts,
            "unknown_outcome": self.unknown,
            "fenced": self.fenced,
            "zombie_exits": self.zombie_exits,
            "operator_exits": dict(sorted(self.operator_exits.items())),
            "client_crashes": self.client_crashes,
            "outputs": self.outputs,
            "duplicates": self.duplicates,
            "lost": self.lost,
            "quiescent": self.quiescent,
            "violations": [v.to_json() for v in self.violations],
            "seconds": {k: round(v, 1) for k, v in self.seconds.items()},
            "run_dir": str(self.run_dir) if self.kept else None,
        }


@dataclass
class _Client:
    """The current process of one client slot."""

    slot: int
    incarnation: int
    process: subprocess.Popen[bytes]
    log: IO[bytes]
    paused: bool = False


@dataclass
class _OperatorRun:
    """One run of ``sharetxn txn`` by the operator fault (a job is a run and its re-runs)."""

    job: int
    attempt: int
    argv: list[str]
    value: dict[str, Any]
    op: int
    process: subprocess.Popen[bytes]
    log: IO[bytes]
    kill_at: float | None
    deadline: float

    @property
    def name(self) -> str:
        return f"op{self.job}"


Progress = Callable[[str, float, float, str], None]  # phase, completed, total, status


class RealRun:
    """One run; ``run()`` returns the result.  Not reusable."""

    def __init__(self, options: RealOptions, progress: Progress | None = None) -> None:
        self.o = options
        self.progress = progress or (lambda _phase, _done, _total, _status: None)
        self.rng = random.Random(options.seed)
        if options.run_dir is not None:
            self.dir = options.run_dir
            if self.dir.exists() and any(self.dir.iterdir()):
                # Old histories would be merged in, an old stop file would stop the clients.
                msg = f"run directory {self.dir} is not empty"
                raise ValueError(msg)
            self.dir.mkdir(parents=True, exist_ok=True)
        else:
            self.dir = Path(tempfile.mkdtemp(prefix="sharetxn-chaos-real-"))
        self.t0_ns = time.monotonic_ns()
        self.wall0_ms = time.time_ns() // 1_000_000  # audit lines carry wall-clock times
        self.entries: list[dict[str, Any]] = []  # the harness's own history lines
        self._ops = itertools.count()
        self.operators: list[_OperatorRun] = []
        self.operator_jobs = 0
        self.broker = LocalBroker(data_dir=self.dir / "broker-data", config=BROKER_CONFIG)
        self.broker_paused = False
        self.broker_down = False
        self.clients: dict[int, _Client] = {}
        self.zombies: list[_Client] = []
        self.incarnations: dict[int, int] = {}
        self.schedule: list[tuple[float, int, str, Callable[[], None]]] = []
        self._order = itertools.count()
        self.result = RealResult(options, self.dir)
        self.tids = {f"c{s}" for s in range(options.clients)}
        self.tids |= {f"c{s}-2pc" for s in range(options.clients)}

    # -- history ----------------------------------------------------------------------------------

    def now_ms(self) -> int:
        return (time.monotonic_ns() - self.t0_ns) // 1_000_000

    def event(self, process: str, f: str, value: dict[str, Any]) -> None:
        self.entries.append(
            {"t": self.now_ms(), "p": process, "type": "event", "f": f, "v": value, "op": -1}
        )

    def invoke(self, process: str, f: str, value: dict[str, Any]) -> int:
        op = next(self._ops)
        self.entries.append(
            {"t": self.now_ms(), "p": process, "type": "invoke", "f": f, "v": value, "op": op}
        )
        return op

    def complete(self, process: str, op: int, type_: str, f: str, value: dict[str, Any]) -> None:
        self.entries.append(
            {"t": self.now_ms(), "p": process, "type": type_, "f": f, "v": value, "op": op}
        )

    def fault(self, kind: str, **value: Any) -> None:
        self.result.faults[kind] += 1
        self.event(NEMESIS, kind, value)

    # -- processes --------------------------------------------------------------------------------

    def _settings(self, slot: int, incarnation: int) -> WorkerSettings:
        rate = self.o.records / max(self.o.duration_s * 0.75, 1.0)  # records per second, all
        return WorkerSettings(
            bootstrap=self.broker.bootstrap_servers,
            slot=slot,
            incarnation=incarnation,
            group=GROUP,
            input_topic=INPUT,
            output_topic=OUTPUT,
            output_partitions=self.o.partitions,
            run_dir=str(self.dir),
            t0_ns=self.t0_ns,
            seed=self.o.seed,
            pace_s=self.o.clients / rate,
        )

    def spawn(self, slot: int) -> None:
        incarnation = self.incarnations.get(slot, 0) + 1
        self.incarnations[slot] = incarnation
        (self.dir / f"c{slot}.current").write_text(str(incarnation))
        settings = self._settings(slot, incarnation)
        log_file = (self.dir / f"{settings.process}.log").open("ab")
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "chaos.real_worker", settings.to_argv()],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.clients[slot] = _Client(slot, incarnation, process, log_file)
        self.event(NEMESIS, "client-start", {"slot": slot, "process": settings.process})

    def _signal(self, client: _Client, sig: signal.Signals) -> None:
        if client.process.poll() is None:
            client.process.send_signal(sig)

    def _reap(self, client: _Client) -> None:
        if client.process.poll() is None:
            client.process.kill()
        client.process.wait()
        client.log.close()

    def at(self, delay_s: float, what: str, action: Callable[[], None]) -> None:
        heapq.heappush(self.schedule, (time.monotonic() + delay_s, next(self._order), what, action))

    def run_due(self, everything: bool = False) -> None:
        while self.schedule and (everything or self.schedule[0][0] <= time.monotonic()):
            _when, _n, _what, action = heapq.heappop(self.schedule)
            action()

    def watch_clients(self) -> None:
        """A current client that exited on its own is restarted (and recorded)."""
        for slot, client in list(self.clients.items()):
            code = client.process.poll()
            if code is None:
                continue
            self.result.client_crashes += 1
            self.event(NEMESIS, "client-exit", {"slot": slot, "code": code})
            client.log.close()
            self.spawn(slot)
        for zombie in list(self.zombies):
            code = zombie.process.poll()
            if code is not None:
                self.event(NEMESIS, "zombie-gone", {"slot": zombie.slot, "code": code})
                zombie.log.close()
                self.zombies.remove(zombie)

    # -- faults -----------------------------------------------------------------------------------

    def inject(self) -> None:
        broker_free = not (self.broker_paused or self.broker_down)
        free = [c for c in self.clients.values() if not c.paused and c.process.poll() is None]
        allowed = {"operator": not self.operators}
        kinds = [
            (k, w)
            for k, w in zip(FAULT_KINDS, _FAULT_WEIGHTS, strict=True)
            if allowed.get(k, broker_free if k.startswith("broker") else bool(free))
        ]
        if not kinds:
            return
        kind = self.rng.choices([k for k, _w in kinds], [w for _k, w in kinds])[0]
        if kind == "broker-kill":
            down_s = self.rng.uniform(0.2, 1.5)
            self.fault(kind, down_ms=int(down_s * 1000))
            self.broker.kill()
            self.broker_down = True
            self.at(down_s, "broker-start", self._restart_broker)
        elif kind == "operator":
            self._operator()
        elif kind == "broker-pause":
            pause_s = self.rng.uniform(1.0, 7.0)
            self.fault(kind, pause_ms=int(pause_s * 1000))
            assert self.broker.process is not None
            self.broker.process.send_signal(signal.SIGSTOP)
            self.broker_paused = True
            self.at(pause_s, "broker-resume", self._resume_broker)
        else:
            client = self.rng.choice(free)
            target = f"c{client.slot}.{client.incarnation}"
            if kind == "client-kill":
                delay_s = self.rng.uniform(0.0, 1.0)
                self.fault(kind, target=target, restart_after_ms=int(delay_s * 1000))
                self._reap(client)
                del self.clients[client.slot]  # not watched until its successor runs
                self.at(delay_s, "client-start", lambda: self.spawn(client.slot))
            elif kind == "client-pause":
                pause_s = self.rng.uniform(1.0, 9.0)
                self.fault(kind, target=target, pause_ms=int(pause_s * 1000))
                self._signal(client, signal.SIGSTOP)
                client.paused = True
                self.at(pause_s, "client-resume", lambda: self._resume_client(client))
            else:
                pause_s = self.rng.uniform(2.0, 8.0)
                self.fault(kind, target=target, resume_after_ms=int(pause_s * 1000))
                self._signal(client, signal.SIGSTOP)
                client.paused = True
                self.zombies.append(client)
                del self.clients[client.slot]
                self.spawn(client.slot)
                self.at(pause_s, "zombie-resume", lambda: self._resume_client(client))

    # -- the operator: the recovery tool against the live broker (faults 27 and 28) -------------

    def _operator(self) -> None:
        """Run ``sharetxn txn`` on a 2PC client's id as an operator following the runbook.

        It mostly picks an id with a decision file or a paused client's (a transaction that
        stays open is what operators are called for) and reads the decision file: a commit
        decision is committed with the PreparedTxnState it names (sometimes without it: the
        tool must refuse), an abort decision is aborted, and with no decision the id is
        force-terminated.  The client is live (fault 27); some runs are killed -9 midway and
        run again (fault 28).
        """
        # Mostly an id with a decision file (a decided transaction may still be prepared), else
        # a paused client's id (its transaction stays open long enough to be in doubt).
        prefer = self.rng.random() < 0.75
        slot = self.rng.randrange(self.o.clients)
        decided = [s for s in range(self.o.clients) if (self.dir / f"c{s}.intent").exists()]
        paused = sorted({c.slot for c in self.clients.values() if c.paused})
        paused += sorted({c.slot for c in self.zombies if c.paused})
        if prefer and (decided or paused):
            slot = (decided or paused)[slot % len(decided or paused)]
        no_evidence = self.rng.random() < 0.25
        kill_after = self.rng.uniform(0.3, 2.5) if self.rng.random() < OPERATOR_KILL_P else None
        tid = f"c{slot}-2pc"
        try:
            intent: dict[str, Any] | None = json.loads(
                (self.dir / f"c{slot}.intent").read_text(encoding="utf-8")
            )
        except (OSError, ValueError):
            intent = None
        self.operator_jobs += 1
        job = self.operator_jobs
        argv = ["--transactional-id", tid]
        value: dict[str, Any] = {"job": job, "tid": tid, "intent": intent}
        if isinstance(intent, dict) and intent.get("tid") == tid:
            ident = ["--producer-id", str(intent["pid"]), "--epoch", str(intent["epoch"])]
            if intent.get("commit"):
                command = "commit"
                argv = ["commit", *argv, *ident]
                if not no_evidence:
                    state = {
                        "transactional_id": tid,
                        "producer_id": int(intent["pid"]),
                        "epoch": int(intent["epoch"]),
                    }
                    argv += ["--prepared-state", json.dumps(state)]
                    value["prepared_state"] = state
            else:
                command = "abort"
                argv = ["abort", *argv, *ident]
        else:
            command = "force-terminate"
            argv = ["force-terminate", *argv]
        value["command"] = command
        audit = self.dir / "operator" / f"op{job}.audit.jsonl"
        audit.parent.mkdir(exist_ok=True)
        argv = [
            sys.executable,
            "-m",
            "chaos.cli",
            "txn",
            *argv,
            "--bootstrap-server",
            self.broker.bootstrap_servers,
            "--apply",
            "--operator",
            "chaos",
            "--audit-log",
            str(audit),
            "--scan-interval",
            "0.3",
            "--wait-timeout",
            "5",
        ]
        self.fault(
            "operator",
            job=job,
            target=tid,
            command=command,
            kill_after_ms=(None if kill_after is None else int(kill_after * 1000)),
        )
        self._start_operator(job, 1, argv, value, kill_after)

    def _start_operator(
        self,
        job: int,
        attempt: int,
        argv: list[str],
        value: dict[str, Any],
        kill_after: float | None,
    ) -> None:
        name = f"op{job}"
        op = self.invoke(name, RECOVERY_TOOL, {**value, "attempt": attempt})
        log_file = (self.dir / "operator" / f"{name}.{attempt}.log").open("wb")
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            argv, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT
        )
        now = time.monotonic()
        self.operators.append(
            _OperatorRun(
                job,
                attempt,
                argv,
                value,
                op,
                process,
                log_file,
                None if kill_after is None else now + kill_after,
                now + OPERATOR_TIMEOUT_S,
            )
        )

    def watch_operators(self) -> None:
        """Record finished operator runs; kill -9 the ones due (and run them again)."""
        now = time.monotonic()
        for run in list(self.operators):
            code = run.process.poll()
            if code is None and (
                (run.kill_at is not None and now >= run.kill_at) or now >= run.deadline
            ):
                run.process.kill()
                code = run.process.wait()
                killed = True
            elif code is None:
                continue
            else:
                killed = False
            run.log.close()
            self.operators.remove(run)
            if killed:
                self.complete(run.name, run.op, "info", RECOVERY_TOOL, {"killed": True})
                if run.kill_at is not None and now < run.deadline:
                    self._start_operator(run.job, run.attempt + 1, run.argv, run.value, None)
            else:
                self.complete(run.name, run.op, "ok", RECOVERY_TOOL, {"exit": code})
                self.result.operator_exits[str(code)] += 1

    def wait_operators(self) -> None:
        """Before the drain: let the operator's runs finish (re-runs included)."""
        while self.operators:
            self.watch_operators()
            self.run_due()
            self.watch_clients()
            time.sleep(0.1)

    def audit_events(self) -> None:
        """The operator's audit logs, as ``audit`` events of each job's process."""
        for path in sorted((self.dir / "operator").glob("op*.audit.jsonl")):
            name = path.name.split(".", 1)[0]
            for line in read_audit_log(path):
                step = line.get("step") or {}
                before = line.get("before") or {}
                evidence = step.get("evidence") or {}
                pid = step.get("producer_id")
                epoch = step.get("producer_epoch")
                if pid is None or epoch is None:
                    pid, epoch = before.get("producer_id"), before.get("producer_epoch")
                value = {
                    "event": line.get("event"),
                    "outcome": line.get("outcome"),
                    "action": step.get("action"),
                    "tid": step.get("transactional_id"),
                    "pid": pid,
                    "epoch": epoch,
                    "evidence": evidence.get("kind"),
                    "state_before": before.get("state"),
                    "run_id": line.get("run_id"),
                    "detail": line.get("detail") or line.get("reason"),
                }
                t = max(int(line.get("ts_ms", self.wall0_ms)) - self.wall0_ms, 0)
                self.entries.append(
                    {"t": t, "p": name, "type": "event", "f": AUDIT, "v": value, "op": -1}
                )

    def _restart_broker(self) -> None:
        self.broker.start()
        self.broker_down = False
        self.event(NEMESIS, "broker-start", {"port": self.broker.port})

    def _resume_broker(self) -> None:
        if self.broker.process is not None and self.broker.process.poll() is None:
            self.broker.process.send_signal(signal.SIGCONT)
        self.broker_paused = False
        self.event(NEMESIS, "broker-resume", {})

    def _resume_client(self, client: _Client) -> None:
        self._signal(client, signal.SIGCONT)
        client.paused = False
        self.event(NEMESIS, "client-resume", {"target": f"c{client.slot}.{client.incarnation}"})

    # -- phases -----------------------------------------------------------------------------------

    def setup(self) -> None:
        from confluent_kafka import Producer  # noqa: PLC0415 - librdkafka only where needed

        self.broker.start()
        self.event(
            NEMESIS,
            "setup",
            {
                "seed": self.o.seed,
                "clients": self.o.clients,
                "records": self.o.records,
                "partitions": self.o.partitions,
                "duration_s": self.o.duration_s,
                "delivery_limit": DELIVERY_LIMIT,
                "mode": "real",
            },
        )
        with Admin(self.broker.bootstrap_servers) as admin:
            admin.create_topics(
                [TopicSpec(INPUT, self.o.partitions), TopicSpec(OUTPUT, self.o.partitions)]
            )
            admin.alter_group_configs(GROUP, GROUP_CONFIG)
        producer = Producer(
            {
                "bootstrap.servers": self.broker.bootstrap_servers,
                "enable.idempotence": True,
                "linger.ms": 5,
                # Small batches: a share fetch acquires whole batches, so this bounds the
                # records of one transaction.
                "batch.num.messages": 4,
            }
        )
        for i in range(self.o.records):
            producer.produce(INPUT, value=f"i{i}".encode(), partition=i % self.o.partitions)
            if i % 500 == 0:
                producer.poll(0)
        if producer.flush(60) != 0:
            msg = "the input records were not all acknowledged"
            raise RuntimeError(msg)
        for slot in range(self.o.clients):
            self.spawn(slot)

    def fault_phase(self) -> None:
        start = time.monotonic()
        end = start + self.o.duration_s
        next_fault = start + self.rng.uniform(0.5, 2.5)
        while (now := time.monotonic()) < end:
            self.run_due()
            self.watch_clients()
            self.watch_operators()
            if now >= next_fault:
                self.inject()
                next_fault = now + self.rng.uniform(0.5, 2.5)
            self.progress("faults", now - start, self.o.duration_s, self._status())
            time.sleep(0.1)
        self.run_due(everything=True)
        self.wait_operators()
        self.event(NEMESIS, "faults-stop", dict(self.result.faults))

    def drain(self, admin: Admin) -> FinalState | None:
        (self.dir / "drain").write_text("")
        start = time.monotonic()
        state: FinalState | None = None
        while time.monotonic() - start < self.o.drain_timeout_s:
            self.watch_clients()
            try:
                state = read_state(admin, INPUT, OUTPUT, GROUP, self.tids)
            except Exception as exc:  # the broker is up; a hiccup is retried
                log.debug("drain check: %s", exc)
                state = None
            if state is not None:
                consumed = sum(max(s, 0) for s, _e in state.spso.values())
                self.progress("drain", consumed, self.o.records, self._status())
                if quiescent(state):
                    return state
            time.sleep(0.5)
        return state

    def stop_clients(self) -> None:
        (self.dir / "stop").write_text("")
        deadline = time.monotonic() + 15
        everyone = list(self.clients.values()) + self.zombies
        for client in everyone:
            self._signal(client, signal.SIGCONT)
            try:
                client.process.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                self.event(NEMESIS, "client-killed-at-stop", {"slot": client.slot})
            self._reap(client)
        self.clients.clear()
        self.zombies.clear()

    def _status(self) -> str:
        faults = sum(self.result.faults.values())
        up = sum(1 for c in self.clients.values() if not c.paused)
        broker = "paused" if self.broker_paused else "down" if self.broker_down else "up"
        return f"{faults} faults, broker {broker}, {up}/{self.o.clients} clients running"

    # -- the run ----------------------------------------------------------------------------------

    def run(self) -> RealResult:
        r = self.result
        started = time.monotonic()
        try:
            self.setup()
            r.seconds["setup"] = time.monotonic() - started
            mark = time.monotonic()
            self.fault_phase()
            r.seconds["faults"] = time.monotonic() - mark
            mark = time.monotonic()
            with Admin(self.broker.bootstrap_servers) as admin:
                drained = self.drain(admin)
                r.quiescent = drained is not None and quiescent(drained)
                r.seconds["drain"] = time.monotonic() - mark
                mark = time.monotonic()
                self.stop_clients()
                self.progress("verify", 0, 1, "reading the output with a stock consumer")
                final = read_final(
                    self.broker.bootstrap_servers, admin, INPUT, OUTPUT, GROUP, self.tids
                )
            self._judge(final)
            r.seconds["verify"] = time.monotonic() - mark
        finally:
            for client in list(self.clients.values()) + self.zombies:
                self._signal(client, signal.SIGCONT)
                self._reap(client)
            for run in self.operators:
                run.process.kill()
                run.process.wait()
                run.log.close()
            self.broker.stop()
            (self.dir / "broker.log").write_text("\n".join(self.broker.output) + "\n")
            r.seconds["total"] = time.monotonic() - started
            r.kept = keep_or_remove(self.dir, keep=self.o.keep, ok=r.ok)
        return r

    def _judge(self, final: FinalState) -> None:
        r = self.result
        for f, value in final_events(final, r.quiescent):
            self.event(FINAL, f, value)
        self.audit_events()
        history = merge_histories(sorted(self.dir.glob("c*.jsonl")), self.entries, self.now_ms())
        history.write(self.dir / "history.jsonl")
        entries = history.entries
        r.ops = history.invocations
        self._count(entries)
        max_dc = observed_delivery_counts(entries)
        expected = {f"i{i}" for i in range(self.o.records)}
        direct = direct_checks(final, expected, max_dc, DELIVERY_LIMIT)
        r.outputs, r.duplicates, r.lost = direct.outputs, direct.duplicates, direct.lost
        violations = check(entries, self.o.seed)
        r.violations = violations + direct.violations
        for v in violations:
            r.described.append(v.describe(entries))
        for v in direct.violations:
            r.described.append(f"{v.invariant} {DIRECT_NAMES[v.invariant]}: {v.message}")

    def _count(self, entries: list[Entry]) -> None:
        r = self.result
        invokes = {e.op: e for e in entries if e.type == "invoke"}
        for e in entries:
            if e.type == "event":
                r.fenced += e.f == "fenced"
                r.zombie_exits += e.f == "zombie-exit"
                continue
            if e.type not in COMPLETIONS or e.op not in invokes:
                continue
            outcome = (e.value or {}).get("outcome") if isinstance(e.value, dict) else None
            if e.f in ("txn", "complete"):
                if e.type == "ok" and outcome == "commit":
                    r.commits += 1
                elif (e.type == "ok" and outcome == "abort") or e.type == "fail":
                    r.aborts += 1
                elif e.type == "info":
                    r.unknown += 1
            elif e.f == "abort-orphan" and e.type == "ok":
                r.aborts += 1


def merge_histories(paths: list[Path], harness: list[dict[str, Any]], end_ms: int) -> History:
    """One history from the clients' files and the harness's lines, ordered by time.

    Each file's operation ids are its own; a torn last line (a kill -9 mid-write) is skipped;
    operations a killed client left open complete as ``info``.
    """
    rows: list[tuple[int, int, int, dict[str, Any]]] = []
    for n, path in enumerate(paths):
        for k, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                rows.append((int(obj["t"]), n, k, obj))
    for k, obj in enumerate(harness):
        rows.append((int(obj["t"]), len(paths), k, obj))
    rows.sort(key=lambda row: row[:3])
    history = History()
    ops: dict[tuple[int, int], int] = {}
    for t, n, _k, obj in rows:
        type_, process, f, value = obj["type"], str(obj["p"]), str(obj["f"]), obj.get("v")
        if type_ == "invoke":
            ops[(n, int(obj["op"]))] = history.invoke(t, process, f, value)
        elif type_ in COMPLETIONS:
            op = ops.get((n, int(obj["op"])))
            if op is not None:
                history.complete(t, op, type_, value)
        else:
            history.event(t, process, f, value)
    history.close_open(end_ms)
    return history


def observed_delivery_counts(entries: list[Entry]) -> dict[str, int]:
    """Input value -> the highest delivery count a client was handed it with."""
    out: dict[str, int] = {}
    for e in entries:
        if e.f == "fetch" and e.type == "ok":
            for _p, _o, value, dc in (e.value or {}).get("records", []):
                out[value] = max(out.get(value, 0), int(dc))
    return out


# -- the command line ------------------------------------------------------------------------------


def summary_table(result: RealResult) -> Any:
    from rich.table import Table  # noqa: PLC0415

    o = result.options
    table = Table(title=f"sharetxn chaos real: seed {o.seed}, {o.duration_s:.0f} s of faults")
    table.add_column("measure")
    table.add_column("value", justify="right")
    faults = ", ".join(f"{k} {n}" for k, n in sorted(result.faults.items())) or "none"
    rows: list[tuple[str, str, bool | None]] = [
        ("faults injected", f"{sum(result.faults.values())} ({faults})", None),
        ("client operations", str(result.ops), None),
        ("transactions committed", str(result.commits), None),
        ("transactions aborted (or certainly not committed)", str(result.aborts), None),
        ("transactions with an unknown outcome", str(result.unknown), None),
        ("fenced (zombie exits)", f"{result.fenced} ({result.zombie_exits})", None),
        (
            "recovery tool exit codes",
            ", ".join(f"{k}: {n}" for k, n in sorted(result.operator_exits.items())) or "none",
            None,
        ),
        ("client processes that died on their own", str(result.client_crashes), None),
        ("committed outputs (stock read_committed)", f"{result.outputs} of {o.records}", None),
        ("duplicates", str(result.duplicates), result.duplicates == 0),
        ("lost", str(result.lost), result.lost == 0),
        ("drain reached quiescence", "yes" if result.quiescent else "no", result.quiescent),
        ("violations", str(len(result.violations)), result.ok),
        (
            "seconds (setup / faults / drain / verify)",
            " / ".join(
                f"{result.seconds.get(k, 0):.0f}" for k in ("setup", "faults", "drain", "verify")
            ),
            None,
        ),
    ]
    for name, value, good in rows:
        style = "" if good is None else "green" if good else "bold red"
        table.add_row(name, f"[{style}]{value}[/]" if style else value)
    return table


def main(options: RealOptions, *, as_json: bool) -> int:
    """``sharetxn chaos real``: returns the exit code (0 only without violations)."""
    from rich.console import Console  # noqa: PLC0415
    from rich.progress import (  # noqa: PLC0415
        BarColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeElapsedColumn,
    )

    o = options
    require_positive(
        {
            "--duration": o.duration_s,
            "--clients": o.clients,
            "--records": o.records,
            "--drain-timeout": o.drain_timeout_s,
        }
    )
    err = Console(stderr=True)
    run = RealRun(options)
    if not as_json:
        err.print(
            f"[bold]sharetxn chaos real[/] seed={o.seed} duration={o.duration_s:g}s "
            f"clients={o.clients} records={o.records}"
        )
    with Progress(
        TextColumn("[bold]{task.fields[phase]:>6}[/]"),
        BarColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        console=err,
        disable=as_json or not err.is_terminal,
        transient=True,
    ) as progress:
        task: TaskID = progress.add_task("real", total=1, phase="setup", status="")

        def report(phase: str, done: float, total: float, status: str) -> None:
            progress.update(task, completed=done, total=total, phase=phase, status=status)

        run.progress = report
        result = run.run()
    if as_json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        from rich.console import Console as Out  # noqa: PLC0415

        out = Out()
        out.print(summary_table(result))
        for text in result.described:
            out.print(text, markup=False, highlight=False)
        if result.kept:
            out.print(f"run directory (data, logs, histories): {result.run_dir}")
        if result.ok:
            out.print("[green]no invariant violated[/]")
        else:
            out.print(f"[red]{len(result.violations)} violation(s)[/] (seed {o.seed})")
    return 0 if result.ok else 1
