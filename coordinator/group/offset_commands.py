"""Offset commands of the consumer-group coordinator: commit, fetch, delete, transactional
offsets and their markers, and KIP-211 retention.

A part composed into ``ConsumerGroupCoordinator`` (which answers the requests through it):
it reads the shard's offsets and groups and writes records through the coordinator
(``write``); replaying them (``coordinator.group.shard``) changes the offsets, live and on
load.  Fencing a committer against its group's membership is the coordinator's
(``fence``), and so is keeping a committing member's session alive (``touch``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from coordinator.group.classic import ClassicState
from coordinator.group.consumer_records import Record
from coordinator.group.offsets import OffsetStore
from coordinator.group.records import GroupKey, OffsetKey, OffsetValue
from coordinator.group.results import FetchedOffset
from coordinator.group.shard import GroupRuntime
from coordinator.group.timers import Timers
from coordinator.shard_runtime import ControlMarker, CoordinatorResult
from txn.clock import Clock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicPartition

_S = ClassicState
log = logging.getLogger("sharetxn.groups")
OffsetMap = dict[TopicPartition, tuple[int, int, str | None]]


@dataclass(frozen=True, slots=True)
class Committer:
    """Who commits offsets (OffsetCommit, TxnOffsetCommit): the group and, for a member, its
    generation (or member epoch), member id and instance id; generation -1 and member id ""
    commit without a member (manual assignment, admin tools)."""

    group_id: str
    generation: int
    member_id: str
    group_instance_id: str | None


class Write(Protocol):
    """The coordinator's write: records as one batch, flushed (or deferred), then replayed."""

    def __call__(
        self,
        records: list[Record],
        *,
        producer: tuple[int, int] | None = None,
        defer: bool = False,
    ) -> ErrorCode: ...


@dataclass(frozen=True, slots=True)
class OffsetContext:
    """What the offset commands work with: the runtime (its shard and its log), and the
    coordinator's write, fencing and metering."""

    clock: Clock
    config: BrokerConfig
    runtime: GroupRuntime
    timers: Timers
    write: Write
    # a committer of partitions (transactionally or not) against its group's membership
    fence: Callable[[Committer, Iterable[TopicPartition], bool], ErrorCode]
    touch: Callable[[str, str], None]  # (group, member): a commit keeps the session alive
    is_share_group: Callable[[str], bool]
    emit: Callable[[str, str, int], None]


