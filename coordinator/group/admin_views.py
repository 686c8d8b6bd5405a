"""DescribeGroups, ListGroups and DeleteGroups over both kinds of consumer groups (a part
composed into ``ConsumerGroupCoordinator``): classic groups answer from their state, KIP-848
groups through the consumer-protocol part (``describe_as_classic``,
``delete_consumer_group``, handed in by the coordinator)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from coordinator.group.classic import ClassicState
from coordinator.group.consumer_protocol import CONSUMER_GROUP_TYPE
from coordinator.group.consumer_records import Record
from coordinator.group.records import GroupKey, OffsetKey
from coordinator.group.results import (
    GROUP_TYPE,
    GroupDescription,
    GroupListing,
    MemberDescription,
)
from coordinator.group.shard import GroupRuntime
from coordinator.shard_runtime import answer_each
from coordinator.share.group_model import ListFilter
from txn.errors import ErrorCode

log = logging.getLogger("sharetxn.groups")

_S = ClassicState


class GroupAdminViews:
    """Describe, list and delete, over the shard's groups; changes are written with
    ``write`` (the coordinator's: replayed into the shard once durable)."""

    def __init__(
        self,
        runtime: GroupRuntime,
        write: Callable[[list[Record]], ErrorCode],
        describe_as_classic: Callable[[str], GroupDescription],
        delete_consumer_group: Callable[[str], ErrorCode],
    ) -> None:
        self._runtime = runtime
        self._write = write
        self.describe_as_classic = describe_as_classic
        self.delete_consumer_group = delete_consumer_group
        membership = runtime.shard.membership
        self._groups = membership.groups
        self._consumer_groups = membership.consumer_groups

    def availability(self) -> ErrorCode:
        return self._runtime.availability()

    def describe(self, group_ids: Iterable[str]) -> list[GroupDescription]:
        return answer_each(
            group_ids,
            self.availability(),
            lambda group_id, error: GroupDescription(group_id, error, "", "", ""),
            self._describe_group,
        )

    def _describe_group(self, group_id: str) -> GroupDescription:
        group = self._groups.get(group_id)
        if group is None and group_id in self._consumer_groups:
            return self.describe_as_classic(group_id)
        if group is None:
            return GroupDescription(group_id, ErrorCode.NONE, _S.DEAD.value, "", "")
        stable = group.state is _S.STABLE
        return GroupDescription(
            group_id,
            ErrorCode.NONE,
            group.state.value,
            group.protocol_type or "",
            (group.protocol or "") if stable else "",
            tuple(
                MemberDescription(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.metadata(group.protocol) if stable else b"",
                    m.assignment if stable else b"",
                )
                for m in group.members.values()
            ),
        )

    def list_groups(
        self, states: Iterable[str] = (), types: Iterable[str] = ()
    ) -> list[GroupListing]:
        if self.availability() is not ErrorCode.NONE:
            return []
        wanted = ListFilter.of(states, types)
        listings = []
        if wanted.wants_type(GROUP_TYPE):
            listings += [
                GroupListing(g.group_id, g.state.value, g.protocol_type or "")
                for g in self._groups.values()
            ]
        if wanted.wants_type(CONSUMER_GROUP_TYPE):
            listings += [
                GroupListing(g.group_id, g.state, CONSUMER_GROUP_TYPE, CONSUMER_GROUP_TYPE)
                for g in self._consumer_groups.values()
            ]
        return sorted(
            (g for g in listings if wanted.wants_state(g.state)), key=lambda g: g.group_id
        )

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, ErrorCode]:
        out: dict[str, ErrorCode] = {}
        for group_id in group_ids:
            group = self._groups.get(group_id)
            if (error := self.availability()) is not ErrorCode.NONE:
                out[group_id] = error
            elif group is None and group_id in self._consumer_groups:
                out[group_id] = self.delete_consumer_group(group_id)
            elif group is None:
                out[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif group.state is not _S.EMPTY or group.members or group.pending_members:
                out[group_id] = ErrorCode.NON_EMPTY_GROUP
            else:
                records: list[Record] = [
                    (OffsetKey(group_id, tp.topic, tp.partition), None)
                    for tp in sorted(self._runtime.shard.offsets.store.of(group_id))
                ]
                records.append((GroupKey(group_id), None))
                out[group_id] = self._write(records)
                if out[group_id] is ErrorCode.NONE:
                    log.info("group %s deleted", group_id)
        return out
