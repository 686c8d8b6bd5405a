"""The driver's committer: which batches it commits, their lag, and when it gives up.

A local checkpoint with Spark's files written by hand; the commit phase is a fault
injector standing in for ``commit_decided`` (which the Spark tests run for real), the
clock a fake.  No sleeping: the thread test waits on events.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from producer.spark.checkpoint import Checkpoint
from producer.spark.committer import RESOLVE_ATTEMPTS, Committer, commit_lags_of
from producer.spark.errors import DecidedBatchAbortedError, ResolveError


class Clock:
    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _touch(path: Path, mtime: float, body: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    os.utime(path, (mtime, mtime))


def intent(root: Path, batch: int) -> None:
    _touch(root / "intents" / f"{batch}.json", 0, "{}")


def decide(root: Path, batch: int, at: float) -> None:
    _touch(root / "commits" / str(batch), at, "v1\n{}\n")


def resolve(root: Path, batch: int, at: float) -> None:
    _touch(root / "resolved" / str(batch), at, '{"outcome": "commit"}\n')


class Phase:
    """The commit phase: resolves every decided batch at ``clock`` (or raises ``faults``)."""

    def __init__(self, root: Path, clock: Clock) -> None:
        self.root, self.clock = root, clock
        self.faults: list[Exception] = []
        self.calls = 0

    def __call__(self) -> list[int]:
        self.calls += 1
        if self.faults:
            raise self.faults.pop(0)
        done = []
        for path in sorted((self.root / "commits").iterdir()):
            n = int(path.name)
            if (self.root / "intents" / f"{n}.json").exists() and not (
                self.root / "resolved" / str(n)
            ).exists():
                resolve(self.root, n, self.clock.now)
                done.append(n)
        return done


def committer(root: Path, clock: Clock, phase: Phase, **kw: object) -> tuple[Committer, list]:
    fatal: list[BaseException] = []
    c = Committer(
        Checkpoint.local(root),
        phase,
        on_fatal=fatal.append,
        clock=clock,
        **kw,  # type: ignore[arg-type]
    )
    return c, fatal


def test_a_decided_batch_is_committed_and_its_lag_measured_from_commits_n(tmp_path: Path) -> None:
    clock = Clock(1_000.0)
    phase = Phase(tmp_path, clock)
    c, fatal = committer(tmp_path, clock, phase)
    assert c.tick() == [] and phase.calls == 0  # nothing decided: no commit phase
    intent(tmp_path, 0)
    assert c.tick() == [] and phase.calls == 0  # an intent without commits/0: undecided
    decide(tmp_path, 0, at=1_000.0)
    clock.now = 1_001.5
    assert c.tick() == [0]
    assert c.lag.by_batch == {0: 1.5}
    assert c.tick() == [] and phase.calls == 1  # idempotent: measured once, not again
    assert not fatal and c.error is None


def test_a_batch_resolved_elsewhere_is_measured_and_not_committed_again(tmp_path: Path) -> None:
    clock = Clock(2_000.0)
    phase = Phase(tmp_path, clock)
    c, _ = committer(tmp_path, clock, phase)
    c.tick()
    intent(tmp_path, 3)
    decide(tmp_path, 3, at=1_999.0)
    resolve(tmp_path, 3, at=1_999.25)  # the kafka-share source's commit got there first
    assert c.tick() == [3]
    assert phase.calls == 0
    assert c.lag.by_batch == {3: 0.25}


def test_batches_resolved_before_the_first_poll_are_not_measured(tmp_path: Path) -> None:
    clock = Clock()
    phase = Phase(tmp_path, clock)
    for n in range(3):
        intent(tmp_path, n)
        decide(tmp_path, n, at=10.0)
        resolve(tmp_path, n, at=500.0)  # an earlier run (or recovery at start) did them
    c, _ = committer(tmp_path, clock, phase)
    assert c.tick() == []
    assert c.lag.count == 0 and phase.calls == 0


def test_an_empty_batch_has_no_intent_and_is_not_committed(tmp_path: Path) -> None:
    clock = Clock()
    phase = Phase(tmp_path, clock)
    c, _ = committer(tmp_path, clock, phase)
    decide(tmp_path, 0, at=clock.now)
    assert c.tick() == [] and c.tick() == []
    assert phase.calls == 0


def test_a_decided_batch_the_cluster_aborted_stops_the_query_at_once(tmp_path: Path) -> None:
    clock = Clock()
    phase = Phase(tmp_path, clock)
    c, fatal = committer(tmp_path, clock, phase)
    intent(tmp_path, 0)
    decide(tmp_path, 0, at=clock.now)
    error = DecidedBatchAbortedError(
        batch=0, transactional_id="t", producer_id=1, epoch=0, checkpoint="c", detail="timed out"
    )
    phase.faults.append(error)
    assert c.tick() == []
    assert fatal == [error] and c.error is error
    assert c.tick() == [] and phase.calls == 1  # given up: no more attempts


def test_a_resolve_error_is_retried_then_fatal(tmp_path: Path) -> None:
    clock = Clock()
    phase = Phase(tmp_path, clock)
    c, fatal = committer(tmp_path, clock, phase)
    intent(tmp_path, 0)
    decide(tmp_path, 0, at=clock.now)
    phase.faults.extend(ResolveError(f"attempt {i}") for i in range(RESOLVE_ATTEMPTS))
    for _ in range(RESOLVE_ATTEMPTS - 1):
        c.tick()
        assert not fatal
    c.tick()
    assert [str(e) for e in fatal] == [f"attempt {RESOLVE_ATTEMPTS - 1}"]


def test_other_errors_are_fatal_only_once_they_last_the_failure_timeout(tmp_path: Path) -> None:
    clock = Clock(0.0)
    phase = Phase(tmp_path, clock)
    c, fatal = committer(tmp_path, clock, phase, failure_timeout_s=60.0)
    intent(tmp_path, 0)
    decide(tmp_path, 0, at=clock.now)
    phase.faults.extend([OSError("broker down"), OSError("broker down")])
    c.tick()
    clock.now = 30.0
    c.tick()
    assert not fatal
    assert c.tick() == [0]  # recovered: the failure clock starts again
    intent(tmp_path, 1)
    decide(tmp_path, 1, at=clock.now)
    phase.faults.extend([OSError("down again")] * 2)
    clock.now = 100.0
    c.tick()
    clock.now = 159.0
    c.tick()
    assert not fatal
    phase.faults.append(OSError("still down"))
    clock.now = 160.0
    c.tick()
    assert [str(e) for e in fatal] == ["still down"]


def test_the_thread_commits_when_woken_and_stops_after_its_query(tmp_path: Path) -> None:
    clock = Clock()
    committed = threading.Event()
    phase = Phase(tmp_path, clock)

    def commit() -> list[int]:
        done = phase()
        if done:
            committed.set()
        return done

    alive = threading.Event()
    alive.set()
    c = Committer(
        Checkpoint.local(tmp_path),
        commit,
        on_fatal=lambda _: None,
        alive=alive.is_set,
        poll_s=3600.0,
        clock=clock,
    )
    c.start()
    intent(tmp_path, 0)
    decide(tmp_path, 0, at=clock.now)
    c.wake()  # the progress listener: no waiting for the (hour-long) poll interval
    assert committed.wait(30)
    alive.clear()  # the query ended: one last poll, then the thread ends
    c.wake()
    c._thread.join(30)  # type: ignore[union-attr]
    assert not c.running


def test_commit_lags_of_a_local_checkpoint(tmp_path: Path) -> None:
    for n, (decided, resolved) in enumerate([(10.0, 10.5), (20.0, 21.0), (30.0, 30.25)]):
        intent(tmp_path, n)
        decide(tmp_path, n, at=decided)
        resolve(tmp_path, n, at=resolved)
    decide(tmp_path, 3, at=40.0)  # an empty batch: no intent, no lag
    assert commit_lags_of(tmp_path) == [0.25, 0.5, 1.0]


@pytest.mark.parametrize("bad", [0.0, -1.0])
def test_poll_interval_must_be_positive(bad: float) -> None:
    from producer.spark.errors import SparkConfigError  # noqa: PLC0415

    pytest.importorskip("pyspark")
    from producer.spark.sink import ExactlyOnce  # noqa: PLC0415

    with pytest.raises(SparkConfigError):
        ExactlyOnce("127.0.0.1:1", "/tmp/x", commit_poll_s=bad)
