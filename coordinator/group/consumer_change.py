"""One operation's change to a KIP-848 group, as the records that make it.

An operation (a heartbeat, a leave, a classic member's join in a mixed group, a timer) never
changes the group: it computes the group's next values beside it -- new maps, and a new
member object for every member it changes (``dataclasses.replace``) -- and emits, at each
change, the record that says so, in Kafka's order of emission (a member's subscription, the
group epoch, the target assignment, the member's current assignment).  A record whose value
is the group's current one is not written (Kafka writes a member's records only when the
member changed, the target's only for the members whose target changed).  The runtime
writes the records and replays them into the group: the only change to its log-backed
state.  What the records do not hold -- the members' owned and sent partitions, the member
order, the subscribed topology and the assignor -- the group takes after the write
(``settle``).
"""

from __future__ import annotations

from coordinator.group.consumer_model import (
    INITIAL_GROUP_EPOCH,
    ConsumerMember,
    ConsumerProtocolGroup,
    Partitions,
    held_epochs,
)
from coordinator.group.consumer_records import (
    CURRENT_ASSIGNMENT,
    GROUP_METADATA,
    MEMBER_METADATA,
    REGULAR_EXPRESSION,
    TARGET_MEMBER,
    TARGET_METADATA,
    ConsumerKey,
    ConsumerValue,
    CurrentAssignmentValue,
    GroupEpochValue,
    MemberMetadataValue,
    Record,
    RegexValue,
    TargetMemberValue,
)

__all__ = [
    "ConsumerGroupChange",
    "assignment_value",
    "metadata_value",
    "records_of",
]


def metadata_value(m: ConsumerMember) -> MemberMetadataValue:
    """A member's ConsumerGroupMemberMetadata value."""
    return MemberMetadataValue(
        m.instance_id,
        m.rack_id,
        m.client_id,
        m.client_host,
        tuple(sorted(m.subscribed)),
        m.regex,
        m.rebalance_timeout_ms,
        m.server_assignor,
        m.classic,
    )


def assignment_value(m: ConsumerMember) -> CurrentAssignmentValue:
    """A member's ConsumerGroupCurrentMemberAssignment value, with each partition's
    assignment epoch (KIP-1251) as Kafka 4.4 writes it: the epoch it already had, or the
    member epoch it comes with."""
    epochs = held_epochs(m)
    return CurrentAssignmentValue(
        m.epoch,
        m.previous_epoch,
        1 if m.revoking else 0,
        dict(m.assigned),
        dict(m.revoking),
        epochs or None,
    )


def records_of(group: ConsumerProtocolGroup) -> dict[ConsumerKey, ConsumerValue]:
    """The records that describe ``group`` (Kafka's KIP-848 schemas), by key: what a new
    group is written as, and what a deleted one's tombstones cover."""
    gid = group.group_id
    out: dict[ConsumerKey, ConsumerValue] = {
        ConsumerKey(GROUP_METADATA, gid): GroupEpochValue(group.epoch),
        ConsumerKey(TARGET_METADATA, gid): GroupEpochValue(
            group.assignment_epoch, group.assignment_timestamp
        ),
    }
    for m in group.members.values():
        out[ConsumerKey(MEMBER_METADATA, gid, m.member_id)] = metadata_value(m)
        out[ConsumerKey(CURRENT_ASSIGNMENT, gid, m.member_id)] = assignment_value(m)
    for member_id, partitions in group.target.items():
        out[ConsumerKey(TARGET_MEMBER, gid, member_id)] = TargetMemberValue(dict(partitions))
    for regex, resolution in group.resolved.items():
        out[ConsumerKey(REGULAR_EXPRESSION, gid, regex)] = resolution
    return out


