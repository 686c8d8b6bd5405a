"""Where a transaction's time goes on the sharetxn broker: an instrumented broker.

``bench/txn_produce.py`` runs its transactional loop once more against a broker started by
this module (``running``): the broker runs in a child process (``--serve``), with its steps
timed in-process and every ``os.fsync`` counted and timed, each under the step it ran in:

* ``AddPartitionsToTxn``: ``TransactionCoordinator.add_partitions_to_txn`` (its
  ``__transaction_state`` record, Ongoing);
* ``Produce``: ``BrokerCore.produce``, once per partition of a request (the append);
* ``EndTxn``: ``TransactionCoordinator.end_txn`` (its PrepareCommit record);
* ``markers``: ``BrokerCore.write_txn_markers`` (the COMMIT markers, after the EndTxn answer);
* ``Complete*``: ``TransactionCoordinator._write_txn_completion`` (CompleteCommit record);
* ``other``: an fsync outside these steps.

Each fsync is also classed by the log it made durable (``__transaction_state`` or a data
partition), read from ``/proc/self/fd``.  SIGUSR1 sets the counts back to zero (once the
topic is made, before the loop); SIGUSR2 has the child write them as JSON (``finish``, before
SIGTERM stops it, so that the fsyncs of the shutdown are not counted).  The
wrappers cost a few microseconds a call, so this run is not one of the timed rounds.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STEPS = ("AddPartitionsToTxn", "Produce", "EndTxn", "markers", "Complete*", "other")
STATE_LOG = "__transaction_state"
_ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Counts:
    """Calls, inclusive seconds, and fsyncs (count, seconds) by step and by log."""

    calls: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    fsyncs: dict[str, int] = field(default_factory=dict)
    fsync_seconds: dict[str, float] = field(default_factory=dict)
    fsyncs_by_log: dict[str, int] = field(default_factory=dict)
    other_sites: dict[str, int] = field(default_factory=dict)  # who called an "other" fsync

    def add(self, table: dict[str, Any], key: str, value: float) -> None:
        table[key] = table.get(key, 0) + value

    def reset(self) -> None:
        for table in self.__dict__.values():
            table.clear()


def _callers(depth: int = 5) -> str:
    """The functions above the fsync, innermost first."""
    frames = traceback.extract_stack(limit=depth + 2)[:-2]
    return " < ".join(f"{Path(f.filename).stem}.{f.name}" for f in reversed(frames))


def _instrument(counts: Counts) -> None:
    """Wrap the broker's transaction steps and ``os.fsync`` (in the child, before serving)."""
    from coordinator.broker import BrokerCore  # noqa: PLC0415 - only in the child
    from coordinator.txn_coordinator import TransactionCoordinator  # noqa: PLC0415

    stack: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: Any) -> None:
        number = fd if isinstance(fd, int) else fd.fileno()
        try:
            target = os.readlink(f"/proc/self/fd/{number}")
        except OSError:
            target = ""
        begin = time.perf_counter()
        try:
            real_fsync(fd)
        finally:
            spent = time.perf_counter() - begin
            step = stack[-1] if stack else "other"
            counts.add(counts.fsyncs, step, 1)
            counts.add(counts.fsync_seconds, step, spent)
            kind = "state" if f"/{STATE_LOG}-" in target else "data"
            counts.add(counts.fsyncs_by_log, kind, 1)
            if step == "other":
                counts.add(counts.other_sites, _callers(), 1)

    os.fsync = fsync

    def timed(owner: type, name: str, step: str) -> None:
        method = getattr(owner, name)

        @functools.wraps(method)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            stack.append(step)
            begin = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                counts.add(counts.seconds, step, time.perf_counter() - begin)
                counts.add(counts.calls, step, 1)
                stack.pop()

        setattr(owner, name, wrapper)

    timed(TransactionCoordinator, "add_partitions_to_txn", "AddPartitionsToTxn")
    timed(TransactionCoordinator, "end_txn", "EndTxn")
    timed(TransactionCoordinator, "_write_txn_completion", "Complete*")
    timed(BrokerCore, "produce", "Produce")
    timed(BrokerCore, "write_txn_markers", "markers")


def serve(data_dir: str, out: str, options: list[str]) -> None:
    """The child: an instrumented broker until SIGTERM; the counts written to ``out`` on
    SIGUSR2."""
    from coordinator.launcher import serve as serve_broker  # noqa: PLC0415
    from txn.config import BrokerConfig  # noqa: PLC0415

    counts = Counts()
    _instrument(counts)
    signal.signal(signal.SIGUSR1, lambda _signum, _frame: counts.reset())
    signal.signal(signal.SIGUSR2, lambda _signum, _frame: _write(counts, out))
    assignments = [o.removeprefix("--set=") for o in options]
    config = BrokerConfig(BrokerConfig.parse_assignments(assignments))
    asyncio.run(serve_broker(Path(data_dir), "127.0.0.1", 0, config))


def _write(counts: Counts, out: str) -> None:
    partial = Path(out + ".partial")
    partial.write_text(json.dumps(counts.__dict__))
    partial.rename(out)


def read_counts(path: Path) -> Counts | None:
    """What the child wrote, or None if it did not stop cleanly."""
    if not path.exists():
        return None
    return Counts(**json.loads(path.read_text()))


def _start_child(cmd: list[str]) -> tuple[subprocess.Popen[str], str]:
    """The child started, once it printed its ready line; its output drained meanwhile."""
    from coordinator.launcher import READY_PREFIX  # noqa: PLC0415

    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith(READY_PREFIX):
            threading.Thread(target=collections.deque, args=(proc.stdout, 0), daemon=True).start()
            return proc, line[len(READY_PREFIX) :].strip()
    proc.wait()
    raise RuntimeError("instrumented broker did not start:\n" + "".join(lines[-20:]))


@contextlib.contextmanager
def running(
    settings: list[str], tree: Path | None = None
) -> Iterator[tuple[str, int, Callable[[], Counts | None]]]:
    """(bootstrap, pid, stop-and-read-the-counts) of an instrumented broker in a temporary
    data directory, removed on exit; ``settings`` are ``--set=KEY=VALUE`` options; ``tree``
    the source tree the broker is imported from (this repository's if None).  Signal the pid
    with SIGUSR1 to start counting afresh."""
    from coordinator.launcher import terminate  # noqa: PLC0415

    data_dir = tempfile.mkdtemp(prefix="sharetxn-breakdown-")
    out = Path(data_dir) / "counts.json"
    source = (tree or _ROOT).resolve()
    cmd = [sys.executable, __file__, "--serve", data_dir, str(out), str(source), *settings]
    proc, bootstrap = _start_child(cmd)

    def finish() -> Counts | None:
        os.kill(proc.pid, signal.SIGUSR2)  # the counts, before the shutdown's own fsyncs
        deadline = time.monotonic() + 10
        while not out.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        terminate(proc, 30)
        return read_counts(out)

    try:
        yield bootstrap, proc.pid, finish
    finally:
        terminate(proc, 30)
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__" and len(sys.argv) >= 5 and sys.argv[1] == "--serve":
    sys.path.insert(0, sys.argv[4])  # the source tree to run, first
    serve(sys.argv[2], sys.argv[3], sys.argv[5:])
