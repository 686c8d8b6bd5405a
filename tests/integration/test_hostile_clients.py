"""Hostile clients (issue 25): producer identity is bound on Produce, and no request bricks the
broker.  Raw requests (tests/kafka_wire.py) against a real broker process."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coordinator.launcher import LocalBroker
from tests.kafka_wire import WireClient
from txn.api_keys import ApiKey
from txn.batch import build_batch
from txn.errors import ErrorCode


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    with LocalBroker(data_dir=tmp_path_factory.mktemp("hostile") / "data") as running:
        yield running


def create_topics(client: WireClient, topics: list[tuple[str, int]]) -> list[Any]:
    body = {
        "topics": [
            {
                "name": name,
                "num_partitions": partitions,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
            for name, partitions in topics
        ],
        "timeout": 10000,
        "validate_only": False,
    }
    return list(client.request(19, 7, body).topics)


def init_producer(client: WireClient, tid: str | None) -> tuple[int, int]:
    resp = client.request(22, 4, {"transactional_id": tid, "transaction_timeout": 60000})
    assert int(resp.error_code) == 0
    return int(resp.producer_id), int(resp.producer_epoch)


def add_partitions(client: WireClient, tid: str, pid: int, epoch: int, topic: str) -> None:
    resp = client.request(
        24,
        3,
        {
            "v3_and_below_transactional_id": tid,
            "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": topic, "partitions": [0]}],
        },
    )
    assert (
        int(resp.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code) == 0
    )


def produce(
    client: WireClient,
    topic: str,
    tid: str | None,
    pid: int,
    epoch: int,
    seq: int,
    *,
    transactional: bool,
    partition: int = 0,
) -> tuple[int, str | None]:
    records = build_batch(
        [(None, b"payload")],
        timestamp_ms=int(time.time() * 1000),
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        transactional=transactional,
    )
    resp = client.request(
        0,
        9,
        {
            "transactional_id": tid,
            "acks": -1,
            "timeout": 10000,
            "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": records}]}
            ],
        },
    )
    part = resp.responses[0].partition_responses[0]
    return int(part.error_code), part.error_message


def end_offset(client: WireClient, topic: str, *, read_committed: bool) -> int:
    resp = client.request(
        2,
        7,
        {
            "replica_id": -1,
            "isolation_level": 1 if read_committed else 0,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}
                    ],
                }
            ],
        },
    )
    return int(resp.topics[0].partitions[0].offset)


# -- producer identity ----------------------------------------------------------------------------


def test_records_cannot_be_injected_into_another_users_transaction(
    shared_broker: LocalBroker,
) -> None:
    client = WireClient(shared_broker.bootstrap_servers)
    try:
        topic = "victim-output"
        assert int(create_topics(client, [(topic, 2)])[0].error_code) == 0
        pid, epoch = init_producer(client, "victim")
        add_partitions(client, "victim", pid, epoch, topic)
        assert produce(client, topic, "victim", pid, epoch, 0, transactional=True)[0] == 0

        # No transactional id, the victim's producer id, epoch and next sequence (Kafka:
        # TRANSACTIONAL_ID_AUTHORIZATION_FAILED for the whole request).
        error, message = produce(client, topic, None, pid, epoch, 1, transactional=True)
        assert error == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert message is None  # as Kafka 4.4 answers
        # The attacker's own transactional id naming the victim's producer id (Kafka 4.4 accepts
        # it once the victim's transaction is open on the partition; sharetxn verifies it).
        own_pid, _own_epoch = init_producer(client, "attacker")
        assert own_pid != pid
        error, _ = produce(client, topic, "attacker", pid, epoch, 1, transactional=True)
        assert error == ErrorCode.INVALID_PRODUCER_ID_MAPPING
        # A non-transactional batch under the producer id of the open transaction (Kafka:
        # INVALID_TXN_STATE, "Expected transactional write from producer ...").
        error, message = produce(client, topic, None, pid, epoch, 1, transactional=False)
        assert error == ErrorCode.INVALID_TXN_STATE
        assert message is None
        # ... and on a partition the transaction has not touched: the id is not idempotent's
        # (sharetxn; Kafka 4.4 accepts it).
        error, _ = produce(client, topic, None, pid, epoch, 0, transactional=False, partition=1)
        assert error == ErrorCode.INVALID_TXN_STATE

        # The victim goes on undisturbed and commits: only its own record becomes visible.
        assert produce(client, topic, "victim", pid, epoch, 1, transactional=True)[0] == 0
        committed = client.request(
            26,
            3,
            {
                "transactional_id": "victim",
                "producer_id": pid,
                "producer_epoch": epoch,
                "committed": True,
            },
        )
        assert int(committed.error_code) == 0
        deadline = time.monotonic() + 10
        while end_offset(client, topic, read_committed=True) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        # two victim batches and the COMMIT marker, nothing else
        assert end_offset(client, topic, read_committed=False) == 3
        assert end_offset(client, topic, read_committed=True) == 3
    finally:
        client.close()


def test_idempotent_producers_keep_working(shared_broker: LocalBroker) -> None:
    client = WireClient(shared_broker.bootstrap_servers)
    try:
        topic = "idempotent-output"
        assert int(create_topics(client, [(topic, 1)])[0].error_code) == 0
        pid, epoch = init_producer(client, None)
        for seq in range(3):
            assert produce(client, topic, None, pid, epoch, seq, transactional=False)[0] == 0
        # a transactional batch under an idempotent producer id names no transaction
        error, _ = produce(client, topic, "someone", pid, epoch, 3, transactional=True)
        assert error == ErrorCode.INVALID_PRODUCER_ID_MAPPING
        assert end_offset(client, topic, read_committed=False) == 3
    finally:
        client.close()


def test_txn_offset_commit_is_bound_to_the_transactional_id(shared_broker: LocalBroker) -> None:
    client = WireClient(shared_broker.bootstrap_servers)
    try:
        pid, epoch = init_producer(client, "offsets-victim")
        added = client.request(
            25,
            3,
            {
                "transactional_id": "offsets-victim",
                "producer_id": pid,
                "producer_epoch": epoch,
                "group_id": "g",
            },
        )
        assert int(added.error_code) == 0
        init_producer(client, "offsets-attacker")
        resp = client.request(
            28,
            3,
            {
                "transactional_id": "offsets-attacker",
                "group_id": "g",
                "producer_id": pid,
                "producer_epoch": epoch,
                "generation_id": -1,
                "member_id": "",
                "group_instance_id": None,
                "topics": [
                    {
                        "name": "victim-output",
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 5,
                                "committed_leader_epoch": -1,
                                "committed_metadata": None,
                            }
                        ],
                    }
                ],
            },
        )
        # Kafka 4.4 answers INVALID_PRODUCER_ID_MAPPING (reference harness)
        assert int(resp.topics[0].partitions[0].error_code) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    finally:
        client.close()


# -- resources -------------------------------------------------------------------------------------


def test_excessive_partitions_are_refused_and_the_broker_restarts(tmp_path: Path) -> None:
    with LocalBroker(data_dir=tmp_path / "data") as b:
        client = WireClient(b.bootstrap_servers)
        try:
            results = create_topics(client, [("huge", 12000)])
            assert [(int(r.error_code), r.error_message) for r in results] == [
                (
                    ErrorCode.POLICY_VIOLATION,
                    "Excessively large number of partitions per request.",
                )
            ]
            # two topics together over the limit: both refused
            results = create_topics(client, [("half-a", 6000), ("half-b", 6000)])
            assert {int(r.error_code) for r in results} == {ErrorCode.POLICY_VIOLATION}
            assert int(create_topics(client, [("small", 1)])[0].error_code) == 0
            resp = client.request(
                37,
                3,
                {
                    "topics": [{"name": "small", "count": 32767, "assignments": None}],
                    "timeout": 10000,
                    "validate_only": False,
                },
            )
            assert (int(resp.results[0].error_code), resp.results[0].error_message) == (
                ErrorCode.POLICY_VIOLATION,
                "Excessively large number of additional partitions per request.",
            )
        finally:
            client.close()
        b.restart()
        client = WireClient(b.bootstrap_servers)
        try:
            # nothing of the refused requests was persisted
            results = create_topics(client, [("huge", 1), ("small", 1)])
            assert [int(r.error_code) for r in results] == [0, ErrorCode.TOPIC_ALREADY_EXISTS]
        finally:
            client.close()
    assert not (tmp_path / "data" / "half-a-0").exists()


def test_total_partition_limit(tmp_path: Path) -> None:
    config = {"sharetxn.max.partitions": "10"}
    with LocalBroker(data_dir=tmp_path / "data", config=config) as b:
        client = WireClient(b.bootstrap_servers)
        try:
            assert int(create_topics(client, [("first", 8)])[0].error_code) == 0
            refused = create_topics(client, [("second", 3)])[0]
            assert int(refused.error_code) == ErrorCode.POLICY_VIOLATION
            assert "limit of 10" in refused.error_message
            resp = client.request(
                37,
                3,
                {
                    "topics": [{"name": "first", "count": 11, "assignments": None}],
                    "timeout": 10000,
                    "validate_only": False,
                },
            )
            assert int(resp.results[0].error_code) == ErrorCode.POLICY_VIOLATION
            assert int(create_topics(client, [("second", 2)])[0].error_code) == 0
        finally:
            client.close()
        assert not (tmp_path / "data" / "second-2").exists()


def test_kip1289_requests_are_bound_to_the_transactional_id(shared_broker: LocalBroker) -> None:
    client = WireClient(shared_broker.bootstrap_servers)
    try:
        created = create_topics(client, [("share-input", 1)])[0]
        assert int(created.error_code) == 0
        pid, epoch = init_producer(client, "acks-victim")
        init_producer(client, "acks-attacker")
        added = client.request(
            ApiKey.ADD_SHARE_ACKS_TO_TXN,
            0,
            {
                "transactional_id": "acks-attacker",
                "producer_id": pid,
                "producer_epoch": epoch,
                "group_id": "share-group",
                "topics": [{"name": "share-input", "partitions": [0]}],
            },
        )
        assert int(added.error_code) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
        acked = client.request(
            ApiKey.TXN_SHARE_ACKNOWLEDGE,
            0,
            {
                "group_id": "share-group",
                "transactional_id": "acks-attacker",
                "producer_id": pid,
                "producer_epoch": epoch,
                "member_id": "m",
                "topics": [
                    {
                        "topic_id": created.topic_id,
                        "partitions": [
                            {
                                "partition": 0,
                                "acknowledgement_batches": [
                                    {"first_offset": 0, "last_offset": 0, "acknowledge_type": 1}
                                ],
                            }
                        ],
                    }
                ],
            },
        )
        assert int(acked.topics[0].partitions[0].error_code) == ErrorCode.INVALID_TXN_STATE
    finally:
        client.close()
