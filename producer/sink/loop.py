"""``WorkerShareSinkTask``: one sink task driven by a share consumer (KIP-1302's main loop).

poll → convert → ``put`` (+ ``flush``) → acknowledge → commit, one batch at a time.

Convert: each record's key, value and headers go through the connector's converters
(``producer.sink.converters``); a record that fails is handled by ``errors.tolerance``
(``producer.sink.errors``): rejected (and dead-lettered) with ``all``, the task fails with
``none``.  With ``topics.regex`` the task subscribes to the matching topics and looks again
every ``metadata.max.age.ms``.  Then:

- success: ACCEPT (a record the task reported with ``context.report`` is rejected instead);
- ``RetriableException``: RELEASE, so the broker redelivers the record with a higher
  delivery count; at ``share.max.delivery.count`` the record is rejected instead (a release
  there would let the broker archive it silently);
- any other exception: REJECT;
- a rejected record is first written to the dead-letter topic when one is configured.

When a batch of several records fails, its records are put again one at a time, so each
record gets its own outcome (a poison record does not drag its batch to the dead-letter
topic).  Outputs a failed ``put`` wrote through ``context.send`` are dropped.

Commit, ``at-least-once``: dead-letter records and outputs are produced and flushed, then the
acknowledgements are sent: with ``commit_sync`` after each batch (``explicit``) or on the
next ShareFetch (``implicit``).  If an output cannot be written, the batch's accepted records
are released instead.  ``exactly-once``: one transaction per batch holds the outputs, the
dead-letter records and the share acknowledgements (KIP-1289); an aborted transaction
returns the records to the group with their delivery counts.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from producer.admin import Admin
from producer.consumer.share_consumer import ShareConsumer
from producer.produce.transactional_producer import RecordMetadata, TransactionalProducer
from producer.produce.txn_manager import TxnState
from producer.protocol.types import AcknowledgeType, Record
from producer.sink.config import CONVERTER_KEYS, SinkConfig
from producer.sink.converters import BYTE_ARRAY_CONVERTER, Converter, load_converter
from producer.sink.dlq import DeadLetterQueue
from producer.sink.errors import Stage, StageError, ToleranceExceeded
from producer.sink.metrics import SinkTaskMetrics
from producer.sink.task import (
    OutputRecord,
    RetriableException,
    SinkRecord,
    SinkTask,
    SinkTaskContext,
)
from txn.errors import KafkaProtocolError, RetriableError

__all__ = ["Outcome", "TaskStartError", "WorkerShareSinkTask"]

log = logging.getLogger("producer.sink")

POLL_TIMEOUT_S = 0.5
_COMMIT_ATTEMPTS = 5


class TaskStartError(Exception):
    """A task's ``start`` (or the worker's setup of it) failed."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happens to one polled record."""

    record: Record
    ack: AcknowledgeType
    error: BaseException | None = None


@dataclass(slots=True)
class _Batch:
    outcomes: list[Outcome]
    outputs: list[OutputRecord]


def _key(r: SinkRecord | Record) -> tuple[str, int, int]:
    return (r.topic, r.partition, r.offset)


