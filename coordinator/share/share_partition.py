"""A share partition (KIP-932): the in-flight records of one share group on one partition.

The broker core calls it; it calls three seams and nothing else: the data
partition (``PartitionData``: offsets and fetch), the ``Persister`` (durable
state, i.e. the share coordinator) and the ``Clock`` (acquisition locks).

Offsets (DESIGN and reference §3)::

    SPSO (start_offset)  first offset still in flight (not ACKNOWLEDGED/ARCHIVED)
    SPEO (end_offset)    one past the last offset ever taken into the cache
                         (exclusive, as in KIP-932's worked example; Kafka's
                         ``endOffset()`` is ``end_offset - 1`` while the cache
                         is non-empty)
    next_fetch_offset    first AVAILABLE (or never-fetched) offset, else SPEO

Every state change goes through ``txn.share_state.check_transition``.  An
acknowledgement is *prepared* (validated, turned into a plan), written with
one ``Persister.write_state`` call, and applied only if that call returns
NONE; otherwise nothing changes and the persister's error (mapped as Kafka
maps it) is returned.  Acquisitions are not persisted (as in Kafka); lock
expiry, session release and transaction completion are.

What a write carries (``_write_batches``): the changed ranges at or above the
SPSO the write produces, coalesced by (state, delivery count), and
``start_offset`` = that SPSO when it differs from the last persisted one,
else -1 ("unchanged").  Ranges that fall below the new SPSO are omitted: the
share coordinator prunes them anyway.  This reproduces KIP-932's worked
example (see tests/unit/share/test_worked_example.py).

Log start movement: Kafka's share partition says "LSO" for the *log start*
offset (retention, DeleteRecords).  When it passes the SPSO, AVAILABLE records
below it are archived, ACQUIRED ones wait for their lock, SPSO = log start and
SPEO = max(SPEO, SPSO); the new start is persisted with the next write.  The
*last stable* offset only bounds what a read_committed partition can fetch.
It is checked on every public operation and by ``on_log_appended``.

A fresh state (persisted start -1) takes ``auto_offset_reset`` (latest = the
high watermark, or the last stable offset under read_committed; earliest =
the log start) and persists it at once, so a restart resumes there.

KIP-1289 (DESIGN §4.1, §4.2): ``prepare_pending`` moves ACQUIRED records to
TX_PENDING (lock cancelled; never acquired, released or expired);
``complete_pending`` applies (commit) or reverts (abort) them.  Pending acks
themselves are stored by the share coordinator as a transactional batch, so
``prepare_pending`` writes nothing here.
"""

from __future__ import annotations

import enum
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, NamedTuple, Protocol

from coordinator.partition import AbortedTxn, FetchData
from coordinator.share.inflight import (
    AcquisitionLock,
    InFlightRuns,
    PendingAck,
    Run,
)
from coordinator.share.persister import Persister, PersisterStateBatch, ShareStateKey
from txn.batch import BatchFormatError, BatchHeader, iter_batches
from txn.clock import Clock
from txn.config import default_of
from txn.errors import ErrorCode, InvalidConfigError, InvalidRequestError
from txn.ids import TopicPartition
from txn.share_state import AcknowledgeType, RecordState, check_transition

log = logging.getLogger("sharetxn.share_partition")

Isolation = Literal["read_uncommitted", "read_committed"]
AutoOffsetReset = Literal["latest", "earliest"]

# Metric event kinds passed to ``on_event(kind, count)``.
EVENT_ACQUIRED: Final = "acquired"
EVENT_REDELIVERED: Final = "redelivered"  # acquired with delivery count > 1
EVENT_ACKNOWLEDGED: Final = "acknowledged"  # -> ACKNOWLEDGED
EVENT_RELEASED: Final = "released"  # -> AVAILABLE (RELEASE, lock timeout, session close, abort)
EVENT_REJECTED: Final = "rejected"  # REJECT -> ARCHIVED
EVENT_ARCHIVED: Final = "archived"  # -> ARCHIVED otherwise (GAP, limit, log start, aborted txn)

EventSink = Callable[[str, int], None]

# States that keep a run alive below the SPSO (they still have an owner to hear from).
_HELD: Final = frozenset({RecordState.ACQUIRED, RecordState.TX_PENDING})
_PERSISTED_STATE_IDS: Final[dict[int, RecordState]] = {
    int(RecordState.AVAILABLE): RecordState.AVAILABLE,
    # Kafka never persists ACQUIRED; an ACQUIRED batch read back would have no lock and no
    # owner (the KAFKA-18084 bug class), so it is loaded as AVAILABLE.
    int(RecordState.ACQUIRED): RecordState.AVAILABLE,
    int(RecordState.ACKNOWLEDGED): RecordState.ACKNOWLEDGED,
    int(RecordState.ARCHIVED): RecordState.ARCHIVED,
}


class SharePartitionState(enum.Enum):
    """Lifecycle (SharePartitionState in Kafka)."""

    EMPTY = "EMPTY"
    INITIALIZING = "INITIALIZING"
    ACTIVE = "ACTIVE"
    FAILED = "FAILED"
    FENCED = "FENCED"


