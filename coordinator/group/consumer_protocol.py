"""The KIP-848 consumer group protocol: ConsumerGroupHeartbeat and server-side assignors.

Members heartbeat with their subscription; the coordinator keeps a group epoch that moves
whenever membership, a subscription or a subscribed topic's partitions change, computes the
target assignment with the ``uniform`` or ``range`` assignor at most once per assignment
interval (``consumer.assignment.interval.ms``, else the broker's, 1 s: an epoch bumped sooner
waits for a heartbeat after it, as Kafka 4.4), and reconciles each
member towards it: partitions the member must give up are revoked first (the member's epoch
stays until its heartbeat no longer owns them), and a partition is handed to its new owner
only once the old one released it.  A member that has no revocation left takes the group's
assignment epoch.  Fencing: a heartbeat whose epoch is neither the member's nor (with the
same partitions) its previous one gets FENCED_MEMBER_EPOCH; an unknown member
UNKNOWN_MEMBER_ID.  ``group.consumer.session.timeout.ms`` removes silent members, and a
member that does not revoke within its rebalance timeout is removed too.

Every change is written as Kafka's KIP-848 records (``consumer_records``) before the answer,
and ``load()`` replays them, so members keep their epochs and assignments across a restart.
"""

from __future__ import annotations

import logging
import struct
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from coordinator.group.consumer_change import ConsumerGroupChange, records_of
from coordinator.group.consumer_model import (
    ConsumerMember,
    ConsumerProtocolGroup,
    Partitions,
    preferred_assignor,
    subscribed_topics,
)
from coordinator.group.consumer_records import Record
from coordinator.group.consumer_regex import DescribeFilter, RegexStatus, RegexSubscriptions
from coordinator.group.offsets import OffsetStore
from coordinator.group.parts import GroupContext
from coordinator.group.records import OffsetKey
from coordinator.group.results import GroupDescription, MemberDescription
from coordinator.share.group_model import GroupHeartbeatResult, can_compute_next_target_assignment
from txn.errors import ErrorCode

log = logging.getLogger("sharetxn.groups")

#: A member's timers: its session, its revocation and, for a classic member, Kafka's join
#: and sync timeouts (each its rebalance timeout).
MEMBER_TIMERS = ("consumer-session", "revoke", "classic-join", "classic-sync")

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
ASSIGNORS = ("uniform", "range")
CONSUMER_GROUP_TYPE = "consumer"


@dataclass(frozen=True, slots=True)
class ConsumerHeartbeatResult(GroupHeartbeatResult[Partitions]):
    """ConsumerGroupHeartbeat's response fields (``assignment`` None: unchanged, not sent)."""


def _minus(a: Partitions, b: Partitions) -> Partitions:
    out = {t: ps - b.get(t, frozenset()) for t, ps in a.items()}
    return {t: ps for t, ps in out.items() if ps}


def _union(a: Partitions, b: Partitions) -> Partitions:
    out = dict(a)
    for t, ps in b.items():
        out[t] = out.get(t, frozenset()) | ps
    return {t: ps for t, ps in out.items() if ps}


def _static_member(
    group: ConsumerProtocolGroup | None, instance_id: str | None
) -> ConsumerMember | None:
    if group is None or instance_id is None:
        return None
    return next((m for m in group.members.values() if m.instance_id == instance_id), None)


def _static_fence(
    group: ConsumerProtocolGroup | None, member_id: str, instance_id: str | None
) -> ConsumerHeartbeatResult | None:
    """Kafka's checks of a static member's heartbeat or leave: its instance id must be known
    and held by its member id."""
    if instance_id is None:
        return None
    static = _static_member(group, instance_id)
    if static is None:
        return ConsumerHeartbeatResult(
            ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown."
        )
    if static.member_id != member_id:
        return ConsumerHeartbeatResult(
            ErrorCode.FENCED_INSTANCE_ID,
            f"Static member {member_id} with instance id {instance_id} is fenced by existing "
            f"member {static.member_id}.",
        )
    return None


