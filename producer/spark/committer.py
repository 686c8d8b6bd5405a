"""The driver's committer: every decided batch is committed within seconds (DESIGN §6).

Spark writes ``commits/N`` after ``foreachBatch`` returns; only then may the batch's
prepared transactions be committed.  Nothing in Spark calls the sink back after that: the
next batch's ``foreachBatch`` does not come while the input is idle, and a
``StreamingQueryListener`` only hears the queries of the session it was added to (the
batch's ``df.sparkSession`` is a clone with its own listener bus).  So the driver runs its
own committer: a daemon thread owned by ``ExactlyOnce`` that polls the checkpoint (every
``poll_s``, and at once when the progress listener wakes it), commits every unresolved
intent whose ``commits/N`` exists through ``commit_decided`` (idempotent, under the
checkpoint's ``resolve_lock``) and measures the commit lag.

It cannot stop silently: a failure is retried at the next poll (backing off to
``MAX_BACKOFF_S``); a ``DecidedBatchAbortedError`` at once, a ``ResolveError`` after
``RESOLVE_ATTEMPTS`` attempts in a row, any other error once it has lasted
``failure_timeout_s`` are fatal: ``on_fatal(error)`` stops the query and the error is
raised by the query's ``awaitTermination`` and by the next batch.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

from opentelemetry import metrics

from producer.spark.checkpoint import Checkpoint
from producer.spark.errors import DecidedBatchAbortedError, ResolveError
from producer.twophase.checkpoint_fs import is_local, local_path
from producer.twophase.spark_checkpoint import INTENTS_DIR, RESOLVED_DIR

log = logging.getLogger(__name__)

__all__ = ["CommitLag", "Committer", "commit_lags_of"]

DEFAULT_POLL_S = 0.5
DEFAULT_FAILURE_TIMEOUT_S = 120.0
MAX_BACKOFF_S = 5.0
RESOLVE_ATTEMPTS = 3
COMMITS_DIR = "commits"
LAG_SAMPLES = 4096

_meter = metrics.get_meter("sharetxn-spark")
_lag_histogram = _meter.create_histogram(
    "spark-commit-lag",
    unit="ms",
    description="From Spark's commits/N to batch N's transactions committed",
)


def _percentile(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


class CommitLag:
    """Commit lags (seconds) of the batches seen by one committer: the last ``LAG_SAMPLES``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._samples: deque[float] = deque(maxlen=LAG_SAMPLES)
        self.by_batch: dict[int, float] = {}

    def record(self, batch: int, seconds: float, query_id: str | None = None) -> None:
        seconds = max(0.0, seconds)
        with self._lock:
            self._samples.append(seconds)
            self.by_batch[batch] = seconds
            while len(self.by_batch) > LAG_SAMPLES:
                del self.by_batch[min(self.by_batch)]
        _lag_histogram.record(seconds * 1000.0, {"query_id": query_id or ""})

    @property
    def count(self) -> int:
        with self._lock:
            return len(self._samples)

    def percentile(self, q: float) -> float | None:
        """The ``q`` quantile (0..1) in seconds; None before the first batch."""
        with self._lock:
            ordered = sorted(self._samples)
        return _percentile(ordered, q)

    @property
    def p50(self) -> float | None:
        return self.percentile(0.5)

    @property
    def p99(self) -> float | None:
        return self.percentile(0.99)

    @property
    def max(self) -> float | None:
        return self.percentile(1.0)

    def summary(self) -> dict[str, float | int | None]:
        return {"batches": self.count, "p50_s": self.p50, "p99_s": self.p99, "max_s": self.max}


def commit_lags_of(checkpoint: Path) -> list[float]:
    """Commit lags (seconds) from a local checkpoint: ``resolved/N`` minus ``commits/N`` mtime.

    Only batches with an intent that are still in the checkpoint (Spark keeps
    ``minBatchesToRetain``) and were committed (not aborted and re-run).
    """
    lags: list[float] = []
    resolved = checkpoint / RESOLVED_DIR
    if not resolved.is_dir():
        return lags
    for path in resolved.iterdir():
        if not path.name.isdigit():
            continue
        commit = checkpoint / COMMITS_DIR / path.name
        intent = checkpoint / INTENTS_DIR / f"{path.name}.json"
        try:
            if b'"commit"' not in path.read_bytes() or not intent.exists():
                continue
            lag = path.stat().st_mtime - commit.stat().st_mtime
        except OSError:
            continue
        bisect.insort(lags, max(0.0, lag))
    return lags


def _numbers(names: list[str], suffix: str = "") -> set[int]:
    out: set[int] = set()
    for name in names:
        stem = name[: -len(suffix)] if suffix and name.endswith(suffix) else name
        if (not suffix or name.endswith(suffix)) and stem.isdigit():
            out.add(int(stem))
    return out


