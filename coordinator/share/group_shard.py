"""The share-group shard: every share group's log-backed state and its replay.

The shard holds the groups (epoch, subscription metadata, members, target assignment), each
group's share-partition state (initializing, initialized, deleting) and each group's config
overrides -- nothing else: no log, no timers, no topics.  ``ShareGroupCoordinator`` computes
the records of a change from this state without touching it; the ``CoordinatorRuntime`` that
owns the shard encodes them (``GroupRecordCodec``), appends and flushes them, and only then
calls ``replay``: the one place the state changes, for live writes and on load alike.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from coordinator.shard_runtime import CoordinatorRuntime, Record
from coordinator.share.group_config import GroupConfigDefs, ShareGroupConfig
from coordinator.share.group_model import (
    NO_ASSIGNMENT,
    GroupMember,
    ShareGroup,
    StatePartitionMetadata,
)
from coordinator.share.group_records import (
    CurrentAssignmentRecord,
    GroupConfigRecord,
    GroupEpochRecord,
    GroupRecord,
    MemberRecord,
    PartitionStateRecord,
    TargetAssignmentRecord,
    Tombstone,
    decode,
    encode,
)
from txn.clock import Clock
from txn.config import BrokerConfig


class GroupRecordCodec:
    """``GroupRecord`` <-> log records (``group_records``); errors are ValueErrors."""

    def encode(self, record: GroupRecord) -> Record:
        return encode(record)

    def decode(self, key: bytes | None, value: bytes | None) -> GroupRecord:
        return decode(key, value)


_CODEC = GroupRecordCodec()


class ShareGroupShard:
    """Every share group of the broker, as its group-coordinator log makes it."""

    def __init__(self, clock: Clock, config: BrokerConfig) -> None:
        self._clock = clock
        self._config_defs = GroupConfigDefs(config)
        self.groups: dict[str, ShareGroup] = {}
        self.partition_states: dict[str, StatePartitionMetadata] = {}
        self.configs: dict[str, dict[str, str]] = {}
        # group_config() of each group with overrides, unchanged since, and (key None) of the
        # groups without: every heartbeat and fetch asks, and the broker's defaults are fixed.
        # A cache of ``configs``: replay drops a group's entry when its overrides change.
        self._effective_configs: dict[str | None, ShareGroupConfig] = {}

    @property
    def codec(self) -> GroupRecordCodec:
        return _CODEC

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def config_defs(self) -> GroupConfigDefs:
        return self._config_defs

    def reset(self) -> None:
        """Forget everything (before a load)."""
        self.groups.clear()
        self.partition_states.clear()
        self.configs.clear()
        self._effective_configs.clear()

    def group_config(self, group_id: str) -> ShareGroupConfig:
        """The effective settings of a group (its overrides over the broker's defaults)."""
        key = group_id if group_id in self.configs else None
        config = self._effective_configs.get(key)
        if config is None:
            config = self._config_defs.effective(self.configs.get(group_id, {}))
            self._effective_configs[key] = config
        return config

    # --- replay: the only mutation ------------------------------------------------------------

    def replay(
        self,
        partition: int,
        offset: int,
        producer_id: int,
        producer_epoch: int,
        record: GroupRecord,
    ) -> None:
        """Make one record's state current (once durable, and on load)."""
        match record:
            case GroupEpochRecord():
                group = self._group_for_replay(record.group_id)
                group.epoch = record.epoch
                group.subscription_metadata = dict(record.subscription_metadata)
            case MemberRecord():
                self._update_member(
                    record.group_id,
                    record.member_id,
                    rack_id=record.rack_id,
                    client_id=record.client_id,
                    client_host=record.client_host,
                    subscribed=record.subscribed_topic_names,
                )
            case CurrentAssignmentRecord():
                self._update_member(
                    record.group_id,
                    record.member_id,
                    member_epoch=record.member_epoch,
                    previous_member_epoch=record.previous_member_epoch,
                    assigned=record.assigned,
                )
            case TargetAssignmentRecord():
                group = self._group_for_replay(record.group_id)
                group.assignment_epoch = record.assignment_epoch
                group.assignment_timestamp_ms = record.timestamp_ms
                group.target = dict(record.assignment)
            case PartitionStateRecord():
                self.partition_states[record.group_id] = StatePartitionMetadata(
                    dict(record.initializing),
                    dict(record.initialized),
                    dict(record.deleting),
                    dict(record.topic_names),
                )
            case GroupConfigRecord():
                self.configs[record.group_id] = dict(record.configs)
                self._effective_configs.pop(record.group_id, None)
            case Tombstone():
                self._replay_tombstone(record)

    def replay_marker(
        self, partition: int, producer_id: int, producer_epoch: int, commit: bool
    ) -> None:
        """The share-group log has no transactions: nothing to do."""

    def _replay_tombstone(self, record: Tombstone) -> None:
        group = self.groups.get(record.group_id)
        if record.kind == "group":
            self.groups.pop(record.group_id, None)
        elif record.kind == "member" and group is not None and record.member_id is not None:
            group.members.pop(record.member_id, None)
        elif record.kind == "current" and group is not None and record.member_id is not None:
            member = group.members.get(record.member_id)
            if member is not None:
                group.members[record.member_id] = dataclasses.replace(
                    member, member_epoch=0, previous_member_epoch=0, assigned=NO_ASSIGNMENT
                )
        elif record.kind == "target" and group is not None:
            group.target = {}
        elif record.kind == "partitions":
            self.partition_states.pop(record.group_id, None)
        elif record.kind == "config":
            self.configs.pop(record.group_id, None)
            self._effective_configs.pop(record.group_id, None)

    def _update_member(self, group_id: str, member_id: str, **changes: Any) -> None:
        """A record's fields set on the member (created when the record is its first)."""
        group = self._group_for_replay(group_id)
        member = group.members.get(member_id, GroupMember(member_id))
        group.members[member_id] = dataclasses.replace(member, **changes)

    def _group_for_replay(self, group_id: str) -> ShareGroup:
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = ShareGroup(group_id)
        return group


ShareGroupRuntime = CoordinatorRuntime[ShareGroupShard]
"""The runtime owning a ``ShareGroupShard``; the composition root (``coordinator.assembly``)
builds it."""
