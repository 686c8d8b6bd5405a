"""The broker's share-group layer: groups, share partitions, sessions and the persister together.

``ShareManager`` is sans-IO like the rest of the core.  It owns

* the ``ShareGroupCoordinator`` (membership, assignment, group configs, the
  two-stage partition initialization), persisted in ``__consumer_offsets-0``;
* the ``ShareCoordinator`` (durable share-partition state in
  ``__share_group_state``), which is the ``Persister`` of the share partitions;
* one ``SharePartition`` per (group, topic partition), created on first use;
* the ``ShareSessionCache`` of ShareFetch/ShareAcknowledge sessions.

It reacts to the events that cross those parts: a member leaving or expiring
releases its acquired records; a closed session or connection does the same;
group config changes reach the share partitions; appends to a data partition
let share partitions move with the LSO; deleted topics delete share state.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from coordinator.log.storage import PartitionLog
from coordinator.partition import Partition
from coordinator.shard_runtime import ControlMarker
from coordinator.share.group_config import ShareGroupConfig
from coordinator.share.group_coordinator import ShareGroupCoordinator
from coordinator.share.group_model import HeartbeatRequest, HeartbeatResult
from coordinator.share.group_shard import ShareGroupRuntime
from coordinator.share.partition_model import DeadLetter, DeadLetterSink
from coordinator.share.persister import ShareStateKey
from coordinator.share.sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    ShareSession,
    ShareSessionCache,
)
from coordinator.share.share_coordinator import ShareCoordinator, ShareStateRuntime
from coordinator.share.share_partition import (
    AckBatch,
    AcquireResult,
    PendingPlan,
    SharePartition,
    SharePartitionConfig,
    SharePartitionState,
    validate_ack_batches,
)
from coordinator.topics import TopicRegistry
from txn.clock import Clock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import SHARE_GROUP_STATE_TOPIC, TopicIdPartition, TopicPartition

log = logging.getLogger("sharetxn.share")

EventSink = Callable[[str, str, int], None]
"""(group id, event kind, count): metric events of the share partitions."""


@dataclass(slots=True)
class PartitionAcks:
    """The acknowledgement batches of one partition in a ShareFetch/ShareAcknowledge."""

    tip: TopicIdPartition
    batches: list[AckBatch] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class VerifiedAcks:
    """One partition of a TxnShareAcknowledge: its acks, the index of its share-state
    partition and ``BrokerCore.verify_in_transaction``'s verdict on that partition."""

    acks: PartitionAcks
    state_partition: int
    verdict: ErrorCode


@dataclass(frozen=True, slots=True)
class _PlannedAcks:
    """A partition of a TxnShareAcknowledge that passed validation, not written yet."""

    tip: TopicIdPartition
    state_partition: int
    key: ShareStateKey
    sp: SharePartition
    plan: PendingPlan


@dataclass(slots=True)
class PartitionFetch:
    """One partition of a ShareFetch response."""

    tip: TopicIdPartition
    error: ErrorCode = ErrorCode.NONE
    ack_error: ErrorCode = ErrorCode.NONE
    result: AcquireResult | None = None
    acked: bool = False


@dataclass(slots=True)
class ShareFetchOutcome:
    error: ErrorCode
    error_message: str | None = None
    partitions: dict[TopicIdPartition, PartitionFetch] = field(default_factory=dict)
    session: ShareSession | None = None
    #: aborted records read and archived, nothing acquired from them: answered at once, as
    #: Kafka answers once its log read found records
    archived: int = 0

    @property
    def acquired_count(self) -> int:
        return sum(p.result.count for p in self.partitions.values() if p.result is not None)


