"""One simulation run from a seed, and batches of runs.

``Simulation(seed, ops)`` builds everything from one seeded RNG -- the fault profile (swarm
testing, ``chaos.faults``), the simulated disk, network, broker and clients -- and runs two
phases, as TigerBeetle's VOPR does:

1. **safety**: the workload runs with every fault on (broker crashes with torn writes, client
   crashes, pauses, zombies, clock jumps, network drops/delays/replays/partitions, marker
   channel faults) until ``ops`` client operations were invoked;
2. **liveness (drain)**: every fault stops, paused clients resume, the broker is up, clients no
   longer abort on purpose, and the run continues until the system is quiescent -- every input
   consumed, every transaction complete, every 2PC intent resolved -- or a drain deadline
   passes (then the checker reports a liveness violation).

Then the simulator reads the final state through the broker core as a read_committed consumer
and an administrator would, records it in the history, and ``chaos.checker`` judges the
history.  The same seed gives the same history, byte for byte.
"""

from __future__ import annotations

import hashlib
import itertools
import multiprocessing
import random
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.checker import Violation, check
from chaos.faults import (
    FaultProfile,
    draw_profile,
    with_compaction,
    with_group_workers,
    with_tv0_hazards,
)
from chaos.group_reads import group_final_reads, group_waiting_for
from chaos.group_workload import GroupWorker
from chaos.history import BROKER, FINAL, NEMESIS, READER, History
from chaos.log_reads import CommittedReader, batch_summary, read_all, read_committed
from chaos.patching import Patch, applied
from chaos.run_env import no_gc, quiet_logs, replay_cache
from chaos.sim_broker import ConnectionClosed, SimBroker, is_idempotent, is_replayable_tv0
from chaos.sim_client import ClientRuntime, Proc
from chaos.sim_disk import APPEND_BEFORE, SimCrash, SimDisk
from chaos.sim_loop import SimLoop
from chaos.sim_net import NO_MARKER_FAULTS, NO_NET_FAULTS, MarkerFaults, SimNet
from chaos.table_workload import (
    COMPACTION_BROKER,
    TABLE_TOPIC,
    TableWriter,
    table_configs,
    table_final_read,
)
from chaos.workload import DONE, DRAIN, Feeder, Worker, WorkloadConfig, WorkloadEnv
from txn.config import BrokerConfig
from txn.ids import TopicIdPartition, TopicPartition

DRAIN_LIMIT_MS = 300_000
QUIESCENCE_CHECK_MS = 250
READ_EVERY_MS = 250  # the concurrent read_committed consumer's poll interval
IDLE_TXN_STATES = frozenset({"Empty", "CompleteCommit", "CompleteAbort"})


@dataclass
class RunStats:
    seed: int
    ops: int = 0
    entries: int = 0
    events_run: int = 0
    virtual_ms: int = 0
    wall_s: float = 0.0
    broker_crashes: int = 0
    client_crashes: int = 0
    pauses: int = 0
    zombies: int = 0
    torn_tails: int = 0
    inputs: int = 0
    commits: int = 0
    aborts: int = 0
    quiescent: bool = False
    faults: dict[str, Any] = field(default_factory=dict)

    @property
    def ops_per_s(self) -> float:
        return self.ops / self.wall_s if self.wall_s > 0 else 0.0


@dataclass
class RunResult:
    seed: int
    ops: int
    history: History
    violations: list[Violation]
    stats: RunStats
    profile: FaultProfile

    @property
    def ok(self) -> bool:
        return not self.violations

    def replay_command(self) -> str:
        return f"sharetxn chaos replay {self.seed} --ops {self.ops}"


