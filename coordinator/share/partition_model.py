"""The share partition's data model: config, states, results, planned changes, helpers.

Shared by the modules that implement ``SharePartition`` (``partition_core``, ``acquisition``,
``acknowledgement``, ``txn_pending``); see ``share_partition`` for the whole picture.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, NamedTuple, Protocol

from coordinator.partition import AbortedTxn, FetchData
from coordinator.share.inflight import (
    AcquisitionLock,
    PendingAck,
)
from coordinator.share.persister import PersisterStateBatch
from coordinator.share.state_combiner import append_coalesced
from txn.batch import BatchHeader
from txn.config import default_of
from txn.errors import ErrorCode, InvalidConfigError, InvalidRequestError
from txn.share_state import AcknowledgeType, RecordState

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


# The positive integer settings: (SharePartitionConfig field, broker config key).
_BROKER_SETTINGS = (
    ("delivery_count_limit", "group.share.delivery.count.limit"),
    ("record_lock_duration_ms", "group.share.record.lock.duration.ms"),
    ("max_in_flight_records", "group.share.partition.max.record.locks"),
)


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
        for name, _key in _BROKER_SETTINGS:
            if getattr(self, name) < 1:
                raise InvalidConfigError(f"{name} must be >= 1")
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
            field: int(config.get(key, default_of(key))) for field, key in _BROKER_SETTINGS
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
    append_coalesced(out, PersisterStateBatch(first, last, state, dc))


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