class ShareManager:
    """Share groups on one broker."""

    def __init__(
        self,
        clock: Clock,
        config: BrokerConfig,
        topics: TopicRegistry,
        partitions: dict[TopicPartition, Partition],
        group_runtime: ShareGroupRuntime,
        state_runtime: ShareStateRuntime,
        open_state_log: Callable[[int], PartitionLog],
        on_event: EventSink | None = None,
    ) -> None:
        """The coordinators are built over the runtimes the composition root made
        (``coordinator.assembly``); ``open_state_log(index)`` opens a share-state log."""
        self.clock = clock
        self.config = config
        self.topics = topics
        self.data = partitions
        self.on_event = on_event
        self.groups = ShareGroupCoordinator(
            group_runtime,
            config,
            topics,
            on_member_removed=self._on_member_removed,
            on_config_changed=self._on_config_changed,
        )
        self.persister = ShareCoordinator(
            state_runtime,
            open_state_log,
            prune_interval_ms=config.get_int("share.coordinator.state.topic.prune.interval.ms"),
            cold_partition_snapshot_interval_ms=config.get_int(
                "share.coordinator.cold.partition.snapshot.interval.ms"
            ),
        )
        self.sessions = ShareSessionCache(config.get_int("group.share.max.share.sessions"))
        self.share_partitions: dict[tuple[str, uuid.UUID, int], SharePartition] = {}
        self._leaving: tuple[str, str] | None = None
        # producer id -> when its first pending share ack arrived (for the KIP's metrics)
        self._txn_started_ms: dict[int, int] = {}
        self.on_txn_metric: Callable[[str, int], None] | None = None
        #: KIP-1191: takes (dead letter, the group's dead-letter topic, copy the records?);
        #: set by the broker (``coordinator.share_dead_letters``)
        self.dead_letters: Callable[[DeadLetter, str, bool], None] | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def in_flight_records(self) -> int:
        """Records between each share partition's start and end offsets, summed (a metric,
        read from any thread)."""
        return sum(sp.in_flight_count for sp in list(self.share_partitions.values()))

    def load(self) -> None:
        self.persister.load()
        self.groups.load()
        self.groups.on_topics_changed()
        for group_id in self.groups.groups_with_pending_state_work():
            self.do_state_work(group_id)

    def close(self) -> None:
        self.groups.close()
        self.persister.close()

    # -- membership -----------------------------------------------------------------------------

    def heartbeat(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        rack_id: str | None,
        subscribed_topic_names: list[str] | None,
        *,
        client_id: str | None = None,
        client_host: str | None = None,
    ) -> HeartbeatResult:
        if subscribed_topic_names:
            # Subscribing to a topic that does not exist yet: Kafka's group coordinator sees it
            # when it is created; we also check now in case it was created in the meantime.
            self.groups.catch_up_topics()
        # A member that leaves on purpose closes its share session itself, right after the
        # leave (ShareAcknowledge at epoch -1, carrying its last acknowledgements), so its
        # records must stay acquired until then; only an expired member is released here.
        self._leaving = (group_id, member_id) if member_epoch == -1 else None
        request = HeartbeatRequest(
            group_id,
            member_id,
            member_epoch,
            rack_id,
            subscribed_topic_names,
            client_id=client_id,
            client_host=client_host,
        )
        try:
            result = self.groups.heartbeat(request)
        finally:
            self._leaving = None
        if self.do_state_work(group_id) and result.error is ErrorCode.NONE and member_epoch >= 0:
            # Initializing share state made partitions assignable: answer with the new
            # assignment now rather than one heartbeat interval later.
            again = self.groups.heartbeat(
                replace(
                    request,
                    member_id=result.member_id or member_id,
                    member_epoch=result.member_epoch,
                    subscribed_topic_names=None,
                )
            )
            if again.error is ErrorCode.NONE:
                # The second pass sends the assignment only if it changed since the first; the
                # first one's (a join's, a full request's) must not be lost with it, or the
                # member never learns of partitions it holds (chaos bug B4).
                if again.assignment is None and result.assignment is not None:
                    return replace(again, assignment=result.assignment)
                return again
        return result

    def do_state_work(self, group_id: str) -> bool:
        """Initialize share state of new partitions and delete that of removed ones (seed 002).

        Returns whether any partition changed stage.
        """
        pending = self.groups.partitions_to_initialize(group_id)
        by_topic: dict[uuid.UUID, list[int]] = {}
        view = self.groups.group(group_id)
        state_epoch = view.group_epoch if view is not None else 0
        for topic_id, partition in pending:
            key = ShareStateKey(group_id, topic_id, partition)
            if self.persister.state(key) is None:
                error = self.persister.initialize_state(key, state_epoch, -1)
                if error is not ErrorCode.NONE:
                    log.warning("initializing share state %s failed: %s", key, error.name)
                    continue
            by_topic.setdefault(topic_id, []).append(partition)
        if by_topic:
            self.groups.mark_initialized_topics(group_id, by_topic)
        deleting = self.groups.partitions_to_delete(group_id)
        gone: dict[uuid.UUID, list[int]] = {}
        for topic_id, partition in deleting:
            key = ShareStateKey(group_id, topic_id, partition)
            self._drop_share_partition(key)
            error = self.persister.delete_state(key)
            if error is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and self.persister.state(key) is None:
                error = ErrorCode.NONE  # a deleted topic's: its state went with the topic
            if error is ErrorCode.NONE:
                gone.setdefault(topic_id, []).append(partition)
        for topic_id, parts in gone.items():
            self.groups.mark_deleted(group_id, topic_id, parts)
        return bool(by_topic or gone)

    def _on_member_removed(self, group_id: str, member_id: str) -> None:
        if self._leaving == (group_id, member_id):
            return
        session = self.sessions.close(group_id, member_id)
        self._release_member(group_id, member_id)
        if session is not None:
            log.info("share session of %s/%s closed: member left the group", group_id, member_id)

    def _release_member(self, group_id: str, member_id: str) -> None:
        for (gid, _tid, _p), sp in list(self.share_partitions.items()):
            if gid == group_id:
                sp.release_acquired_records(member_id)

    def _on_config_changed(self, group_id: str, config: ShareGroupConfig) -> None:
        new = self.partition_config(group_id)
        for (gid, _tid, _p), sp in self.share_partitions.items():
            if gid == group_id:
                sp.update_config(new)

    def partition_config(self, group_id: str) -> SharePartitionConfig:
        group = self.groups.group_config(group_id)
        reset = group.auto_offset_reset_strategy
        return SharePartitionConfig.from_broker_config(
            self.config,
            delivery_count_limit=group.delivery_count_limit,
            record_lock_duration_ms=group.record_lock_duration_ms,
            max_in_flight_records=group.partition_max_record_locks,
            isolation=group.isolation_level,
            auto_offset_reset="earliest" if reset == "earliest" else "latest",
            reset_duration_ms=group.auto_offset_reset_duration_ms,
            renew_acknowledge_enabled=group.renew_acknowledge_enabled,
        )

    def _dead_letter_sink(self, group_id: str, tp: TopicPartition) -> DeadLetterSink:
        """Where ``group_id``'s share partition of ``tp`` reports records archived for a
        dead-letter cause: to the group's dead-letter topic when it has one (Kafka's
        ``isDLQEnabledForGroup``: ``share.version`` 2, finalized here, and the topic set)."""

        def sink(first: int, last: int, delivery_count: int, cause: str) -> None:
            writer = self.dead_letters
            if writer is None:
                return
            config = self.groups.group_config(group_id)
            if not config.dlq_topic_name:
                return
            letter = DeadLetter(
                group_id, tp.topic, tp.partition, first, last, delivery_count, cause
            )
            writer(letter, config.dlq_topic_name, config.dlq_copy_record)

        return sink

    # -- share partitions -----------------------------------------------------------------------

    def share_partition(
        self, group_id: str, tip: TopicIdPartition
    ) -> tuple[ErrorCode, SharePartition | None]:
        key = (group_id, tip.topic_id, tip.partition)
        sp = self.share_partitions.get(key)
        if sp is not None and sp.state is SharePartitionState.FAILED:
            # Its initialization failed (e.g. a state write hit an I/O error): as Kafka's
            # SharePartitionManager, discard it so the next request starts a fresh one.
            del self.share_partitions[key]
            sp = None
        if sp is None:
            info = self.topics.by_id(tip.topic_id)
            if info is None:
                return ErrorCode.UNKNOWN_TOPIC_ID, None
            tp = TopicPartition(info.name, tip.partition)
            data = self.data.get(tp)
            if data is None:
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
            state_key = ShareStateKey(group_id, tip.topic_id, tip.partition)
            if self.persister.state(state_key) is None:
                # Not initialized by the group yet (e.g. fetch before the heartbeat did it).
                view = self.groups.group(group_id)
                epoch = view.group_epoch if view is not None else 0
                error = self.persister.initialize_state(state_key, epoch, -1)
                if error is not ErrorCode.NONE:
                    return error, None
            sp = SharePartition(
                group_id,
                tip.topic_id,
                tp,
                data,
                self.persister,
                self.clock,
                self.partition_config(group_id),
                on_event=self._event_sink(group_id),
                on_dead_letter=self._dead_letter_sink(group_id, tp),
            )
            self.share_partitions[key] = sp
        fresh = sp.state is not SharePartitionState.ACTIVE
        error = sp.maybe_initialize()
        if error is not ErrorCode.NONE:
            return error, None
        if fresh:
            # Records of transactions still open when the broker stopped stay exclusive to
            # them (DESIGN §4.1): the share coordinator kept their pending acks.
            state_key = ShareStateKey(group_id, tip.topic_id, tip.partition)
            for producer_id, epoch, batches in self.persister.pending_for(state_key):
                sp.restore_pending(producer_id, epoch, batches)
        return ErrorCode.NONE, sp

    def _event_sink(self, group_id: str) -> Callable[[str, int], None] | None:
        sink = self.on_event
        if sink is None:
            return None

        def emit(kind: str, count: int) -> None:
            sink(group_id, kind, count)

        return emit

    def _drop_share_partition(self, key: ShareStateKey) -> None:
        self.share_partitions.pop((key.group_id, key.topic_id, key.partition), None)

    def on_data_appended(self, tp: TopicPartition) -> None:
        """A data partition grew (or its LSO moved): share partitions may archive or advance."""
        info = self.topics.get(tp.topic)
        if info is None:
            return
        for (_gid, tid, p), sp in self.share_partitions.items():
            if tid == info.topic_id and p == tp.partition:
                sp.on_log_appended()

    def on_topics_changed(self, deleted_topic_ids: list[uuid.UUID] | None = None) -> None:
        if deleted_topic_ids:
            gone = set(deleted_topic_ids)
            for key in [k for k in self.share_partitions if k[1] in gone]:
                del self.share_partitions[key]
            # As Kafka's share coordinator does: tombstones for every state of the topics.
            error = self.persister.on_topics_deleted(sorted(gone))
            if error is not ErrorCode.NONE:
                log.warning("share state of deleted topics not removed: %s", error.name)
        for group_id in self.groups.on_topics_changed():
            self.do_state_work(group_id)

    # -- ShareFetch / ShareAcknowledge -----------------------------------------------------------

    def open_or_check_session(
        self,
        group_id: str,
        member_id: str,
        epoch: int,
        connection_id: int,
    ) -> tuple[ErrorCode, ShareSession | None]:
        if epoch == INITIAL_EPOCH:
            # A new session replacing the member's old one leaves the records it acquired
            # locked to the member until they are acknowledged or their locks time out.
            lookup = self.sessions.open(group_id, member_id, connection_id)
            return lookup.error, lookup.session
        lookup = self.sessions.check(group_id, member_id, epoch)
        return lookup.error, lookup.session

    def acknowledge(
        self,
        group_id: str,
        member_id: str,
        acks: list[PartitionAcks],
        *,
        renew_ack: bool = False,
    ) -> dict[TopicIdPartition, ErrorCode]:
        """``renew_ack``: the request's IsRenewAck, without which a RENEW is INVALID_REQUEST."""
        out: dict[TopicIdPartition, ErrorCode] = {}
        for pa in acks:
            error = validate_ack_batches(pa.batches, renew_allowed=renew_ack)
            if error is not ErrorCode.NONE:
                out[pa.tip] = error
                continue
            error, sp = self.share_partition(group_id, pa.tip)
            if sp is None:
                out[pa.tip] = error
                continue
            out[pa.tip] = sp.acknowledge(member_id, pa.batches)
        return out

    def acquire(
        self,
        group_id: str,
        member_id: str,
        session: ShareSession,
        max_records: int,
        max_bytes: int,
        outcome: ShareFetchOutcome,
        *,
        record_limit: bool = False,
        batch_size: int | None = None,
    ) -> None:
        """Acquire records from the session's partitions into ``outcome`` (one pass); at most
        ``max_records`` in all (ShareFetch's MaxRecords, exact in ``record_limit`` mode)."""
        remaining = max_records
        budget = max_bytes
        for tip in session.fetch_order():
            entry = outcome.partitions.setdefault(tip, PartitionFetch(tip))
            if entry.error is not ErrorCode.NONE or remaining <= 0 or budget <= 0:
                continue
            error, sp = self.share_partition(group_id, tip)
            if sp is None:
                entry.error = error
                continue
            result = sp.acquire(
                member_id, remaining, budget, record_limit=record_limit, batch_size=batch_size
            )
            if result.error is not ErrorCode.NONE:
                entry.error = result.error
                continue
            outcome.archived += result.archived
            if result.acquired:
                if entry.result is None or not entry.result.acquired:
                    entry.result = result
                else:
                    # A second pass of a long poll: add to what the first pass acquired.
                    entry.result = AcquireResult(
                        entry.result.records + result.records,
                        entry.result.acquired + result.acquired,
                    )
                remaining -= result.count
                budget -= len(result.records)

    def close_session(self, group_id: str, member_id: str) -> None:
        """Epoch -1: the session ends and the member's acquired records return."""
        if self.sessions.close(group_id, member_id) is not None:
            self._release_member(group_id, member_id)

    def on_connection_closed(self, connection_id: int) -> None:
        for session in self.sessions.close_connection(connection_id):
            self._release_member(session.group_id, session.member_id)

    @staticmethod
    def is_final(epoch: int) -> bool:
        return epoch == FINAL_EPOCH

    # -- KIP-1289: transactional acknowledgements ------------------------------------------------

    def state_partition_of(
        self, group_id: str, topic_id: uuid.UUID, partition: int
    ) -> TopicPartition:
        """The ``__share_group_state`` partition holding (group, topic partition) (DESIGN §3)."""
        index = self.persister.partition_for(ShareStateKey(group_id, topic_id, partition))
        return TopicPartition(SHARE_GROUP_STATE_TOPIC, index)

    def txn_share_acknowledge(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str | None,
        acks: Sequence[VerifiedAcks],
    ) -> dict[TopicIdPartition, ErrorCode]:
        """TxnShareAcknowledge: ACQUIRED -> TX_PENDING, staged durably in the transaction.

        Per partition: its share-state partition's verdict must be NONE (``acks``' verdicts,
        from ``BrokerCore.verify_in_transaction``: the partition was added to the ongoing
        transaction of (pid, epoch), else DESIGN §4.3's error); the share partition validates
        ownership and states (INVALID_RECORD_STATE, nothing changes).  The pending acks of
        every partition that passed are then appended per share-state partition, one
        transactional batch (one fsync) each (``_stage_pending``); only then do the records
        become TX_PENDING.  Answers keep the request's order.
        """
        out: dict[TopicIdPartition, ErrorCode] = {}
        planned: list[_PlannedAcks] = []
        planned_tips: set[TopicIdPartition] = set()
        for verified in acks:
            tip = verified.acks.tip
            if tip in planned_tips:
                # The same partition twice: the first acks become TX_PENDING before the
                # second are planned, as when every partition was written on its own.
                self._stage_pending(producer_id, producer_epoch, planned, out)
                planned, planned_tips = [], set()
            out[tip] = verified.verdict
            if verified.verdict is not ErrorCode.NONE:
                continue
            error, sp = self.share_partition(group_id, tip)
            if sp is None:
                out[tip] = error
                continue
            plan = sp.plan_pending(member_id, producer_id, producer_epoch, verified.acks.batches)
            if isinstance(plan, ErrorCode):
                out[tip] = plan
                continue
            key = ShareStateKey(group_id, tip.topic_id, tip.partition)
            planned.append(_PlannedAcks(tip, verified.state_partition, key, sp, plan))
            planned_tips.add(tip)
        self._stage_pending(producer_id, producer_epoch, planned, out)
        return out

    def _stage_pending(
        self,
        producer_id: int,
        producer_epoch: int,
        planned: Sequence[_PlannedAcks],
        out: dict[TopicIdPartition, ErrorCode],
    ) -> None:
        """Write the planned pending acks, one batch per share-state partition, then apply the
        plans whose write succeeded, in request order (``out``: each partition's answer)."""
        by_state_partition: dict[int, list[_PlannedAcks]] = {}
        for entry in planned:
            by_state_partition.setdefault(entry.state_partition, []).append(entry)
        written: dict[TopicIdPartition, ErrorCode] = {}
        for state_partition, entries in by_state_partition.items():
            errors = self.persister.write_pending_batch(
                state_partition,
                producer_id,
                producer_epoch,
                [(e.key, e.plan.staged) for e in entries],
            )
            written.update(zip((e.tip for e in entries), errors, strict=True))
        for entry in planned:
            if (error := written[entry.tip]) is not ErrorCode.NONE:
                out[entry.tip] = error
                continue
            out[entry.tip] = entry.sp.apply_pending(entry.plan)
            if producer_id not in self._txn_started_ms:
                self._txn_started_ms[producer_id] = self.clock.now_ms()
                self._emit_txn("share-transaction-active", 1)

    def complete_transaction(
        self,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
    ) -> ErrorCode:
        """A WriteTxnMarkers entry for a share-state partition (DESIGN §4.5).

        The marker is appended to the state partition, the pending acks are materialized
        (COMMIT) or discarded (ABORT), and the share partitions change, all before the marker
        is acknowledged to the transaction coordinator.
        """
        started = self.clock.now_ms()
        outcome = self.persister.complete_transaction(
            partition, ControlMarker(commit, producer_id, producer_epoch, coordinator_epoch)
        )
        if outcome.error is not ErrorCode.NONE:
            return outcome.error
        for key in outcome.keys:
            sp = self.share_partitions.get((key.group_id, key.topic_id, key.partition))
            if sp is None or sp.state is not SharePartitionState.ACTIVE:
                continue  # not loaded: it reads the materialized state when it initializes
            # A commit is already durable through the marker; an abort's revert is written.
            sp.complete_pending(producer_id, producer_epoch, commit, persist=not commit)
        if outcome.applied and producer_id not in self.persister.open_transactions():
            began = self._txn_started_ms.pop(producer_id, None)
            if began is not None:
                self._emit_txn("share-transaction-active", -1)
                # From the first pending ack to the coordinator's decision reaching us.
                self._emit_txn("share-transaction-prepare-time-ms", started - began)
            if commit:
                self._emit_txn("share-transaction-commit-time-ms", self.clock.now_ms() - started)
            else:
                self._emit_txn("share-transaction-abort-total", 1)
        return ErrorCode.NONE

    def on_transaction_timed_out(self, transactional_id: str, producer_id: int) -> None:
        if producer_id in self._txn_started_ms:
            self._emit_txn("share-transaction-timeout-total", 1)

    def _emit_txn(self, name: str, value: int) -> None:
        if self.on_txn_metric is not None:
            self.on_txn_metric(name, value)
