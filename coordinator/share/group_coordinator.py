"""The share-group coordinator: membership, assignment, partition initialization, admin.

This is the share-group half of Kafka's ``GroupMetadataManager`` (KIP-932), sans I/O: it takes a
``Clock``, one ``PartitionLog`` (its durable state), the ``BrokerConfig`` and a ``TopicLookup``.

**ShareGroupHeartbeat** (v1 semantics).  The client generates its member id.  Member epoch 0
joins (and creates the group at epoch 1, as Kafka 4.4).  The group epoch moves whenever
membership, a subscription, the subscribed topics' metadata or the set of assignable partitions
changes (one bump for partitions of several topics initialized together).  The bump (not a
member's removal) or a later heartbeat then has the SimpleAssignor compute a new target
assignment, at most once per
``share.assignment.interval.ms`` (the group's, else the broker's
``group.share.assignment.interval.ms``, 1 s; the time of the last one is written with it, as
Kafka 4.4's AssignmentTimestamp): an epoch bumped sooner waits, members stay at the previous
target's epoch meanwhile, and partitions initialized in the wait join that assignment instead
of bumping the epoch again.  A member picks up the target assignment and the assignment epoch
on its own next heartbeat.  There is no revocation phase.  (Kafka bumps for the subscribed
topics' metadata and newly initialized partitions at the group's next heartbeat, and assigns
there; this coordinator when they happen.)

**Two-stage partition initialization** (ShareGroupPartitionMetadata).  A subscribed partition is
first recorded as *initializing*; the broker calls the share coordinator's
InitializeShareGroupState for ``partitions_to_initialize(g)`` (state epoch = group epoch) and
then ``mark_initialized``; only initialized partitions are assignable.  Partitions of deleted
topics, and every partition of a deleted group, move to *deleting*; the broker calls
DeleteShareGroupState for ``partitions_to_delete(g)`` and then ``mark_deleted``.  A partition is
never initialized while it is still being deleted.

**Sessions.**  Each heartbeat (re)arms a ``share.session.timeout.ms`` timer; expiry removes
the member, bumps the group epoch and calls ``on_member_removed(group_id, member_id)`` (so
does a leave).

**Runtime and shard.**  The groups, partition states and configs are the ``ShareGroupShard``
(``group_shard``), owned by the ``CoordinatorRuntime`` the composition root builds
(``coordinator.assembly.share_group_runtime``) and hands to this coordinator.  Every change is
computed here from the shard's current state as typed records
(``coordinator.share.group_records``) without touching it; ``runtime.write`` appends them as
one batch, flushes, and only then replays them into the shard -- the same code ``load()``
replays the log with, so a restart keeps groups, members (whose session timers restart),
target assignments, partition states and configs.  A failed append changes nothing and
returns the mapped error (as the transaction coordinator maps it).  The session timers are
this service's, not the shard's.

Protocol errors are returned (``error`` fields, Kafka numbers), never raised.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping

from coordinator.shard_runtime import CoordinatorResult, answer_each
from coordinator.share.assignor import SimpleAssignor
from coordinator.share.group_config import ShareGroupConfig
from coordinator.share.group_model import (
    GROUP_TYPE,
    INITIAL_GROUP_EPOCH,
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    NO_ASSIGNMENT,
    GroupListing,
    GroupMember,
    GroupPlan,
    HeartbeatRequest,
    HeartbeatResult,
    ListFilter,
    ShareGroup,
    ShareGroupDescription,
    ShareGroupMemberDescription,
    ShareGroupView,
    ShareMemberView,
    StatePartitionMetadata,
    TopicLookup,
    TopicPartitions,
    add_to_sets,
    as_assignment_list,
    assignable_partitions,
    can_compute_next_target_assignment,
    current_assignment_record_of,
    fenced_message,
    flatten_sets,
    invalid_heartbeat,
    member_record_of,
    partition_state_record_of,
    remove_from_sets,
)
from coordinator.share.group_records import (
    GroupConfigRecord,
    GroupEpochRecord,
    GroupRecord,
    TargetAssignmentRecord,
    Tombstone,
)
from coordinator.share.group_shard import ShareGroupRuntime
from txn.clock import Timer
from txn.config import BrokerConfig
from txn.errors import ErrorCode, InvalidConfigError

log = logging.getLogger(__name__)


# --- the coordinator --------------------------------------------------------------------------


def topics_version(topics: TopicLookup) -> int | None:
    """A number that changes whenever a topic does (``TopicRegistry.version``); None for a
    lookup without one (then nothing is assumed settled)."""
    version = getattr(topics, "version", None)
    return version if isinstance(version, int) else None


class ShareGroupCoordinator:
    """Every share group of the broker, persisted in one group-coordinator log."""

    def __init__(
        self,
        runtime: ShareGroupRuntime,
        config: BrokerConfig,
        topics: TopicLookup,
        *,
        on_member_removed: Callable[[str, str], None] | None = None,
        on_config_changed: Callable[[str, ShareGroupConfig], None] | None = None,
        retry_backoff_ms: int = 1000,
    ) -> None:
        """``runtime`` owns the shard (``share_group_runtime``)."""
        self._runtime = runtime
        self._shard = runtime.shard
        self._clock = self._shard.clock
        self._topics = topics
        self._max_size = config.get_int("group.share.max.size")
        self._assignor = SimpleAssignor()
        self._retry_backoff_ms = retry_backoff_ms
        # Called after a member's removal (leave or session expiry) is durable.
        self.on_member_removed = on_member_removed
        # Called after a group's config overrides change (with the new effective config).
        self.on_config_changed = on_config_changed
        # A group id used by another kind of group (a consumer group): heartbeats are refused.
        self.is_foreign_group: Callable[[str], bool] = lambda _group_id: False
        self._timers: dict[tuple[str, str], tuple[int, Timer]] = {}
        self._timer_seq = 0
        # The topics' version when ``on_topics_changed`` last left every group up to date
        # (None: unknown, or a group's append failed).
        self._settled_topics: int | None = None

    # --- lifecycle ----------------------------------------------------------------------------

    def availability(self) -> ErrorCode:
        """NONE once loaded; COORDINATOR_LOAD_IN_PROGRESS before, NOT_AVAILABLE after close."""
        return self._runtime.availability()

    def load(self) -> None:
        """Replay the log into the shard and start every member's session timer afresh.

        It writes nothing: the broker calls ``on_topics_changed()`` afterwards to catch topic
        changes made while the coordinator was down, and ``groups_with_pending_state_work()``
        to resume partition initialization and deletion.
        """
        self._cancel_all_timers()
        self._settled_topics = None
        self._shard.reset()
        self._runtime.load()
        for group in self._shard.groups.values():
            for member_id in group.members:
                self._arm_session_timer(group.group_id, member_id)

    def close(self) -> None:
        """Stop every timer; later requests get COORDINATOR_NOT_AVAILABLE."""
        self._runtime.close()
        self._cancel_all_timers()

    # --- ShareGroupHeartbeat ------------------------------------------------------------------

    def heartbeat(self, request: HeartbeatRequest) -> HeartbeatResult:
        """ShareGroupHeartbeat v1: join (epoch 0), heartbeat, or leave (epoch -1).

        The broker passes the request context's client id and address on every heartbeat, as
        Kafka does.
        """
        group_id, member_id = request.group_id, request.member_id
        member_epoch = request.member_epoch
        if (error := self.availability()) is not ErrorCode.NONE:
            return HeartbeatResult(error)
        invalid = invalid_heartbeat(request)
        if invalid is not None:
            return HeartbeatResult(ErrorCode.INVALID_REQUEST, invalid)
        if member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            return self._leave(group_id, member_id)

        group = self._shard.groups.get(group_id)
        if group is None and self.is_foreign_group(group_id):
            return HeartbeatResult(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
            )
        if group is None and member_epoch != JOIN_GROUP_MEMBER_EPOCH:
            return HeartbeatResult(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found."
            )
        members = dict(group.members) if group is not None else {}
        if len(members) >= self._max_size and member_id not in members:
            return HeartbeatResult(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The share group has reached its maximum capacity of {self._max_size} members.",
            )
        old = members.get(member_id)
        if old is None and member_epoch != JOIN_GROUP_MEMBER_EPOCH:
            return HeartbeatResult(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {member_id} is not a member of group {group_id}.",
            )
        if old is not None and (fenced := fenced_message(old, member_epoch)) is not None:
            return HeartbeatResult(ErrorCode.FENCED_MEMBER_EPOCH, fenced)

        base = old if old is not None else GroupMember(member_id)
        subscribed_topic_names = request.subscribed_topic_names
        updated = dataclasses.replace(
            base,
            rack_id=request.rack_id if request.rack_id is not None else base.rack_id,
            subscribed=(
                tuple(sorted(set(subscribed_topic_names)))
                if subscribed_topic_names is not None
                else base.subscribed
            ),
            client_id=request.client_id if request.client_id is not None else base.client_id,
            client_host=(
                request.client_host if request.client_host is not None else base.client_host
            ),
        )
        subscription_changed = updated.subscribed != base.subscribed
        members[member_id] = updated
        plan = self._plan(group_id, group, members, force_bump=subscription_changed)

        records: list[GroupRecord] = []
        member_record = member_record_of(group_id, updated)
        if old is None or member_record_of(group_id, old) != member_record:
            records.append(member_record)
        reconciled = self._reconcile(updated, plan, subscription_changed)
        current_record = current_assignment_record_of(group_id, reconciled)
        if old is None or current_assignment_record_of(group_id, old) != current_record:
            records.append(current_record)
        # The assignment goes out on a join, a full request, or when it changed.
        send_assignment = (
            member_epoch == JOIN_GROUP_MEMBER_EPOCH
            or subscribed_topic_names is not None
            or old is None
            or old.assigned != reconciled.assigned
        )
        # Group/target/partition records first, so replay creates the group before its member.
        error = self._write(plan.records + records)
        if error is not ErrorCode.NONE:
            return HeartbeatResult(error, f"the share-group log append failed: {error.name}")
        self._arm_session_timer(group_id, member_id)
        return HeartbeatResult(
            ErrorCode.NONE,
            member_id=member_id,
            member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.group_config(group_id).heartbeat_interval_ms,
            assignment=as_assignment_list(reconciled.assigned) if send_assignment else None,
        )

    def _reconcile(
        self, member: GroupMember, plan: GroupPlan, subscription_changed: bool
    ) -> GroupMember:
        """The member moved to the target assignment (ShareGroupAssignmentBuilder)."""
        new_epoch = member.member_epoch != plan.assignment_epoch
        if not new_epoch and not subscription_changed:
            return member
        subscribed_ids = {plan.metadata[n][0] for n in member.subscribed if n in plan.metadata}
        assigned = frozenset(
            tp
            for tp in plan.target.get(member.member_id, NO_ASSIGNMENT)
            if tp.topic_id in subscribed_ids
        )
        if not new_epoch:
            return dataclasses.replace(member, assigned=assigned)
        return dataclasses.replace(
            member,
            member_epoch=plan.assignment_epoch,
            previous_member_epoch=member.member_epoch,
            assigned=assigned,
        )

    def _leave(self, group_id: str, member_id: str) -> HeartbeatResult:
        group = self._shard.groups.get(group_id)
        if group is None:
            return HeartbeatResult(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found."
            )
        if member_id not in group.members:
            return HeartbeatResult(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {member_id} is not a member of group {group_id}.",
            )
        log.info("member %s leaves share group %s", member_id, group_id)
        error = self._remove_member(group, member_id)
        if error is not ErrorCode.NONE:
            return HeartbeatResult(error, f"the share-group log append failed: {error.name}")
        return HeartbeatResult(
            ErrorCode.NONE, member_id=member_id, member_epoch=LEAVE_GROUP_MEMBER_EPOCH
        )

    def _remove_member(self, group: ShareGroup, member_id: str) -> ErrorCode:
        """Tombstone the member and bump the group epoch; then tell ``on_member_removed``."""
        group_id = group.group_id
        members = {m: v for m, v in group.members.items() if m != member_id}
        plan = self._plan(group_id, group, members, force_bump=True, assign=False)
        records: list[GroupRecord] = [
            Tombstone("current", group_id, member_id),
            Tombstone("member", group_id, member_id),
            *plan.records,
        ]
        error = self._write(records)
        if error is not ErrorCode.NONE:
            return error
        self._cancel_session_timer(group_id, member_id)
        if self.on_member_removed is not None:
            try:
                self.on_member_removed(group_id, member_id)
            except Exception:
                log.exception("on_member_removed(%s, %s) failed", group_id, member_id)
        return ErrorCode.NONE

    # --- group evaluation ---------------------------------------------------------------------

    def _plan(
        self,
        group_id: str,
        group: ShareGroup | None,
        members: Mapping[str, GroupMember],
        *,
        force_bump: bool,
        partition_state: StatePartitionMetadata | None = None,
        assign: bool = True,
    ) -> GroupPlan:
        """Re-evaluate a group with ``members`` (and optionally a changed partition state).

        Returns the records that bring the group there: the partition-state record when
        partitions must start initializing or deleting, a bumped group epoch when membership,
        a subscription, topic metadata or the assignable partitions changed, and -- with
        ``assign``, when the epoch is ahead of the target's and the group's assignment
        interval has passed since its last target assignment -- a new target assignment
        (Kafka computes it at most once per interval, in the heartbeat that bumps the epoch
        or a later one; a member's removal does not compute it).
        """
        current_state = self._shard.partition_states.get(group_id)
        base = partition_state if partition_state is not None else current_state
        subscribed = sorted({name for m in members.values() for name in m.subscribed})
        metadata: dict[str, tuple[uuid.UUID, int]] = {}
        for name in subscribed:
            topic = self._topics.get(name)
            if topic is not None:
                metadata[name] = (topic.topic_id, topic.num_partitions)
        new_state = self._plan_partition_state(base, metadata)

        old_metadata = group.subscription_metadata if group is not None else {}
        old_assignable = assignable_partitions(current_state, old_metadata)
        assignable = assignable_partitions(new_state, metadata)
        epoch = group.epoch if group is not None else INITIAL_GROUP_EPOCH
        assignment_epoch = group.assignment_epoch if group is not None else INITIAL_GROUP_EPOCH
        target = dict(group.target) if group is not None else {}

        records: list[GroupRecord] = []
        # Partitions that became assignable (or stopped being) bump the epoch unless a target
        # assignment is already pending: that one takes them (Kafka's initialized partitions
        # join the assignment that waits for its interval).
        bump = force_bump or metadata != old_metadata
        bump |= assignable != old_assignable and epoch == assignment_epoch
        if group is None and not members:
            if bump:  # created empty (AlterShareGroupOffsets): epoch 1, its empty target
                records.append(GroupEpochRecord(group_id, epoch, metadata))
                records.append(TargetAssignmentRecord(group_id, assignment_epoch, target))
        else:
            if bump:
                epoch += 1
                records.append(GroupEpochRecord(group_id, epoch, metadata))
                log.info("share group %s: epoch %d, %d member(s)", group_id, epoch, len(members))
                if not members:  # as Kafka: an empty group's target, at no known time
                    assignment_epoch, target = epoch, {}
                    records.append(TargetAssignmentRecord(group_id, epoch, target))
            last = group.assignment_timestamp_ms if group is not None else 0
            if (
                assign
                and epoch > assignment_epoch
                and can_compute_next_target_assignment(
                    last, self.group_config(group_id).assignment_interval_ms, self._clock.now_ms()
                )
            ):
                subscriptions = {
                    m: [metadata[n][0] for n in member.subscribed if n in metadata]
                    for m, member in members.items()
                }
                target = self._assignor.assign(subscriptions, assignable, target)
                assignment_epoch = epoch
                records.append(
                    TargetAssignmentRecord(group_id, assignment_epoch, target, self._clock.now_ms())
                )
        if current_state is None or not new_state.same_sets(current_state):
            if not new_state.is_empty():
                records.append(partition_state_record_of(group_id, new_state))
            elif current_state is not None:
                records.append(Tombstone("partitions", group_id))
        return GroupPlan(records, epoch, assignment_epoch, target, metadata)

    def _plan_partition_state(
        self, state: StatePartitionMetadata | None, metadata: Mapping[str, tuple[uuid.UUID, int]]
    ) -> StatePartitionMetadata:
        """Deleted topics' partitions to *deleting*; new subscribed partitions to *initializing*."""
        new = state.copy() if state is not None else StatePartitionMetadata()
        for topic_id in sorted(set(new.initializing) | set(new.initialized)):
            if self._topics.by_id(topic_id) is None:
                add_to_sets(new.deleting, topic_id, new.initializing.pop(topic_id, frozenset()))
                add_to_sets(new.deleting, topic_id, new.initialized.pop(topic_id, frozenset()))
        for name, (topic_id, num_partitions) in metadata.items():
            known = (
                new.initializing.get(topic_id, frozenset())
                | new.initialized.get(topic_id, frozenset())
                | new.deleting.get(topic_id, frozenset())
            )
            missing = frozenset(range(num_partitions)) - known
            if missing:
                add_to_sets(new.initializing, topic_id, missing)
            new.names[topic_id] = name
        live = set(new.initializing) | set(new.initialized) | set(new.deleting)
        new.names = {t: n for t, n in new.names.items() if t in live}
        return new

    def on_topics_changed(self) -> list[str]:
        """Re-evaluate every group after topics were created, grown or deleted.

        Bumps the epoch of groups whose subscribed topics changed, records new partitions to
        initialize and moves deleted topics' partitions to deleting.  Returns the ids of the
        groups that changed (a failed append is logged; the next call retries it).
        """
        if self.availability() is not ErrorCode.NONE:
            return []
        version = topics_version(self._topics)
        changed: list[str] = []
        settled = True
        for group_id in sorted(set(self._shard.groups) | set(self._shard.partition_states)):
            group = self._shard.groups.get(group_id)
            members = dict(group.members) if group is not None else {}
            plan = self._plan(group_id, group, members, force_bump=False)
            if not plan.records:
                continue
            error = self._write(plan.records)
            if error is ErrorCode.NONE:
                changed.append(group_id)
            else:
                settled = False
                log.warning("share group %s: topic change not recorded (%s)", group_id, error.name)
        self._settled_topics = version if settled else None
        return changed

    def catch_up_topics(self) -> None:
        """``on_topics_changed()``, unless no topic changed since it last left every group up
        to date: it would write nothing then, and it plans every group (a heartbeat that
        subscribes calls this, so joining G groups would cost O(G^2)).

        Every other write plans its group against the topics of the moment, so a group only
        falls behind the topics when they change or when its topic-change append failed.
        """
        version = topics_version(self._topics)
        if version is None or version != self._settled_topics:
            self.on_topics_changed()

    # --- partition initialization and deletion ------------------------------------------------

    def partitions_to_initialize(self, group_id: str) -> list[tuple[uuid.UUID, int]]:
        """Partitions waiting for InitializeShareGroupState (state epoch = the group epoch)."""
        state = self._shard.partition_states.get(group_id)
        return flatten_sets(state.initializing) if state is not None else []

    def partitions_to_delete(self, group_id: str) -> list[tuple[uuid.UUID, int]]:
        """Partitions waiting for DeleteShareGroupState (also of a group already deleted)."""
        state = self._shard.partition_states.get(group_id)
        return flatten_sets(state.deleting) if state is not None else []

    def initialized_partitions(self, group_id: str) -> dict[uuid.UUID, frozenset[int]]:
        """Partitions whose share state exists (assignable if subscribed)."""
        state = self._shard.partition_states.get(group_id)
        return dict(state.initialized) if state is not None else {}

    def groups_with_pending_state_work(self) -> list[str]:
        """Group ids with partitions still initializing or deleting (resume after ``load``)."""
        return sorted(
            g for g, s in self._shard.partition_states.items() if s.initializing or s.deleting
        )

    def mark_initialized(
        self, group_id: str, topic_id: uuid.UUID, partitions: Iterable[int]
    ) -> ErrorCode:
        """``mark_initialized_topics`` for one topic's partitions."""
        return self.mark_initialized_topics(group_id, {topic_id: partitions})

    def mark_initialized_topics(
        self, group_id: str, partitions: Mapping[uuid.UUID, Iterable[int]]
    ) -> ErrorCode:
        """InitializeShareGroupState succeeded: the partitions (by topic id) become assignable.

        Partitions that are not initializing are ignored (a retry is harmless).  A group with
        subscribed members gets one new epoch and target assignment for them all, as Kafka
        initializes a group's partitions with one request and bumps the epoch once.
        """
        if (error := self.availability()) is not ErrorCode.NONE:
            return error
        state = self._shard.partition_states.get(group_id)
        if state is None:
            return (
                ErrorCode.GROUP_ID_NOT_FOUND
                if group_id not in self._shard.groups
                else ErrorCode.NONE
            )
        new_state = state.copy()
        for topic_id, parts in partitions.items():
            done = frozenset(parts) & state.initializing.get(topic_id, frozenset())
            remove_from_sets(new_state.initializing, topic_id, done)
            add_to_sets(new_state.initialized, topic_id, done)
        if new_state.same_sets(state):
            return ErrorCode.NONE
        return self._replan(group_id, new_state)

    def mark_deleted(
        self, group_id: str, topic_id: uuid.UUID, partitions: Iterable[int]
    ) -> ErrorCode:
        """DeleteShareGroupState succeeded: forget the partitions (idempotent).

        If a live group subscribes to the topic again, its partitions start initializing now.
        """
        if (error := self.availability()) is not ErrorCode.NONE:
            return error
        state = self._shard.partition_states.get(group_id)
        if state is None:
            return ErrorCode.NONE
        gone = frozenset(partitions) & state.deleting.get(topic_id, frozenset())
        if not gone:
            return ErrorCode.NONE
        new_state = state.copy()
        remove_from_sets(new_state.deleting, topic_id, gone)
        return self._replan(group_id, new_state)

    def mark_offsets_reset(
        self, group_id: str, topic_id: uuid.UUID, partitions: Iterable[int]
    ) -> ErrorCode:
        """AlterShareGroupOffsets wrote fresh state: the partitions count as initialized.

        A group that does not exist yet is created (empty, epoch 1), as Kafka's
        AlterShareGroupOffsets creates it.
        """
        if (error := self.availability()) is not ErrorCode.NONE:
            return error
        state = self._shard.partition_states.get(group_id) or StatePartitionMetadata()
        parts = frozenset(partitions)
        new_state = state.copy()
        remove_from_sets(
            new_state.initializing,
            topic_id,
            parts & new_state.initializing.get(topic_id, frozenset()),
        )
        remove_from_sets(
            new_state.deleting, topic_id, parts & new_state.deleting.get(topic_id, frozenset())
        )
        add_to_sets(new_state.initialized, topic_id, parts)
        group = self._shard.groups.get(group_id)
        if group is None:
            plan = self._plan(group_id, None, {}, force_bump=True, partition_state=new_state)
            return self._write(plan.records)
        if new_state.same_sets(state) and group_id in self._shard.partition_states:
            return ErrorCode.NONE
        return self._replan(group_id, new_state)

    def mark_offsets_deleted(self, group_id: str, topic_id: uuid.UUID) -> list[int]:
        """DeleteShareGroupOffsets: the topic's initialized partitions move to deleting.

        Returns the partitions whose state the broker must now delete (then ``mark_deleted``).
        """
        if self.availability() is not ErrorCode.NONE:
            return []
        state = self._shard.partition_states.get(group_id)
        if state is None:
            return []
        parts = state.initialized.get(topic_id, frozenset()) | state.initializing.get(
            topic_id, frozenset()
        )
        if not parts:
            return sorted(state.deleting.get(topic_id, frozenset()))
        new_state = state.copy()
        remove_from_sets(
            new_state.initialized,
            topic_id,
            parts & new_state.initialized.get(topic_id, frozenset()),
        )
        remove_from_sets(
            new_state.initializing,
            topic_id,
            parts & new_state.initializing.get(topic_id, frozenset()),
        )
        add_to_sets(new_state.deleting, topic_id, parts)
        if self._replan(group_id, new_state) is not ErrorCode.NONE:
            return []
        return sorted(parts | state.deleting.get(topic_id, frozenset()))

    def _replan(self, group_id: str, new_state: StatePartitionMetadata) -> ErrorCode:
        group = self._shard.groups.get(group_id)
        members = dict(group.members) if group is not None else {}
        plan = self._plan(group_id, group, members, force_bump=False, partition_state=new_state)
        return self._write(plan.records)

    # --- admin: describe, list, delete --------------------------------------------------------

    def group(self, group_id: str) -> ShareGroupView | None:
        """A snapshot of one group, or None."""
        group = self._shard.groups.get(group_id)
        if group is None:
            return None
        state = self._shard.partition_states.get(group_id) or StatePartitionMetadata()
        members = {
            m.member_id: ShareMemberView(
                member_id=m.member_id,
                rack_id=m.rack_id,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=m.subscribed,
                member_epoch=m.member_epoch,
                previous_member_epoch=m.previous_member_epoch,
                assigned=m.assigned,
                target=group.target.get(m.member_id, NO_ASSIGNMENT),
            )
            for m in sorted(group.members.values(), key=lambda m: m.member_id)
        }
        return ShareGroupView(
            group_id=group_id,
            state=group.state,
            group_epoch=group.epoch,
            assignment_epoch=group.assignment_epoch,
            members=members,
            subscribed_topic_names=frozenset(
                n for m in group.members.values() for n in m.subscribed
            ),
            initializing=dict(state.initializing),
            initialized=dict(state.initialized),
            deleting=dict(state.deleting),
        )

    def is_empty(self, group_id: str) -> bool:
        """True if the group has no members (or does not exist)."""
        group = self._shard.groups.get(group_id)
        return group is None or not group.members

    def describe(self, group_ids: Iterable[str]) -> list[ShareGroupDescription]:
        """ShareGroupDescribe v1, one entry per requested id (unknown: GROUP_ID_NOT_FOUND)."""
        return answer_each(group_ids, self.availability(), ShareGroupDescription, self._describe)

    def _describe(self, group_id: str) -> ShareGroupDescription:
        group = self._shard.groups.get(group_id)
        if group is None:
            return ShareGroupDescription(
                group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found."
            )
        members = tuple(
            ShareGroupMemberDescription(
                member_id=m.member_id,
                rack_id=m.rack_id,
                client_id=m.client_id,
                client_host=m.client_host,
                member_epoch=m.member_epoch,
                subscribed_topic_names=m.subscribed,
                assignment=tuple(
                    TopicPartitions(topic_id, self._topic_name(group.group_id, topic_id), tuple(ps))
                    for topic_id, ps in as_assignment_list(m.assigned)
                ),
            )
            for m in sorted(group.members.values(), key=lambda m: m.member_id)
        )
        return ShareGroupDescription(
            group_id=group.group_id,
            error=ErrorCode.NONE,
            group_state=group.state,
            group_epoch=group.epoch,
            assignment_epoch=group.assignment_epoch,
            assignor_name=self._assignor.name,
            members=members,
        )

    def _topic_name(self, group_id: str, topic_id: uuid.UUID) -> str:
        topic = self._topics.by_id(topic_id)
        if topic is not None:
            return topic.name
        state = self._shard.partition_states.get(group_id)
        return state.names.get(topic_id, "") if state is not None else ""

    def list_groups(
        self, states: Iterable[str] = (), types: Iterable[str] = ()
    ) -> list[GroupListing]:
        """ListGroups' share groups; empty filters match everything (case-insensitive)."""
        wanted = ListFilter.of(states, types)
        if self.availability() is not ErrorCode.NONE or not wanted.wants_type(GROUP_TYPE):
            return []
        return [
            GroupListing(g.group_id, g.state, GROUP_TYPE)
            for g in sorted(self._shard.groups.values(), key=lambda g: g.group_id)
            if wanted.wants_state(g.state)
        ]

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, ErrorCode]:
        """DeleteGroups for share groups: only an empty group can go.

        Its group, target and member records are tombstoned and every share partition it had
        moves to *deleting*; the caller then deletes the persister state for
        ``partitions_to_delete(group_id)`` and calls ``mark_deleted``.  Config overrides stay
        (Kafka keeps group configs apart from the group).
        """
        results: dict[str, ErrorCode] = {}
        available = self.availability()
        for group_id in group_ids:
            if group_id in results:
                continue
            group = self._shard.groups.get(group_id)
            if available is not ErrorCode.NONE:
                results[group_id] = available
            elif group is None:
                results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif group.members:
                results[group_id] = ErrorCode.NON_EMPTY_GROUP
            else:
                results[group_id] = self._write(self._delete_records(group_id))
        return results

    def _delete_records(self, group_id: str) -> list[GroupRecord]:
        records: list[GroupRecord] = []
        state = self._shard.partition_states.get(group_id)
        if state is not None:
            new = state.copy()
            for sets in (new.initializing, new.initialized):
                for topic_id, parts in sets.items():
                    add_to_sets(new.deleting, topic_id, parts)
                sets.clear()
            if new.is_empty():
                records.append(Tombstone("partitions", group_id))
            elif not new.same_sets(state):
                records.append(partition_state_record_of(group_id, new))
        records.append(Tombstone("target", group_id))
        records.append(Tombstone("group", group_id))
        return records

    # --- group configs ------------------------------------------------------------------------

    def group_config(self, group_id: str) -> ShareGroupConfig:
        """The effective settings of a group (its overrides over the broker's defaults)."""
        return self._shard.group_config(group_id)

    def consumer_timing(self, group_id: str) -> tuple[int, int]:
        """A KIP-848 consumer group's (session timeout, heartbeat interval) in ms: its
        ``consumer.*`` group configs over the broker's settings."""
        return self._shard.config_defs.consumer_timing(self._shard.configs.get(group_id, {}))

    def consumer_assignment_interval_ms(self, group_id: str) -> int:
        """A KIP-848 consumer group's assignment interval in ms: its
        ``consumer.assignment.interval.ms`` over the broker's setting."""
        return self._shard.config_defs.consumer_assignment_interval_ms(
            self._shard.configs.get(group_id, {})
        )

    def describe_group_configs(self, group_id: str) -> dict[str, tuple[str, bool]]:
        """Every share-group config of ``group_id`` as (value, is_default)."""
        return self._shard.config_defs.describe(self._shard.configs.get(group_id, {}))

    def alter_group_configs(
        self,
        group_id: str,
        to_set: Mapping[str, object],
        to_delete: Iterable[str] = (),
        validate_only: bool = False,
    ) -> tuple[ErrorCode, str | None]:
        """IncrementalAlterConfigs on a GROUP resource: set ``to_set``, revert ``to_delete``.

        The group need not exist (as in Kafka).  Unknown names and values outside the broker's
        bounds give INVALID_CONFIG with a message naming the bound; nothing is written then,
        nor with ``validate_only``.
        """
        if (error := self.availability()) is not ErrorCode.NONE:
            return error, None
        if not group_id:
            return ErrorCode.INVALID_REQUEST, "the group id must not be empty"
        deletes = list(to_delete)
        both = sorted(set(to_set) & set(deletes))
        if both:
            return ErrorCode.INVALID_REQUEST, f"configs both set and deleted: {', '.join(both)}"
        current = self._shard.configs.get(group_id, {})
        try:
            overrides = self._shard.config_defs.apply_changes(current, to_set, deletes)
        except InvalidConfigError as exc:
            return ErrorCode.INVALID_CONFIG, exc.message or str(exc)
        if validate_only or overrides == current:
            return ErrorCode.NONE, None
        record: GroupRecord = (
            GroupConfigRecord(group_id, overrides) if overrides else Tombstone("config", group_id)
        )
        error = self._write([record])
        if error is not ErrorCode.NONE:
            return error, f"the share-group log append failed: {error.name}"
        if self.on_config_changed is not None:
            try:
                self.on_config_changed(group_id, self.group_config(group_id))
            except Exception:
                log.exception("on_config_changed(%s) failed", group_id)
        return ErrorCode.NONE, None

    # --- sessions -----------------------------------------------------------------------------

    def _arm_session_timer(
        self, group_id: str, member_id: str, delay_ms: int | None = None
    ) -> None:
        self._cancel_session_timer(group_id, member_id)
        if delay_ms is None:
            delay_ms = self.group_config(group_id).session_timeout_ms
        self._timer_seq += 1
        seq = self._timer_seq

        def expire() -> None:
            self._on_session_timeout(group_id, member_id, seq)

        self._timers[(group_id, member_id)] = (seq, self._clock.schedule(delay_ms, expire))

    def _cancel_session_timer(self, group_id: str, member_id: str) -> None:
        entry = self._timers.pop((group_id, member_id), None)
        if entry is not None:
            entry[1].cancel()

    def _cancel_all_timers(self) -> None:
        for _seq, timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    def _on_session_timeout(self, group_id: str, member_id: str, seq: int) -> None:
        entry = self._timers.get((group_id, member_id))
        if self._runtime.closed or entry is None or entry[0] != seq:
            return  # cancelled or superseded by a later heartbeat
        del self._timers[(group_id, member_id)]
        group = self._shard.groups.get(group_id)
        if group is None or member_id not in group.members:
            return
        log.info("member %s of share group %s: session timed out", member_id, group_id)
        error = self._remove_member(group, member_id)
        if error is not ErrorCode.NONE:
            log.warning("could not remove expired member %s (%s); retrying", member_id, error.name)
            self._arm_session_timer(group_id, member_id, self._retry_backoff_ms)

    # --- persistence --------------------------------------------------------------------------

    def _write(self, records: list[GroupRecord]) -> ErrorCode:
        """Append ``records`` (computed from the current state) as one batch and flush them;
        the runtime then replays them into the shard."""
        return self._runtime.write(0, lambda _shard: CoordinatorResult(records, ErrorCode.NONE))
