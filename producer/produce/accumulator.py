"""Per-partition record batches waiting for the sender, and the default partitioner.

``RecordAccumulator`` is the Java client's RecordAccumulator reduced to what a blocking
client needs: ``send`` appends a record to the open batch of its partition and gets a
future; the sender thread asks which partitions are ready (a batch is full, ``linger.ms``
has passed, a flush or close is waiting, or a retry's backoff is over) and drains at most
one batch per partition at a time.  A drained batch is either completed, failed, or put back
at the head of its queue to be retried with the same bytes (same sequence numbers), so order
within a partition survives retries.

The partitioner is Kafka's: murmur2 of the key for keyed records, and for records without a
key a sticky partition that moves on (round-robin) after about ``batch.size`` bytes, as the
KIP-794 uniform sticky partitioner does.
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import NamedTuple

from txn.batch import HEADER_SIZE, NO_SEQUENCE
from txn.errors import ClosedError
from txn.ids import TopicPartition

__all__ = [
    "ProducerBatch",
    "RecordAccumulator",
    "RecordMetadata",
    "StickyPartitioner",
    "murmur2",
    "partition_for_key",
    "record_size",
]

Header = tuple[str, bytes | None]


class RecordMetadata(NamedTuple):
    """Where a sent record was written.

    ``offset`` is -1 only when a broker reported a duplicate without the original offset;
    ``timestamp`` is the record's CreateTime in ms (the one given to ``send``, else the time
    of the batch's first record), or the time the broker appended it when the topic uses
    LogAppendTime (as Kafka's client).
    """

    topic: str
    partition: int
    offset: int
    timestamp: int


# -- partitioner ----------------------------------------------------------------------------

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK32 = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """MurmurHash2 (32 bit, seed 0x9747b28c) as Kafka's ``Utils.murmur2``, as a signed int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK32
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK32
        k ^= k >> 24
        k = (k * _M) & _MASK32
        h = ((h * _M) & _MASK32) ^ k
    rest = length % 4
    if rest == 3:
        h ^= data[whole + 2] << 16
    if rest >= 2:
        h ^= data[whole + 1] << 8
    if rest >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """Kafka's default partition of a keyed record: ``toPositive(murmur2(key)) % n``."""
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


class StickyPartitioner:
    """Partitions for records without a key: stick to one for ~batch.size bytes, then rotate."""

    def __init__(self, batch_size: int, rng: random.Random | None = None) -> None:
        self._batch_size = batch_size
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._current: dict[str, tuple[int, int]] = {}  # topic -> (partition, bytes produced)

    def partition(self, topic: str, num_partitions: int, size: int) -> int:
        with self._lock:
            current = self._current.get(topic)
            if current is None:
                partition, produced = self._rng.randrange(num_partitions), 0
            else:
                partition, produced = current
                if produced >= self._batch_size or partition >= num_partitions:
                    partition, produced = (partition + 1) % num_partitions, 0
            self._current[topic] = (partition, produced + size)
            return partition


def record_size(key: bytes | None, value: bytes | None, headers: Iterable[Header]) -> int:
    """An upper estimate of one record's encoded size in a RecordBatch v2."""
    size = 21 + len(key or b"") + len(value or b"")
    for hkey, hvalue in headers:
        size += 10 + len(hkey.encode()) + len(hvalue or b"")
    return size


# -- batches --------------------------------------------------------------------------------


@dataclass(eq=False)
class ProducerBatch:
    """Records of one partition sent together; encoded once, on its first send."""

    tp: TopicPartition
    created: float  # monotonic seconds
    timestamp_ms: int
    records: list[tuple[bytes | None, bytes | None]] = field(default_factory=list)
    headers: list[list[Header]] = field(default_factory=list)
    #: Each record's own CreateTime where ``send`` was given one (None: the batch's).
    timestamps: list[int | None] = field(default_factory=list)
    # None for a record sent without a future (``append(..., track=False)``).
    futures: list[Future[RecordMetadata] | None] = field(default_factory=list)
    size: int = HEADER_SIZE
    full: bool = False
    # Set when the sender first drains the batch; kept across retries.
    base_sequence: int = NO_SEQUENCE
    payload: bytes | None = None
    attempts: int = 0
    retry_at: float = 0.0
    # The request may have reached the broker (a network error): its fate is unknown.
    maybe_written: bool = False
    done: threading.Event = field(default_factory=threading.Event)
    # A batch split because the broker refused it as too large is done once its parts are.
    parent: ProducerBatch | None = None
    open_parts: int = 0

    @property
    def record_count(self) -> int:
        return len(self.records)

    def record_timestamps(self) -> list[int] | None:
        """Each record's CreateTime when some record has its own, else None (all the batch's)."""
        if not any(t is not None for t in self.timestamps):
            return None
        return [self.timestamp_ms if t is None else t for t in self.timestamps]

    def complete(self, base_offset: int, log_append_time_ms: int | None = None) -> None:
        own = self.record_timestamps()
        for index, future in enumerate(self.futures):
            if future is None:
                continue
            offset = base_offset + index if base_offset >= 0 else -1
            timestamp = (
                log_append_time_ms
                if log_append_time_ms is not None
                else own[index]
                if own is not None
                else self.timestamp_ms
            )
            _resolve(future, RecordMetadata(self.tp.topic, self.tp.partition, offset, timestamp))
        self.done.set()

    def fail(self, error: BaseException) -> None:
        for future in self.futures:
            if future is not None and not future.done():
                future.set_exception(error)
        self.done.set()


def _resolve(future: Future[RecordMetadata], value: RecordMetadata) -> None:
    if not future.done():
        future.set_result(value)


class RecordAccumulator:
    """Per-partition FIFO queues of batches, shared by callers of ``send`` and the sender."""

    def __init__(
        self,
        batch_size: int,
        linger_ms: int,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.batch_size = batch_size
        self.linger_s = linger_ms / 1000
        self.clock = clock
        self._cond = threading.Condition()
        self._queues: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._in_flight: set[TopicPartition] = set()
        self._incomplete: set[ProducerBatch] = set()
        self._flushing = 0
        self._closing = False
        self._wakeup = False

    # -- callers of send --------------------------------------------------------------------

    def append(
        self,
        tp: TopicPartition,
        key: bytes | None,
        value: bytes | None,
        headers: list[Header],
        timestamp_ms: int,
        record_timestamp_ms: int | None = None,
    ) -> Future[RecordMetadata]:
        """Add a record to ``tp``'s open batch (a new one if it would overflow batch.size);
        ``record_timestamp_ms``: the record's own CreateTime (None: ``timestamp_ms``, now)."""
        future: Future[RecordMetadata] = Future()
        future.set_running_or_notify_cancel()  # a record handed to the producer can't be taken back
        self._append(tp, key, value, headers, timestamp_ms, future, record_timestamp_ms)
        return future

    def append_untracked(
        self,
        tp: TopicPartition,
        key: bytes | None,
        value: bytes | None,
        headers: list[Header],
        timestamp_ms: int,
    ) -> None:
        """``append`` without a future: the caller learns the outcome from the batch's fate
        (in a transaction, a failed batch makes the transaction abortable)."""
        self._append(tp, key, value, headers, timestamp_ms, None)

    def _append(
        self,
        tp: TopicPartition,
        key: bytes | None,
        value: bytes | None,
        headers: list[Header],
        timestamp_ms: int,
        future: Future[RecordMetadata] | None,
        record_timestamp_ms: int | None = None,
    ) -> None:
        size = record_size(key, value, headers)
        with self._cond:
            if self._closing:
                msg = "the producer is closed"
                raise ClosedError(msg)
            queue = self._queues.setdefault(tp, deque())
            batch = queue[-1] if queue else None
            if batch is not None and (batch.full or batch.payload is not None):
                batch = None
            if batch is not None and batch.records and batch.size + size > self.batch_size:
                batch.full = True
                batch = None
            if batch is None:
                batch = ProducerBatch(tp, self.clock(), timestamp_ms)
                queue.append(batch)
                self._incomplete.add(batch)
                self._wake_locked()
            batch.records.append((key, value))
            batch.headers.append(headers)
            batch.timestamps.append(record_timestamp_ms)
            batch.futures.append(future)
            batch.size += size
            if batch.size >= self.batch_size:
                batch.full = True
                self._wake_locked()

    # -- the sender -------------------------------------------------------------------------

    def ready(self, now: float) -> tuple[list[TopicPartition], float | None]:
        """Partitions with a batch to send now, and seconds until the next one may be."""
        ready: list[TopicPartition] = []
        wait: float | None = None
        with self._cond:
            urgent = self._flushing > 0 or self._closing
            for tp, queue in self._queues.items():
                if not queue or tp in self._in_flight:
                    continue
                head = queue[0]
                if head.retry_at > now:
                    wait = _min(wait, head.retry_at - now)
                    continue
                due = head.created + self.linger_s
                if head.payload is not None or head.full or len(queue) > 1 or urgent or due <= now:
                    ready.append(tp)
                else:
                    wait = _min(wait, due - now)
        return ready, wait

    def drain(self, partitions: Iterable[TopicPartition]) -> list[ProducerBatch]:
        """Take the head batch of each partition; it is in flight until done or re-enqueued."""
        out: list[ProducerBatch] = []
        with self._cond:
            for tp in partitions:
                queue = self._queues.get(tp)
                if not queue or tp in self._in_flight:
                    continue
                batch = queue.popleft()
                batch.full = True  # no more records once it has left the queue
                self._in_flight.add(tp)
                out.append(batch)
        return out

    def reenqueue(self, batch: ProducerBatch, retry_at: float) -> None:
        """Put a drained batch back at the head of its queue, to be retried unchanged."""
        with self._cond:
            batch.retry_at = retry_at
            self._queues.setdefault(batch.tp, deque()).appendleft(batch)
            self._in_flight.discard(batch.tp)
            self._wake_locked()

    def split_and_reenqueue(self, batch: ProducerBatch) -> int:
        """Kafka's ``splitAndReenqueue``: the records of a drained batch the broker refused as
        too large, in new batches at the head of its queue (in order); how many.

        Each new batch holds at most ``batch.size`` bytes of records (one record at least), as
        Kafka's split; when that leaves the batch whole it is cut in halves, so a split always
        makes progress.  The new batches keep the batch's creation time (its delivery timeout)
        and take new sequence numbers when first sent.
        """
        groups = _split_groups(batch, self.batch_size)
        parts = [
            ProducerBatch(
                batch.tp,
                batch.created,
                batch.timestamp_ms,
                records=[batch.records[i] for i in group],
                headers=[batch.headers[i] for i in group],
                timestamps=[batch.timestamps[i] for i in group] if batch.timestamps else [],
                futures=[batch.futures[i] for i in group],
                size=HEADER_SIZE
                + sum(record_size(*batch.records[i], batch.headers[i]) for i in group),
                full=True,
                parent=batch,
            )
            for group in groups
        ]
        with self._cond:
            batch.open_parts = len(parts)
            queue = self._queues.setdefault(batch.tp, deque())
            for part in reversed(parts):
                queue.appendleft(part)
            self._incomplete.update(parts)
            self._incomplete.discard(batch)
            self._in_flight.discard(batch.tp)
            self._wake_locked()
        return len(parts)

    def complete(
        self, batch: ProducerBatch, base_offset: int, log_append_time_ms: int | None = None
    ) -> None:
        batch.complete(base_offset, log_append_time_ms)
        self._finished(batch)

    def fail(self, batch: ProducerBatch, error: BaseException) -> None:
        batch.fail(error)
        self._finished(batch)

    def _finished(self, batch: ProducerBatch) -> None:
        with self._cond:
            self._in_flight.discard(batch.tp)
            self._incomplete.discard(batch)
            parent = batch.parent
            while parent is not None:  # a split batch is done with its last part
                parent.open_parts -= 1
                if parent.open_parts > 0:
                    break
                parent.done.set()
                parent = parent.parent
            self._cond.notify_all()

    def fail_incomplete(self, error: BaseException) -> None:
        """Resolve every batch not yet done, in flight or not, with ``error`` (force close)."""
        with self._cond:
            batches = list(self._incomplete)
            for queue in self._queues.values():
                queue.clear()
        for batch in batches:
            self.fail(batch, error)

    def queued_partitions(self) -> set[TopicPartition]:
        """Partitions with a batch waiting (not counting the one in flight)."""
        with self._cond:
            return {tp for tp, queue in self._queues.items() if queue}

    def take_undrained(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> list[ProducerBatch]:
        """Remove every waiting batch (of ``partitions``, or all) so the caller can fail it."""
        out: list[ProducerBatch] = []
        with self._cond:
            wanted = set(self._queues) if partitions is None else set(partitions)
            for tp in wanted:
                queue = self._queues.get(tp)
                while queue:
                    out.append(queue.popleft())
        return out

    def take_expired(self, now: float, delivery_timeout_s: float) -> list[ProducerBatch]:
        """Remove waiting batches older than delivery.timeout.ms."""
        out: list[ProducerBatch] = []
        with self._cond:
            for queue in self._queues.values():
                keep = [b for b in queue if b.created + delivery_timeout_s > now]
                if len(keep) != len(queue):
                    out.extend(b for b in queue if b.created + delivery_timeout_s <= now)
                    queue.clear()
                    queue.extend(keep)
        return out

    def wait_for_work(self, timeout_s: float | None) -> None:
        """Block the sender until an append, flush, close or re-enqueue, or the timeout."""
        with self._cond:
            if not self._wakeup:
                self._cond.wait(timeout_s)
            self._wakeup = False

    def wake(self) -> None:
        with self._cond:
            self._wake_locked()

    def _wake_locked(self) -> None:
        self._wakeup = True
        self._cond.notify_all()

    # -- flush and close --------------------------------------------------------------------

    def begin_flush(self) -> list[ProducerBatch]:
        """Make every batch ready now; returns the batches the flush must wait for."""
        with self._cond:
            self._flushing += 1
            self._wake_locked()
            return list(self._incomplete)

    def end_flush(self) -> None:
        with self._cond:
            self._flushing -= 1

    def await_batches(self, batches: list[ProducerBatch], deadline: float | None) -> int:
        """Wait until ``batches`` are done or the deadline; returns how many are still pending."""
        with self._cond:
            while True:
                pending = sum(1 for b in batches if not b.done.is_set())
                if pending == 0:
                    return 0
                remaining = None if deadline is None else deadline - self.clock()
                if remaining is not None and remaining <= 0:
                    return pending
                self._cond.wait(remaining)

    def close(self) -> None:
        """No more appends; every waiting batch becomes ready."""
        with self._cond:
            self._closing = True
            self._wake_locked()

    @property
    def closing(self) -> bool:
        with self._cond:
            return self._closing

    def has_incomplete(self) -> bool:
        with self._cond:
            return bool(self._incomplete)

    def incomplete_count(self) -> int:
        with self._cond:
            return len(self._incomplete)


def _split_groups(batch: ProducerBatch, batch_size: int) -> list[list[int]]:
    """The record indexes of each part of ``batch`` (see ``split_and_reenqueue``)."""
    groups: list[list[int]] = []
    size = HEADER_SIZE
    for index, (key, value) in enumerate(batch.records):
        record = record_size(key, value, batch.headers[index])
        if not groups or (len(groups[-1]) > 0 and size + record > batch_size):
            groups.append([])
            size = HEADER_SIZE
        groups[-1].append(index)
        size += record
    if len(groups) < 2:
        half = (batch.record_count + 1) // 2
        indexes = list(range(batch.record_count))
        groups = [indexes[:half], indexes[half:]]
    return groups


def _min(a: float | None, b: float) -> float:
    return b if a is None else min(a, b)
