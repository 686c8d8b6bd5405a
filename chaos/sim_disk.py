"""A simulated disk under the broker's storage seam (``coordinator.log.storage``).

Every log is a list of batches in memory, split in two: the first ``synced`` batches are
durable (an fsync covered them), the rest live only in the "page cache".  ``SimDisk.crash``
models a power loss: each log keeps its durable batches and, at random, a prefix of random
length of its unsynced bytes -- nothing, some whole batches, or some batches and a *torn*
piece of the next one.  The surviving bytes are the log's disk image; opening the log again
(a new ``BrokerCore`` over the same disk) recovers it the way ``FileLog`` does: batches are
parsed and CRC-checked from the start, and the log is truncated at the first incomplete or
corrupt batch.

Faults inside a storage call are injected by a hook (``SimDisk.fault``) that the simulator
arms: at four points (before an append writes anything, after it wrote but before the flush
policy ran, before an fsync, after an fsync) it may raise ``SimCrash`` -- the broker dies in
the middle of the call -- or, before an append, ``OSError`` (a failed write that changed
nothing).  ``SimCrash`` derives from ``BaseException`` so that the product's ``except
Exception`` handlers cannot swallow the crash.

The log start offset (DeleteRecords, share-state pruning) is kept as a checkpoint written
atomically, so it is durable at once, as in ``FileLog``; so is ``truncate_to``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from coordinator.log.memory_log import (
    BatchListLog,
    FlushPolicy,
    KeptStorage,
    MemoryData,
    check_config,
    store_batch,
    validate_batch,
)
from coordinator.log.storage import LogConfig
from txn.batch import HEADER_SIZE, BatchFormatError, BatchHeader, crc_ok, parse_header
from txn.errors import ClosedError


class SimCrash(BaseException):
    """The simulated broker process dies here (raised from inside a storage call)."""

    def __init__(self, point: str, log_name: str) -> None:
        super().__init__(f"crash at {point} on {log_name}")
        self.point = point
        self.log_name = log_name


# Fault points passed to the hook.
APPEND_BEFORE = "append-before"  # nothing written yet
APPEND_AFTER = "append-after"  # bytes written, not synced, caller not told
FLUSH_BEFORE = "flush-before"  # bytes not synced yet
FLUSH_AFTER = "flush-after"  # bytes synced, caller not told

FaultHook = Callable[[str, str], None]
"""(point, log name) -> None; may raise SimCrash or (at APPEND_BEFORE) OSError."""


@dataclass
class _LogData(MemoryData):
    """One log on the simulated disk: a memory log's batches, and which of them are durable."""

    synced: int = 0  # batches [0, synced) are durable
    # After a crash: the surviving bytes of the unsynced tail, recovered (parsed and truncated)
    # on next open; the durable batches [0, synced) are whole and intact and stay as they are.
    image: bytes | None = None


@dataclass
class DiskStats:
    appends: int = 0
    fsyncs: int = 0
    crashes: int = 0
    torn_tails: int = 0
    lost_batches: int = 0
    kept_unsynced_batches: int = 0
    recovered_truncations: int = 0
    io_errors: int = 0


class SimLog(BatchListLog):
    """A ``PartitionLog`` on the simulated disk."""

    _data: _LogData

    def __init__(self, disk: SimDisk, name: str, data: _LogData, config: LogConfig) -> None:
        check_config(config)
        self._disk = disk
        self._name = name
        self._data = data
        self._config = config
        self._policy = FlushPolicy(config)
        self._closed = False

    @property
    def name(self) -> str:
        return self._name

    @property
    def unsynced_batches(self) -> int:
        return len(self._data.blobs) - self._data.synced

    def append(self, batch: bytes | bytearray | memoryview, now_ms: int) -> BatchHeader:
        self._check_open()
        header = validate_batch(batch)
        self._disk.fault(APPEND_BEFORE, self._name)
        header = store_batch(self._data, header, batch, now_ms, self._config)
        self._disk.stats.appends += 1
        self._disk.fault(APPEND_AFTER, self._name)
        if self._policy.record_append(header.records_count, now_ms):
            self.flush()
        return header

    def flush(self) -> None:
        self._check_open()
        data = self._data
        if data.synced == len(data.blobs):
            self._policy.reset()
            return
        self._disk.fault(FLUSH_BEFORE, self._name)
        data.synced = len(data.blobs)
        self._disk.stats.fsyncs += 1
        self._policy.reset()
        self._disk.fault(FLUSH_AFTER, self._name)

    def _after_cut(self) -> None:
        data = self._data
        data.synced = min(data.synced, len(data.blobs))

    def _after_drop(self, dropped: int) -> None:
        data = self._data
        data.synced = max(0, data.synced - dropped)

    def replace_segments(self, contents: dict[int, list[bytes]], cleaned_offset: int) -> None:
        """Durable at once, like truncate_to (the swap is atomic on a real disk)."""
        self._check_open()
        data = self._data
        delta = data.segments.replace(data, contents)
        data.synced = max(0, min(len(data.blobs), data.synced + delta))
        data.cleaned_offset = cleaned_offset

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError(f"log {self._name} is closed")


