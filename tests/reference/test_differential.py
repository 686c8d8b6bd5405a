"""The differential conformance suite: every scenario against Apache Kafka and sharetxn.

Fails on any difference not listed in ``KNOWN_DIFFERENCES`` (each explained in
``docs/conformance.md``) or ``PENDING`` (open, its fix planned elsewhere); prints the table
either way.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from coordinator.launcher import LocalBroker
from tests.reference.conftest import kafka_node
from tests.reference.differential.framework import REGISTRY, run_all, table
from tests.reference.differential.suite import KNOWN_DIFFERENCES, PENDING, SETTINGS
from tests.reference.kafka import ReferenceKafka

pytestmark = pytest.mark.reference


@pytest.fixture(scope="module")
def kafka_for_diff(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceKafka]:
    yield from kafka_node(tmp_path_factory.mktemp("diff-kafka"), SETTINGS)


def test_registry_is_large_and_named() -> None:
    assert len(REGISTRY) >= 80
    assert {s.area for s in REGISTRY.values()} >= {
        "produce-fetch",
        "transactions",
        "share",
        "consumer-groups",
        "malformed",
    }
    assert set(KNOWN_DIFFERENCES) <= set(REGISTRY), "a documented difference names no scenario"
    assert set(PENDING) <= set(REGISTRY), "a pending difference names no scenario"
    assert not set(PENDING) & set(KNOWN_DIFFERENCES)


def test_sharetxn_answers_like_apache_kafka(
    kafka_for_diff: ReferenceKafka, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with LocalBroker(data_dir=tmp_path_factory.mktemp("diff-sharetxn"), config=SETTINGS) as ours:
        outcomes = run_all(
            kafka_for_diff.bootstrap_servers,
            ours.bootstrap_servers,
            KNOWN_DIFFERENCES,
            pending=PENDING,
        )
    report = table(outcomes)
    print(report)
    fixed = [o.name for o in outcomes if o.name in PENDING and o.status == "identical"]
    if fixed:
        print(f"pending but now identical (remove from PENDING): {', '.join(fixed)}")
    open_ = [o for o in outcomes if o.status == "open"]
    assert not open_, f"{len(open_)} open differences:\n{report}"
