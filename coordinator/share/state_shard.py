"""The ``__share_group_state`` shard: share-partition state, its operations and its replay.

The shard holds the state of every state partition and nothing else: no log, no runtime.  Its
operations validate a request against that state and return a ``CoordinatorResult`` -- the
typed ``ShareStateRecord``s that make the change and the answer once they are durable --
without changing anything.  The ``CoordinatorRuntime`` that owns the shard encodes the records
(``ShareStateCodec``), appends and flushes them, and only then calls ``replay``: the one place
the state changes, for live writes and on load alike.

**Records.**  ``txn.share_records``: a ShareSnapshot carries the whole state, a ShareUpdate the
batches of one write (merged on replay with ``state_combiner.combine``), a null value is a
tombstone.  After ``share.coordinator.snapshot.update.records.per.snapshot`` updates of a key,
its next write is a snapshot instead.  A key is fenced against the highest leader and state
epoch its records carried (Kafka's leaderEpochMap / stateEpochMap); a snapshot carries those
fences too where they are higher than its own epochs (tagged fields), so a shard reloaded after
pruning has cut the records that raised them fences exactly as the live one does.

**KIP-1289.**  Transactional share acknowledgements are pid-tagged (transactional) ShareUpdate
batches.  Replay does not merge them: they are staged per producer id in
``StatePartition.pending_txn`` and materialized or discarded when the COMMIT/ABORT control
marker for that producer is replayed (mirroring ``pendingTransactionalOffsets`` of the group
coordinator).

Protocol errors are returned (``ErrorCode`` / result dataclasses), never raised.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from coordinator.shard_runtime import ControlMarker, CoordinatorResult, Record
from coordinator.share.persister import (
    PersisterStateBatch,
    ReadStateResult,
    ShareStateKey,
    StateSummary,
    StateWrite,
)
from coordinator.share.state_combiner import NO_START_OFFSET, combine, overlay
from coordinator.share.state_partitions import (
    DEFAULT_LEADER_EPOCH,
    DEFAULT_STATE_EPOCH,
    INITIAL_LEADER_EPOCH,
    NO_EPOCH,
    UNINITIALIZED_START_OFFSET,
    KeyState,
    MarkerOutcome,
    PendingTxnUpdates,
    ShareStateView,
    StatePartition,
    coordinator_key,
    from_state_records,
    partition_for,
    past_terminal_prefix,
    terminal_count,
    to_state_records,
)
from txn.clock import Clock
from txn.config import BrokerConfig
from txn.errors import ErrorCode, InvalidConfigError
from txn.ids import NO_PRODUCER_ID, SHARE_GROUP_STATE_TOPIC
from txn.limits import INT8 as _INT8
from txn.limits import INT16 as _INT16
from txn.limits import INT32 as _INT32
from txn.limits import LONG_MAX as _INT64_MAX
from txn.limits import in_range as _in_range
from txn.share_records import (
    ShareRecordKey,
    ShareRecordType,
    ShareRecordValue,
    ShareSnapshotValue,
    ShareUpdateValue,
    decode_record,
    encode_record,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ShareStateRecord:
    """One record of a state partition: its key, and a snapshot, an update or a tombstone."""

    key: ShareRecordKey
    value: ShareRecordValue | None

    @staticmethod
    def of(key: ShareStateKey, value: ShareRecordValue | None) -> ShareStateRecord:
        """The record of ``value`` for ``key`` (tombstones are keyed as snapshots)."""
        record_type = (
            ShareRecordType.SHARE_UPDATE
            if isinstance(value, ShareUpdateValue)
            else ShareRecordType.SHARE_SNAPSHOT
        )
        return ShareStateRecord(
            ShareRecordKey(record_type, key.group_id, key.topic_id, key.partition), value
        )

    @property
    def state_key(self) -> ShareStateKey:
        return ShareStateKey(self.key.group_id, self.key.topic_id, self.key.partition)


class ShareStateCodec:
    """``ShareStateRecord`` <-> log records (``txn.share_records``); errors are ValueErrors."""

    def encode(self, record: ShareStateRecord) -> Record:
        return encode_record(record.key, record.value)

    def decode(self, key: bytes | None, value: bytes | None) -> ShareStateRecord:
        record_key, record_value = decode_record(key, value)
        return ShareStateRecord(record_key, record_value)


_CODEC = ShareStateCodec()

Result = CoordinatorResult[ShareStateRecord, ErrorCode]


def _answer(error: ErrorCode) -> Result:
    """A result that writes nothing."""
    return CoordinatorResult((), error)


class ShareStateShard:
    """The state of every ``__share_group_state`` partition (Kafka's ShareCoordinatorShard)."""

    def __init__(
        self,
        clock: Clock,
        config: BrokerConfig,
        *,
        topic_exists: Callable[[uuid.UUID, int], bool] | None = None,
    ) -> None:
        """``topic_exists(topic_id, partition)`` is the metadata check (Kafka's metadata
        image); None accepts every topic partition."""
        self._clock = clock
        self._num_partitions = config.get_int("share.coordinator.state.topic.num.partitions")
        self._updates_per_snapshot = config.get_int(
            "share.coordinator.snapshot.update.records.per.snapshot"
        )
        if self._num_partitions < 1:
            raise InvalidConfigError(
                "share.coordinator.state.topic.num.partitions must be at least 1"
            )
        if not 0 <= self._updates_per_snapshot <= 500:
            raise InvalidConfigError(
                "share.coordinator.snapshot.update.records.per.snapshot must be in [0, 500]"
            )
        self._topic_exists = topic_exists
        self._partitions: dict[int, StatePartition] = {}

    @property
    def codec(self) -> ShareStateCodec:
        return _CODEC

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def num_partitions(self) -> int:
        return self._num_partitions

    def partition_for(self, key: ShareStateKey) -> int:
        """``java_string_hash(coordinator_key(key))`` (abs) modulo the partition count."""
        return partition_for(key, self._num_partitions)

    # --- loading ------------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget every partition (a load starts from nothing)."""
        self._partitions = {}

    def add_partition(self, index: int) -> None:
        """An empty state partition, before its log is replayed."""
        self._partitions[index] = StatePartition(index)

    def partitions(self) -> list[int]:
        return list(self._partitions)

    # --- operations: validate, build the records, change nothing ------------------------------

    def initialize_state(self, key: ShareStateKey, state_epoch: int, start_offset: int) -> Result:
        """InitializeShareGroupState: a fresh snapshot (no merge), snapshot epoch +1 or 0.

        A state epoch below the recorded one is FENCED_STATE_EPOCH (-1 skips the check, as in
        Kafka).  The leader epoch is recorded as 0; batches are cleared; the delivery complete
        count is -1 for start offset -1 (nothing read yet), else 0 (Kafka's ShareGroupOffset).
        """
        if (error := self._check_key(key)) is not None:
            return _answer(error)
        if not _in_range(state_epoch, _INT32) or not -1 <= start_offset <= _INT64_MAX:
            return _answer(ErrorCode.INVALID_REQUEST)
        entry = self._entry(key)
        if state_epoch != NO_EPOCH and entry is not None and entry.fence_state_epoch > state_epoch:
            return _answer(ErrorCode.FENCED_STATE_EPOCH)
        if not self._known_topic(key):
            return _answer(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        now = self._clock.now_ms()
        value = ShareSnapshotValue(
            snapshot_epoch=entry.snapshot_epoch + 1 if entry is not None else 0,
            state_epoch=state_epoch,
            leader_epoch=INITIAL_LEADER_EPOCH,
            start_offset=start_offset,
            create_timestamp=now,
            write_timestamp=now,
            delivery_complete_count=-1 if start_offset == UNINITIALIZED_START_OFFSET else 0,
        )
        return _write(key, _with_fences(value, entry))

    def read_state(
        self, key: ShareStateKey, leader_epoch: int
    ) -> CoordinatorResult[ShareStateRecord, ReadStateResult]:
        """ReadShareGroupState.

        An uninitialized key is INVALID_REQUEST (the share partition must wait for the group's
        InitializeShareGroupState).  A leader epoch below the highest recorded one is
        FENCED_LEADER_EPOCH -- including -1 once an epoch is recorded, as in Kafka, so callers
        must send their real (>= 0) leader epoch.  A higher epoch is recorded with a write
        before the state is returned.  While the start offset is -1, the start answered is the
        recorded reset position (-1 if none: ``share.auto.offset.reset`` applies).
        """
        if (error := self._check_key(key)) is not None:
            return CoordinatorResult((), ReadStateResult(error))
        if not _in_range(leader_epoch, _INT32):
            bad = ReadStateResult(ErrorCode.INVALID_REQUEST, error_message="bad leader epoch")
            return CoordinatorResult((), bad)
        entry = self._entry(key)
        if entry is None:
            uninitialized = ReadStateResult(
                ErrorCode.INVALID_REQUEST,
                error_message=f"share partition {coordinator_key(key)} is not initialized",
            )
            return CoordinatorResult((), uninitialized)
        if entry.fence_leader_epoch > leader_epoch:
            return CoordinatorResult((), ReadStateResult(ErrorCode.FENCED_LEADER_EPOCH))
        if not self._known_topic(key):
            return CoordinatorResult((), ReadStateResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        result = ReadStateResult(
            ErrorCode.NONE,
            state_epoch=entry.state_epoch,
            start_offset=entry.effective_start,
            batches=entry.batches,
        )
        if leader_epoch in (NO_EPOCH, entry.fence_leader_epoch):
            return CoordinatorResult((), result)
        # A new leader: record its epoch (a ShareUpdate, or a snapshot when one is due).
        value = self._next_record(
            entry, StateWrite(NO_EPOCH, leader_epoch, entry.start_offset, ()), leader_epoch
        )
        return CoordinatorResult([ShareStateRecord.of(key, value)], result)

    def write_state(self, key: ShareStateKey, write: StateWrite) -> Result:
        """WriteShareGroupState: durable before it answers NONE.

        Checks in Kafka's order: a bad key or malformed request (INVALID_REQUEST), an
        uninitialized key (INVALID_REQUEST), a leader epoch (not -1) below the recorded one
        (FENCED_LEADER_EPOCH), a state epoch (not -1) below the recorded one
        (FENCED_STATE_EPOCH), a topic partition unknown to the metadata
        (UNKNOWN_TOPIC_OR_PARTITION).  A write never changes the recorded leader or state
        epoch (only reads and initialization do, as in Kafka).

        As Kafka 4.4's ShareCoordinatorShard: the start offset recorded is the higher of the
        written and the recorded one; the delivery complete count is the written one, the
        higher of both when the start offsets are equal, the recorded one when the written
        start offset is lower.
        """
        if (error := self._check_key(key)) is not None:
            return _answer(error)
        if not self._valid_write(write):
            return _answer(ErrorCode.INVALID_REQUEST)
        entry = self._entry(key)
        if entry is None:
            return _answer(ErrorCode.INVALID_REQUEST)
        if write.leader_epoch != NO_EPOCH and entry.fence_leader_epoch > write.leader_epoch:
            return _answer(ErrorCode.FENCED_LEADER_EPOCH)
        if write.state_epoch != NO_EPOCH and entry.fence_state_epoch > write.state_epoch:
            return _answer(ErrorCode.FENCED_STATE_EPOCH)
        if not self._known_topic(key):
            return _answer(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        value = self._next_record(entry, write, entry.leader_epoch)
        return _write(key, value)

    def delete_state(self, key: ShareStateKey) -> Result:
        """DeleteShareGroupState: a tombstone; a key with no state is success with no write."""
        if (error := self._check_key(key)) is not None:
            return _answer(error)
        if not self._known_topic(key):
            return _answer(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if self._entry(key) is None:
            return _answer(ErrorCode.NONE)
        return _write(key, None)

    def tombstone(self, key: ShareStateKey) -> Result:
        """A tombstone for ``key``, unchecked (the state of a deleted topic)."""
        return _write(key, None)

    def resnapshot(self, key: ShareStateKey, now: int) -> Result:
        """A snapshot of ``key``'s current state, one snapshot epoch later (none: no write)."""
        entry = self._entry(key)
        if entry is None:
            return _answer(ErrorCode.NONE)
        return _write(key, _resnapshot(entry, now))

    def write_pending(
        self,
        key: ShareStateKey,
        producer_id: int,
        producer_epoch: int,
        batches: Sequence[PersisterStateBatch],
    ) -> Result:
        """TxnShareAcknowledge: a transactional ShareUpdate staging ``batches`` for ``key``."""
        if (invalid := self._check_key(key)) is not None:
            return _answer(invalid)
        entry = self._entry(key)
        if entry is None:
            return _answer(ErrorCode.INVALID_REQUEST)
        pending = self._partitions[self.partition_for(key)].pending_txn.get(producer_id)
        if pending is not None and pending.producer_epoch > producer_epoch:
            return _answer(ErrorCode.PRODUCER_FENCED)
        value = ShareUpdateValue(
            snapshot_epoch=entry.snapshot_epoch,
            leader_epoch=NO_EPOCH,
            start_offset=NO_START_OFFSET,
            state_batches=to_state_records(batches),
        )
        return CoordinatorResult(
            [ShareStateRecord.of(key, value)],
            ErrorCode.NONE,
            producer=(producer_id, producer_epoch),
        )

    def write_pending_batch(
        self,
        producer_id: int,
        producer_epoch: int,
        writes: Sequence[tuple[ShareStateKey, Sequence[PersisterStateBatch]]],
    ) -> CoordinatorResult[ShareStateRecord, list[ErrorCode]]:
        """TxnShareAcknowledge of several keys of one state partition: one transactional
        batch holding a ShareUpdate per key that ``write_pending`` accepts, answered with each
        key's verdict in ``writes`` order (NONE: its update is in the batch)."""
        records: list[ShareStateRecord] = []
        verdicts: list[ErrorCode] = []
        for key, batches in writes:
            one = self.write_pending(key, producer_id, producer_epoch, batches)
            records.extend(one.records)
            verdicts.append(one.response)
        return CoordinatorResult(records, verdicts, producer=(producer_id, producer_epoch))

    def complete_transaction(
        self, partition: int, marker: ControlMarker
    ) -> CoordinatorResult[ShareStateRecord, MarkerOutcome]:
        """WriteTxnMarkers for one state partition: the marker, answered with the keys whose
        staged acks it resolves (none when nothing is staged for that producer and epoch)."""
        part = self._partitions.get(partition)
        if part is None:
            return CoordinatorResult((), MarkerOutcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        pending = self._marker_pending(part, marker.producer_id, marker.producer_epoch)
        keys = tuple(pending.updates) if pending is not None else ()
        outcome = MarkerOutcome(ErrorCode.NONE, keys, applied=bool(keys))
        return CoordinatorResult((), outcome, marker=marker)

    # --- read-only ----------------------------------------------------------------------------

    def read_state_summary(self, key: ShareStateKey) -> StateSummary:
        """ReadShareGroupStateSummary: no fencing, no write.

        A key with no state answers NONE with start offset -1, delivery complete count -1 and
        epochs 0, as Kafka does.  The start offset is the one Kafka persists: -1 until the
        share partition first writes its state (a recorded reset position is not reported).
        """
        if (error := self._check_key(key)) is not None:
            return StateSummary(error)
        if not self._known_topic(key):
            return StateSummary(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        entry = self._entry(key)
        if entry is None:
            return StateSummary(
                ErrorCode.NONE,
                state_epoch=DEFAULT_STATE_EPOCH,
                leader_epoch=DEFAULT_LEADER_EPOCH,
                start_offset=UNINITIALIZED_START_OFFSET,
            )
        return StateSummary(
            ErrorCode.NONE,
            state_epoch=entry.state_epoch,
            leader_epoch=entry.leader_epoch,
            start_offset=entry.start_offset,
            delivery_complete_count=entry.delivery_complete_count,
        )

    def state(self, key: ShareStateKey) -> ShareStateView | None:
        """The current state of a key, or None if it has none."""
        part = self._partitions.get(self.partition_for(key))
        entry = part.states.get(key) if part is not None else None
        if entry is None:
            return None
        return ShareStateView(
            state_epoch=entry.state_epoch,
            leader_epoch=entry.leader_epoch,
            start_offset=entry.start_offset,
            batches=entry.batches,
            snapshot_epoch=entry.snapshot_epoch,
        )

    def keys(self, group_id: str | None = None) -> list[ShareStateKey]:
        """Every key with state (of one group if given), sorted."""
        return sorted(
            key
            for part in self._partitions.values()
            for key in part.states
            if group_id is None or key.group_id == group_id
        )

    def keys_of_topics(self, topic_ids: Iterable[uuid.UUID]) -> list[tuple[int, ShareStateKey]]:
        """(state partition, key) of every key of these topics, by partition then key."""
        deleted = set(topic_ids)
        return [
            (index, key)
            for index, part in self._partitions.items()
            for key in sorted(k for k in part.states if k.topic_id in deleted)
        ]

    def cold_keys(self, partition: int, now: int, cold_interval_ms: int) -> list[ShareStateKey]:
        """The keys of a partition whose latest snapshot is older than the cold interval.

        None in a partition where every key is already cold-snapshotted and unchanged since,
        so a quiet coordinator does not snapshot forever.
        """
        entries = self._partitions[partition].states
        if all(
            e.create_timestamp != e.write_timestamp and e.update_count == 0
            for e in entries.values()
        ):
            return []
        return [
            key
            for key, entry in sorted(entries.items())
            if now - entry.write_timestamp >= cold_interval_ms
        ]

    def pending_for(
        self, key: ShareStateKey
    ) -> list[tuple[int, int, tuple[PersisterStateBatch, ...]]]:
        """(producer id, epoch, target batches) of every open transaction touching ``key``."""
        part = self._partitions.get(self.partition_for(key))
        if part is None:
            return []
        out: list[tuple[int, int, tuple[PersisterStateBatch, ...]]] = []
        for producer_id, pending in sorted(part.pending_txn.items()):
            for value in pending.updates.get(key, []):
                out.append(
                    (producer_id, pending.producer_epoch, from_state_records(value.state_batches))
                )
        return out

    def open_transactions(self) -> dict[int, list[tuple[int, ShareStateKey]]]:
        """producer id -> (state partition, key) of every staged transactional update."""
        out: dict[int, list[tuple[int, ShareStateKey]]] = {}
        for index, part in self._partitions.items():
            for producer_id, pending in part.pending_txn.items():
                for key in pending.updates:
                    out.setdefault(producer_id, []).append((index, key))
        return out

    def first_needed_offset(self, partition: int) -> int | None:
        """The first log offset replay still needs (None: nothing, prune to the end).

        Each key needs its latest snapshot, a committed transactional batch materialized
        after it, and every record from the first of an open transaction.
        """
        part = self._partitions[partition]
        needed = [entry.snapshot_offset for entry in part.states.values()]
        needed.extend(
            e.materialized_floor for e in part.states.values() if e.materialized_floor is not None
        )
        needed.extend(pending.first_offset for pending in part.pending_txn.values())
        return min(needed) if needed else None

    # --- replay: the only mutation ------------------------------------------------------------

    def replay(
        self,
        partition: int,
        offset: int,
        producer_id: int,
        producer_epoch: int,
        record: ShareStateRecord,
    ) -> None:
        """One durable record: staged if transactional, else applied to its key's state."""
        part = self._partitions[partition]
        key = record.state_key
        if producer_id != NO_PRODUCER_ID:
            if not isinstance(record.value, ShareUpdateValue):
                log.warning(
                    "skipping pending record at %s-%d %d: not an update",
                    SHARE_GROUP_STATE_TOPIC,
                    partition,
                    offset,
                )
                return
            _stage(part, offset, producer_id, producer_epoch, key, record.value)
            return
        if self.partition_for(key) != partition:
            # The partition count changed since this was written: the key is unreachable.
            log.warning(
                "%s found in %s-%d but belongs to partition %d",
                coordinator_key(key),
                SHARE_GROUP_STATE_TOPIC,
                partition,
                self.partition_for(key),
            )
        _apply(part, offset, key, record.value)

    def replay_marker(
        self, partition: int, producer_id: int, producer_epoch: int, commit: bool
    ) -> None:
        """A COMMIT/ABORT marker: the staged acks of its producer, materialized or dropped."""
        part = self._partitions[partition]
        pending = self._marker_pending(part, producer_id, producer_epoch)
        if pending is None:
            return
        del part.pending_txn[producer_id]
        if commit:
            _materialize(part, pending)

    def _marker_pending(
        self, part: StatePartition, producer_id: int, producer_epoch: int
    ) -> PendingTxnUpdates | None:
        """What a marker resolves: the producer's staged acks, unless none are staged or a
        newer transaction staged them (an old marker must not touch those)."""
        pending = part.pending_txn.get(producer_id)
        if pending is None or pending.producer_epoch > producer_epoch:
            return None
        return pending

    # --- internals ----------------------------------------------------------------------------

    def _entry(self, key: ShareStateKey) -> KeyState | None:
        return self._partitions[self.partition_for(key)].states.get(key)

    def _check_key(self, key: ShareStateKey) -> ErrorCode | None:
        if not key.group_id or key.topic_id.int == 0 or not 0 <= key.partition <= _INT32[1]:
            return ErrorCode.INVALID_REQUEST
        return None

    @staticmethod
    def _valid_write(write: StateWrite) -> bool:
        if not (_in_range(write.state_epoch, _INT32) and _in_range(write.leader_epoch, _INT32)):
            return False
        if not -1 <= write.start_offset <= _INT64_MAX or not -1 <= write.reset_offset <= _INT64_MAX:
            return False
        if not -1 <= write.delivery_complete_count <= _INT32[1]:
            return False
        return all(
            0 <= b.first_offset <= b.last_offset <= _INT64_MAX
            and _in_range(b.delivery_state, _INT8)
            and _in_range(b.delivery_count, _INT16)
            for b in write.batches
        )

    def _known_topic(self, key: ShareStateKey) -> bool:
        return self._topic_exists is None or self._topic_exists(key.topic_id, key.partition)

    def _next_record(
        self, entry: KeyState, write: StateWrite, leader_epoch: int
    ) -> ShareRecordValue:
        """The record for a write to ``entry``: a snapshot when one is due, else an update.

        Kafka's rule: the start offset never goes back (the higher of the written and the
        recorded one), and the delivery complete count goes with the start offset it counts
        from (see ``write_state``).
        """
        new_start = max(write.start_offset, entry.start_offset)
        count = write.delivery_complete_count
        if write.start_offset == entry.start_offset:
            count = max(count, entry.delivery_complete_count)
        elif write.start_offset < entry.start_offset:
            count = entry.delivery_complete_count
        reset = write.reset_offset if write.reset_offset >= 0 else None
        if entry.update_count >= self._updates_per_snapshot:
            now = self._clock.now_ms()
            if reset is None and new_start < 0 and entry.reset_offset >= 0:
                reset = entry.reset_offset
            snapshot = ShareSnapshotValue(
                snapshot_epoch=entry.snapshot_epoch + 1,
                state_epoch=entry.state_epoch,
                leader_epoch=leader_epoch,
                start_offset=new_start,
                create_timestamp=now,
                write_timestamp=now,
                state_batches=to_state_records(combine(entry.batches, write.batches, new_start)),
                delivery_complete_count=count,
                reset_offset=reset if new_start < 0 else None,
            )
            return _with_fences(snapshot, entry)
        return ShareUpdateValue(
            snapshot_epoch=entry.snapshot_epoch,
            leader_epoch=leader_epoch,
            start_offset=new_start,
            state_batches=to_state_records(combine((), write.batches, new_start)),
            delivery_complete_count=count,
            reset_offset=reset,
        )


def _write(key: ShareStateKey, value: ShareRecordValue | None) -> Result:
    """One record for ``key``, answered NONE once durable."""
    return CoordinatorResult([ShareStateRecord.of(key, value)], ErrorCode.NONE)


def _resnapshot(entry: KeyState, write_timestamp: int) -> ShareSnapshotValue:
    """A snapshot of ``entry``'s current state, one snapshot epoch later."""
    snapshot = ShareSnapshotValue(
        snapshot_epoch=entry.snapshot_epoch + 1,
        state_epoch=entry.state_epoch,
        leader_epoch=entry.leader_epoch,
        start_offset=entry.start_offset,
        create_timestamp=entry.create_timestamp,
        write_timestamp=write_timestamp,
        state_batches=to_state_records(entry.batches),
        delivery_complete_count=entry.delivery_complete_count,
        reset_offset=entry.reset_offset if entry.start_offset < 0 <= entry.reset_offset else None,
    )
    return _with_fences(snapshot, entry)


def _with_fences(value: ShareSnapshotValue, entry: KeyState | None) -> ShareSnapshotValue:
    """``value`` carrying the fences its replay gives the key, where they are higher than its
    own epochs: once pruning has cut the key's older records, they are the only trace."""
    if entry is None:
        return value
    leader = max(entry.fence_leader_epoch, value.leader_epoch)
    state = max(entry.fence_state_epoch, value.state_epoch)
    return replace(
        value,
        fence_leader_epoch=leader if leader > value.leader_epoch else None,
        fence_state_epoch=state if state > value.state_epoch else None,
    )


def _apply(
    part: StatePartition, offset: int, key: ShareStateKey, value: ShareRecordValue | None
) -> None:
    """A non-transactional record: a tombstone, a snapshot, or an update merged in."""
    current = part.states.get(key)
    if value is None:
        part.states.pop(key, None)
    elif isinstance(value, ShareSnapshotValue):
        part.states[key] = KeyState(
            snapshot_epoch=value.snapshot_epoch,
            state_epoch=value.state_epoch,
            leader_epoch=value.leader_epoch,
            start_offset=value.start_offset,
            batches=from_state_records(value.state_batches),
            create_timestamp=value.create_timestamp,
            write_timestamp=value.write_timestamp,
            fence_leader_epoch=max(
                value.leader_epoch,
                _or(value.fence_leader_epoch, value.leader_epoch),
                current.fence_leader_epoch if current is not None else value.leader_epoch,
            ),
            fence_state_epoch=max(
                value.state_epoch,
                _or(value.fence_state_epoch, value.state_epoch),
                current.fence_state_epoch if current is not None else value.state_epoch,
            ),
            update_count=0,
            snapshot_offset=offset,
            delivery_complete_count=value.delivery_complete_count,
            reset_offset=_or(value.reset_offset, -1),
        )
    elif current is None:
        # An update with no snapshot before it (Kafka takes it as the state).
        log.warning("%s: ShareUpdate at %d without a snapshot", coordinator_key(key), offset)
        part.states[key] = KeyState(
            snapshot_epoch=value.snapshot_epoch,
            state_epoch=DEFAULT_STATE_EPOCH,
            leader_epoch=value.leader_epoch,
            start_offset=value.start_offset,
            batches=from_state_records(value.state_batches),
            create_timestamp=0,
            write_timestamp=0,
            fence_leader_epoch=value.leader_epoch,
            fence_state_epoch=DEFAULT_STATE_EPOCH,
            update_count=0,
            snapshot_offset=offset,
            delivery_complete_count=value.delivery_complete_count,
            reset_offset=_or(value.reset_offset, -1),
        )
    else:
        start = (
            current.start_offset if value.start_offset == NO_START_OFFSET else value.start_offset
        )
        current.start_offset = start
        current.delivery_complete_count = value.delivery_complete_count
        if value.reset_offset is not None:
            current.reset_offset = value.reset_offset
        if value.leader_epoch != NO_EPOCH:
            current.leader_epoch = value.leader_epoch
        current.fence_leader_epoch = max(current.fence_leader_epoch, value.leader_epoch)
        current.batches = tuple(
            combine(current.batches, from_state_records(value.state_batches), start)
        )
        current.update_count += 1


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


def _stage(
    part: StatePartition,
    offset: int,
    producer_id: int,
    producer_epoch: int,
    key: ShareStateKey,
    value: ShareUpdateValue,
) -> None:
    pending = part.pending_txn.get(producer_id)
    if pending is None or pending.producer_epoch < producer_epoch:
        if pending is not None:
            # A newer epoch means the old transaction was fenced and its abort marker
            # written already (or it would have been); its leftovers are dropped.
            log.warning("dropping stale pending acks of producer %d", producer_id)
        pending = PendingTxnUpdates(producer_epoch, offset)
        part.pending_txn[producer_id] = pending
    pending.updates.setdefault(key, []).append(value)


def _materialize(part: StatePartition, pending: PendingTxnUpdates) -> None:
    """A committed transaction's staged acks, overlaid onto the states they target."""
    for key, values in pending.updates.items():
        entry = part.states.get(key)
        if entry is None:
            continue  # the state was deleted meanwhile; nothing to apply to
        batches = entry.batches
        for value in values:
            batches = tuple(
                overlay(batches, from_state_records(value.state_batches), entry.start_offset)
            )
        # The committed acks may complete a prefix: the start offset moves past it, as
        # the share partition's own next write would have moved it; the delivery complete
        # count is what the batches from there on hold.
        start = entry.effective_start
        if start >= 0:
            start = past_terminal_prefix(start, batches)
            entry.start_offset = start
            entry.delivery_complete_count = terminal_count(start, batches)
        entry.batches = tuple(combine(batches, (), start))
        # The acks live only in the pending batch (and the marker) until a snapshot holds
        # them: pruning must not pass that batch before then.
        floor = entry.materialized_floor
        entry.materialized_floor = (
            pending.first_offset if floor is None else min(floor, pending.first_offset)
        )