class OffsetCommands:
    """Offsets for ``ConsumerGroupCoordinator``."""

    def __init__(self, context: OffsetContext) -> None:
        self._c = context
        self._runtime = context.runtime
        self._config = context.config
        self._clock = context.clock
        self._write = context.write
        self._emit = context.emit

    @property
    def offsets(self) -> OffsetStore:
        return self._runtime.shard.offsets.store

    def availability(self) -> ErrorCode:
        return self._runtime.availability()

    # -- deferred durability: plain commits made durable off the request path -----------------

    def deferred_sync(self) -> Callable[[], None]:
        """A callable that makes everything appended so far durable; safe on another thread
        while appends go on (a log without that ability is flushed now instead)."""
        return self._runtime.deferred_sync(0)

    def durable(self, token: int) -> None:
        """``deferred_sync`` covering the commit ``token`` returned: replay it (and earlier)."""
        if not self._runtime.closed:
            self._runtime.replay_unflushed(token)

    def deferred_failed(self, token: int) -> None:
        """The sync failed: drop the commits up to ``token`` unreplayed (the clients get an
        error; whether the records survive a restart is unknown, as after a timeout)."""
        self._runtime.drop_unflushed(token)

    def commit_offsets_deferred(
        self, committer: Committer, offsets: OffsetMap
    ) -> tuple[dict[TopicPartition, ErrorCode], int | None]:
        """OffsetCommit appended but replayed only once ``durable(token)`` says it is durable.

        Returns the results and the token (None: nothing to wait for, e.g. an error).
        """
        return self._commit_offsets(committer, offsets, True)

    def _validate_commit(
        self, committer: Committer, offsets: OffsetMap, transactional: bool = False
    ) -> ErrorCode:
        if (error := self.availability()) is not ErrorCode.NONE:
            return error
        if not committer.group_id:
            return ErrorCode.INVALID_GROUP_ID
        if self._c.is_share_group(committer.group_id):
            return ErrorCode.GROUP_ID_NOT_FOUND
        return self._c.fence(committer, offsets, transactional)

    def commit_offsets(
        self, committer: Committer, offsets: OffsetMap
    ) -> dict[TopicPartition, ErrorCode]:
        """OffsetCommit: (offset, leader epoch, metadata) per partition."""
        results, _token = self._commit_offsets(committer, offsets, False)
        return results

    def _commit_offsets(
        self, committer: Committer, offsets: OffsetMap, defer: bool
    ) -> tuple[dict[TopicPartition, ErrorCode], int | None]:
        error = self._validate_commit(committer, offsets)
        if error is ErrorCode.NONE:
            error = self._check_metadata(offsets)
        if error is not ErrorCode.NONE or not offsets:
            return dict.fromkeys(offsets, error), None
        group_id = committer.group_id
        self._c.touch(group_id, committer.member_id)
        records = self._offset_records(group_id, offsets)
        end_before = self._runtime.partition_log(0).log_end_offset
        error = self._write(records, defer=defer)
        if error is ErrorCode.NONE and not defer:
            self._emit(group_id, "offset-commits", len(records))
        token = end_before if defer and error is ErrorCode.NONE else None
        return dict.fromkeys(offsets, error), token

    def _offset_records(self, group_id: str, offsets: OffsetMap) -> list[Record]:
        now = self._clock.now_ms()
        return [
            (OffsetKey(group_id, tp.topic, tp.partition), OffsetValue(off, epoch, meta or "", now))
            for tp, (off, epoch, meta) in offsets.items()
        ]

    def _check_metadata(self, offsets: OffsetMap) -> ErrorCode:
        limit = self._config.get_int("offset.metadata.max.bytes")
        for _off, _epoch, meta in offsets.values():
            if meta is not None and len(meta.encode()) > limit:
                return ErrorCode.OFFSET_METADATA_TOO_LARGE
        return ErrorCode.NONE

    def txn_commit_offsets(
        self,
        producer_id: int,
        producer_epoch: int,
        committer: Committer,
        offsets: OffsetMap,
    ) -> dict[TopicPartition, ErrorCode]:
        """TxnOffsetCommit: stage offsets under the producer until its transaction's marker.

        KIP-447: a member id and generation, when sent, are fenced like OffsetCommit's.
        """
        if (error := self.availability()) is not ErrorCode.NONE:
            return dict.fromkeys(offsets, error)
        group_id = committer.group_id
        if committer.member_id or committer.generation >= 0:
            error = self._validate_commit(committer, offsets, transactional=True)
        elif self._c.is_share_group(group_id):
            error = ErrorCode.GROUP_ID_NOT_FOUND
        if error is ErrorCode.NONE:
            error = self._check_metadata(offsets)
        known_epoch = self._runtime.shard.offsets.pending_epochs.get(producer_id)
        if error is ErrorCode.NONE and known_epoch is not None and producer_epoch < known_epoch:
            error = ErrorCode.PRODUCER_FENCED
        if error is not ErrorCode.NONE:
            return dict.fromkeys(offsets, error)
        records = self._offset_records(group_id, offsets)
        error = self._write(records, producer=(producer_id, producer_epoch))
        return dict.fromkeys(offsets, error)

    def complete_transaction(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int
    ) -> ErrorCode:
        """A WriteTxnMarkers entry for this partition: append the marker, then replay it."""
        if (error := self.availability()) is not ErrorCode.NONE:
            return error
        known = self._runtime.shard.offsets.pending_epochs.get(producer_id)
        if known is not None and producer_epoch < known:
            return ErrorCode.INVALID_PRODUCER_EPOCH  # an old epoch's marker: a newer txn is open
        if producer_id not in self.offsets.pending:
            return ErrorCode.NONE  # nothing staged (or already applied): idempotent
        marker = ControlMarker(commit, producer_id, producer_epoch, coordinator_epoch)
        return self._runtime.write(
            0, lambda _shard: CoordinatorResult((), ErrorCode.NONE, marker=marker)
        )

    def fetch_offsets(
        self, group_id: str, partitions: list[TopicPartition] | None, require_stable: bool
    ) -> tuple[ErrorCode, dict[TopicPartition, FetchedOffset]]:
        """OffsetFetch for one group (``partitions`` None: every committed partition)."""
        if (error := self.availability()) is not ErrorCode.NONE:
            return error, {}
        committed = self.offsets.of(group_id)
        wanted = sorted(committed) if partitions is None else partitions
        out: dict[TopicPartition, FetchedOffset] = {}
        for tp in wanted:
            if require_stable and self.offsets.has_pending(group_id, tp):
                out[tp] = FetchedOffset(-1, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT)
                continue
            entry = committed.get(tp)
            if entry is None:
                out[tp] = FetchedOffset(-1, -1, "", ErrorCode.NONE)
            else:
                out[tp] = FetchedOffset(
                    entry.offset, entry.leader_epoch, entry.metadata, ErrorCode.NONE
                )
        return ErrorCode.NONE, out

    def delete_offsets(
        self, group_id: str, partitions: list[TopicPartition]
    ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """OffsetDelete (KIP-496): the group's top-level error, and one per partition."""
        if (error := self.availability()) is not ErrorCode.NONE:
            return error, {}
        known, active, subscribed = self._subscriptions(group_id)
        if not known:
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        if active and subscribed is None:
            return ErrorCode.NON_EMPTY_GROUP, {}  # not the consumer protocol: no subscriptions
        results: dict[TopicPartition, ErrorCode] = {}
        committed = self.offsets.of(group_id)
        records: list[Record] = []
        for tp in partitions:
            if active and subscribed is not None and tp.topic in subscribed:
                results[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                continue
            results[tp] = ErrorCode.NONE
            if tp in committed:
                records.append((OffsetKey(group_id, tp.topic, tp.partition), None))
        if records:
            error = self._write(records)
            if error is not ErrorCode.NONE:
                return error, {}
            self._emit(group_id, "offset-deletions", len(records))
        return ErrorCode.NONE, results

    def on_topic_deleted(self, topic: str) -> int:
        """A deleted topic: tombstones for every group's offsets on its partitions, committed
        or pending in a transaction (Kafka's ``onPartitionsDeleted``); how many were written."""
        if self.availability() is not ErrorCode.NONE:
            return 0
        records: list[Record] = [
            (OffsetKey(group_id, tp.topic, tp.partition), None)
            for group_id, tp in self.offsets.on_topic(topic)
        ]
        if not records:
            return 0
        error = self._write(records)
        if error is not ErrorCode.NONE:
            log.warning("offsets of deleted topic %s not removed (%s)", topic, error.name)
            return 0
        return len(records)

    def _subscriptions(self, group_id: str) -> tuple[bool, bool, frozenset[str] | None]:
        """(the group exists, it has members, its subscribed topics or None when its members
        do not use the consumer protocol)."""
        membership = self._runtime.shard.membership
        consumer = membership.consumer_groups.get(group_id)
        if consumer is not None:
            return True, bool(consumer.members), consumer.subscribed_topics()
        group = membership.groups.get(group_id)
        if group is None or group.state is _S.DEAD:
            return False, False, None
        return True, group.state is not _S.EMPTY, group.subscribed_topics()

    # --- offset retention (KIP-211) -----------------------------------------------------------

    def schedule_expiry(self) -> None:
        interval = self._config.get_int("offsets.retention.check.interval.ms")
        self._c.timers.arm(self._clock, ("expiry",), interval, self._expire_offsets)

    def _expire_offsets(self) -> None:
        if self._runtime.closed:
            return
        self.expire_offsets()
        self.schedule_expiry()

    def expire_offsets(self) -> int:
        """Delete offsets past ``offsets.retention.minutes``: every offset of a group empty for
        that long, and offsets of topics a consumer group no longer subscribes to (KIP-496)."""
        now = self._clock.now_ms()
        retention = self._config.get_int("offsets.retention.minutes") * 60_000
        expired = 0
        groups = self._runtime.shard.membership.groups
        for group_id in sorted(self.offsets.committed):
            group = groups.get(group_id)
            _known, active, subscribed = self._subscriptions(group_id)
            empty = not active
            records: list[Record] = []
            for tp, entry in sorted(self.offsets.of(group_id).items()):
                if self.offsets.has_pending(group_id, tp):
                    continue
                if empty:
                    since = max(entry.commit_timestamp, group.state_timestamp if group else -1)
                elif subscribed is not None and tp.topic not in subscribed:
                    since = entry.commit_timestamp
                else:
                    continue
                if now - since >= retention:
                    records.append((OffsetKey(group_id, tp.topic, tp.partition), None))
            if empty and group is not None and len(records) == len(self.offsets.of(group_id)):
                records.append((GroupKey(group_id), None))
            if records and self._write(records) is ErrorCode.NONE:
                count = sum(1 for key, _v in records if isinstance(key, OffsetKey))
                expired += count
                self._emit(group_id, "offset-expirations", count)
        return expired
