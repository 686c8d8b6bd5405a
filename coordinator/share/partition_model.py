"""The share partition's data model: config, states, results, planned changes, transition rules.

Shared by the in-flight state (``partition_state``), the planners (``acquisition``,
``acknowledgement``, ``txn_pending``) and ``SharePartition``, which runs them; see
``share_partition`` for the whole picture.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, NamedTuple, Protocol

from coordinator.partition import AbortedTxn, FetchData
from coordinator.share.inflight import AcquisitionLock, PendingAck, Run
from coordinator.share.persister import PersisterStateBatch
from coordinator.share.state_combiner import append_coalesced
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
#: (first offset, last offset, delivery count, cause): records archived for a dead-letter cause
DeadLetterSink = Callable[[int, int, int, str], None]


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
    #: ``share.renew.acknowledge.enable``: false refuses RENEW acknowledgements (KIP-1222).
    renew_acknowledge_enabled: bool = True

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
    #: aborted records read and archived (read_committed); Kafka answers a ShareFetch whose
    #: log read found records even when none of them could be acquired
    archived: int = 0

    @property
    def count(self) -> int:
        return sum(r.last_offset - r.first_offset + 1 for r in self.acquired)


@dataclass(frozen=True, slots=True)
class AckBatch:
    """One AcknowledgementBatch: one type for the range, or one type per offset."""

    first_offset: int
    last_offset: int
    ack_types: Sequence[int]


def validate_ack_batches(batches: Sequence[AckBatch], *, renew_allowed: bool = True) -> ErrorCode:
    """The request-level checks Kafka makes before the share partition sees the batches.

    INVALID_REQUEST for: first > last or a negative offset; batches not strictly ascending or
    overlapping; no types; a type list that is neither one entry nor one per offset; an unknown
    type; a RENEW unless ``renew_allowed`` (Kafka's KafkaApis takes one only in a request
    whose IsRenewAck is set).  (Kafka's KafkaApis lets a batch start on the previous batch's
    last offset; here any overlap is rejected.)
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
                kind = AcknowledgeType.parse(value)
            except InvalidRequestError:
                return ErrorCode.INVALID_REQUEST
            if kind is AcknowledgeType.RENEW and not renew_allowed:
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
class Change:
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
    #: why the records go to the group's dead-letter topic (KIP-1191), if they are archived
    #: for a reason that sends them there: Kafka's cause message
    dead_letter: str | None = None

    @property
    def count(self) -> int:
        return self.last - self.first + 1


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """Records first..last of ``topic``-``partition`` archived in ``group_id`` for ``cause``
    (KIP-1191: bound for the group's dead-letter topic)."""

    group_id: str
    topic: str
    partition: int
    first_offset: int
    last_offset: int
    delivery_count: int
    cause: str


#: Kafka's causes of a dead letter (its ``__dlq.errors.message`` header)
CLIENT_REJECT: Final = "Offset rejected by client."
DELIVERY_COUNT_EXCEEDED: Final = "Offset delivery count exceeded the threshold."


def back_to_available(first: int, last: int, dc: int, config: SharePartitionConfig) -> Change:
    """RELEASE, lock timeout or transaction abort: AVAILABLE, or ARCHIVED at the limit."""
    if dc >= config.delivery_count_limit:
        return Change(
            first,
            last,
            RecordState.ARCHIVED,
            dc,
            event=EVENT_ARCHIVED,
            dead_letter=DELIVERY_COUNT_EXCEEDED,
        )
    return Change(first, last, RecordState.AVAILABLE, dc, event=EVENT_RELEASED)


def below_start_or_back(
    first: int, last: int, dc: int, start: int, config: SharePartitionConfig
) -> list[Change]:
    """Records going back (release, lock timeout, abort): ARCHIVED below the SPSO ``start``,
    else ``back_to_available``."""
    out: list[Change] = []
    if first < start:
        below = min(last, start - 1)
        out.append(Change(first, below, RecordState.ARCHIVED, dc, event=EVENT_ARCHIVED))
        first = below + 1
    if first <= last:
        out.append(back_to_available(first, last, dc, config))
    return out


def ack_change(
    run: Run,
    first: int,
    last: int,
    ack: AcknowledgeType,
    config: SharePartitionConfig,
    *,
    txn: tuple[int, int] | None,
    renew_lock: AcquisitionLock | None,
) -> Change:
    """The change one acknowledgement of ``run``'s records first..last makes."""
    dc = run.delivery_count
    if txn is not None:
        pending = PendingAck(txn[0], txn[1], ack)
        return Change(first, last, RecordState.TX_PENDING, dc, run.member_id, pending)
    if ack is AcknowledgeType.RENEW:
        return Change(
            first, last, RecordState.ACQUIRED, dc, run.member_id, lock=renew_lock, renew=True
        )
    if ack is AcknowledgeType.ACCEPT:
        return Change(first, last, RecordState.ACKNOWLEDGED, dc, event=EVENT_ACKNOWLEDGED)
    if ack is AcknowledgeType.REJECT:
        return Change(
            first, last, RecordState.ARCHIVED, dc, event=EVENT_REJECTED, dead_letter=CLIENT_REJECT
        )
    if ack is AcknowledgeType.GAP:
        return Change(first, last, RecordState.ARCHIVED, dc, event=EVENT_ARCHIVED)
    return back_to_available(first, last, dc, config)


def append_batch(
    out: list[PersisterStateBatch], first: int, last: int, state: int, dc: int
) -> None:
    """Add a state batch, merged into the last one when adjacent and equal."""
    append_coalesced(out, PersisterStateBatch(first, last, state, dc))


def write_batches(plan: Sequence[Change], start: int) -> list[PersisterStateBatch]:
    """The state batches a write carries: changed ranges at or above its start offset."""
    out: list[PersisterStateBatch] = []
    for change in plan:
        if change.renew or change.state is RecordState.TX_PENDING:
            continue
        first = max(change.first, start)
        if first > change.last:
            continue
        append_batch(out, first, change.last, int(change.state), change.delivery_count)
    return out