class ConsumerGroupChange:
    """The next values of a KIP-848 group (``group``, None for a new one) and the records
    emitted for them so far; ``group`` itself is never changed."""

    def __init__(self, group_id: str, group: ConsumerProtocolGroup | None) -> None:
        self.group_id = group_id
        self.group = group
        self.epoch = group.epoch if group is not None else INITIAL_GROUP_EPOCH
        self.assignment_epoch = group.assignment_epoch if group is not None else INITIAL_GROUP_EPOCH
        self.assignment_timestamp = group.assignment_timestamp if group is not None else 0
        # New maps; their members are the group's own until changed (then new objects).
        self.members: dict[str, ConsumerMember] = dict(group.members) if group else {}
        self.target: dict[str, Partitions] = dict(group.target) if group else {}
        self.assignor = group.assignor if group is not None else "uniform"
        self.topology = group.topology if group is not None else ()
        self.resolved: dict[str, RegexValue] = dict(group.resolved) if group else {}
        self._records: dict[ConsumerKey, ConsumerValue | None] = {}

    @property
    def records(self) -> list[Record]:
        return list(self._records.items())

    def _emit(self, key: ConsumerKey, value: ConsumerValue | None, now: object) -> None:
        """The record of ``key``, unless ``value`` is the group's current value ``now``
        (then an earlier record of this change for ``key`` is withdrawn too)."""
        if value == now:
            self._records.pop(key, None)
        else:
            self._records[key] = value

    def _live(self, member_id: str) -> ConsumerMember | None:
        return self.group.members.get(member_id) if self.group is not None else None

    # -- members --------------------------------------------------------------------------

    def put_member(self, member: ConsumerMember) -> None:
        """``member`` (a new object) is the member of its id now: its subscription and its
        current assignment records, where they changed."""
        self.members[member.member_id] = member
        live = self._live(member.member_id)
        gid, mid = self.group_id, member.member_id
        self._emit(
            ConsumerKey(MEMBER_METADATA, gid, mid),
            metadata_value(member),
            None if live is None else metadata_value(live),
        )
        self._emit(
            ConsumerKey(CURRENT_ASSIGNMENT, gid, mid),
            assignment_value(member),
            None if live is None else assignment_value(live),
        )

    def remove_member(self, member_id: str) -> ConsumerMember | None:
        """The member leaves: the tombstones of its subscription and current assignment
        (its target goes with the next target assignment)."""
        member = self.members.pop(member_id, None)
        live = self._live(member_id)
        gid = self.group_id
        self._emit(
            ConsumerKey(MEMBER_METADATA, gid, member_id),
            None,
            None if live is None else metadata_value(live),
        )
        self._emit(
            ConsumerKey(CURRENT_ASSIGNMENT, gid, member_id),
            None,
            None if live is None else assignment_value(live),
        )
        return member

    def put_regex(self, regex: str, resolution: RegexValue | None) -> None:
        """A regex's resolution (None: its tombstone, no member subscribes to it any more)."""
        if resolution is None:
            self.resolved.pop(regex, None)
        else:
            self.resolved[regex] = resolution
        live = self.group.resolved.get(regex) if self.group is not None else None
        self._emit(ConsumerKey(REGULAR_EXPRESSION, self.group_id, regex), resolution, live)

    # -- the target assignment ------------------------------------------------------------

    def _emit_target_member(self, member_id: str, partitions: Partitions | None) -> None:
        live = self.group.target.get(member_id) if self.group is not None else None
        self._emit(
            ConsumerKey(TARGET_MEMBER, self.group_id, member_id),
            None if partitions is None else TargetMemberValue(dict(partitions)),
            None if live is None else TargetMemberValue(dict(live)),
        )

    def move_target(self, old_id: str, new_id: str) -> None:
        """A member id took over another's target (a static member's new id)."""
        if old_id in self.target:
            self.target[new_id] = self.target.pop(old_id)
            self._emit_target_member(new_id, self.target[new_id])
            self._emit_target_member(old_id, None)

    def bump_epoch(self) -> None:
        """A new group epoch: its record (the target assignment follows when it may be
        computed, ``new_target``)."""
        self.epoch += 1
        live = self.group
        self._emit(
            ConsumerKey(GROUP_METADATA, self.group_id),
            GroupEpochValue(self.epoch),
            None if live is None else GroupEpochValue(live.epoch),
        )

    @property
    def assignment_pending(self) -> bool:
        """Whether the group epoch is ahead of the target assignment's."""
        return self.epoch > self.assignment_epoch

    def drop_target(self, member_id: str) -> None:
        """A member left: the tombstone of its target (the others' wait for the next target
        assignment)."""
        if self.target.pop(member_id, None) is not None:
            self._emit_target_member(member_id, None)

    def new_target(self, target: dict[str, Partitions], now_ms: int) -> None:
        """The target assignment of the group epoch, computed at ``now_ms``: the target of each
        member whose target changed (a tombstone for a member that has none now), and the
        target's epoch and time."""
        old = self.target
        self.target = target
        self.assignment_epoch = self.epoch
        self.assignment_timestamp = now_ms
        gid = self.group_id
        live = self.group
        for member_id, partitions in target.items():
            self._emit_target_member(member_id, partitions)
        for member_id in old:
            if member_id not in target:
                self._emit_target_member(member_id, None)
        self._emit(
            ConsumerKey(TARGET_METADATA, gid),
            GroupEpochValue(self.assignment_epoch, now_ms),
            None
            if live is None
            else GroupEpochValue(live.assignment_epoch, live.assignment_timestamp),
        )

    # -- after the write ------------------------------------------------------------------

    def settle(self, group: ConsumerProtocolGroup | None) -> None:
        """The records were written and replayed into ``group`` (None: they deleted it):
        it takes what they do not hold -- the members' owned and sent partitions, the member
        order, the topology and the assignor."""
        if group is None:
            return
        group.topology, group.assignor = self.topology, self.assignor
        members = {}
        for member_id, member in self.members.items():
            live = group.members.get(member_id)
            if live is not None:
                live.owned, live.sent = member.owned, member.sent
                members[member_id] = live
        group.members = members
