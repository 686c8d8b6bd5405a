"""KIP-1302: Kafka Connect-shaped sink tasks on share groups, at-least-once and exactly-once.

    from producer.sink import SinkTask, SinkRecord, RetriableException, SinkWorker

Write a ``SinkTask`` (``start``/``put``/``flush``/``stop``), name it in ``connector.class``
and run it with ``sharetxn sink run CONFIG.properties`` or ``SinkWorker(config).run()``.
Built-in tasks: ``producer.sink.FileSink`` and ``producer.sink.KafkaTopicSink``.  See
docs/sink.md.
"""

from producer.sink.builtin import FileSink, KafkaTopicSink
from producer.sink.config import SinkConfig, SinkConfigError, resolve
from producer.sink.loop import TaskStartError
from producer.sink.properties import PropertiesError, read_properties
from producer.sink.task import (
    ConnectException,
    RetriableException,
    SinkRecord,
    SinkTask,
    SinkTaskContext,
)
from producer.sink.worker import SinkWorker, SinkWorkerError

__all__ = [
    "ConnectException",
    "FileSink",
    "KafkaTopicSink",
    "PropertiesError",
    "RetriableException",
    "SinkConfig",
    "SinkConfigError",
    "SinkRecord",
    "SinkTask",
    "SinkTaskContext",
    "SinkWorker",
    "SinkWorkerError",
    "TaskStartError",
    "read_properties",
    "resolve",
]
