"""Apache Kafka as a bench case: the reference node of ``tests/reference/`` beside sharetxn.

``running()`` starts one Apache Kafka node (KRaft, combined broker+controller, 127.0.0.1,
free ports, a temporary data directory) with Kafka's defaults and yields its bootstrap
address and the pid of its JVM, whose ``/proc/<pid>/stat`` gives the broker CPU.  The jars
come from the cache ``python -m tests.reference.kafka fetch`` fills (resolved with mvn on
first use).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent  # bench/ runs as a script: find tests/
if sys.path[:1] != [str(_ROOT)]:
    # First, even when it is on the path already: bench/chaos.py (first on the path of a
    # script in bench/) would otherwise hide the chaos package tests/reference imports.
    sys.path.insert(0, str(_ROOT))

from tests.reference.kafka import (  # noqa: E402 - after the path above
    KAFKA_VERSION,
    ReferenceKafka,
    java_available,
)

__all__ = ["FLUSH_POLICY", "KAFKA_VERSION", "java_available", "running"]

#: Kafka's default flush policy, which the bench keeps (it is what a user runs).
FLUSH_POLICY = (
    "log.flush.interval.messages and log.flush.interval.ms unset (Kafka's default): no fsync "
    "on append, the OS writes the page cache back; durability comes from replication"
)


@contextlib.contextmanager
def running(settings: dict[str, str] | None = None, heap: str = "1g") -> Iterator[tuple[str, int]]:
    """(bootstrap, JVM pid) of a fresh Apache Kafka node, stopped on exit."""
    node = ReferenceKafka(settings=settings, heap=heap)
    node.start()
    try:
        assert node.proc is not None
        yield node.bootstrap_servers, node.proc.pid
    finally:
        node.stop()