class WorkerShareSinkTask:
    """One task: its own ShareConsumer, its own producer, its own thread (``run``)."""

    def __init__(
        self,
        config: SinkConfig,
        task_id: int,
        task_class: Callable[[], SinkTask],
        metrics: SinkTaskMetrics,
        stop: threading.Event,
        delivery_limit: int,
    ) -> None:
        self.config = config
        self.task_id = task_id
        self._task_class = task_class
        self.metrics = metrics
        self._stop = stop
        self.delivery_limit = delivery_limit
        self.started = threading.Event()
        self.error: BaseException | None = None
        self._consumer: ShareConsumer | None = None
        self._producer: TransactionalProducer | None = None
        self._dlq: DeadLetterQueue | None = None
        self._converters: dict[str, tuple[str, Converter]] = {}
        self._topics: Admin | None = None  # looks up topics.regex's topics
        self._next_lookup = 0.0
        #: the topics this task received records from (Connect's active topics, KIP-558)
        self.active_topics: set[str] = set()

    # -- lifecycle --------------------------------------------------------------------------

    def run(self) -> None:
        """Start the task, loop until ``stop`` is set, then stop it; errors go to ``error``."""
        task: SinkTask | None = None
        try:
            task = self._start()
            self.started.set()
            while not self._stop.is_set():
                self.iterate(task)
        except BaseException as exc:
            self.error = exc
            if not self.started.is_set():
                log.error("%s task %d failed to start: %s", self.config.name, self.task_id, exc)
            else:
                log.exception("%s task %d failed", self.config.name, self.task_id)
        finally:
            self.started.set()
            self._close(task)

    def _start(self) -> SinkTask:
        cfg = self.config
        task = self._task_class()
        context = SinkTaskContext(cfg.name, self.task_id, cfg.task)
        task.initialize(context)
        if cfg.dlq_topic is not None:
            self._dlq = DeadLetterQueue(
                cfg.dlq_topic, cfg.name, self.task_id, type(task), cfg.dlq_context_headers
            )
        if cfg.exactly_once:
            producer = TransactionalProducer(cfg.producer_config(self.task_id, transactional=True))
            self._producer = producer
            producer.init_transactions()
        try:
            task.start(dict(cfg.task))
        except Exception as exc:
            raise TaskStartError(
                f"task {self.task_id} of {cfg.name} ({cfg.connector_class}) failed in start(): "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        for key in CONVERTER_KEYS:
            name = cfg.converters.get(key, BYTE_ARRAY_CONVERTER)
            self._converters[key] = (name, load_converter(key, name, cfg.task))
        consumer = ShareConsumer(cfg.consumer_config())
        self._consumer = consumer
        if cfg.topics_regex is None:
            consumer.subscribe(cfg.topics)
        else:
            self._topics = Admin(
                {
                    "bootstrap.servers": cfg.bootstrap_servers,
                    "client.id": f"connector-topics-{cfg.name}-{self.task_id}",
                }
            )
            self._match_topics(consumer)
        return task

    def _match_topics(self, consumer: ShareConsumer) -> None:
        """Subscribe to the topics ``topics.regex`` matches now (none: unsubscribed)."""
        assert self._topics is not None
        cfg = self.config
        self._next_lookup = time.monotonic() + cfg.metadata_max_age_ms / 1000
        try:
            matched = cfg.matching(list(self._topics.list_topics()))
        except KafkaProtocolError as exc:
            log.warning("%s task %d: topics not listed: %s", cfg.name, self.task_id, exc)
            return
        if set(matched) != consumer.subscription():
            log.info(
                "%s task %d: topics.regex=%s matches %s",
                cfg.name,
                self.task_id,
                cfg.topics_regex,
                ",".join(matched) or "no topic",
            )
            consumer.subscribe(matched)

    def _close(self, task: SinkTask | None) -> None:
        if task is not None:
            try:
                task.stop()
            except Exception:
                log.exception("%s task %d: stop() failed", self.config.name, self.task_id)
        if self._consumer is not None:
            self._consumer.close()
        if self._producer is not None:
            self._producer.close()
        if self._topics is not None:
            self._topics.close()

    # -- one iteration ----------------------------------------------------------------------

    def iterate(self, task: SinkTask) -> None:
        """Poll once; deliver, acknowledge and commit what came."""
        consumer = self._consumer
        assert consumer is not None
        if self._topics is not None and time.monotonic() >= self._next_lookup:
            self._match_topics(consumer)
        if not consumer.subscription():
            self._stop.wait(POLL_TIMEOUT_S)  # topics.regex matches nothing yet
            return
        records = consumer.poll(POLL_TIMEOUT_S)
        if not records:
            return
        polled_at = time.monotonic()
        redelivered = sum(1 for r in records if r.delivery_count > 1)
        self.active_topics.update(r.topic for r in records)
        self.metrics.acquired(len(records), redelivered)
        batch = self._deliver(task, records)
        if self.config.exactly_once:
            outcomes, dlq = self._commit_transaction(consumer, batch)
        else:
            outcomes, dlq = self._commit_at_least_once(consumer, batch)
        counts = dict.fromkeys(AcknowledgeType, 0)
        for o in outcomes:
            counts[o.ack] += 1
        self.metrics.settled(
            accepted=counts[AcknowledgeType.ACCEPT],
            released=counts[AcknowledgeType.RELEASE],
            rejected=counts[AcknowledgeType.REJECT],
            dlq=dlq,
            elapsed_ms=(time.monotonic() - polled_at) * 1000,
        )

    def _put(
        self, task: SinkTask, records: list[SinkRecord]
    ) -> tuple[BaseException | None, list[OutputRecord], dict[tuple[str, int, int], BaseException]]:
        context = task.context
        context.worker_begin()
        try:
            task.put(records)
            task.flush()
        except Exception as exc:
            context.worker_take()
            return exc, [], {}
        outputs, errant = context.worker_take()
        return None, outputs, {_key(r): e for r, e in errant}

    def _convert(self, record: Record) -> SinkRecord | StageError:
        """The convert step; a failure tolerated by ``errors.tolerance=all`` is returned."""
        raw = SinkRecord.from_record(record)
        if all(name == BYTE_ARRAY_CONVERTER for name, _c in self._converters.values()):
            return raw
        errors = self.config.errors
        topic = record.topic

        def through(key: str, stage: Stage, data: bytes | None) -> Any:
            name, converter = self._converters[key]
            return errors.run(lambda: converter.to_connect(topic, data), stage, name)

        try:
            key = through("key.converter", Stage.KEY_CONVERTER, record.key)
            value = through("value.converter", Stage.VALUE_CONVERTER, record.value)
            headers = tuple(
                (k, through("header.converter", Stage.HEADER_CONVERTER, v))
                for k, v in record.headers
            )
        except StageError as failure:
            where = (
                f"{{topic='{topic}', partition={record.partition}, offset={record.offset}, "
                f"timestamp={record.timestamp}}}"
            )
            errors.report(f"{self.config.name}-{self.task_id}", failure, where)
            if not errors.tolerates:
                raise ToleranceExceeded(failure) from failure.error
            return failure
        return dataclasses.replace(raw, key=key, value=value, headers=headers)

    def _deliver(self, task: SinkTask, polled: list[Record]) -> _Batch:
        converted = [(r, self._convert(r)) for r in polled]
        unconverted = [
            Outcome(r, AcknowledgeType.REJECT, c) for r, c in converted if isinstance(c, StageError)
        ]
        if unconverted:
            log.warning(
                "%s task %d: rejecting %d records their converters failed",
                self.config.name,
                self.task_id,
                len(unconverted),
            )
        good = [(r, c) for r, c in converted if not isinstance(c, StageError)]
        batch = self._deliver_converted(task, [r for r, _ in good], [c for _, c in good])
        batch.outcomes.extend(unconverted)
        return batch

    def _deliver_converted(
        self, task: SinkTask, records: list[Record], sink_records: list[SinkRecord]
    ) -> _Batch:
        if not records:
            return _Batch([], [])
        error, outputs, errant = self._put(task, sink_records)
        if error is None:
            return _Batch(
                [self._accepted(r, errant.get(_key(r))) for r in records],
                outputs,
            )
        if len(records) == 1:
            return _Batch([self._failed(records[0], error)], [])
        log.info(
            "%s task %d: put() of %d records failed (%s: %s); retrying them one by one",
            self.config.name,
            self.task_id,
            len(records),
            type(error).__name__,
            error,
        )
        batch = _Batch([], [])
        for record, sink_record in zip(records, sink_records, strict=True):
            one_error, one_outputs, one_errant = self._put(task, [sink_record])
            if one_error is None:
                batch.outcomes.append(self._accepted(record, one_errant.get(_key(record))))
                batch.outputs.extend(one_outputs)
            else:
                batch.outcomes.append(self._failed(record, one_error))
        return batch

    def _accepted(self, record: Record, reported: BaseException | None) -> Outcome:
        if reported is None:
            return Outcome(record, AcknowledgeType.ACCEPT)
        return Outcome(record, AcknowledgeType.REJECT, reported)

    def _failed(self, record: Record, error: BaseException) -> Outcome:
        if isinstance(error, RetriableException) and record.delivery_count < self.delivery_limit:
            return Outcome(record, AcknowledgeType.RELEASE, error)
        log.warning(
            "%s task %d: rejecting %s-%d@%d (delivery %d): %s: %s",
            self.config.name,
            self.task_id,
            record.topic,
            record.partition,
            record.offset,
            record.delivery_count,
            type(error).__name__,
            error,
        )
        return Outcome(record, AcknowledgeType.REJECT, error)

    def _dead_letters(self, outcomes: list[Outcome]) -> dict[int, OutputRecord]:
        """The dead-letter record of each rejected outcome, by its index."""
        if self._dlq is None:
            return {}
        return {
            i: self._dlq.record(o.record, o.error)
            for i, o in enumerate(outcomes)
            if o.ack is AcknowledgeType.REJECT and o.error is not None
        }

    # -- at-least-once ----------------------------------------------------------------------

    def _plain_producer(self) -> TransactionalProducer:
        if self._producer is None:
            self._producer = TransactionalProducer(
                self.config.producer_config(self.task_id, transactional=False)
            )
        return self._producer

    def _produce(self, records: list[OutputRecord]) -> list[bool]:
        """Produce and wait; for each record whether it was written."""
        if not records:
            return []
        producer = self._plain_producer()
        futures: list[Future[RecordMetadata] | None] = []
        for r in records:
            try:
                futures.append(_send(producer, r))
            except KafkaProtocolError:
                log.exception(
                    "%s task %d: cannot produce to %s", self.config.name, self.task_id, r.topic
                )
                futures.append(None)
        try:
            producer.flush()
        except RetriableError:
            log.warning("%s task %d: producer flush timed out", self.config.name, self.task_id)
        return [f is not None and f.done() and f.exception() is None for f in futures]

    def _commit_at_least_once(
        self, consumer: ShareConsumer, batch: _Batch
    ) -> tuple[list[Outcome], int]:
        outcomes = list(batch.outcomes)
        dead = self._dead_letters(outcomes)
        written = dict(zip(dead, self._produce(list(dead.values())), strict=True))
        for i, ok in written.items():
            if not ok:
                # A record whose dead letter was not written is released, never dropped.
                outcomes[i] = Outcome(
                    outcomes[i].record, AcknowledgeType.RELEASE, outcomes[i].error
                )
        self.metrics.dlq_failed(sum(1 for ok in written.values() if not ok))
        if batch.outputs and not all(self._produce(batch.outputs)):
            log.warning(
                "%s task %d: outputs not written; releasing the batch's accepted records",
                self.config.name,
                self.task_id,
            )
            outcomes = [
                Outcome(o.record, AcknowledgeType.RELEASE) if o.ack is AcknowledgeType.ACCEPT else o
                for o in outcomes
            ]
        for o in outcomes:
            consumer.acknowledge(o.record, o.ack)
        if self.config.acknowledgement_mode == "explicit":
            for tp, error in consumer.commit_sync().items():
                if error is not None:
                    log.warning(
                        "%s task %d: acknowledgements on %s failed (%s); the records will be "
                        "redelivered",
                        self.config.name,
                        self.task_id,
                        tp,
                        error,
                    )
        return outcomes, sum(1 for ok in written.values() if ok)

    # -- exactly-once -----------------------------------------------------------------------

    def _commit_transaction(
        self, consumer: ShareConsumer, batch: _Batch
    ) -> tuple[list[Outcome], int]:
        producer = self._producer
        assert producer is not None
        outcomes = batch.outcomes
        for o in outcomes:
            consumer.acknowledge(o.record, o.ack)
        acks = consumer.acknowledgements()
        dead = self._dead_letters(outcomes)
        try:
            producer.begin_transaction()
            for r in [*batch.outputs, *dead.values()]:
                _send(producer, r)
            producer.send_share_acks_to_transaction(acks, consumer.group_metadata())
            self._commit(producer)
        except KafkaProtocolError as exc:
            if producer.transaction_state is TxnState.FATAL_ERROR:
                raise
            log.warning(
                "%s task %d: transaction aborted (%s: %s); %d records return to the group",
                self.config.name,
                self.task_id,
                type(exc).__name__,
                exc,
                len(outcomes),
            )
            self._abort(producer)
            released = [Outcome(o.record, AcknowledgeType.RELEASE, exc) for o in outcomes]
            return released, 0
        return outcomes, len(dead)

    def _commit(self, producer: TransactionalProducer) -> None:
        _retry(
            producer.commit_transaction,
            lambda: producer.transaction_state is TxnState.COMMITTING,
        )

    def _abort(self, producer: TransactionalProducer) -> None:
        _retry(producer.abort_transaction, lambda: True)


def _send(producer: TransactionalProducer, r: OutputRecord) -> Future[RecordMetadata]:
    return producer.send(
        r.topic, r.value, key=r.key, headers=list(r.headers), timestamp_ms=r.timestamp_ms
    )


def _retry(end_transaction: Callable[[], None], may_retry: Callable[[], bool]) -> None:
    """``end_transaction``, again after a retriable error while ``may_retry()`` (a bounded few)."""
    for attempt in range(_COMMIT_ATTEMPTS):
        try:
            end_transaction()
            return
        except RetriableError:
            if not may_retry() or attempt == _COMMIT_ATTEMPTS - 1:
                raise
