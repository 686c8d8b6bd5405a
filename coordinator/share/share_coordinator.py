"""The share coordinator: durable share-partition state (Kafka's ShareCoordinatorShard + service).

Every share partition's state (state epoch, leader epoch, start offset, and the in-flight
state batches) lives in one ``__share_group_state`` partition, chosen by ``partition_for``.
Each state partition has its own log (``storage_open(index)``); the coordinator owns all of
them for its whole life (single node).

**Records.**  ``txn.share_records``: a ShareSnapshot carries the whole state, a ShareUpdate the
batches of one write (merged on replay with ``state_combiner.combine``), a null value is a
tombstone.  After ``share.coordinator.snapshot.update.records.per.snapshot`` updates of a key,
its next write is a snapshot instead.

**Writes.**  Every method validates and builds the record from the current state (nothing is
changed yet) as a ``CoordinatorResult``; the ``CoordinatorRuntime`` appends it as a one-record
batch, flushes, and only then applies the record to the in-memory state through ``_apply`` --
the same code ``load()`` replays the log with (``replay``).  An append or flush failure returns
an error (mapped as Kafka maps coordinator append errors) and leaves the state untouched; a
record whose flush failed is truncated away so the log and the memory agree.

**Pruning.**  Each key remembers the log offset of its latest ShareSnapshot.  Records below the
smallest such offset in a partition are redundant (every key's state is rebuilt from its latest
snapshot and the updates after it); ``prune()`` raises the log start offset there, every
``share.coordinator.state.topic.prune.interval.ms``.  A partition with no live key is pruned to
its end.  Cold keys hold pruning back, so every
``share.coordinator.cold.partition.snapshot.interval.ms`` keys whose snapshot is older than that
are re-snapshotted (Kafka's ``snapshotColdPartitions``).

**KIP-1289 (not implemented yet).**  Transactional share acknowledgements will be written as
pid-tagged (transactional) ShareUpdate batches.  On replay they must not be merged: they are
staged per producer id in ``_StatePartition.pending_txn`` and materialized or discarded when the
COMMIT/ABORT control marker for that producer is appended to the partition (mirroring
``pendingTransactionalOffsets`` of the group coordinator).  ``prune()`` already keeps every
record from the first offset of a pending transaction.  Today ``load()`` skips transactional and
control batches with a warning, because nothing writes them.

Protocol errors are returned (``ErrorCode`` / result dataclasses), never raised.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence

from coordinator.log.storage import PartitionLog
from coordinator.shard_runtime import (
    ControlMarker,
    CoordinatorResult,
    CoordinatorRuntime,
    CoordinatorShard,
    LoadedRecord,
)
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
    MarkerOutcome,
    PendingTxnUpdates,
    ShareStateView,
    _from_records,
    _KeyState,
    _past_terminal_prefix,
    _StatePartition,
    _to_records,
    coordinator_key,
    partition_for,
)
from txn.batch import BatchHeader
from txn.clock import Clock
from txn.config import BrokerConfig
from txn.errors import ErrorCode, InvalidConfigError
from txn.ids import SHARE_GROUP_STATE_TOPIC
from txn.limits import INT8 as _INT8
from txn.limits import INT16 as _INT16
from txn.limits import INT32 as _INT32
from txn.limits import LONG_MAX as _INT64_MAX
from txn.limits import in_range as _in_range
from txn.share_records import (
    ShareRecordFormatError,
    ShareRecordKey,
    ShareRecordType,
    ShareRecordValue,
    ShareSnapshotValue,
    ShareUpdateValue,
    UnknownShareRecordVersionError,
    decode_record,
    encode_record,
)

log = logging.getLogger(__name__)

# share.coordinator.state.topic.prune.interval.ms (Kafka default 5 min).
DEFAULT_PRUNE_INTERVAL_MS = 300_000
# share.coordinator.cold.partition.snapshot.interval.ms (Kafka default 5 min).
DEFAULT_COLD_PARTITION_SNAPSHOT_INTERVAL_MS = 300_000


class ShareCoordinator(CoordinatorShard):
    """The ``Persister`` of every share partition, over the ``__share_group_state`` logs."""

    def __init__(
        self,
        clock: Clock,
        storage_open: Callable[[int], PartitionLog],
        config: BrokerConfig,
        *,
        prune_interval_ms: int = DEFAULT_PRUNE_INTERVAL_MS,
        cold_partition_snapshot_interval_ms: int | None = (
            DEFAULT_COLD_PARTITION_SNAPSHOT_INTERVAL_MS
        ),
        topic_exists: Callable[[uuid.UUID, int], bool] | None = None,
    ) -> None:
        """``storage_open(index)`` opens ``__share_group_state-index``.

        ``topic_exists(topic_id, partition)`` is the metadata check (Kafka's metadata image);
        None accepts every topic partition.  ``cold_partition_snapshot_interval_ms`` None
        disables cold snapshots.
        """
        self._clock = clock
        self._storage_open = storage_open
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
        if prune_interval_ms <= 0:
            raise InvalidConfigError("the prune interval must be positive")
        if (
            cold_partition_snapshot_interval_ms is not None
            and cold_partition_snapshot_interval_ms <= 0
        ):
            raise InvalidConfigError("the cold partition snapshot interval must be positive")
        self._prune_interval_ms = prune_interval_ms
        self._cold_interval_ms = cold_partition_snapshot_interval_ms
        self._topic_exists = topic_exists
        self._partitions: dict[int, _StatePartition] = {}
        self._loading: dict[int, _StatePartition] = {}
        self._runtime = CoordinatorRuntime(clock, SHARE_GROUP_STATE_TOPIC, skip_below_start=True)

    # --- lifecycle ----------------------------------------------------------------------------

    @property
    def num_partitions(self) -> int:
        return self._num_partitions

    @property
    def topic(self) -> str:
        return SHARE_GROUP_STATE_TOPIC

    def partition_for(self, key: ShareStateKey) -> int:
        """``java_string_hash(coordinator_key(key))`` (abs) modulo the partition count."""
        return partition_for(key, self._num_partitions)

    def availability(self) -> ErrorCode:
        """NONE once loaded; COORDINATOR_LOAD_IN_PROGRESS before, NOT_AVAILABLE after close."""
        return self._runtime.availability()

    def load(self) -> None:
        """Open and replay every state partition, then start the prune and cold-snapshot jobs."""
        self._runtime.cancel_timers()
        self._loading = {}

        def opened() -> Iterator[tuple[int, PartitionLog]]:
            for index in range(self._num_partitions):
                part = self._loading[index] = _StatePartition(index, self._storage_open(index))
                yield index, part.log

        self._runtime.load(self, opened())
        self._partitions, self._loading = self._loading, {}
        label = "share coordinator"
        self._runtime.schedule_periodic("prune", self._prune_interval_ms, self.prune, label=label)
        if self._cold_interval_ms is not None:
            self._runtime.schedule_periodic(
                "cold-snapshot",
                self._cold_interval_ms,
                self.snapshot_cold_partitions,
                label=label,
            )

    def close(self) -> None:
        """Stop the periodic jobs; every later request gets COORDINATOR_NOT_AVAILABLE."""
        self._runtime.close()

    # --- the Persister protocol ---------------------------------------------------------------

    def initialize_state(
        self, key: ShareStateKey, state_epoch: int, start_offset: int
    ) -> ErrorCode:
        """InitializeShareGroupState: a fresh snapshot (no merge), snapshot epoch +1 or 0.

        A state epoch below the recorded one is FENCED_STATE_EPOCH (-1 skips the check, as in
        Kafka).  The leader epoch is recorded as 0; batches are cleared.
        """
        if (error := self._check_key(key)) is not None:
            return error
        if not _in_range(state_epoch, _INT32) or not -1 <= start_offset <= _INT64_MAX:
            return ErrorCode.INVALID_REQUEST
        part = self._partition(key)
        entry = part.states.get(key)
        if state_epoch != NO_EPOCH and entry is not None and entry.fence_state_epoch > state_epoch:
            return ErrorCode.FENCED_STATE_EPOCH
        if not self._known_topic(key):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        now = self._clock.now_ms()
        value = ShareSnapshotValue(
            snapshot_epoch=entry.snapshot_epoch + 1 if entry is not None else 0,
            state_epoch=state_epoch,
            leader_epoch=INITIAL_LEADER_EPOCH,
            start_offset=start_offset,
            create_timestamp=now,
            write_timestamp=now,
        )
        return self._write(part, key, value)

    def read_state(self, key: ShareStateKey, leader_epoch: int) -> ReadStateResult:
        """ReadShareGroupState.

        An uninitialized key is INVALID_REQUEST (the share partition must wait for the group's
        InitializeShareGroupState).  A leader epoch below the highest recorded one is
        FENCED_LEADER_EPOCH -- including -1 once an epoch is recorded, as in Kafka, so callers
        must send their real (>= 0) leader epoch.  A higher epoch is recorded with a write
        before the state is returned.
        """
        if (error := self._check_key(key)) is not None:
            return ReadStateResult(error)
        if not _in_range(leader_epoch, _INT32):
            return ReadStateResult(ErrorCode.INVALID_REQUEST, error_message="bad leader epoch")
        part = self._partition(key)
        entry = part.states.get(key)
        if entry is None:
            return ReadStateResult(
                ErrorCode.INVALID_REQUEST,
                error_message=f"share partition {coordinator_key(key)} is not initialized",
            )
        if entry.fence_leader_epoch > leader_epoch:
            return ReadStateResult(ErrorCode.FENCED_LEADER_EPOCH)
        if not self._known_topic(key):
            return ReadStateResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        result = ReadStateResult(
            ErrorCode.NONE,
            state_epoch=entry.state_epoch,
            start_offset=entry.start_offset,
            batches=entry.batches,
        )
        if leader_epoch in (NO_EPOCH, entry.fence_leader_epoch):
            return result
        # A new leader: record its epoch (a ShareUpdate, or a snapshot when one is due).
        value = self._next_record(entry, entry.start_offset, (), leader_epoch)
        error = self._write(part, key, value)
        if error is not ErrorCode.NONE:
            return ReadStateResult(error)
        return result

    def write_state(self, key: ShareStateKey, write: StateWrite) -> ErrorCode:
        """WriteShareGroupState: durable before it returns NONE.

        Checks in Kafka's order: a bad key or malformed request (INVALID_REQUEST), an
        uninitialized key (INVALID_REQUEST), a leader epoch (not -1) below the recorded one
        (FENCED_LEADER_EPOCH), a state epoch (not -1) below the recorded one
        (FENCED_STATE_EPOCH), a topic partition unknown to the metadata
        (UNKNOWN_TOPIC_OR_PARTITION).  A write never changes the recorded leader or state
        epoch (only reads and initialization do, as in Kafka).
        """
        if (error := self._check_key(key)) is not None:
            return error
        if not self._valid_write(write):
            return ErrorCode.INVALID_REQUEST
        part = self._partition(key)
        entry = part.states.get(key)
        if entry is None:
            return ErrorCode.INVALID_REQUEST
        if write.leader_epoch != NO_EPOCH and entry.fence_leader_epoch > write.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if write.state_epoch != NO_EPOCH and entry.fence_state_epoch > write.state_epoch:
            return ErrorCode.FENCED_STATE_EPOCH
        if not self._known_topic(key):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        value = self._next_record(entry, write.start_offset, write.batches, entry.leader_epoch)
        return self._write(part, key, value)

    def delete_state(self, key: ShareStateKey) -> ErrorCode:
        """DeleteShareGroupState: a tombstone; a key with no state is success with no write."""
        if (error := self._check_key(key)) is not None:
            return error
        if not self._known_topic(key):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        part = self._partition(key)
        if key not in part.states:
            return ErrorCode.NONE
        return self._write(part, key, None)

    def read_state_summary(self, key: ShareStateKey, leader_epoch: int) -> StateSummary:
        """ReadShareGroupStateSummary: no fencing, no write.

        A key with no state answers NONE with start offset -1 and epochs 0, as Kafka does.
        ``delivery_complete_count`` (KIP-1226) is not tracked and is always -1.
        """
        del leader_epoch  # Kafka does not fence summaries
        if (error := self._check_key(key)) is not None:
            return StateSummary(error)
        if not self._known_topic(key):
            return StateSummary(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        entry = self._partition(key).states.get(key)
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
        )

    # --- maintenance --------------------------------------------------------------------------

    def on_topics_deleted(self, topic_ids: Iterable[uuid.UUID]) -> ErrorCode:
        """Tombstone every key of the deleted topics (Kafka's ``maybeCleanupShareState``)."""
        if (error := self.availability()) is not ErrorCode.NONE:
            return error
        deleted = set(topic_ids)
        result = ErrorCode.NONE
        for part in self._partitions.values():
            for key in sorted(k for k in part.states if k.topic_id in deleted):
                error = self._write(part, key, None)
                if error is not ErrorCode.NONE and result is ErrorCode.NONE:
                    result = error
        return result

    def prune(self) -> dict[int, int]:
        """Raise each state log's start offset to its first still-needed record.

        Returns the new log start offset of every partition that moved.
        """
        if self.availability() is not ErrorCode.NONE:
            return {}
        moved: dict[int, int] = {}
        for index, part in sorted(self._partitions.items()):
            target = self._first_needed_offset(part)
            if target <= part.log.log_start_offset:
                continue
            try:
                part.log.advance_start_offset(target)
            except Exception:
                log.exception(
                    "pruning %s-%d to offset %d failed", SHARE_GROUP_STATE_TOPIC, index, target
                )
                continue
            moved[index] = target
        return moved

    def snapshot_cold_partitions(self) -> int:
        """Re-snapshot keys whose latest snapshot is older than the cold interval.

        A partition where every key is already cold-snapshotted and unchanged since is skipped,
        so a quiet coordinator does not snapshot forever.  Returns the snapshots written.
        """
        if self.availability() is not ErrorCode.NONE or self._cold_interval_ms is None:
            return 0
        now = self._clock.now_ms()
        written = 0
        for part in self._partitions.values():
            entries = part.states
            if all(
                e.create_timestamp != e.write_timestamp and e.update_count == 0
                for e in entries.values()
            ):
                continue
            for key, entry in sorted(entries.items()):
                if now - entry.write_timestamp < self._cold_interval_ms:
                    continue
                if self._write(part, key, _resnapshot(entry, now)) is ErrorCode.NONE:
                    written += 1
        return written

    # --- read-only views ----------------------------------------------------------------------

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

    # --- internals: requests ------------------------------------------------------------------

    def _check_key(self, key: ShareStateKey) -> ErrorCode | None:
        if (error := self.availability()) is not ErrorCode.NONE:
            return error
        if not key.group_id or key.topic_id.int == 0 or not 0 <= key.partition <= _INT32[1]:
            return ErrorCode.INVALID_REQUEST
        return None

    @staticmethod
    def _valid_write(write: StateWrite) -> bool:
        if not (_in_range(write.state_epoch, _INT32) and _in_range(write.leader_epoch, _INT32)):
            return False
        if not -1 <= write.start_offset <= _INT64_MAX:
            return False
        return all(
            0 <= b.first_offset <= b.last_offset <= _INT64_MAX
            and _in_range(b.delivery_state, _INT8)
            and _in_range(b.delivery_count, _INT16)
            for b in write.batches
        )

    def _known_topic(self, key: ShareStateKey) -> bool:
        return self._topic_exists is None or self._topic_exists(key.topic_id, key.partition)

    def _partition(self, key: ShareStateKey) -> _StatePartition:
        return self._partitions[self.partition_for(key)]

    def _next_record(
        self,
        entry: _KeyState,
        start_offset: int,
        batches: Sequence[PersisterStateBatch],
        leader_epoch: int,
    ) -> ShareRecordValue:
        """The record for a write to ``entry``: a snapshot when one is due, else an update."""
        if entry.update_count >= self._updates_per_snapshot:
            new_start = entry.start_offset if start_offset == NO_START_OFFSET else start_offset
            now = self._clock.now_ms()
            return ShareSnapshotValue(
                snapshot_epoch=entry.snapshot_epoch + 1,
                state_epoch=entry.state_epoch,
                leader_epoch=leader_epoch,
                start_offset=new_start,
                create_timestamp=now,
                write_timestamp=now,
                state_batches=_to_records(combine(entry.batches, batches, new_start)),
            )
        return ShareUpdateValue(
            snapshot_epoch=entry.snapshot_epoch,
            leader_epoch=leader_epoch,
            start_offset=start_offset,
            state_batches=_to_records(combine((), batches, start_offset)),
        )

    def _write(
        self, part: _StatePartition, key: ShareStateKey, value: ShareRecordValue | None
    ) -> ErrorCode:
        """Append one record durably, then apply it; on failure nothing changes."""
        record_type = (
            ShareRecordType.SHARE_UPDATE
            if isinstance(value, ShareUpdateValue)
            else ShareRecordType.SHARE_SNAPSHOT  # snapshots and tombstones
        )
        record_key = ShareRecordKey(record_type, key.group_id, key.topic_id, key.partition)
        try:
            key_bytes, value_bytes = encode_record(record_key, value)
        except ShareRecordFormatError:
            log.exception("cannot encode the share state record of %s", coordinator_key(key))
            return ErrorCode.INVALID_REQUEST
        return self._runtime.write(
            part.index,
            CoordinatorResult(
                [(key_bytes, value_bytes)],
                ErrorCode.NONE,
                apply=lambda offset: self._apply(part, offset, key, value),
            ),
        )

    # --- internals: replay --------------------------------------------------------------------

    def replay(self, record: LoadedRecord) -> None:
        """One record of a state partition on load: staged if transactional, else applied."""
        part = self._loading[record.partition]
        if record.header.is_transactional:
            self._replay_pending(part, record.offset, record.header, record.key, record.value)
        else:
            self._replay_record(part, record.offset, record.key, record.value)

    def replay_marker(self, partition: int, header: BatchHeader, commit: bool) -> None:
        """A COMMIT/ABORT marker on load: the staged acks of its producer, applied or dropped."""
        part = self._loading[partition]
        self._apply_marker(part, header.producer_id, header.producer_epoch, commit)

    def _replay_record(
        self, part: _StatePartition, offset: int, raw_key: bytes | None, raw_value: bytes | None
    ) -> None:
        try:
            record_key, value = decode_record(raw_key, raw_value)
        except UnknownShareRecordVersionError as exc:
            log.warning("skipping %s-%d record at %d: %s", self.topic, part.index, offset, exc)
            return
        except ShareRecordFormatError:
            log.exception("skipping corrupt %s-%d record at %d", self.topic, part.index, offset)
            return
        key = ShareStateKey(record_key.group_id, record_key.topic_id, record_key.partition)
        if self.partition_for(key) != part.index:
            # The partition count changed since this was written: the key is unreachable.
            log.warning(
                "%s found in %s-%d but belongs to partition %d",
                coordinator_key(key),
                self.topic,
                part.index,
                self.partition_for(key),
            )
        self._apply(part, offset, key, value)

    def _apply(
        self,
        part: _StatePartition,
        offset: int,
        key: ShareStateKey,
        value: ShareRecordValue | None,
    ) -> None:
        """The one place state changes: live writes and replay both come here."""
        current = part.states.get(key)
        if value is None:
            part.states.pop(key, None)
        elif isinstance(value, ShareSnapshotValue):
            part.states[key] = _KeyState(
                snapshot_epoch=value.snapshot_epoch,
                state_epoch=value.state_epoch,
                leader_epoch=value.leader_epoch,
                start_offset=value.start_offset,
                batches=_from_records(value.state_batches),
                create_timestamp=value.create_timestamp,
                write_timestamp=value.write_timestamp,
                fence_leader_epoch=max(
                    value.leader_epoch,
                    current.fence_leader_epoch if current is not None else value.leader_epoch,
                ),
                fence_state_epoch=max(
                    value.state_epoch,
                    current.fence_state_epoch if current is not None else value.state_epoch,
                ),
                update_count=0,
                snapshot_offset=offset,
            )
        elif current is None:
            # An update with no snapshot before it (Kafka takes it as the state).
            log.warning("%s: ShareUpdate at %d without a snapshot", coordinator_key(key), offset)
            part.states[key] = _KeyState(
                snapshot_epoch=value.snapshot_epoch,
                state_epoch=DEFAULT_STATE_EPOCH,
                leader_epoch=value.leader_epoch,
                start_offset=value.start_offset,
                batches=_from_records(value.state_batches),
                create_timestamp=0,
                write_timestamp=0,
                fence_leader_epoch=value.leader_epoch,
                fence_state_epoch=DEFAULT_STATE_EPOCH,
                update_count=0,
                snapshot_offset=offset,
            )
        else:
            start = (
                current.start_offset
                if value.start_offset == NO_START_OFFSET
                else value.start_offset
            )
            current.start_offset = start
            if value.leader_epoch != NO_EPOCH:
                current.leader_epoch = value.leader_epoch
            current.fence_leader_epoch = max(current.fence_leader_epoch, value.leader_epoch)
            current.batches = tuple(
                combine(current.batches, _from_records(value.state_batches), start)
            )
            current.update_count += 1

    # --- KIP-1289: transactional (pending) updates --------------------------------------------

    def write_pending(
        self,
        key: ShareStateKey,
        producer_id: int,
        producer_epoch: int,
        batches: Sequence[PersisterStateBatch],
    ) -> ErrorCode:
        """TxnShareAcknowledge: stage target states for ``key`` in the producer's transaction.

        Appended (and fsynced) as a transactional batch on the key's state partition before
        it is staged; the transaction's marker later commits or discards it.
        """
        if (unavailable := self.availability()) is not ErrorCode.NONE:
            return unavailable
        if (invalid := self._check_key(key)) is not None:
            return invalid
        part = self._partition(key)
        entry = part.states.get(key)
        if entry is None:
            return ErrorCode.INVALID_REQUEST
        pending = part.pending_txn.get(producer_id)
        if pending is not None and pending.producer_epoch > producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        value = ShareUpdateValue(
            snapshot_epoch=entry.snapshot_epoch,
            leader_epoch=NO_EPOCH,
            start_offset=NO_START_OFFSET,
            state_batches=_to_records(batches),
        )
        record_key = ShareRecordKey(
            ShareRecordType.SHARE_UPDATE, key.group_id, key.topic_id, key.partition
        )
        return self._runtime.write(
            part.index,
            CoordinatorResult(
                [encode_record(record_key, value)],
                ErrorCode.NONE,
                apply=lambda offset: self._stage(
                    part, offset, producer_id, producer_epoch, key, value
                ),
                producer=(producer_id, producer_epoch),
            ),
        )

    def complete_transaction(self, partition: int, marker: ControlMarker) -> MarkerOutcome:
        """WriteTxnMarkers for one state partition: append the marker, then apply or discard.

        Idempotent: a marker for a producer with nothing staged (or staged by a newer epoch)
        is appended and changes nothing.  Returns the keys whose pending acks were resolved.
        """
        if (error := self.availability()) is not ErrorCode.NONE:
            return MarkerOutcome(error)
        part = self._partitions.get(partition)
        if part is None:
            return MarkerOutcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        keys: list[ShareStateKey] = []
        appended = self._runtime.write(
            partition,
            CoordinatorResult(
                (),
                ErrorCode.NONE,
                apply=lambda _offset: keys.extend(
                    self._apply_marker(
                        part, marker.producer_id, marker.producer_epoch, marker.commit
                    )
                ),
                marker=marker,
            ),
        )
        if appended is not ErrorCode.NONE:
            return MarkerOutcome(
                ErrorCode.NOT_LEADER_OR_FOLLOWER
                if appended is ErrorCode.NOT_COORDINATOR
                else appended
            )
        if marker.commit:
            for key in keys:
                # Best effort: a failed snapshot keeps the pruning floor, so nothing is lost.
                self._snapshot_key(part, key)
        return MarkerOutcome(ErrorCode.NONE, tuple(keys), applied=bool(keys))

    def _snapshot_key(self, part: _StatePartition, key: ShareStateKey) -> ErrorCode:
        entry = part.states.get(key)
        if entry is None:
            return ErrorCode.NONE
        return self._write(part, key, _resnapshot(entry, self._clock.now_ms()))

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
                    (producer_id, pending.producer_epoch, _from_records(value.state_batches))
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

    def _replay_pending(
        self,
        part: _StatePartition,
        offset: int,
        header: BatchHeader,
        raw_key: bytes | None,
        raw_value: bytes | None,
    ) -> None:
        try:
            record_key, value = decode_record(raw_key, raw_value)
        except ShareRecordFormatError:
            log.exception(
                "skipping corrupt pending record at %s-%d %d", self.topic, part.index, offset
            )
            return
        if not isinstance(value, ShareUpdateValue):
            log.warning(
                "skipping pending record at %s-%d %d: not an update", self.topic, part.index, offset
            )
            return
        key = ShareStateKey(record_key.group_id, record_key.topic_id, record_key.partition)
        self._stage(part, offset, header.producer_id, header.producer_epoch, key, value)

    @staticmethod
    def _stage(
        part: _StatePartition,
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

    def _apply_marker(
        self, part: _StatePartition, producer_id: int, producer_epoch: int, commit: bool
    ) -> list[ShareStateKey]:
        """The one place a marker changes state (live and replay): materialize or discard."""
        pending = part.pending_txn.get(producer_id)
        if pending is None or pending.producer_epoch > producer_epoch:
            return []  # nothing staged, or a newer transaction an old marker must not touch
        del part.pending_txn[producer_id]
        keys = list(pending.updates)
        if not commit:
            return keys
        for key, values in pending.updates.items():
            entry = part.states.get(key)
            if entry is None:
                continue  # the state was deleted meanwhile; nothing to apply to
            batches = entry.batches
            for value in values:
                batches = tuple(
                    overlay(batches, _from_records(value.state_batches), entry.start_offset)
                )
            # The committed acks may complete a prefix: the start offset moves past it, as
            # the share partition's own next write would have moved it.
            start = _past_terminal_prefix(entry.start_offset, batches)
            entry.start_offset = start
            entry.batches = tuple(combine(batches, (), start))
            # The acks live only in the pending batch (and the marker) until a snapshot holds
            # them: pruning must not pass that batch before then.
            floor = entry.materialized_floor
            entry.materialized_floor = (
                pending.first_offset if floor is None else min(floor, pending.first_offset)
            )
        return keys

    # --- internals: pruning and timers --------------------------------------------------------

    @staticmethod
    def _first_needed_offset(part: _StatePartition) -> int:
        needed = [entry.snapshot_offset for entry in part.states.values()]
        needed.extend(
            e.materialized_floor for e in part.states.values() if e.materialized_floor is not None
        )
        needed.extend(pending.first_offset for pending in part.pending_txn.values())
        return min(needed) if needed else part.log.log_end_offset


def _resnapshot(entry: _KeyState, write_timestamp: int) -> ShareSnapshotValue:
    """A snapshot of ``entry``'s current state, one snapshot epoch later."""
    return ShareSnapshotValue(
        snapshot_epoch=entry.snapshot_epoch + 1,
        state_epoch=entry.state_epoch,
        leader_epoch=entry.leader_epoch,
        start_offset=entry.start_offset,
        create_timestamp=entry.create_timestamp,
        write_timestamp=write_timestamp,
        state_batches=_to_records(entry.batches),
    )
