"""The background sender: drains ready batches and produces them to partition leaders.

One thread, one request at a time per leader, each request waited for before the next
(``KafkaClient`` connections carry one request at a time anyway).  So at most one batch per
partition is ever in flight: a retried batch is re-sent unchanged (same producer id, epoch
and sequence numbers) before any later batch of its partition, which keeps order without
the five-in-flight bookkeeping of the Java client.  Sequence numbers are assigned when a
batch is first sent, so a batch that certainly failed can give its numbers back.

For a transactional producer the sender first adds new partitions to the transaction with
one AddPartitionsToTxn (v0-v3) for every partition that has data waiting, retrying
CONCURRENT_TRANSACTIONS and coordinator errors until the batches' delivery timeout.

A batch of several records refused with MESSAGE_TOO_LARGE is split and its parts sent
instead (Kafka's ``splitAndReenqueue``); one record too large fails with MessageTooLargeError.

Errors: retriable ones are retried until ``delivery.timeout.ms``; PRODUCER_FENCED and the
other ``FATAL_CODES`` make the producer fatal; the rest fail the batch and, in a transaction,
make the transaction abortable.  A batch whose fate is unknown (a network error, then
expiry) or OUT_OF_ORDER_SEQUENCE_NUMBER / UNKNOWN_PRODUCER_ID needs a new epoch (KIP-360):
an idempotent producer fetches a new producer id before sending more; a transactional one
bumps its epoch when the transaction is aborted.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from producer.produce.accumulator import ProducerBatch, RecordAccumulator
from producer.produce.txn_manager import FATAL_CODES, TransactionManager, TxnState
from txn.api_keys import ApiKey
from txn.batch import NO_SEQUENCE, build_batch
from txn.errors import (
    ErrorCode,
    KafkaProtocolError,
    NetworkError,
    NotCoordinatorError,
    ProducerFencedError,
    RequestTimedOutError,
    RetriableError,
    error_for_code,
)
from txn.ids import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TopicPartition

__all__ = ["ProducerClient", "Sender", "SenderConfig", "fenced_or_typed"]

log = logging.getLogger("sharetxn.producer")

T = TypeVar("T")

KEY_TYPE_TRANSACTION = 1

# Codes of AddPartitionsToTxn that end the producer, beyond FATAL_CODES (as Java's handler).
_ADD_PARTITIONS_FATAL = FATAL_CODES | {
    ErrorCode.INVALID_TXN_STATE,
    ErrorCode.INVALID_PRODUCER_ID_MAPPING,
}
_SEQUENCE_LOST = frozenset({ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.UNKNOWN_PRODUCER_ID})
_CONCURRENT_BACKOFF_S = 0.02


class ProducerClient(Protocol):
    """What the producer needs of ``producer.protocol.client.KafkaClient`` (tests pass a fake)."""

    def send(
        self, node_id: int | None, api_key: ApiKey, body: Mapping[str, Any], *, min_version: int = 0
    ) -> Any: ...

    def call(self, fn: Callable[[], T], *, timeout_ms: int | None = None) -> T: ...

    def leader_for(self, tp: TopicPartition) -> int: ...

    def coordinator_for(self, key_type: int, key: str) -> int: ...

    def forget_coordinator(self, key_type: int, key: str) -> None: ...

    def require_kip1289(self, api_key: ApiKey, node_id: int | None = None) -> None: ...

    def topic(self, name: str, *, auto_create: bool = False) -> Any: ...

    def refresh_metadata(
        self, topics: list[str] | None = None, *, auto_create: bool = False
    ) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class SenderConfig:
    """The settings the sender acts on (parsed from the producer's Kafka config)."""

    transactional_id: str | None
    idempotent: bool
    acks: int
    request_timeout_ms: int
    delivery_timeout_ms: int
    retry_backoff_ms: int
    transaction_timeout_ms: int
    two_phase_commit: bool
    compression: int = 0  # the codec id of compression.type


def fenced_or_typed(code: int, message: str | None, **ids: Any) -> KafkaProtocolError:
    """The exception for ``code``; INVALID_PRODUCER_EPOCH means fenced for a transactional id."""
    if code == ErrorCode.INVALID_PRODUCER_EPOCH and ids.get("transactional_id") is not None:
        return ProducerFencedError(message or "producer epoch is stale: fenced", **ids)
    return error_for_code(code)(message, **ids)


class Sender:
    """Drains the accumulator in a background thread (``start``), or step by step (``run_once``)."""

    def __init__(
        self,
        client: ProducerClient,
        accumulator: RecordAccumulator,
        txn: TransactionManager,
        config: SenderConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.acc = accumulator
        self.txn = txn
        self.config = config
        self.clock = clock
        self._backoff_s = config.retry_backoff_ms / 1000
        self._delivery_timeout_s = config.delivery_timeout_ms / 1000
        self._add_retry_at = 0.0
        self._force_closed = False
        self._thread: threading.Thread | None = None

    # -- thread -----------------------------------------------------------------------------

    def start(self, name: str) -> None:
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                wait = self.run_once()
            except Exception:
                log.exception("producer sender loop failed; retrying")
                wait = self._backoff_s
            if self._force_closed or (self.acc.closing and not self.acc.has_incomplete()):
                return
            self.acc.wait_for_work(wait)

    def join(self, timeout_s: float | None) -> bool:
        """Wait for the thread to end; True if it did."""
        if self._thread is None:
            return True
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def force_close(self) -> None:
        self._force_closed = True
        self.acc.wake()

    # -- one pass ---------------------------------------------------------------------------

    def run_once(self) -> float | None:
        """Send what is ready; returns seconds until the next pass is due (None: on wake-up)."""
        now = self.clock()
        if self._fail_waiting_on_error():
            return None
        for batch in self.acc.take_expired(now, self._delivery_timeout_s):
            self._expire(batch, None)
        if (
            self.config.idempotent
            and not self.txn.is_transactional
            and (not self.txn.has_producer_id or self.txn.needs_epoch_bump)
        ):
            if not self.acc.has_incomplete():
                return None
            if not self._init_idempotent_producer():
                return self._backoff_s
        ready, wait = self.acc.ready(now)
        if not ready:
            return wait
        if self.txn.is_transactional:
            if now < self._add_retry_at:
                return self._add_retry_at - now
            to_add = self.txn.partitions_to_add(self.acc.queued_partitions() | set(ready))
            if to_add and not self._add_partitions(to_add):
                # After an error, go round again at once: the next pass fails every waiting
                # batch (waiting for a wake-up instead would leave their futures open, and a
                # flush hanging until its timeout).
                return 0.0 if self.txn.has_error else max(self._add_retry_at - now, 0.0)
            ready = [tp for tp in ready if self.txn.is_added(tp)]
        batches = self.acc.drain(ready)
        by_leader: dict[int, list[ProducerBatch]] = {}
        for batch in batches:
            try:
                self._encode(batch)
                leader = self.client.leader_for(batch.tp)
            except KafkaProtocolError as exc:
                self._on_error(batch, exc)
                continue
            except Exception as exc:
                # A drained batch must never be left in flight: fail it, never retry it.
                log.exception("cannot send a batch to %s", batch.tp)
                self._fail_unexpected(batch, exc)
                continue
            by_leader.setdefault(leader, []).append(batch)
        for leader, group in by_leader.items():
            self._produce(leader, group)
        return 0.0

    def _fail_waiting_on_error(self) -> bool:
        """In ABORTABLE_ERROR / FATAL_ERROR nothing more is sent: fail every waiting batch."""
        if not self.txn.has_error:
            return False
        error = self.txn.last_error
        assert error is not None
        for batch in self.acc.take_undrained():
            self.acc.fail(batch, error)
        return True

    def fail_everything(self, error: BaseException) -> None:
        """Force close: resolve every waiting batch with ``error``."""
        for batch in self.acc.take_undrained():
            self.acc.fail(batch, error)

    # -- producer id ------------------------------------------------------------------------

    def _init_idempotent_producer(self) -> bool:
        """InitProducerId without a transactional id: a new id, every sequence back to 0."""
        body = {
            "transactional_id": None,
            "transaction_timeout": self.config.transaction_timeout_ms,
            "producer_id": NO_PRODUCER_ID,
            "producer_epoch": NO_PRODUCER_EPOCH,
        }
        if self.txn.state is TxnState.UNINITIALIZED or self.txn.state is TxnState.READY:
            self.txn.transition(TxnState.INITIALIZING)
        try:
            resp = self.client.send(None, ApiKey.INIT_PRODUCER_ID, body)
            code = int(resp.error_code)
            if code != ErrorCode.NONE:
                raise error_for_code(code)(None, api="InitProducerId")
        except RetriableError as exc:
            log.info("idempotent InitProducerId failed (%s); retrying", exc)
            return False
        except KafkaProtocolError as exc:
            self.txn.fatal_error(exc)
            return False
        self.txn.set_producer_id_and_epoch(int(resp.producer_id), int(resp.producer_epoch))
        self.txn.transition(TxnState.READY)
        return True

    # -- AddPartitionsToTxn -----------------------------------------------------------------

    def _add_partitions(self, partitions: set[TopicPartition]) -> bool:
        """Add ``partitions`` to the transaction; False if not (yet) done."""
        tid = self.config.transactional_id
        assert tid is not None
        pid, epoch = self.txn.producer_id_and_epoch
        topics: dict[str, list[int]] = {}
        for tp in sorted(partitions):
            topics.setdefault(tp.topic, []).append(tp.partition)
        body = {
            "v3_and_below_transactional_id": tid,
            "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        }
        ids = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch}
        try:
            node = self.client.coordinator_for(KEY_TYPE_TRANSACTION, tid)
            resp = self.client.send(node, ApiKey.ADD_PARTITIONS_TO_TXN, body)
        except RetriableError as exc:
            self.client.forget_coordinator(KEY_TYPE_TRANSACTION, tid)
            log.info("AddPartitionsToTxn failed (%s); retrying", exc)
            self._add_retry_at = self.clock() + self._backoff_s
            return False
        except KafkaProtocolError as exc:
            self.txn.fatal_error(exc)
            return False
        added: set[TopicPartition] = set()
        worst: tuple[int, KafkaProtocolError] | None = None
        for topic in resp.results_by_topic_v3_and_below:
            for result in topic.results_by_partition:
                tp = TopicPartition(topic.name, int(result.partition_index))
                code = int(result.partition_error_code)
                if code == ErrorCode.NONE:
                    added.add(tp)
                    continue
                if code == ErrorCode.OPERATION_NOT_ATTEMPTED:
                    continue
                error = fenced_or_typed(code, None, topic=tp.topic, partition=tp.partition, **ids)
                rank = _severity(error, _ADD_PARTITIONS_FATAL)
                if worst is None or rank > worst[0]:
                    worst = (rank, error)
        self.txn.partitions_added(added)
        if worst is None:
            return not self.txn.partitions_to_add(partitions)
        rank, error = worst
        if rank == _FATAL:
            self.txn.fatal_error(error)
        elif rank == _ABORTABLE:
            self.txn.abortable_error(error)
        else:
            if isinstance(error, NotCoordinatorError) or error.code in (
                ErrorCode.COORDINATOR_NOT_AVAILABLE,
                ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
            ):
                self.client.forget_coordinator(KEY_TYPE_TRANSACTION, tid)
            backoff = (
                _CONCURRENT_BACKOFF_S
                if error.code is ErrorCode.CONCURRENT_TRANSACTIONS
                else self._backoff_s
            )
            self._add_retry_at = self.clock() + backoff
        return False

    # -- Produce ----------------------------------------------------------------------------

    def _encode(self, batch: ProducerBatch) -> None:
        """Encode on the first send; retries reuse the bytes (and sequence numbers)."""
        if batch.payload is not None:
            return
        pid, epoch = NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        base_sequence = NO_SEQUENCE
        if self.config.idempotent:
            pid, epoch = self.txn.producer_id_and_epoch
            base_sequence = self.txn.next_sequence(batch.tp, batch.record_count)
        try:
            payload = build_batch(
                batch.records,
                timestamp_ms=batch.timestamp_ms,
                timestamps=batch.record_timestamps(),
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=base_sequence,
                transactional=self.txn.is_transactional,
                headers=batch.headers if any(batch.headers) else None,
                compression=self.config.compression,
            )
        except Exception:
            if base_sequence != NO_SEQUENCE:
                self.txn.rollback_sequence(batch.tp, base_sequence)
            raise
        batch.base_sequence = base_sequence
        batch.payload = payload

    def _produce(self, leader: int, batches: list[ProducerBatch]) -> None:
        topics: dict[str, list[dict[str, Any]]] = {}
        for batch in batches:
            batch.attempts += 1
            topics.setdefault(batch.tp.topic, []).append(
                {"index": batch.tp.partition, "records": batch.payload}
            )
        body = {
            "transactional_id": self.config.transactional_id,
            "acks": self.config.acks,
            "timeout": self.config.request_timeout_ms,
            "topic_data": [{"name": t, "partition_data": ps} for t, ps in topics.items()],
        }
        try:
            resp = self.client.send(leader, ApiKey.PRODUCE, body, min_version=3)
        except (RetriableError, OSError) as exc:
            error = exc if isinstance(exc, RetriableError) else NetworkError(str(exc))
            for batch in batches:
                batch.maybe_written = True
                self._on_error(batch, error)
            return
        except KafkaProtocolError as exc:
            for batch in batches:
                self._on_error(batch, exc)
            return
        except Exception as exc:
            # E.g. an undecodable response: the request may have been written.
            log.exception("produce to node %s failed", leader)
            for batch in batches:
                batch.maybe_written = True
                self._on_error(batch, NetworkError(f"produce failed: {exc!r}", node=leader))
            return
        results: dict[TopicPartition, Any] = {}
        for topic in resp.responses:
            for part in topic.partition_responses:
                results[TopicPartition(topic.name, int(part.index))] = part
        for batch in batches:
            part = results.get(batch.tp)
            if part is None:
                missing = NetworkError(
                    "no response for the partition",
                    topic=batch.tp.topic,
                    partition=batch.tp.partition,
                )
                batch.maybe_written = True
                self._on_error(batch, missing)
                continue
            code = int(part.error_code)
            if code in (ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER):
                # A duplicate was written before: the broker answers with the first offset.
                self.acc.complete(batch, int(part.base_offset), _log_append_time_ms(part))
                continue
            if code == ErrorCode.MESSAGE_TOO_LARGE and batch.record_count > 1:
                self._split(batch)
                continue
            message = getattr(part, "error_message", None)
            self._on_error(batch, fenced_or_typed(code, message, **self._ids(batch)))

    def _split(self, batch: ProducerBatch) -> None:
        """MESSAGE_TOO_LARGE for a batch of several records: split it and send the parts, as
        Kafka's Sender does (not counted as a retry); a single record too large fails."""
        # Nothing of the batch was written: its sequence numbers go to the parts.
        if batch.base_sequence != NO_SEQUENCE:
            self.txn.rollback_sequence(batch.tp, batch.base_sequence)
        parts = self.acc.split_and_reenqueue(batch)
        log.warning(
            "%s refused a batch of %d records as too large; split it into %d and retrying",
            batch.tp,
            batch.record_count,
            parts,
        )

    def _ids(self, batch: ProducerBatch) -> dict[str, Any]:
        pid, epoch = self.txn.producer_id_and_epoch
        return {
            "topic": batch.tp.topic,
            "partition": batch.tp.partition,
            "transactional_id": self.config.transactional_id,
            "producer_id": pid,
            "producer_epoch": epoch,
        }

    def _on_error(self, batch: ProducerBatch, exc: KafkaProtocolError) -> None:
        now = self.clock()
        if isinstance(exc, RetriableError):
            if now >= batch.created + self._delivery_timeout_s or self._force_closed:
                self._expire(batch, exc)
                return
            if exc.code in (
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                ErrorCode.LEADER_NOT_AVAILABLE,
                ErrorCode.NETWORK_EXCEPTION,
            ):
                self._refresh_metadata(batch.tp.topic)
            self.acc.reenqueue(batch, now + self._backoff_s)
            return
        if exc.code in FATAL_CODES:
            self.txn.fatal_error(exc)
            self.acc.fail(batch, exc)
            return
        if exc.code in _SEQUENCE_LOST:
            self.txn.request_epoch_bump()
        elif batch.base_sequence != NO_SEQUENCE:
            self.txn.rollback_sequence(batch.tp, batch.base_sequence)
        self.acc.fail(batch, exc)
        self.txn.abortable_error(exc)

    def _fail_unexpected(self, batch: ProducerBatch, exc: Exception) -> None:
        if batch.payload is not None and batch.base_sequence != NO_SEQUENCE:
            self.txn.rollback_sequence(batch.tp, batch.base_sequence)
        self.acc.fail(batch, exc)
        self.txn.abortable_error(exc)

    def _expire(self, batch: ProducerBatch, cause: KafkaProtocolError | None) -> None:
        """delivery.timeout.ms is over: fail the batch; a maybe-written one costs its sequences."""
        detail = f" (last error: {cause})" if cause is not None else ""
        error = RequestTimedOutError(
            f"record batch not delivered within delivery.timeout.ms{detail}", **self._ids(batch)
        )
        if batch.payload is not None and batch.base_sequence != NO_SEQUENCE:
            if batch.maybe_written:
                self.txn.request_epoch_bump()
            else:
                self.txn.rollback_sequence(batch.tp, batch.base_sequence)
        self.acc.fail(batch, error)
        self.txn.abortable_error(error)

    def _refresh_metadata(self, topic: str) -> None:
        try:
            self.client.refresh_metadata([topic])
        except (KafkaProtocolError, OSError) as exc:
            log.debug("metadata refresh for %s failed: %s", topic, exc)


_RETRIABLE, _ABORTABLE, _FATAL = 0, 1, 2


def _severity(exc: KafkaProtocolError, fatal_codes: frozenset[ErrorCode]) -> int:
    if exc.code in fatal_codes:
        return _FATAL
    if isinstance(exc, RetriableError):
        return _RETRIABLE
    return _ABORTABLE


def _log_append_time_ms(part: Any) -> int | None:
    """A Produce partition answer's log append time in ms; None for a CreateTime topic (-1, or
    kio's no-time from v2, where the field is a timestamp)."""
    value = getattr(part, "log_append_time", None)
    if isinstance(value, datetime.datetime):
        return round(value.timestamp() * 1000)
    if isinstance(value, int) and value >= 0:
        return value
    return None
