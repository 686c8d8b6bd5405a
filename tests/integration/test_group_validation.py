"""ConsumerGroupHeartbeat's member id and OffsetCommit's unknown topics, as Apache Kafka 4.4."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coordinator.launcher import LocalBroker
from producer.protocol.connection import BrokerConnection
from tests.integration.test_internal_topics import connect, create_topic
from txn.api_keys import ApiKey
from txn.errors import ErrorCode

pytestmark = pytest.mark.integration

E = ErrorCode


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[BrokerConnection]:
    with LocalBroker(data_dir=tmp_path / "data") as broker:
        c = connect(broker)
        try:
            assert int(create_topic(c, "orders").error_code) == E.NONE
            yield c
        finally:
            c.close()


def heartbeat(c: BrokerConnection, version: int, member_id: str, epoch: int) -> Any:
    body: dict[str, Any] = {
        "group_id": "g",
        "member_id": member_id,
        "member_epoch": epoch,
        "rebalance_timeout": 30000 if epoch == 0 else -1,
        "subscribed_topic_names": ["orders"] if epoch == 0 else None,
        "topic_partitions": [] if epoch == 0 else None,
    }
    return c.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, body)


def test_an_empty_member_id_is_refused_from_v1(conn: BrokerConnection) -> None:
    for version, epoch in ((1, 0), (1, 1), (1, -1), (0, 1), (0, -1)):
        resp = heartbeat(conn, version, "", epoch)
        assert (int(resp.error_code), resp.error_message) == (
            E.INVALID_REQUEST,
            "MemberId can't be empty.",
        ), (version, epoch)
    # v0 still lets the coordinator name a joining member (KIP-848 before KIP-1082)
    joined = heartbeat(conn, 0, "", 0)
    assert int(joined.error_code) == E.NONE and joined.member_id
    named = heartbeat(conn, 1, "client-chosen-id", 0)
    assert int(named.error_code) == E.NONE and named.member_id == "client-chosen-id"


def commit(c: BrokerConnection, parts: dict[str, list[int]]) -> dict[tuple[str, int], int]:
    body = {
        "group_id": "committer",
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [
            {
                "name": name,
                "partitions": [
                    {
                        "partition_index": p,
                        "committed_offset": 3,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                    for p in ps
                ],
            }
            for name, ps in parts.items()
        ],
    }
    resp = c.request(ApiKey.OFFSET_COMMIT, 9, body)
    return {
        (t.name, int(p.partition_index)): int(p.error_code)
        for t in resp.topics
        for p in t.partitions
    }


def test_offset_commit_refuses_unknown_topics_and_partitions(conn: BrokerConnection) -> None:
    assert commit(conn, {"missing": [0]}) == {("missing", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert commit(conn, {"orders": [0, 4], "missing": [1]}) == {
        ("orders", 0): E.NONE,
        ("orders", 4): E.UNKNOWN_TOPIC_OR_PARTITION,
        ("missing", 1): E.UNKNOWN_TOPIC_OR_PARTITION,
    }
    fetched = conn.request(
        ApiKey.OFFSET_FETCH,
        8,
        {"groups": [{"group_id": "committer", "topics": None}], "require_stable": False},
    )
    (group,) = fetched.groups
    assert [(t.name, [int(p.partition_index) for p in t.partitions]) for t in group.topics] == [
        ("orders", [0])
    ]