@dataclass(frozen=True, slots=True)
class SharePartitionConfig:
    """Per-partition settings; group configs may replace them at runtime (``update_config``)."""

    delivery_count_limit: int = default_of("group.share.delivery.count.limit")
    record_lock_duration_ms: int = default_of("group.share.record.lock.duration.ms")
    max_in_flight_records: int = default_of("group.share.partition.max.record.locks")
    isolation: Isolation = "read_uncommitted"  # share.isolation.level
    auto_offset_reset: AutoOffsetReset = "latest"  # share.auto.offset.reset
    #: ``by_duration:<d>``: start at the first record at most this old (the strategy is then
    #: "latest" for when no record is that recent).
    reset_duration_ms: int | None = None
    leader_epoch: int = 0

    def __post_init__(self) -> None:
        if self.delivery_count_limit < 1:
            raise InvalidConfigError("delivery_count_limit must be >= 1")
        if self.record_lock_duration_ms < 1:
            raise InvalidConfigError("record_lock_duration_ms must be >= 1")
        if self.max_in_flight_records < 1:
            raise InvalidConfigError("max_in_flight_records must be >= 1")
        if self.isolation not in ("read_uncommitted", "read_committed"):
            raise InvalidConfigError(f"unknown isolation level {self.isolation!r}")
        if self.auto_offset_reset not in ("latest", "earliest"):
            raise InvalidConfigError(f"unsupported auto offset reset {self.auto_offset_reset!r}")

    @property
    def read_committed(self) -> bool:
        return self.isolation == "read_committed"

    @classmethod
    def from_broker_config(
        cls, config: Mapping[str, Any], **overrides: Any
    ) -> SharePartitionConfig:
        """The broker-level defaults (Kafka names), with explicit field overrides."""
        values: dict[str, Any] = {
            field: int(config.get(key, default_of(key)))
            for field, key in (
                ("delivery_count_limit", "group.share.delivery.count.limit"),
                ("record_lock_duration_ms", "group.share.record.lock.duration.ms"),
                ("max_in_flight_records", "group.share.partition.max.record.locks"),
            )
        }
        values.update(overrides)
        return cls(**values)


class PartitionData(Protocol):
    """What a share partition reads from its data partition (``coordinator.partition``)."""

    @property
    def log_start_offset(self) -> int: ...

    @property
    def high_watermark(self) -> int: ...

    @property
    def last_stable_offset(self) -> int: ...

    def fetch(self, offset: int, max_bytes: int, *, read_committed: bool) -> FetchData: ...

    def aborted_between(self, start: int, end: int) -> tuple[AbortedTxn, ...]: ...

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int]: ...