class Committer:
    """A daemon thread committing every decided batch of one checkpoint (see the module)."""

    def __init__(
        self,
        checkpoint: Checkpoint,
        commit: Callable[[], list[int]],
        *,
        on_fatal: Callable[[BaseException], None],
        alive: Callable[[], bool] = lambda: True,
        query_id: Callable[[], str | None] = lambda: None,
        poll_s: float = DEFAULT_POLL_S,
        failure_timeout_s: float = DEFAULT_FAILURE_TIMEOUT_S,
        clock: Callable[[], float] = time.time,
        lag: CommitLag | None = None,
    ) -> None:
        self.checkpoint = checkpoint
        self._commit = commit
        self._on_fatal = on_fatal
        self._alive = alive
        self._query_id = query_id
        self.poll_s = poll_s
        self.failure_timeout_s = failure_timeout_s
        self._clock = clock
        self.lag = lag if lag is not None else CommitLag()
        self._local = is_local(checkpoint.location)  # commits/N's mtime is its time
        self._primed = False  # the first poll measures nothing resolved before it
        self.error: BaseException | None = None
        self._seen: dict[int, float] = {}  # decided, unresolved batch -> when commits/N was
        self._done: set[int] = set()  # resolved batches already measured
        self._failing_since: float | None = None
        self._resolve_failures = 0
        self._delay = poll_s
        self._tick_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the thread ------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run, name="sharetxn-spark-committer", daemon=True
        )
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wake(self) -> None:
        """Poll now (the progress listener: Spark just wrote a ``commits/N``)."""
        self._wake.set()

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self._delay)
            self._wake.clear()
            if self._stop.is_set():
                break
            alive = self._query_alive()
            self.tick()
            if self.error is not None or not alive:
                break  # fatal, or the query ended (after one last poll)
        log.debug("committer of %s stopped", self.checkpoint)

    def _query_alive(self) -> bool:
        try:
            return self._alive()
        except Exception:  # the session is gone: a last poll, then stop
            return False

    # -- one poll ----------------------------------------------------------------------------

    def tick(self) -> list[int]:
        """One poll: commit the decided batches, measure their lag; never raises.

        Returns the batches this poll saw resolved.  A failure is counted towards the
        fatal thresholds; a fatal one sets ``error`` and calls ``on_fatal``.
        """
        with self._tick_lock:
            if self.error is not None:
                return []
            try:
                resolved = self._poll()
            except Exception as exc:
                self._failed(exc)
                return []
            self._failing_since = None
            self._resolve_failures = 0
            self._delay = self.poll_s
            return resolved

    def _poll(self) -> list[int]:
        fs, now = self.checkpoint.fs, self._clock()
        commits = _numbers(fs.list(self.checkpoint.path(COMMITS_DIR)))
        intents = _numbers(fs.list(self.checkpoint.path(INTENTS_DIR)), ".json")
        decided = (commits & intents) - self._done
        if not self._primed:
            self._primed = True
            before = decided & _numbers(fs.list(self.checkpoint.path(RESOLVED_DIR)))
            self._done |= before
            decided -= before
        if not decided:
            return []
        for batch in decided:
            self._seen.setdefault(batch, self._decided_at(batch, now))
        resolved = decided & _numbers(fs.list(self.checkpoint.path(RESOLVED_DIR)))
        if decided - resolved:
            committed = set(self._commit())
            resolved |= committed & decided
            resolved |= (decided - resolved) & _numbers(fs.list(self.checkpoint.path(RESOLVED_DIR)))
        end = self._clock()
        query_id = self._query_id()
        for batch in sorted(resolved):
            started = self._seen.pop(batch, end)
            self.lag.record(batch, self._resolved_at(batch, end) - started, query_id)
            self._done.add(batch)
        if len(self._done) > 2 * LAG_SAMPLES:  # forgotten batches: keep the set bounded
            self._done = {b for b in self._done if b in commits}
        return sorted(resolved)

    def _mtime(self, *names: str) -> float | None:
        if not self._local:
            return None  # a remote store: when this committer saw the file
        try:
            return local_path(self.checkpoint.path(*names)).stat().st_mtime
        except (OSError, ValueError):
            return None

    def _decided_at(self, batch: int, now: float) -> float:
        found = self._mtime(COMMITS_DIR, str(batch))
        return min(found, now) if found is not None else now

    def _resolved_at(self, batch: int, now: float) -> float:
        found = self._mtime(RESOLVED_DIR, str(batch))
        return min(found, now) if found is not None else now

    def _failed(self, exc: Exception) -> None:
        now = self._clock()
        if self._failing_since is None:
            self._failing_since = now
        fatal = False
        if isinstance(exc, DecidedBatchAbortedError):
            fatal = True
        elif isinstance(exc, ResolveError):
            self._resolve_failures += 1
            fatal = self._resolve_failures >= RESOLVE_ATTEMPTS
        else:
            fatal = now - self._failing_since >= self.failure_timeout_s
        if not fatal:
            self._delay = min(MAX_BACKOFF_S, max(self.poll_s, self._delay * 2))
            log.warning(
                "committing the decided batches of %s failed, retrying in %.1fs: %s",
                self.checkpoint,
                self._delay,
                exc,
            )
            return
        self.error = exc
        log.error(
            "committing the decided batches of %s failed for good, stopping the query: %s",
            self.checkpoint,
            exc,
        )
        try:
            self._on_fatal(exc)
        except Exception as stop_exc:
            log.error("stopping the query after the commit failure failed: %r", stop_exc)
