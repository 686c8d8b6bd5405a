"""The classic protocol part of the consumer-group coordinator: JoinGroup, SyncGroup,
Heartbeat and LeaveGroup of classic groups, their rebalances and member sessions (Kafka's
GroupMetadataManager for classic groups).

A part the coordinator holds and delegates to (``ConsumerGroupCoordinator`` routes the
requests of a KIP-848 group's classic members to ``mixed`` instead).  A classic group's
rebalance -- its state, the joins and syncs waiting, pending members -- is in memory only,
as in Kafka; its record is written through the context when a rebalance completes or the
group empties, and replaying it installs the log-backed fields.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from coordinator.group.classic import ClassicGroup, ClassicMember, ClassicState, Responder
from coordinator.group.consumer_change import records_of
from coordinator.group.offset_commands import Committer
from coordinator.group.offsets import OffsetStore
from coordinator.group.parts import GroupContext
from coordinator.group.records import GroupKey
from coordinator.group.results import JoinRequest, JoinResult, SyncResult
from txn.errors import ErrorCode

__all__ = ["ClassicMembership"]

log = logging.getLogger("sharetxn.groups")

_S = ClassicState


class ClassicMembership:
    """Classic groups: joins, rebalances, syncs, heartbeats, leaves and sessions."""

    def __init__(self, context: GroupContext) -> None:
        self._context = context
        self._clock = context.clock
        self._config = context.config
        self._runtime = context.runtime
        self._timers = context.timers
        self._is_share_group = context.is_share_group
        self._groups = context.groups
        self._consumer_groups = context.consumer_groups
        self._write = context.write
        self._emit = context.emit

    @property
    def offsets(self) -> OffsetStore:
        return self._context.offsets

    def availability(self) -> ErrorCode:
        return self._context.availability()

    # --- offsets: fencing a committer, a commit keeps the session alive ----------------------

    def fence(self, committer: Committer) -> ErrorCode:
        """A committer against its classic group's membership (generation, member and
        instance id); generation -1 commits to an empty or new group."""
        group_id, generation = committer.group_id, committer.generation
        member_id, group_instance_id = committer.member_id, committer.group_instance_id
        group = self._groups.get(group_id)
        if group is None:
            # Manual assignment (generation -1) commits to a new, empty group.
            return ErrorCode.NONE if generation < 0 else ErrorCode.ILLEGAL_GENERATION
        if generation < 0 and group.state is _S.EMPTY:
            return ErrorCode.NONE
        if (error := group.member_error(member_id, group_instance_id)) is not ErrorCode.NONE:
            return error
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        if group.state is _S.COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def touch_member(self, group_id: str, member_id: str) -> None:
        group = self._groups.get(group_id)
        if group is not None and member_id in group.members:
            self.arm_session(group, group.members[member_id], self._clock.now_ms())

    # --- JoinGroup ----------------------------------------------------------------------------

    def join(self, req: JoinRequest, respond: Callable[[JoinResult], None]) -> None:
        """JoinGroup of a classic group, once ``check_join`` passed: answered through
        ``respond``, now or when the rebalance completes."""
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
        error = group.member_error(req.member_id, req.group_instance_id)
        if error is not ErrorCode.NONE:
            respond(JoinResult(error, req.member_id))
            return
        self._join_existing_member(group, group.members[req.member_id], req, respond, now)

    def check_join(self, req: JoinRequest) -> ErrorCode:
        """JoinGroup's checks; an empty KIP-848 group of the id is deleted for a classic one."""
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
        # A leader that cannot be told to skip the assignment (JoinGroup before v9) rebalances.
        in_place = req.skip_assignment_supported or group.leader_id != new_id
        if (
            in_place
            and group.state is _S.STABLE
            and self._rejoin_in_place(group, old, new_id, req, now)
        ):
            respond(self._join_result(group, group.members[new_id], skip_assignment=True))
            return
        self._add_member(group, req, new_id, respond, now, assignment=old.assignment)

    def _rejoin_in_place(
        self, group: ClassicGroup, old: ClassicMember, new_id: str, req: JoinRequest, now: int
    ) -> bool:
        """A static member's new member id in a stable group, without a rebalance when the
        group's protocol stays (as Kafka): written at once; False (nothing changed) when the
        protocol would change or the write fails."""
        member = ClassicMember(
            new_id,
            req.group_instance_id,
            req.client_id,
            req.client_host,
            req.rebalance_timeout_ms if req.rebalance_timeout_ms > 0 else req.session_timeout_ms,
            req.session_timeout_ms,
            req.protocol_type,
            list(req.protocols),
            old.assignment,
        )
        group.members[new_id] = member
        assert req.group_instance_id is not None
        group.static_members[req.group_instance_id] = new_id
        if group.select_protocol() == group.protocol:
            error = self._write([(GroupKey(group.group_id), group.to_value())])
            if error is ErrorCode.NONE:
                self.arm_session(group, member, now)
                return True
            log.info("group %s: keeping static member %s failed: %s", group.group_id, new_id, error)
        del group.members[new_id]
        return False

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
        self.arm_session(group, member, now)
        if group.state is _S.PREPARING_REBALANCE:
            if group.initial_delay_until >= 0:
                self._extend_initial_delay(group, now)
            self._maybe_complete_join(group)
        else:
            self.prepare_rebalance(group, _with_reason(f"member {member_id} joined", req), now)

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
        self.arm_session(group, member, now)
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
            self.prepare_rebalance(
                group, _with_reason(f"member {member.member_id} rejoined", req), now
            )

    def _join_result(
        self, group: ClassicGroup, member: ClassicMember, *, skip_assignment: bool = False
    ) -> JoinResult:
        """The join answer of ``member``; ``skip_assignment``: a leader that rejoined without
        a rebalance gets the members but must not assign again (KIP-814)."""
        leader = member.member_id == group.leader_id
        members: tuple[tuple[str, str | None, bytes], ...] = ()
        if leader:
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
            skip_assignment and leader,
        )

    # --- rebalancing --------------------------------------------------------------------------

    def prepare_rebalance(self, group: ClassicGroup, reason: str, now: int) -> None:
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
            self.arm_session(group, member, now)

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
        group = self._groups.get(group_id)
        if error is ErrorCode.NONE:
            error = (
                ErrorCode.UNKNOWN_MEMBER_ID
                if group is None
                else group.member_error(member_id, group_instance_id)
            )
        member = group.members.get(member_id) if group is not None else None
        if error is not ErrorCode.NONE or group is None or member is None:
            respond(SyncResult(error))
            return
        if generation != group.generation:
            respond(SyncResult(ErrorCode.ILLEGAL_GENERATION))
            return
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol is not None and protocol != group.protocol
        ):
            respond(SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        self.arm_session(group, member, self._clock.now_ms())
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
            self.prepare_rebalance(
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
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if (error := group.member_error(member_id, group_instance_id)) is not ErrorCode.NONE:
            return error
        member = group.members[member_id]
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        self.arm_session(group, member, self._clock.now_ms())
        if group.state is _S.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave(
        self, group_id: str, members: list[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]:
        """LeaveGroup: (top-level error, per member (member id, instance id, error))."""
        if (error := self.availability()) is not ErrorCode.NONE:
            return error, []
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
            self.prepare_rebalance(group, "a member left", now)
        if group.state is _S.PREPARING_REBALANCE:
            if not group.members and not group.pending_members:
                self._timers.cancel(("join", group.group_id))
                group.initial_delay_until = -1
                self._complete_join(group)
            else:
                self._maybe_complete_join(group)

    # --- sessions -----------------------------------------------------------------------------

    def arm_session(self, group: ClassicGroup, member: ClassicMember, _now: int) -> None:
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
            self.arm_session(group, member, self._clock.now_ms())
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


def _with_reason(reason: str, req: JoinRequest) -> str:
    """The coordinator's reason for a rebalance, with the joining client's, as Kafka logs it."""
    return f"{reason}; client reason: {req.reason}" if req.reason else reason
