"""The sharetxn Admin client against a real broker process."""

from __future__ import annotations

import threading

import pytest
from confluent_kafka import Producer

from coordinator.launcher import LocalBroker
from producer.admin import Admin, TopicSpec
from txn.errors import ErrorCode, UnknownTopicOrPartitionError
from txn.ids import TopicPartition

pytestmark = pytest.mark.integration


def test_topics_and_transactions(broker: LocalBroker) -> None:
    with Admin(broker.bootstrap_servers) as admin:
        assert admin.create_topics([TopicSpec("a", 2), TopicSpec("b", 1)]) == {
            "a": ErrorCode.NONE,
            "b": ErrorCode.NONE,
        }
        assert admin.create_topics([TopicSpec("a", 2)]) == {"a": ErrorCode.TOPIC_ALREADY_EXISTS}
        assert admin.list_topics() == {"a": [0, 1], "b": [0]}
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.client.topic("missing")

        producer = Producer(
            {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "t1"}
        )
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce("a", b"x", partition=1)
        producer.flush(10)

        listings = admin.list_transactions()
        assert [(t.transactional_id, t.state) for t in listings] == [("t1", "Ongoing")]
        (described,) = admin.describe_transactions(["t1"])
        assert described.state == "Ongoing"
        assert described.partitions == (TopicPartition("a", 1),)
        (unknown,) = admin.describe_transactions(["nobody"])
        assert unknown.error is ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        (state,) = admin.describe_producers(TopicPartition("a", 1))
        assert state.producer_id == described.producer_id
        assert state.current_txn_start_offset == 0

        producer.commit_transaction(30)
        assert admin.describe_transactions(["t1"])[0].state == "CompleteCommit"
        assert admin.list_transactions(states=["Ongoing"]) == []


def test_list_and_describe_transactions_wait_out_a_broker_restart(broker: LocalBroker) -> None:
    """Recovery lists and describes transactions right after a crash: a lost connection and a
    coordinator still loading are retried, not raised (``sharetxn recover`` on restart)."""
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "r"})
    producer.init_transactions(30)
    producer.flush(10)
    del producer  # destroyed: its reconnect attempts would log during the outage
    with Admin(broker.bootstrap_servers) as admin:
        assert admin.describe_transactions(["r"])[0].state == "Empty"
        broker.kill()
        restart = threading.Timer(1.0, broker.start)
        restart.start()
        try:
            (described,) = admin.describe_transactions(["r"])
        finally:
            restart.join()
        assert (described.error, described.state) == (ErrorCode.NONE, "Empty")
        broker.kill()
        restart = threading.Timer(1.0, broker.start)
        restart.start()
        try:
            listed = admin.list_transactions()
        finally:
            restart.join()
        assert [(t.transactional_id, t.state) for t in listed] == [("r", "Empty")]
