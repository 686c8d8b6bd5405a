"""Stock confluent-kafka consumer groups (classic protocol) against the broker."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from coordinator.launcher import LocalBroker
from producer import Admin
from txn.errors import ErrorCode, GroupIdNotFoundError
from txn.ids import TopicPartition as OurTopicPartition

pytestmark = pytest.mark.interop

FAST_GROUPS = {"group.initial.rebalance.delay.ms": "0"}


@pytest.fixture
def gbroker(tmp_path: Path) -> Iterator[LocalBroker]:
    with LocalBroker(data_dir=tmp_path / "data", config=FAST_GROUPS) as running:
        yield running


def topic_with_records(bootstrap: str, partitions: int, records: int) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(records):
        producer.produce(name, f"v{i}".encode(), partition=i % partitions)
    assert producer.flush(30) == 0
    return name


def subscribed(bootstrap: str, group: str, assignor: str, topic: str, count: int) -> list[Consumer]:
    """``count`` members of ``group`` (see ``consumer``), each subscribed to ``topic``."""
    members = [consumer(bootstrap, group, assignor) for _ in range(count)]
    for c in members:
        c.subscribe([topic])
    return members


def consumer(bootstrap: str, group: str, assignor: str = "range", **extra: object) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "partition.assignment.strategy": assignor,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            **extra,
        }
    )


def assignments(consumers: list[Consumer], want: int, timeout_s: float = 30) -> list[set[int]]:
    """Poll every consumer until their assignments are disjoint and cover ``want`` partitions."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.1)
        sets = [{tp.partition for tp in c.assignment()} for c in consumers]
        union = set().union(*sets)
        if len(union) == want and sum(len(s) for s in sets) == want and all(sets):
            return sets
    msg = f"no disjoint cover: {[c.assignment() for c in consumers]}"
    raise AssertionError(msg)


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "cooperative-sticky"])
def test_members_share_the_partitions_and_rebalance_on_leave(
    gbroker: LocalBroker, assignor: str
) -> None:
    b = gbroker.bootstrap_servers
    topic = topic_with_records(b, 6, 60)
    group = f"g-{assignor}"
    members = subscribed(b, group, assignor, topic, 3)
    sets = assignments(members, 6)
    assert all(len(s) == 2 for s in sets)
    members.pop().close()  # LeaveGroup: the other two take its partitions
    sets = assignments(members, 6)
    assert sorted(len(s) for s in sets) == [3, 3]
    for c in members:
        c.close()


KILLED_MEMBER = """
import sys, time
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
              "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
c.subscribe([sys.argv[3]])
while True:
    c.poll(0.2)
    if c.assignment():
        print("assigned", flush=True)
"""


def test_a_killed_member_times_out_and_its_partitions_move(gbroker: LocalBroker) -> None:
    b = gbroker.bootstrap_servers
    topic = topic_with_records(b, 4, 0)
    survivor = consumer(b, "g-kill")
    survivor.subscribe([topic])
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_MEMBER, b, "g-kill", topic],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(survivor.assignment()) != 2:
            survivor.poll(0.2)
        assert len(survivor.assignment()) == 2  # shared with the child
    finally:
        child.kill()
        child.communicate(timeout=10)
    assignments([survivor], 4, timeout_s=40)  # after the child's 6 s session
    survivor.close()


def test_committed_offsets_survive_a_broker_kill(tmp_path: Path) -> None:
    broker = LocalBroker(data_dir=tmp_path / "d", config=FAST_GROUPS).start()
    try:
        b = broker.bootstrap_servers
        topic = topic_with_records(b, 2, 20)
        c = consumer(b, "g-durable")
        c.subscribe([topic])
        seen = 0
        deadline = time.monotonic() + 30
        while seen < 20 and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                seen += 1
        c.commit(asynchronous=False)
        c.close()
        broker.kill()
        broker.start()
        admin = AdminClient({"bootstrap.servers": b})
        listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g-durable")])
        offsets = listed["g-durable"].result(30).topic_partitions
        assert sorted((tp.partition, tp.offset) for tp in offsets) == [(0, 10), (1, 10)]
        again = consumer(b, "g-durable")
        again.subscribe([topic])
        assert again.poll(3) is None  # nothing left to read: the group resumes at 10
        again.close()
    finally:
        broker.stop()


