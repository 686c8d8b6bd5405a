"""Group commit: one fsync per log per round, covering every request made while the
previous round ran; a request is answered only by a round that began after it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from coordinator.log.file_log import FileLog
from coordinator.log.group_commit import Failures, GroupCommit
from coordinator.log.memory_log import MemoryLog
from coordinator.log.storage import LogConfig
from txn.batch import build_batch


class FakeLog:
    """A log that counts its deferred fsyncs (and fails them when told to)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = False
        self.unflushed_messages = 0
        self.snapshots: list[int] = []
        self.fsyncs = 0
        self.synced_counts: list[int] = []
        self.fail = False

    def fsync_later(self) -> Callable[[], None]:
        self.snapshots.append(self.unflushed_messages)

        def sync() -> None:
            self.fsyncs += 1
            if self.fail:
                raise OSError(5, "EIO")

        return sync

    def synced(self, messages: int) -> None:
        self.synced_counts.append(messages)


class HeldRunner:
    """Runs each round's fsyncs only when the test lets it (no threads, no sleeps)."""

    def __init__(self) -> None:
        self.rounds: list[asyncio.Future[None]] = []

    async def __call__(self, work: Callable[[], Failures]) -> Failures:
        gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.rounds.append(gate)
        await gate
        return work()

    def release(self) -> None:
        for gate in self.rounds:
            if not gate.done():
                gate.set_result(None)


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)  # lets scheduled callbacks run: no wall-clock wait


def test_requests_made_during_a_round_share_the_next_round() -> None:
    async def scenario() -> None:
        runner = HeldRunner()
        commit = GroupCommit(runner)
        p0, p1, p2 = FakeLog("p0"), FakeLog("p1"), FakeLog("p2")
        first = commit.request([p0])
        await settle()
        assert len(runner.rounds) == 1  # round 1 runs (held), for p0 only
        # three more requests, as from three connections, while round 1 runs
        waiting = [commit.request([p0]), commit.request([p0, p1]), commit.request([p2, p1])]
        await settle()
        assert len(runner.rounds) == 1
        assert not first.done() and not any(w.done() for w in waiting)
        runner.release()
        await settle()
        assert first.done() and first.result() == {}
        assert not any(w.done() for w in waiting)  # round 1 began before their appends
        assert len(runner.rounds) == 2
        runner.release()
        await settle()
        assert all(w.done() and w.result() == {} for w in waiting)
        assert waiting[0] is waiting[1] is waiting[2]  # one round answers them all
        assert (p0.fsyncs, p1.fsyncs, p2.fsyncs) == (2, 1, 1)
        assert (commit.rounds, commit.fsyncs) == (2, 4)

    asyncio.run(scenario())


def test_a_round_nothing_could_overlap_runs_on_the_loop() -> None:
    async def scenario() -> None:
        runner = HeldRunner()
        asked: list[int] = []

        def others_waiting(waiters: int) -> bool:
            asked.append(waiters)
            return len(asked) > 1  # alone the first time, not the second

        commit = GroupCommit(runner, others_waiting)
        commit.fsync_s = 1.0  # slow fsyncs: a thread when others wait
        log = FakeLog("p0")
        first = commit.request([log])
        await settle()
        assert first.done() and log.fsyncs == 1 and runner.rounds == []
        second, third = commit.request([log]), commit.request([log])
        await settle()
        assert len(runner.rounds) == 1 and not second.done()
        runner.release()
        await settle()
        assert second is third and second.done() and log.fsyncs == 2
        assert asked == [1, 2]  # the requests each round answered

    asyncio.run(scenario())


def test_fast_fsyncs_run_on_the_loop_even_when_others_wait() -> None:
    async def scenario() -> None:
        runner = HeldRunner()
        commit = GroupCommit(runner, lambda _waiters: True)
        log = FakeLog("p0")
        done = commit.request([log])
        await settle()
        assert done.done() and log.fsyncs == 1 and runner.rounds == []
        assert 0 < commit.fsync_s < 1

    asyncio.run(scenario())


def test_a_failed_fsync_is_reported_for_its_log_only() -> None:
    async def scenario() -> None:
        runner = HeldRunner()
        commit = GroupCommit(runner)
        good, bad = FakeLog("good"), FakeLog("bad")
        good.unflushed_messages, bad.unflushed_messages = 3, 4
        bad.fail = True
        result = commit.request([good, bad])
        await settle()
        runner.release()
        failed = await result
        assert list(failed) == [bad]
        assert isinstance(failed[bad], OSError)
        assert good.synced_counts == [3]  # the messages the snapshot covered
        assert bad.synced_counts == []

    asyncio.run(scenario())


def test_a_log_that_cannot_sync_later_is_flushed_at_once() -> None:
    async def scenario() -> None:
        commit = GroupCommit(HeldRunner())
        log = MemoryLog(LogConfig())  # no fsync_later
        done = commit.request([log])
        assert done.done() and done.result() == {}
        assert commit.rounds == 0

    asyncio.run(scenario())


def test_file_log_append_unflushed_leaves_the_fsync_to_the_group_commit(tmp_path: Path) -> None:
    log = FileLog(tmp_path / "t-0", LogConfig(flush_interval_messages=1))
    batch = build_batch([(None, b"v")], timestamp_ms=1_700_000_000_000)
    log.append_unflushed(batch, 1)
    log.append_unflushed(batch, 2)
    assert log.flush_due() and log.unflushed_messages == 2

    async def scenario() -> Failures:
        return await GroupCommit().request([log])

    assert asyncio.run(scenario()) == {}
    assert not log.flush_due() and log.unflushed_messages == 0
    log.append(batch, 3)  # the inline rule is unchanged
    assert log.unflushed_messages == 0
    log.close()
