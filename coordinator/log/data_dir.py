"""The data directory's lock and identity, as Kafka keeps them in each log directory.

* ``.lock``: an exclusive ``flock`` held for the broker's lifetime.  A second broker started
  on the same directory fails at once with a clear message instead of running beside the
  first (both would append to the same segments, and the next restart would truncate what
  one of them acknowledged).  The lock goes with the process, so a kill -9 never leaves a
  stale one behind.
* ``meta.properties`` (``version``, ``cluster.id``, ``node.id``): written on first start,
  atomically; afterwards it must name this node.  The cluster id is what Metadata and
  DescribeCluster answer, stable across restarts as in Kafka.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import os
import uuid
from pathlib import Path

LOCK_FILE = ".lock"
META_FILE = "meta.properties"


def fsync_dir(path: Path) -> None:
    """Make file creations, renames and deletions in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class DataDirError(Exception):
    """The data directory cannot be used (locked by another broker, or another node's)."""


class DataDirLock:
    """The exclusive lock on a data directory (``with DataDirLock(path): ...``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        lock_path = self.path / LOCK_FILE
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            msg = (
                f"data directory {self.path} is in use by another broker"
                f" (it holds the lock {lock_path}); stop it first or use another --data-dir"
            )
            raise DataDirError(msg) from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> DataDirLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def random_cluster_id() -> str:
    """A cluster id in Kafka's form: a UUID in URL-safe base64 without padding."""
    # As Kafka's Uuid.randomUuid: never one starting with "-" (command lines would read it
    # as an option).
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _read_properties(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def ensure_meta_properties(path: Path, node_id: int = 1) -> str:
    """The directory's cluster id; ``meta.properties`` is created on first use."""
    meta = path / META_FILE
    if meta.exists():
        try:
            props = _read_properties(meta)
        except (OSError, UnicodeDecodeError) as exc:
            msg = f"{meta} cannot be read: {exc}"
            raise DataDirError(msg) from exc
        if props.get("node.id", str(node_id)) != str(node_id):
            msg = f"{meta} belongs to node {props.get('node.id')}, not to node {node_id}"
            raise DataDirError(msg)
        cluster_id = props.get("cluster.id")
        if not cluster_id:
            msg = f"{meta} has no cluster.id"
            raise DataDirError(msg)
        return cluster_id
    cluster_id = random_cluster_id()
    text = (
        "#\n# sharetxn: the identity of this data directory (Kafka's meta.properties)\n"
        f"version=1\ncluster.id={cluster_id}\nnode.id={node_id}\n"
    )
    tmp = meta.with_suffix(".tmp")
    with open(tmp, "w") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, meta)
    fsync_dir(path)
    return cluster_id
