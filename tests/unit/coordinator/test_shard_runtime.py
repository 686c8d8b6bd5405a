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
)
from tests.unit.faulty_log import FaultyLog
from txn.batch import BatchHeader
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
    runtime = CoordinatorRuntime(clock, "state", {0: log})
    applied: list[int] = []
    reverted: list[str] = []

    def result(*keys: bytes, producer: tuple[int, int] | None = None) -> CoordinatorResult[str]:
        return CoordinatorResult(
            [(k, b"v") for k in keys],
            "done",
            apply=applied.append,
            revert=lambda: reverted.append("reverted"),
            producer=producer,
        )

    assert runtime.write(0, result(b"a", b"b")) == "done"
    assert applied == [0]  # applied at its base offset, once durable
    log.flush_failures.append(OSError("disk gone"))
    assert runtime.write(0, result(b"lost")) is ErrorCode.NOT_COORDINATOR  # storage error, mapped
    assert reverted == ["reverted"]
    assert log.log_end_offset == 2  # the unflushed batch was truncated away
    assert runtime.write(0, result(b"t", producer=(7, 1))) == "done"
    marker = ControlMarker(commit=True, producer_id=7, producer_epoch=1, coordinator_epoch=0)
    assert runtime.write(0, CoordinatorResult((), "marked", marker=marker)) == "marked"
    assert applied == [0, 2]

    # A restart: the same log replayed through the shard, records and markers in order.
    restarted = CoordinatorRuntime(clock, "state")
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
