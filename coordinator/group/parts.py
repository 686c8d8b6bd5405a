"""The base of the parts (mixins) of ``ConsumerGroupCoordinator``: what they call on the whole."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from coordinator.group.classic import ClassicGroup, ClassicMember
    from coordinator.group.consumer_model import ConsumerProtocolGroup
    from coordinator.group.consumer_records import Record
    from coordinator.group.offsets import OffsetStore
    from coordinator.group.shard import GroupRuntime
    from coordinator.group.timers import Timers
    from coordinator.share.group_model import TopicLookup
    from txn.clock import Clock
    from txn.config import BrokerConfig
    from txn.errors import ErrorCode


class CoordinatorPart:
    """KIP-848 and mixed membership (mixins; the offset commands and the admin views are
    composed parts) write through the coordinator's ``_write`` (records as a
    ``CoordinatorResult`` on its runtime); it is typed here once, with the other methods and
    the state they share (set by ``ConsumerGroupCoordinator.__init__``)."""

    _clock: Clock
    _config: BrokerConfig
    _runtime: GroupRuntime
    _timers: Timers
    _groups: dict[str, ClassicGroup]
    _consumer_groups: dict[str, ConsumerProtocolGroup]  # KIP-848
    _topics: TopicLookup | None
    _is_share_group: Callable[[str], bool]

    if TYPE_CHECKING:  # defined by ConsumerGroupCoordinator (no runtime stubs to shadow them)

        @property
        def offsets(self) -> OffsetStore: ...

        def availability(self) -> ErrorCode: ...

        def _emit(self, group_id: str, meter: str, count: int) -> None: ...

        def _arm_session(self, group: ClassicGroup, member: ClassicMember, now: int) -> None: ...

        def _write(
            self,
            records: list[Record],
            *,
            producer: tuple[int, int] | None = None,
            defer: bool = False,
        ) -> ErrorCode: ...
