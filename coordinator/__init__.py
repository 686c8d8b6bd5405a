"""The sharetxn broker: durable logs, partitions, coordinators and the Kafka-protocol server."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coordinator.launcher import LocalBroker

__all__ = ["LocalBroker"]


def __getattr__(name: str) -> Any:
    # Lazy, so that importing the core (e.g. from the chaos simulator) does not pull in asyncio
    # server code.
    if name == "LocalBroker":
        from coordinator.launcher import LocalBroker  # noqa: PLC0415

        return LocalBroker
    raise AttributeError(name)
