"""The online migration of a group between the protocols, on Apache Kafka: the scenario our
broker's interop test runs (tests/interop/test_consumer_groups.py) gives the same group types
and a disjoint cover of the partitions on the reference."""

from __future__ import annotations

import pytest

from tests.interop.test_consumer_groups import (
    _group_type,
    _kip848_member,
    assignments,
    consumer,
    topic_with_records,
)
from tests.reference.kafka import ReferenceKafka

pytestmark = pytest.mark.reference


def test_mixed_group_upgrade_and_downgrade_on_kafka(reference_kafka: ReferenceKafka) -> None:
    b = reference_kafka.bootstrap_servers
    topic = topic_with_records(b, 6, 30)
    group = "mixed-reference"
    classic = [consumer(b, group, "range") for _ in range(2)]
    for c in classic:
        c.subscribe([topic])
    assignments(classic, 6, timeout_s=60)
    assert "CLASSIC" in _group_type(b, group)
    modern = _kip848_member(b, group, topic)
    assignments([*classic, modern], 6, timeout_s=90)
    assert "CONSUMER" in _group_type(b, group)
    modern.close()
    assignments(classic, 6, timeout_s=90)
    assert "CLASSIC" in _group_type(b, group)
    for c in classic:
        c.close()
