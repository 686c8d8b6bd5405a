"""Clients cannot reach the coordinators' logs through topic APIs (issue 25, item 1).

The attack this reproduces: Metadata with auto-creation for ``__consumer_offsets`` made an
ordinary topic of that name, whose partitions are the group coordinator's own log files;
Produce then appended an old offset-commit record there, and the next start replayed it as
the group's committed offset.  Now Metadata creates nothing, Produce answers
INVALID_TOPIC_EXCEPTION (Apache Kafka's answer, to every user) and the offset survives.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coordinator.group.records import OffsetKey, OffsetValue, encode_key, encode_value
from coordinator.launcher import LocalBroker
from coordinator.reserved_topics import FORGET_CONFIG
from producer.protocol.connection import BrokerConnection
from producer.protocol.security import ClientSecurity
from tests.integration.test_security_acls import ADMIN
from tests.integration.test_security_acls import CONFIG as SASL_CONFIG
from tests.unit.coordinator.test_reserved_topics import append_legacy_topic_record
from txn.batch import build_batch
from txn.errors import ErrorCode
from txn.ids import KAFKA_INTERNAL_TOPICS, PRIVATE_TOPICS, RESERVED_TOPICS

pytestmark = pytest.mark.integration

GROUP = "victims"


def connect(broker: LocalBroker, security: dict[str, str] | None = None) -> BrokerConnection:
    host, _, port = broker.bootstrap_servers.rpartition(":")
    if security is None:
        return BrokerConnection(host, int(port), client_id="attacker", timeout_s=10.0)
    return BrokerConnection(
        host,
        int(port),
        client_id="attacker",
        timeout_s=10.0,
        security=ClientSecurity.from_config(security),
    )


def metadata(conn: BrokerConnection, names: list[str], auto_create: bool) -> Any:
    body = {
        "topics": [{"name": n, "topic_id": uuid.UUID(int=0)} for n in names],
        "allow_auto_topic_creation": auto_create,
    }
    return conn.request(3, 12, body)


def commit(conn: BrokerConnection, topic: str, offset: int) -> int:
    resp = conn.request(
        8,
        8,
        {
            "group_id": GROUP,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": offset,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        },
    )
    return int(resp.topics[0].partitions[0].error_code)


def committed(conn: BrokerConnection, topic: str) -> int:
    resp = conn.request(
        9,
        8,
        {
            "groups": [{"group_id": GROUP, "topics": [{"name": topic, "partition_indexes": [0]}]}],
            "require_stable": True,
        },
    )
    return int(resp.groups[0].topics[0].partitions[0].committed_offset)


def produce(conn: BrokerConnection, topic: str, partition: int, records: bytes) -> int:
    resp = conn.request(
        0,
        9,
        {
            "transactional_id": None,
            "acks": -1,
            "timeout": 10000,
            "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": records}]}
            ],
        },
    )
    return int(resp.responses[0].partition_responses[0].error_code)


def old_commit_record(topic: str, offset: int) -> bytes:
    """The group coordinator's own record of ``offset`` committed (what the attacker replays)."""
    now = int(time.time() * 1000)
    key = encode_key(OffsetKey(GROUP, topic, 0))
    value = encode_value(OffsetValue(offset, -1, "", now))
    return build_batch([(key, value)], timestamp_ms=now)


