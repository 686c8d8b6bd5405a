"""One Apache Kafka node per test session (started on first use), for tests/reference/."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.reference.kafka import ReferenceKafka, java_available


@pytest.fixture(scope="session")
def reference_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceKafka]:
    if not java_available():
        pytest.skip("Apache Kafka needs a Java runtime: java is not on PATH")
    node = ReferenceKafka(tmp_path_factory.mktemp("reference-kafka"))
    try:
        node.start()
    except Exception as exc:
        pytest.fail(f"Apache Kafka did not start: {exc}\n{node.log_tail()}", pytrace=False)
    yield node
    node.stop()
