"""One runtime under every coordinator (the shape of Kafka's ``CoordinatorRuntime``).

A coordinator is a *shard*: its operations validate a request against its in-memory state and
return a ``CoordinatorResult`` -- the records that would make the change, and the answer the
request gets once they are durable -- without touching a log.  The ``CoordinatorRuntime`` does
the rest, the same way for transactions, share state, share groups and consumer groups.

The runtime owns its shard (a ``RecordShard``: typed records, a codec, one replay method):

* ``write(partition, op)`` runs ``op(shard)``, which must not change the shard; the runtime
  encodes the result's records with the shard's codec, appends them as one batch
  (transactional or a control marker when the result says so), fsyncs it, truncates it away
  again when the fsync fails, maps a failure to the coordinator error Kafka answers with, and
  only then calls ``shard.replay(partition, offset, producer_id, producer_epoch, record)`` for
  each record (``replay_marker`` for a marker).  Replay is the only mutation of the shard;
* ``write(partition, op, flush=False)`` appends without the fsync: the records are replayed
  only once ``replay_unflushed(up_to)`` says the log is durable up to them (or a later
  flushing write made them durable), in log order; ``drop_unflushed`` forgets them;
* ``load`` decodes every record of the shard's logs from their start and replays it through
  the same two methods, then marks the shard loaded.

The lifecycle: ``availability`` (load in progress, loaded, closed) and ``close``, which also
cancels the shard's named timers (``schedule_periodic``, ``schedule_once``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

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
    "Record",
    "RecordCodec",
    "RecordShard",
    "answer_each",
    "append_error_code",
]

R = TypeVar("R")
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

Record = tuple[bytes | None, bytes | None]


@dataclass(frozen=True)
class ControlMarker:
    """A COMMIT/ABORT control record a coordinator writes to its own log (WriteTxnMarkers)."""

    commit: bool
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int


@dataclass(frozen=True)
class CoordinatorResult(Generic[T_co, R]):
    """What a shard operation returns: records to persist, and the answer once they are.

    ``records`` are the shard's typed records.  ``producer`` (id, epoch) makes the batch
    transactional; ``marker`` writes a control batch instead of ``records``.
    """

    records: Sequence[T_co]
    response: R
    producer: tuple[int, int] | None = None
    marker: ControlMarker | None = None


class _Unflushed(NamedTuple):
    """Records appended without an fsync, replayed once known durable."""

    partition: int
    base_offset: int
    records: Sequence[Any]
    producer: tuple[int, int] | None
    on_durable: Callable[[], None] | None


class RecordCodec(Protocol[T]):
    """How a shard's typed records become log records and back."""

    def encode(self, record: T) -> Record:
        """Raises ValueError for a record that cannot be written (an invalid request)."""
        ...

    def decode(self, key: bytes | None, value: bytes | None) -> T:
        """Raises ValueError for bytes to skip on load (corrupt, or an unknown version)."""
        ...


class RecordShard(Protocol[T]):
    """A shard the runtime owns: replay is the only way its state changes."""

    @property
    def codec(self) -> RecordCodec[T]: ...

    def replay(
        self, partition: int, offset: int, producer_id: int, producer_epoch: int, record: T
    ) -> None:
        """One record, once durable or on load; ``producer_id`` is NO_PRODUCER_ID unless the
        batch is transactional."""
        ...

    def replay_marker(
        self, partition: int, producer_id: int, producer_epoch: int, commit: bool
    ) -> None:
        """A COMMIT/ABORT marker, once durable or on load."""
        ...


S = TypeVar("S", bound=RecordShard[Any])


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