def create_topic(conn: BrokerConnection, name: str) -> Any:
    body = {
        "topics": [
            {
                "name": name,
                "num_partitions": 1,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        "timeout": 10000,
        "validate_only": False,
    }
    return conn.request(19, 7, body).topics[0]


def test_offset_rewind_through_auto_created_consumer_offsets(tmp_path: Path) -> None:
    data = tmp_path / "data"
    # two partitions per auto-created topic: partition 1 of __consumer_offsets is where the
    # consumer groups' log lives
    config = {"num.partitions": "2"}
    with LocalBroker(data_dir=data, config=config) as broker:
        conn = connect(broker)
        try:
            assert int(create_topic(conn, "orders").error_code) == ErrorCode.NONE
            assert commit(conn, "orders", 5) == ErrorCode.NONE
            assert commit(conn, "orders", 10) == ErrorCode.NONE
            # listed as Kafka lists it (offsets.topic.num.partitions), never a client's topic
            (topic,) = metadata(conn, ["__consumer_offsets"], auto_create=True).topics
            assert int(topic.error_code) == ErrorCode.NONE
            assert topic.is_internal
            assert len(topic.partitions) == 50
            replay = old_commit_record("orders", 5)
            for partition in (0, 1):
                assert produce(conn, "__consumer_offsets", partition, replay) == (
                    ErrorCode.INVALID_TOPIC_EXCEPTION
                )
            all_topics = conn.request(3, 12, {"topics": None, "allow_auto_topic_creation": True})
            # the group's commits created __consumer_offsets; no transaction nor share group
            assert sorted((t.name, bool(t.is_internal)) for t in all_topics.topics) == [
                ("__consumer_offsets", True),
                ("orders", False),
            ]
            assert committed(conn, "orders") == 10
        finally:
            conn.close()
        broker.restart()
        conn = connect(broker)
        try:
            assert committed(conn, "orders") == 10  # was 5: the replayed record won
        finally:
            conn.close()


@pytest.fixture
def plain_broker(tmp_path: Path) -> Iterator[LocalBroker]:
    with LocalBroker(data_dir=tmp_path / "data", config={"num.partitions": "2"}) as b:
        yield b


def test_topic_administration_refused(plain_broker: LocalBroker) -> None:
    conn = connect(plain_broker)
    try:
        _check_administration_refused(conn)
    finally:
        conn.close()


def _check_administration_refused(conn: BrokerConnection) -> None:
    for name in sorted(RESERVED_TOPICS):
        # Kafka's internal topics are listed as Kafka lists them; the private logs are
        # unknown; no client topic is auto-created under any of these names
        (topic,) = metadata(conn, [name], auto_create=True).topics
        internal = name in KAFKA_INTERNAL_TOPICS
        assert int(topic.error_code) == (
            ErrorCode.NONE if internal else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        ), name
        assert bool(topic.is_internal) is internal
        created = create_topic(conn, name)
        if name in KAFKA_INTERNAL_TOPICS:
            assert int(created.error_code) == ErrorCode.TOPIC_ALREADY_EXISTS
            assert created.error_message == f"Topic '{name}' already exists."
        else:
            assert int(created.error_code) == ErrorCode.INVALID_REQUEST
            assert created.error_message == f"Creation of internal topic {name} is prohibited."
        want = (
            ErrorCode.INVALID_TOPIC_EXCEPTION
            if name in KAFKA_INTERNAL_TOPICS
            else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        )
        parts = conn.request(
            37,
            3,
            {
                "topics": [{"name": name, "count": 5, "assignments": None}],
                "timeout": 10000,
                "validate_only": False,
            },
        )
        assert int(parts.results[0].error_code) == want, name
        deleted = conn.request(
            20,
            6,
            {"topics": [{"name": name, "topic_id": uuid.UUID(int=0)}], "timeout": 10000},
        )
        assert int(deleted.responses[0].error_code) == want, name
        altered = conn.request(
            44,
            1,
            {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": name,
                        "configs": [{"name": "retention.ms", "config_operation": 0, "value": "1"}],
                    }
                ],
                "validate_only": False,
            },
        )
        assert int(altered.responses[0].error_code) == want, name
        batch = build_batch([(b"k", b"v")], timestamp_ms=int(time.time() * 1000))
        assert produce(conn, name, 0, batch) == want, name
        records = conn.request(
            21,
            2,
            {
                "topics": [{"name": name, "partitions": [{"partition_index": 0, "offset": 0}]}],
                "timeout": 10000,
            },
        )
        assert int(records.topics[0].partitions[0].error_code) == want, name
    listed = conn.request(3, 12, {"topics": None, "allow_auto_topic_creation": True})
    reserved = sorted(t.name for t in listed.topics if t.name in RESERVED_TOPICS)
    assert reserved == sorted(KAFKA_INTERNAL_TOPICS)


