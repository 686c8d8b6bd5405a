"""The log cleaner's crash-safe segment swap for ``FileLog``.

1. Each new segment is written to ``{base}.log.cleaned`` and fsynced.
2. A manifest ``cleaner-swap`` (JSON: the bases replaced, the bases removed, the new cleaner
   checkpoint) is written atomically (temp file, fsync, rename, fsync directory).  This is
   the commit point.
3. The ``.cleaned`` files are renamed over their ``.log`` files (``rename`` replaces
   atomically), removed segments are unlinked, ``cleaner-offset-checkpoint`` is written,
   and the manifest is removed.

Opening a log first finishes a committed swap (step 3 is idempotent) or, without a
manifest, discards ``.cleaned`` files: a crash leaves either every old segment or every new
one.  The checkpoint file also marks the log as compacted, which relaxes recovery's rule
that batch offsets are contiguous (compaction leaves gaps, as in Kafka).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from coordinator.log.data_dir import fsync_dir

CLEANED_SUFFIX = ".cleaned"
MANIFEST = "cleaner-swap"
CHECKPOINT = "cleaner-offset-checkpoint"


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    tmp.replace(path)


def _segment(directory: Path, base: int) -> Path:
    return directory / f"{base:020d}.log"


def stage_and_commit(
    directory: Path, contents: dict[int, list[bytes]], keep_empty: int, cleaned_offset: int
) -> None:
    """Steps 1 and 2: write the cleaned segments, then the manifest (the commit point).

    ``keep_empty`` is the base of a segment kept (empty) even when it has no batches left.
    """
    replaced: list[int] = []
    removed: list[int] = []
    for base, batches in sorted(contents.items()):
        if not batches and base != keep_empty:
            removed.append(base)
            continue
        replaced.append(base)
        _write_atomically(directory / f"{base:020d}.log{CLEANED_SUFFIX}", b"".join(batches))
    manifest = {"replaced": replaced, "removed": removed, "cleaned_offset": cleaned_offset}
    _write_atomically(directory / MANIFEST, json.dumps(manifest).encode())
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
        staged = directory / f"{int(base):020d}.log{CLEANED_SUFFIX}"
        if staged.exists():
            staged.replace(_segment(directory, int(base)))
    for base in manifest["removed"]:
        _segment(directory, int(base)).unlink(missing_ok=True)
        (directory / f"{int(base):020d}.index").unlink(missing_ok=True)
    _write_atomically(directory / CHECKPOINT, f"{int(manifest['cleaned_offset'])}\n".encode())
    fsync_dir(directory)
    manifest_path.unlink()
    fsync_dir(directory)


def write_checkpoint(directory: Path, cleaned_offset: int) -> None:
    """Record the cleaner checkpoint alone (a pass that changed no segment)."""
    _write_atomically(directory / CHECKPOINT, f"{cleaned_offset}\n".encode())
    fsync_dir(directory)


def read_checkpoint(directory: Path) -> int | None:
    try:
        return int((directory / CHECKPOINT).read_text(encoding="ascii").strip())
    except (FileNotFoundError, ValueError):
        return None
