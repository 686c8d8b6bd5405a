"""Apache Kafka nodes for tests/reference/, one of each per test session (started on first use).

``reference_kafka`` runs Kafka's stock settings; ``kafka_2pc`` has KIP-939 on
(``transaction.two.phase.commit.enable=true``; InitProducerId v6 is an unstable API
version in 4.4) and reaps timed-out transactions every 500 ms.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reference.kafka import ReferenceKafka, java_available

#: Kafka 4.4 serves InitProducerId v6 (KIP-939) only as an unstable API version.
KIP939_SETTINGS = {
    "transaction.two.phase.commit.enable": "true",
    "unstable.api.versions.enable": "true",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
}


def kafka_node(directory: Path, settings: dict[str, str] | None = None) -> Iterator[ReferenceKafka]:
    """A started Apache Kafka node, stopped when the caller is done (skips without Java)."""
    if not java_available():
        pytest.skip("Apache Kafka needs a Java runtime: java is not on PATH")
    node = ReferenceKafka(directory, settings=settings)
    try:
        node.start()
    except Exception as exc:
        pytest.fail(f"Apache Kafka did not start: {exc}\n{node.log_tail()}", pytrace=False)
    yield node
    node.stop()


@pytest.fixture(scope="session")
def reference_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceKafka]:
    yield from kafka_node(tmp_path_factory.mktemp("reference-kafka"))


@pytest.fixture(scope="session")
def kafka_2pc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceKafka]:
    yield from kafka_node(tmp_path_factory.mktemp("kafka-2pc"), KIP939_SETTINGS)
