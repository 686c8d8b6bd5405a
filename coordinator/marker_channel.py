"""The transaction coordinator's channel to the partitions that take transaction markers.

Kafka's TransactionMarkerChannelManager sends WriteTxnMarkers to partition leaders and retries
until every partition acknowledged; only then is CompleteCommit/CompleteAbort written.  Here the
"leaders" are the data partitions and the share coordinator of the same process, reached through
a ``MarkerHandler``; delivery is still asynchronous (``clock.schedule(0, ...)``) and explicit so
that the chaos harness can drop, delay, duplicate and reorder it by overriding ``deliver``.

Per-partition response handling (Kafka's TransactionMarkerRequestCompletionHandler):

- NONE, UNSUPPORTED_FOR_MESSAGE_FORMAT, UNSUPPORTED_VERSION: the partition is done;
- INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED: a newer producer or coordinator owns
  the partition's view of this transaction -- stop sending for this transaction, on_complete is
  never called (the coordinator's load finishes the work, as in Kafka);
- anything else (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS,
  REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR, coordinator errors, a missing entry, an exception from
  the handler, no response within ``request_timeout_ms``): retry that partition after
  ``retry_backoff_ms``.  Kafka treats a few unexpected codes as fatal; a single-node broker
  would rather keep retrying than leave a transaction hanging.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from txn.batch import ControlType
from txn.clock import Clock, Timer
from txn.errors import ErrorCode
from txn.ids import TopicPartition

log = logging.getLogger(__name__)

DONE_ERRORS = frozenset(
    {ErrorCode.NONE, ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, ErrorCode.UNSUPPORTED_VERSION}
)
STOP_ERRORS = frozenset(
    {ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED}
)

MarkerResponse = Mapping[TopicPartition, ErrorCode]


@dataclass(frozen=True, slots=True)
class TxnMarker:
    """One WriteTxnMarkers entry: the post-prepare producer id/epoch and the partitions."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    result: ControlType
    partitions: tuple[TopicPartition, ...]


class MarkerHandler(Protocol):
    """The partition side: append the marker to each partition, return a code per partition.

    Must be idempotent: the same marker may arrive more than once.
    """

    def write_txn_markers(self, marker: TxnMarker) -> dict[TopicPartition, ErrorCode]: ...


@dataclass(eq=False)
class _PendingTxn:
    marker: TxnMarker
    on_complete: Callable[[], None]
    remaining: set[TopicPartition]
    attempt: int = 0
    in_flight: bool = False
    timers: list[Timer] = field(default_factory=list)


class MarkerChannel:
    """Delivers markers with retries; calls ``on_complete`` once every partition acknowledged."""

    def __init__(
        self,
        clock: Clock,
        handler: MarkerHandler,
        retry_backoff_ms: int = 100,
        request_timeout_ms: int = 30000,
    ) -> None:
        self._clock = clock
        self._handler = handler
        self._retry_backoff_ms = retry_backoff_ms
        self._request_timeout_ms = request_timeout_ms
        self._pending: dict[str, _PendingTxn] = {}
        self._closed = False

    # --- public -------------------------------------------------------------------------------

    def send(self, marker: TxnMarker, on_complete: Callable[[], None]) -> None:
        """Start delivering ``marker``; a newer marker for the same id replaces an older one."""
        previous = self._pending.pop(marker.transactional_id, None)
        if previous is not None:
            log.info("replacing pending markers %s with %s", previous.marker, marker)
            self._cancel_timers(previous)
        entry = _PendingTxn(marker, on_complete, set(marker.partitions))
        self._pending[marker.transactional_id] = entry
        self._schedule(entry, 0)

    def cancel(self, transactional_id: str) -> None:
        """Stop delivering the markers of ``transactional_id`` (on_complete is not called)."""
        entry = self._pending.pop(transactional_id, None)
        if entry is not None:
            self._cancel_timers(entry)

    def pending(self) -> dict[str, tuple[TopicPartition, ...]]:
        """Transactional id -> partitions still waiting for their marker."""
        return {tid: tuple(sorted(e.remaining)) for tid, e in self._pending.items()}

    def close(self) -> None:
        """Drop every pending delivery (the broker is shutting down or crashed)."""
        self._closed = True
        for entry in self._pending.values():
            self._cancel_timers(entry)
        self._pending.clear()

    def deliver(self, marker: TxnMarker, respond: Callable[[MarkerResponse], None]) -> None:
        """Hand ``marker`` to the handler and pass its answer to ``respond``.

        The override point for fault injection: a subclass may drop (never respond; the request
        times out), delay (respond later), duplicate (deliver twice) or reorder deliveries.
        ``respond`` ignores answers that are stale or repeated.
        """
        try:
            response: MarkerResponse = self._handler.write_txn_markers(marker)
        except Exception:
            log.exception("marker handler failed for %s; retrying", marker)
            response = {}
        respond(response)

    # --- delivery loop ------------------------------------------------------------------------

    def _is_current(self, entry: _PendingTxn) -> bool:
        return not self._closed and self._pending.get(entry.marker.transactional_id) is entry

    def _schedule(self, entry: _PendingTxn, delay_ms: int) -> None:
        entry.timers.append(self._clock.schedule(delay_ms, lambda: self._dispatch(entry)))

    def _dispatch(self, entry: _PendingTxn) -> None:
        if not self._is_current(entry) or entry.in_flight:
            return
        if not entry.remaining:
            self._finish(entry)
            return
        entry.attempt += 1
        entry.in_flight = True
        attempt = entry.attempt
        marker = replace(entry.marker, partitions=tuple(sorted(entry.remaining)))
        entry.timers.append(
            self._clock.schedule(
                self._request_timeout_ms, lambda: self._on_response(entry, attempt, marker, {})
            )
        )
        self.deliver(marker, lambda response: self._on_response(entry, attempt, marker, response))

    def _on_response(
        self, entry: _PendingTxn, attempt: int, marker: TxnMarker, response: MarkerResponse
    ) -> None:
        if not self._is_current(entry) or attempt != entry.attempt or not entry.in_flight:
            return  # a stale, duplicated or timed-out answer
        entry.in_flight = False
        self._cancel_timers(entry)
        retry = False
        for tp in marker.partitions:
            error = response.get(tp, ErrorCode.REQUEST_TIMED_OUT)
            if error in DONE_ERRORS:
                entry.remaining.discard(tp)
            elif error in STOP_ERRORS:
                log.info("stop sending markers %s: %s on %s", marker, error.name, tp)
                self.cancel(marker.transactional_id)
                return
            else:
                log.info(
                    "marker %s for %s failed with %s; retrying", marker.result.name, tp, error.name
                )
                retry = True
        if retry:
            self._schedule(entry, self._retry_backoff_ms)
        else:
            self._finish(entry)

    def _finish(self, entry: _PendingTxn) -> None:
        # Removed by value, so a newer entry for the same id is never dropped (KAFKA-16352).
        if self._pending.get(entry.marker.transactional_id) is entry:
            del self._pending[entry.marker.transactional_id]
        self._cancel_timers(entry)
        entry.on_complete()

    @staticmethod
    def _cancel_timers(entry: _PendingTxn) -> None:
        for timer in entry.timers:
            timer.cancel()
        entry.timers.clear()
