"""The server's cleaner executor: the copying of a pass runs in a worker process.

The broker core plans a pass and applies its swap on the event loop
(``coordinator.log.cleaner_passes``); what runs here is ``run_clean`` alone -- decoding
every record of the range, the offset map, the kept batches -- a function of the planned
job and its range: a file log's segment files, which the worker reads itself through the
pass's bounded buffer (``coordinator.log.cleaner_io``), or a memory log's batches.  The
worker needs nothing of the broker's state.

A process rather than a thread: the copy is Python work and would hold the GIL the event
loop needs.  The worker is ``python -m coordinator.cleaner_worker``, started on the first
pass with its own pipes (stdin: jobs, stdout: results, each a length-prefixed pickle;
stderr discarded) and no other descriptor -- in particular not the data directory's lock
nor the broker's stdout.  It exits when its stdin closes, so a broker killed with SIGKILL
leaves no worker behind.  One thread of the broker feeds it and waits for its answer
(blocked in I/O, without the GIL) and hands each result to the loop with
``call_soon_threadsafe``.  If the worker dies, the pass reports the error, the log is left
as it was, and the next pass starts a new worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pickle
import queue
import struct
import subprocess
import sys
import threading
from typing import IO

from coordinator.log.cleaner_io import CleanRange
from coordinator.log.cleaner_passes import Done
from coordinator.log.compaction import CleanJob, CleanResult, run_clean

log = logging.getLogger("sharetxn.cleaner")

_LENGTH = struct.Struct(">Q")
_Item = tuple[CleanJob, CleanRange, Done]


def _send(stream: IO[bytes], payload: object) -> None:
    data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)))
    stream.write(data)
    stream.flush()


def _receive(stream: IO[bytes]) -> object:
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        raise EOFError("the cleaner worker closed its pipe")
    (size,) = _LENGTH.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the cleaner worker closed its pipe")
    return pickle.loads(data)  # noqa: S301 - our own worker's answer


class ProcessCleanerExecutor:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._queue: queue.Queue[_Item | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def submit(self, job: CleanJob, source: CleanRange, done: Done) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._feed, name="cleaner-feed", daemon=True)
            self._thread.start()
        self._queue.put((job, source, done))

    def _worker(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "coordinator.cleaner_worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                close_fds=True,
            )
        return self._process

    def _feed(self) -> None:
        while (item := self._queue.get()) is not None:
            job, source, done = item
            outcome: CleanResult | BaseException
            try:
                worker = self._worker()
                assert worker.stdin is not None and worker.stdout is not None
                _send(worker.stdin, (job, source))
                answer = _receive(worker.stdout)
                if isinstance(answer, CleanResult):
                    outcome = answer
                else:
                    outcome = RuntimeError(f"the cleaner worker failed: {answer}")
            except Exception as exc:  # a dead worker: the next pass starts another
                self._stop_worker()
                outcome = exc
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody to tell
                self._loop.call_soon_threadsafe(done, outcome)
        self._stop_worker()

    def _stop_worker(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            if process.stdin is not None:
                process.stdin.close()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()

    def close(self) -> None:
        """Stop the feeding thread and the worker (a pass in flight is dropped)."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(10)
            self._thread = None


def main() -> None:
    """The worker: answer each job read from stdin with its ``run_clean`` result."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            request = _receive(stdin)
        except EOFError:
            return
        try:
            assert isinstance(request, tuple)
            answer: object = run_clean(*request)
        except Exception as exc:  # reported to the broker, which logs it
            answer = repr(exc)
        _send(stdout, answer)


if __name__ == "__main__":
    main()
