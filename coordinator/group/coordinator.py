"""The consumer-group coordinator: classic groups and offsets, sans I/O.

It is handed a ``Clock``, the runtime of one ``__consumer_offsets`` partition (partition 1;
partition 0 holds the share groups) owning the shard, the ``BrokerConfig`` and the metric
emitter the shard shares -- all built by ``coordinator.assembly`` -- and shares one group-id
namespace with the share-group coordinator through ``is_share_group``.

**Classic protocol** (Kafka's GroupMetadataManager for classic groups).  JoinGroup v4+ without
a member id gets MEMBER_ID_REQUIRED and a new id; a join moves the group to
PreparingRebalance, which completes when every member has rejoined or the rebalance timeout
(the largest of the members') passes, members that did not rejoin being removed.  The first
rebalance of an empty group waits ``group.initial.rebalance.delay.ms`` for more members.  The
completion bumps the generation, elects the protocol (a vote) and a leader, and answers every
join; the leader's SyncGroup carries the assignment, which is written to the log before the
group turns Stable and every SyncGroup is answered.  Heartbeats keep members alive for their
session timeout; LeaveGroup (batched, KIP-345) and session expiry remove them and rebalance.
``group.instance.id`` (static membership) maps an instance to its latest member id; a join
with that instance id and no member id replaces the old member, which is then fenced.

**Offsets.**  OffsetCommit fences by generation and member (ILLEGAL_GENERATION,
UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS); generation -1 commits to an empty or new group
(manual assignment).  TxnOffsetCommit stages offsets under the producer id in a transactional
batch; the transaction marker (through the marker channel, like KIP-1289's share acks) commits
or drops them.  OffsetFetch's ``require_stable`` answers UNSTABLE_OFFSET_COMMIT while a
partition has a pending transactional offset.  OffsetDelete (KIP-496) refuses partitions of
topics the group is subscribed to (GROUP_SUBSCRIBED_TO_TOPIC).  Offsets of an empty group
expire ``offsets.retention.minutes`` after it became empty (KIP-211); an empty group without
offsets is then deleted.

**Persistence.**  The log-backed state is a shard (``coordinator.group.shard``: a membership
manager and an offset manager) owned by a ``CoordinatorRuntime``.  A change is computed as
Kafka's records (``coordinator.group.records``, ``consumer_records``); the runtime appends them
as one batch, flushes it, and only then replays them into the shard -- the code ``load()``
runs too (transactional batches and markers included).  A failed append changes nothing in
the shard and answers the mapped error.  A classic group's rebalance stays in memory, as in
Kafka: its record is written when the rebalance completes.

**Parts.**  The coordinator holds its parts and delegates to them, one method per request
for the handlers, the broker and the simulator: the classic protocol
(``classic_membership.ClassicMembership``), the consumer protocol
(``consumer_protocol.ConsumerMembership``), classic members of KIP-848 groups and the
conversions between the protocols (``mixed.MixedMembership``), the offset commands
(``offset_commands.OffsetCommands``) and the admin views (``admin_views.GroupAdminViews``).
The membership parts share one ``parts.GroupContext``; a request for a group id goes to the
part of the group's kind.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from coordinator.group.admin_views import GroupAdminViews
from coordinator.group.classic import CONSUMER_PROTOCOL_TYPE, ClassicGroup
from coordinator.group.classic_membership import ClassicMembership
from coordinator.group.consumer_model import ConsumerProtocolGroup
from coordinator.group.consumer_protocol import ConsumerHeartbeatResult, ConsumerMembership
from coordinator.group.consumer_records import Record
from coordinator.group.mixed import MixedMembership
from coordinator.group.offset_commands import (
    Committer,
    OffsetCommands,
    OffsetContext,
    OffsetMap,
)
from coordinator.group.offsets import OffsetStore
from coordinator.group.parts import GroupContext, TopicCatalog
from coordinator.group.results import (
    FetchedOffset,
    GroupDescription,
    GroupListing,
    JoinRequest,
    JoinResult,
    SyncResult,
)
from coordinator.group.shard import GroupMeter, GroupRuntime
from coordinator.group.timers import Timers
from coordinator.share.group_model import TopicLookup
from txn.clock import Clock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicPartition

__all__ = ["ConsumerGroupCoordinator"]

log = logging.getLogger("sharetxn.groups")


class ConsumerGroupCoordinator:
    """Consumer groups (classic, KIP-848 and mixed) and their offsets on one
    ``__consumer_offsets`` partition: the parts below, composed."""

    def __init__(
        self,
        clock: Clock,
        runtime: GroupRuntime,
        config: BrokerConfig,
        meter: GroupMeter,
        *,
        is_share_group: Callable[[str], bool] = lambda _g: False,
        topics: TopicLookup | None = None,
        consumer_timing: Callable[[str], tuple[int, int]] | None = None,
        topic_catalog: TopicCatalog | None = None,
        consumer_assignment_interval: Callable[[str], int] | None = None,
    ) -> None:
        """``runtime``: the runtime of ``__consumer_offsets`` partition 1, owning the shard;
        ``meter``: the metric emitter the shard reports through too (both built by
        ``coordinator.assembly``); ``topic_catalog``: every topic, for regex subscriptions."""
        self._clock = clock
        self._runtime = runtime
        self._timers = Timers()
        context = GroupContext(
            clock,
            config,
            runtime,
            self._timers,
            meter,
            topics,
            is_share_group,
            consumer_timing,
            topic_catalog,
            consumer_assignment_interval,
        )
        self._context = context
        # The shard's state, one object each for the coordinator's life (replay changes them).
        self._groups: dict[str, ClassicGroup] = context.groups
        self._consumer_groups: dict[str, ConsumerProtocolGroup] = context.consumer_groups
        self._pending_epochs: dict[int, int] = runtime.shard.offsets.pending_epochs
        self.classic = ClassicMembership(context)
        self.consumer = ConsumerMembership(
            context,
            take_over_classic=self._take_over_classic,
            maybe_downgrade=self._maybe_downgrade,
        )
        self.mixed = MixedMembership(context, self.consumer, self.classic)
        self.admin = GroupAdminViews(
            runtime, context.write, self.describe_as_classic, self.delete_consumer_group
        )
        self.offset_commands = OffsetCommands(
            OffsetContext(
                clock,
                config,
                runtime,
                self._timers,
                context.write,
                self._fence_committer,
                self.classic.touch_member,
                is_share_group,
                context.emit,
            )
        )

    @property
    def offsets(self) -> OffsetStore:
        """The committed offsets and the pending transactional ones (the shard's)."""
        return self._context.offsets

    # --- lifecycle ----------------------------------------------------------------------------

    def availability(self) -> ErrorCode:
        """NONE once loaded; COORDINATOR_LOAD_IN_PROGRESS before, NOT_AVAILABLE after close."""
        return self._runtime.availability()

    def load(self) -> None:
        """Replay the log: group metadata, offsets, transactional offsets and markers."""
        self._timers.cancel_all()
        self._runtime.shard.reset()
        self._runtime.load()
        self.consumer.after_replay()
        now = self._clock.now_ms()
        for group in self._groups.values():
            for member in group.members.values():
                self.classic.arm_session(group, member, now)
        self.offset_commands.schedule_expiry()

    def close(self) -> None:
        self._runtime.close()
        self._timers.cancel_all()

    def has_group(self, group_id: str) -> bool:
        return group_id in self._groups or group_id in self._consumer_groups

    def _take_over_classic(self, group_id: str) -> ErrorCode:
        return self.mixed.take_over_classic(group_id)

    def _maybe_downgrade(self, group_id: str) -> None:
        self.mixed.maybe_downgrade(group_id)

    # --- describe, list, delete (the admin part) ----------------------------------------------

    def describe(self, group_ids: Iterable[str]) -> list[GroupDescription]:
        """DescribeGroups."""
        return self.admin.describe(group_ids)

    def list_groups(
        self, states: Iterable[str] = (), types: Iterable[str] = ()
    ) -> list[GroupListing]:
        """ListGroups (KIP-518 states, KIP-848 types)."""
        return self.admin.list_groups(states, types)

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, ErrorCode]:
        """DeleteGroups."""
        return self.admin.delete_groups(group_ids)

    # --- offsets (the offset commands part) ---------------------------------------------------

    def commit_offsets(
        self, committer: Committer, offsets: OffsetMap
    ) -> dict[TopicPartition, ErrorCode]:
        """OffsetCommit: (offset, leader epoch, metadata) per partition."""
        return self.offset_commands.commit_offsets(committer, offsets)

    def commit_offsets_deferred(
        self, committer: Committer, offsets: OffsetMap
    ) -> tuple[dict[TopicPartition, ErrorCode], int | None]:
        """OffsetCommit appended, replayed once ``durable(token)`` says it is durable."""
        return self.offset_commands.commit_offsets_deferred(committer, offsets)

    def deferred_sync(self) -> Callable[[], None]:
        return self.offset_commands.deferred_sync()

    def durable(self, token: int) -> None:
        self.offset_commands.durable(token)

    def deferred_failed(self, token: int) -> None:
        self.offset_commands.deferred_failed(token)

    def txn_commit_offsets(
        self, producer_id: int, producer_epoch: int, committer: Committer, offsets: OffsetMap
    ) -> dict[TopicPartition, ErrorCode]:
        """TxnOffsetCommit: offsets staged under the producer until its transaction's marker."""
        return self.offset_commands.txn_commit_offsets(
            producer_id, producer_epoch, committer, offsets
        )

    def complete_transaction(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int
    ) -> ErrorCode:
        """A WriteTxnMarkers entry for this partition."""
        return self.offset_commands.complete_transaction(
            producer_id, producer_epoch, commit, coordinator_epoch
        )

    def fetch_offsets(
        self, group_id: str, partitions: list[TopicPartition] | None, require_stable: bool
    ) -> tuple[ErrorCode, dict[TopicPartition, FetchedOffset]]:
        """OffsetFetch for one group (``partitions`` None: every committed partition)."""
        return self.offset_commands.fetch_offsets(group_id, partitions, require_stable)

    def delete_offsets(
        self, group_id: str, partitions: list[TopicPartition]
    ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """OffsetDelete (KIP-496)."""
        return self.offset_commands.delete_offsets(group_id, partitions)

    def on_topic_deleted(self, topic: str) -> int:
        """A topic was deleted: every group's offsets on it go (tombstones)."""
        return self.offset_commands.on_topic_deleted(topic)

    def expire_offsets(self) -> int:
        """Delete the offsets past ``offsets.retention.minutes`` now (KIP-211)."""
        return self.offset_commands.expire_offsets()

    def _fence_committer(
        self, committer: Committer, partitions: Iterable[TopicPartition], transactional: bool
    ) -> ErrorCode:
        """A committer of ``partitions`` against its group's membership (generation or member
        epoch, member and instance id); generation -1 commits to an empty or new group."""
        consumer = self._consumer_groups.get(committer.group_id)
        if consumer is not None:
            return self.validate_consumer_commit(
                consumer,
                committer.member_id,
                committer.generation,
                [(tp.topic, tp.partition) for tp in partitions],
                transactional,
            )
        return self.classic.fence(committer)

    # --- the classic protocol: a classic group's, or a KIP-848 group's classic member's ------

    def join(self, req: JoinRequest, respond: Callable[[JoinResult], None]) -> None:
        """JoinGroup: answered through ``respond``, now or when the rebalance completes."""
        error = self.availability()
        if error is ErrorCode.NONE:
            error = self.classic.check_join(req)
        consumer = self._consumer_groups.get(req.group_id)
        if error is ErrorCode.NONE and consumer is not None:
            self.mixed.classic_join_to_consumer(consumer, req, respond)  # a mixed group
            return
        if error is not ErrorCode.NONE:
            respond(JoinResult(error, req.member_id))
            return
        self.classic.join(req, respond)

    def sync(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol: str | None,
        assignments: dict[str, bytes],
        respond: Callable[[SyncResult], None],
    ) -> None:
        consumer = self._consumer_groups.get(group_id)
        if self.availability() is ErrorCode.NONE and consumer is not None:
            respond(
                self.mixed.classic_sync_to_consumer(
                    consumer, generation, member_id, group_instance_id, protocol_type, protocol
                )
            )
            return
        self.classic.sync(
            group_id,
            generation,
            member_id,
            group_instance_id,
            protocol_type,
            protocol,
            assignments,
            respond,
        )

    def heartbeat(
        self, group_id: str, generation: int, member_id: str, group_instance_id: str | None
    ) -> ErrorCode:
        consumer = self._consumer_groups.get(group_id)
        if self.availability() is ErrorCode.NONE and consumer is not None:
            return self.mixed.classic_heartbeat_to_consumer(
                consumer, generation, member_id, group_instance_id
            )
        return self.classic.heartbeat(group_id, generation, member_id, group_instance_id)

    def leave(
        self, group_id: str, members: list[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]:
        """LeaveGroup: (top-level error, per member (member id, instance id, error))."""
        consumer = self._consumer_groups.get(group_id)
        if self.availability() is ErrorCode.NONE and consumer is not None:
            return ErrorCode.NONE, self.mixed.classic_leave_from_consumer(consumer, members)
        return self.classic.leave(group_id, members)

    # --- the consumer protocol (KIP-848) ------------------------------------------------------

    def consumer_heartbeat(
        self, group_id: str, member_id: str, member_epoch: int, **request: object
    ) -> ConsumerHeartbeatResult:
        """ConsumerGroupHeartbeat: join (epoch 0), heartbeat, or leave (epoch -1 / -2)."""
        return self.consumer.consumer_heartbeat(group_id, member_id, member_epoch, **request)

    def consumer_groups(self) -> Iterable[ConsumerProtocolGroup]:
        return self.consumer.consumer_groups()

    def describe_consumer_protocol(
        self, group_ids: Iterable[str]
    ) -> list[tuple[str, ErrorCode, ConsumerProtocolGroup | None]]:
        """ConsumerGroupDescribe: each group, or GROUP_ID_NOT_FOUND."""
        return self.consumer.describe_consumer_protocol(group_ids)

    def describe_as_classic(self, group_id: str) -> GroupDescription:
        return self.consumer.describe_as_classic(group_id)

    def delete_consumer_group(self, group_id: str) -> ErrorCode:
        return self.consumer.delete_consumer_group(group_id)

    def validate_consumer_commit(
        self,
        group: ConsumerProtocolGroup,
        member_id: str,
        epoch: int,
        partitions: Iterable[tuple[str, int]] = (),
        transactional: bool = False,
    ) -> ErrorCode:
        """OffsetCommit fencing for a KIP-848 member (``ConsumerMembership``'s)."""
        return self.consumer.validate_consumer_commit(
            group, member_id, epoch, partitions, transactional
        )

    # --- persistence and meters ---------------------------------------------------------------

    def _write(
        self,
        records: list[Record],
        *,
        producer: tuple[int, int] | None = None,
        defer: bool = False,
    ) -> ErrorCode:
        """Append ``records`` as one batch through the runtime (``GroupContext.write``)."""
        return self._context.write(records, producer=producer, defer=defer)

    def _emit(self, group_id: str, meter: str, count: int) -> None:
        self._context.emit(group_id, meter, count)

    @property
    def consumer_protocol_type(self) -> str:
        return CONSUMER_PROTOCOL_TYPE
