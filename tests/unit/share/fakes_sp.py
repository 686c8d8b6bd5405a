"""Test doubles and builders for share-partition tests.

``FakePersister`` is an in-memory fake of the persister seam: it records every
call (so tests can assert the exact WriteShareGroupState batches), can be told
to fail, can run a hook inside a write (re-entrancy), and keeps a merged view
of the durable state (last write wins per offset, pruned below the start
offset) so a new share partition can be loaded from it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from coordinator.log.memory_log import MemoryLog
from coordinator.partition import Partition
from coordinator.share.persister import (
    PersisterStateBatch,
    ReadStateResult,
    ShareStateKey,
    StateSummary,
    StateWrite,
)
from coordinator.share.share_partition import (
    AckBatch,
    AcquireResult,
    SharePartition,
    SharePartitionConfig,
)
from coordinator.share.state_combiner import coalesce
from txn.batch import ControlType, build_batch
from txn.clock import ManualClock
from txn.errors import ErrorCode
from txn.ids import TopicPartition
from txn.share_state import AcknowledgeType, RecordState

GROUP = "g1"
TOPIC_ID = uuid.UUID(int=0x5EED)
TP = TopicPartition("orders", 0)
KEY = ShareStateKey(GROUP, TOPIC_ID, 0)
NOW = 1_700_000_000_000

AVAILABLE = RecordState.AVAILABLE
ACQUIRED = RecordState.ACQUIRED
ACKNOWLEDGED = RecordState.ACKNOWLEDGED
ARCHIVED = RecordState.ARCHIVED
TX_PENDING = RecordState.TX_PENDING

GAP = int(AcknowledgeType.GAP)
ACCEPT = int(AcknowledgeType.ACCEPT)
RELEASE = int(AcknowledgeType.RELEASE)
REJECT = int(AcknowledgeType.REJECT)
RENEW = int(AcknowledgeType.RENEW)


@dataclass(frozen=True)
class WriteCall:
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[tuple[int, int, int, int], ...]  # (first, last, state, dc)
    # Not compared: tests check it where it matters.
    delivery_complete_count: int = field(default=-1, compare=False)
    reset_offset: int = field(default=-1, compare=False)


def sb(first: int, last: int, state: RecordState, dc: int) -> tuple[int, int, int, int]:
    """A state batch as a plain tuple, for comparisons."""
    return (first, last, int(state), dc)


@dataclass
class FakePersister:
    """In-memory persister; every call is recorded."""

    state_epoch: int = 0
    start_offset: int = -1
    reset_offset: int = -1  # recorded while start_offset is -1
    delivery_complete_count: int = -1
    offsets: dict[int, tuple[int, int]] = field(default_factory=dict)  # offset -> (state, dc)
    read_error: ErrorCode = ErrorCode.NONE
    write_errors: list[ErrorCode] = field(default_factory=list)  # next writes answer these
    write_error: ErrorCode = ErrorCode.NONE  # every write answers this (after write_errors)
    on_write: Callable[[], None] | None = None  # runs inside write_state
    writes: list[WriteCall] = field(default_factory=list)
    reads: list[int] = field(default_factory=list)  # leader epochs read with
    raw_batches: list[PersisterStateBatch] | None = None  # read_state returns these verbatim

    @classmethod
    def with_state(
        cls,
        start_offset: int,
        batches: Iterable[tuple[int, int, RecordState, int]] = (),
        state_epoch: int = 0,
    ) -> FakePersister:
        fake = cls(state_epoch=state_epoch, start_offset=start_offset)
        for first, last, state, dc in batches:
            for offset in range(first, last + 1):
                fake.offsets[offset] = (int(state), dc)
        return fake

    # -- the Persister protocol ---------------------------------------------------------------

    def initialize_state(
        self, key: ShareStateKey, state_epoch: int, start_offset: int
    ) -> ErrorCode:
        self.state_epoch = state_epoch
        self.start_offset = start_offset
        self.reset_offset = -1
        self.delivery_complete_count = -1 if start_offset < 0 else 0
        self.offsets.clear()
        return ErrorCode.NONE

    def read_state(self, key: ShareStateKey, leader_epoch: int) -> ReadStateResult:
        assert key == KEY
        self.reads.append(leader_epoch)
        if self.read_error is not ErrorCode.NONE:
            return ReadStateResult(self.read_error)
        batches = self.raw_batches if self.raw_batches is not None else self.persisted()
        start = self.start_offset if self.start_offset >= 0 else self.reset_offset
        return ReadStateResult(ErrorCode.NONE, self.state_epoch, start, tuple(batches))

    def write_state(self, key: ShareStateKey, write: StateWrite) -> ErrorCode:
        assert key == KEY
        batches = [
            (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in write.batches
        ]
        self.writes.append(
            WriteCall(
                write.state_epoch,
                write.leader_epoch,
                write.start_offset,
                tuple(batches),
                write.delivery_complete_count,
                write.reset_offset,
            )
        )
        if self.on_write is not None:
            hook, self.on_write = self.on_write, None
            hook()
        if self.write_errors:
            return self.write_errors.pop(0)
        if self.write_error is not ErrorCode.NONE:
            return self.write_error
        if write.reset_offset >= 0:
            self.reset_offset = write.reset_offset
        if write.start_offset >= self.start_offset:
            self.delivery_complete_count = write.delivery_complete_count
        self.merge(write.start_offset, batches)
        return ErrorCode.NONE

    def delete_state(self, key: ShareStateKey) -> ErrorCode:
        self.start_offset = -1
        self.reset_offset = -1
        self.delivery_complete_count = -1
        self.offsets.clear()
        return ErrorCode.NONE

    def read_state_summary(self, key: ShareStateKey, leader_epoch: int) -> StateSummary:
        return StateSummary(
            ErrorCode.NONE,
            self.state_epoch,
            leader_epoch,
            self.start_offset,
            self.delivery_complete_count,
        )

    # -- the durable view -----------------------------------------------------------------------

    def merge(self, start_offset: int, batches: Iterable[tuple[int, int, int, int]]) -> None:
        if start_offset >= 0:
            self.start_offset = max(self.start_offset, start_offset)
        for first, last, state, dc in batches:
            for offset in range(first, last + 1):
                self.offsets[offset] = (state, dc)
        for offset in [o for o in self.offsets if o < self.start_offset]:
            del self.offsets[offset]

    def persisted(self) -> list[PersisterStateBatch]:
        """The durable view as state batches: equal neighbouring offsets joined."""
        return coalesce(
            PersisterStateBatch(offset, offset, state, dc)
            for offset, (state, dc) in sorted(self.offsets.items())
        )

    @property
    def last_write(self) -> WriteCall:
        return self.writes[-1]


# -- data logs ------------------------------------------------------------------------------------


class DataLog:
    """A data partition on a MemoryLog with builders for plain and transactional batches."""

    def __init__(self) -> None:
        self.partition = Partition(TP, MemoryLog())
        self._seq: dict[int, int] = {}

    def append(self, n: int = 5) -> tuple[int, int]:
        """A plain batch of ``n`` records; (first, last) offsets."""
        raw = build_batch([(None, f"v{i}".encode()) for i in range(n)], timestamp_ms=NOW)
        result = self.partition.append(raw, NOW)
        assert result.error is ErrorCode.NONE, result
        return result.base_offset, result.base_offset + n - 1

    def append_batches(self, *sizes: int) -> list[tuple[int, int]]:
        return [self.append(n) for n in sizes]

    def pad_to(self, offset: int) -> None:
        """Fill the log with one batch up to ``offset`` (exclusive)."""
        missing = offset - self.partition.high_watermark
        if missing > 0:
            self.append(missing)

    def append_txn(self, pid: int, n: int = 5, epoch: int = 0) -> tuple[int, int]:
        """A transactional batch of ``n`` records from producer ``pid``."""
        seq = self._seq.get(pid, 0)
        raw = build_batch(
            [(None, f"t{pid}-{seq + i}".encode()) for i in range(n)],
            timestamp_ms=NOW,
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
            transactional=True,
        )
        self._seq[pid] = seq + n
        result = self.partition.append(raw, NOW, transactional_id=f"tx-{pid}")
        assert result.error is ErrorCode.NONE, result
        return result.base_offset, result.base_offset + n - 1

    def end_txn(self, pid: int, commit: bool, epoch: int = 0) -> int:
        """Write the COMMIT/ABORT marker; its offset."""
        offset = self.partition.high_watermark
        ctype = ControlType.COMMIT if commit else ControlType.ABORT
        assert self.partition.write_marker(pid, epoch, 0, ctype, NOW) is ErrorCode.NONE
        return offset


# -- share partitions -----------------------------------------------------------------------------


class Events:
    """Collects ``on_event`` calls."""

    def __init__(self) -> None:
        self.totals: dict[str, int] = {}

    def __call__(self, kind: str, count: int) -> None:
        self.totals[kind] = self.totals.get(kind, 0) + count

    def get(self, kind: str) -> int:
        return self.totals.get(kind, 0)


def make_sp(
    log: DataLog,
    persister: FakePersister | None = None,
    clock: ManualClock | None = None,
    config: SharePartitionConfig | None = None,
    events: Events | None = None,
    *,
    initialize: bool = True,
) -> SharePartition:
    sp = SharePartition(
        GROUP,
        TOPIC_ID,
        TP,
        log.partition,
        persister if persister is not None else FakePersister(),
        clock if clock is not None else ManualClock(NOW),
        config,
        on_event=events,
    )
    if initialize:
        assert sp.maybe_initialize() is ErrorCode.NONE
    return sp


class Rig(NamedTuple):
    """A share partition with its data log, persister and clock."""

    log: DataLog
    persister: FakePersister
    clock: ManualClock
    sp: SharePartition


def rig(
    *sizes: int,
    start: int = 0,
    config: SharePartitionConfig | None = None,
    events: Events | None = None,
) -> Rig:
    """A share partition whose persister knows only the start offset ``start``, over a log
    padded up to ``start`` and then given one batch of each of ``sizes`` records."""
    log = DataLog()
    log.pad_to(start)
    log.append_batches(*sizes)
    persister = FakePersister.with_state(start)
    clock = ManualClock(NOW)
    return Rig(log, persister, clock, make_sp(log, persister, clock, config, events))


def ack(first: int, last: int, *types: int) -> AckBatch:
    return AckBatch(first, last, list(types))


def ranges(result: AcquireResult) -> list[tuple[int, int, int]]:
    """The acquired ranges of an AcquireResult as plain tuples."""
    assert result.error is ErrorCode.NONE, result.error
    return [(r.first_offset, r.last_offset, r.delivery_count) for r in result.acquired]


def states(sp: SharePartition, first: int, last: int) -> list[tuple[RecordState, int, str] | None]:
    return [sp.record_state(o) for o in range(first, last + 1)]


def snapshot(sp: SharePartition) -> tuple[object, ...]:
    """Everything observable about a share partition, to assert that nothing changed."""
    return (
        sp.start_offset,
        sp.end_offset,
        sp.next_fetch_offset,
        sp.in_flight_count,
        tuple(sp.state_batches()),
        tuple(sp.record_state(o) for o in range(sp.start_offset, sp.end_offset)),
    )
