"""The dead-letter queue: Kafka Connect's ``DeadLetterQueueReporter``, for share sinks.

A rejected record is written to ``errors.deadletterqueue.topic.name`` with its original key,
value and headers; with ``errors.deadletterqueue.context.headers.enable=true`` Connect's
error headers are added (values are UTF-8 text, as Connect writes them):

``__connect.errors.topic`` / ``.partition`` / ``.offset``
    where the record came from;
``__connect.errors.connector.name`` / ``.task.id``
    who failed it;
``__connect.errors.stage`` / ``.class.name``
    ``TASK_PUT`` and the task's class;
``__connect.errors.exception.class.name`` / ``.exception.message`` / ``.exception.stacktrace``
    the error.

The topic is created (one partition, ``errors.deadletterqueue.topic.replication.factor``)
when it does not exist, as Connect does.  The record is written before it is rejected; in
``exactly-once`` mode it is written inside the batch's transaction.
"""

from __future__ import annotations

import traceback
from typing import Final

from producer.admin import Admin, TopicSpec
from producer.protocol.types import Record
from producer.sink.errors import StageError
from producer.sink.task import Headers, OutputRecord
from txn.errors import ErrorCode

__all__ = ["HEADER_PREFIX", "DeadLetterQueue", "ensure_topic"]

HEADER_PREFIX: Final = "__connect.errors."
STAGE_TASK_PUT: Final = "TASK_PUT"
DLQ_PARTITIONS: Final = 1


def _utf8(value: object) -> bytes:
    return str(value).encode("utf-8")


def _class_name(obj: type) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


def ensure_topic(admin: Admin, topic: str, replication_factor: int) -> None:
    """Create the dead-letter topic unless it exists; an error names the config key."""
    if topic in admin.list_topics():
        return
    result = admin.create_topics_detailed([TopicSpec(topic, DLQ_PARTITIONS, replication_factor)])[
        topic
    ]
    if result.error not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
        key = (
            "errors.deadletterqueue.topic.replication.factor"
            if result.error is ErrorCode.INVALID_REPLICATION_FACTOR
            else "errors.deadletterqueue.topic.name"
        )
        msg = f"{key}: cannot create the dead-letter topic {topic!r}: {result.describe()}"
        raise DeadLetterQueueError(msg)


class DeadLetterQueueError(Exception):
    """The dead-letter topic cannot be set up."""


class DeadLetterQueue:
    """Builds the dead-letter record of a failed record."""

    def __init__(
        self, topic: str, connector: str, task_id: int, task_class: type, context_headers: bool
    ) -> None:
        self.topic = topic
        self._connector = connector
        self._task_id = task_id
        self._task_class = _class_name(task_class)
        self._context_headers = context_headers

    def record(self, failed: Record, error: BaseException) -> OutputRecord:
        """The dead letter of ``failed``: its own key, value, headers and timestamp (as
        Connect's reporter keeps the original record's timestamp)."""
        headers: Headers = tuple(failed.headers)
        if self._context_headers:
            headers = (*headers, *self.error_headers(failed, error))
        timestamp = failed.timestamp if failed.timestamp >= 0 else None
        return OutputRecord(self.topic, failed.value, failed.key, headers, timestamp)

    def error_headers(self, failed: Record, error: BaseException) -> Headers:
        stage, executing = STAGE_TASK_PUT, self._task_class
        if isinstance(error, StageError):  # a converter's failure, with what it raised
            stage, executing, error = error.stage.value, error.executing_class, error.error
        trace = "".join(traceback.format_exception(error))
        return (
            (HEADER_PREFIX + "topic", _utf8(failed.topic)),
            (HEADER_PREFIX + "partition", _utf8(failed.partition)),
            (HEADER_PREFIX + "offset", _utf8(failed.offset)),
            (HEADER_PREFIX + "connector.name", _utf8(self._connector)),
            (HEADER_PREFIX + "task.id", _utf8(self._task_id)),
            (HEADER_PREFIX + "stage", _utf8(stage)),
            (HEADER_PREFIX + "class.name", _utf8(executing)),
            (HEADER_PREFIX + "exception.class.name", _utf8(_class_name(type(error)))),
            (HEADER_PREFIX + "exception.message", _utf8(error)),
            (HEADER_PREFIX + "exception.stacktrace", _utf8(trace)),
        )
