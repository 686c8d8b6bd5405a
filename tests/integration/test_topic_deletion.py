"""Deleting a topic deletes what the groups keep of it (Kafka's behaviour): a consumer
group's committed offsets and a share group's state.  A topic re-created under the same name
after a broker restart starts clean."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, Producer

from coordinator.launcher import LocalBroker
from producer.admin import Admin, TopicSpec
from tests.interop.test_share_consumer import consumer, poll_until
from tests.share_setup import FAST_LOCKS, share_topic
from txn.errors import ErrorCode
from txn.ids import TopicPartition

pytestmark = pytest.mark.integration


def _produce(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, value=f"r{i}".encode(), partition=0)
    assert producer.flush(30) == 0


def test_recreated_topic_has_no_offsets_and_no_share_state(tmp_path: Path) -> None:
    with LocalBroker(data_dir=tmp_path / "d", config=FAST_LOCKS) as broker:
        b = broker.bootstrap_servers
        topic = share_topic(b, 1, "shares", {}, prefix="del")
        tp = TopicPartition(topic, 0)
        _produce(b, topic, 3)
        with Admin(b) as admin:
            assert admin.alter_consumer_group_offsets("plain", {tp: 2}) == {tp: ErrorCode.NONE}
            assert admin.list_consumer_group_offsets("plain", [tp]) == {tp: 2}
        reader = consumer(b, "shares", "explicit")
        reader.subscribe([topic])
        got = poll_until(reader, 3)
        assert len(got) == 3
        for m in got:
            reader.acknowledge(m, AcknowledgeType.ACCEPT)
        reader.commit_sync(10)
        reader.close()
        with Admin(b) as admin:
            (before,) = admin.describe_share_group_offsets("shares", [topic])
            # As Kafka: the start offset written before the acknowledgement, none left over.
            assert (before.start_offset, before.lag) == (0, 0)
            assert admin.delete_topics([topic])[topic].error is ErrorCode.NONE

        broker.restart()  # the deletion's records are replayed from the coordinators' logs

        with Admin(b) as admin:
            assert admin.list_consumer_group_offsets("plain") == {}
            assert admin.create_topics([TopicSpec(topic, 1)])[topic] == 0
            assert admin.list_consumer_group_offsets("plain", [tp]) == {}
            (after,) = admin.describe_share_group_offsets("shares", [topic])
            assert after.start_offset == -1  # no share state under the new topic id yet
        _produce(b, topic, 1)
        again = consumer(b, "shares", "explicit")
        again.subscribe([topic])
        (first,) = poll_until(again, 1)
        assert first.offset() == 0  # read from the start ("earliest"), not from offset 3
        again.acknowledge(first, AcknowledgeType.ACCEPT)
        again.commit_sync(10)
        again.close()
        with Admin(b) as admin:
            (done,) = admin.describe_share_group_offsets("shares", [topic])
            assert (done.start_offset, done.lag) == (0, 0)
