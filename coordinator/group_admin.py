"""The group RPCs that span the group types, and the share groups' admin APIs.

DescribeGroups, ListGroups and DeleteGroups ask the consumer-group coordinator (classic and
KIP-848 groups) and the share coordinator alike, as Kafka's group coordinator answers for
every group type; Describe/Alter/DeleteShareGroupOffsets (KIP-932) read and reset a share
group's start offsets through the share coordinator's persister, IncrementalAlterConfigs sets
a group's configs, and DescribeSharePendingAcks (sharetxn's admin API for KIP-1289) reports the
acknowledgements staged in open transactions.  Each method takes and returns the core's typed
values (``BrokerCore.group_admin``); ``coordinator/protocol`` translates them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from coordinator.group.coordinator import ConsumerGroupCoordinator
from coordinator.group.results import GroupDescription, GroupListing
from coordinator.partition import Partition
from coordinator.share.group_config import group_alter_refusal
from coordinator.share.manager import ShareManager
from coordinator.share.persister import ShareStateKey
from coordinator.topics import TopicRegistry
from txn.errors import ErrorCode
from txn.ids import TopicPartition
from txn.topic_config_defs import ConfigOperation

#: The topic id of an answer about a topic this broker does not have.
NO_TOPIC_ID = uuid.UUID(int=0)
SHARE_PROTOCOL_TYPE = "share"


@dataclass(frozen=True, slots=True)
class ShareOffset:
    """A partition's share-group start offset (DescribeShareGroupOffsets), or the outcome of
    setting it (AlterShareGroupOffsets: ``error`` alone)."""

    partition: int
    error: ErrorCode
    start_offset: int = -1
    leader_epoch: int = -1
    lag: int = -1  # -1: not known


@dataclass(frozen=True, slots=True)
class ShareOffsetsTopic:
    name: str
    topic_id: uuid.UUID  # NO_TOPIC_ID for a topic this broker does not have
    partitions: tuple[ShareOffset, ...]


@dataclass(frozen=True, slots=True)
class DeletedShareOffsets:
    name: str
    topic_id: uuid.UUID  # NO_TOPIC_ID for a topic this broker does not have
    error: ErrorCode


@dataclass(frozen=True, slots=True)
class ShareOffsetsChange:
    """AlterShareGroupOffsets' or DeleteShareGroupOffsets' outcome: a group-level error (and
    no topics), or each topic's."""

    error: ErrorCode
    message: str | None = None
    altered: tuple[ShareOffsetsTopic, ...] = ()
    deleted: tuple[DeletedShareOffsets, ...] = ()


@dataclass(frozen=True, slots=True)
class PendingShareAcks:
    """The acknowledgements one producer's open transaction staged for a share partition."""

    group_id: str
    topic_id: uuid.UUID
    partition: int
    state_partition: int  # the __share_group_state partition that stages them
    records: int
    first_offset: int  # -1 (and last_offset -1) when no batch is staged
    last_offset: int


@dataclass(frozen=True, slots=True)
class ProducerPendingAcks:
    producer_id: int
    producer_epoch: int  # -1 when no batch is staged
    pending: tuple[PendingShareAcks, ...]