class CoordinatorRuntime(Generic[S]):
    """Appends, flushes, replays and the lifecycle of one coordinator's logs (and its shard)."""

    def __init__(
        self,
        clock: Clock,
        name: str,
        logs: Mapping[int, PartitionLog] | None = None,
        *,
        shard: S | None = None,
        skip_below_start: bool = False,
    ):
        """``shard``: the shard the runtime owns (``write`` runs operations on it and replays
        their records into it).  ``skip_below_start``: on load, pass over the records of a
        batch that lie below the log start offset (a log whose start moves inside batches, as
        share-state pruning does); otherwise every record of every batch from the start is
        replayed."""
        self._clock = clock
        self._shard = shard
        self._name = name
        self._skip_below_start = skip_below_start
        self._logs: dict[int, PartitionLog] = dict(logs or {})
        self._timers: dict[str, Timer] = {}
        self._unflushed: list[_Unflushed] = []
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

    @property
    def shard(self) -> S:
        if self._shard is None:
            raise RuntimeError(f"the {self._name} runtime owns no shard")
        return self._shard

    def log_name(self, partition: int) -> str:
        return self._name if len(self._logs) <= 1 else f"{self._name}-{partition}"

    def partition_log(self, partition: int = 0) -> PartitionLog:
        return self._logs[partition]

    def load(self, logs: Iterable[tuple[int, PartitionLog]] | None = None) -> None:
        """Replay every log into the shard, then mark it loaded.

        ``logs`` (partition, log) replaces the runtime's logs; each is replayed as it comes,
        so a generator opens one log after the replay of the one before.
        """
        self._loaded = False
        self._unflushed.clear()
        if logs is None:
            logs = list(self._logs.items())
        else:
            self._logs = {}
        for partition, target in logs:
            self._logs[partition] = target
            self._replay(partition, target)
        self._loaded, self._closed = True, False

    def close(self) -> None:
        """Every later request gets COORDINATOR_NOT_AVAILABLE; the timers stop."""
        self._closed = True
        self.cancel_timers()

    def _log_records(
        self, partition: int, target: PartitionLog
    ) -> Iterator[tuple[BatchHeader, bool | None, int, bytes | None, bytes | None]]:
        """Each record of ``target`` from its log start: (header, None, offset, key, value),
        or (header, commit, -1, None, None) for a control batch.  An unreadable batch is
        skipped with its error logged; records a log start offset cut away are left out."""
        start = target.log_start_offset
        for header, batch in target.batches(start):
            if header.is_control:
                yield (
                    header,
                    control_type_of(batch, 0, header) is ControlType.COMMIT,
                    -1,
                    None,
                    None,
                )
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
                yield header, None, offset, key, value

    def _replay(self, partition: int, target: PartitionLog) -> None:
        shard = self.shard
        for header, commit, offset, key, value in self._log_records(partition, target):
            if commit is not None:
                shard.replay_marker(partition, header.producer_id, header.producer_epoch, commit)
                continue
            producer_id, producer_epoch = (
                (header.producer_id, header.producer_epoch)
                if header.is_transactional
                else (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
            )
            try:
                record = shard.codec.decode(key, value)
            except ValueError as exc:
                log.warning("skipping %s record at %d: %s", self.log_name(partition), offset, exc)
                continue
            shard.replay(partition, offset, producer_id, producer_epoch, record)

    # --- writes -------------------------------------------------------------------------------

    def write(
        self,
        partition: int,
        op: Callable[[S], CoordinatorResult[Any, R]],
        *,
        flush: bool = True,
        on_durable: Callable[[], None] | None = None,
    ) -> R | ErrorCode:
        """Run ``op`` on the shard, persist its records durably, then replay them into it.

        The response, or the coordinator's availability error, or the append error (the
        shard is then unchanged).  A result with no records and no marker appends nothing.

        ``flush`` False: append only, and answer at once; the records are replayed (then
        ``on_durable`` called) by ``replay_unflushed`` once the caller made the log durable,
        or by the next flushing write, which makes them durable too.  No markers.
        """
        if (available := self.availability()) is not ErrorCode.NONE:
            return available
        shard = self.shard
        result = op(shard)
        if not result.records and result.marker is None:
            return result.response
        try:
            raw = [shard.codec.encode(record) for record in result.records]
        except ValueError:
            log.exception("cannot encode a %s record", self.log_name(partition))
            return ErrorCode.INVALID_REQUEST
        if not flush and result.marker is not None:
            raise ValueError("a control marker is always flushed")
        done = self._append(partition, raw, result.producer, result.marker, flush=flush)
        if isinstance(done, ErrorCode):
            return done
        if not flush:
            self._unflushed.append(
                _Unflushed(partition, done, result.records, result.producer, on_durable)
            )
            return result.response
        self.replay_unflushed()  # the flush made them durable too, and they come first
        marker = result.marker
        if marker is not None:
            shard.replay_marker(partition, marker.producer_id, marker.producer_epoch, marker.commit)
            return result.response
        self._replay_written(partition, done, result.records, result.producer)
        return result.response

    def _replay_written(
        self,
        partition: int,
        base_offset: int,
        records: Sequence[Any],
        producer: tuple[int, int] | None,
    ) -> None:
        shard = self.shard
        producer_id, producer_epoch = producer or (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        for delta, record in enumerate(records):
            shard.replay(partition, base_offset + delta, producer_id, producer_epoch, record)

    def replay_unflushed(self, up_to: int | None = None) -> None:
        """Replay the unflushed writes with base offset <= ``up_to`` (None: all), in log
        order: the caller made the log durable that far."""
        while self._unflushed and (up_to is None or self._unflushed[0].base_offset <= up_to):
            written = self._unflushed.pop(0)
            self._replay_written(
                written.partition, written.base_offset, written.records, written.producer
            )
            if written.on_durable is not None:
                written.on_durable()

    def deferred_sync(self, partition: int = 0) -> Callable[[], None]:
        """A callable that makes everything appended to ``partition`` so far durable; safe on
        another thread while appends go on (a log without that ability is flushed now
        instead, and the callable does nothing)."""
        target = self._logs[partition]
        later = getattr(target, "fsync_later", None)
        if later is None:
            target.flush()
            return lambda: None
        sync: Callable[[], None] = later()
        return sync

    def drop_unflushed(self, up_to: int) -> None:
        """Forget the unflushed writes with base offset <= ``up_to``, unreplayed (making them
        durable failed: whether they survive a restart is unknown, as after a timeout)."""
        self._unflushed = [w for w in self._unflushed if w.base_offset > up_to]

    def _append(
        self,
        partition: int,
        records: Sequence[Record],
        producer: tuple[int, int] | None,
        marker: ControlMarker | None,
        *,
        flush: bool,
    ) -> int | ErrorCode:
        now = self._clock.now_ms()
        try:
            batch = self._batch(records, producer, marker, now)
        except Exception as exc:
            return append_error_code(exc)
        return append_durably(
            self._logs[partition], batch, now, name=self.log_name(partition), flush=flush
        )

    @staticmethod
    def _batch(
        records: Sequence[Record],
        producer: tuple[int, int] | None,
        marker: ControlMarker | None,
        now: int,
    ) -> bytes:
        if marker is not None:
            return build_control_batch(
                ControlType.COMMIT if marker.commit else ControlType.ABORT,
                producer_id=marker.producer_id,
                producer_epoch=marker.producer_epoch,
                coordinator_epoch=marker.coordinator_epoch,
                timestamp_ms=now,
            )
        producer_id, producer_epoch = producer or (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        return build_batch(
            list(records),
            timestamp_ms=now,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            transactional=producer is not None,
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
