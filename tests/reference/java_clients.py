"""Apache Kafka's Java clients as a test driver: ``java/Interop.java``, compiled once.

The Java program runs named scenarios (``SCENARIOS``) with ``KafkaProducer``,
``KafkaConsumer``, ``KafkaShareConsumer`` and ``Admin`` against any broker and prints one
JSON object per scenario: what the client observed, or ``"error"``.  ``javac`` compiles it
against the cached Kafka jars into ``<jars>/interop-classes/<hash of the source>/``, so a
session compiles at most once and a changed source compiles again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.reference.kafka import KAFKA_VERSION, classpath, jars_dir

SOURCE = Path(__file__).with_name("java") / "Interop.java"
MAIN = "Interop"

#: Every scenario the program knows, in the order a full run takes them.
SCENARIOS: tuple[str, ...] = (
    "producer_idempotent",
    "producer_transactions",
    "producer_fencing",
    "consumer_group_classic",
    "consumer_group_consumer",
    "consumer_group_pattern",
    "share_implicit",
    "share_explicit",
    "share_lock_timeout",
    "admin_topics_configs",
    "admin_share_offsets",
    "admin_transactions",
)


class InteropError(RuntimeError):
    """javac or the Java program failed outside any scenario."""


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        msg = f"{name} is not installed (the Java client tests need a JDK 17)"
        raise InteropError(msg)
    return path


def compiled(version: str = KAFKA_VERSION) -> Path:
    """The directory of the compiled classes, compiling on first use of this source."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    target = jars_dir(version) / "interop-classes" / digest
    if (target / f"{MAIN}.class").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".interop-", dir=target.parent))
    try:
        done = subprocess.run(
            [_tool("javac"), "-d", str(staging), "-cp", classpath(version), str(SOURCE)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0:
            msg = f"javac failed:\n{done.stdout}{done.stderr}"
            raise InteropError(msg)
        with contextlib.suppress(OSError):
            staging.rename(target)  # another process may have won the race: keep theirs
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def run_scenarios(
    bootstrap: str,
    scenarios: Sequence[str] = SCENARIOS,
    *,
    prefix: str | None = None,
    timeout_s: float = 300.0,
    version: str = KAFKA_VERSION,
) -> dict[str, dict[str, Any]]:
    """Run scenarios in one JVM against ``bootstrap``: scenario -> observation."""
    prefix = prefix or f"java-{uuid.uuid4().hex[:8]}"
    cmd = [
        _tool("java"),
        "-Xmx256m",
        "-XX:TieredStopAtLevel=1",
        "-XX:+UseSerialGC",
        "-Dlog4j2.level=WARN",
        "-cp",
        f"{classpath(version)}:{compiled(version)}",
        MAIN,
        bootstrap,
        prefix,
        *scenarios,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    results: dict[str, dict[str, Any]] = {}
    for line in done.stdout.splitlines():
        if line.startswith('{"scenario": '):
            row = json.loads(line)
            results[str(row.pop("scenario"))] = row
    missing = [name for name in scenarios if name not in results]
    if done.returncode != 0 or missing:
        msg = (
            f"Interop exited {done.returncode}, no result for {missing}:\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
        raise InteropError(msg)
    return results
