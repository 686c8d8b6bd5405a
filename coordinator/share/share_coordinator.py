"""The share coordinator: durable share-partition state (Kafka's ShareCoordinatorService).

Every share partition's state (state epoch, leader epoch, start offset, and the in-flight
state batches) lives in one ``__share_group_state`` partition, chosen by ``partition_for``.
Each state partition has its own log (``storage_open(index)``); the coordinator owns all of
them for its whole life (single node).

**Runtime and shard.**  The state itself, its operations and its replay are the
``ShareStateShard`` (``state_shard``), owned by the ``CoordinatorRuntime`` the composition
root builds (``coordinator.assembly``) and hands to this coordinator.  Every request here is
``runtime.write(partition, op)``: the shard's operation validates it and returns the typed
records and the answer without changing anything; the runtime appends the records as one
batch, flushes, and only then replays them into the shard -- the same code ``load()`` replays
the logs with.  An append or flush failure returns an error (mapped as Kafka maps coordinator
append errors) and leaves the state untouched; a record whose flush failed is truncated away
so the log and the memory agree.

**Pruning.**  Each key remembers the log offset of its latest ShareSnapshot.  Records below the
smallest such offset in a partition are redundant (every key's state is rebuilt from its latest
snapshot and the updates after it); ``prune()`` raises the log start offset there, every
``share.coordinator.state.topic.prune.interval.ms``.  A partition with no live key is pruned to
its end.  Cold keys hold pruning back, so every
``share.coordinator.cold.partition.snapshot.interval.ms`` keys whose snapshot is older than that
are re-snapshotted (Kafka's ``snapshotColdPartitions``).

**KIP-1289.**  Transactional share acknowledgements (``write_pending``) are pid-tagged
(transactional) ShareUpdate batches, staged by the shard until the COMMIT/ABORT marker
(``complete_transaction``) materializes or drops them; a committed key is re-snapshotted at
once.  ``prune()`` keeps every record from the first offset of a pending transaction.

Protocol errors are returned (``ErrorCode`` / result dataclasses), never raised.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence

from coordinator.log.storage import PartitionLog
from coordinator.shard_runtime import ControlMarker, CoordinatorResult, CoordinatorRuntime
from coordinator.share.persister import (
    PersisterStateBatch,
    ReadStateResult,
    ShareStateKey,
    StateSummary,
    StateWrite,
)
from coordinator.share.state_partitions import MarkerOutcome, ShareStateView
from coordinator.share.state_shard import ShareStateRecord, ShareStateShard
from txn.errors import ErrorCode, InvalidConfigError
from txn.ids import SHARE_GROUP_STATE_TOPIC

log = logging.getLogger(__name__)

# share.coordinator.state.topic.prune.interval.ms (Kafka default 5 min).
DEFAULT_PRUNE_INTERVAL_MS = 300_000
# share.coordinator.cold.partition.snapshot.interval.ms (Kafka default 5 min).
DEFAULT_COLD_PARTITION_SNAPSHOT_INTERVAL_MS = 300_000

ShareStateRuntime = CoordinatorRuntime[ShareStateShard]
"""The runtime owning a ``ShareStateShard``; the composition root (``coordinator.assembly``)
builds it."""


class ShareCoordinator:
    """The ``Persister`` of every share partition, over the ``__share_group_state`` logs."""

    def __init__(
        self,
        runtime: ShareStateRuntime,
        storage_open: Callable[[int], PartitionLog],
        *,
        prune_interval_ms: int = DEFAULT_PRUNE_INTERVAL_MS,
        cold_partition_snapshot_interval_ms: int | None = (
            DEFAULT_COLD_PARTITION_SNAPSHOT_INTERVAL_MS
        ),
    ) -> None:
        """``storage_open(index)`` opens ``__share_group_state-index``.

        ``cold_partition_snapshot_interval_ms`` None disables cold snapshots.
        """
        if prune_interval_ms <= 0:
            raise InvalidConfigError("the prune interval must be positive")
        if (
            cold_partition_snapshot_interval_ms is not None
            and cold_partition_snapshot_interval_ms <= 0
        ):
            raise InvalidConfigError("the cold partition snapshot interval must be positive")
        self._runtime = runtime
        self._shard = runtime.shard
        self._storage_open = storage_open
        self._prune_interval_ms = prune_interval_ms
        self._cold_interval_ms = cold_partition_snapshot_interval_ms

    # --- lifecycle ----------------------------------------------------------------------------

    @property
    def num_partitions(self) -> int:
        return self._shard.num_partitions

    @property
    def topic(self) -> str:
        return SHARE_GROUP_STATE_TOPIC

    def partition_for(self, key: ShareStateKey) -> int:
        """``java_string_hash(coordinator_key(key))`` (abs) modulo the partition count."""
        return self._shard.partition_for(key)

    def availability(self) -> ErrorCode:
        """NONE once loaded; COORDINATOR_LOAD_IN_PROGRESS before, NOT_AVAILABLE after close."""
        return self._runtime.availability()

    def load(self) -> None:
        """Open and replay every state partition, then start the prune and cold-snapshot jobs."""
        self._runtime.cancel_timers()
        shard = self._shard
        shard.reset()

        def opened() -> Iterator[tuple[int, PartitionLog]]:
            for index in range(shard.num_partitions):
                target = self._storage_open(index)
                shard.add_partition(index)
                yield index, target

        self._runtime.load(logs=opened())
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
        """InitializeShareGroupState (``ShareStateShard.initialize_state``)."""
        return self._runtime.write(
            self.partition_for(key),
            lambda shard: shard.initialize_state(key, state_epoch, start_offset),
        )

    def read_state(self, key: ShareStateKey, leader_epoch: int) -> ReadStateResult:
        """ReadShareGroupState (``ShareStateShard.read_state``): a new leader's epoch is
        written before the state is returned."""
        result = self._runtime.write(
            self.partition_for(key), lambda shard: shard.read_state(key, leader_epoch)
        )
        return ReadStateResult(result) if isinstance(result, ErrorCode) else result

    def write_state(self, key: ShareStateKey, write: StateWrite) -> ErrorCode:
        """WriteShareGroupState (``ShareStateShard.write_state``): durable before NONE."""
        return self._runtime.write(
            self.partition_for(key), lambda shard: shard.write_state(key, write)
        )

    def delete_state(self, key: ShareStateKey) -> ErrorCode:
        """DeleteShareGroupState: a tombstone; a key with no state is success with no write."""
        return self._runtime.write(self.partition_for(key), lambda shard: shard.delete_state(key))

    def read_state_summary(self, key: ShareStateKey, leader_epoch: int) -> StateSummary:
        """ReadShareGroupStateSummary: no fencing, no write."""
        del leader_epoch  # Kafka does not fence summaries
        if (error := self.availability()) is not ErrorCode.NONE:
            return StateSummary(error)
        return self._shard.read_state_summary(key)

    # --- maintenance --------------------------------------------------------------------------

    def on_topics_deleted(self, topic_ids: Iterable[uuid.UUID]) -> ErrorCode:
        """Tombstone every key of the deleted topics (Kafka's ``maybeCleanupShareState``)."""
        if (error := self.availability()) is not ErrorCode.NONE:
            return error
        result = ErrorCode.NONE
        for index, key in self._shard.keys_of_topics(topic_ids):
            error = self._tombstone(index, key)
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
        for index in sorted(self._shard.partitions()):
            part_log = self._runtime.partition_log(index)
            needed = self._shard.first_needed_offset(index)
            target = part_log.log_end_offset if needed is None else needed
            if target <= part_log.log_start_offset:
                continue
            try:
                part_log.advance_start_offset(target)
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
        now = self._shard.clock.now_ms()
        written = 0
        for index in self._shard.partitions():
            for key in self._shard.cold_keys(index, now, self._cold_interval_ms):
                if self._resnapshot(index, key, now) is ErrorCode.NONE:
                    written += 1
        return written

    # --- read-only views ----------------------------------------------------------------------

    def state(self, key: ShareStateKey) -> ShareStateView | None:
        """The current state of a key, or None if it has none."""
        return self._shard.state(key)

    def keys(self, group_id: str | None = None) -> list[ShareStateKey]:
        """Every key with state (of one group if given), sorted."""
        return self._shard.keys(group_id)

    # --- KIP-1289: transactional (pending) updates --------------------------------------------

    def write_pending(
        self,
        key: ShareStateKey,
        producer_id: int,
        producer_epoch: int,
        batches: Sequence[PersisterStateBatch],
    ) -> ErrorCode:
        """TxnShareAcknowledge of one key (``write_pending_batch`` with that key alone)."""
        partition = self.partition_for(key)
        return self.write_pending_batch(partition, producer_id, producer_epoch, [(key, batches)])[0]

    def write_pending_batch(
        self,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        writes: Sequence[tuple[ShareStateKey, Sequence[PersisterStateBatch]]],
    ) -> list[ErrorCode]:
        """TxnShareAcknowledge: stage target states for keys of state partition ``partition``
        in the producer's transaction; each key's error, in ``writes`` order.

        The updates of every key the shard accepts are appended as one transactional batch,
        fsynced once, before they are staged (Kafka's coordinator runtime also appends a
        request's records as one batch); the transaction's marker later commits or discards
        them.  A key the shard refuses answers its own error; if the append fails (or the
        coordinator is not available), every other key answers the write's error.
        """
        verdicts: list[ErrorCode] = []

        def op(shard: ShareStateShard) -> CoordinatorResult[ShareStateRecord, list[ErrorCode]]:
            result = shard.write_pending_batch(producer_id, producer_epoch, writes)
            verdicts.extend(result.response)
            return result

        outcome = self._runtime.write(partition, op)
        if not isinstance(outcome, ErrorCode):
            return outcome
        if not verdicts:  # not available: the shard was not asked
            return [outcome] * len(writes)
        return [outcome if v is ErrorCode.NONE else v for v in verdicts]

    def complete_transaction(self, partition: int, marker: ControlMarker) -> MarkerOutcome:
        """WriteTxnMarkers for one state partition: append the marker, then apply or discard.

        Idempotent: a marker for a producer with nothing staged (or staged by a newer epoch)
        is appended and changes nothing.  Returns the keys whose pending acks were resolved.
        """
        if (error := self.availability()) is not ErrorCode.NONE:
            return MarkerOutcome(error)
        outcome = self._runtime.write(
            partition, lambda shard: shard.complete_transaction(partition, marker)
        )
        if isinstance(outcome, ErrorCode):
            return MarkerOutcome(
                ErrorCode.NOT_LEADER_OR_FOLLOWER
                if outcome is ErrorCode.NOT_COORDINATOR
                else outcome
            )
        if outcome.error is ErrorCode.NONE and marker.commit:
            for key in outcome.keys:
                # Best effort: a failed snapshot keeps the pruning floor, so nothing is lost.
                self._snapshot_key(partition, key)
        return outcome

    def pending_for(
        self, key: ShareStateKey
    ) -> list[tuple[int, int, tuple[PersisterStateBatch, ...]]]:
        """(producer id, epoch, target batches) of every open transaction touching ``key``."""
        return self._shard.pending_for(key)

    def open_transactions(self) -> dict[int, list[tuple[int, ShareStateKey]]]:
        """producer id -> (state partition, key) of every staged transactional update."""
        return self._shard.open_transactions()

    # --- internals ----------------------------------------------------------------------------

    def _snapshot_key(self, partition: int, key: ShareStateKey) -> ErrorCode:
        return self._resnapshot(partition, key, self._shard.clock.now_ms())

    def _resnapshot(self, partition: int, key: ShareStateKey, now: int) -> ErrorCode:
        return self._runtime.write(partition, lambda shard: shard.resnapshot(key, now))

    def _tombstone(self, partition: int, key: ShareStateKey) -> ErrorCode:
        return self._runtime.write(partition, lambda shard: shard.tombstone(key))
