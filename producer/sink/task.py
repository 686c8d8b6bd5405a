"""The task API of the sink worker, shaped like Kafka Connect's ``SinkTask`` (KIP-1302).

A sink task is a class with four methods that the worker calls from one thread::

    class Upsert(SinkTask):
        def start(self, config):        # the connector's properties, once
            self.table = connect(config["url"])
        def put(self, records):         # a batch of SinkRecords, many times
            self.table.upsert((r.key, r.value) for r in records)
        def flush(self):                # after each successful put, before acknowledging
            self.table.commit()
        def stop(self):                 # once, at the end (also after a failed start)
            self.table.close()

Contract (the worker's side):

- ``start`` is called once, before any ``put``; if it raises, the task never runs and the
  worker fails with that error.  ``stop`` is called once after the last ``put`` (also when
  ``start`` failed or ``put`` raised), never concurrently with another method.
- ``put`` gets records in no particular order and possibly again (share groups redeliver a
  record whose acknowledgement was lost): the sink must be idempotent or tolerate duplicates
  (at-least-once).  A record is acknowledged (ACCEPT) only after ``put`` *and* ``flush``
  returned, so a task may buffer in ``put`` and write in ``flush``.
- ``put`` raising ``RetriableException`` means "not now": the records are released and come
  back later (with a higher ``delivery_count``).  Any other exception means "never": the
  records are rejected (and written to the dead-letter topic when one is configured).  When
  a batch of several records fails, the worker retries its records one at a time to find
  the failing ones, so one poison record does not take its neighbours down with it.
- ``self.context.report(record, error)`` (Connect's errant record reporter) marks one record
  of the current ``put`` as failed without failing the batch.
- ``self.context.send(topic, value, key=None, headers=None)`` writes an output record; in
  ``share.delivery.semantics=exactly-once`` the worker commits the outputs of a batch and its
  share acknowledgements in one transaction (KIP-1289), so a Kafka-to-Kafka task must write
  through the context, never through a producer of its own.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from producer.protocol.types import Record

__all__ = [
    "ConnectException",
    "Headers",
    "OutputRecord",
    "RetriableException",
    "SinkRecord",
    "SinkTask",
    "SinkTaskContext",
    "load_object",
]

Headers = tuple[tuple[str, bytes | None], ...]


class ConnectException(Exception):
    """A task failure that no retry will cure (Connect's ``ConnectException``)."""


class RetriableException(ConnectException):
    """Raised by ``put`` when the records may succeed later: they are released, not rejected.

    Connect's ``org.apache.kafka.connect.errors.RetriableException``.
    """


@dataclass(frozen=True, slots=True)
class SinkRecord:
    """One record handed to ``SinkTask.put`` (Connect's ``SinkRecord`` plus the delivery count).

    ``key``, ``value`` and header values are what the connector's converters made of the
    record's bytes (``key.converter`` and the like, ``producer.sink.converters``): the bytes
    themselves with the default ``ByteArrayConverter``; ``timestamp`` is in milliseconds
    since the epoch (-1: none); ``delivery_count`` is 1 on the first delivery and grows with
    each redelivery.
    """

    topic: str
    partition: int
    offset: int
    key: Any
    value: Any
    headers: tuple[tuple[str, Any], ...] = ()
    timestamp: int = -1
    delivery_count: int = 1

    @classmethod
    def from_record(cls, record: Record) -> SinkRecord:
        """The convert step: a polled share-consumer record as a SinkRecord."""
        return cls(
            record.topic,
            record.partition,
            record.offset,
            record.key,
            record.value,
            tuple(record.headers),
            record.timestamp,
            record.delivery_count,
        )

    def header(self, name: str) -> Any:
        """The value of the last header called ``name`` (None if absent)."""
        for key, value in reversed(self.headers):
            if key == name:
                return value
        return None


@dataclass(frozen=True, slots=True)
class OutputRecord:
    """A record a task wrote with ``context.send``, waiting for the worker to produce it
    (``timestamp_ms``: its CreateTime, None: when produced)."""

    topic: str
    value: bytes | None
    key: bytes | None = None
    headers: Headers = ()
    timestamp_ms: int | None = None


def _as_bytes(value: object, what: str) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    msg = f"context.send(): {what} must be bytes, str or None, not {type(value).__name__}"
    raise TypeError(msg)


class SinkTaskContext:
    """What a task may ask of its worker (Connect's ``SinkTaskContext``).

    One context per task; its methods are for the task's own thread, during ``put``.
    """

    def __init__(self, connector_name: str, task_id: int, config: Mapping[str, str]) -> None:
        self.connector_name = connector_name
        self.task_id = task_id
        self._config = dict(config)
        self._outputs: list[OutputRecord] = []
        self._errant: list[tuple[SinkRecord, BaseException]] = []

    def configs(self) -> dict[str, str]:
        """The connector's properties (what ``start`` was given)."""
        return dict(self._config)

    def send(
        self,
        topic: str,
        value: bytes | str | None,
        key: bytes | str | None = None,
        headers: Sequence[tuple[str, bytes | str | None]] | None = None,
    ) -> None:
        """Write one output record; produced by the worker with this batch's acknowledgements."""
        if not isinstance(topic, str) or not topic.strip():
            msg = f"context.send(): invalid topic {topic!r}"
            raise ValueError(msg)
        hdrs: Headers = tuple((str(k), _as_bytes(v, f"header {k!r}")) for k, v in headers or ())
        self._outputs.append(
            OutputRecord(topic, _as_bytes(value, "value"), _as_bytes(key, "key"), hdrs)
        )

    def report(self, record: SinkRecord, error: BaseException) -> None:
        """Report one record of the current ``put`` as failed (Connect's errant record reporter).

        The record is rejected (and written to the dead-letter topic when one is configured);
        the rest of the batch is accepted if ``put`` returns normally.
        """
        self._errant.append((record, error))

    # -- the worker's side ------------------------------------------------------------------

    def worker_begin(self) -> None:
        self._outputs = []
        self._errant = []

    def worker_take(self) -> tuple[list[OutputRecord], list[tuple[SinkRecord, BaseException]]]:
        outputs, errant = self._outputs, self._errant
        self.worker_begin()
        return outputs, errant


class SinkTask:
    """Base class of sink tasks; see the module docstring for the contract."""

    context: SinkTaskContext

    def initialize(self, context: SinkTaskContext) -> None:
        """Called by the worker before ``start`` (as Connect's ``SinkTask.initialize``)."""
        self.context = context

    def version(self) -> str:
        return "0.0.0"

    def start(self, config: dict[str, str]) -> None:
        """Set up with the connector's properties."""

    def put(self, records: list[SinkRecord]) -> None:
        raise NotImplementedError

    def flush(self) -> None:
        """Make what ``put`` accepted durable; called before the records are acknowledged."""

    def stop(self) -> None:
        """Release resources; called once."""


def load_object(path: str, what: str) -> Any:
    """The object named by a dotted path ``package.module.Name`` (or ``package.module:Name``)."""
    module_name, sep, attr = path.replace(":", ".").rpartition(".")
    if not sep or not module_name or not attr:
        msg = f"{what} must be a dotted path package.module.Name, not {path!r}"
        raise ValueError(msg)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        msg = f"{what}={path}: cannot import {module_name}: {exc}"
        raise ValueError(msg) from None
    try:
        return getattr(module, attr)
    except AttributeError:
        msg = f"{what}={path}: {module_name} has no {attr!r}"
        raise ValueError(msg) from None


def load_task_class(path: str) -> Callable[[], SinkTask]:
    """``connector.class``: a SinkTask subclass by dotted path."""
    obj = load_object(path, "connector.class")
    if not isinstance(obj, type) or not issubclass(obj, SinkTask):
        msg = f"connector.class={path} is not a subclass of producer.sink.SinkTask"
        raise ValueError(msg)
    return obj
