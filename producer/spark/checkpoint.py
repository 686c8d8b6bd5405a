"""What the Spark integration reads from, and writes next to, a query's checkpoint.

Python streaming sources are not told the checkpoint location (DESIGN §6), so the source
and the sink are given it and read Spark's own files: ``metadata`` (the query id),
``offsets/N`` (the batches planned) and ``commits/N`` (the decision).  Every access goes
through a ``CheckpointFS`` (``producer.twophase.checkpoint_fs``): Hadoop's FileSystem API through
the driver's JVM for any URI Spark accepts, a local POSIX fallback for plain paths and
``file:`` URIs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

from producer.spark.errors import SparkConfigError
from producer.twophase.checkpoint_fs import (
    LOCAL,
    CheckpointFS,
    host_lock_file,
    is_local,
    join,
)
from producer.twophase.checkpoint_fs import local_path as _local_path
from producer.twophase.model import CheckpointFormatError
from producer.twophase.spark_checkpoint import CheckpointView, read_checkpoint, read_query_id

_BATCH = re.compile(r"^(\d+)$")
LOCK_FILE = ".sharetxn-resolve.lock"
AUDIT_LOG = "sharetxn-recovery.jsonl"


def local_path(location: str | os.PathLike[str]) -> Path:
    """A checkpoint location as a local path; only ``file:`` URIs and plain paths."""
    text = os.fspath(location)
    if not text:
        msg = "the checkpoint location is empty"
        raise SparkConfigError(msg)
    if not is_local(text):
        msg = (
            f"checkpoint location {text!r} is not on a local file system: use "
            "ExactlyOnce.read_stream, which reaches it through the driver's Hadoop FileSystem"
        )
        raise SparkConfigError(msg)
    return _local_path(text)


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """A query's checkpoint location on its store (``location`` is fully qualified)."""

    location: str
    fs: CheckpointFS = LOCAL

    @classmethod
    def local(cls, location: str | os.PathLike[str]) -> Checkpoint:
        return cls(str(local_path(location)), LOCAL)

    def path(self, *names: str) -> str:
        return join(self.location, *names)

    def __str__(self) -> str:
        return self.location

    def query_id(self) -> str:
        """The query id from Spark's ``metadata`` file, which Spark writes at query start."""
        try:
            found = read_query_id(self.path("metadata"), self.fs)
        except CheckpointFormatError as exc:
            raise SparkConfigError(str(exc)) from None
        if found is None:
            msg = (
                f"{self.path('metadata')} does not exist: the checkpoint location given to "
                "sharetxn must be the query's checkpointLocation (and the query must have "
                "started)"
            )
            raise SparkConfigError(msg)
        return found

    def _numbered(self, directory: str) -> list[int]:
        return sorted(int(n) for n in self.fs.list(self.path(directory)) if _BATCH.match(n))

    def last_planned_batch(self) -> int:
        """The highest N of ``offsets/N`` (Spark's write-ahead log of planned batches), or -1."""
        found = self._numbered("offsets")
        return found[-1] if found else -1

    def planned_batches(self) -> list[int]:
        return self._numbered("offsets")

    def planned_ticket(self, batch: int) -> dict[str, int] | None:
        """The kafka-share ticket Spark stored in ``offsets/N`` (None: not ours or missing).

        A no-data batch (stateful queries) stores the previous ticket again, so the ticket
        of ``offsets/N`` is not always ``N``; this is what Spark compares the next offset
        with.
        """
        path = self.path("offsets", str(batch))
        data = self.fs.read(path)
        if data is None:
            return None
        found: list[dict[str, int]] = []
        for line in data.decode(errors="replace").splitlines()[2:]:
            # "v1", the batch metadata, then one offset per source
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if (
                isinstance(value, dict)
                and value.get("v") == 1
                and isinstance(value.get("batch"), int)
            ):
                found.append({"v": 1, "batch": int(value["batch"])})
        if len(found) > 1:
            msg = (
                f"{path} holds {len(found)} kafka-share offsets: one kafka-share source per "
                "query (two would fence each other's transactions)"
            )
            raise SparkConfigError(msg)
        return found[0] if found else None

    def is_planned(self, batch: int) -> bool:
        return self.fs.exists(self.path("offsets", str(batch)))

    def is_committed(self, batch: int) -> bool:
        return self.fs.exists(self.path("commits", str(batch)))

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
