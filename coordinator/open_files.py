"""The process's open-file limit, and running out of descriptors at start.

Segment files are opened on demand through a bounded cache (``coordinator.log.handles``,
``sharetxn.log.max.open.files``, half the open-file limit by default), so partitions do not
hold descriptors and the limit does not bound how many a broker holds.  At start the broker
still raises its soft ``RLIMIT_NOFILE`` to the hard limit (what an operator would do with
``ulimit -n``): more room for connections and cached files.  Running out of descriptors while
opening the data directory anyway (the rest of the process took them) is a clear message
instead of a traceback.
"""

from __future__ import annotations

import errno
import logging
import resource
from pathlib import Path

log = logging.getLogger("sharetxn.broker")
#: What an unlimited open-file limit is taken for.
_UNLIMITED = 1 << 20


def raise_open_file_limit() -> int:
    """Raise the soft open-file limit to the hard one; the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    unlimited = resource.RLIM_INFINITY
    if soft == unlimited:
        return _UNLIMITED
    target = _UNLIMITED if hard == unlimited else hard
    if soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as exc:
            log.warning("cannot raise the open-file limit from %d to %d: %s", soft, target, exc)
    return int(soft)


def is_out_of_files(exc: OSError) -> bool:
    return exc.errno in (errno.EMFILE, errno.ENFILE)


def out_of_files_message(data_dir: Path, open_files: int, partitions: int, cached: int) -> str:
    return (
        f"too many open files opening the logs in {data_dir}: it holds {partitions} "
        f"partition(s), the open-file limit is {open_files} and up to {cached} of them are "
        "for segment files (sharetxn.log.max.open.files); raise the limit (ulimit -n, "
        "LimitNOFILE) and start again"
    )


def count_partition_dirs(data_dir: Path) -> int:
    """Partition directories in the data directory (a figure for the message above)."""
    try:
        return sum(1 for path in data_dir.iterdir() if path.is_dir() and "-" in path.name)
    except OSError:
        return -1
