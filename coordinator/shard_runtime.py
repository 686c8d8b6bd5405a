"""One runtime under every coordinator (the shape of Kafka's ``CoordinatorRuntime``).

A coordinator is a *shard*: its operations validate a request against its in-memory state and
return a ``CoordinatorResult`` -- the records that would make the change, and the answer the
request gets once they are durable -- without touching a log.  The ``CoordinatorRuntime`` does
the rest, the same way for transactions, share state, share groups and consumer groups:

* ``write`` appends the records as one batch (transactional or a control marker when the
  result says so), fsyncs it, truncates it away again when the fsync fails, maps a failure to
  the coordinator error Kafka answers with, and only then applies the result (through the
  shard's replay code) -- or reverts what the shard prepared;
* ``load`` replays every log of the shard from its start through ``CoordinatorShard``'s two
  replay methods (the same code a live write applies with), then marks the shard loaded;
* the lifecycle: ``availability`` (load in progress, loaded, closed) and ``close``, which also
  cancels the shard's named timers (``schedule_periodic``, ``schedule_once``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

from coordinator.log.durable_append import append_durably, append_error_code
from coordinator.log.storage import PartitionLog
from txn.batch import BatchHeader, ControlType, build_batch, build_control_batch, control_type_of
from txn.clock import Clock, Timer
from txn.errors import ErrorCode
from txn.ids import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from txn.txn_log import read_records

log = logging.getLogger(__name__)

__all__ = [
    "ControlMarker",
    "CoordinatorResult",
    "CoordinatorRuntime",
    "CoordinatorShard",
    "LoadedRecord",
    "answer_each",
    "append_error_code",
]

R = TypeVar("R")

Record = tuple[bytes | None, bytes | None]


@dataclass(frozen=True)
class ControlMarker:
    """A COMMIT/ABORT control record a coordinator writes to its own log (WriteTxnMarkers)."""

    commit: bool
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int


@dataclass(frozen=True)
class CoordinatorResult(Generic[R]):
    """What a shard operation returns: records to persist, and the answer once they are.

    ``apply(base_offset)`` makes the records current (the shard's replay code); ``revert``
    undoes what the shard prepared when the write fails.  ``producer`` (id, epoch) makes the
    batch transactional; ``marker`` writes a control batch instead of ``records``.
    """

    records: Sequence[Record]
    response: R
    apply: Callable[[int], None] | None = None
    revert: Callable[[], None] | None = None
    producer: tuple[int, int] | None = None
    marker: ControlMarker | None = None


class LoadedRecord(NamedTuple):
    """One record of a coordinator log, as load replays it."""

    partition: int
    offset: int
    header: BatchHeader
    key: bytes | None
    value: bytes | None


class CoordinatorShard:
    """The replay side of a shard: called for every record of its logs on load."""

    def replay(self, record: LoadedRecord) -> None:
        raise NotImplementedError

    def replay_marker(self, partition: int, header: BatchHeader, commit: bool) -> None:
        """A COMMIT/ABORT marker on load (most logs have none to act on)."""


def answer_each(
    ids: Iterable[str],
    available: ErrorCode,
    unavailable: Callable[[str, ErrorCode], R],
    answer: Callable[[str], R],
) -> list[R]:
    """One answer per id, in order: ``answer(id)`` while the coordinator is ``available``
    (NONE), else ``unavailable(id, error)`` for every id."""
    if available is not ErrorCode.NONE:
        return [unavailable(one, available) for one in ids]
    return [answer(one) for one in ids]


class CoordinatorRuntime:
    """Appends, flushes, replays and the lifecycle of one coordinator's logs."""

    def __init__(
        self,
        clock: Clock,
        name: str,
        logs: Mapping[int, PartitionLog] | None = None,
        *,
        skip_below_start: bool = False,
    ):
        """``skip_below_start``: on load, pass over the records of a batch that lie below the
        log start offset (a log whose start moves inside batches, as share-state pruning
        does); otherwise every record of every batch from the start is replayed."""
        self._clock = clock
        self._name = name
        self._skip_below_start = skip_below_start
        self._logs: dict[int, PartitionLog] = dict(logs or {})
        self._timers: dict[str, Timer] = {}
        self._loaded = False
        self._closed = False

    # --- lifecycle: loading -> loaded -> closed -----------------------------------------------

    def availability(self) -> ErrorCode:
        """NONE once loaded; COORDINATOR_LOAD_IN_PROGRESS before, NOT_AVAILABLE after close."""
        if self._closed:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if not self._loaded:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def loaded(self) -> bool:
        return self._loaded

    def log_name(self, partition: int) -> str:
        return self._name if len(self._logs) <= 1 else f"{self._name}-{partition}"

    def partition_log(self, partition: int = 0) -> PartitionLog:
        return self._logs[partition]

    def load(
        self,
        shard: CoordinatorShard,
        logs: Iterable[tuple[int, PartitionLog]] | None = None,
    ) -> None:
        """Replay every log through ``shard``, then mark it loaded.

        ``logs`` (partition, log) replaces the runtime's logs; each is replayed as it comes,
        so a generator opens one log after the replay of the one before.
        """
        self._loaded = False
        if logs is None:
            logs = list(self._logs.items())
        else:
            self._logs = {}
        for partition, target in logs:
            self._logs[partition] = target
            self._replay(shard, partition, target)
        self._loaded, self._closed = True, False

    def close(self) -> None:
        """Every later request gets COORDINATOR_NOT_AVAILABLE; the timers stop."""
        self._closed = True
        self.cancel_timers()

    def _replay(self, shard: CoordinatorShard, partition: int, target: PartitionLog) -> None:
        start = target.log_start_offset
        for header, batch in target.batches(start):
            if header.is_control:
                commit = control_type_of(batch, 0, header) is ControlType.COMMIT
                shard.replay_marker(partition, header, commit)
                continue
            try:
                records = read_records(batch)
            except ValueError:
                log.exception(
                    "skipping unreadable %s batch at %d",
                    self.log_name(partition),
                    header.base_offset,
                )
                continue
            for delta, (key, value) in enumerate(records):
                offset = header.base_offset + delta
                if offset < start and self._skip_below_start:
                    continue  # deleted by a log start offset that cut this batch
                shard.replay(LoadedRecord(partition, offset, header, key, value))

    # --- writes -------------------------------------------------------------------------------

    def append(
        self, partition: int, result: CoordinatorResult[R], *, flush: bool = True
    ) -> int | ErrorCode:
        """Append the result's batch (and fsync unless ``flush`` is False): base offset/error."""
        now = self._clock.now_ms()
        try:
            batch = self._batch(result, now)
        except Exception as exc:
            return append_error_code(exc)
        return append_durably(
            self._logs[partition], batch, now, name=self.log_name(partition), flush=flush
        )

    def write(self, partition: int, result: CoordinatorResult[R]) -> R | ErrorCode:
        """Persist the result durably, then apply it: its response, or the append error."""
        done = self.append(partition, result)
        if isinstance(done, ErrorCode):
            if result.revert is not None:
                result.revert()
            return done
        if result.apply is not None:
            result.apply(done)
        return result.response

    @staticmethod
    def _batch(result: CoordinatorResult[R], now: int) -> bytes:
        marker = result.marker
        if marker is not None:
            return build_control_batch(
                ControlType.COMMIT if marker.commit else ControlType.ABORT,
                producer_id=marker.producer_id,
                producer_epoch=marker.producer_epoch,
                coordinator_epoch=marker.coordinator_epoch,
                timestamp_ms=now,
            )
        producer_id, producer_epoch = result.producer or (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        return build_batch(
            list(result.records),
            timestamp_ms=now,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            transactional=result.producer is not None,
        )

    # --- timers -------------------------------------------------------------------------------

    def schedule_periodic(
        self, name: str, interval_ms: int, task: Callable[[], object], *, label: str = ""
    ) -> None:
        """Run ``task`` every ``interval_ms`` until close (a failing run is logged)."""

        def run() -> None:
            if self._closed:
                return
            try:
                task()
            except Exception:
                log.exception("%s job %s failed", label or self._name, name)
            finally:
                if not self._closed:
                    self._timers[name] = self._clock.schedule(interval_ms, run)

        self.cancel_timer(name)
        self._timers[name] = self._clock.schedule(interval_ms, run)

    def schedule_once(self, name: str, delay_ms: int, callback: Callable[[], None]) -> None:
        """Run ``callback`` after ``delay_ms`` (replacing the timer of that name's entry)."""
        self._timers[name] = self._clock.schedule(delay_ms, callback)

    def cancel_timer(self, name: str) -> None:
        timer = self._timers.pop(name, None)
        if timer is not None:
            timer.cancel()

    def forget_timer(self, name: str) -> None:
        """Drop a timer that has fired (nothing to cancel)."""
        self._timers.pop(name, None)

    def cancel_timers(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
