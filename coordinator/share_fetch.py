"""ShareFetch and ShareAcknowledge (KIP-932) over the share coordinator's sessions.

A ShareFetch checks (or opens) the member's share session, applies the acknowledgements it
carries (first: the records they release may be acquired by the same fetch), updates the
session's partitions and then acquires records, again on each pass of a long poll, until it
has enough, its deadline passes or the session is gone.  The waiting between passes is the
server's (``coordinator/protocol/share_handlers``): ``ShareFetchPoll.step`` says until when.
Each method takes and returns the core's typed values (``BrokerCore.share_fetches``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from coordinator.share.manager import PartitionAcks, PartitionFetch, ShareFetchOutcome, ShareManager
from coordinator.share.sessions import INITIAL_EPOCH, ShareSession
from txn.clock import Clock
from txn.errors import ErrorCode
from txn.ids import TopicIdPartition
from txn.limits import INT32_MAX, SHARE_FETCH_MAX_RECORDS

#: A long poll looks again this often: records also come back without an append (lock
#: expiry, release).
POLL_INTERVAL_MS = 50


@dataclass(frozen=True, slots=True)
class ShareSessionKey:
    """Whose share session a ShareFetch or ShareAcknowledge speaks in, at which epoch."""

    group_id: str
    member_id: str
    epoch: int
    connection_id: int = 0


@dataclass(frozen=True, slots=True)
class ShareFetchRequest:
    session: ShareSessionKey
    requested: Sequence[TopicIdPartition]
    forgotten: Sequence[TopicIdPartition] = ()
    acks: Sequence[PartitionAcks] = ()
    max_records: int = 0  # 0 or less: SHARE_FETCH_MAX_RECORDS
    max_bytes: int = 0  # 0 or less: no limit
    min_bytes: int = 1
    max_wait_ms: int = 0
    #: ShareFetch v2's ShareAcquireMode: record_limit (KIP-1206) takes exactly MaxRecords
    record_limit: bool = False
    #: BatchSize: new records beyond it are split into several in-flight batches (None: never)
    batch_size: int | None = None
    #: v2's IsRenewAck: the request only renews locks (acknowledgements, no acquisition)
    renew_ack: bool = False


def renew_fetch_error(request: ShareFetchRequest) -> str | None:
    """Kafka's check of a renewing ShareFetch: its fetch limits must all be zero (the message
    lists each one that is not, as Kafka's KafkaApis words it); None when it passes."""
    if not request.renew_ack:
        return None
    named = (
        ("maxBytes", request.max_bytes),
        ("minBytes", request.min_bytes),
        ("maxRecords", request.max_records),
        ("maxWaitMs", request.max_wait_ms),
    )
    wrong = "".join(f"{name} must be set to 0, " for name, value in named if value != 0)
    return f"{wrong}if isRenewAck is true." if wrong else None


@dataclass(slots=True)
class ShareFetchPoll:
    """A ShareFetch under way: ``step`` until it returns None, then answer ``outcome``."""

    outcome: ShareFetchOutcome
    #: the group's record lock duration (0 without a group)
    lock_ms: int
    #: False for an incremental answer, which leaves out the partitions with nothing new
    full: bool = True
    _pass: _Acquiring | None = field(default=None, repr=False)

    def step(self) -> int | None:
        """One acquisition pass; None when the fetch is answered, else the Clock time (ms)
        to wait for an append until, before the next pass."""
        if self._pass is None:
            return None
        wake = self._pass.step(self.outcome)
        if wake is None:
            self._pass = None
        return wake

    def answered(self) -> list[PartitionFetch]:
        """The partitions the answer carries, in the outcome's order."""
        return [entry for entry in self.outcome.partitions.values() if self.full or _news(entry)]


@dataclass(slots=True)
class _Acquiring:
    share: ShareManager
    clock: Clock
    group_id: str
    member_id: str
    session: ShareSession
    max_records: int
    max_bytes: int
    min_bytes: int
    deadline_ms: int
    record_limit: bool = False
    batch_size: int | None = None

    def step(self, outcome: ShareFetchOutcome) -> int | None:
        self.share.acquire(
            self.group_id,
            self.member_id,
            self.session,
            self.max_records,
            self.max_bytes,
            outcome,
            record_limit=self.record_limit,
            batch_size=self.batch_size,
        )
        got = sum(
            len(p.result.records) for p in outcome.partitions.values() if p.result is not None
        )
        now_ms = self.clock.now_ms()
        if (
            got >= self.min_bytes
            or now_ms >= self.deadline_ms
            or outcome.acquired_count > 0
            or outcome.archived > 0
        ):
            return None
        if self.share.sessions.get(self.group_id, self.member_id) is not self.session:
            return None  # closed or replaced while we waited
        return min(self.deadline_ms, now_ms + POLL_INTERVAL_MS)


