"""The log cleaner's crash-safe segment swap for ``FileLog``.

1. Each new segment is written to ``{base}.log.cleaned`` with the old segment's
   modification time (Kafka's cleaner keeps it, for retention) and fsynced.
2. A manifest ``cleaner-swap`` (JSON: the bases replaced, the bases removed, the new cleaner
   checkpoint) is written atomically (temp file, fsync, rename, fsync directory).  This is
   the commit point.
3. Each old ``.log`` file is renamed to a ``.deleted`` name (``FileLog`` removes it after
   ``file.delete.delay.ms``, so a reader of the old segment keeps its bytes meanwhile) and
   each ``.cleaned`` file is renamed to ``.log``; then ``cleaner-offset-checkpoint`` is
   written and the manifest removed (``complete``).

Opening a log first removes ``.deleted`` files, then finishes a committed swap (``finish``:
step 3 is idempotent, whichever rename a crash interrupted) or, without a manifest, discards
``.cleaned`` files: a crash leaves either every old segment or every new one.  The
checkpoint file also marks the log as compacted, which relaxes recovery's rule that batch
offsets are contiguous (compaction leaves gaps, as in Kafka).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from coordinator.log.data_dir import fsync_dir

CLEANED_SUFFIX = ".cleaned"
MANIFEST = "cleaner-swap"
CHECKPOINT = "cleaner-offset-checkpoint"


def _write_atomically(path: Path, data: bytes, mtime_ms: int | None = None) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if mtime_ms is not None:
            os.utime(fd, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
        os.fsync(fd)
    finally:
        os.close(fd)
    tmp.replace(path)


def _segment(directory: Path, base: int) -> Path:
    return directory / f"{base:020d}.log"


def staged(directory: Path, base: int) -> Path:
    return directory / f"{base:020d}.log{CLEANED_SUFFIX}"


@dataclass(frozen=True, slots=True)
class Staged:
    """A cleaned segment the cleaner wrote to its ``staged`` path already (step 1 without
    the fsync), through its bounded write buffer."""

    path: str
    size_bytes: int


#: Per replaced segment: its batches, or the file the cleaner staged them in.
Contents = Mapping[int, Sequence[bytes] | Staged]


def _seal(path: Path, mtime_ms: int | None) -> None:
    """Step 1's end for a segment written elsewhere: its time, then fsync."""
    fd = os.open(path, os.O_WRONLY)
    try:
        if mtime_ms is not None:
            os.utime(fd, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
        os.fsync(fd)
    finally:
        os.close(fd)


def stage_and_commit(
    directory: Path,
    contents: Contents,
    keep_empty: int,
    cleaned_offset: int,
    mtimes_ms: dict[int, int] | None = None,
) -> tuple[list[int], list[int]]:
    """Steps 1 and 2: write the cleaned segments, then the manifest (the commit point).

    ``keep_empty`` is the base of a segment kept (empty) even when it has no batches left;
    ``mtimes_ms`` the modification times the new files take.  Returns the bases replaced and
    the bases removed.
    """
    mtimes = mtimes_ms or {}
    replaced: list[int] = []
    removed: list[int] = []
    for base, batches in sorted(contents.items()):
        empty = batches.size_bytes == 0 if isinstance(batches, Staged) else not batches
        if empty and base != keep_empty:
            if isinstance(batches, Staged):
                Path(batches.path).unlink(missing_ok=True)
            removed.append(base)
            continue
        replaced.append(base)
        if isinstance(batches, Staged):
            _seal(staged(directory, base), mtimes.get(base))
        else:
            _write_atomically(staged(directory, base), b"".join(batches), mtimes.get(base))
    manifest = {"replaced": replaced, "removed": removed, "cleaned_offset": cleaned_offset}
    _write_atomically(directory / MANIFEST, json.dumps(manifest).encode())
    fsync_dir(directory)
    return replaced, removed


def install(directory: Path, base: int) -> None:
    """Step 3 for one replaced segment, once its old file was renamed away."""
    staged(directory, base).replace(_segment(directory, base))


def complete(directory: Path, cleaned_offset: int) -> None:
    """The end of step 3: the checkpoint, then the manifest goes."""
    fsync_dir(directory)
    _write_atomically(directory / CHECKPOINT, f"{cleaned_offset}\n".encode())
    fsync_dir(directory)
    (directory / MANIFEST).unlink()
    fsync_dir(directory)


def finish(directory: Path) -> None:
    """Step 3 (or its completion after a crash); without a manifest, drop staged files."""
    manifest_path = directory / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text(encoding="ascii"))
    except FileNotFoundError:
        for leftover in directory.glob(f"*{CLEANED_SUFFIX}"):
            leftover.unlink()
        return
    for base in manifest["replaced"]:
        if staged(directory, int(base)).exists():
            install(directory, int(base))
    for base in manifest["removed"]:
        _segment(directory, int(base)).unlink(missing_ok=True)
        (directory / f"{int(base):020d}.index").unlink(missing_ok=True)
    complete(directory, int(manifest["cleaned_offset"]))


def write_checkpoint(directory: Path, cleaned_offset: int) -> None:
    """Record the cleaner checkpoint alone (a pass that changed no segment)."""
    _write_atomically(directory / CHECKPOINT, f"{cleaned_offset}\n".encode())
    fsync_dir(directory)


def read_checkpoint(directory: Path) -> int | None:
    try:
        return int((directory / CHECKPOINT).read_text(encoding="ascii").strip())
    except (FileNotFoundError, ValueError):
        return None
