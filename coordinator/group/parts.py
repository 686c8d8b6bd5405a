"""What the membership parts of ``ConsumerGroupCoordinator`` share: one ``GroupContext``.

The coordinator is composed of parts it holds and delegates to -- the classic protocol
(``classic_membership``), the consumer protocol (``consumer_protocol``), classic members in
consumer groups and the conversions (``mixed``), the offset commands and the admin views.
Each membership part is given this context: the clock, the config, the runtime (and through
it the shard's groups and offsets), the request-level timers, the topics, the share-group
check, the write (records as a ``CoordinatorResult`` on the runtime) and the metric emitter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from coordinator.group.classic import ClassicGroup
from coordinator.group.consumer_model import ConsumerProtocolGroup
from coordinator.group.consumer_records import Record
from coordinator.group.offsets import OffsetStore
from coordinator.group.shard import GroupMeter, GroupRuntime
from coordinator.group.timers import Timers
from coordinator.shard_runtime import CoordinatorResult
from coordinator.share.group_model import TopicLookup
from txn.clock import Clock
from txn.config import BrokerConfig
from txn.errors import ErrorCode

__all__ = ["GroupContext", "TopicCatalog"]


class _Named(Protocol):
    @property
    def name(self) -> str: ...


class TopicCatalog(Protocol):
    """Every topic and the topic metadata's versions: ``version`` grows with each change,
    ``created_version`` is its value when a topic was last created (what a group's regexes
    are resolved against; ``coordinator.topics.TopicRegistry`` fits)."""

    @property
    def version(self) -> int: ...

    @property
    def created_version(self) -> int: ...

    def all(self) -> Sequence[_Named]: ...


@dataclass(frozen=True, slots=True)
class GroupContext:
    """The collaborators and the state the coordinator's parts share."""

    clock: Clock
    config: BrokerConfig
    runtime: GroupRuntime
    timers: Timers
    meter: GroupMeter
    topics: TopicLookup | None
    is_share_group: Callable[[str], bool]
    # group id -> (session timeout, heartbeat interval) of a KIP-848 group's members: its
    # consumer.* group configs over the broker's settings (None: the broker's settings)
    consumer_timing: Callable[[str], tuple[int, int]] | None = None
    # every topic, for the groups' regex subscriptions (None: no topic matches a regex)
    topic_catalog: TopicCatalog | None = None
    # group id -> a KIP-848 group's assignment interval (ms): its consumer.assignment.interval.ms
    # over the broker's setting (None: the broker's setting)
    consumer_assignment_interval: Callable[[str], int] | None = None

    @property
    def groups(self) -> dict[str, ClassicGroup]:
        """The classic groups (the shard's; replay changes them)."""
        return self.runtime.shard.membership.groups

    @property
    def consumer_groups(self) -> dict[str, ConsumerProtocolGroup]:
        """The KIP-848 groups (the shard's; replay changes them)."""
        return self.runtime.shard.membership.consumer_groups

    @property
    def offsets(self) -> OffsetStore:
        return self.runtime.shard.offsets.store

    def availability(self) -> ErrorCode:
        return self.runtime.availability()

    def consumer_session_timeout_ms(self, group_id: str) -> int:
        if self.consumer_timing is not None:
            return self.consumer_timing(group_id)[0]
        return self.config.get_int("group.consumer.session.timeout.ms")

    def consumer_heartbeat_interval_ms(self, group_id: str) -> int:
        if self.consumer_timing is not None:
            return self.consumer_timing(group_id)[1]
        return self.config.get_int("group.consumer.heartbeat.interval.ms")

    def consumer_assignment_interval_ms(self, group_id: str) -> int:
        if self.consumer_assignment_interval is not None:
            return self.consumer_assignment_interval(group_id)
        return self.config.get_int("group.consumer.assignment.interval.ms")

    def emit(self, group_id: str, meter: str, count: int) -> None:
        self.meter.emit(group_id, meter, count)

    def write(
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
            return self.runtime.write(0, lambda _shard: result)
        group_id = getattr(records[0][0], "group_id", "")
        return self.runtime.write(
            0,
            lambda _shard: result,
            flush=False,
            on_durable=lambda: self.emit(group_id, "offset-commits", len(records)),
        )
