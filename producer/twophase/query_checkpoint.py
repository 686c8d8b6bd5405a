"""A Spark query's checkpoint location as the commit phase and start-up recovery use it.

``QueryCheckpoint`` is the location on its store (a ``CheckpointFS``): paths in it, the
batches Spark planned, the sink's files read as a ``CheckpointView``, the resolvers'
audit log and their lock.  ``producer.spark.checkpoint.Checkpoint`` adds what only the
Spark integration asks (the query id, the kafka-share tickets, the configuration checks).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import re
from collections.abc import Iterator
from pathlib import Path

from producer.twophase.checkpoint_fs import LOCAL, CheckpointFS, host_lock_file, is_local, join
from producer.twophase.checkpoint_fs import local_path as _local_path
from producer.twophase.spark_checkpoint import CheckpointView, read_checkpoint

__all__ = ["AUDIT_LOG", "QueryCheckpoint"]

_BATCH = re.compile(r"^(\d+)$")
AUDIT_LOG = "sharetxn-recovery.jsonl"


@dataclasses.dataclass(frozen=True)
class QueryCheckpoint:
    """A query's checkpoint location on its store (``location`` is fully qualified)."""

    location: str
    fs: CheckpointFS = LOCAL

    def path(self, *names: str) -> str:
        return join(self.location, *names)

    def __str__(self) -> str:
        return self.location

    def _numbered(self, directory: str) -> list[int]:
        return sorted(int(n) for n in self.fs.list(self.path(directory)) if _BATCH.match(n))

    def planned_batches(self) -> list[int]:
        """Every N of ``offsets/N`` (Spark's write-ahead log of planned batches)."""
        return self._numbered("offsets")

    def view(self, *, unresolved_only: bool = False) -> CheckpointView:
        return read_checkpoint(
            self.location, self.location, fs=self.fs, unresolved_only=unresolved_only
        )

    def audit_log(self) -> Path:
        """The resolvers' JSONL audit log: next to the state when local, else on this host.

        It is an operator's trace; what recovery must know after a move of the driver (the
        commits begun) is written ahead to ``committing/N`` in the checkpoint itself.
        """
        if is_local(self.location):
            return _local_path(self.location) / AUDIT_LOG
        return Path(host_lock_file(self.location)).with_suffix(".jsonl")

    @contextlib.contextmanager
    def resolve_lock(self) -> Iterator[None]:
        """One resolver at a time per query on this host.

        Every resolver of a running query runs on the driver's host (the driver process
        and the Python worker of its source), so a local lock serialises them; for a
        checkpoint that is not local the lock file lives in a per-host directory.
        """
        lock = Path(self.fs.lock_key(self.location))
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