def test_offset_delete_refused_while_subscribed_kip_496(gbroker: LocalBroker) -> None:
    b = gbroker.bootstrap_servers
    topic = topic_with_records(b, 1, 5)
    c = consumer(b, "g-del")
    c.subscribe([topic])
    assignments([c], 1)
    c.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
    # confluent-kafka's Python AdminClient has no delete_consumer_group_offsets: ours sends
    # OffsetDelete (KIP-496) as Kafka's Admin.deleteConsumerGroupOffsets does.
    with Admin(b) as admin:
        tp = OurTopicPartition(topic, 0)
        error, results = admin.delete_consumer_group_offsets("g-del", [tp])
        assert (error, results) == (ErrorCode.NONE, {tp: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC})
        assert admin.list_consumer_group_offsets("g-del") == {tp: 3}
        c.close()
        error, results = admin.delete_consumer_group_offsets("g-del", [tp])
        assert (error, results) == (ErrorCode.NONE, {tp: ErrorCode.NONE})
        assert admin.list_consumer_group_offsets("g-del") == {}
        assert admin.delete_consumer_group_offsets("nope", [tp]) == (
            ErrorCode.GROUP_ID_NOT_FOUND,
            {},
        )


def test_admin_client_lists_describes_alters_and_deletes(gbroker: LocalBroker) -> None:
    b = gbroker.bootstrap_servers
    topic = topic_with_records(b, 2, 4)
    c = consumer(b, "g-admin", **{"client.id": "admin-test"})
    c.subscribe([topic])
    assignments([c], 2)
    admin = AdminClient({"bootstrap.servers": b})
    listed = admin.list_consumer_groups().result(30).valid
    assert [(g.group_id, str(g.state)) for g in listed if g.group_id == "g-admin"] == [
        ("g-admin", "ConsumerGroupState.STABLE")
    ]
    desc = admin.describe_consumer_groups(["g-admin"])["g-admin"].result(30)
    assert desc.partition_assignor == "range" and len(desc.members) == 1
    assert desc.members[0].client_id == "admin-test"
    assert sorted(tp.partition for tp in desc.members[0].assignment.topic_partitions) == [0, 1]
    c.close()
    altered = admin.alter_consumer_group_offsets(
        [
            ConsumerGroupTopicPartitions(
                "g-admin", [TopicPartition(topic, 0, 1), TopicPartition(topic, 1, 2)]
            )
        ]
    )["g-admin"].result(30)
    assert all(tp.error is None for tp in altered.topic_partitions)
    fetched = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g-admin")])
    assert sorted(
        (tp.partition, tp.offset) for tp in fetched["g-admin"].result(30).topic_partitions
    ) == [(0, 1), (1, 2)]
    admin.delete_consumer_groups(["g-admin"])["g-admin"].result(30)
    assert "g-admin" not in {g.group_id for g in admin.list_consumer_groups().result(30).valid}


