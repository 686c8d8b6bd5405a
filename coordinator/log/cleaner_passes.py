"""The broker's cleaner passes: data partitions of compacted topics and the internal logs.

Sans-IO: each pass plans on the caller's thread (the event loop), hands the copying to a
``CleanerExecutor`` and applies the swap when the executor reports back -- on the loop again.
``InlineCleanerExecutor`` runs the copy at once, so a pass is synchronous and deterministic
(unit tests, the chaos simulator); the server passes a worker executor
(``coordinator.cleaner_worker``) so the copy runs off the loop.  A log has at most one
pass in flight.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from coordinator.log.cleaner import CleanerPolicy
from coordinator.log.cleaner_io import CleanRange
from coordinator.log.compaction import (
    Aborted,
    CleanerState,
    CleanJob,
    CleanResult,
    apply_clean,
    drop_staged,
    job_range,
    plan_clean,
    run_clean,
)
from coordinator.log.storage import PartitionLog
from txn.clock import Clock

log = logging.getLogger("sharetxn.cleaner")

Done = Callable[[CleanResult | BaseException], None]


class CleanerExecutor(Protocol):
    def submit(self, job: CleanJob, source: CleanRange, done: Done) -> None:
        """Run ``run_clean(job, source)`` and call ``done`` with its result (or the error)
        on the caller's loop."""
        ...


class InlineCleanerExecutor:
    """Runs the copy at once, on the caller's thread; ``on_buffer_size`` is told each size
    the pass's read buffer takes (tests)."""

    def __init__(self, on_buffer_size: Callable[[int], None] | None = None) -> None:
        self.on_buffer_size = on_buffer_size

    def submit(self, job: CleanJob, source: CleanRange, done: Done) -> None:
        try:
            result = run_clean(job, source, self.on_buffer_size)
        except Exception as exc:  # reported to the pass, which logs it
            done(exc)
            return
        done(result)


@dataclass
class CleanTarget:
    """One log the cleaner looks after."""

    name: str
    log: PartitionLog
    policy: CleanerPolicy
    # The last stable offset and the aborted transactions (a data partition knows them; an
    # internal log is scanned).
    transactions: Callable[[], tuple[int, Sequence[Aborted]]]
    # The active producers' last data offset (-1: none) and epoch: their last batch stays,
    # emptied if need be (a data partition knows them; an internal log is scanned).
    producers: Callable[[], Mapping[int, tuple[int, int]]] = dict
    # Told after a swap (the aborted index forgets removed markers, share partitions follow).
    after: Callable[[CleanResult], None] = lambda _result: None
    # Internal logs: make every appended record durable before a pass copies any (their
    # coordinators may append without flushing at once).
    flush_first: bool = False
    # file.delete.delay.ms: the files a swap retired are removed that long after it.
    delete_delay_ms: int = 60_000


@dataclass
class CleanerStats:
    runs: int = 0  # swaps applied
    bytes_removed: int = 0
    dirty_ratio_max: float = 0.0
    states: dict[str, CleanerState] = field(default_factory=dict)


def _purge(target: CleanTarget, through: int) -> None:
    try:
        target.log.purge_deleted(through)
    except OSError as exc:
        log.error("removing the retired segments of %s failed: %s", target.name, exc)


class LogCleaner:
    def __init__(self, clock: Clock, executor: CleanerExecutor | None = None) -> None:
        self._clock = clock
        self.executor: CleanerExecutor = executor or InlineCleanerExecutor()
        self.stats = CleanerStats()

    def state(self, name: str) -> CleanerState:
        return self.stats.states.setdefault(name, CleanerState())

    def forget(self, name: str) -> None:
        self.stats.states.pop(name, None)

    def run_pass(self, targets: Sequence[CleanTarget]) -> int:
        """Plan and start a pass on every target that needs one; the bytes removed by the
        passes that finished before this returns (all of them with the inline executor)."""
        now = self._clock.now_ms()
        before = self.stats.bytes_removed
        for target in targets:
            state = self.state(target.name)
            if state.busy:
                continue
            try:
                lso, aborted = target.transactions()
                job = plan_clean(
                    target.log, lso, aborted, now, target.policy, state, target.producers()
                )
                if job is None:
                    continue
                if target.flush_first:
                    target.log.flush()
                source = job_range(target.log, job)
            except Exception as exc:  # a failing log: logged, the next pass plans again
                log.error("planning a clean of %s failed: %s", target.name, exc)
                continue
            state.busy = True
            self.executor.submit(job, source, self._finisher(target, state))
        return self.stats.bytes_removed - before

    def _finisher(self, target: CleanTarget, state: CleanerState) -> Done:
        def done(outcome: CleanResult | BaseException) -> None:
            state.busy = False
            if isinstance(outcome, BaseException):
                log.error("cleaning %s failed: %s", target.name, outcome)
                return
            try:
                applied = apply_clean(target.log, outcome)
            except Exception as exc:  # a closed or failing log: the next pass plans again
                log.error("swapping the cleaned segments of %s failed: %s", target.name, exc)
                drop_staged(outcome)
                return
            if not applied:
                log.info("the log %s moved during its clean; the pass is dropped", target.name)
                drop_staged(outcome)
                return
            state.due_ms = outcome.due_ms
            if not outcome.contents:
                return
            retired = target.log.retired_mark
            if retired:  # the old files go after file.delete.delay.ms, as in Kafka
                self._clock.schedule(
                    max(target.delete_delay_ms, 0), functools.partial(_purge, target, retired)
                )
            self.stats.runs += 1
            self.stats.bytes_removed += outcome.bytes_before - outcome.bytes_after
            log.info(
                "cleaned %s: %d bytes -> %d bytes",
                target.name,
                outcome.bytes_before,
                outcome.bytes_after,
            )
            target.after(outcome)

        return done