def _overlaps(a: Partitions, b: Partitions) -> bool:
    return any(a.get(t, frozenset()) & ps for t, ps in b.items())


__all__ = ["ConsumerHeartbeatResult", "ConsumerMembership", "assign", "records_of"]


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def _classic_subscription(topics: frozenset[str]) -> bytes:
    """A consumer-protocol subscription (version 0): the topics, no user data."""
    out = struct.pack(">hi", 0, len(topics))
    for name in sorted(topics):
        out += _string(name)
    return out + struct.pack(">i", -1)


def assign(
    assignor: str,
    members: dict[str, ConsumerMember],
    topics: dict[str, tuple[uuid.UUID, int]],
    current: dict[str, Partitions],
) -> dict[str, Partitions]:
    """The target assignment: ``range`` (contiguous ranges per topic, members by id) or
    ``uniform`` (balanced, keeping each member's current partitions where it can)."""
    out: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
    if assignor == "range":
        for name, (topic_id, count) in sorted(topics.items()):
            subscribers = sorted(m for m, v in members.items() if name in v.topics)
            if not subscribers:
                continue
            per, extra = divmod(count, len(subscribers))
            start = 0
            for i, member_id in enumerate(subscribers):
                size = per + (1 if i < extra else 0)
                if size:
                    out[member_id].setdefault(topic_id, set()).update(range(start, start + size))
                start += size
    else:
        partitions = [
            (name, topic_id, p)
            for name, (topic_id, count) in sorted(topics.items())
            for p in range(count)
        ]
        eligible = {
            (tid, p): sorted(m for m, v in members.items() if name in v.topics)
            for name, tid, p in partitions
        }
        load = dict.fromkeys(members, 0)
        quota = -(-len(partitions) // max(1, len(members)))  # ceil: the most any may hold
        left: list[tuple[uuid.UUID, int]] = []
        for _name, tid, p in partitions:
            keeper = next(
                (m for m in eligible[(tid, p)] if p in current.get(m, {}).get(tid, frozenset())),
                None,
            )
            if keeper is not None and load[keeper] < quota:
                out[keeper].setdefault(tid, set()).add(p)
                load[keeper] += 1
            else:
                left.append((tid, p))
        for tid, p in left:
            candidates = eligible[(tid, p)]
            if candidates:
                chosen = min(candidates, key=lambda m: (load[m], m))
                out[chosen].setdefault(tid, set()).add(p)
                load[chosen] += 1
    return {m: {t: frozenset(ps) for t, ps in parts.items()} for m, parts in out.items()}


class ConsumerMembership:
    """KIP-848 groups: the consumer protocol part of ``ConsumerGroupCoordinator``.

    ``take_over_classic(group id)``: a classic group of that id gives way to a KIP-848 member
    (or GROUP_ID_NOT_FOUND); ``maybe_downgrade(group id)``: after a KIP-848 member left, a
    group of classic members only becomes classic -- both the mixed part's, handed in by the
    coordinator (that part builds on this one).
    """

    def __init__(
        self,
        context: GroupContext,
        *,
        take_over_classic: Callable[[str], ErrorCode],
        maybe_downgrade: Callable[[str], None],
    ) -> None:
        self._context = context
        self._clock = context.clock
        self._config = context.config
        self._runtime = context.runtime
        self._timers = context.timers
        self._topics = context.topics
        self._is_share_group = context.is_share_group
        self._consumer_groups = context.consumer_groups
        self._write = context.write
        self._take_over = take_over_classic
        self._downgrade = maybe_downgrade
        self.regexes = RegexSubscriptions(
            context,
            context.topic_catalog,
            topology=self.topology,
            new_target=self.new_target,
            write_change=self.write_change,
        )

    @property
    def offsets(self) -> OffsetStore:
        return self._context.offsets

    def availability(self) -> ErrorCode:
        return self._context.availability()

    def consumer_heartbeat(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        **request: Any,
    ) -> ConsumerHeartbeatResult:
        """ConsumerGroupHeartbeat: join (epoch 0), heartbeat, or leave (epoch -1 / -2).

        The heartbeat computes its change from the group without changing it, as Kafka's
        records (``consumer_change``); they are written and replayed into the group before
        the answer.  A failed write leaves the group as it was and answers the append's error.
        """
        result, change = self._consumer_heartbeat(group_id, member_id, member_epoch, **request)
        if result.error is ErrorCode.NONE and change is not None:
            error = self.write_change(change)
            if error is not ErrorCode.NONE:
                return ConsumerHeartbeatResult(error)
            if member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                self._downgrade(group_id)
        return result

    def _consumer_heartbeat(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        *,
        instance_id: str | None = None,
        rack_id: str | None = None,
        rebalance_timeout_ms: int = -1,
        subscribed_topic_names: list[str] | None = None,
        subscribed_topic_regex: str | None = None,
        server_assignor: str | None = None,
        owned: Partitions | None = None,
        client_id: str = "",
        client_host: str = "",
        server_member_id: bool = False,
        may_describe: DescribeFilter | None = None,
    ) -> tuple[ConsumerHeartbeatResult, ConsumerGroupChange | None]:
        """The answer, and the group's change (None: an error).

        ``server_member_id``: a v0 request, whose join may leave the member id to the
        coordinator; from v1 (KIP-1082) every request carries the client's own id.
        ``may_describe``: whether the request's principal may describe a topic (its regex
        resolves to those it may; None: every topic).
        """
        if (error := self.availability()) is not ErrorCode.NONE:
            return ConsumerHeartbeatResult(error), None
        if not member_id and (
            not server_member_id or member_epoch > 0 or member_epoch == LEAVE_EPOCH
        ):
            return ConsumerHeartbeatResult(
                ErrorCode.INVALID_REQUEST, "MemberId can't be empty."
            ), None
        if not group_id:
            return ConsumerHeartbeatResult(
                ErrorCode.INVALID_REQUEST, "GroupId can't be empty."
            ), None
        if server_assignor is not None and server_assignor not in ASSIGNORS:
            return ConsumerHeartbeatResult(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {server_assignor} is not supported. "
                f"Supported assignors: {', '.join(ASSIGNORS)}.",
            ), None
        if member_epoch == 0 and subscribed_topic_names is None and subscribed_topic_regex is None:
            return ConsumerHeartbeatResult(
                ErrorCode.INVALID_REQUEST,
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                "(re-)joining.",
            ), None
        if (
            self._is_share_group(group_id)
            or (error := self._take_over(group_id)) is not ErrorCode.NONE
        ):
            return ConsumerHeartbeatResult(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
            ), None
        if member_epoch == STATIC_LEAVE_EPOCH and instance_id is None:
            return ConsumerHeartbeatResult(
                ErrorCode.INVALID_REQUEST, "InstanceId can't be null."
            ), None
        if member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._consumer_leave(group_id, member_id, member_epoch, instance_id)
        live = self._consumer_groups.get(group_id)
        group = ConsumerGroupChange(group_id, live)
        if member_epoch == 0:
            member_id = member_id or str(uuid.uuid4())
            subscribed = frozenset(subscribed_topic_names or ())
            static = _static_member(live, instance_id)
            if static is not None and static.epoch != STATIC_LEAVE_EPOCH and static.classic is None:
                return ConsumerHeartbeatResult(
                    ErrorCode.UNRELEASED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {instance_id} cannot join the "
                    f"group because the instance id is owned by {static.member_id} member.",
                ), None
            if (invalid := self.regexes.invalid(subscribed_topic_regex)) is not None:
                return ConsumerHeartbeatResult(ErrorCode.INVALID_REGULAR_EXPRESSION, invalid), None
            old: ConsumerMember | None
            if static is not None:
                # The instance is back under a new member id: it takes the place, the
                # assignment and the epoch of the member that left for a while (no rebalance).
                old = static
                group.remove_member(old.member_id)
                for kind in MEMBER_TIMERS:
                    self._timers.cancel((kind, group_id, old.member_id))
                if old.member_id != member_id:
                    group.move_target(old.member_id, member_id)
                member = replace(
                    old,
                    member_id=member_id,
                    rack_id=rack_id,
                    client_id=client_id,
                    client_host=client_host,
                    subscribed=subscribed,
                    regex=subscribed_topic_regex
                    if subscribed_topic_regex is not None
                    else old.regex,
                    server_assignor=server_assignor,
                    rebalance_timeout_ms=rebalance_timeout_ms,
                    epoch=0,
                    previous_epoch=0,
                    revoking={},
                    owned=owned,
                    sent=None,
                    classic=None,
                )
                log.info(
                    "consumer group %s: static member %s replaces %s",
                    group_id,
                    member_id,
                    old.member_id,
                )
            else:
                old = group.members.pop(member_id, None)  # a rejoin: a new member, last in order
                regex = subscribed_topic_regex
                if old is not None and (regex is None or subscribed_topic_names is None):
                    # a rejoin keeps what the request leaves out, as Kafka's member does
                    regex = old.regex if regex is None else regex
                    if subscribed_topic_names is None:
                        subscribed = old.subscribed
                member = ConsumerMember(
                    member_id,
                    instance_id,
                    rack_id,
                    client_id,
                    client_host,
                    subscribed,
                    server_assignor,
                    rebalance_timeout_ms,
                    owned=owned,
                    regex="" if regex is None else regex,
                )
                log.info("consumer group %s: member %s joins", group_id, member_id)
            changed = old is None or old.subscribed != member.subscribed
        else:
            if (fenced := _static_fence(live, member_id, instance_id)) is not None:
                return fenced, None
            member_or_error = self._heartbeating_member(live, member_id, member_epoch, owned)
            if isinstance(member_or_error, ConsumerHeartbeatResult):
                return member_or_error, None
            if (invalid := self.regexes.invalid(subscribed_topic_regex)) is not None:
                return ConsumerHeartbeatResult(ErrorCode.INVALID_REGULAR_EXPRESSION, invalid), None
            member = old = member_or_error
            changed = False
            if subscribed_topic_names is not None:
                subscribed = frozenset(subscribed_topic_names)
                changed = subscribed != member.subscribed
                member = replace(member, subscribed=subscribed)
            if server_assignor is not None:
                member = replace(member, server_assignor=server_assignor)
            if owned is not None:
                member = replace(member, owned=owned)
            if subscribed_topic_regex is not None:
                member = replace(member, regex=subscribed_topic_regex)
        member, regex_status = self.regexes.update(group, old, member, may_describe)
        changed |= regex_status is RegexStatus.UPDATED_AND_RESOLVED
        group.put_member(member)
        if changed or self.topology(group.members) != group.topology:
            self.new_target(group)
        self.assign_if_due(group)
        member = self.reconcile(group, group.members[member_id])
        self.arm_session(group_id, member)
        full = member_epoch == 0 or (owned is not None and owned != member.assigned)
        assignment = None
        if full or member.sent != member.assigned:
            assignment = dict(member.assigned)
            group.put_member(replace(member, sent=assignment))
        return ConsumerHeartbeatResult(
            ErrorCode.NONE,
            None,
            member.member_id,
            member.epoch,
            self._context.consumer_heartbeat_interval_ms(group_id),
            assignment,
        ), group

    def _heartbeating_member(
        self,
        group: ConsumerProtocolGroup | None,
        member_id: str,
        member_epoch: int,
        owned: Partitions | None,
    ) -> ConsumerMember | ConsumerHeartbeatResult:
        member = group.members.get(member_id) if group is not None else None
        if member is None:
            return ConsumerHeartbeatResult(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of the group."
            )
        if member_epoch != member.epoch:
            # A lost response: the previous epoch with nothing it should not own is fine.
            lost_response = member_epoch == member.previous_epoch and (
                owned is None or not _minus(owned, _union(member.assigned, member.revoking))
            )
            if not lost_response:
                return ConsumerHeartbeatResult(
                    ErrorCode.FENCED_MEMBER_EPOCH,
                    f"The consumer group member has a smaller member epoch ({member_epoch}) "
                    f"than the one known by the group coordinator ({member.epoch}).",
                )
        return member

    def topology(self, members: dict[str, ConsumerMember]) -> tuple[tuple[str, str, int], ...]:
        if self._topics is None:
            return ()
        out = []
        for name in sorted(subscribed_topics(members)):
            info = self._topics.get(name)
            if info is not None:
                out.append((name, str(info.topic_id), info.num_partitions))
        return tuple(out)

    def new_target(self, group: ConsumerGroupChange) -> None:
        """A new group epoch (membership, a subscription or the subscribed topics changed)
        and, when it is due, its target assignment (``assign_if_due``)."""
        group.topology = self.topology(group.members)
        group.bump_epoch()
        log.info(
            "consumer group %s: epoch %d, %d member(s)",
            group.group_id,
            group.epoch,
            len(group.members),
        )
        self.assign_if_due(group)

    def assign_if_due(self, group: ConsumerGroupChange) -> None:
        """The target assignment of the group epoch, over the change's members, when the epoch
        is ahead of the target's and the group's assignment interval (its
        ``consumer.assignment.interval.ms``, else the broker's, 1 s) has passed since the last
        one: Kafka 4.4 computes it at most once per interval, in a member's heartbeat."""
        if not group.assignment_pending:
            return
        now = self._clock.now_ms()
        interval = self._context.consumer_assignment_interval_ms(group.group_id)
        if not can_compute_next_target_assignment(group.assignment_timestamp, interval, now):
            return
        group.topology = self.topology(group.members)
        topics = {name: (uuid.UUID(tid), count) for name, tid, count in group.topology}
        group.assignor = preferred_assignor(group.members)
        group.new_target(assign(group.assignor, group.members, topics, group.target), now)
        log.info(
            "consumer group %s: target assignment of epoch %d, assignor %s",
            group.group_id,
            group.epoch,
            group.assignor,
        )

    def reconcile(self, group: ConsumerGroupChange, member: ConsumerMember) -> ConsumerMember:
        """The member one step towards its target (revocations first), put in the change."""
        group_id, member_id = group.group_id, member.member_id
        target = group.target.get(member_id, {})
        revoking = member.revoking
        if revoking:
            if member.owned is not None and not _overlaps(member.owned, revoking):
                revoking = {}  # the member released them
                self._timers.cancel(("revoke", group_id, member_id))
            else:
                return member
        to_revoke = _minus(member.assigned, target)
        if to_revoke:
            member = replace(
                member, assigned=_minus(member.assigned, to_revoke), revoking=to_revoke
            )
            group.put_member(member)
            self._timers.arm(
                self._clock,
                ("revoke", group_id, member_id),
                max(member.rebalance_timeout_ms, 1),
                lambda: self._revocation_timed_out(group_id, member_id),
            )
            return member
        held: Partitions = {}
        for other in group.members.values():
            if other.member_id != member_id:
                held = _union(held, _union(other.assigned, other.revoking))
        free = _minus(_minus(target, member.assigned), held)
        epoch, previous = member.epoch, member.previous_epoch
        if epoch != group.assignment_epoch:
            previous, epoch = epoch, group.assignment_epoch
        member = replace(
            member,
            assigned=_union(member.assigned, free),
            revoking=revoking,
            epoch=epoch,
            previous_epoch=previous,
        )
        group.put_member(member)
        return member

    def _revocation_timed_out(self, group_id: str, member_id: str) -> None:
        self._timers.by_key.pop(("revoke", group_id, member_id), None)
        group = self._consumer_groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None or not member.revoking or self._runtime.closed:
            return
        log.info("consumer group %s: member %s did not revoke in time", group_id, member_id)
        self._remove_persisted(group_id, member_id)

    def arm_session(self, group_id: str, member: ConsumerMember) -> None:
        member_id = member.member_id
        self._timers.arm(
            self._clock,
            ("consumer-session", group_id, member_id),
            member.classic.session_timeout_ms
            if member.classic is not None
            else self._context.consumer_session_timeout_ms(group_id),
            lambda: self._consumer_session_expired(group_id, member_id),
        )

    def _consumer_session_expired(self, group_id: str, member_id: str) -> None:
        self._timers.by_key.pop(("consumer-session", group_id, member_id), None)
        group = self._consumer_groups.get(group_id)
        if group is None or member_id not in group.members or self._runtime.closed:
            return
        log.info("consumer group %s: member %s session timed out", group_id, member_id)
        self._remove_persisted(group_id, member_id)

    def fence(self, key: tuple[str, str, str], why: str) -> None:
        """A classic member's join or sync timer fired: it is removed, as its session would."""
        self._timers.by_key.pop(key, None)
        _kind, group_id, member_id = key
        group = self._consumer_groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if member is None or member.classic is None or self._runtime.closed:
            return
        log.info("consumer group %s: classic member %s failed to %s", group_id, member_id, why)
        self._remove_persisted(group_id, member_id)

    def _remove_persisted(self, group_id: str, member_id: str) -> None:
        """A timer removes a member: written like a heartbeat's change, retried on failure."""
        group = ConsumerGroupChange(group_id, self._consumer_groups[group_id])
        was_classic = group.members[member_id].classic is not None
        self.remove_member(group, member_id)
        if self.write_change(group) is not ErrorCode.NONE:
            restored = self._consumer_groups[group_id].members.get(member_id)
            if restored is not None:
                self.arm_session(group_id, restored)
        elif not was_classic:
            self._downgrade(group_id)

    # -- persistence (Kafka's KIP-848 records) --------------------------------------------------

    def write_change(self, change: ConsumerGroupChange) -> ErrorCode:
        """Write a change's records; replaying them changes the group, which then takes what
        they do not hold (``ConsumerGroupChange.settle``).  A failed write changes nothing."""
        error = self._write(change.records)
        if error is ErrorCode.NONE:
            change.settle(self._consumer_groups.get(change.group_id))
        return error

    def after_replay(self) -> None:
        """After a load: the groups' topology and assignor, and their members' sessions."""
        for group in self._consumer_groups.values():
            group.topology = self.topology(group.members)
            group.assignor = preferred_assignor(group.members)
            for member in group.members.values():
                self.arm_session(group.group_id, member)

    def remove_member(self, group: ConsumerGroupChange, member_id: str) -> None:
        """A member leaves (or is removed): its records' and its target's tombstones and a new
        group epoch, whose target assignment the next heartbeat computes (as Kafka; the last
        member's leave writes the empty group's target, so the next join assigns at once)."""
        group.remove_member(member_id)
        group.drop_target(member_id)
        for kind in MEMBER_TIMERS:
            self._timers.cancel((kind, group.group_id, member_id))
        self.regexes.drop_unused(group)
        group.topology = self.topology(group.members)
        group.bump_epoch()
        if not group.members:
            group.new_target({}, 0)  # as Kafka: an empty group's target, at no known time

    def _consumer_leave(
        self, group_id: str, member_id: str, member_epoch: int, instance_id: str | None
    ) -> tuple[ConsumerHeartbeatResult, ConsumerGroupChange | None]:
        """A leave (epoch -1), or a static member's temporary leave (-2): it stays in the
        group with epoch -2 and keeps its assignment until its session times out or its
        instance id joins again."""
        live = self._consumer_groups.get(group_id)
        if (fenced := _static_fence(live, member_id, instance_id)) is not None:
            return fenced, None
        if live is None or member_id not in live.members:
            return ConsumerHeartbeatResult(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of the group."
            ), None
        group = ConsumerGroupChange(group_id, live)
        if member_epoch == STATIC_LEAVE_EPOCH:
            log.info("consumer group %s: static member %s left for a while", group_id, member_id)
            member = replace(live.members[member_id], epoch=STATIC_LEAVE_EPOCH, revoking={})
            group.put_member(member)
            self._timers.cancel(("revoke", group_id, member_id))
            self.arm_session(group_id, member)
        else:
            log.info("consumer group %s: member %s leaves", group_id, member_id)
            self.remove_member(group, member_id)
        return ConsumerHeartbeatResult(ErrorCode.NONE, None, member_id, member_epoch), group

    def consumer_groups(self) -> Iterable[ConsumerProtocolGroup]:
        return self._consumer_groups.values()

    def describe_consumer_protocol(
        self, group_ids: Iterable[str]
    ) -> list[tuple[str, ErrorCode, ConsumerProtocolGroup | None]]:
        """ConsumerGroupDescribe: each group, or GROUP_ID_NOT_FOUND."""
        available = self.availability()
        out: list[tuple[str, ErrorCode, ConsumerProtocolGroup | None]] = []
        for group_id in group_ids:
            group = self._consumer_groups.get(group_id)
            if available is not ErrorCode.NONE:
                out.append((group_id, available, None))
            elif group is None:
                out.append((group_id, ErrorCode.GROUP_ID_NOT_FOUND, None))
            else:
                out.append((group_id, ErrorCode.NONE, group))
        return out

    def describe_as_classic(self, group_id: str) -> GroupDescription:
        """DescribeGroups on a KIP-848 group: its members with their subscription and
        assignment in the classic consumer-protocol encoding, as Kafka answers, so tools
        written for classic groups describe it too."""
        group = self._consumer_groups[group_id]
        return GroupDescription(
            group_id,
            ErrorCode.NONE,
            group.state,
            CONSUMER_GROUP_TYPE,
            group.assignor,
            tuple(
                MemberDescription(
                    m.member_id,
                    m.instance_id,
                    m.client_id,
                    m.client_host,
                    _classic_subscription(m.subscribed),
                    self._classic_assignment(m.assigned),
                )
                for m in group.members.values()
            ),
        )

    def _classic_assignment(self, assigned: Partitions) -> bytes:
        by_name: dict[str, list[int]] = {}
        for topic_id, partitions in assigned.items():
            info = self._topics.by_id(topic_id) if self._topics is not None else None
            if info is not None:
                by_name[info.name] = sorted(partitions)
        out = struct.pack(">hi", 0, len(by_name))
        for name, numbers in sorted(by_name.items()):
            out += _string(name) + struct.pack(f">i{len(numbers)}i", len(numbers), *numbers)
        return out + struct.pack(">i", -1)  # no user data

    def delete_consumer_group(self, group_id: str) -> ErrorCode:
        group = self._consumer_groups[group_id]
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        records: list[Record] = [
            (OffsetKey(group_id, tp.topic, tp.partition), None)
            for tp in sorted(self.offsets.of(group_id))
        ]
        records += [(k, None) for k in records_of(group)]
        error = self._write(records)  # replaying the tombstones removes the group
        if error is ErrorCode.NONE:
            log.info("consumer group %s deleted", group_id)
        return error

    def validate_consumer_commit(
        self,
        group: ConsumerProtocolGroup,
        member_id: str,
        epoch: int,
        partitions: Iterable[tuple[str, int]] = (),
        transactional: bool = False,
    ) -> ErrorCode:
        """OffsetCommit / TxnOffsetCommit fencing for a KIP-848 member (the request's epoch is
        the member's), as Kafka 4.4: the member's epoch commits anything; an earlier one
        (KIP-1251) commits a partition the member was assigned at that epoch or before and
        still holds (assigned or being revoked).  A later epoch, or an earlier one for any
        other partition, answers STALE_MEMBER_EPOCH -- ILLEGAL_GENERATION for a classic
        member and in TxnOffsetCommit (below v6, which cannot carry STALE_MEMBER_EPOCH)."""
        if epoch < 0 and not group.members:
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if epoch == member.epoch:
            return ErrorCode.NONE
        stale = (
            ErrorCode.ILLEGAL_GENERATION
            if member.classic is not None or transactional
            else ErrorCode.STALE_MEMBER_EPOCH
        )
        if epoch > member.epoch:
            return stale
        for topic, partition in partitions:
            info = self._topics.get(topic) if self._topics is not None else None
            since = (
                member.assignment_epochs.get((info.topic_id, partition))
                if info is not None
                else None
            )
            if since is None or epoch < since:
                return stale
        return ErrorCode.NONE