class GroupAdmin:
    """The administrative group RPCs, over the consumer-group and share coordinators."""

    def __init__(
        self,
        topics: TopicRegistry,
        partitions: Mapping[TopicPartition, Partition],
        groups: ConsumerGroupCoordinator,
        share: ShareManager,
    ) -> None:
        self._topics = topics
        self._partitions = partitions
        self._groups = groups
        self._share = share

    # -- every group type ---------------------------------------------------------------------

    def describe_groups(self, group_ids: Sequence[str]) -> list[GroupDescription]:
        """DescribeGroups: a share group is described as Kafka does, by its type's state."""
        out = []
        for described in self._groups.describe(list(group_ids)):
            group_id = described.group_id
            view = self._share.groups.group(group_id) if described.state == "Dead" else None
            if view is None:
                out.append(described)
                continue
            share_type = SHARE_PROTOCOL_TYPE
            out.append(GroupDescription(group_id, ErrorCode.NONE, view.state, share_type, ""))
        return out

    def list_groups(self, states: Sequence[str], types: Sequence[str]) -> list[GroupListing]:
        """ListGroups: the groups of every type in the filters (empty: all), by id."""
        listings = [
            GroupListing(g.group_id, g.group_state, SHARE_PROTOCOL_TYPE, g.group_type)
            for g in self._share.groups.list_groups(list(states), list(types))
        ]
        listings += self._groups.list_groups(list(states), list(types))
        listings.sort(key=lambda g: str(g.group_id))
        return listings

    def delete_groups(self, group_ids: Sequence[str]) -> dict[str, ErrorCode]:
        """DeleteGroups, in request order; a deleted share group's state is then deleted."""
        consumer = [n for n in group_ids if self._groups.has_group(n)]
        results = self._share.groups.delete_groups([n for n in group_ids if n not in consumer])
        results.update(self._groups.delete_groups(consumer))
        results = {n: results[n] for n in group_ids}
        for group_id, error in results.items():
            if error is ErrorCode.NONE:
                self._share.do_state_work(group_id)
        return results

    # -- share-group offsets ------------------------------------------------------------------

    def describe_share_offsets(
        self, group_id: str, topics: Iterable[tuple[str, Sequence[int]]] | None
    ) -> list[ShareOffsetsTopic]:
        """DescribeShareGroupOffsets of one group: the (topic, partitions) asked for, or (None)
        every partition the group has initialized; by topic name."""
        if topics is None:
            wanted: list[tuple[str, list[int]]] = []
            for topic_id, parts in self._share.groups.initialized_partitions(group_id).items():
                info = self._topics.by_id(topic_id)
                if info is not None:
                    wanted.append((info.name, sorted(parts)))
        else:
            wanted = [(name, list(parts)) for name, parts in topics]
        out = []
        for name, wanted_parts in sorted(wanted):
            info = self._topics.get(name)
            rows = []
            for p in wanted_parts:
                if info is None or p >= info.num_partitions:
                    rows.append(ShareOffset(p, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                    continue
                summary = self._share.persister.read_state_summary(
                    ShareStateKey(group_id, info.topic_id, p), 0
                )
                ok = summary.error is ErrorCode.NONE
                start = summary.start_offset if ok else -1
                complete = summary.delivery_complete_count if ok else -1
                data = self._partitions.get(TopicPartition(name, p))
                # Kafka's lag (KIP-1226): end offset - persisted start offset - the records at
                # or above it whose delivery is complete; -1 while either is unknown.
                lag = -1
                if data is not None and start >= 0 and complete >= 0:
                    lag = data.high_watermark - start - complete
                rows.append(ShareOffset(p, ErrorCode.NONE, start, leader_epoch=0, lag=lag))
            topic_id = info.topic_id if info else NO_TOPIC_ID
            out.append(ShareOffsetsTopic(name, topic_id, tuple(rows)))
        return out

    def _refused_non_empty(self, group_id: str) -> ShareOffsetsChange | None:
        """NON_EMPTY_GROUP while the share group has members: offsets change only when empty."""
        if self._share.groups.is_empty(group_id):
            return None
        message = f"share group {group_id} is not empty"
        return ShareOffsetsChange(ErrorCode.NON_EMPTY_GROUP, message)

    def alter_share_offsets(
        self, group_id: str, topics: Iterable[tuple[str, Sequence[tuple[int, int]]]]
    ) -> ShareOffsetsChange:
        """AlterShareGroupOffsets: each (topic, [(partition, start offset)]) of an empty share
        group (an unknown id creates one, as in Kafka) starts again at that offset."""
        if (refused := self._refused_non_empty(group_id)) is not None:
            return refused
        groups = self._share.groups
        if groups.group(group_id) is None and groups.is_foreign_group(group_id):
            # An unknown id creates a share group (as in Kafka); a consumer group's id cannot.
            message = f"Group {group_id} is not a share group."
            return ShareOffsetsChange(ErrorCode.GROUP_ID_NOT_FOUND, message)
        view = groups.group(group_id)
        state_epoch = (view.group_epoch if view is not None else 0) + 1
        persister = self._share.persister
        altered = []
        for name, starts in topics:
            info = self._topics.get(name)
            rows = []
            done: list[int] = []
            for index, start_offset in starts:
                if info is None or index >= info.num_partitions:
                    rows.append(ShareOffset(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                    continue
                key = ShareStateKey(group_id, info.topic_id, index)
                current = persister.state(key)
                epoch = max(state_epoch, (current.state_epoch + 1) if current is not None else 0)
                error = persister.initialize_state(key, epoch, start_offset)
                if error is ErrorCode.NONE:
                    self._share.share_partitions.pop((group_id, info.topic_id, index), None)
                    done.append(index)
                rows.append(ShareOffset(index, error))
            if info is not None and done:
                groups.mark_offsets_reset(group_id, info.topic_id, done)
            topic_id = info.topic_id if info else NO_TOPIC_ID
            altered.append(ShareOffsetsTopic(name, topic_id, tuple(rows)))
        return ShareOffsetsChange(ErrorCode.NONE, altered=tuple(altered))

    def delete_share_offsets(self, group_id: str, topics: Iterable[str]) -> ShareOffsetsChange:
        """DeleteShareGroupOffsets: the named topics' share state of an empty share group."""
        if (refused := self._refused_non_empty(group_id)) is not None:
            return refused
        if self._share.groups.group(group_id) is None:  # as Kafka: nothing to delete from
            message = f"Group {group_id} not found."
            return ShareOffsetsChange(ErrorCode.GROUP_ID_NOT_FOUND, message)
        deleted = []
        for name in topics:
            info = self._topics.get(name)
            if info is None:
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                deleted.append(DeletedShareOffsets(name, NO_TOPIC_ID, error))
                continue
            self._share.groups.mark_offsets_deleted(group_id, info.topic_id)
            self._share.do_state_work(group_id)
            deleted.append(DeletedShareOffsets(name, info.topic_id, ErrorCode.NONE))
        return ShareOffsetsChange(ErrorCode.NONE, deleted=tuple(deleted))

    # -- group configs ------------------------------------------------------------------------

    def incremental_alter_group_configs(
        self,
        group_id: str,
        ops: Sequence[tuple[str, int, str | None]],
        *,
        validate_only: bool,
    ) -> tuple[ErrorCode, str | None]:
        """IncrementalAlterConfigs of a group: (name, operation, value) SET or DELETE, refused
        as Kafka refuses them first (``group_alter_refusal``: the default group, a null value,
        APPEND and SUBTRACT, as no group config is a list)."""
        if (refused := group_alter_refusal(group_id, list(ops))) is not None:
            return refused
        to_set = {name: value or "" for name, op, value in ops if op == ConfigOperation.SET}
        to_delete = [name for name, op, _value in ops if op == ConfigOperation.DELETE]
        valid = (ConfigOperation.SET, ConfigOperation.DELETE)
        unsupported = [name for name, op, _value in ops if op not in valid]
        if unsupported:
            return ErrorCode.INVALID_REQUEST, f"APPEND/SUBTRACT are not valid for {unsupported}"
        return self._share.groups.alter_group_configs(group_id, to_set, to_delete, validate_only)

    # -- KIP-1289 -----------------------------------------------------------------------------

    def share_pending_acks(
        self, producer_ids: Iterable[int]
    ) -> tuple[ErrorCode, list[ProducerPendingAcks]]:
        """DescribeSharePendingAcks: per producer id (all when ``producer_ids`` is empty) with
        an open transaction, each share partition with staged acknowledgements, their count
        and offset range, read from the share coordinator's staged transactional updates."""
        coordinator = self._share.persister
        if (error := coordinator.availability()) is not ErrorCode.NONE:
            return error, []
        wanted = set(producer_ids)
        producers = []
        for producer_id, places in sorted(coordinator.open_transactions().items()):
            if wanted and producer_id not in wanted:
                continue
            epoch, entries = -1, list[PendingShareAcks]()
            for index, key in sorted(places):
                count, first, last = 0, -1, -1
                for pid, pending_epoch, batches in coordinator.pending_for(key):
                    if pid != producer_id:
                        continue
                    epoch = max(epoch, pending_epoch)
                    for b in batches:
                        count += b.last_offset - b.first_offset + 1
                        first = b.first_offset if first < 0 else min(first, b.first_offset)
                        last = max(last, b.last_offset)
                entries.append(
                    PendingShareAcks(
                        key.group_id, key.topic_id, key.partition, index, count, first, last
                    )
                )
            producers.append(ProducerPendingAcks(producer_id, epoch, tuple(entries)))
        return ErrorCode.NONE, producers
