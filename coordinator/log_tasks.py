"""The broker's periodic log tasks on the Clock (Kafka's scheduler threads): the time-based
flush, idle producer expiry, and the repeating schedule retention and the cleaner use."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from coordinator.partition import Partition
from txn.clock import Clock

#: Kafka checks for expired producer ids every 10 minutes at most.
PRODUCER_EXPIRY_CHECK_MS = 600_000


def repeat(clock: Clock, first_ms: int, interval_ms: int, task: Callable[[], object]) -> None:
    """Run ``task`` after ``first_ms``, then ``interval_ms`` after each run ends (whether it
    raised or not)."""

    def tick() -> None:
        try:
            task()
        finally:
            clock.schedule(interval_ms, tick)

    clock.schedule(first_ms, tick)


def schedule_flush(
    clock: Clock, interval_ms: int | None, partitions: Callable[[], Iterable[Partition]]
) -> None:
    """Apply the time-based flush rule (``log.flush.interval.ms``) to every partition."""
    if interval_ms is None:
        return

    def tick() -> None:
        now = clock.now_ms()
        for partition in partitions():
            partition.log.maybe_flush(now)
        clock.schedule(interval_ms, tick)

    clock.schedule(interval_ms, tick)


def schedule_producer_expiry(
    clock: Clock, expiration_ms: Callable[[], int], partitions: Callable[[], Iterable[Partition]]
) -> None:
    """Forget idle idempotent producers (``producer.id.expiration.ms``, read at every check:
    a dynamic broker config, as Kafka's), as Kafka does."""

    def tick() -> None:
        now = clock.now_ms()
        expiry = expiration_ms()
        for partition in partitions():
            partition.producers.remove_expired(now, expiry)
        clock.schedule(min(expiry, PRODUCER_EXPIRY_CHECK_MS), tick)

    clock.schedule(min(expiration_ms(), PRODUCER_EXPIRY_CHECK_MS), tick)
