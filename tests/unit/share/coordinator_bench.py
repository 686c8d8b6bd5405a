"""A share coordinator over memory logs that survive restarts, for the share-coordinator tests."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from coordinator.assembly import share_state_runtime
from coordinator.log.memory_log import MemoryStorage
from coordinator.log.storage import PartitionLog
from coordinator.share.persister import PersisterStateBatch, ShareStateKey, StateWrite
from coordinator.share.share_coordinator import (
    DEFAULT_COLD_PARTITION_SNAPSHOT_INTERVAL_MS,
    DEFAULT_PRUNE_INTERVAL_MS,
    ShareCoordinator,
)
from coordinator.share.state_shard import ShareStateShard
from tests.unit.failover import FailoverBench
from tests.unit.faulty_log import FaultyLog
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import SHARE_GROUP_STATE_TOPIC
from txn.share_records import (
    ShareRecordKey,
    ShareRecordValue,
    ShareSnapshotValue,
    decode_record,
)
from txn.share_state import RecordState
from txn.txn_log import read_records

E = ErrorCode
AVAILABLE = int(RecordState.AVAILABLE)
ACQUIRED = int(RecordState.ACQUIRED)
ACKED = int(RecordState.ACKNOWLEDGED)
ARCHIVED = int(RecordState.ARCHIVED)
TOPIC = uuid.UUID("5d7c2a3e-9f10-4b6e-8c1a-2b3c4d5e6f70")
OTHER_TOPIC = uuid.UUID("0e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b")
KEY = ShareStateKey("group-1", TOPIC, 0)
PRUNE_MS = 300_000


def make_coordinator(
    clock: ManualClock,
    storage_open: Callable[[int], PartitionLog],
    config: BrokerConfig,
    *,
    topic_exists: Callable[[uuid.UUID, int], bool] | None = None,
    prune_interval_ms: int = DEFAULT_PRUNE_INTERVAL_MS,
    cold_partition_snapshot_interval_ms: int | None = DEFAULT_COLD_PARTITION_SNAPSHOT_INTERVAL_MS,
) -> ShareCoordinator:
    """A share coordinator as the broker builds it: a shard, the runtime owning it, the service."""
    shard = ShareStateShard(clock, config, topic_exists=topic_exists)
    return ShareCoordinator(
        share_state_runtime(shard),
        storage_open,
        prune_interval_ms=prune_interval_ms,
        cold_partition_snapshot_interval_ms=cold_partition_snapshot_interval_ms,
    )


def b(first: int, last: int, state: int, count: int) -> PersisterStateBatch:
    return PersisterStateBatch(first, last, state, count)


@dataclass
class Bench(FailoverBench[ShareCoordinator]):
    """One coordinator over memory logs that survive restarts."""

    partitions: int = 3
    per_snapshot: int = 500
    options: dict[str, object] = field(default_factory=dict)
    clock: ManualClock = field(default_factory=ManualClock)
    storage: MemoryStorage = field(default_factory=MemoryStorage)
    logs: dict[int, FaultyLog] = field(default_factory=dict)
    coordinator: ShareCoordinator = field(init=False)

    def __post_init__(self) -> None:
        self.coordinator = self.start()

    @property
    def config(self) -> BrokerConfig:
        return BrokerConfig(
            {
                "share.coordinator.state.topic.num.partitions": self.partitions,
                "share.coordinator.snapshot.update.records.per.snapshot": self.per_snapshot,
            }
        )

    def open(self, index: int) -> PartitionLog:
        log = self.logs.get(index)
        if log is None:
            log = self.logs[index] = FaultyLog(
                self.storage.open_log(SHARE_GROUP_STATE_TOPIC, index)
            )
        return log

    def start(self) -> ShareCoordinator:
        coordinator = make_coordinator(self.clock, self.open, self.config, **self.options)  # type: ignore[arg-type]
        coordinator.load()
        return coordinator

    def log_of(self, key: ShareStateKey) -> FaultyLog:
        return self.logs[self.coordinator.partition_for(key)]

    def records(
        self, key: ShareStateKey | None = None
    ) -> list[tuple[int, ShareRecordKey, ShareRecordValue | None]]:
        """Every record of the key's partition (all partitions if None), with its offset."""
        indexes = [self.coordinator.partition_for(key)] if key is not None else sorted(self.logs)
        out: list[tuple[int, ShareRecordKey, ShareRecordValue | None]] = []
        for index in indexes:
            log = self.logs[index]
            for header, batch in log.batches(log.log_start_offset):
                for delta, (raw_key, raw_value) in enumerate(read_records(batch)):
                    record_key, value = decode_record(raw_key, raw_value)
                    out.append((header.base_offset + delta, record_key, value))
        return out

    def total_records(self) -> int:
        return sum(log.log_end_offset for log in self.logs.values())

    def init(self, key: ShareStateKey = KEY, state_epoch: int = 0, start: int = -1) -> None:
        assert self.coordinator.initialize_state(key, state_epoch, start) is E.NONE

    def init_all(self, *keys: ShareStateKey) -> list[ShareStateKey]:
        for key in keys:
            self.init(key)
        return list(keys)

    def ack_each(self, offsets: range, key: ShareStateKey = KEY) -> None:
        """One update per offset, each acknowledging that offset (delivery count 1)."""
        for i in offsets:
            assert (
                self.coordinator.write_state(key, StateWrite(0, 0, -1, [b(i, i, ACKED, 1)]))
                is E.NONE
            )


def snapshot_epochs(bench: Bench, key: ShareStateKey = KEY) -> list[tuple[str, int]]:
    return [
        (
            "S" if isinstance(value, ShareSnapshotValue) else "U",
            value.snapshot_epoch,
        )
        for _, record_key, value in bench.records(key)
        if value is not None and record_key.group_id == key.group_id
    ]


def run_workload(bench: Bench) -> list[ShareStateKey]:
    keys = [ShareStateKey(f"g{i % 3}", TOPIC if i % 2 else OTHER_TOPIC, i) for i in range(12)]
    c = bench.coordinator
    for n, key in enumerate(keys):
        bench.init(key, state_epoch=1, start=n * 10)
        assert c.read_state(key, 1).error is E.NONE
        for step in range(n % 5):
            first = n * 10 + step * 2
            assert (
                c.write_state(key, StateWrite(1, 1, -1, [b(first, first + 1, ACKED, 1)])) is E.NONE
            )
            bench.clock.advance(10)
        if n % 4 == 3:
            assert c.write_state(
                key, StateWrite(1, 1, n * 10 + 3, [b(n * 10 + 8, n * 10 + 9, AVAILABLE, 2)])
            ) is (E.NONE)
        if n % 6 == 5:
            assert c.delete_state(key) is E.NONE
    return keys


def snapshot_of(
    coordinator: ShareCoordinator, keys: list[ShareStateKey]
) -> dict[ShareStateKey, object]:
    """What every public read says about ``keys`` (reading at the recorded leader epoch, so
    that the reads themselves write nothing)."""
    out: dict[ShareStateKey, object] = {}
    for key in keys:
        view = coordinator.state(key)
        epoch = view.leader_epoch if view is not None else 0
        out[key] = (
            view,
            coordinator.read_state(key, epoch),
            coordinator.read_state_summary(key, epoch),
        )
    return out