def test_add_partitions_to_txn_naming_an_internal_topic(plain_broker: LocalBroker) -> None:
    conn = connect(plain_broker)
    try:
        assert int(create_topic(conn, "data").error_code) == ErrorCode.NONE
        conn.request(10, 4, {"key_type": 1, "coordinator_keys": ["t1"]})
        init = conn.request(
            22,
            4,
            {
                "transactional_id": "t1",
                "transaction_timeout": 60000,
                "producer_id": -1,
                "producer_epoch": -1,
            },
        )
        resp = conn.request(
            24,
            3,
            {
                "v3_and_below_transactional_id": "t1",
                "v3_and_below_producer_id": int(init.producer_id),
                "v3_and_below_producer_epoch": int(init.producer_epoch),
                "v3_and_below_topics": [
                    {"name": "__consumer_offsets", "partitions": [1]},
                    {"name": "data", "partitions": [0]},
                ],
            },
        )
        errors = {
            (t.name, int(p.partition_index)): int(p.partition_error_code)
            for t in resp.results_by_topic_v3_and_below
            for p in t.results_by_partition
        }
        assert errors == {
            ("__consumer_offsets", 1): ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            ("data", 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
        }
    finally:
        conn.close()


def test_super_user_is_refused_too(tmp_path_factory: pytest.TempPathFactory) -> None:
    data = tmp_path_factory.mktemp("internal-sasl") / "data"
    with LocalBroker(data_dir=data, config=SASL_CONFIG) as broker:
        conn = connect(broker, ADMIN)
        try:
            _check_administration_refused(conn)
        finally:
            conn.close()


def test_data_dir_with_a_client_created_internal_topic(tmp_path: Path) -> None:
    """What an older sharetxn left behind: a topic record named ``__consumer_offsets``."""
    data = tmp_path / "data"
    with LocalBroker(data_dir=data) as broker:
        conn = connect(broker)
        try:
            assert int(create_topic(conn, "orders").error_code) == ErrorCode.NONE
        finally:
            conn.close()
    _append_legacy_topic_record(data, "__consumer_offsets")
    refused = LocalBroker(data_dir=data)
    with pytest.raises(RuntimeError) as raised:
        refused.start()
    text = "\n".join(refused.output) + str(raised.value)
    assert "'__consumer_offsets'" in text
    assert "__consumer_offsets-0" in text
    assert f"--set {FORGET_CONFIG}=true" in text
    # the operator's way out: forget the record (once), then start as usual
    with LocalBroker(data_dir=data, config={FORGET_CONFIG: "true"}):
        pass
    with LocalBroker(data_dir=data) as broker:
        conn = connect(broker)
        try:
            names = [t.name for t in metadata(conn, ["orders"], auto_create=False).topics]
            assert names == ["orders"]
        finally:
            conn.close()


def _append_legacy_topic_record(data: Path, name: str) -> None:
    """Append the ``"type": "topic"`` record an older version wrote on auto-creation."""
    from coordinator.log.file_log import FileStorage  # noqa: PLC0415
    from coordinator.log.storage import LogConfig  # noqa: PLC0415

    storage = FileStorage(data, LogConfig())
    try:
        log = storage.open_log("__cluster_metadata", 0, LogConfig())
        append_legacy_topic_record(log, name, 1, int(time.time() * 1000))
    finally:
        storage.close()


def test_private_names_are_the_reserved_set() -> None:
    assert PRIVATE_TOPICS <= RESERVED_TOPICS


def _internal_listed(conn: BrokerConnection) -> list[str]:
    listed = conn.request(3, 12, {"topics": None, "allow_auto_topic_creation": True})
    return sorted(t.name for t in listed.topics if t.is_internal)


def _describe_error(conn: BrokerConnection, name: str) -> int:
    body = {
        "resources": [
            {"resource_type": 2, "resource_name": name, "configuration_keys": ["cleanup.policy"]}
        ],
        "include_synonyms": False,
        "include_documentation": False,
    }
    return int(conn.request(32, 4, body).results[0].error_code)


def test_internal_topics_appear_when_kafka_creates_them(tmp_path: Path) -> None:
    """As Kafka 4.4: each internal topic exists from the first FindCoordinator of its key
    type (or Metadata naming it with auto-creation) on, and after a restart."""
    with LocalBroker(data_dir=tmp_path / "data") as broker:
        conn = connect(broker)
        try:
            assert _internal_listed(conn) == []
            for name in sorted(KAFKA_INTERNAL_TOPICS):
                (topic,) = metadata(conn, [name], auto_create=False).topics
                assert int(topic.error_code) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name
                assert topic.is_internal
                assert _describe_error(conn, name) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                created = create_topic(conn, name)  # refused as before
                assert int(created.error_code) == ErrorCode.TOPIC_ALREADY_EXISTS
            assert _internal_listed(conn) == []
            conn.request(10, 4, {"key_type": 0, "coordinator_keys": ["g"]})
            assert _internal_listed(conn) == ["__consumer_offsets"]
            assert _describe_error(conn, "__consumer_offsets") == ErrorCode.NONE
            conn.request(10, 4, {"key_type": 1, "coordinator_keys": ["t"]})
            assert _internal_listed(conn) == ["__consumer_offsets", "__transaction_state"]
        finally:
            conn.close()
        broker.restart()
        conn = connect(broker)
        try:
            assert _internal_listed(conn) == ["__consumer_offsets", "__transaction_state"]
            (topic,) = metadata(conn, ["__share_group_state"], auto_create=True).topics
            assert int(topic.error_code) == ErrorCode.NONE
            assert len(topic.partitions) == 50
            assert _internal_listed(conn) == sorted(KAFKA_INTERNAL_TOPICS)
        finally:
            conn.close()


def test_share_state_topic_on_its_coordinator_lookup(plain_broker: LocalBroker) -> None:
    conn = connect(plain_broker)
    try:
        assert _internal_listed(conn) == []
        key = f"g:{uuid.uuid4()}:0"
        conn.request(10, 6, {"key_type": 2, "coordinator_keys": [key]})
        assert _internal_listed(conn) == ["__share_group_state"]
    finally:
        conn.close()
