"""The file system a query's checkpoint lives on: one small interface, several stores.

Every read and write of Spark's files and of sharetxn's intents and resolved markers goes
through ``CheckpointFS``.  Implementations:

- ``LocalFS`` (here): plain paths and ``file:`` URIs on a POSIX file system; an atomic
  write is temp file, fsync, rename, fsync of the directory.
- ``producer.twophase.hadoop_fs.HadoopFS``: Hadoop's FileSystem API through the driver's JVM,
  with Spark's own ``CheckpointFileManager`` (rename where the store renames atomically,
  the abortable stream on object stores), so every URI Spark accepts works.
- ``producer.spark.fs_server.RemoteFS``: the source's driver-side reader runs in a Python
  worker with no JVM; it reaches the driver's ``HadoopFS`` over an authenticated loopback
  connection (docs/design.md, "Checkpoints on any file system").

Locations are strings (a URI or a path); ``join`` appends names with ``/``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import uuid
from pathlib import Path
from typing import Protocol, runtime_checkable
from urllib.parse import urlparse

from txn.durable_fs import fsync_dir


@runtime_checkable
class CheckpointFS(Protocol):
    """What the integration needs from a checkpoint's store."""

    def read(self, path: str) -> bytes | None:
        """The whole file, or None when it does not exist."""
        ...

    def write_atomic(self, path: str, data: bytes) -> None:
        """Replace ``path`` with ``data``: readers see the old file or the new, never a part."""
        ...

    def list(self, directory: str) -> list[str]:
        """The names of the files directly in ``directory`` ([] when it does not exist)."""
        ...

    def exists(self, path: str) -> bool: ...

    def delete(self, path: str) -> None:
        """Remove a file; a missing one is fine."""
        ...

    def lock_key(self, location: str) -> str:
        """A local lock file serialising the resolvers of the query at ``location``."""
        ...


def join(base: str, *names: str) -> str:
    out = base.rstrip("/") or "/"
    for name in names:
        out = f"{out.rstrip('/')}/{name}"
    return out


def scheme(location: str) -> str:
    """The URI scheme of a location ('' for a plain path)."""
    parsed = urlparse(location)
    # A Windows-style drive letter is not a scheme; neither is anything on a plain path.
    return parsed.scheme.lower() if len(parsed.scheme) > 1 else ""


def is_local(location: str) -> bool:
    return scheme(location) in ("", "file")


def local_path(location: str | os.PathLike[str]) -> Path:
    """A plain path or ``file:`` URI as an absolute local path."""
    text = os.fspath(location)
    parsed = urlparse(text)
    if scheme(text) == "file":
        return Path(parsed.path).absolute()
    if scheme(text):
        msg = f"{text!r} is not a local path"
        raise ValueError(msg)
    return Path(text).expanduser().absolute()


def lock_dir() -> Path:
    """Where resolve locks of non-local checkpoints live on this host."""
    env = os.environ.get("SHARETXN_LOCK_DIR")
    return Path(env) if env else Path(tempfile.gettempdir()) / "sharetxn-locks"


def host_lock_file(location: str) -> str:
    """A per-host lock file for a checkpoint that is not on a local file system."""
    digest = hashlib.sha256(location.rstrip("/").encode()).hexdigest()[:32]
    return str(lock_dir() / f"{digest}.lock")


def default_lock_key(location: str) -> str:
    """The resolve lock of a query: beside a local checkpoint, else in a per-host directory."""
    if is_local(location):
        return str(local_path(location) / ".sharetxn-resolve.lock")
    return host_lock_file(location)


class LocalFS:
    """A POSIX file system: plain paths and ``file:`` URIs."""

    def _p(self, path: str) -> Path:
        return local_path(path)

    def read(self, path: str) -> bytes | None:
        try:
            return self._p(path).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def write_atomic(self, path: str, data: bytes) -> None:
        target = self._p(path)
        directory = target.parent
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / f".{target.name}.{uuid.uuid4().hex}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        os.close(fd)
        os.replace(tmp, target)
        fsync_dir(directory)

    def list(self, directory: str) -> list[str]:
        try:
            return sorted(p.name for p in self._p(directory).iterdir() if p.is_file())
        except (FileNotFoundError, NotADirectoryError):
            return []

    def exists(self, path: str) -> bool:
        return self._p(path).exists()

    def delete(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._p(path).unlink()

    def lock_key(self, location: str) -> str:
        return default_lock_key(location)


LOCAL = LocalFS()