def broker_config(profile: FaultProfile) -> BrokerConfig:
    return BrokerConfig(
        {
            "group.share.min.record.lock.duration.ms": "100",
            "group.share.min.session.timeout.ms": "500",
            "group.share.min.heartbeat.interval.ms": "50",
            "group.share.min.delivery.count.limit": "2",
            "group.share.record.lock.duration.ms": str(profile.lock_ms),
            "group.share.session.timeout.ms": str(profile.session_timeout_ms),
            "group.share.heartbeat.interval.ms": str(max(100, profile.session_timeout_ms // 5)),
            "group.share.delivery.count.limit": str(profile.delivery_limit),
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
            "share.coordinator.state.topic.num.partitions": str(profile.state_partitions),
            "share.coordinator.snapshot.update.records.per.snapshot": str(profile.snapshot_every),
            "share.coordinator.state.topic.prune.interval.ms": str(profile.prune_ms),
            "share.coordinator.cold.partition.snapshot.interval.ms": str(profile.prune_ms * 2),
            "group.consumer.session.timeout.ms": str(profile.session_timeout_ms),
            "group.consumer.heartbeat.interval.ms": str(max(100, profile.session_timeout_ms // 5)),
            **(COMPACTION_BROKER if profile.compaction else {}),
        }
    )


class Simulation:
    """One deterministic run."""

    def __init__(
        self,
        seed: int,
        ops: int,
        *,
        profile: FaultProfile | None = None,
        faults: bool = True,
        patches: Sequence[Patch] = (),
        tv0_hazards: bool = False,
    ) -> None:
        self.seed = seed
        self.ops = ops
        self.patches = tuple(patches)
        rng = random.Random(seed)
        self.rng = rng
        self.profile = (
            profile
            if profile is not None
            else with_compaction(with_group_workers(draw_profile(rng), seed), seed)
        )
        if tv0_hazards:
            self.profile = with_tv0_hazards(self.profile, rng)
        self.faults_enabled = faults
        p = self.profile
        self.loop = SimLoop()
        self.history = History(self.loop.start_ms)
        self.disk = SimDisk(random.Random(rng.getrandbits(64)))
        self.nemesis_rng = random.Random(rng.getrandbits(64))
        self.disk_rng = random.Random(rng.getrandbits(64))
        self.faults_on = False
        self._starting = False
        self.config = WorkloadConfig(
            workers=p.workers,
            input_partitions=p.input_partitions,
            output_partitions=p.output_partitions,
            inputs=max(20, ops // 4),
            txn_timeout_ms=p.txn_timeout_ms,
            max_records=p.max_records,
            abort_p=p.abort_p,
            release_p=p.release_p,
            twopc_p=p.twopc_p,
            group_workers=p.group_workers,
        )
        self.broker = SimBroker(
            self.loop,
            self.disk,
            broker_config(p),
            random.Random(rng.getrandbits(64)),
            self._observe,
            marker_faults=self._marker_faults,
            group_configs={self.config.group: {"share.auto.offset.reset": "earliest"}},
        )
        self.broker.on_crash = self._on_broker_crash
        self.broker.on_exception = self._on_broker_exception
        self.net = SimNet(
            self.loop,
            random.Random(rng.getrandbits(64)),
            self.broker.handle,
            is_replayable_tv0 if tv0_hazards else is_idempotent,
        )
        self.net.on_fault = self._nemesis
        self.clients = ClientRuntime(self.loop, self.net)
        self.env = WorkloadEnv(self.loop, self.history, self.config, self._is_current)
        self.client_rng = random.Random(rng.getrandbits(64))
        self.current: dict[str, Proc] = {}
        self.workers: dict[str, Worker] = {}
        self.procs: list[Proc] = []
        self.incarnations: dict[str, int] = {}
        self._connections = itertools.count(1)
        self._restart_pending = False
        self.quiescent = False
        self.waiting: str | None = None
        self.stats = RunStats(seed, faults=self.profile.to_json())
        self.reader = CommittedReader(self.config.output_topic, self.config.output_partitions)
        self.group_rng = random.Random(f"group-clients-{seed}")
        self.table_writer: TableWriter | None = None

    # -- plumbing ---------------------------------------------------------------------------------

    def _observe(self, name: str, value: Any) -> None:
        self.history.event(self.loop.now_ms(), BROKER, name, value)

    def _nemesis(self, name: str, value: Any) -> None:
        self.history.event(self.loop.now_ms(), NEMESIS, name, value)

    def _marker_faults(self) -> MarkerFaults:
        return self.profile.markers if self.faults_on else NO_MARKER_FAULTS

    def _is_current(self, proc: Proc) -> bool:
        return self.current.get(proc.slot) is proc

    def _disk_hook(self, point: str, log_name: str) -> None:
        if not self.faults_on or self._starting:
            return
        rng = self.disk_rng
        p = self.profile
        if point == APPEND_BEFORE and p.io_error and rng.random() < p.io_error:
            self.disk.stats.io_errors += 1
            self._nemesis("io-error", {"log": log_name})
            raise OSError(5, f"simulated I/O error on {log_name}")
        if p.disk_crash and rng.random() < p.disk_crash:
            raise SimCrash(point, log_name)

    def _start_broker(self) -> None:
        self._restart_pending = False
        if self.broker.up:
            return
        self._starting = True
        try:
            self.broker.start()
        finally:
            self._starting = False

    def _on_broker_crash(self, reason: str) -> None:
        self.stats.broker_crashes += 1
        if self._restart_pending:
            return
        self._restart_pending = True
        delay = self.nemesis_rng.randint(20, 1500) if self.faults_on else 1
        self.loop.after(delay, self._start_broker)

    def _read_output(self) -> None:
        """The concurrent read_committed consumer: record what became visible since last time."""
        if self.env.phase == DONE:
            return
        core = self.broker.core
        if core is not None:
            now = self.loop.now_ms()
            for partition, records in self.reader.poll(core):
                self.history.event(
                    now, READER, "read", {"partition": partition, "records": records}
                )
        self.loop.after(READ_EVERY_MS, self._read_output)

    def _on_broker_exception(self, where: str, exc: BaseException) -> None:
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        self._observe("exception", {"where": where, "error": text[:500]})

    # -- processes --------------------------------------------------------------------------------

    def _start_worker(self, slot: str) -> None:
        inc = self.incarnations.get(slot, 0) + 1
        self.incarnations[slot] = inc
        proc = Proc(f"{slot}.{inc}", slot, inc)
        proc.on_exit = self._on_exit
        worker: Worker
        if slot.startswith("c"):
            worker = GroupWorker(
                self.env,
                proc,
                random.Random(self.group_rng.getrandbits(64)),
                next(self._connections),
            )
            self.broker.watch(worker.tid)
        else:
            worker = Worker(
                self.env,
                proc,
                random.Random(self.client_rng.getrandbits(64)),
                next(self._connections),
            )
        self.current[slot] = proc
        self.workers[proc.name] = worker
        self.procs.append(proc)
        self.clients.spawn(proc, "heartbeat", worker.heartbeat())
        self.clients.spawn(proc, "main", worker.main())

    def _on_exit(self, proc: Proc, reason: str) -> None:
        self._nemesis("exit", {"process": proc.name, "reason": reason})
        self.env.shared.release_proc(proc)
        if self._is_current(proc) and self.env.phase != DONE:
            self.loop.after(100, lambda: self._restart_if_dead(proc))

    def _restart_if_dead(self, proc: Proc) -> None:
        if self.current.get(proc.slot) is proc and not proc.alive and self.env.phase != DONE:
            self._start_worker(proc.slot)

    def _crash_client(self, slot: str) -> None:
        proc = self.current[slot]
        if not proc.alive:
            return
        self.stats.client_crashes += 1
        self.clients.kill(proc)
        self.env.shared.release_proc(proc)
        worker = self.workers[proc.name]
        reset = self.nemesis_rng.random() < self.profile.connection_reset_on_crash
        self._nemesis("client-crash", {"process": proc.name, "reset": reset})
        if reset:
            closed = ConnectionClosed(worker.connection)

            def reset_connection() -> None:
                self.broker.handle(closed)

            self.loop.after(self.nemesis_rng.randint(1, 50), reset_connection)
        self.loop.after(self.nemesis_rng.randint(50, 2000), lambda: self._restart_if_dead(proc))

    def _pause_client(self, slot: str) -> None:
        proc = self.current[slot]
        if not proc.alive:
            return
        rng = self.nemesis_rng
        p = self.profile
        longest = max(p.lock_ms, p.session_timeout_ms, p.txn_timeout_ms)
        duration = rng.randint(100, 2 * longest)
        self.stats.pauses += 1
        self.clients.pause(proc, self.loop.now_ms() + duration)
        replace = rng.random() < p.replace_on_pause
        self._nemesis("pause", {"process": proc.name, "ms": duration, "replaced": replace})
        if replace:
            self.stats.zombies += 1
            self.env.shared.release_proc(proc)
            self._start_worker(slot)

    def _clock_jump(self) -> None:
        p = self.profile
        jump = self.nemesis_rng.randint(p.lock_ms, max(p.lock_ms, p.txn_timeout_ms) * 2)
        until = self.loop.now_ms() + jump
        for proc in self.procs:
            if proc.alive:
                self.clients.pause(proc, until)
        self._nemesis("clock-jump", {"ms": jump})

    def _tick(self) -> None:
        if not self.faults_on:
            return
        rng = self.nemesis_rng
        p = self.profile
        slots = sorted(self.current)
        if p.broker_crash and rng.random() < p.broker_crash and self.broker.up:
            self._nemesis("broker-crash", {})
            self.broker.crash("nemesis")
        if p.client_crash and rng.random() < p.client_crash:
            self._crash_client(rng.choice(slots))
        if p.client_pause and rng.random() < p.client_pause:
            self._pause_client(rng.choice(slots))
        if p.clock_jump and rng.random() < p.clock_jump:
            self._clock_jump()
        if p.partition and rng.random() < p.partition:
            target = rng.choice([*slots, "feeder"])
            ms = rng.randint(200, 2 * p.session_timeout_ms)
            self.net.cut(target, self.loop.now_ms() + ms)
            self._nemesis("partition", {"client": target, "ms": ms})
        self.loop.after(p.tick_ms, self._tick)

    # -- phases -----------------------------------------------------------------------------------

    def _set_faults(self, on: bool) -> None:
        self.faults_on = on
        self.net.faults = self.profile.net if on else NO_NET_FAULTS
        self.disk.hook = self._disk_hook if on else None
        self._nemesis("faults", {"on": on})

    def run(self) -> RunResult:
        with applied((*self.patches, replay_cache())), quiet_logs(), no_gc():
            return self._run()

    def _run(self) -> RunResult:
        wall = time.perf_counter()
        cfg = self.config
        self._start_broker()
        assert self.broker.up
        for tid in [f"w{k}" for k in range(cfg.workers)] + sorted(self.env.shared.leases):
            self.broker.watch(tid)
        topics = {cfg.input_topic: cfg.input_partitions, cfg.output_topic: cfg.output_partitions}
        if cfg.group_workers:
            topics[cfg.group_output_topic] = cfg.output_partitions
        configs = {}
        if self.profile.compaction:
            topics[TABLE_TOPIC] = 1
            configs[TABLE_TOPIC] = table_configs(self.profile.table_retention_ms)
        self.broker.setup_topics(topics, configs)
        self.history.event(
            self.loop.now_ms(),
            NEMESIS,
            "setup",
            {
                "seed": self.seed,
                "ops": self.ops,
                "profile": self.profile.to_json(),
                "input_topic": cfg.input_topic,
                "output_topic": cfg.output_topic,
                "group_output_topic": cfg.group_output_topic if cfg.group_workers else None,
                "table_topic": TABLE_TOPIC if self.profile.compaction else None,
                "delivery_limit": self.profile.delivery_limit,
                "patches": [p.name for p in self.patches],
            },
        )
        feeder = Proc("feeder", "feeder", 1)
        self.clients.spawn(
            feeder,
            "feed",
            Feeder(self.env, feeder, random.Random(self.client_rng.getrandbits(64))).run(),
        )
        if self.profile.compaction:
            table = Proc("table", "table", 1)
            self.table_writer = TableWriter(
                self.env, table, random.Random(f"table-writer-{self.seed}")
            )
            self.clients.spawn(table, "write", self.table_writer.run())
        for k in range(cfg.workers):
            self._start_worker(f"w{k}")
        for k in range(cfg.group_workers):
            self._start_worker(f"c{k}")
        self.loop.after(READ_EVERY_MS, self._read_output)
        if self.faults_enabled:
            self._set_faults(True)
            self.loop.after(self.profile.tick_ms, self._tick)
        safety_cap = self.loop.now_ms() + max(600_000, self.ops * 500)
        self.loop.run_until(safety_cap, stop=lambda: self.history.invocations >= self.ops)
        self._drain()
        self.env.phase = DONE
        self._final_reads()
        self.history.close_open(self.loop.now_ms())
        violations = check(self.history.entries, seed=self.seed)
        s = self.stats
        s.ops = self.history.invocations
        s.entries = len(self.history.entries)
        s.events_run = self.loop.events_run
        s.virtual_ms = self.loop.now_ms() - self.loop.start_ms
        s.wall_s = time.perf_counter() - wall
        s.torn_tails = self.disk.stats.torn_tails
        s.quiescent = self.quiescent
        return RunResult(self.seed, self.ops, self.history, violations, s, self.profile)

    def _drain(self) -> None:
        if self.faults_on:
            self._set_faults(False)
        self.env.phase = DRAIN
        self.net.heal_all()
        for proc in self.procs:
            if proc.alive:
                self.clients.resume_now(proc)
        for slot, proc in sorted(self.current.items()):
            if not proc.alive:
                self._start_worker(slot)
        if not self.broker.up:
            self.loop.after(1, self._start_broker)
        deadline = self.loop.now_ms() + DRAIN_LIMIT_MS

        def check_quiet() -> None:
            if self._is_quiescent():
                self.quiescent = True
                return
            self.loop.after(QUIESCENCE_CHECK_MS, check_quiet)

        self.loop.after(QUIESCENCE_CHECK_MS, check_quiet)
        self.loop.run_until(deadline, stop=lambda: self.quiescent)
        end: dict[str, Any] = {"quiescent": self.quiescent}
        if not self.quiescent:
            self.waiting = self._waiting_for()
            end["waiting"] = self.waiting
        self._nemesis("drain-end", end)

    def _is_quiescent(self) -> bool:
        return self._waiting_for() is None

    def _waiting_for(self) -> str | None:
        """The first thing the drain still waits for (None: quiescent), for I13's message."""
        core = self.broker.core
        env = self.env
        if core is None:
            return "the broker to be up"
        if not env.feeder_done:
            return f"the feeder ({env.fed} of {self.config.inputs} inputs fed)"
        if self.table_writer is not None and not self.table_writer.done:
            return "the table writer"
        shared = env.shared
        if shared.intents:
            return f"{len(shared.intents)} prepared 2PC transaction(s) to be completed"
        for name, lease in sorted(shared.leases.items()):
            if lease.dirty or lease.holder is not None:
                return f"2PC id {name} to be released (holder {lease.holder}, dirty {lease.dirty})"
        if pending := core.marker_channel.pending():
            return f"{len(pending)} marker delivery(ies) pending"
        for tid in sorted(self.broker.tids):
            view = core.txn_coordinator.transaction_view(tid)
            if view is not None and (
                view.state.state_name not in IDLE_TXN_STATES or view.pending_state is not None
            ):
                return f"transaction {tid} to complete ({view.state.state_name})"
        cfg = self.config
        for p in range(cfg.output_partitions):
            part = core.partition(cfg.output_topic, p)
            if part is None or part.last_stable_offset != part.high_watermark:
                return f"the LSO of {cfg.output_topic}-{p} to reach its high watermark"
        info = core.topics.get(cfg.input_topic)
        if info is None:
            return f"topic {cfg.input_topic}"
        for p in range(cfg.input_partitions):
            data = core.partition(cfg.input_topic, p)
            _error, sp = core.share.share_partition(cfg.group, TopicIdPartition(info.topic_id, p))
            if data is None or sp is None or sp.start_offset < data.high_watermark:
                start = None if sp is None else sp.start_offset
                end = None if data is None else data.high_watermark
                return (
                    f"share group {cfg.group} to consume {cfg.input_topic}-{p} (start offset"
                    f" {start}, log end {end})"
                )
        return group_waiting_for(core, cfg)

    # -- final observations -----------------------------------------------------------------------

    def _final_reads(self) -> None:
        core = self.broker.core
        now = self.loop.now_ms()
        history = self.history
        if core is None:
            history.event(now, FINAL, "unavailable", {})
            return
        cfg = self.config
        inputs: dict[str, list[list[Any]]] = {}
        for p in range(cfg.input_partitions):
            tp = TopicPartition(cfg.input_topic, p)
            inputs[str(p)] = [[o, v] for o, v, _pid, _txn in read_all(core, tp)]
        history.event(now, FINAL, "input", {"topic": cfg.input_topic, "partitions": inputs})
        committed: dict[str, list[list[Any]]] = {}
        batches: dict[str, list[list[Any]]] = {}
        lso: dict[str, list[int]] = {}
        for p in range(cfg.output_partitions):
            tp = TopicPartition(cfg.output_topic, p)
            committed[str(p)] = [[o, v] for o, v in read_committed(core, tp)]
            batches[str(p)] = batch_summary(core, tp)
            part = core.partition(cfg.output_topic, p)
            assert part is not None
            lso[str(p)] = [part.last_stable_offset, part.high_watermark]
        history.event(
            now, FINAL, "output", {"topic": cfg.output_topic, "committed": committed, "lso": lso}
        )
        history.event(now, FINAL, "output-log", {"topic": cfg.output_topic, "batches": batches})
        share: dict[str, Any] = {}
        info = core.topics.get(cfg.input_topic)
        for p in range(cfg.input_partitions):
            if info is None:
                break
            error, sp = core.share.share_partition(cfg.group, TopicIdPartition(info.topic_id, p))
            if sp is None:
                share[str(p)] = {"error": error.name}
                continue
            states = []
            for offset in range(sp.start_offset, sp.end_offset):
                st = sp.record_state(offset)
                if st is not None:
                    states.append([offset, st[0].name, st[1]])
            share[str(p)] = {"start": sp.start_offset, "end": sp.end_offset, "states": states}
        history.event(
            now,
            FINAL,
            "share",
            {
                "partitions": share,
                "open_txns": sorted(core.share.persister.open_transactions()),
                "limit": self.profile.delivery_limit,
            },
        )
        txns: dict[str, Any] = {}
        for tid in sorted(self.broker.tids):
            view = core.txn_coordinator.transaction_view(tid)
            if view is not None:
                txns[tid] = {
                    "state": view.state.state_name,
                    "pending": None if view.pending_state is None else view.pending_state.name,
                    "pid": view.producer_id,
                    "epoch": view.producer_epoch,
                    "markers": [f"{t.topic}-{t.partition}" for t in view.markers_pending],
                }
        group_final_reads(core, cfg, history, now)
        if self.profile.compaction:
            table_final_read(core, history, now)
        final: dict[str, Any] = {"txns": txns, "quiescent": self.quiescent}
        if not self.quiescent:
            final["waiting"] = self.waiting  # what the drain still waited for (I13's message)
        history.event(now, FINAL, "txns", final)


# -- batches of runs ------------------------------------------------------------------------------


def run_seed(
    seed: int,
    ops: int,
    *,
    faults: bool = True,
    patches: Sequence[Patch] = (),
    tv0_hazards: bool = False,
) -> RunResult:
    return Simulation(seed, ops, faults=faults, patches=patches, tv0_hazards=tv0_hazards).run()


def run_seeds(
    seeds: Iterable[int],
    ops: int,
    *,
    patches: Sequence[Patch] = (),
    on_result: Callable[[RunResult], None] | None = None,
) -> list[RunResult]:
    results = []
    for seed in seeds:
        result = run_seed(seed, ops, patches=patches)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What to patch in a run, by name (picklable, for worker processes)."""

    assume_fixed: tuple[str, ...] = ()
    mutation: str | None = None
    tv0_hazards: bool = False

    def patches(self) -> list[Patch]:
        from chaos.known_bugs import assumed_fixes  # noqa: PLC0415 - they import the core
        from chaos.mutations import mutation  # noqa: PLC0415

        out = assumed_fixes(self.assume_fixed) if self.assume_fixed else []
        if self.mutation is not None:
            out.append(mutation(self.mutation))
        return out

    def flags(self) -> str:
        """The command-line flags that reproduce these options."""
        parts = []
        if self.assume_fixed:
            parts.append(f"--assume-fixed {','.join(self.assume_fixed)}")
        if self.mutation is not None:
            parts.append(f"--mutation {self.mutation}")
        if self.tv0_hazards:
            parts.append("--tv0-hazards")
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class SeedSummary:
    """The outcome of one seed, small enough to send between processes."""

    seed: int
    ops: int
    invoked: int
    violations: tuple[dict[str, Any], ...]
    described: tuple[str, ...]
    wall_s: float
    virtual_ms: int
    entries: int
    quiescent: bool
    broker_crashes: int
    client_crashes: int
    command: str
    history_digest: str

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def invariants(self) -> tuple[str, ...]:
        """The invariants violated, sorted."""
        return tuple(sorted({str(v["invariant"]) for v in self.violations}))

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "ok": self.ok,
            "ops": self.invoked,
            "violations": list(self.violations),
            "wall_s": round(self.wall_s, 3),
            "virtual_ms": self.virtual_ms,
            "entries": self.entries,
            "quiescent": self.quiescent,
            "broker_crashes": self.broker_crashes,
            "client_crashes": self.client_crashes,
            "replay": self.command,
            "history_sha256": self.history_digest,
        }


def summarize(result: RunResult, options: RunOptions) -> SeedSummary:
    entries = result.history.entries
    flags = options.flags()
    command = result.replay_command() + (f" {flags}" if flags else "")
    text = result.history.to_jsonl()
    return SeedSummary(
        seed=result.seed,
        ops=result.ops,
        invoked=result.stats.ops,
        violations=tuple(v.to_json() for v in result.violations),
        described=tuple(v.describe(entries) for v in result.violations),
        wall_s=result.stats.wall_s,
        virtual_ms=result.stats.virtual_ms,
        entries=len(entries),
        quiescent=result.stats.quiescent,
        broker_crashes=result.stats.broker_crashes,
        client_crashes=result.stats.client_crashes,
        command=command,
        history_digest=hashlib.sha256(text.encode()).hexdigest(),
    )


def run_options(seed: int, ops: int, options: RunOptions) -> RunResult:
    return run_seed(seed, ops, patches=options.patches(), tv0_hazards=options.tv0_hazards)


def _summary_job(job: tuple[int, int, RunOptions, str | None]) -> SeedSummary:
    seed, ops, options, history_dir = job
    result = run_options(seed, ops, options)
    if history_dir is not None and not result.ok:
        result.history.write(Path(history_dir) / f"seed-{seed}.jsonl")
    return summarize(result, options)


def run_batch(
    seeds: Sequence[int],
    ops: int,
    options: RunOptions,
    *,
    jobs: int = 1,
    history_dir: Path | None = None,
    on_summary: Callable[[SeedSummary], None] | None = None,
) -> list[SeedSummary]:
    """Run ``seeds`` (in ``jobs`` processes), calling ``on_summary`` as each one finishes."""
    work = [
        (seed, ops, options, None if history_dir is None else str(history_dir)) for seed in seeds
    ]
    out: list[SeedSummary] = []
    if jobs <= 1 or len(work) <= 1:
        for job in work:
            summary = _summary_job(job)
            out.append(summary)
            if on_summary is not None:
                on_summary(summary)
        return out
    # spawn, not fork: the parent may run threads (pytest, rich), and the children only need
    # ``_summary_job`` and picklable options.
    context = multiprocessing.get_context("spawn")
    with context.Pool(jobs) as pool:
        for summary in pool.imap_unordered(_summary_job, work):
            out.append(summary)
            if on_summary is not None:
                on_summary(summary)
    out.sort(key=lambda s: s.seed)
    return out
