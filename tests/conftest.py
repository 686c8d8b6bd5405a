"""Shared fixtures: a real broker process on 127.0.0.1 with a real data directory."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

from coordinator.launcher import LocalBroker

# Tests write nothing into the checkout: hypothesis keeps no example database, and its
# caches go to the temporary directory instead of ./.hypothesis, here and in every process
# the tests start (kio imports hypothesis, which caches character tables on first use).
_HYPOTHESIS_HOME = os.path.join(tempfile.gettempdir(), "sharetxn-hypothesis")
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", _HYPOTHESIS_HOME)
settings.register_profile("sharetxn", database=None)
settings.load_profile("sharetxn")
set_hypothesis_home_dir(_HYPOTHESIS_HOME)

# Every JVM the tests start (Spark drivers and executors, the Apache Kafka reference broker,
# Kafka's tools and Java clients) lives for seconds to minutes on two cores: C1-only JIT and the
# serial collector start faster and leave the cores to the work (a Spark test ~25% faster).
# The benchmarks do not go through this file: they run the JVMs with their own defaults.
os.environ.setdefault("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[LocalBroker]:
    with LocalBroker(data_dir=tmp_path / "data") as running:
        yield running


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[type[LocalBroker]]:
    """Start brokers with custom settings; all are stopped at the end of the test."""
    started: list[LocalBroker] = []

    class Factory(LocalBroker):
        def __init__(self, **kwargs: object) -> None:
            kwargs.setdefault("data_dir", tmp_path / f"data{len(started)}")
            super().__init__(**kwargs)  # type: ignore[arg-type]
            started.append(self)

    yield Factory
    for b in started:
        b.stop()
