"""Connect's error handling for the convert step: ``errors.tolerance``, ``errors.retry.*``,
``errors.log.*`` (Connect's ``RetryWithToleranceOperator`` and ``LogReporter``).

Each record's key, value and headers are converted in turn (stages ``KEY_CONVERTER``,
``VALUE_CONVERTER``, ``HEADER_CONVERTER``).  A converter raising ``RetriableException`` is
tried again, with backoffs doubling from 300 ms up to ``errors.retry.delay.max.ms``, until
``errors.retry.timeout`` ms have passed (0, the default: no retry; -1: forever).  Any other
exception, or one still failing at the deadline, is an error of that stage:

- ``errors.tolerance=none`` (the default): the task fails ("Tolerance exceeded in error
  handler"), as Connect's; its records return to the group when its consumer closes;
- ``errors.tolerance=all``: the record is rejected (written to the dead-letter topic when
  one is set, with the stage and the converter's class in the context headers) and the rest
  of the batch goes on.

``errors.log.enable=true`` logs each error (Connect's message: the stage, the class, and with
``errors.log.include.messages=true`` the record's topic, partition, offset and timestamp).
``put`` failures are not this module's: KIP-1302 releases or rejects them (``loop``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Final, TypeVar

from producer.sink.task import ConnectException, RetriableException

__all__ = [
    "ErrorHandling",
    "Stage",
    "StageError",
    "ToleranceExceeded",
]

log = logging.getLogger("producer.sink")

RETRIES_DELAY_MIN_MS: Final = 300
TOLERANCES: Final = ("none", "all")

T = TypeVar("T")


class Stage(Enum):
    """Connect's ``Stage`` names (the ``__connect.errors.stage`` header)."""

    KEY_CONVERTER = "KEY_CONVERTER"
    VALUE_CONVERTER = "VALUE_CONVERTER"
    HEADER_CONVERTER = "HEADER_CONVERTER"
    TASK_PUT = "TASK_PUT"


class StageError(ConnectException):
    """A record failed a stage; ``error`` is what the stage raised."""

    def __init__(self, stage: Stage, executing_class: str, error: BaseException) -> None:
        super().__init__(f"{stage.value} ({executing_class}): {type(error).__name__}: {error}")
        self.stage = stage
        self.executing_class = executing_class
        self.error = error


class ToleranceExceeded(ConnectException):
    """``errors.tolerance=none`` and a record failed a stage: the task fails."""

    def __init__(self, failure: StageError) -> None:
        super().__init__("Tolerance exceeded in error handler")
        self.failure = failure


@dataclass(frozen=True, slots=True)
class ErrorHandling:
    """The connector's ``errors.*`` settings (Connect's names and defaults)."""

    tolerance: str = "none"
    retry_timeout_ms: int = 0
    retry_delay_max_ms: int = 60_000
    log_enable: bool = False
    log_include_messages: bool = False

    @property
    def tolerates(self) -> bool:
        return self.tolerance == "all"

    def run(
        self,
        operation: Callable[[], T],
        stage: Stage,
        executing_class: str,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> T:
        """``operation``, retried while it raises RetriableException within the retry
        timeout; a failure is a StageError."""
        deadline = None if self.retry_timeout_ms < 0 else clock() + self.retry_timeout_ms / 1000
        attempt = 0
        while True:
            attempt += 1
            try:
                return operation()
            except RetriableException as exc:
                now = clock()
                if deadline is not None and now >= deadline:
                    raise StageError(stage, executing_class, exc) from exc
                delay_ms = min(RETRIES_DELAY_MIN_MS * 2 ** (attempt - 1), self.retry_delay_max_ms)
                if deadline is not None:
                    delay_ms = min(delay_ms, int((deadline - now) * 1000))
                sleep(max(delay_ms, 0) / 1000)
            except Exception as exc:
                raise StageError(stage, executing_class, exc) from exc

    def report(self, task: str, failure: StageError, where: str) -> None:
        """Log ``failure`` if ``errors.log.enable`` (``where``: the consumed record)."""
        if not self.log_enable:
            return
        message = (
            f"Error encountered in task {task}. Executing stage '{failure.stage.value}' with "
            f"class '{failure.executing_class}'"
        )
        if self.log_include_messages:
            message += f", where consumed record is {where}"
        log.error("%s.", message, exc_info=failure.error)