class AcquiredRange(NamedTuple):
    """One AcquiredRecords entry of a ShareFetch response."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AcquireResult:
    records: bytes = b""  # whole RecordBatch v2 batches covering the acquired offsets
    acquired: list[AcquiredRange] = field(default_factory=list)
    error: ErrorCode = ErrorCode.NONE

    @property
    def count(self) -> int:
        return sum(r.last_offset - r.first_offset + 1 for r in self.acquired)


@dataclass(frozen=True, slots=True)
class AckBatch:
    """One AcknowledgementBatch: one type for the range, or one type per offset."""

    first_offset: int
    last_offset: int
    ack_types: Sequence[int]


def validate_ack_batches(batches: Sequence[AckBatch]) -> ErrorCode:
    """The request-level checks Kafka makes before the share partition sees the batches.

    INVALID_REQUEST for: first > last or a negative offset; batches not strictly ascending or
    overlapping; no types; a type list that is neither one entry nor one per offset; an unknown
    type.  (Kafka's KafkaApis lets a batch start on the previous batch's last offset; here any
    overlap is rejected.)
    """
    prev_last = -1
    for batch in batches:
        first, last = batch.first_offset, batch.last_offset
        if first < 0 or first > last or first <= prev_last:
            return ErrorCode.INVALID_REQUEST
        types = batch.ack_types
        if not types or (len(types) != 1 and len(types) != last - first + 1):
            return ErrorCode.INVALID_REQUEST
        for value in types:
            try:
                AcknowledgeType.parse(value)
            except InvalidRequestError:
                return ErrorCode.INVALID_REQUEST
        prev_last = last
    return ErrorCode.NONE


def map_persister_error(code: ErrorCode, *, initializing: bool) -> ErrorCode:
    """Kafka's mapping of a persister error to the share partition's answer (reference §3)."""
    if code in (
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
        return code
    if code is ErrorCode.FENCED_LEADER_EPOCH:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if code is ErrorCode.FENCED_STATE_EPOCH:
        # Initialization treats a fenced state epoch as a leadership change (reference §3);
        # a write passes it through so the manager fences and reloads the partition.
        return ErrorCode.NOT_LEADER_OR_FOLLOWER if initializing else code
    return ErrorCode.UNKNOWN_SERVER_ERROR


@dataclass(slots=True)
class _Change:
    """One planned transition of the range first..last (within one run at planning time)."""

    first: int
    last: int
    state: RecordState
    delivery_count: int
    member_id: str = ""
    pending: PendingAck | None = None
    lock: AcquisitionLock | None = None  # RENEW: the new lock
    renew: bool = False
    event: str | None = None

    @property
    def count(self) -> int:
        return self.last - self.first + 1


# The target delivery state a transaction staged -> the acknowledgement that produced it.
_ACK_OF_TARGET: Final[dict[int, AcknowledgeType]] = {
    int(RecordState.ACKNOWLEDGED): AcknowledgeType.ACCEPT,
    int(RecordState.ARCHIVED): AcknowledgeType.REJECT,
    int(RecordState.AVAILABLE): AcknowledgeType.RELEASE,
}


# The first log read of an acquisition; grown fourfold while it covers too few records.
_FIRST_READ_BYTES: Final = 256 * 1024


class _InitError(Exception):
    """Persisted state that cannot be loaded."""


class SharePartition:
    """In-flight records, acquisition locks and SPSO/SPEO of one share partition."""

    def __init__(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        tp: TopicPartition,
        data: PartitionData,
        persister: Persister,
        clock: Clock,
        config: SharePartitionConfig | None = None,
        *,
        on_event: EventSink | None = None,
    ) -> None:
        self.group_id = group_id
        self.topic_id = topic_id
        self.tp = tp
        self.key = ShareStateKey(group_id, topic_id, tp.partition)
        self._data = data
        self._persister = persister
        self._clock = clock
        self._config = config or SharePartitionConfig()
        self._on_event = on_event
        self._status = SharePartitionState.EMPTY
        self._runs = InFlightRuns()
        self._start = 0
        self._end = 0
        self._persisted_start = -1
        self._state_epoch = 0
        self._find_next = False  # True when AVAILABLE or gap runs may exist (Kafka's flag)
        self._locks: set[AcquisitionLock] = set()
        self._transitioning: list[tuple[int, int]] = []  # ranges being written right now
        self._write_depth = 0
        self._deferred: list[AcquisitionLock] = []  # locks that expired during a write

    # -- read-only views ------------------------------------------------------------------------

    @property
    def state(self) -> SharePartitionState:
        return self._status

    @property
    def config(self) -> SharePartitionConfig:
        return self._config

    @property
    def state_epoch(self) -> int:
        return self._state_epoch

    @property
    def start_offset(self) -> int:
        """SPSO."""
        return self._start

    @property
    def end_offset(self) -> int:
        """SPEO, exclusive: one past the last offset taken into the cache."""
        return self._end

    @property
    def in_flight_count(self) -> int:
        """Records between SPSO and SPEO (what group.share.partition.max.record.locks bounds)."""
        return self._end - self._start

    @property
    def next_fetch_offset(self) -> int:
        if not self._find_next:
            return self._end
        for run in self._runs.iter_from(self._start):
            if run.pending is None and (run.state is None or run.state is RecordState.AVAILABLE):
                return max(run.first, self._start)
        self._find_next = False
        return self._end

    def record_state(self, offset: int) -> tuple[RecordState, int, str] | None:
        """(state, delivery count, owner) of a cached offset; None if not in the cache."""
        run = self._runs.find(offset)
        if run is None or run.state is None:
            return None
        return run.state, run.delivery_count, run.member_id

    def state_batches(self) -> list[PersisterStateBatch]:
        """The cache from SPSO on as state batches (in-memory ids: ACQUIRED 1, TX_PENDING 64)."""
        out: list[PersisterStateBatch] = []
        for run in self._runs.iter_from(self._start):
            if run.state is None:
                continue
            first = max(run.first, self._start)
            _append_batch(out, first, run.last, int(run.state), run.delivery_count)
        return out

    def pending_acks(self) -> list[tuple[int, int, PendingAck]]:
        """TX_PENDING ranges with their transaction and acknowledgement type."""
        return [(r.first, r.last, r.pending) for r in self._runs if r.pending is not None]

    # -- lifecycle ------------------------------------------------------------------------------

    def update_config(self, config: SharePartitionConfig) -> None:
        """Take new settings; they apply to the next acquisition, release or expiry."""
        self._config = config

    def maybe_initialize(self) -> ErrorCode:
        """EMPTY -> INITIALIZING -> ACTIVE | FAILED by reading the persisted state."""
        status = self._status
        if status is SharePartitionState.ACTIVE:
            return ErrorCode.NONE
        if status is SharePartitionState.FAILED:
            # As Kafka: a failed partition is not re-initialized; its owner discards it and
            # creates a new one.
            return ErrorCode.UNKNOWN_SERVER_ERROR
        if status is not SharePartitionState.EMPTY:
            return ErrorCode.LEADER_NOT_AVAILABLE
        self._status = SharePartitionState.INITIALIZING
        try:
            error = self._initialize()
        except _InitError as exc:
            log.error("share partition %s cannot load its state: %s", self.key, exc)
            error = ErrorCode.UNKNOWN_SERVER_ERROR
        if self._status is SharePartitionState.INITIALIZING:
            self._status = (
                SharePartitionState.ACTIVE
                if error is ErrorCode.NONE
                else SharePartitionState.FAILED
            )
        return error

    def mark_fenced(self) -> None:
        """Leadership or state epoch lost: stop serving and drop every lock timer."""
        self._status = SharePartitionState.FENCED
        for lock in self._locks:
            lock.cancel()
        self._locks.clear()
        self._deferred.clear()

    def _initialize(self) -> ErrorCode:
        result = self._persister.read_state(self.key, self._config.leader_epoch)
        if result.error is not ErrorCode.NONE:
            log.warning(
                "share partition %s: read_state failed with %s", self.key, result.error.name
            )
            return map_persister_error(result.error, initializing=True)
        fresh = result.start_offset < 0
        start = self._reset_offset() if fresh else result.start_offset
        runs = InFlightRuns()
        cursor = start
        for batch in sorted(result.batches, key=lambda b: b.first_offset):
            if batch.first_offset < cursor or batch.last_offset < batch.first_offset:
                msg = f"state batch {batch} is below start {start} or overlaps another"
                raise _InitError(msg)
            state = _PERSISTED_STATE_IDS.get(batch.delivery_state)
            if state is None or batch.delivery_count < 0:
                raise _InitError(f"state batch {batch} has an invalid state or delivery count")
            if batch.first_offset > cursor:
                runs.append(Run(cursor, batch.first_offset - 1, None))
            runs.append(Run(batch.first_offset, batch.last_offset, state, batch.delivery_count))
            cursor = batch.last_offset + 1
        if fresh:
            # Pin the position auto.offset.reset chose, so a restart does not jump to a later
            # "latest" and skip what was produced in between.
            error = self._persister.write_state(
                self.key, result.state_epoch, self._config.leader_epoch, start, []
            )
            if error is not ErrorCode.NONE:
                return map_persister_error(error, initializing=True)
        self._state_epoch = result.state_epoch
        self._runs = runs
        self._start = start
        self._end = cursor
        self._persisted_start = start
        self._find_next = bool(runs)
        self._advance_start()
        self._sync_log_start()
        return ErrorCode.NONE

    def _reset_offset(self) -> int:
        duration = self._config.reset_duration_ms
        if duration is not None:
            offset, _ = self._data.offset_for_timestamp(self._clock.now_ms() - duration)
            if offset >= 0:
                return offset
        if self._config.auto_offset_reset == "earliest":
            return self._data.log_start_offset
        if self._config.read_committed:
            return self._data.last_stable_offset
        return self._data.high_watermark

    def _inactive_error(self) -> ErrorCode:
        status = self._status
        if status is SharePartitionState.FAILED:
            return ErrorCode.UNKNOWN_SERVER_ERROR
        if status is SharePartitionState.FENCED:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode.LEADER_NOT_AVAILABLE

    # -- acquire --------------------------------------------------------------------------------

    def acquire(self, member_id: str, max_fetch_records: int, max_bytes: int) -> AcquireResult:
        """Acquire records for ``member_id``: AVAILABLE ones first, then new ones from the log.

        Reads the log from ``next_fetch_offset`` (at most ``max_bytes``, at least one batch).
        Stops once ``max_fetch_records`` are acquired, rounded up to the end of the log batch
        being taken; new records are further bounded by ``max_in_flight_records`` minus the
        records already in flight, also rounded up to a log-batch boundary.  Control batches
        and (read_committed) aborted transactional records are archived, never acquired.
        """
        if self._status is not SharePartitionState.ACTIVE:
            return AcquireResult(error=self._inactive_error())
        if max_fetch_records <= 0 or max_bytes <= 0:
            return AcquireResult()
        self._sync_log_start()
        cfg = self._config
        fetch_from = self.next_fetch_offset
        if fetch_from >= self._end and self.in_flight_count >= cfg.max_in_flight_records:
            return AcquireResult()
        # Read no more log than the records wanted need: clients ask for tens of MB per fetch
        # but a few hundred records, and reading the rest only to drop it dominated the cost.
        chunk = min(max_bytes, _FIRST_READ_BYTES)
        while True:
            data = self._data.fetch(fetch_from, chunk, read_committed=cfg.read_committed)
            if data.error is ErrorCode.OFFSET_OUT_OF_RANGE:
                return AcquireResult()  # nothing readable there (yet)
            if data.error is not ErrorCode.NONE:
                return AcquireResult(error=data.error)
            if not data.records:
                return AcquireResult()
            try:
                batches = iter_batches(data.records)
            except BatchFormatError as exc:
                log.error("share partition %s: unreadable log data: %s", self.key, exc)
                return AcquireResult(error=ErrorCode.CORRUPT_MESSAGE)
            next_offset = batches[-1][1].last_offset + 1
            readable = data.last_stable_offset if cfg.read_committed else data.high_watermark
            if (
                next_offset - fetch_from >= max_fetch_records
                or chunk >= max_bytes
                or next_offset >= readable
            ):
                break
            chunk = min(max_bytes, chunk * 4)
        aborted: tuple[AbortedTxn, ...] = ()
        if cfg.read_committed and batches:
            aborted = self._data.aborted_between(
                batches[0][1].base_offset, batches[-1][1].last_offset + 1
            )
        return self._acquire_from(
            member_id=member_id,
            max_fetch_records=max_fetch_records,
            fetch_from=fetch_from,
            raw=data.records,
            batches=batches,
            aborted=aborted,
        )

    def _acquire_from(
        self,
        *,
        member_id: str,
        max_fetch_records: int,
        fetch_from: int,
        raw: bytes,
        batches: list[tuple[int, BatchHeader]],
        aborted: tuple[AbortedTxn, ...],
    ) -> AcquireResult:
        cfg = self._config
        now = self._clock.now_ms()
        lock = AcquisitionLock(member_id, -1, -1, now + cfg.record_lock_duration_ms)
        acquired: list[AcquiredRange] = []
        spans: list[tuple[int, int]] = []
        count = 0
        redelivered = 0
        archived = 0
        touched_first = -1
        touched_last = -1
        for pos, header in batches:
            if count >= max_fetch_records:
                break
            lo = max(header.base_offset, fetch_from, self._start)
            hi = header.last_offset
            if lo > hi:
                continue
            control = header.is_control
            skip = control or (
                bool(aborted) and header.is_transactional and _is_aborted(header, aborted)
            )
            got = 0
            full = False
            if touched_first < 0:
                touched_first = lo
            touched_last = hi
            if lo < self._end:
                seg_hi = min(hi, self._end - 1)
                for run in self._runs.overlapping(lo, seg_hi):
                    if run.pending is not None or run.state not in (None, RecordState.AVAILABLE):
                        continue
                    a = max(run.first, lo)
                    z = min(run.last, seg_hi)
                    if skip:
                        if run.state is RecordState.AVAILABLE or not control:
                            archived += z - a + 1
                        self._archive_range(a, z)
                        continue
                    dc = 1 if run.state is None else run.delivery_count + 1
                    self._lock_range(a, z, member_id, dc, lock)
                    _append_range(acquired, a, z, dc)
                    got += z - a + 1
                    if dc > 1:
                        redelivered += z - a + 1
                lo = seg_hi + 1
            if lo <= hi:
                # Beyond the cache: new records.
                if skip:
                    self._runs.append(Run(lo, hi, RecordState.ARCHIVED, 0))
                    self._end = hi + 1
                    if not control:
                        archived += hi - lo + 1
                else:
                    room = min(
                        max_fetch_records - count - got,
                        cfg.max_in_flight_records - self.in_flight_count,
                    )
                    if room > 0:
                        self._runs.append(Run(lo, hi, RecordState.ACQUIRED, 1, member_id, lock))
                        lock.held += hi - lo + 1
                        self._end = hi + 1
                        _append_range(acquired, lo, hi, 1)
                        got += hi - lo + 1
                    else:
                        touched_last = lo - 1
                        full = True
            if got:
                spans.append((pos, pos + header.size))
                count += got
            if full:
                break
        if touched_first >= 0 and touched_last >= touched_first:
            self._runs.coalesce(touched_first, touched_last)
        if lock.held:
            lock.first_offset = acquired[0].first_offset
            lock.last_offset = acquired[-1].last_offset
            self._schedule(lock, cfg.record_lock_duration_ms)
        self._advance_start()
        self._emit(EVENT_ACQUIRED, count)
        self._emit(EVENT_REDELIVERED, redelivered)
        self._emit(EVENT_ARCHIVED, archived)
        return AcquireResult(_join_spans(raw, spans), acquired)

    def _lock_range(
        self, first: int, last: int, member_id: str, dc: int, lock: AcquisitionLock
    ) -> None:
        for run in self._runs.isolate(first, last):
            if run.state is not None:
                check_transition(run.state, RecordState.ACQUIRED)
            run.state = RecordState.ACQUIRED
            run.delivery_count = dc
            run.member_id = member_id
            run.lock = lock
        lock.held += last - first + 1

    def _archive_range(self, first: int, last: int) -> None:
        """Archive AVAILABLE or never-fetched offsets (control batches, aborted records)."""
        for run in self._runs.isolate(first, last):
            if run.state is not None:
                check_transition(run.state, RecordState.ARCHIVED)
            run.state = RecordState.ARCHIVED
            run.member_id = ""

    def _schedule(self, lock: AcquisitionLock, delay_ms: int) -> None:
        self._locks.add(lock)
        lock.timer = self._clock.schedule(delay_ms, lambda: self._on_lock_expired(lock))

    # -- acknowledge ----------------------------------------------------------------------------

    def acknowledge(self, member_id: str, batches: Sequence[AckBatch]) -> ErrorCode:
        """ShareAcknowledge / the acknowledgements of a ShareFetch, all or nothing."""
        error = validate_ack_batches(batches)
        if error is not ErrorCode.NONE:
            return error
        if self._status is not SharePartitionState.ACTIVE:
            return self._inactive_error()
        self._sync_log_start()
        planned = self._plan_acks(member_id, batches, txn=None)
        if isinstance(planned, ErrorCode):
            return planned
        plan, renew_lock = planned
        error = self._commit(plan, atomic=True)
        if error is ErrorCode.NONE and renew_lock is not None and renew_lock.held:
            self._schedule(renew_lock, self._config.record_lock_duration_ms)
        return error

    def _plan_acks(
        self,
        member_id: str | None,
        batches: Sequence[AckBatch],
        txn: tuple[int, int] | None,
    ) -> tuple[list[_Change], AcquisitionLock | None] | ErrorCode:
        """Validate every batch against the cache and turn it into changes (nothing applied)."""
        plan: list[_Change] = []
        renew_lock: AcquisitionLock | None = None
        for batch in batches:
            if txn is not None and batch.first_offset < self._start:
                # A transactional ack must find its records ACQUIRED by this member; below the
                # SPSO they were acknowledged already (by someone), so nothing can be staged.
                return ErrorCode.INVALID_RECORD_STATE
            if batch.last_offset < self._start:
                continue  # already past the SPSO: nothing to do (Kafka ignores it)
            if self._start >= self._end:
                return ErrorCode.INVALID_RECORD_STATE  # nothing cached at all
            if batch.last_offset >= self._end:
                return ErrorCode.INVALID_REQUEST  # offsets beyond the cache
            types = [AcknowledgeType(t) for t in batch.ack_types]
            first = max(batch.first_offset, self._start)
            for run in self._runs.overlapping(first, batch.last_offset):
                a = max(run.first, first)
                z = min(run.last, batch.last_offset)
                if run.state is not RecordState.ACQUIRED or run.pending is not None:
                    return ErrorCode.INVALID_RECORD_STATE
                if member_id is not None and run.member_id != member_id:
                    return ErrorCode.INVALID_RECORD_STATE
                if self._in_transition(a, z):
                    return ErrorCode.INVALID_RECORD_STATE
                for s, e, ack in _segments(a, z, batch.first_offset, types):
                    if ack is AcknowledgeType.RENEW:
                        if renew_lock is None:
                            renew_lock = AcquisitionLock(
                                run.member_id,
                                s,
                                e,
                                self._clock.now_ms() + self._config.record_lock_duration_ms,
                            )
                        renew_lock.last_offset = e
                    plan.append(self._ack_change(run, s, e, ack, txn=txn, renew_lock=renew_lock))
        return plan, renew_lock

    def _ack_change(
        self,
        run: Run,
        first: int,
        last: int,
        ack: AcknowledgeType,
        *,
        txn: tuple[int, int] | None,
        renew_lock: AcquisitionLock | None,
    ) -> _Change:
        dc = run.delivery_count
        if txn is not None:
            pending = PendingAck(txn[0], txn[1], ack)
            return _Change(first, last, RecordState.TX_PENDING, dc, run.member_id, pending)
        if ack is AcknowledgeType.RENEW:
            return _Change(
                first, last, RecordState.ACQUIRED, dc, run.member_id, lock=renew_lock, renew=True
            )
        if ack is AcknowledgeType.ACCEPT:
            return _Change(first, last, RecordState.ACKNOWLEDGED, dc, event=EVENT_ACKNOWLEDGED)
        if ack is AcknowledgeType.REJECT:
            return _Change(first, last, RecordState.ARCHIVED, dc, event=EVENT_REJECTED)
        if ack is AcknowledgeType.GAP:
            return _Change(first, last, RecordState.ARCHIVED, dc, event=EVENT_ARCHIVED)
        return self._back_to_available(first, last, dc)

    def _back_to_available(self, first: int, last: int, dc: int) -> _Change:
        """RELEASE, lock timeout or transaction abort: AVAILABLE, or ARCHIVED at the limit."""
        if dc >= self._config.delivery_count_limit:
            return _Change(first, last, RecordState.ARCHIVED, dc, event=EVENT_ARCHIVED)
        return _Change(first, last, RecordState.AVAILABLE, dc, event=EVENT_RELEASED)

    # -- release, expiry ------------------------------------------------------------------------

    def release_acquired_records(self, member_id: str) -> ErrorCode:
        """Share session closed or member left: its ACQUIRED records go back (dc - 1).

        Records below the SPSO are archived.  TX_PENDING records are not touched (DESIGN §4.1).
        """
        if self._status is not SharePartitionState.ACTIVE:
            return self._inactive_error()
        self._sync_log_start()
        plan: list[_Change] = []
        for run in self._runs:
            if run.state is not RecordState.ACQUIRED or run.member_id != member_id:
                continue
            dc = max(0, run.delivery_count - 1)  # Kafka's DeliveryCountOps.DECREASE
            # Records whose acknowledgement is being written are left to that write.
            for piece_first, last in self._outside_transitions(run.first, run.last):
                first = piece_first
                if first < self._start:
                    below = min(last, self._start - 1)
                    plan.append(
                        _Change(first, below, RecordState.ARCHIVED, dc, event=EVENT_ARCHIVED)
                    )
                    first = below + 1
                if first <= last:
                    plan.append(
                        _Change(first, last, RecordState.AVAILABLE, dc, event=EVENT_RELEASED)
                    )
        return self._commit(plan, atomic=True)

    def _on_lock_expired(self, lock: AcquisitionLock) -> None:
        lock.timer = None
        if lock not in self._locks or self._status is not SharePartitionState.ACTIVE:
            return
        if self._write_depth:
            self._deferred.append(lock)  # records may be mid-transition; decide after the write
            return
        self._expire(lock)

    def _expire(self, lock: AcquisitionLock) -> None:
        self._locks.discard(lock)
        plan: list[_Change] = []
        for run in self._runs.overlapping(lock.first_offset, lock.last_offset):
            if run.lock is not lock or run.state is not RecordState.ACQUIRED:
                continue
            first = run.first
            if first < self._start:
                below = min(run.last, self._start - 1)
                plan.append(
                    _Change(
                        first, below, RecordState.ARCHIVED, run.delivery_count, event=EVENT_ARCHIVED
                    )
                )
                first = below + 1
            if first <= run.last:
                plan.append(self._back_to_available(first, run.last, run.delivery_count))
        error = self._commit(plan, atomic=False)
        if error is not ErrorCode.NONE:
            log.warning("share partition %s: persisting a lock timeout failed: %s", self.key, error)

    def _drain_deferred(self) -> None:
        while self._deferred and not self._write_depth:
            lock = self._deferred.pop(0)
            if lock in self._locks and self._status is SharePartitionState.ACTIVE:
                self._expire(lock)

    # -- KIP-1289: transactional acknowledgements -----------------------------------------------

    def pending_plan(
        self,
        member_id: str | None,
        producer_id: int,
        producer_epoch: int,
        batches: Sequence[AckBatch],
    ) -> list[PersisterStateBatch] | ErrorCode:
        """Validate a TxnShareAcknowledge without applying it.

        Returns the target state of every acknowledged range (what the share coordinator
        stages in the transaction: ACCEPT -> ACKNOWLEDGED, REJECT/GAP -> ARCHIVED, RELEASE ->
        AVAILABLE, with the records' delivery counts), or the error ``prepare_pending`` would
        return.
        """
        error = validate_ack_batches(batches)
        if error is not ErrorCode.NONE:
            return error
        if any(t == AcknowledgeType.RENEW for b in batches for t in b.ack_types):
            return ErrorCode.INVALID_REQUEST
        if self._status is not SharePartitionState.ACTIVE:
            return self._inactive_error()
        self._sync_log_start()
        planned = self._plan_acks(member_id, batches, txn=(producer_id, producer_epoch))
        if isinstance(planned, ErrorCode):
            return planned
        out: list[PersisterStateBatch] = []
        for change in sorted(planned[0], key=lambda c: c.first):
            assert change.pending is not None
            target = self._ack_change(
                Run(change.first, change.last, RecordState.ACQUIRED, change.delivery_count),
                change.first,
                change.last,
                change.pending.ack_type,
                txn=None,
                renew_lock=None,
            )
            out.append(
                PersisterStateBatch(
                    change.first, change.last, int(target.state), target.delivery_count
                )
            )
        return out

    def restore_pending(
        self, producer_id: int, producer_epoch: int, batches: Sequence[PersisterStateBatch]
    ) -> None:
        """After a restart: mark the records of a still-open transaction TX_PENDING again.

        ``batches`` are the target states the share coordinator staged (see ``pending_plan``).
        This replays durable state rather than making a live transition, so it sets the state
        directly: the records become exclusive to the transaction again, as before the crash.
        """
        if self._status is not SharePartitionState.ACTIVE:
            return
        for batch in batches:
            ack = _ACK_OF_TARGET.get(batch.delivery_state, AcknowledgeType.RELEASE)
            first = max(batch.first_offset, self._start)
            last = batch.last_offset
            if last < first:
                continue
            if last >= self._end:
                if first > self._end:
                    self._runs.append(Run(self._end, first - 1, None))
                self._runs.append(Run(max(first, self._end), last, None))
                self._end = last + 1
            for run in self._runs.isolate(first, last):
                if run.state is not None and run.state.is_terminal:
                    continue
                run.state = RecordState.TX_PENDING
                run.delivery_count = max(run.delivery_count, batch.delivery_count, 1)
                run.member_id = ""
                if run.lock is not None and run.lock.release(run.count):
                    self._locks.discard(run.lock)
                run.lock = None
                run.pending = PendingAck(producer_id, producer_epoch, ack)
            self._runs.coalesce(first, last)
        self._find_next = True

    def prepare_pending(
        self,
        member_id: str | None,
        producer_id: int,
        producer_epoch: int,
        batches: Sequence[AckBatch],
    ) -> ErrorCode:
        """TxnShareAcknowledge: ACQUIRED -> TX_PENDING(pid, epoch, type), all or nothing.

        With ``member_id`` every record must be ACQUIRED by that member; with None any ACQUIRED
        record may be acknowledged (DESIGN §4.2).  RENEW is not a transactional outcome:
        INVALID_REQUEST.  The pending acks are stored by the share coordinator; nothing is
        written through the persister here.
        """
        error = validate_ack_batches(batches)
        if error is not ErrorCode.NONE:
            return error
        if any(t == AcknowledgeType.RENEW for b in batches for t in b.ack_types):
            return ErrorCode.INVALID_REQUEST
        if self._status is not SharePartitionState.ACTIVE:
            return self._inactive_error()
        self._sync_log_start()
        planned = self._plan_acks(member_id, batches, txn=(producer_id, producer_epoch))
        if isinstance(planned, ErrorCode):
            return planned
        # TX_PENDING is not terminal, so the SPSO cannot move: nothing to write.
        self._apply(sorted(planned[0], key=lambda c: c.first))
        return ErrorCode.NONE

    def complete_pending(
        self, producer_id: int, producer_epoch: int, commit: bool, *, persist: bool = True
    ) -> ErrorCode:
        """A transaction marker: apply (commit) or revert (abort) the producer's pending acks.

        Commit: ACCEPT -> ACKNOWLEDGED, REJECT/GAP -> ARCHIVED, RELEASE -> AVAILABLE.  Abort:
        AVAILABLE with the delivery count kept.  AVAILABLE becomes ARCHIVED at the delivery
        limit or below the SPSO (DESIGN §4.6).  A marker with an older epoch than the pending
        acks' has no effect.  The outcome is final, so a failed write is logged, not returned.
        """
        if self._status is not SharePartitionState.ACTIVE:
            return self._inactive_error()
        self._sync_log_start()
        plan: list[_Change] = []
        for run in self._runs:
            pending = run.pending
            if (
                pending is None
                or pending.producer_id != producer_id
                or pending.producer_epoch > producer_epoch
            ):
                continue
            dc = run.delivery_count
            ack = pending.ack_type if commit else AcknowledgeType.RELEASE
            if ack is AcknowledgeType.RELEASE:
                first = run.first
                if first < self._start:
                    below = min(run.last, self._start - 1)
                    plan.append(
                        _Change(first, below, RecordState.ARCHIVED, dc, event=EVENT_ARCHIVED)
                    )
                    first = below + 1
                if first <= run.last:
                    plan.append(self._back_to_available(first, run.last, dc))
            else:
                plan.append(
                    self._ack_change(run, run.first, run.last, ack, txn=None, renew_lock=None)
                )
        if not persist:
            self._apply(sorted(plan, key=lambda c: c.first))
            self._advance_start()
            return ErrorCode.NONE
        error = self._commit(plan, atomic=False)
        if error is not ErrorCode.NONE:
            log.warning("share partition %s: persisting a txn outcome failed: %s", self.key, error)
        return ErrorCode.NONE

    # -- the data partition ---------------------------------------------------------------------

    def on_log_appended(self) -> bool:
        """The data partition changed: follow its log start offset; True if records are ready."""
        if self._status is not SharePartitionState.ACTIVE:
            return False
        self._sync_log_start()
        cfg = self._config
        upper = self._data.last_stable_offset if cfg.read_committed else self._data.high_watermark
        nxt = self.next_fetch_offset
        if nxt >= upper:
            return False
        return nxt < self._end or self.in_flight_count < cfg.max_in_flight_records

    def _sync_log_start(self) -> None:
        """The log start offset moved past the SPSO (retention, DeleteRecords).

        AVAILABLE records below it are archived; ACQUIRED (and TX_PENDING) ones keep their
        owner until their lock expires or they are released; SPSO = log start offset and
        SPEO = max(SPEO, SPSO).  The new start is persisted with the next write (lazily).
        """
        log_start = self._data.log_start_offset
        if log_start <= self._start:
            return
        archived = 0
        for run in self._runs.overlapping(self._start, log_start - 1):
            if run.state is RecordState.AVAILABLE and run.pending is None:
                a = max(run.first, self._start)
                z = min(run.last, log_start - 1)
                self._archive_range(a, z)
                archived += z - a + 1
        self._runs.split_at(log_start)  # so what lies below it can be evicted
        self._start = log_start
        self._end = max(self._end, log_start)
        self._find_next = True
        self._advance_start()
        self._emit(EVENT_ARCHIVED, archived)

    # -- plan, write, apply ---------------------------------------------------------------------

    def _commit(self, plan: list[_Change], *, atomic: bool) -> ErrorCode:
        """Persist and apply ``plan``.

        atomic: write first and apply only on success (acknowledge, release).  Otherwise apply
        first and write after (lock expiry, transaction outcome), returning the write's error.
        """
        if not plan:
            return ErrorCode.NONE
        plan.sort(key=lambda c: c.first)
        if all(c.renew for c in plan):
            self._apply(plan)  # RENEW changes no state and persists nothing
            return ErrorCode.NONE
        if not atomic:
            self._apply(plan)
            self._advance_start()
            error = self._persist(plan, self._start)
            self._drain_deferred()
            return error
        new_start = self._terminal_prefix_end(plan)
        error = self._persist(plan, new_start)
        if error is not ErrorCode.NONE:
            self._drain_deferred()
            return map_persister_error(error, initializing=False)
        self._apply(plan)
        self._advance_start()
        self._drain_deferred()
        return ErrorCode.NONE

    def _persist(self, plan: list[_Change], new_start: int) -> ErrorCode:
        batches = _write_batches(plan, new_start)
        start_field = new_start if new_start != self._persisted_start else -1
        if not batches and start_field < 0:
            return ErrorCode.NONE
        mark = len(self._transitioning)
        self._transitioning.extend((c.first, c.last) for c in plan)
        self._write_depth += 1
        try:
            error = self._persister.write_state(
                self.key, self._state_epoch, self._config.leader_epoch, start_field, batches
            )
        finally:
            self._write_depth -= 1
            del self._transitioning[mark:]
        if error is ErrorCode.NONE and start_field >= 0:
            self._persisted_start = start_field
        return error

    def _in_transition(self, first: int, last: int) -> bool:
        return any(a <= last and first <= z for a, z in self._transitioning)

    def _outside_transitions(self, first: int, last: int) -> list[tuple[int, int]]:
        """The parts of first..last not being written right now."""
        pieces = [(first, last)]
        for a, z in self._transitioning:
            next_pieces: list[tuple[int, int]] = []
            for f, la in pieces:
                if z < f or a > la:
                    next_pieces.append((f, la))
                    continue
                if f < a:
                    next_pieces.append((f, a - 1))
                if z < la:
                    next_pieces.append((z + 1, la))
            pieces = next_pieces
        return pieces

    def _apply(self, plan: list[_Change]) -> None:
        events: dict[str, int] = {}
        for change in plan:
            for run in self._runs.isolate(change.first, change.last):
                old = run.lock
                if change.renew:
                    new = change.lock
                    assert new is not None
                    if old is not None and old is not new and old.release(run.count):
                        self._locks.discard(old)
                    new.held += run.count
                    run.lock = new
                    continue
                state = run.state
                assert state is not None, "a planned change never targets a gap"
                check_transition(state, change.state)
                if old is not None and old.release(run.count):
                    self._locks.discard(old)
                run.state = change.state
                run.delivery_count = change.delivery_count
                run.member_id = change.member_id
                run.lock = None
                run.pending = change.pending
            if change.state is RecordState.AVAILABLE:
                self._find_next = True
            self._runs.coalesce(change.first, change.last)
            if change.event is not None:
                events[change.event] = events.get(change.event, 0) + change.count
        for kind, count in events.items():
            self._emit(kind, count)

    def _terminal_prefix_end(self, overlay: list[_Change] | None) -> int:
        """Where the SPSO lands: past the contiguous ACKNOWLEDGED/ARCHIVED records.

        ``overlay`` (sorted, disjoint) is a plan not applied yet: its states win where it lies.
        """
        p = self._start
        end = self._end
        runs = self._runs
        changes = overlay or []
        k = 0
        i = runs.index_from(p)
        while p < end:
            while k < len(changes) and changes[k].last < p:
                k += 1
            state: RecordState | None
            if k < len(changes) and changes[k].first <= p:
                state = changes[k].state
                seg_end = changes[k].last
            else:
                while runs[i].last < p:
                    i += 1
                run = runs[i]
                state = run.state
                seg_end = run.last
                if k < len(changes):
                    seg_end = min(seg_end, changes[k].first - 1)
            if state is None or not state.is_terminal:
                break
            p = seg_end + 1
        return p

    def _advance_start(self) -> None:
        """Move the SPSO past terminal records and evict what lies wholly below it."""
        self._start = self._terminal_prefix_end(None)
        self._end = max(self._end, self._start)
        self._runs.drop_below(self._start, keep_states=_HELD)

    def _emit(self, kind: str, count: int) -> None:
        if count <= 0 or self._on_event is None:
            return
        try:
            self._on_event(kind, count)
        except Exception:  # a metrics sink must never break the partition
            log.exception("share partition %s: metric callback failed", self.key)


# -- helpers --------------------------------------------------------------------------------------


def _is_aborted(header: BatchHeader, aborted: tuple[AbortedTxn, ...]) -> bool:
    pid = header.producer_id
    base = header.base_offset
    return any(a.producer_id == pid and a.first_offset <= base <= a.last_offset for a in aborted)


def _segments(
    first: int, last: int, batch_first: int, types: list[AcknowledgeType]
) -> list[tuple[int, int, AcknowledgeType]]:
    """Split first..last into runs of equal acknowledge type (one type covers everything)."""
    if len(types) == 1:
        return [(first, last, types[0])]
    out: list[tuple[int, int, AcknowledgeType]] = []
    seg_start = first
    current = types[first - batch_first]
    for offset in range(first + 1, last + 1):
        ack = types[offset - batch_first]
        if ack is not current:
            out.append((seg_start, offset - 1, current))
            seg_start = offset
            current = ack
    out.append((seg_start, last, current))
    return out


def _append_range(out: list[AcquiredRange], first: int, last: int, dc: int) -> None:
    if out and out[-1].last_offset + 1 == first and out[-1].delivery_count == dc:
        out[-1] = AcquiredRange(out[-1].first_offset, last, dc)
    else:
        out.append(AcquiredRange(first, last, dc))


def _append_batch(
    out: list[PersisterStateBatch], first: int, last: int, state: int, dc: int
) -> None:
    if out:
        prev = out[-1]
        if (
            prev.last_offset + 1 == first
            and prev.delivery_state == state
            and prev.delivery_count == dc
        ):
            out[-1] = PersisterStateBatch(prev.first_offset, last, state, dc)
            return
    out.append(PersisterStateBatch(first, last, state, dc))


def _write_batches(plan: list[_Change], new_start: int) -> list[PersisterStateBatch]:
    """The state batches a write carries: changed ranges at or above the new SPSO."""
    out: list[PersisterStateBatch] = []
    for change in plan:
        if change.renew or change.state is RecordState.TX_PENDING:
            continue
        first = max(change.first, new_start)
        if first > change.last:
            continue
        _append_batch(out, first, change.last, int(change.state), change.delivery_count)
    return out


def _join_spans(raw: bytes, spans: list[tuple[int, int]]) -> bytes:
    if not spans:
        return b""
    parts: list[bytes] = []
    start, stop = spans[0]
    for s, e in spans[1:]:
        if s == stop:
            stop = e
        else:
            parts.append(raw[start:stop])
            start, stop = s, e
    parts.append(raw[start:stop])
    return b"".join(parts)
