"""The base of the parts (mixins) of ``ConsumerGroupCoordinator``: what they call on the whole."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coordinator.group.consumer_records import Record
    from txn.errors import ErrorCode


class CoordinatorPart:
    """Offsets, admin views, KIP-848 and mixed membership all write through the coordinator's
    ``_write`` (records as a ``CoordinatorResult`` on its runtime); it is typed here once."""

    if TYPE_CHECKING:  # defined by ConsumerGroupCoordinator (no runtime stub to shadow it)

        def _write(
            self,
            records: list[Record],
            *,
            producer: tuple[int, int] | None = None,
            defer: bool = False,
        ) -> ErrorCode: ...
