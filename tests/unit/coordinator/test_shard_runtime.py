"""The CoordinatorRuntime every coordinator shard runs on: writes, replay, lifecycle."""

from __future__ import annotations

from dataclasses import dataclass, field

from coordinator.log.memory_log import MemoryLog
from coordinator.shard_runtime import ControlMarker, CoordinatorResult, CoordinatorRuntime, Record
from tests.unit.faulty_log import FaultyLog
from txn.batch import build_batch
from txn.clock import ManualClock
from txn.errors import ErrorCode


class TextCodec:
    """Records are strings; a key of b"bad" does not decode."""

    def encode(self, record: str) -> Record:
        if not record:
            raise ValueError("empty record")
        return record.encode(), None

    def decode(self, key: bytes | None, value: bytes | None) -> str:
        if key is None or key == b"bad":
            raise ValueError("unreadable")
        return key.decode()


@dataclass
class OwnedShard:
    """Replay is the only mutation: ``seen`` grows only there."""

    seen: list[tuple[int, int, int, str]] = field(default_factory=list)
    markers: list[tuple[int, int, bool]] = field(default_factory=list)

    @property
    def codec(self) -> TextCodec:
        return TextCodec()

    def replay(
        self, partition: int, offset: int, producer_id: int, producer_epoch: int, record: str
    ) -> None:
        self.seen.append((partition, offset, producer_id, record))

    def replay_marker(
        self, partition: int, producer_id: int, producer_epoch: int, commit: bool
    ) -> None:
        self.markers.append((partition, producer_id, commit))

    def put(
        self, *records: str, producer: tuple[int, int] | None = None
    ) -> CoordinatorResult[str, str]:
        return CoordinatorResult(records, f"put {len(self.seen)}", producer=producer)


def test_an_owned_shard_changes_only_by_replay_live_and_on_load() -> None:
    clock = ManualClock(1_000)
    log = FaultyLog(MemoryLog())
    runtime = CoordinatorRuntime(clock, "owned", {0: log}, shard=OwnedShard())
    assert runtime.write(0, lambda s: s.put("a")) is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    runtime.load(logs=iter([(0, log)]))

    # The operation sees the state before its records; they are replayed once durable.
    assert runtime.write(0, lambda s: s.put("a", "b")) == "put 0"
    assert runtime.write(0, lambda s: s.put()) == "put 2"  # nothing to write: no append
    assert runtime.shard.seen == [(0, 0, -1, "a"), (0, 1, -1, "b")]
    log.flush_failures.append(OSError("disk gone"))
    assert runtime.write(0, lambda s: s.put("lost")) is ErrorCode.NOT_COORDINATOR
    assert runtime.write(0, lambda s: s.put("")) is ErrorCode.INVALID_REQUEST  # cannot encode
    assert len(runtime.shard.seen) == 2 and log.log_end_offset == 2
    assert runtime.write(0, lambda s: s.put("t", producer=(7, 1))) == "put 2"
    marker = ControlMarker(commit=False, producer_id=7, producer_epoch=1, coordinator_epoch=0)
    assert runtime.write(0, lambda s: CoordinatorResult((), "marked", marker=marker)) == "marked"
    assert runtime.shard.markers == [(0, 7, False)]
    log.inner.append(build_batch([(b"bad", None), (b"c", None)], timestamp_ms=0), 0)

    # A fresh shard loaded from the log ends where the live one is (minus the unreadable).
    restarted = CoordinatorRuntime(clock, "owned", shard=OwnedShard())
    restarted.load(logs=iter([(0, log.inner)]))
    assert restarted.shard.seen == [*runtime.shard.seen, (0, 5, -1, "c")]
    assert restarted.shard.markers == runtime.shard.markers


def test_unflushed_writes_are_replayed_once_durable_in_log_order() -> None:
    clock = ManualClock(1_000)
    log = MemoryLog()
    runtime = CoordinatorRuntime(clock, "owned", {0: log}, shard=OwnedShard())
    runtime.load()
    durable: list[str] = []
    for name in ("a", "b", "c"):
        response = runtime.write(
            0, lambda s, n=name: s.put(n), flush=False, on_durable=lambda n=name: durable.append(n)
        )
        assert response == "put 0"  # answered at once, replayed later
    assert runtime.shard.seen == [] and log.log_end_offset == 3
    runtime.replay_unflushed(1)  # durable up to the second
    assert [r for _p, _o, _pid, r in runtime.shard.seen] == ["a", "b"] and durable == ["a", "b"]
    runtime.drop_unflushed(2)  # its sync failed
    runtime.replay_unflushed()
    assert len(runtime.shard.seen) == 2
    runtime.write(0, lambda s: s.put("d"), flush=False)
    # A flushing write makes the unflushed records before it durable: replayed first.
    assert runtime.write(0, lambda s: s.put("e")) == "put 2"
    assert [r for _p, _o, _pid, r in runtime.shard.seen] == ["a", "b", "d", "e"]
    assert [o for _p, o, _pid, _r in runtime.shard.seen] == [0, 1, 3, 4]


def test_lifecycle_load_in_progress_periodic_jobs_and_close() -> None:
    clock = ManualClock(1_000)
    runtime = CoordinatorRuntime(clock, "owned", shard=OwnedShard())
    assert runtime.availability() is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    runtime.load(iter([(0, MemoryLog())]))
    assert runtime.availability() is ErrorCode.NONE
    runs: list[int] = []
    runtime.schedule_periodic("job", 100, lambda: runs.append(clock.now_ms()))
    clock.advance(250)
    runtime.close()
    clock.advance(500)
    assert runs == [1_100, 1_200]
    assert runtime.availability() is ErrorCode.COORDINATOR_NOT_AVAILABLE


class FlushCountingLog(FaultyLog):
    """The log end at each flush."""

    def __init__(self, inner: MemoryLog) -> None:
        super().__init__(inner)
        self.flushed_at: list[int] = []

    def flush(self) -> None:
        super().flush()
        self.flushed_at.append(self.inner.log_end_offset)


def test_lazy_writes_replay_at_once_and_become_durable_with_the_next_flush() -> None:
    clock = ManualClock(1_000)
    log = FlushCountingLog(MemoryLog())
    flushes = log.flushed_at
    runtime = CoordinatorRuntime(clock, "owned", {0: log}, shard=OwnedShard())
    runtime.load()
    assert runtime.write(0, lambda s: s.put("a"), lazy=True) == "put 0"
    assert [r for _p, _o, _pid, r in runtime.shard.seen] == ["a"] and flushes == []
    assert runtime.write(0, lambda s: s.put("b")) == "put 1"
    assert flushes == [2]  # one fsync covers both
    # With a deferred write waiting for its replay, a lazy write flushes, keeping log order.
    runtime.write(0, lambda s: s.put("c"), flush=False)
    assert runtime.write(0, lambda s: s.put("d"), lazy=True) == "put 2"
    assert flushes == [2, 4]
    assert [r for _p, _o, _pid, r in runtime.shard.seen] == ["a", "b", "c", "d"]
