"""What the Spark integration reads from, and writes next to, a query's checkpoint.

Python streaming sources are not told the checkpoint location (DESIGN §6), so the source
and the sink take it as an option and read Spark's own files: ``metadata`` (the query id),
``offsets/N`` (the batches planned) and ``commits/N`` (the decision).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

from producer.spark.errors import SparkConfigError
from recovery.model import CheckpointFormatError
from recovery.spark_checkpoint import read_query_id

_BATCH = re.compile(r"^(\d+)$")
LOCK_FILE = ".sharetxn-resolve.lock"


def local_path(location: str | os.PathLike[str]) -> Path:
    """A checkpoint location as a local path; only ``file:`` URIs and plain paths work.

    The intents must be written atomically (temp file, fsync, rename), which needs a
    POSIX file system shared by the driver's processes.
    """
    text = os.fspath(location)
    if not text:
        msg = "the checkpoint location is empty"
        raise SparkConfigError(msg)
    parsed = urlparse(text)
    if parsed.scheme in ("", "file"):
        return Path(parsed.path if parsed.scheme else text).expanduser().absolute()
    msg = (
        f"checkpoint location {text!r}: only local paths and file: URIs are supported "
        "(the intents are written with an atomic rename on a POSIX file system)"
    )
    raise SparkConfigError(msg)


def query_id(checkpoint: Path) -> str:
    """The query id from Spark's ``metadata`` file, which Spark writes when a query starts."""
    try:
        found = read_query_id(checkpoint / "metadata")
    except CheckpointFormatError as exc:
        raise SparkConfigError(str(exc)) from None
    if found is None:
        msg = (
            f"{checkpoint}/metadata does not exist: the checkpoint location given to sharetxn "
            "must be the query's checkpointLocation (and the query must have started)"
        )
        raise SparkConfigError(msg)
    return found


def _numbered(directory: Path) -> list[int]:
    if not directory.is_dir():
        return []
    return sorted(int(p.name) for p in directory.iterdir() if _BATCH.match(p.name))


def last_planned_batch(checkpoint: Path) -> int:
    """The highest N of ``offsets/N`` (Spark's write-ahead log of planned batches), or -1."""
    found = _numbered(checkpoint / "offsets")
    return found[-1] if found else -1


def planned_ticket(checkpoint: Path, batch: int) -> dict[str, int] | None:
    """The kafka-share ticket Spark stored in ``offsets/N`` (None: not ours or missing).

    A no-data batch (stateful queries) stores the previous ticket again, so the ticket of
    ``offsets/N`` is not always ``N``; this is what Spark compares the next offset with.
    """
    path = checkpoint / "offsets" / str(batch)
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    found: list[dict[str, int]] = []
    for line in lines[2:]:  # "v1", the batch metadata, then one offset per source
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and value.get("v") == 1 and isinstance(value.get("batch"), int):
            found.append({"v": 1, "batch": int(value["batch"])})
    if len(found) > 1:
        msg = (
            f"{path} holds {len(found)} kafka-share offsets: one kafka-share source per query "
            "(two would fence each other's transactions)"
        )
        raise SparkConfigError(msg)
    return found[0] if found else None


def is_planned(checkpoint: Path, batch: int) -> bool:
    return (checkpoint / "offsets" / str(batch)).is_file()


def is_committed(checkpoint: Path, batch: int) -> bool:
    return (checkpoint / "commits" / str(batch)).is_file()


@contextlib.contextmanager
def resolve_lock(state_dir: Path) -> Iterator[None]:
    """One resolver at a time per query on this host (the driver and its source worker)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(state_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