def _news(entry: PartitionFetch) -> bool:
    """Whether an incremental answer carries ``entry`` (as Kafka: errors, acknowledgement
    outcomes and acquired records; not a partition with nothing new)."""
    result = entry.result
    return (
        entry.error is not ErrorCode.NONE
        or entry.ack_error is not ErrorCode.NONE
        or entry.acked
        or (result is not None and bool(result.acquired))
    )


@dataclass(frozen=True, slots=True)
class ShareAcknowledgeResult:
    error: ErrorCode
    message: str | None
    #: the group's record lock duration (0 without a group)
    lock_ms: int
    results: dict[TopicIdPartition, ErrorCode] = field(default_factory=dict)


class ShareFetches:
    """ShareFetch and ShareAcknowledge on one broker."""

    def __init__(self, share: ShareManager, clock: Clock) -> None:
        self._share = share
        self._clock = clock

    def _lock_ms(self, group_id: str) -> int:
        if not group_id:
            return 0
        return self._share.partition_config(group_id).record_lock_duration_ms

    def fetch(self, request: ShareFetchRequest) -> ShareFetchPoll:
        """Start a ShareFetch: the session checked, the acknowledgements applied, the session's
        partitions updated; the returned poll acquires."""
        key = request.session
        group_id, member_id, epoch = key.group_id, key.member_id, key.epoch
        lock_ms = self._lock_ms(group_id)
        if not group_id or not member_id:
            message = "group and member id are required"
            return ShareFetchPoll(ShareFetchOutcome(ErrorCode.INVALID_REQUEST, message), lock_ms)
        if renew_fetch_error(request) is not None:
            # Kafka answers with the error alone (no message, no lock timeout)
            return ShareFetchPoll(ShareFetchOutcome(ErrorCode.INVALID_REQUEST), 0)
        acks = list(request.acks)
        if epoch == INITIAL_EPOCH and acks:
            message = "acknowledgements need an open share session"
            return ShareFetchPoll(ShareFetchOutcome(ErrorCode.INVALID_REQUEST, message), lock_ms)
        share = self._share
        error, session = share.open_or_check_session(group_id, member_id, epoch, key.connection_id)
        if session is None or error is not ErrorCode.NONE:
            return ShareFetchPoll(ShareFetchOutcome(error), lock_ms)
        outcome = ShareFetchOutcome(ErrorCode.NONE)
        full = epoch == INITIAL_EPOCH
        # Acknowledgements first: records they release may be acquired by this same fetch.
        if acks:
            answers = share.acknowledge(group_id, member_id, acks, renew_ack=request.renew_ack)
            for tip, ack_error in answers.items():
                entry = outcome.partitions.setdefault(tip, PartitionFetch(tip))
                entry.ack_error = ack_error
                entry.acked = True
        if share.is_final(epoch):
            share.close_session(group_id, member_id)
            return ShareFetchPoll(outcome, lock_ms, full)
        session.add(list(request.requested))
        session.forget(list(request.forgotten))
        if epoch != INITIAL_EPOCH:  # a new session already expects epoch 1
            share.sessions.advance(session)
        if request.renew_ack:  # as Kafka: a renewing ShareFetch acquires nothing
            return ShareFetchPoll(outcome, lock_ms, full)
        acquiring = _Acquiring(
            share,
            self._clock,
            group_id,
            member_id,
            session,
            max_records=request.max_records if request.max_records > 0 else SHARE_FETCH_MAX_RECORDS,
            max_bytes=request.max_bytes if request.max_bytes > 0 else INT32_MAX,
            min_bytes=max(request.min_bytes, 1),
            deadline_ms=self._clock.now_ms() + request.max_wait_ms,
            record_limit=request.record_limit,
            batch_size=request.batch_size,
        )
        return ShareFetchPoll(outcome, lock_ms, full, acquiring)

    def acknowledge(
        self, key: ShareSessionKey, acks: Sequence[PartitionAcks], *, renew_ack: bool = False
    ) -> ShareAcknowledgeResult:
        """ShareAcknowledge in an open share session (it cannot open one)."""
        group_id, member_id, epoch = key.group_id, key.member_id, key.epoch
        lock_ms = self._lock_ms(group_id)
        if not group_id or not member_id:
            message = "group and member id are required"
            return ShareAcknowledgeResult(ErrorCode.INVALID_REQUEST, message, lock_ms)
        if epoch == INITIAL_EPOCH:
            message = "ShareAcknowledge cannot open a session"
            return ShareAcknowledgeResult(ErrorCode.INVALID_SHARE_SESSION_EPOCH, message, lock_ms)
        share = self._share
        error, session = share.open_or_check_session(group_id, member_id, epoch, key.connection_id)
        if session is None or error is not ErrorCode.NONE:
            return ShareAcknowledgeResult(error, None, lock_ms)
        results = share.acknowledge(group_id, member_id, list(acks), renew_ack=renew_ack)
        if share.is_final(epoch):
            share.close_session(group_id, member_id)
        else:
            share.sessions.advance(session)
        return ShareAcknowledgeResult(ErrorCode.NONE, None, lock_ms, results)
