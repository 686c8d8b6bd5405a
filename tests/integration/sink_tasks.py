"""Sink tasks the sink-worker tests name in ``connector.class`` (real tasks, real files)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from producer.sink import FileSink, KafkaTopicSink, RetriableException, SinkRecord, SinkTask


def _touch(path: str) -> None:
    Path(path).write_text(str(os.getpid()), encoding="utf-8")


class DeliveryLogSink(FileSink):
    """FileSink writing ``value delivery_count`` per line, with injected failures:

    - a value starting ``flaky`` fails retriably on its first delivery;
    - a value starting ``poison`` fails retriably on every delivery;
    - a value starting ``bad`` fails with a plain exception;
    - a value starting ``errant`` is reported through the errant record reporter.
    """

    def put(self, records: list[SinkRecord]) -> None:
        for r in records:
            value = r.value or b""
            if value.startswith(b"flaky") and r.delivery_count == 1:
                raise RetriableException(f"{value!r}: downstream busy")
            if value.startswith(b"poison"):
                raise RetriableException(f"{value!r}: cannot be written")
            if value.startswith(b"bad"):
                raise ValueError(f"{value!r}: malformed")
        written = []
        for r in records:
            value = r.value or b""
            if value.startswith(b"errant"):
                self.context.report(r, LookupError("unknown customer"))
            else:
                line = value + b" %d" % r.delivery_count
                written.append(SinkRecord(r.topic, r.partition, r.offset, r.key, line))
        super().put(written)


class FailingStart(SinkTask):
    def start(self, config: dict[str, str]) -> None:
        raise ConnectionError("cannot reach the warehouse")

    def put(self, records: list[SinkRecord]) -> None:
        raise AssertionError("never called")


class PausingFileSink(FileSink):
    """FileSink whose first ``put`` touches ``marker`` and then sleeps ``pause.s`` (for kill -9)."""

    def start(self, config: dict[str, str]) -> None:
        super().start(config)
        self.marker = config["marker"]
        self.pause_s = float(config.get("pause.s", "30"))
        self.put_sleep_s = float(config.get("put.sleep.ms", "0")) / 1000
        self.paused = False

    def put(self, records: list[SinkRecord]) -> None:
        super().put(records)
        if self.put_sleep_s:
            time.sleep(self.put_sleep_s)
        if not self.paused and self.marker:
            self.paused = True
            _touch(self.marker)
            time.sleep(self.pause_s)


class PausingTopicSink(KafkaTopicSink):
    """KafkaTopicSink whose first ``put`` touches ``marker`` and sleeps: kill -9 it there."""

    def start(self, config: dict[str, str]) -> None:
        super().start(config)
        self.marker = config.get("marker", "")
        self.pause_s = float(config.get("pause.s", "30"))
        self.paused = False

    def put(self, records: list[SinkRecord]) -> None:
        super().put(records)
        if not self.paused and self.marker:
            self.paused = True
            _touch(self.marker)
            time.sleep(self.pause_s)


def shout(record: SinkRecord) -> bytes | None:
    """A KafkaTopicSink transform: upper-case, drop values starting with ``drop``."""
    value = record.value or b""
    return None if value.startswith(b"drop") else value.upper()


class StartCountingSink(FileSink):
    """FileSink appending ``start <task id>`` to ``starts.file`` at each start; the tasks in
    ``fail.tasks`` (comma-separated ids) then fail to start."""

    def start(self, config: dict[str, str]) -> None:
        task = self.context.task_id
        with Path(config["starts.file"]).open("a", encoding="utf-8") as out:
            out.write(f"start {task}\n")
        if str(task) in config.get("fail.tasks", "").split(","):
            raise ConnectionError(f"task {task} cannot reach the warehouse")
        super().start(config)