def test_share_and_consumer_groups_share_one_namespace(gbroker: LocalBroker) -> None:
    from producer import ShareConsumer  # noqa: PLC0415

    b = gbroker.bootstrap_servers
    topic = topic_with_records(b, 1, 1)
    sc = ShareConsumer({"bootstrap.servers": b, "group.id": "taken"})
    sc.subscribe([topic])
    sc.poll(2)
    c = consumer(b, "taken")
    c.subscribe([topic])
    error = None
    deadline = time.monotonic() + 15
    while error is None and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is not None:
            error = m.error()
    assert error is not None and error.code() == KafkaError.INCONSISTENT_GROUP_PROTOCOL
    c.close()
    sc.close()
    # and the reverse: a share consumer on a consumer group's id
    with Admin(b) as admin:
        admin.alter_consumer_group_offsets("readers-only", {OurTopicPartition(topic, 0): 1})
    other = ShareConsumer({"bootstrap.servers": b, "group.id": "readers-only"})
    other.subscribe([topic])
    with pytest.raises(GroupIdNotFoundError, match="not a share group"):
        for _ in range(20):
            other.poll(0.5)
    other.close()


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_balanced_consumer(gbroker: LocalBroker) -> None:
    b = gbroker.bootstrap_servers
    topic = topic_with_records(b, 3, 30)
    done = subprocess.run(
        [
            "kcat",
            "-b",
            b,
            "-G",
            "kcat-group",
            "-X",
            "auto.offset.reset=earliest",
            "-X",
            "session.timeout.ms=6000",
            "-e",
            "-q",
            topic,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split()
    assert sorted(lines) == sorted(f"v{i}" for i in range(30))


KIP848 = {**FAST_GROUPS, "group.consumer.heartbeat.interval.ms": "500"}


def test_kip848_consumer_protocol(tmp_path: Path) -> None:
    """group.protocol=consumer: server-side assignment, revocation first, leave, offsets."""
    with LocalBroker(data_dir=tmp_path / "d", config=KIP848) as broker:
        b = broker.bootstrap_servers
        topic = topic_with_records(b, 6, 60)

        def member() -> Consumer:
            c = Consumer(
                {
                    "bootstrap.servers": b,
                    "group.id": "g-848",
                    "group.protocol": "consumer",
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": False,
                }
            )
            c.subscribe([topic])
            return c

        members = [member() for _ in range(3)]
        seen: set[bytes] = set()  # moved partitions may be read twice: nothing is committed yet
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for c in members:
                m = c.poll(0.1)
                if m is not None and m.error() is None:
                    seen.add(m.value())
            sets = [{tp.partition for tp in c.assignment()} for c in members]
            if len(seen) == 60 and all(len(s) == 2 for s in sets):
                break
        assert len(seen) == 60 and set().union(*sets) == set(range(6))
        for c in members:
            c.commit(asynchronous=False)
        members.pop().close()
        assignments(members, 6, timeout_s=30)
        admin = AdminClient({"bootstrap.servers": b})
        desc = admin.describe_consumer_groups(["g-848"])["g-848"].result(30)
        assert len(desc.members) == 2  # the classic encoding of a KIP-848 group's members
        owned = sorted(tp.partition for m in desc.members for tp in m.assignment.topic_partitions)
        assert owned == list(range(6))
        listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g-848")])
        offsets = listed["g-848"].result(30).topic_partitions
        assert sorted((tp.partition, tp.offset) for tp in offsets) == [(p, 10) for p in range(6)]
        before = {m.member_id for m in desc.members}
        broker.kill()  # the group's records are durable: the members go on at their epochs
        seen_lines = len(broker.output)
        broker.start()
        assignments(members, 6, timeout_s=30)
        fresh = AdminClient({"bootstrap.servers": b})  # not the one that saw the broker die
        desc = fresh.describe_consumer_groups(["g-848"])["g-848"].result(60)
        assert {m.member_id for m in desc.members} == before
        after = broker.output[seen_lines:]
        assert not any("joins" in line for line in after if "g-848" in line), after
        for c in members:
            c.close()


def _kip848_member(b: str, group: str, topic: str) -> Consumer:
    c = Consumer(
        {
            "bootstrap.servers": b,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    c.subscribe([topic])
    return c


def _group_type(b: str, group: str) -> str:
    admin = AdminClient({"bootstrap.servers": b})
    listed = admin.list_consumer_groups().result(30)
    types = {g.group_id: str(g.type) for g in listed.valid}
    return types.get(group, "missing")


@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
def test_mixed_group_upgrade_and_downgrade_online(tmp_path: Path, assignor: str) -> None:
    """Kafka 4.x's online migration: a KIP-848 member joins a classic group (upgrade), classic
    and KIP-848 members share the partitions, and the group becomes classic again when the
    KIP-848 member leaves (downgrade)."""
    with LocalBroker(data_dir=tmp_path / "d", config=KIP848) as broker:
        b = broker.bootstrap_servers
        topic = topic_with_records(b, 6, 30)
        group = f"mixed-{assignor}"
        classic = subscribed(b, group, assignor, topic, 2)
        assignments(classic, 6)
        assert "CLASSIC" in _group_type(b, group)
        modern = _kip848_member(b, group, topic)
        members = [*classic, modern]
        sets = assignments(members, 6, timeout_s=60)
        assert all(sets) and "CONSUMER" in _group_type(b, group)
        modern.close()  # the last KIP-848 member leaves: back to a classic group
        assignments(classic, 6, timeout_s=60)
        assert "CLASSIC" in _group_type(b, group)
        for c in classic:
            c.close()
