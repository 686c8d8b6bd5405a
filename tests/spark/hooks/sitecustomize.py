"""Fault injection for the Spark tests, loaded into every Python process of one driver run.

The tests put this directory on PYTHONPATH and set ``SHARETXN_TEST_FAULT=<point>:<batch>``
for the driver they want to crash; the driver's JVM and the Python workers it starts
inherit both, so the hook runs wherever the point is reached:

- ``kill-after-read-prepare``: the first write task of the batch (read transactions are
  prepared, nothing written): SIGKILL of the driver's process group.
- ``kill-after-write-prepare``: the first write task of the batch, right after it prepared
  its transaction (the batch has no intent yet): SIGKILL of the driver's process group.
- ``kill-after-intent``: right after ``intents/N.json`` is written, before ``commits/N``.
- ``kill-before-commit``: the first commit point that finds ``commits/N`` but no
  ``resolved/N`` (the commit phase's write-ahead of N): the batch is decided, nothing is
  committed.
- ``delay-commit``: the first commit phase of batch N (in the driver) waits
  ``$SHARETXN_TEST_DELAY_S`` seconds before its write-ahead.
- ``fail-read-once``: the first attempt of read task 0 raises after preparing its
  transaction; Spark retries the task.
- ``hold-read-after-prepare``: the first read task of the batch whose first attempt acquired
  records (an empty read would leave nothing to redeliver) prepares its transaction, writes
  its pid to ``$SHARETXN_TEST_MARKER`` and waits there (for a test to kill its executor).
  Claimed once across executors through ``$SHARETXN_TEST_MARKER.claim``.
"""

# ruff: noqa: PLC0415 - the hooks import only what the chosen fault needs, at start-up

from __future__ import annotations

import os
import signal

_SPEC = os.environ.get("SHARETXN_TEST_FAULT", "")


def _kill_driver() -> None:
    pgid = int(os.environ["SHARETXN_TEST_DRIVER_PGID"])
    try:
        os.killpg(pgid, signal.SIGKILL)
    finally:
        os.kill(os.getpid(), signal.SIGKILL)


def _install(point: str, batch: int) -> None:
    if point == "kill-before-commit":
        import producer.twophase.commit_phase as commit_phase

        original = commit_phase._write_ahead

        # The commit phase's first step for a decided, unresolved batch (inside its lock:
        # no race with Spark writing commits/N, as a check before the call would have).
        def write_ahead(checkpoint, decided, *args, **kwargs):  # type: ignore[no-untyped-def]
            if decided == batch:
                _kill_driver()
            return original(checkpoint, decided, *args, **kwargs)

        commit_phase._write_ahead = write_ahead
    elif point == "delay-commit":
        import time

        import producer.twophase.commit_phase as commit_phase

        original_ahead = commit_phase._write_ahead
        delayed: list[int] = []

        # The first commit phase of the batch waits $SHARETXN_TEST_DELAY_S first (as a
        # stalled driver would), e.g. past a timeout-bounded prepare's transaction timeout.
        def delayed_write_ahead(checkpoint, decided, *args, **kwargs):  # type: ignore[no-untyped-def]
            if decided == batch and not delayed:
                delayed.append(decided)
                time.sleep(float(os.environ.get("SHARETXN_TEST_DELAY_S", "25")))
            return original_ahead(checkpoint, decided, *args, **kwargs)

        commit_phase._write_ahead = delayed_write_ahead
    elif point == "kill-after-intent":
        import producer.spark.sink as sink

        original_write = sink.write_intent

        def write_intent(state_dir, intent, *args):  # type: ignore[no-untyped-def]
            path = original_write(state_dir, intent, *args)
            if intent.batch == batch:
                _kill_driver()
            return path

        sink.write_intent = write_intent
    elif point == "kill-after-read-prepare":
        import producer.spark.write_task as write_task

        original_prepare = write_task.WriteTask.prepare

        def prepare(self, index, records):  # type: ignore[no-untyped-def]
            if self.batch == batch:
                _kill_driver()  # the read transactions are prepared, no write has begun
            return original_prepare(self, index, records)

        write_task.WriteTask.prepare = prepare
    elif point == "kill-after-write-prepare":
        import producer.spark.write_task as write_task

        original_task = write_task.WriteTask.prepare

        def prepared(self, index, records):  # type: ignore[no-untyped-def]
            receipt = original_task(self, index, records)  # sends and prepares
            if self.batch == batch and receipt is not None:
                _kill_driver()
            return receipt

        write_task.WriteTask.prepare = prepared
    elif point == "fail-read-once":
        from pyspark import TaskContext

        import producer.spark.source as source

        original_read = source.read_task

        def read_task(task):  # type: ignore[no-untyped-def]
            rows = list(original_read(task))  # acquires and prepares
            context = TaskContext.get()
            if task.batch == batch and task.index == 0 and context.attemptNumber() == 0:
                raise RuntimeError("injected failure of read task 0 after its prepare")
            yield from rows

        source.read_task = read_task
    elif point == "hold-read-after-prepare":
        import time
        from pathlib import Path

        from pyspark import TaskContext

        import producer.spark.source as source

        original_hold = source.read_task

        def claim(marker: Path) -> bool:
            try:
                os.close(os.open(f"{marker}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return False
            return True

        def read_task(task):  # type: ignore[no-untyped-def]
            rows = list(original_hold(task))  # acquires and prepares
            context = TaskContext.get()
            marker = Path(os.environ["SHARETXN_TEST_MARKER"])
            if (
                task.batch == batch
                and context.attemptNumber() == 0
                and sum(part.num_rows for part in rows) > 0
                and claim(marker)
            ):
                tmp = marker.with_suffix(".tmp")
                tmp.write_text(str(os.getpid()))
                tmp.rename(marker)
                time.sleep(120)  # the test kills this executor meanwhile
            yield from rows

        source.read_task = read_task
    else:
        raise ValueError(f"unknown SHARETXN_TEST_FAULT point {point!r}")


if _SPEC:
    # The driver is started in a new session: its process group id is its pid.
    os.environ.setdefault("SHARETXN_TEST_DRIVER_PGID", str(os.getpgrp()))
    _point, _, _batch = _SPEC.partition(":")
    _install(_point, int(_batch or 0))
