"""Share-group set-ups the client tests share: a broker with short locks, a topic to read."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from coordinator.launcher import LocalBroker
from producer.admin import Admin, TopicSpec

#: Broker minimums lowered so that record locks and share sessions time out within seconds.
FAST_LOCKS = {
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.min.session.timeout.ms": "2000",
    "group.share.min.heartbeat.interval.ms": "500",
}


def fast_lock_broker(factory: pytest.TempPathFactory, name: str) -> Iterator[LocalBroker]:
    """A broker with ``FAST_LOCKS`` in a new temporary directory, for a fixture to yield."""
    with LocalBroker(data_dir=factory.mktemp(name), config=FAST_LOCKS) as broker:
        yield broker


def share_topic(
    bootstrap: str, partitions: int, group: str, group_configs: dict[str, str], prefix: str = "t"
) -> str:
    """A new empty topic, and ``group`` configured to read it from the earliest offset."""
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    with Admin(bootstrap) as admin:
        assert admin.create_topics([TopicSpec(topic, partitions)])[topic] == 0
        admin.alter_group_configs(group, {"share.auto.offset.reset": "earliest", **group_configs})
    return topic
