"""KIP-1251 assignment epochs survive compaction of ``__consumer_offsets`` and a restart.

A KIP-848 member may commit at an earlier member epoch for the partitions it was assigned at
that epoch and still holds.  Each partition's assignment epoch is written in the member's
current-assignment record (Kafka 4.4's tagged ``AssignmentEpochs``), so once the cleaner has
removed the member's earlier records, a broker reloaded from its data directory still
accepts the earlier epoch -- not only until the next rebalance.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from coordinator.group.consumer_records import (
    CURRENT_ASSIGNMENT,
    decode_consumer_key,
    decode_consumer_value,
)
from coordinator.group.records import GroupRecordFormatError
from coordinator.launcher import LocalBroker
from producer.protocol.connection import BrokerConnection
from tests.integration.test_internal_topics import connect
from txn.api_keys import ApiKey
from txn.batch import iter_batches
from txn.errors import ErrorCode
from txn.txn_log import read_records

pytestmark = pytest.mark.integration

E = ErrorCode
GROUP = "kip1251"
CLEANER = {
    "offsets.topic.segment.bytes": "1000",
    "log.cleaner.min.cleanable.ratio": "0.01",
    "log.cleaner.backoff.ms": "200",
    "log.initial.task.delay.ms": "200",
    # the second member's join rebalances at once (Kafka's default waits a second for it)
    "group.consumer.assignment.interval.ms": "0",
}


def create_orders(c: BrokerConnection) -> int:
    body = {
        "topics": [
            {
                "name": "orders",
                "num_partitions": 4,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        "timeout": 10000,
        "validate_only": False,
    }
    return int(c.request(ApiKey.CREATE_TOPICS, 7, body).topics[0].error_code)


def heartbeat(c: BrokerConnection, member: str, epoch: int, owned: Any = None) -> Any:
    body: dict[str, Any] = {
        "group_id": GROUP,
        "member_id": member,
        "member_epoch": epoch,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout": 30000 if epoch == 0 else -1,
        "subscribed_topic_names": ["orders"] if epoch == 0 else None,
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [] if epoch == 0 else owned,
    }
    resp = c.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, body)
    assert int(resp.error_code) == E.NONE, resp
    return resp


def owned(resp: Any) -> list[dict[str, Any]]:
    return [
        {"topic_id": tp.topic_id, "partitions": list(tp.partitions)}
        for tp in resp.assignment.topic_partitions
    ]


def numbers(resp: Any) -> set[int]:
    return {p for tp in resp.assignment.topic_partitions for p in tp.partitions}


def commit(c: BrokerConnection, group: str, member: str, epoch: int, partition: int) -> int:
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": epoch,
        "member_id": member,
        "group_instance_id": None,
        "topics": [
            {
                "name": "orders",
                "partitions": [
                    {
                        "partition_index": partition,
                        "committed_offset": 7,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            }
        ],
    }
    resp = c.request(ApiKey.OFFSET_COMMIT, 9, body)
    return int(resp.topics[0].partitions[0].error_code)


def current_assignment_epochs(directory: Path, member: str) -> list[int]:
    """The member epoch of each current-assignment record of ``member`` left in the log."""
    out: list[int] = []
    for path in sorted(directory.glob("*.log")):
        raw = path.read_bytes()
        for pos, header in iter_batches(raw):
            for key, value in read_records(raw[pos : pos + header.size]):
                try:
                    k = decode_consumer_key(key or b"")
                except GroupRecordFormatError:
                    continue  # an offset or classic-group record
                if k.version == CURRENT_ASSIGNMENT and k.member_id == member and value:
                    decoded = decode_consumer_value(k, value)
                    out.append(getattr(decoded, "epoch", -1))
    return out


def cleaned_offset(directory: Path) -> int:
    try:
        return int((directory / "cleaner-offset-checkpoint").read_text().strip())
    except (FileNotFoundError, ValueError):
        return -1


def test_an_earlier_epoch_commits_after_compaction_and_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with LocalBroker(data_dir=data, config=CLEANER) as broker:
        c = connect(broker)
        try:
            assert create_orders(c) == E.NONE
            first = heartbeat(c, "m1", 0)
            e1 = int(first.member_epoch)
            assert numbers(first) == {0, 1, 2, 3}
            heartbeat(c, "m2", 0)
            revoke = heartbeat(c, "m1", e1, owned(first))
            kept = numbers(revoke)
            assert len(kept) == 2
            done = heartbeat(c, "m1", e1, owned(revoke))
            e2 = int(done.member_epoch)
            assert e2 > e1
            assert commit(c, GROUP, "m1", e1, min(kept)) == E.NONE  # KIP-1251, live
            # Other groups' commits roll segments; the cleaner then keeps m1's latest record.
            directory = broker.data_dir / "__consumer_offsets-1"
            deadline = time.monotonic() + 60
            n = 0
            while current_assignment_epochs(directory, "m1") != [e2]:
                assert time.monotonic() < deadline, current_assignment_epochs(directory, "m1")
                for _ in range(20):
                    assert commit(c, f"filler-{n % 3}", "", -1, n % 4) == E.NONE
                    n += 1
                time.sleep(0.2)
            assert cleaned_offset(directory) > 0
        finally:
            c.close()

    with LocalBroker(data_dir=data, config=CLEANER) as broker:
        c = connect(broker)
        try:
            gone = ({0, 1, 2, 3} - kept).pop()
            assert commit(c, GROUP, "m1", e1, min(kept)) == E.NONE
            assert commit(c, GROUP, "m1", e1, gone) == E.STALE_MEMBER_EPOCH
            assert commit(c, GROUP, "m1", e2, min(kept)) == E.NONE
        finally:
            c.close()
