"""Swarm testing: each seed draws its own fault rates and workload shape.

Following TigerBeetle's VOPR (and swarm testing generally), no single fault mix is used for
every run: each seed draws which faults are on and how often, so some runs hammer one
mechanism and others combine many.  ``draw_profile(rng)`` is the only source of a run's
settings, so a run is reproducible from its seed.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, replace
from typing import Any

from chaos.sim_net import MarkerFaults, NetFaults


@dataclass(frozen=True, slots=True)
class FaultProfile:
    """The faults and workload knobs of one run."""

    net: NetFaults
    markers: MarkerFaults
    # per storage fault point (append before/after, fsync before/after): crash the broker
    disk_crash: float
    # per append: the write fails with an I/O error (nothing written)
    io_error: float
    # per nemesis tick (every ``tick_ms``): probabilities of each fault starting
    tick_ms: int
    broker_crash: float
    client_crash: float
    client_pause: float
    replace_on_pause: float  # a paused client is replaced (the paused one becomes a zombie)
    clock_jump: float  # every client stalls while the broker's timers run on
    partition: float
    connection_reset_on_crash: float  # the broker learns of a crashed client's socket close
    # workload
    workers: int
    input_partitions: int
    output_partitions: int
    abort_p: float
    release_p: float
    twopc_p: float
    max_records: int
    delivery_limit: int
    lock_ms: int
    session_timeout_ms: int
    txn_timeout_ms: int
    state_partitions: int
    snapshot_every: int
    prune_ms: int
    # consumer-group workers (chaos.group_workload); drawn apart from the rest (``group_workers``)
    group_workers: int = 0
    # a compacted table and compacted internal logs (chaos.table_workload); own RNG too
    compaction: bool = False
    # with compaction: the table is also ``compact,delete`` with this ``retention.ms`` (0: not)
    table_retention_ms: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _maybe(rng: random.Random, on: float, low: float, high: float) -> float:
    """With probability ``on`` a rate drawn in [low, high], else 0 (the fault is off)."""
    return rng.uniform(low, high) if rng.random() < on else 0.0


def draw_profile(rng: random.Random) -> FaultProfile:
    net = NetFaults(
        drop=_maybe(rng, 0.7, 0.0, 0.12),
        delay_min=1,
        delay_max=rng.choice((2, 5, 20, 60)),
        spike=_maybe(rng, 0.5, 0.0, 0.05),
        spike_ms=rng.choice((500, 2000, 6000)),
        replay=_maybe(rng, 0.4, 0.0, 0.1),
    )
    markers = MarkerFaults(
        drop=_maybe(rng, 0.5, 0.0, 0.2),
        drop_response=_maybe(rng, 0.5, 0.0, 0.2),
        delay=_maybe(rng, 0.5, 0.0, 0.3),
        delay_ms=rng.choice((50, 500, 2000)),
        duplicate=_maybe(rng, 0.5, 0.0, 0.3),
        late=0.0,
        stale=_maybe(rng, 0.5, 0.0, 0.5),
        stale_ms=rng.choice((2000, 10000)),
    )
    lock_ms = rng.choice((600, 1500, 4000))
    session_timeout_ms = rng.choice((1500, 3000, 6000))
    return FaultProfile(
        net=net,
        markers=markers,
        disk_crash=_maybe(rng, 0.5, 0.0, 0.002),
        io_error=_maybe(rng, 0.3, 0.0, 0.01),
        tick_ms=200,
        broker_crash=_maybe(rng, 0.5, 0.0, 0.01),
        client_crash=_maybe(rng, 0.6, 0.0, 0.02),
        client_pause=_maybe(rng, 0.6, 0.0, 0.02),
        replace_on_pause=rng.choice((0.0, 0.5, 1.0)),
        clock_jump=_maybe(rng, 0.4, 0.0, 0.01),
        partition=_maybe(rng, 0.5, 0.0, 0.02),
        connection_reset_on_crash=rng.choice((0.0, 0.5, 1.0)),
        workers=rng.randint(2, 5),
        input_partitions=rng.randint(1, 4),
        output_partitions=rng.randint(1, 3),
        abort_p=rng.choice((0.0, 0.1, 0.3, 0.5)),
        release_p=rng.choice((0.0, 0.05, 0.2)),
        twopc_p=rng.choice((0.0, 0.1, 0.3)),
        max_records=rng.choice((1, 3, 8)),
        delivery_limit=rng.choice((2, 3, 5, 10)),
        lock_ms=lock_ms,
        session_timeout_ms=session_timeout_ms,
        txn_timeout_ms=rng.choice((2000, 5000, 10000)),
        state_partitions=rng.randint(1, 4),
        snapshot_every=rng.choice((2, 10, 100)),
        prune_ms=rng.choice((500, 3000, 30000)),
    )


def with_group_workers(profile: FaultProfile, seed: int) -> FaultProfile:
    """Draw how many consumer-group workers run beside the share-group ones.

    From an RNG of its own, so that a seed without group workers runs exactly as it did before
    they existed.
    """
    rng = random.Random(f"group-workers-{seed}")
    return replace(profile, group_workers=rng.choice((0, 0, 1, 2, 3)))


def with_tv0_hazards(profile: FaultProfile, rng: random.Random) -> FaultProfile:
    """Add the faults transaction version 0 cannot survive (KAFKA-17754): markers delivered
    after the channel's timeout and stale EndTxn retransmissions (see ``chaos.sim_net``)."""
    return replace(
        profile,
        net=replace(profile.net, replay=max(profile.net.replay, rng.uniform(0.02, 0.1))),
        markers=replace(profile.markers, late=rng.uniform(0.02, 0.1)),
    )


def with_compaction(profile: FaultProfile, seed: int) -> FaultProfile:
    """Draw whether the run adds the compacted table (``chaos.table_workload``): one seed in
    three, two of three of those with time retention on the table too.  From an RNG of its
    own, so a seed without it runs exactly as before."""
    rng = random.Random(f"compaction-{seed}")
    compaction = rng.random() < 1 / 3
    retention = rng.choice((0, 8000, 20000)) if compaction else 0
    return replace(profile, compaction=compaction, table_retention_ms=retention)
