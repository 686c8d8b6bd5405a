"""What the Spark integration reads from, and writes next to, a query's checkpoint.

Python streaming sources are not told the checkpoint location (DESIGN §6), so the source
and the sink are given it and read Spark's own files: ``metadata`` (the query id),
``offsets/N`` (the batches planned) and ``commits/N`` (the decision).  Every access goes
through a ``CheckpointFS`` (``producer.twophase.checkpoint_fs``, reached through
``producer.twophase.query_checkpoint.QueryCheckpoint``): Hadoop's FileSystem API through
the driver's JVM for any URI Spark accepts, a local POSIX fallback for plain paths and
``file:`` URIs.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from producer.spark.errors import SparkConfigError
from producer.twophase.checkpoint_fs import LOCAL, is_local
from producer.twophase.checkpoint_fs import local_path as _local_path
from producer.twophase.model import CheckpointFormatError
from producer.twophase.query_checkpoint import AUDIT_LOG, QueryCheckpoint
from producer.twophase.spark_checkpoint import read_query_id

__all__ = ["AUDIT_LOG", "LOCK_FILE", "Checkpoint", "local_path"]

LOCK_FILE = ".sharetxn-resolve.lock"


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
class Checkpoint(QueryCheckpoint):
    """A query's checkpoint location on its store (``location`` is fully qualified).

    Paths, planned batches, the sink's files, the audit log and the resolve lock are
    ``QueryCheckpoint``'s (``producer.twophase``); this adds what the Spark integration
    asks of Spark's own files.
    """

    @classmethod
    def local(cls, location: str | os.PathLike[str]) -> Checkpoint:
        return cls(str(local_path(location)), LOCAL)

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

    def last_planned_batch(self) -> int:
        """The highest N of ``offsets/N`` (Spark's write-ahead log of planned batches), or -1."""
        found = self._numbered("offsets")
        return found[-1] if found else -1

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