def _recover(data: _LogData, image: bytes) -> int:
    """Rebuild ``data`` after a crash from its durable batches and the surviving bytes
    ``image`` of its unsynced tail; returns the number of bytes truncated away.

    As ``FileLog`` does on the whole file: batches are parsed and CRC-checked in order and the
    log ends at the first incomplete, corrupt or out-of-sequence one (the durable prefix, which
    an fsync covered, is intact, so only the tail needs the check)."""
    synced = data.synced
    del data.bases[synced:], data.headers[synced:], data.blobs[synced:]
    pos = 0
    expected: int | None = data.headers[-1].last_offset + 1 if data.headers else None
    while pos + HEADER_SIZE <= len(image):
        try:
            header = parse_header(image, pos)
        except BatchFormatError:
            break
        if pos + header.size > len(image) or not crc_ok(image, pos, header):
            break
        if expected is not None and header.base_offset != expected:
            break
        blob = image[pos : pos + header.size]
        data.bases.append(header.base_offset)
        data.headers.append(header)
        data.blobs.append(blob)
        expected = header.last_offset + 1
        pos += header.size
    dropped = len(image) - pos
    # An empty log keeps its start offset (the checkpoint) as its end.
    data.end = data.headers[-1].last_offset + 1 if data.headers else data.start
    data.synced = len(data.blobs)
    data.image = None
    data.segments.resync(data.bases, data.headers, data.end)
    return dropped


class SimDisk(KeptStorage[SimLog, _LogData]):
    """A ``Storage`` whose unsynced bytes a simulated crash loses or tears."""

    def __init__(self, rng: random.Random, default_config: LogConfig | None = None) -> None:
        super().__init__(default_config)
        self._rng = rng
        self.stats = DiskStats()
        # Set by the simulator; None means no faults.
        self.hook: FaultHook | None = None
        # Probability that a crash keeps a random prefix of a log's unsynced bytes.
        self.keep_unsynced_probability = 0.5

    # -- Storage --------------------------------------------------------------------------------

    def _new_log(self, topic: str, partition: int, config: LogConfig) -> SimLog:
        data = self._data.setdefault((topic, partition), _LogData())
        if data.image is not None and _recover(data, data.image) > 0:
            self.stats.recovered_truncations += 1
        return SimLog(self, f"{topic}-{partition}", data, config)

    # -- faults ---------------------------------------------------------------------------------

    def fault(self, point: str, log_name: str) -> None:
        hook = self.hook
        if hook is not None:
            hook(point, log_name)

    def crash(self) -> None:
        """Power loss: unsynced bytes are lost, partly kept, or torn; every open log closes."""
        self.stats.crashes += 1
        self.close()
        for key in sorted(self._data):
            data = self._data[key]
            unsynced = b"".join(data.blobs[data.synced :])
            kept = b""
            if unsynced:
                if self._rng.random() < self.keep_unsynced_probability:
                    kept = unsynced[: self._rng.randrange(len(unsynced) + 1)]
                whole = _whole_batches(kept)
                self.stats.kept_unsynced_batches += whole
                self.stats.lost_batches += len(data.blobs) - data.synced - whole
                if _is_torn(kept):
                    self.stats.torn_tails += 1
            data.image = kept

    def unsynced(self) -> dict[str, int]:
        """Log name -> batches not yet synced (for tests)."""
        return {
            f"{t}-{p}": len(d.blobs) - d.synced
            for (t, p), d in sorted(self._data.items())
            if len(d.blobs) > d.synced
        }

    def batch_count(self, topic: str, partition: int) -> int:
        data = self._data.get((topic, partition))
        return 0 if data is None else len(data.blobs)


def _split_whole(raw: bytes) -> tuple[int, int]:
    """(whole batches, bytes they cover) at the start of ``raw``."""
    count = 0
    pos = 0
    while pos + HEADER_SIZE <= len(raw):
        header = parse_header(raw, pos)
        if pos + header.size > len(raw):
            break
        count += 1
        pos += header.size
    return count, pos


def _whole_batches(raw: bytes) -> int:
    return _split_whole(raw)[0]


def _is_torn(raw: bytes) -> bool:
    return _split_whole(raw)[1] != len(raw)
