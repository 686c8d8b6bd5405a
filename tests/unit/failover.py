"""The restart step the coordinator test benches share."""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar


class Closeable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Closeable)


class FailoverBench(Generic[C]):
    """A bench whose coordinator can fail over; ``start`` builds and loads a new one."""

    coordinator: C

    def start(self) -> C:
        raise NotImplementedError

    def restart(self) -> C:
        """A coordinator failover: the old one closes, a new one loads the same log(s)."""
        self.coordinator.close()
        self.coordinator = self.start()
        return self.coordinator
