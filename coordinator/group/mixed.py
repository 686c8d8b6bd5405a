"""Classic-protocol members in KIP-848 groups, and converting a group between the protocols.

Kafka 4.x lets a group be migrated online (``group.consumer.migration.policy``, default
``bidirectional``):

* **classic members in a KIP-848 group**: JoinGroup, SyncGroup, Heartbeat and LeaveGroup of
  a member that speaks the classic protocol are served by the KIP-848 group.  The member's
  subscription and owned partitions come from its JoinGroup metadata (the embedded consumer
  protocol), the server-side assignor decides, JoinGroup answers with the member epoch as
  the generation and no leader work, SyncGroup answers the member's assigned partitions in
  its subscription's version, and a Heartbeat answers REBALANCE_IN_PROGRESS whenever the
  member must rejoin to revoke partitions or to collect more (its epoch is behind the
  group's, it has partitions to give up, or partitions of its target became free);
* **upgrade**: the first ConsumerGroupHeartbeat on a classic group that has members (and
  uses the consumer protocol) converts it: each classic member keeps its assignment and
  takes the generation as its epoch;
* **downgrade**: when the last member using the KIP-848 protocol leaves (or is fenced), a
  group whose remaining members all speak the classic protocol becomes a classic group
  again, each member holding its target assignment, and rebalances.

Every conversion writes the new kind's records (a downgrade also the tombstones of the
KIP-848 records) in one batch; on replay the records written last for an id decide its kind,
so a replay ends with the same group, offsets included.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import replace

from coordinator.group.classic import ClassicGroup, ClassicMember, ClassicState
from coordinator.group.classic_membership import ClassicMembership
from coordinator.group.consumer_change import ConsumerGroupChange
from coordinator.group.consumer_model import ConsumerMember, ConsumerProtocolGroup, Partitions
from coordinator.group.consumer_protocol import MEMBER_TIMERS, ConsumerMembership, records_of
from coordinator.group.consumer_records import ClassicMeta, Record
from coordinator.group.embedded import (
    CONSUMER_PROTOCOL_TYPE,
    EmbeddedProtocolError,
    encode_assignment,
    parse_assignment,
    parse_subscription,
    subscription_version,
)
from coordinator.group.parts import GroupContext
from coordinator.group.records import GroupKey
from coordinator.group.results import JoinRequest, JoinResult, SyncResult
from txn.errors import ErrorCode

log = logging.getLogger("sharetxn.groups")

MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")


class MixedMembership:
    """Classic members of KIP-848 groups and the conversions between the protocols: the part
    of ``ConsumerGroupCoordinator`` built on its consumer-protocol part (``consumer``) and
    its classic part (``classic``)."""

    def __init__(
        self, context: GroupContext, consumer: ConsumerMembership, classic: ClassicMembership
    ) -> None:
        self._clock = context.clock
        self._config = context.config
        self._timers = context.timers
        self._topics = context.topics
        self._groups = context.groups
        self._consumer_groups = context.consumer_groups
        self._write = context.write
        self._consumer = consumer
        self._classic = classic

    def take_over_classic(self, group_id: str) -> ErrorCode:
        """A KIP-848 member joins: an empty classic group of that id becomes a consumer group
        (its offsets stay); one with members is upgraded online if the policy allows, else
        GROUP_ID_NOT_FOUND."""
        classic = self._groups.get(group_id)
        if classic is None:
            return ErrorCode.NONE
        if classic.members:
            return self.upgrade_classic(group_id)
        if classic.state is not ClassicState.EMPTY or classic.pending_members:
            return ErrorCode.GROUP_ID_NOT_FOUND
        del self._groups[group_id]
        return ErrorCode.NONE

    # -- the policy -------------------------------------------------------------------------------

    def _migration(self, direction: str) -> bool:
        policy = self._config.get_str("group.consumer.migration.policy")
        return policy in ("bidirectional", direction)

    # -- topic names and ids ----------------------------------------------------------------------

    def _ids(self, pairs: Iterable[tuple[str, int]]) -> Partitions:
        out: dict[uuid.UUID, set[int]] = {}
        for name, partition in pairs:
            info = self._topics.get(name) if self._topics is not None else None
            if info is not None:
                out.setdefault(info.topic_id, set()).add(partition)
        return {t: frozenset(ps) for t, ps in out.items()}

    def _names(self, parts: Partitions) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for topic_id, partitions in parts.items():
            info = self._topics.by_id(topic_id) if self._topics is not None else None
            if info is not None:
                out[info.name] = sorted(partitions)
        return out

    def _assignment_bytes(self, member: ConsumerMember, parts: Partitions) -> bytes:
        assert member.classic is not None
        version = subscription_version(member.classic.protocols[0][1])
        return encode_assignment(version, self._names(parts))

    # -- JoinGroup, SyncGroup, Heartbeat, LeaveGroup of classic members ---------------------------

    def classic_join_to_consumer(
        self, group: ConsumerProtocolGroup, req: JoinRequest, respond: Callable[[JoinResult], None]
    ) -> None:
        if req.protocol_type != CONSUMER_PROTOCOL_TYPE or not _supports(group, req.protocols):
            respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id))
            return
        member_id = req.member_id
        static = _static_member(group.members, req.group_instance_id)
        if not member_id:
            member_id = str(uuid.uuid4())
            if req.group_instance_id is None and req.require_known_member_id:
                respond(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id))  # KIP-394
                return
        elif static is not None and static.member_id != member_id:
            respond(JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id))
            return
        existing = group.members.get(member_id)
        if existing is not None and existing.classic is None:
            respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
            return
        try:
            subscription = parse_subscription(req.protocols[0][1])
        except EmbeddedProtocolError:
            respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        change = ConsumerGroupChange(group.group_id, group)  # written, then replayed
        if static is not None and static.member_id != member_id:
            # The instance restarted with a new member id: it takes the old member's place.
            replaced = change.remove_member(static.member_id)
            assert replaced is not None
            for kind in MEMBER_TIMERS:
                self._timers.cancel((kind, group.group_id, replaced.member_id))
            existing = replace(replaced, member_id=member_id)
            change.move_target(replaced.member_id, member_id)
        topics = frozenset(subscription.topics)
        member = existing or ConsumerMember(
            member_id,
            req.group_instance_id,
            subscription.rack_id,
            req.client_id,
            req.client_host,
            topics,
            None,
            req.rebalance_timeout_ms,
        )
        changed = existing is None or member.subscribed != topics
        member = replace(
            member,
            subscribed=topics,
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            client_id=req.client_id,
            client_host=req.client_host,
            classic=ClassicMeta(req.session_timeout_ms, tuple(req.protocols)),
            owned=self._ids(subscription.owned),
        )
        change.put_member(member)
        if changed or self._consumer.topology(change.members) != change.topology:
            self._consumer.new_target(change)
        self._consumer.assign_if_due(change)
        member = self._consumer.reconcile(change, change.members[member_id])
        error = self._consumer.write_change(change)
        if error is not ErrorCode.NONE:
            respond(JoinResult(error, member_id))
            return
        self._consumer.arm_session(group.group_id, member)
        # As Kafka: the join is done; the member must now sync within its rebalance timeout.
        self._timers.cancel(("classic-join", group.group_id, member_id))
        self._arm_timeout("classic-sync", group.group_id, member, "sync in time", again=True)
        log.info(
            "consumer group %s: classic member %s joins at epoch %d",
            group.group_id,
            member_id,
            member.epoch,
        )
        respond(
            JoinResult(
                ErrorCode.NONE,
                member_id,
                member.epoch,
                CONSUMER_PROTOCOL_TYPE,
                req.protocols[0][0],
                "",
                (),
            )
        )

    def _classic_member(
        self, members: dict[str, ConsumerMember], member_id: str, instance_id: str | None
    ) -> ConsumerMember | ErrorCode:
        if instance_id is not None:
            member = _static_member(members, instance_id)
            if member is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if member.member_id != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        else:
            found = members.get(member_id)
            if found is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            member = found
        if member.classic is None:
            return ErrorCode.UNKNOWN_MEMBER_ID  # it speaks the KIP-848 protocol
        return member

    def classic_sync_to_consumer(
        self,
        group: ConsumerProtocolGroup,
        generation: int,
        member_id: str,
        instance_id: str | None,
        protocol_type: str | None,
        protocol: str | None,
    ) -> SyncResult:
        member = self._classic_member(group.members, member_id, instance_id)
        if isinstance(member, ErrorCode):
            return SyncResult(member)
        assert member.classic is not None
        name = member.classic.protocols[0][0]
        if generation != member.epoch:
            return SyncResult(ErrorCode.ILLEGAL_GENERATION)
        if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE) or (
            protocol is not None and protocol != name
        ):
            return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.epoch > member.epoch and not member.revoking:
            self._arm_timeout("classic-join", group.group_id, member, "rejoin in time")
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        self._timers.cancel(("classic-sync", group.group_id, member.member_id))
        self._consumer.arm_session(group.group_id, member)
        assignment = self._assignment_bytes(member, member.assigned)
        return SyncResult(ErrorCode.NONE, assignment, CONSUMER_PROTOCOL_TYPE, name)

    def classic_heartbeat_to_consumer(
        self, group: ConsumerProtocolGroup, generation: int, member_id: str, instance_id: str | None
    ) -> ErrorCode:
        member = self._classic_member(group.members, member_id, instance_id)
        if isinstance(member, ErrorCode):
            return member
        if generation != member.epoch:
            return ErrorCode.ILLEGAL_GENERATION
        self._consumer.arm_session(group.group_id, member)
        if member.epoch < group.epoch or member.revoking or self._free_for(group, member):
            self._arm_timeout("classic-join", group.group_id, member, "rejoin in time")
            return ErrorCode.REBALANCE_IN_PROGRESS  # rejoin to revoke, or to collect more
        return ErrorCode.NONE

    def _arm_timeout(
        self, kind: str, group_id: str, member: ConsumerMember, why: str, *, again: bool = False
    ) -> None:
        """Kafka's join (armed only if absent) or sync timeout of a classic member: the
        member is removed unless it joins (syncs) within its rebalance timeout."""
        key = (kind, group_id, member.member_id)
        if again or key not in self._timers.by_key:
            self._timers.arm(
                self._clock,
                key,
                member.rebalance_timeout_ms,
                lambda: self._consumer.fence(key, why),
            )

    def _free_for(self, group: ConsumerProtocolGroup, member: ConsumerMember) -> bool:
        """Whether partitions of the member's target that nobody holds now wait for it."""
        missing = {
            t: ps - member.assigned.get(t, frozenset())
            for t, ps in group.target.get(member.member_id, {}).items()
        }
        for other in group.members.values():
            if other is member:
                continue
            for held in (other.assigned, other.revoking):
                for t, ps in held.items():
                    if t in missing:
                        missing[t] = missing[t] - ps
        return any(missing.values())

    def classic_leave_from_consumer(
        self, group: ConsumerProtocolGroup, members: list[tuple[str, str | None]]
    ) -> list[tuple[str, str | None, ErrorCode]]:
        change = ConsumerGroupChange(group.group_id, group)  # written, then replayed
        results: list[tuple[str, str | None, ErrorCode]] = []
        for given_id, instance_id in members:
            member_id = given_id
            if instance_id is not None and not member_id:
                static = _static_member(change.members, instance_id)
                member_id = static.member_id if static is not None else ""
            found = self._classic_member(change.members, member_id, instance_id)
            if isinstance(found, ErrorCode):
                results.append((member_id, instance_id, found))
                continue
            log.info("consumer group %s: classic member %s leaves", group.group_id, member_id)
            self._consumer.remove_member(change, found.member_id)
            results.append((found.member_id, instance_id, ErrorCode.NONE))
        if any(e is ErrorCode.NONE for _m, _i, e in results):
            error = self._consumer.write_change(change)
            if error is not ErrorCode.NONE:
                return [(m, i, error if e is ErrorCode.NONE else e) for m, i, e in results]
        return results

    # -- conversions ------------------------------------------------------------------------------

    def upgrade_classic(self, group_id: str) -> ErrorCode:
        """A KIP-848 member joins a classic group with members: convert it, if allowed."""
        classic = self._groups[group_id]
        if not self._migration("upgrade") or classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return ErrorCode.GROUP_ID_NOT_FOUND
        group = ConsumerProtocolGroup(
            group_id, epoch=classic.generation, assignment_epoch=classic.generation
        )
        try:
            for m in classic.members.values():
                subscription = parse_subscription(m.metadata(classic.protocol))
                assigned = self._ids(parse_assignment(m.assignment))
                group.members[m.member_id] = ConsumerMember(
                    m.member_id,
                    m.group_instance_id,
                    subscription.rack_id,
                    m.client_id,
                    m.client_host,
                    frozenset(subscription.topics),
                    None,
                    m.rebalance_timeout_ms,
                    epoch=classic.generation,
                    previous_epoch=classic.generation,
                    assigned=assigned,
                    classic=ClassicMeta(m.session_timeout_ms, tuple(m.protocols)),
                )
                group.target[m.member_id] = dict(assigned)
        except EmbeddedProtocolError as exc:
            log.warning("consumer group %s: cannot upgrade (%s)", group_id, exc)
            return ErrorCode.GROUP_ID_NOT_FOUND
        # No classic tombstone (it would drop the group's offsets): replaying the KIP-848
        # records, live and on load, replaces the classic group with the consumer group.
        error = self._write(list(records_of(group).items()))
        if error is not ErrorCode.NONE:
            return error
        for m in classic.members.values():  # waiting joins and syncs: rejoin the new group
            self._timers.cancel(("session", group_id, m.member_id))
            m.answer_waiting(ErrorCode.REBALANCE_IN_PROGRESS)
        self._timers.cancel(("join", group_id))
        group = self._consumer_groups[group_id]
        group.topology = self._consumer.topology(group.members)
        for member in group.members.values():
            self._consumer.arm_session(group_id, member)
        log.info("group %s: upgraded from classic to consumer at epoch %d", group_id, group.epoch)
        return ErrorCode.NONE

    def maybe_downgrade(self, group_id: str) -> None:
        """After a KIP-848 member left: a group of classic members only becomes classic."""
        group = self._consumer_groups.get(group_id)
        if (
            group is None
            or not group.members
            or any(m.classic is None for m in group.members.values())
            or not self._migration("downgrade")
        ):
            return
        now = self._clock.now_ms()
        classic = ClassicGroup(
            group_id,
            state=ClassicState.STABLE,
            generation=group.epoch,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            state_timestamp=now,
        )
        for m in group.members.values():
            assert m.classic is not None
            classic.members[m.member_id] = ClassicMember(
                m.member_id,
                m.instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.classic.session_timeout_ms,
                CONSUMER_PROTOCOL_TYPE,
                list(m.classic.protocols),
                self._assignment_bytes(m, group.target.get(m.member_id, {})),
            )
            if m.instance_id is not None:
                classic.static_members[m.instance_id] = m.member_id
        classic.protocol = classic.select_protocol()
        records: list[Record] = [(k, None) for k in records_of(group)]
        records.append((GroupKey(group_id), classic.to_value()))
        if self._write(records) is not ErrorCode.NONE:
            return  # stays a consumer group; the next leave tries again
        # Replaying the records made the classic group; its members keep every protocol
        # they sent (the record holds the selected one's metadata only).
        for member_id in group.members:
            for kind in MEMBER_TIMERS:
                self._timers.cancel((kind, group_id, member_id))
        installed = self._groups[group_id]
        for member in installed.members.values():
            member.protocols = list(classic.members[member.member_id].protocols)
            self._classic.arm_session(installed, member, now)
        log.info("group %s: downgraded from consumer to classic", group_id)
        self._classic.prepare_rebalance(installed, "downgraded from the consumer protocol", now)


def _supports(group: ConsumerProtocolGroup, protocols: list[tuple[str, bytes]]) -> bool:
    """Kafka's rule: the first classic member may bring any protocol; later ones need a
    protocol name every classic member supports."""
    names = {name for name, _meta in protocols}
    if not names:
        return False
    for member in group.members.values():
        if member.classic is not None:
            names &= {name for name, _meta in member.classic.protocols}
    return bool(names)


def _static_member(
    members: dict[str, ConsumerMember], instance_id: str | None
) -> ConsumerMember | None:
    if instance_id is None:
        return None
    return next((m for m in members.values() if m.instance_id == instance_id), None)
