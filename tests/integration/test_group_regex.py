"""KIP-848 regex subscriptions on the real broker: the client library's
``GroupConsumer.subscribe_pattern`` and, with an authorizer, the DESCRIBE filtering."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AclOperation, ResourceType

from coordinator.launcher import LocalBroker
from producer import GroupConsumer
from tests.integration.test_group_consumer import FAST, member, wait_for
from tests.integration.test_security_acls import ALICE, CONFIG, allow, create_topic
from tests.interop.test_stock_clients import create_topic as create_plain_topic
from txn.errors import KafkaProtocolError
from txn.ids import TopicPartition

pytestmark = pytest.mark.integration


@pytest.fixture
def fbroker(tmp_path: Path) -> Iterator[LocalBroker]:
    with LocalBroker(data_dir=tmp_path / "data", config=FAST) as running:
        yield running


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for v in values:
        p.produce(topic, v)
    assert p.flush(10) == 0


def _topics(consumer: GroupConsumer) -> set[str]:
    consumer.poll(0)
    return {tp.topic for tp in consumer.assignment()}


def test_subscribe_pattern_reads_every_matching_topic_and_a_new_one(fbroker: LocalBroker) -> None:
    b = fbroker.bootstrap_servers
    run = uuid.uuid4().hex[:6]
    eu, us, other = f"orders-eu-{run}", f"orders-us-{run}", f"payments-{run}"
    for t in (eu, us, other):
        create_plain_topic(b, t, 1)
    _produce(b, eu, [b"e1"])
    _produce(b, us, [b"u1"])
    _produce(b, other, [b"p1"])
    c = member(b, f"g-{run}")
    try:
        c.subscribe_pattern(f"orders-.*-{run}")
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < 2 and time.monotonic() < deadline:
            got += [r.value or b"" for r in c.poll(0.1)]
        assert sorted(got) == [b"e1", b"u1"]
        assert c.subscription() == {eu, us}
        late = f"orders-asia-{run}"
        create_plain_topic(b, late, 1)
        _produce(b, late, [b"a1"])
        # the coordinator resolves again at a heartbeat 10 s after the last resolution
        deadline = time.monotonic() + 40
        while b"a1" not in got and time.monotonic() < deadline:
            got += [r.value or b"" for r in c.poll(0.1)]
        assert b"a1" in got
        assert TopicPartition(late, 0) in c.assignment()
    finally:
        c.close()


def test_an_invalid_pattern_fails_the_poll(fbroker: LocalBroker) -> None:
    c = member(fbroker.bootstrap_servers, f"g-{uuid.uuid4().hex[:6]}")
    try:
        c.subscribe_pattern("orders-(?=eu)")
        with pytest.raises(KafkaProtocolError, match="not a valid regular expression"):
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                c.poll(0.1)
    finally:
        c.close()


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    data = tmp_path_factory.mktemp("regex-acl") / "data"
    with LocalBroker(data_dir=data, config={**CONFIG, **FAST}) as b:
        yield b


def test_a_pattern_resolves_to_the_topics_the_member_may_describe(
    acl_broker: LocalBroker,
) -> None:
    run = uuid.uuid4().hex[:6]
    visible, hidden, group = f"rx-visible-{run}", f"rx-hidden-{run}", f"g-{run}"
    create_topic(acl_broker, visible)
    create_topic(acl_broker, hidden)
    allow(acl_broker, ResourceType.GROUP, group, AclOperation.READ)
    allow(acl_broker, ResourceType.TOPIC, visible, AclOperation.READ)  # READ implies DESCRIBE
    c = GroupConsumer(
        {
            "bootstrap.servers": acl_broker.bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **ALICE,
        }
    )
    try:
        c.subscribe_pattern(f"rx-.*-{run}")
        wait_for(lambda: _topics(c) == {visible})
        time.sleep(1)
        assert _topics(c) == {visible}  # never the topic alice may not describe
    finally:
        c.close()
