"""The share coordinator's keys and state partitions: Kafka's coordinator-key hashing, the
per-key state and staged transactional updates, and the conversions to persister batches."""

from __future__ import annotations

import base64
import functools
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from coordinator.share.persister import (
    PersisterStateBatch,
    ShareStateKey,
)
from txn.errors import ErrorCode
from txn.limits import INT32_MIN
from txn.share_records import (
    ShareUpdateValue,
    StateBatch,
)

UNINITIALIZED_START_OFFSET = -1
# What InitializeShareGroupState records as the leader epoch (Kafka's
# ShareGroupOffset.UNINITIALIZED_EPOCH), and what ReadShareGroupStateSummary reports for a key
# with no state (PartitionFactory.DEFAULT_STATE_EPOCH / DEFAULT_LEADER_EPOCH).
INITIAL_LEADER_EPOCH = 0
DEFAULT_STATE_EPOCH = 0
DEFAULT_LEADER_EPOCH = 0
NO_EPOCH = -1  # a request's "not supplied" epoch: skips the fencing check of writes


def kafka_uuid_string(topic_id: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode("ascii")


def coordinator_key(key: ShareStateKey) -> str:
    """Kafka's ``SharePartitionKey.asCoordinatorKey()``: ``"{group}:{topicId}:{partition}"``.

    The topic id is in Kafka's base64 form, as in FindCoordinator key type SHARE.
    """
    return f"{key.group_id}:{kafka_uuid_string(key.topic_id)}:{key.partition}"


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()`` (31-polynomial over UTF-16 code units, signed 32-bit)."""
    value = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for index in range(0, len(data), 2):
        value = (31 * value + ((data[index] << 8) | data[index + 1])) & 0xFFFFFFFF
    return value - 0x1_0000_0000 if value & 0x8000_0000 else value


def partition_for_coordinator_key(key: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(key.hashCode()) % numPartitions``: stable across processes."""
    value = java_string_hash(key)
    value = 0 if value == INT32_MIN else abs(value)
    return value % num_partitions


@functools.lru_cache(maxsize=4096)
def partition_for(key: ShareStateKey, num_partitions: int) -> int:
    """The ``__share_group_state`` partition of a share partition's state (as Kafka)."""
    return partition_for_coordinator_key(coordinator_key(key), num_partitions)


# --- state -----------------------------------------------------------------------------------


class ShareStateView(NamedTuple):
    """A read-only copy of one key's state (for tests, admin and the recovery tool)."""

    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[PersisterStateBatch, ...]
    snapshot_epoch: int


@dataclass
class KeyState:
    """One share partition's state, as the records in the log describe it."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[PersisterStateBatch, ...]
    create_timestamp: int
    write_timestamp: int
    # The highest epochs any record of this key carried (Kafka's leaderEpochMap and
    # stateEpochMap): requests are fenced against these, not against the current value.
    fence_leader_epoch: int
    fence_state_epoch: int
    # ShareUpdate records applied since the latest ShareSnapshot.
    update_count: int
    # Log offset of the latest ShareSnapshot: everything before it is redundant for this key.
    snapshot_offset: int
    # First offset of a committed transactional batch materialized into this state after its
    # latest snapshot: until a new snapshot holds it, replay needs the log from there.
    materialized_floor: int | None = None
    # KIP-1226: the records at or above the start offset whose delivery is complete, as the
    # share partition last wrote it (-1: not written yet).
    delivery_complete_count: int = -1
    # The position share.auto.offset.reset chose, recorded while start_offset is still -1 (so
    # a restart resumes there); -1: none.
    reset_offset: int = -1

    @property
    def effective_start(self) -> int:
        """Where a share partition resumes: the start offset, else the recorded reset one."""
        return self.start_offset if self.start_offset >= 0 else self.reset_offset


@dataclass
class PendingTxnUpdates:
    """KIP-1289: one producer's uncommitted share-state updates in one state partition.

    A TxnShareAcknowledge is appended as a *transactional* batch (the producer id and epoch
    in its header) of ShareUpdate records whose batches carry the target delivery state of
    each acknowledged range.  Applying it stages the update here instead of merging it; the
    COMMIT marker overlays ``updates`` onto the states (replacing what was there, because the
    acknowledgement decides those offsets even where the merge rule's higher delivery count
    would hide it — DESIGN §4.6), ABORT drops them.  ``first_offset`` is the offset of the
    producer's first staged record: pruning keeps everything from there.
    """

    producer_epoch: int
    first_offset: int
    updates: dict[ShareStateKey, list[ShareUpdateValue]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class MarkerOutcome:
    """What a transaction marker did in one state partition."""

    error: ErrorCode
    keys: tuple[ShareStateKey, ...] = ()
    applied: bool = False  # False: no pending acks of that producer/epoch (a no-op marker)


@dataclass
class StatePartition:
    index: int
    states: dict[ShareStateKey, KeyState] = field(default_factory=dict)
    # KIP-1289: producer id -> staged transactional updates.
    pending_txn: dict[int, PendingTxnUpdates] = field(default_factory=dict)


def to_state_records(batches: Iterable[PersisterStateBatch]) -> tuple[StateBatch, ...]:
    return tuple(
        StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        for b in batches
    )


def from_state_records(batches: Iterable[StateBatch]) -> tuple[PersisterStateBatch, ...]:
    return tuple(
        PersisterStateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        for b in batches
    )


_TERMINAL_STATES = frozenset({2, 4})  # ACKNOWLEDGED, ARCHIVED


def terminal_count(start: int, batches: Sequence[PersisterStateBatch]) -> int:
    """The ACKNOWLEDGED/ARCHIVED offsets of ``batches`` at or above ``start``."""
    return sum(
        batch.last_offset - max(batch.first_offset, start) + 1
        for batch in batches
        if batch.last_offset >= start and batch.delivery_state in _TERMINAL_STATES
    )


def past_terminal_prefix(start: int, batches: Sequence[PersisterStateBatch]) -> int:
    """The first offset at or after ``start`` not covered by an ACKNOWLEDGED/ARCHIVED batch."""
    for batch in sorted(batches, key=lambda b: b.first_offset):
        if batch.last_offset < start:
            continue
        if batch.first_offset > start or batch.delivery_state not in _TERMINAL_STATES:
            break
        start = batch.last_offset + 1
    return start
