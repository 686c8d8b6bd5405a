"""The CoordinatorRuntime every coordinator shard runs on: writes, replay, lifecycle."""

from __future__ import annotations

from dataclasses import dataclass, field

from coordinator.log.memory_log import MemoryLog
from coordinator.shard_runtime import (
    ControlMarker,
    CoordinatorResult,
    CoordinatorRuntime,
    CoordinatorShard,
    LoadedRecord,
    Record,
    UnownedRuntime,
)
from tests.unit.faulty_log import FaultyLog
from txn.batch import BatchHeader, build_batch
from txn.clock import ManualClock
from txn.errors import ErrorCode


@dataclass
class Shard(CoordinatorShard):
    records: list[tuple[int, int, bytes | None, bool]] = field(default_factory=list)
    markers: list[tuple[int, int, bool]] = field(default_factory=list)

    def replay(self, record: LoadedRecord) -> None:
        transactional = record.header.is_transactional
        self.records.append((record.partition, record.offset, record.key, transactional))

    def replay_marker(self, partition: int, header: BatchHeader, commit: bool) -> None:
        self.markers.append((partition, header.producer_id, commit))


def test_writes_apply_or_revert_and_load_replays_what_was_written() -> None:
    clock = ManualClock(1_000)
    log = FaultyLog(MemoryLog())
    runtime: UnownedRuntime = CoordinatorRuntime(clock, "state", {0: log})
    applied: list[int] = []
    reverted: list[str] = []

    def result(
        *keys: bytes, producer: tuple[int, int] | None = None
    ) -> CoordinatorResult[Record, str]:
        return CoordinatorResult(
            [(k, b"v") for k in keys],
            "done",
            apply=applied.append,
            revert=lambda: reverted.append("reverted"),
            producer=producer,
        )

    assert runtime.write_result(0, result(b"a", b"b")) == "done"
    assert applied == [0]  # applied at its base offset, once durable
    log.flush_failures.append(OSError("disk gone"))
    # a storage error, mapped
    assert runtime.write_result(0, result(b"lost")) is ErrorCode.NOT_COORDINATOR
    assert reverted == ["reverted"]
    assert log.log_end_offset == 2  # the unflushed batch was truncated away
    assert runtime.write_result(0, result(b"t", producer=(7, 1))) == "done"
    marker = ControlMarker(commit=True, producer_id=7, producer_epoch=1, coordinator_epoch=0)
    assert runtime.write_result(0, CoordinatorResult((), "marked", marker=marker)) == "marked"
    assert applied == [0, 2]

    # A restart: the same log replayed through the shard, records and markers in order.
    restarted: UnownedRuntime = CoordinatorRuntime(clock, "state")
    assert restarted.availability() is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    shard = Shard()
    restarted.load(shard, iter([(0, log.inner)]))
    assert shard.records == [(0, 0, b"a", False), (0, 1, b"b", False), (0, 2, b"t", True)]
    assert shard.markers == [(0, 7, True)]
    assert restarted.availability() is ErrorCode.NONE

    # Periodic jobs run until close; a closed runtime answers NOT_AVAILABLE.
    runs: list[int] = []
    restarted.schedule_periodic("job", 100, lambda: runs.append(clock.now_ms()))
    clock.advance(250)
    restarted.close()
    clock.advance(500)
    assert runs == [1_100, 1_200]
    assert restarted.availability() is ErrorCode.COORDINATOR_NOT_AVAILABLE


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
