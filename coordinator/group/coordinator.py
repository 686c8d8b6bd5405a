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
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable

from coordinator.group.admin_views import GroupAdminViews
from coordinator.group.classic import (
    CONSUMER_PROTOCOL_TYPE,
    ClassicGroup,
    ClassicMember,
    ClassicState,
    Responder,
)
from coordinator.group.consumer_model import ConsumerProtocolGroup
from coordinator.group.consumer_protocol import ConsumerProtocol, records_of
from coordinator.group.consumer_records import Record
from coordinator.group.mixed import MixedMembership
from coordinator.group.offset_commands import (
    Committer,
    OffsetCommands,
    OffsetContext,
    OffsetMap,
)
from coordinator.group.offsets import OffsetStore
from coordinator.group.records import GroupKey
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
from coordinator.shard_runtime import CoordinatorResult
from coordinator.share.group_model import TopicLookup
from txn.clock import Clock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicPartition

log = logging.getLogger("sharetxn.groups")

_S = ClassicState


class ConsumerGroupCoordinator(MixedMembership, ConsumerProtocol):
    """Classic consumer groups and their offsets on one ``__consumer_offsets`` partition."""

    def __init__(
        self,
        clock: Clock,
        runtime: GroupRuntime,
        config: BrokerConfig,
        meter: GroupMeter,
        *,
        is_share_group: Callable[[str], bool] = lambda _g: False,
        topics: TopicLookup | None = None,
    ) -> None:
        """``runtime``: the runtime of ``__consumer_offsets`` partition 1, owning the shard;
        ``meter``: the metric emitter the shard reports through too (both built by
        ``coordinator.assembly``)."""
        self._clock = clock
        self._runtime = runtime
        shard = runtime.shard
        self._config = config
        self._is_share_group = is_share_group
        self._meter = meter
        # The shard's state, one object each for the coordinator's life (replay changes them).
        self._groups: dict[str, ClassicGroup] = shard.membership.groups
        self._consumer_groups: dict[str, ConsumerProtocolGroup] = (
            shard.membership.consumer_groups  # KIP-848
        )
        self._pending_epochs: dict[int, int] = shard.offsets.pending_epochs
        self._topics = topics
        self._timers = Timers()
        self.admin = GroupAdminViews(
            self._runtime, self._write, self.describe_as_classic, self.delete_consumer_group
        )
        self.offset_commands = OffsetCommands(
            OffsetContext(
                clock,
                config,
                self._runtime,
                self._timers,
                self._write,
                self._fence_committer,
                self._touch_member,
                is_share_group,
                self._emit,
            )
        )

    @property
    def offsets(self) -> OffsetStore:
        """The committed offsets and the pending transactional ones (the shard's)."""
        return self._runtime.shard.offsets.store

    # --- lifecycle ----------------------------------------------------------------------------

    def availability(self) -> ErrorCode:
        """NONE once loaded; COORDINATOR_LOAD_IN_PROGRESS before, NOT_AVAILABLE after close."""
        return self._runtime.availability()

    def load(self) -> None:
        """Replay the log: group metadata, offsets, transactional offsets and markers."""
        self._timers.cancel_all()
        self._runtime.shard.reset()
        self._runtime.load()
        self._after_consumer_replay()
        now = self._clock.now_ms()
        for group in self._groups.values():
            for member in group.members.values():
                self._arm_session(group, member, now)
        self.offset_commands.schedule_expiry()

    def close(self) -> None:
        self._runtime.close()
        self._timers.cancel_all()

    def has_group(self, group_id: str) -> bool:
        return group_id in self._groups or group_id in self._consumer_groups

    def _take_over_classic(self, group_id: str) -> ErrorCode:
        """A KIP-848 member joins: an empty classic group of that id becomes a consumer group
        (its offsets stay); one with members is upgraded online if the policy allows
        (``coordinator.group.mixed``), else GROUP_ID_NOT_FOUND."""
        classic = self._groups.get(group_id)
        if classic is None:
            return ErrorCode.NONE
        if classic.members:
            return self.upgrade_classic(group_id)
        if classic.state is not _S.EMPTY or classic.pending_members:
            return ErrorCode.GROUP_ID_NOT_FOUND
        del self._groups[group_id]
        return ErrorCode.NONE

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

    def _fence_committer(self, committer: Committer) -> ErrorCode:
        """A committer against its group's membership (generation or member epoch, member
        and instance id); generation -1 commits to an empty or new group."""
        group_id, generation = committer.group_id, committer.generation
        member_id, group_instance_id = committer.member_id, committer.group_instance_id
        consumer = self._consumer_groups.get(group_id)
        if consumer is not None:
            return self.validate_consumer_commit(consumer, member_id, generation)
        group = self._groups.get(group_id)
        if group is None:
            # Manual assignment (generation -1) commits to a new, empty group.
            return ErrorCode.NONE if generation < 0 else ErrorCode.ILLEGAL_GENERATION
        if generation < 0 and group.state is _S.EMPTY:
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return group.unknown_member_error(group_instance_id)
        if group_instance_id is not None and group_instance_id != member.group_instance_id:
            return ErrorCode.FENCED_INSTANCE_ID
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        if group.state is _S.COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def _touch_member(self, group_id: str, member_id: str) -> None:
        group = self._groups.get(group_id)
        if group is not None and member_id in group.members:
            self._arm_session(group, group.members[member_id], self._clock.now_ms())

    # --- JoinGroup ----------------------------------------------------------------------------

    def join(self, req: JoinRequest, respond: Callable[[JoinResult], None]) -> None:
        """JoinGroup: answered through ``respond``, now or when the rebalance completes."""
        error = self.availability()
        if error is ErrorCode.NONE:
            error = self._check_join(req)
        consumer = self._consumer_groups.get(req.group_id)
        if error is ErrorCode.NONE and consumer is not None:
            self.classic_join_to_consumer(consumer, req, respond)  # a mixed group
            return
        if error is not ErrorCode.NONE:
            respond(JoinResult(error, req.member_id))
            return
        now = self._clock.now_ms()
        group = self._groups.get(req.group_id)
        if req.member_id == "":
            if group is None:
                group = ClassicGroup(req.group_id, state_timestamp=now)
                self._groups[req.group_id] = group
            self._join_unknown_member(group, req, respond, now)
            return
        if group is None:
            respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, req.member_id))
            return
        if req.member_id in group.pending_members:
            group.pending_members.discard(req.member_id)
            self._timers.cancel(("pending", group.group_id, req.member_id))
            self._add_member(group, req, req.member_id, respond, now)
            return
        member = group.members.get(req.member_id)
        if member is None:
            error = group.unknown_member_error(req.group_instance_id)
            respond(JoinResult(error, req.member_id))
            return
        if req.group_instance_id != member.group_instance_id:
            respond(JoinResult(ErrorCode.FENCED_INSTANCE_ID, req.member_id))
            return
        self._join_existing_member(group, member, req, respond, now)

    def _check_join(self, req: JoinRequest) -> ErrorCode:
        if not req.group_id:
            return ErrorCode.INVALID_GROUP_ID
        low = self._config.get_int("group.min.session.timeout.ms")
        high = self._config.get_int("group.max.session.timeout.ms")
        if not low <= req.session_timeout_ms <= high:
            return ErrorCode.INVALID_SESSION_TIMEOUT
        if self._is_share_group(req.group_id):
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        consumer = self._consumer_groups.get(req.group_id)
        if consumer is not None:
            if consumer.members:
                return ErrorCode.NONE  # classic members of a KIP-848 group (mixed)
            # An empty KIP-848 group is deleted for the classic one (Kafka's
            # maybeDeleteEmptyConsumerGroup): its records' tombstones, replayed, remove it.
            error = self._write([(key, None) for key in records_of(consumer)])
            if error is not ErrorCode.NONE:
                return error
        group = self._groups.get(req.group_id)
        if group is not None and not group.supports(req.protocol_type, req.protocols):
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if not req.protocol_type or not req.protocols:
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        return ErrorCode.NONE

    def _join_unknown_member(
        self, group: ClassicGroup, req: JoinRequest, respond: Responder, now: int
    ) -> None:
        limit = self._config.get_int("group.max.size")
        if len(group.members) + len(group.pending_members) >= limit:
            respond(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED))
            return
        if req.group_instance_id is not None:
            new_id = f"{req.group_instance_id}-{uuid.uuid4()}"
            old_id = group.static_members.get(req.group_instance_id)
            if old_id is not None and old_id in group.members:
                self._replace_static_member(group, old_id, new_id, req, respond, now)
                return
            self._add_member(group, req, new_id, respond, now)
            return
        new_id = f"{req.client_id}-{uuid.uuid4()}"
        if req.require_known_member_id:
            # KIP-394: the member must come back with this id; until then it is pending.
            group.pending_members.add(new_id)
            self._timers.arm(
                self._clock,
                ("pending", group.group_id, new_id),
                req.session_timeout_ms,
                lambda: self._expire_pending(group.group_id, new_id),
            )
            respond(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_id))
            return
        self._add_member(group, req, new_id, respond, now)

    def _replace_static_member(
        self,
        group: ClassicGroup,
        old_id: str,
        new_id: str,
        req: JoinRequest,
        respond: Responder,
        now: int,
    ) -> None:
        old = group.members.pop(old_id)
        self._timers.cancel(("session", group.group_id, old_id))
        old.answer_waiting(ErrorCode.FENCED_INSTANCE_ID)
        if group.leader_id == old_id:
            group.leader_id = new_id
        log.info(
            "group %s: static member %s rejoined as %s",
            group.group_id,
            req.group_instance_id,
            new_id,
        )
        self._add_member(group, req, new_id, respond, now, assignment=old.assignment)

    def _add_member(
        self,
        group: ClassicGroup,
        req: JoinRequest,
        member_id: str,
        respond: Responder,
        now: int,
        *,
        assignment: bytes = b"",
    ) -> None:
        member = ClassicMember(
            member_id,
            req.group_instance_id,
            req.client_id,
            req.client_host,
            req.rebalance_timeout_ms if req.rebalance_timeout_ms > 0 else req.session_timeout_ms,
            req.session_timeout_ms,
            req.protocol_type,
            list(req.protocols),
            assignment,
            awaiting_join=respond,
        )
        if not group.members:
            group.protocol_type = req.protocol_type
        group.members[member_id] = member
        if req.group_instance_id is not None:
            group.static_members[req.group_instance_id] = member_id
        self._arm_session(group, member, now)
        if group.state is _S.PREPARING_REBALANCE:
            if group.initial_delay_until >= 0:
                self._extend_initial_delay(group, now)
            self._maybe_complete_join(group)
        else:
            self._prepare_rebalance(group, f"member {member_id} joined", now)

    def _join_existing_member(
        self,
        group: ClassicGroup,
        member: ClassicMember,
        req: JoinRequest,
        respond: Responder,
        now: int,
    ) -> None:
        changed = list(req.protocols) != member.protocols
        member.protocols = list(req.protocols)
        member.client_id, member.client_host = req.client_id, req.client_host
        member.session_timeout_ms = req.session_timeout_ms
        if req.rebalance_timeout_ms > 0:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        self._arm_session(group, member, now)
        if group.state is _S.PREPARING_REBALANCE:
            member.awaiting_join = respond
            self._maybe_complete_join(group)
        elif group.state is _S.COMPLETING_REBALANCE and not changed:
            # A retried join of the generation that just completed: answer it again.
            respond(self._join_result(group, member))
        elif group.state is _S.STABLE and not changed and member.member_id != group.leader_id:
            respond(self._join_result(group, member))
        else:
            member.awaiting_join = respond
            self._prepare_rebalance(group, f"member {member.member_id} rejoined", now)

    def _join_result(self, group: ClassicGroup, member: ClassicMember) -> JoinResult:
        members: tuple[tuple[str, str | None, bytes], ...] = ()
        if member.member_id == group.leader_id:
            members = tuple(
                (m.member_id, m.group_instance_id, m.metadata(group.protocol))
                for m in group.members.values()
            )
        return JoinResult(
            ErrorCode.NONE,
            member.member_id,
            group.generation,
            group.protocol_type,
            group.protocol,
            group.leader_id or "",
            members,
        )

    # --- rebalancing --------------------------------------------------------------------------

    def _prepare_rebalance(self, group: ClassicGroup, reason: str, now: int) -> None:
        if group.state is _S.COMPLETING_REBALANCE:
            for m in group.members.values():
                m.assignment = b""
                if m.awaiting_sync is not None:
                    m.awaiting_sync(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
                    m.awaiting_sync = None
        was_empty = group.state is _S.EMPTY
        group.transition(_S.PREPARING_REBALANCE, now)
        log.info(
            "group %s: preparing to rebalance (generation %d): %s",
            group.group_id,
            group.generation,
            reason,
        )
        initial = self._config.get_int("group.initial.rebalance.delay.ms")
        if was_empty and initial > 0:
            group.initial_delay_until = now + initial
            delay = initial
        else:
            group.initial_delay_until = -1
            delay = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        self._timers.arm(
            self._clock,
            ("join", group.group_id),
            delay,
            lambda: self._on_join_timer(group.group_id),
        )
        self._maybe_complete_join(group)

    def _extend_initial_delay(self, group: ClassicGroup, now: int) -> None:
        """A member joined during the initial delay: wait one more delay, within the
        rebalance timeout (Kafka's InitialDelayedJoin)."""
        initial = self._config.get_int("group.initial.rebalance.delay.ms")
        limit = group.state_timestamp + max(m.rebalance_timeout_ms for m in group.members.values())
        until = min(now + initial, limit)
        group.initial_delay_until = until
        self._timers.arm(
            self._clock,
            ("join", group.group_id),
            until - now,
            lambda: self._on_join_timer(group.group_id),
        )

    def _on_join_timer(self, group_id: str) -> None:
        group = self._groups.get(group_id)
        if group is None or group.state is not _S.PREPARING_REBALANCE or self._runtime.closed:
            return
        self._timers.by_key.pop(("join", group_id), None)
        group.initial_delay_until = -1
        self._complete_join(group)

    def _maybe_complete_join(self, group: ClassicGroup) -> None:
        if group.state is not _S.PREPARING_REBALANCE or group.initial_delay_until >= 0:
            return
        if group.pending_members:
            return
        if all(m.awaiting_join is not None for m in group.members.values()):
            self._timers.cancel(("join", group.group_id))
            self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> None:
        now = self._clock.now_ms()
        for member_id in [m for m, v in group.members.items() if v.awaiting_join is None]:
            log.info("group %s: member %s did not rejoin in time", group.group_id, member_id)
            self._drop_member(group, member_id)
        group.generation += 1
        if not group.members:
            group.protocol = None
            group.leader_id = None
            group.protocol_type = None
            group.transition(_S.EMPTY, now)
            log.info("group %s: empty at generation %d", group.group_id, group.generation)
            self._write([(GroupKey(group.group_id), group.to_value())])
            return
        group.protocol = group.select_protocol()
        if group.leader_id not in group.members:
            group.leader_id = next(
                (m for m, v in group.members.items() if v.awaiting_join is not None),
                next(iter(group.members)),
            )
        group.transition(_S.COMPLETING_REBALANCE, now)
        log.info(
            "group %s: generation %d with %d member(s), protocol %s, leader %s",
            group.group_id,
            group.generation,
            len(group.members),
            group.protocol,
            group.leader_id,
        )
        for member in group.members.values():
            respond, member.awaiting_join = member.awaiting_join, None
            if respond is not None:
                respond(self._join_result(group, member))
            self._arm_session(group, member, now)

    # --- SyncGroup ----------------------------------------------------------------------------

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
        error = self.availability()
        consumer = self._consumer_groups.get(group_id)
        if error is ErrorCode.NONE and consumer is not None:
            respond(
                self.classic_sync_to_consumer(
                    consumer, generation, member_id, group_instance_id, protocol_type, protocol
                )
            )
            return
        group = self._groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if error is ErrorCode.NONE and (group is None or member is None):
            error = ErrorCode.UNKNOWN_MEMBER_ID
        if error is not ErrorCode.NONE or group is None or member is None:
            respond(SyncResult(error))
            return
        if group_instance_id != member.group_instance_id:
            respond(SyncResult(ErrorCode.FENCED_INSTANCE_ID))
            return
        if generation != group.generation:
            respond(SyncResult(ErrorCode.ILLEGAL_GENERATION))
            return
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol is not None and protocol != group.protocol
        ):
            respond(SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        self._arm_session(group, member, self._clock.now_ms())
        if group.state is _S.PREPARING_REBALANCE:
            respond(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        elif group.state is _S.STABLE:
            respond(
                SyncResult(ErrorCode.NONE, member.assignment, group.protocol_type, group.protocol)
            )
        elif group.state is _S.COMPLETING_REBALANCE:
            member.awaiting_sync = respond
            if member_id == group.leader_id:
                self._complete_sync(group, assignments)
        else:
            respond(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))

    def _complete_sync(self, group: ClassicGroup, assignments: dict[str, bytes]) -> None:
        # The members take their assignments when the record is replayed, once durable.
        error = self._write([(GroupKey(group.group_id), group.to_value(assignments))])
        if error is not ErrorCode.NONE:
            for member in group.members.values():
                if member.awaiting_sync is not None:
                    member.awaiting_sync(SyncResult(error))
                    member.awaiting_sync = None
            self._prepare_rebalance(
                group, f"storing the assignment failed: {error.name}", self._clock.now_ms()
            )
            return
        group.transition(_S.STABLE, self._clock.now_ms())
        self._emit(group.group_id, "group-completed-rebalances", 1)
        for member in group.members.values():
            if member.awaiting_sync is not None:
                member.awaiting_sync(
                    SyncResult(
                        ErrorCode.NONE, member.assignment, group.protocol_type, group.protocol
                    )
                )
                member.awaiting_sync = None

    # --- Heartbeat and LeaveGroup -------------------------------------------------------------

    def heartbeat(
        self, group_id: str, generation: int, member_id: str, group_instance_id: str | None
    ) -> ErrorCode:
        if (error := self.availability()) is not ErrorCode.NONE:
            return error
        consumer = self._consumer_groups.get(group_id)
        if consumer is not None:
            return self.classic_heartbeat_to_consumer(
                consumer, generation, member_id, group_instance_id
            )
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        member = group.members.get(member_id)
        if member is None:
            return group.unknown_member_error(group_instance_id)
        if group_instance_id != member.group_instance_id:
            return ErrorCode.FENCED_INSTANCE_ID
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        self._arm_session(group, member, self._clock.now_ms())
        if group.state is _S.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave(
        self, group_id: str, members: list[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]:
        """LeaveGroup: (top-level error, per member (member id, instance id, error))."""
        if (error := self.availability()) is not ErrorCode.NONE:
            return error, []
        consumer = self._consumer_groups.get(group_id)
        if consumer is not None:
            return ErrorCode.NONE, self.classic_leave_from_consumer(consumer, members)
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID, [
                (m, i, ErrorCode.UNKNOWN_MEMBER_ID) for m, i in members
            ]
        results: list[tuple[str, str | None, ErrorCode]] = []
        removed = False
        for member_id, instance_id in members:
            target = member_id
            if instance_id is not None:
                known = group.static_members.get(instance_id)
                if known is None:
                    results.append((member_id, instance_id, ErrorCode.UNKNOWN_MEMBER_ID))
                    continue
                if member_id and member_id != known:
                    results.append((member_id, instance_id, ErrorCode.FENCED_INSTANCE_ID))
                    continue
                target = known
            if target in group.pending_members:
                group.pending_members.discard(target)
                self._timers.cancel(("pending", group_id, target))
                results.append((target, instance_id, ErrorCode.NONE))
                continue
            if target not in group.members:
                results.append((member_id, instance_id, ErrorCode.UNKNOWN_MEMBER_ID))
                continue
            log.info("group %s: member %s leaves", group_id, target)
            self._drop_member(group, target)
            results.append((target, instance_id, ErrorCode.NONE))
            removed = True
        if removed:
            self._after_removal(group)
        elif group.state is _S.PREPARING_REBALANCE:
            self._maybe_complete_join(group)
        return ErrorCode.NONE, results

    def _drop_member(self, group: ClassicGroup, member_id: str) -> None:
        member = group.members.pop(member_id, None)
        self._timers.cancel(("session", group.group_id, member_id))
        if member is None:
            return
        instance = member.group_instance_id
        if instance is not None and group.static_members.get(instance) == member_id:
            del group.static_members[instance]
        member.answer_waiting(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.leader_id == member_id:
            group.leader_id = None

    def _after_removal(self, group: ClassicGroup) -> None:
        now = self._clock.now_ms()
        if group.state in (_S.STABLE, _S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, "a member left", now)
        if group.state is _S.PREPARING_REBALANCE:
            if not group.members and not group.pending_members:
                self._timers.cancel(("join", group.group_id))
                group.initial_delay_until = -1
                self._complete_join(group)
            else:
                self._maybe_complete_join(group)

    # --- sessions -----------------------------------------------------------------------------

    def _arm_session(self, group: ClassicGroup, member: ClassicMember, _now: int) -> None:
        group_id, member_id = group.group_id, member.member_id
        self._timers.arm(
            self._clock,
            ("session", group_id, member_id),
            member.session_timeout_ms,
            lambda: self._expire_member(group_id, member_id),
        )

    def _expire_member(self, group_id: str, member_id: str) -> None:
        self._timers.by_key.pop(("session", group_id, member_id), None)
        group = self._groups.get(group_id)
        if self._runtime.closed or group is None or member_id not in group.members:
            return
        member = group.members[member_id]
        if member.awaiting_join is not None or member.awaiting_sync is not None:
            # Waiting on the coordinator counts as alive (Kafka's hasSatisfiedHeartbeat): the
            # rebalance timeout bounds a join, the leader's sync a sync.
            self._arm_session(group, member, self._clock.now_ms())
            return
        log.info("group %s: member %s session timed out", group_id, member_id)
        self._drop_member(group, member_id)
        self._after_removal(group)

    def _expire_pending(self, group_id: str, member_id: str) -> None:
        self._timers.by_key.pop(("pending", group_id, member_id), None)
        group = self._groups.get(group_id)
        if group is None or member_id not in group.pending_members:
            return
        group.pending_members.discard(member_id)
        self._maybe_complete_join(group)
        never_joined = group.state is _S.EMPTY and group.generation == 0 and not group.members
        if never_joined and not group.pending_members and not self.offsets.of(group_id):
            self._groups.pop(group_id, None)  # nothing to keep

    # --- persistence --------------------------------------------------------------------------

    def _write(
        self,
        records: list[Record],
        *,
        producer: tuple[int, int] | None = None,
        defer: bool = False,
    ) -> ErrorCode:
        """Append ``records`` as one batch (transactional for ``producer``) and flush it; the
        runtime then replays them into the shard.

        ``defer``: append only; the records are replayed by ``durable`` once the caller made
        the log durable (``deferred_sync`` off the request path), in log order.
        """
        if not records:
            return ErrorCode.NONE
        result = CoordinatorResult(records, ErrorCode.NONE, producer=producer)
        if not defer:
            return self._runtime.write(0, lambda _shard: result)
        group_id = getattr(records[0][0], "group_id", "")
        return self._runtime.write(
            0,
            lambda _shard: result,
            flush=False,
            on_durable=lambda: self._emit(group_id, "offset-commits", len(records)),
        )

    def _emit(self, group_id: str, meter: str, count: int) -> None:
        self._meter.emit(group_id, meter, count)

    @property
    def consumer_protocol_type(self) -> str:
        return CONSUMER_PROTOCOL_TYPE
