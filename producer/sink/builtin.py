"""Built-in sink tasks: ``FileSink`` (at-least-once) and ``KafkaTopicSink`` (exactly-once capable).

``producer.sink.FileSink``
    appends each record's value as one line to ``file`` (Connect's ``FileStreamSinkTask``:
    a null value is written as ``null``; text as UTF-8; a value a converter made into
    another object, such as JsonConverter's dicts, as compact JSON).  ``put`` writes the
    batch with one ``write`` to a file opened with ``O_APPEND`` (so tasks and workers can
    share a file), ``flush`` fsyncs it; records are acknowledged only after that.
    At-least-once: a record whose acknowledgement is lost is written again.

``producer.sink.KafkaTopicSink``
    copies each record to ``target.topic`` through ``self.context.send`` (key and headers
    kept; values a converter made into other objects are written as FileSink writes them),
    optionally through ``transform``: a dotted path to a function taking a ``SinkRecord``
    and returning the new value (bytes or str), or None to drop the record.
    With ``share.delivery.semantics=exactly-once`` every input appears in the target topic
    exactly once for a ``read_committed`` reader.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from producer.sink.config import SinkConfigError
from producer.sink.task import SinkRecord, SinkTask, load_object

__all__ = ["FileSink", "KafkaTopicSink", "as_bytes"]


def as_bytes(value: Any) -> bytes | None:
    """A converted value as bytes: bytes as they are, text as UTF-8, others as compact JSON."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    text = json.dumps(value, separators=(",", ":"), default=_json_default)
    return text.encode("utf-8")


def _line(value: Any) -> bytes:
    data = as_bytes(value)
    return (b"null" if data is None else data) + b"\n"


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return value.decode("utf-8", errors="replace")
    msg = f"cannot write a {type(value).__name__} value"
    raise TypeError(msg)


class FileSink(SinkTask):
    """Appends each value as a line to ``file``; fsynced in ``flush``."""

    def __init__(self) -> None:
        self._fd: int | None = None
        self.path = ""

    def start(self, config: dict[str, str]) -> None:
        path = config.get("file", "").strip()
        if not path:
            raise SinkConfigError("file", "is required (the file FileSink appends to)")
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def put(self, records: list[SinkRecord]) -> None:
        if self._fd is None:
            msg = "FileSink.put() before start()"
            raise RuntimeError(msg)
        lines = b"".join(_line(r.value) for r in records)
        view = memoryview(lines)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    def flush(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def stop(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


Transform = Callable[[SinkRecord], bytes | str | None]


class KafkaTopicSink(SinkTask):
    """Copies records to ``target.topic``, optionally through ``transform``."""

    def __init__(self) -> None:
        self.target = ""
        self._transform: Transform | None = None

    def start(self, config: dict[str, str]) -> None:
        target = config.get("target.topic", "").strip()
        if not target:
            raise SinkConfigError("target.topic", "is required (the topic KafkaTopicSink writes)")
        if target in {t.strip() for t in config.get("topics", "").split(",")}:
            raise SinkConfigError("target.topic", f"{target!r} is also a source topic")
        self.target = target
        path = config.get("transform", "").strip()
        if path:
            try:
                fn = load_object(path, "transform")
            except ValueError as exc:
                raise SinkConfigError("transform", str(exc)) from None
            if not callable(fn):
                raise SinkConfigError("transform", f"{path} is not callable")
            self._transform = fn

    def put(self, records: list[SinkRecord]) -> None:
        for record in records:
            value: bytes | str | None = as_bytes(record.value)
            if self._transform is not None:
                value = self._transform(record)
                if value is None:
                    continue
            headers = [(k, as_bytes(v)) for k, v in record.headers]
            self.context.send(self.target, value, key=as_bytes(record.key), headers=headers)
