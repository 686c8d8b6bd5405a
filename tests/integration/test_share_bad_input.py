"""Bad share acknowledgements get Kafka's errors and change nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from coordinator.launcher import LocalBroker
from producer.admin import Admin, TopicSpec
from tests.kafka_wire import WireClient
from txn.errors import ErrorCode

pytestmark = pytest.mark.integration

GROUP = "bad-acks"


@pytest.fixture
def wire_and_topic(broker: LocalBroker) -> Iterator[tuple[WireClient, uuid.UUID]]:
    b = broker.bootstrap_servers
    with Admin(b) as admin:
        admin.create_topics([TopicSpec("bad", 1)])
        admin.alter_group_configs(GROUP, {"share.auto.offset.reset": "earliest"})
        topic_id = admin.client.topic("bad").topic_id
    producer = Producer({"bootstrap.servers": b})
    for i in range(10):
        producer.produce("bad", value=str(i).encode())
    assert producer.flush(10) == 0
    client = WireClient(b)
    for member in ("member-a", "member-b"):
        hb = client.request(
            76,
            1,
            {
                "group_id": GROUP,
                "member_id": member,
                "member_epoch": 0,
                "subscribed_topic_names": ["bad"],
            },
        )
        assert int(hb.error_code) == 0
    yield client, topic_id
    client.close()


def fetch(
    client: WireClient,
    topic_id: uuid.UUID,
    member: str,
    epoch: int,
    acks: list[dict[str, Any]] | None = None,
) -> Any:
    return client.request(
        78,
        1,
        {
            "group_id": GROUP,
            "member_id": member,
            "share_session_epoch": epoch,
            "max_wait": 500,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "max_records": 500,
            "batch_size": 500,
            "topics": [
                {
                    "topic_id": topic_id,
                    "partitions": [{"partition_index": 0, "acknowledgement_batches": acks or []}],
                }
            ],
        },
    )


def ack(
    client: WireClient,
    topic_id: uuid.UUID,
    member: str,
    epoch: int,
    batches: list[tuple[int, int, list[int]]],
) -> tuple[int, int]:
    resp = client.request(
        79,
        1,
        {
            "group_id": GROUP,
            "member_id": member,
            "share_session_epoch": epoch,
            "topics": [
                {
                    "topic_id": topic_id,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "acknowledgement_batches": [
                                {"first_offset": f, "last_offset": la, "acknowledge_types": t}
                                for f, la, t in batches
                            ],
                        }
                    ],
                }
            ],
        },
    )
    part = resp.responses[0].partitions[0].error_code if resp.responses else 0
    return int(resp.error_code), int(part)


def test_bad_acknowledgements_change_nothing(wire_and_topic: tuple[WireClient, uuid.UUID]) -> None:
    client, topic_id = wire_and_topic
    first = fetch(client, topic_id, "member-a", 0)
    acquired = first.responses[0].partitions[0].acquired_records
    assert [(int(r.first_offset), int(r.last_offset)) for r in acquired] == [(0, 9)]

    # wrong session epoch (the next expected is 1)
    assert (
        ack(client, topic_id, "member-a", 7, [(0, 9, [1])])[0]
        == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    )
    # a member without a session
    assert (
        ack(client, topic_id, "member-b", 1, [(0, 9, [1])])[0] == ErrorCode.SHARE_SESSION_NOT_FOUND
    )
    # overlapping and descending batches
    assert (
        ack(client, topic_id, "member-a", 1, [(0, 5, [1]), (5, 9, [1])])[1]
        == ErrorCode.INVALID_REQUEST
    )
    assert (
        ack(client, topic_id, "member-a", 2, [(6, 9, [1]), (0, 5, [1])])[1]
        == ErrorCode.INVALID_REQUEST
    )
    # offsets the partition never delivered
    assert ack(client, topic_id, "member-a", 3, [(50, 60, [1])])[1] in (
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_RECORD_STATE,
    )
    # an unknown acknowledge type
    assert ack(client, topic_id, "member-a", 4, [(0, 9, [9])])[1] == ErrorCode.INVALID_REQUEST
    # another member may not acknowledge member-a's records
    fetch(client, topic_id, "member-b", 0)
    assert ack(client, topic_id, "member-b", 1, [(0, 9, [1])])[1] == ErrorCode.INVALID_RECORD_STATE

    # nothing changed: member-a still owns all ten records and can accept them
    assert ack(client, topic_id, "member-a", 5, [(0, 9, [1])]) == (0, 0)
    again = fetch(client, topic_id, "member-a", 6)
    # nothing left to acquire: an incremental answer leaves the quiet partition out (as Kafka)
    assert [p for t in again.responses for p in t.partitions if p.acquired_records] == []
