"""Every authorization rule through the real handlers and core, without sockets.

Alice may use the topic ``allowed``, the group ``g-ok`` and the transactional
id ``t-ok``; nothing else. Each request mixes what she may and may not touch;
the answer must carry Kafka's error for the rest, encode in the negotiated
version, and never let a denied resource reach the handler.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import typing
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from coordinator.broker import BrokerCore
from coordinator.log.memory_log import MemoryStorage
from coordinator.protocol.acl_rules import TopicDirectory, denied_request
from coordinator.protocol.api_versions import SUPPORTED
from coordinator.protocol.handlers import Handlers
from coordinator.protocol.responses import Body
from coordinator.protocol.security_gate import SecurityGate
from coordinator.protocol.wire import DecodedRequest, encode_response
from coordinator.security.acls import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from coordinator.security.listeners import Listener, SecurityProtocol
from coordinator.security.store import MemorySecurityStorage, SecurityMetadata
from txn.api_keys import ApiKey
from txn.batch import build_batch
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode as E
from txn.kip1289_schema import load_request
from txn.wire_render import render

ZERO = uuid.UUID(int=0)
TXN_BATCH = build_batch(
    [(None, b"v")],
    timestamp_ms=0,
    producer_id=7,
    producer_epoch=0,
    base_sequence=0,
    transactional=True,
)


class World:
    def __init__(self) -> None:
        self.core = BrokerCore(
            MemoryStorage(),  # type: ignore[arg-type]
            ManualClock(1_700_000_000_000),
            BrokerConfig(),
            random.Random(1),
        )
        for name in ("allowed", "secret"):
            assert self.core.create_topic(name, 2, 1, {}).error is E.NONE

        async def no_wait(_s: float) -> None:
            return None

        self.handlers = Handlers(self.core, "127.0.0.1", 9092, no_wait)
        config = BrokerConfig(
            {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
        )
        core = self.core
        self.gate = SecurityGate(
            config,
            SecurityMetadata(MemorySecurityStorage()),
            TopicDirectory(
                name_of=lambda i: getattr(core.topics.by_id(i), "name", None),
                exists=core.topic_exists,
                auto_create=lambda: True,
            ),
        )
        assert self.gate.authorizer is not None
        self.gate.authorizer.create(
            [
                AclBinding(
                    rtype,
                    name,
                    PatternType.LITERAL,
                    "User:alice",
                    "*",
                    AclOperation.ALL,
                    AclPermissionType.ALLOW,
                )
                for rtype, name in (
                    (ResourceType.TOPIC, "allowed"),
                    (ResourceType.GROUP, "g-ok"),
                    (ResourceType.TRANSACTIONAL_ID, "t-ok"),
                )
            ]
        )
        listener = Listener("PLAINTEXT", "127.0.0.1", 9092, SecurityProtocol.PLAINTEXT)
        self.session = self.gate.open_session(listener, "127.0.0.1", None)
        self.session.principal = "User:alice"
        self.seen: list[DecodedRequest[Any]] = []

    def topic_id(self, name: str) -> uuid.UUID:
        info = self.core.topics.get(name)
        assert info is not None
        return uuid.UUID(str(info.topic_id))

    def call(self, key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        request = render(load_request(key, version), body)
        req = DecodedRequest(key, version, 7, "test", request)
        handler = self.handlers.table[key]

        async def recording(r: DecodedRequest[Any]) -> Body | None:
            self.seen.append(r)
            return await handler(r)

        response = asyncio.run(self.gate.handle(self.session, req, recording))
        assert response is not None and not isinstance(response, bool)
        encode_response(key, version, 7, response)  # renders in this version
        # A typed message (or, for the families not yet typed, a dict) as a dict of its fields.
        return response if isinstance(response, dict) else dataclasses.asdict(response)


def codes(value: Any, path: str = "") -> list[tuple[str, int]]:
    """Every (context, error code) in a response, the context naming the nearest resource."""
    out: list[tuple[str, int]] = []
    if isinstance(value, dict):
        here = str(
            next(
                (
                    value[k]
                    for k in (
                        "name",
                        "topic",
                        "topic_name",
                        "group_id",
                        "key",
                        "transactional_id",
                        "resource_name",
                        "topic_id",
                    )
                    if k in value and value[k] is not None
                ),
                path,
            )
        )
        for k, v in value.items():
            if k.endswith("error_code") and v is not None:
                out.append((here, int(v)))
            else:
                out += codes(v, here)
    elif isinstance(value, list | tuple):
        for v in value:
            out += codes(v, path)
    return out


@pytest.fixture
def world() -> World:
    return World()


def parts(*indexes: int, **extra: Any) -> list[dict[str, Any]]:
    return [{"partition_index": i, **extra} for i in indexes]


Case = tuple[int, int, Callable[[World], dict[str, Any]], dict[str, int]]
CASES: dict[str, Case] = {
    "ListOffsets": (
        2,
        7,
        lambda w: {
            "replica_id": -1,
            "topics": [
                {"name": "allowed", "partitions": parts(0, timestamp=-1)},
                {"name": "secret", "partitions": parts(0, timestamp=-1)},
            ],
        },
        {"secret": E.TOPIC_AUTHORIZATION_FAILED, "allowed": E.NONE},
    ),
    "WriteTxnMarkers": (  # CLUSTER_ACTION on the cluster, else every partition refused
        27,
        2,
        lambda w: {
            "markers": [
                {
                    "producer_id": 1,
                    "producer_epoch": 0,
                    "transaction_result": False,
                    "coordinator_epoch": 0,
                    "topics": [
                        {"name": "secret", "partition_indexes": [0]},
                        {"name": "allowed", "partition_indexes": [0]},
                    ],
                }
            ]
        },
        {"secret": E.CLUSTER_AUTHORIZATION_FAILED, "allowed": E.CLUSTER_AUTHORIZATION_FAILED},
    ),
    "DeleteRecords": (
        21,
        2,
        lambda w: {"topics": [{"name": "secret", "partitions": parts(0, offset=0)}]},
        {"secret": E.TOPIC_AUTHORIZATION_FAILED},
    ),
    "CreatePartitions": (
        37,
        3,
        lambda w: {
            "validate_only": True,
            "topics": [
                {"name": "secret", "count": 3, "assignments": None},
                {"name": "allowed", "count": 3, "assignments": None},
            ],
        },
        {"secret": E.TOPIC_AUTHORIZATION_FAILED, "allowed": E.NONE},
    ),
    "DeleteTopics by name": (
        20,
        6,
        lambda w: {"topics": [{"name": "secret", "topic_id": ZERO}]},
        {"secret": E.TOPIC_AUTHORIZATION_FAILED},
    ),
    "DeleteTopics v1": (
        20,
        1,
        lambda w: {"topic_names": ["secret"]},
        {"secret": E.TOPIC_AUTHORIZATION_FAILED},
    ),
    "CreateTopics": (
        19,
        7,
        lambda w: {
            "validate_only": True,
            "topics": [{"name": "new", "num_partitions": 1, "replication_factor": 1}],
        },
        {"new": E.TOPIC_AUTHORIZATION_FAILED},
    ),
    "DescribeConfigs": (
        32,
        4,
        lambda w: {
            "resources": [
                {"resource_type": 2, "resource_name": "secret", "configuration_keys": None},
                {"resource_type": 2, "resource_name": "allowed", "configuration_keys": None},
                {"resource_type": 4, "resource_name": "1", "configuration_keys": None},
                {"resource_type": 32, "resource_name": "g-no", "configuration_keys": None},
            ]
        },
        {
            "secret": E.TOPIC_AUTHORIZATION_FAILED,
            "allowed": E.NONE,
            "1": E.CLUSTER_AUTHORIZATION_FAILED,
            "g-no": E.GROUP_AUTHORIZATION_FAILED,
        },
    ),
    "IncrementalAlterConfigs": (
        44,
        1,
        lambda w: {"resources": [{"resource_type": 32, "resource_name": "g-no", "configs": []}]},
        {"g-no": E.GROUP_AUTHORIZATION_FAILED},
    ),
    "OffsetFetch groups": (
        9,
        9,
        lambda w: {
            "groups": [
                {
                    "group_id": "g-ok",
                    "topics": [
                        {"name": "secret", "partition_indexes": [0]},
                        {"name": "allowed", "partition_indexes": [0]},
                    ],
                },
                {"group_id": "g-no", "topics": None},
            ]
        },
        {
            "secret": E.TOPIC_AUTHORIZATION_FAILED,
            "allowed": E.NONE,
            "g-no": E.GROUP_AUTHORIZATION_FAILED,
        },
    ),
    "OffsetFetch one group": (
        9,
        7,
        lambda w: {"group_id": "g-no", "topics": None},
        {"": E.GROUP_AUTHORIZATION_FAILED},
    ),
    "OffsetCommit": (
        8,
        9,
        lambda w: {
            "group_id": "g-no",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": [{"name": "allowed", "partitions": parts(0)}],
        },
        {"allowed": E.GROUP_AUTHORIZATION_FAILED},
    ),
    "OffsetDelete": (
        47,
        0,
        lambda w: {"group_id": "g-no", "topics": []},
        {"": E.GROUP_AUTHORIZATION_FAILED},
    ),
    "FindCoordinator groups": (
        10,
        6,
        lambda w: {"key_type": 0, "coordinator_keys": ["g-ok", "g-no"]},
        {"g-ok": E.NONE, "g-no": E.GROUP_AUTHORIZATION_FAILED},
    ),
    "FindCoordinator txn": (
        10,
        3,
        lambda w: {"key_type": 1, "key": "t-no"},
        {"": E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED},
    ),
    "FindCoordinator share": (
        10,
        6,
        lambda w: {"key_type": 2, "coordinator_keys": ["g-ok:x:0"]},
        {"g-ok:x:0": E.CLUSTER_AUTHORIZATION_FAILED},
    ),
    "JoinGroup": (
        11,
        9,
        lambda w: {
            "group_id": "g-no",
            "member_id": "",
            "protocol_type": "consumer",
            "protocols": [],
        },
        {"": E.GROUP_AUTHORIZATION_FAILED},
    ),
    "DescribeGroups": (
        15,
        5,
        lambda w: {"groups": ["g-ok", "g-no"]},
        {"g-no": E.GROUP_AUTHORIZATION_FAILED},
    ),
    "DeleteGroups": (
        42,
        2,
        lambda w: {"groups_names": ["g-no"]},
        {"g-no": E.GROUP_AUTHORIZATION_FAILED},
    ),
    "ConsumerGroupHeartbeat": (
        68,
        1,
        lambda w: {
            "group_id": "g-ok",
            "member_id": "m",
            "member_epoch": 0,
            "subscribed_topic_names": ["secret"],
        },
        {"": E.TOPIC_AUTHORIZATION_FAILED},
    ),
    "ConsumerGroupDescribe": (
        69,
        1,
        lambda w: {"group_ids": ["g-no"]},
        {"g-no": E.GROUP_AUTHORIZATION_FAILED},
    ),
    "ShareGroupHeartbeat": (
        76,
        1,
        lambda w: {
            "group_id": "g-no",
            "member_id": "m",
            "member_epoch": 0,
            "subscribed_topic_names": ["allowed"],
        },
        {"": E.GROUP_AUTHORIZATION_FAILED},
    ),
    "ShareGroupDescribe": (
        77,
        1,
        lambda w: {"group_ids": ["g-no"]},
        {"g-no": E.GROUP_AUTHORIZATION_FAILED},
    ),
    "ShareFetch group": (
        78,
        2,
        lambda w: {"group_id": "g-no", "member_id": "m", "topics": []},
        {"": E.GROUP_AUTHORIZATION_FAILED},
    ),
    "ShareAcknowledge topic": (
        79,
        2,
        lambda w: {
            "group_id": "g-ok",
            "member_id": "m",
            "share_session_epoch": 1,
            "topics": [
                {
                    "topic_id": w.topic_id("secret"),
                    "partitions": [{"partition_index": 0, "acknowledgement_batches": []}],
                }
            ],
        },
        {"secret-id": E.TOPIC_AUTHORIZATION_FAILED},
    ),
    "AlterShareGroupOffsets": (
        91,
        0,
        lambda w: {
            "group_id": "g-ok",
            "topics": [
                {"topic_name": "secret", "partitions": [{"partition_index": 0, "start_offset": 0}]}
            ],
        },
        {"secret": E.TOPIC_AUTHORIZATION_FAILED},
    ),
    "DeleteShareGroupOffsets": (
        92,
        0,
        lambda w: {"group_id": "g-no", "topics": []},
        {"": E.GROUP_AUTHORIZATION_FAILED},
    ),
    "DescribeShareGroupOffsets": (
        90,
        1,
        lambda w: {"groups": [{"group_id": "g-no", "topics": None}]},
        {"g-no": E.GROUP_AUTHORIZATION_FAILED},
    ),
    "DescribeSharePendingAcks": (
        ApiKey.DESCRIBE_SHARE_PENDING_ACKS,
        0,
        lambda w: {"producer_ids": []},
        {"": E.CLUSTER_AUTHORIZATION_FAILED},
    ),
    "DescribeLogDirs": (35, 4, lambda w: {"topics": None}, {"": E.CLUSTER_AUTHORIZATION_FAILED}),
    "InitProducerId txn": (
        22,
        6,
        lambda w: {
            "transactional_id": "t-no",
            "transaction_timeout": 1000,
            "producer_id": -1,
            "producer_epoch": -1,
        },
        {"": E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED},
    ),
    "InitProducerId idempotent": (
        22,
        6,
        lambda w: {
            "transactional_id": None,
            "transaction_timeout": 1000,
            "producer_id": -1,
            "producer_epoch": -1,
        },
        {"": E.NONE},
    ),
    "AddPartitionsToTxn": (
        24,
        3,
        lambda w: {
            "v3_and_below_transactional_id": "t-ok",
            "v3_and_below_producer_id": 1,
            "v3_and_below_producer_epoch": 0,
            "v3_and_below_topics": [
                {"name": "secret", "partitions": [0]},
                {"name": "allowed", "partitions": [0]},
            ],
        },
        {"secret": E.TOPIC_AUTHORIZATION_FAILED, "allowed": E.OPERATION_NOT_ATTEMPTED},
    ),
    "AddPartitionsToTxn v4": (
        24,
        5,
        lambda w: {"transactions": []},
        {"": E.CLUSTER_AUTHORIZATION_FAILED},
    ),
    "AddOffsetsToTxn": (
        25,
        4,
        lambda w: {
            "transactional_id": "t-ok",
            "producer_id": 1,
            "producer_epoch": 0,
            "group_id": "g-no",
        },
        {"": E.GROUP_AUTHORIZATION_FAILED},
    ),
    "EndTxn": (
        26,
        5,
        lambda w: {
            "transactional_id": "t-no",
            "producer_id": 1,
            "producer_epoch": 0,
            "committed": True,
        },
        {"": E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED},
    ),
    "TxnOffsetCommit": (
        28,
        4,
        lambda w: {
            "transactional_id": "t-ok",
            "group_id": "g-ok",
            "producer_id": 1,
            "producer_epoch": 0,
            "topics": [{"name": "secret", "partitions": parts(0)}],
        },
        {"secret": E.TOPIC_AUTHORIZATION_FAILED},
    ),
    "DescribeTransactions": (
        65,
        0,
        lambda w: {"transactional_ids": ["t-no"]},
        {"t-no": E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED},
    ),
    "DescribeProducers": (
        61,
        0,
        lambda w: {"topics": [{"name": "secret", "partition_indexes": [0]}]},
        {"secret": E.TOPIC_AUTHORIZATION_FAILED},
    ),
    "TxnShareAcknowledge": (
        ApiKey.TXN_SHARE_ACKNOWLEDGE,
        0,
        lambda w: {
            "group_id": "g-ok",
            "transactional_id": "t-no",
            "producer_id": 1,
            "producer_epoch": 0,
            "topics": [
                {
                    "topic_id": w.topic_id("allowed"),
                    "partitions": [{"partition": 0, "acknowledgement_batches": []}],
                }
            ],
        },
        {"allowed-id": E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED},
    ),
    "AddShareAcksToTxn": (
        ApiKey.ADD_SHARE_ACKS_TO_TXN,
        0,
        lambda w: {
            "transactional_id": "t-ok",
            "producer_id": 1,
            "producer_epoch": 0,
            "group_id": "g-ok",
            "topics": [{"name": "secret", "partitions": [0]}],
        },
        {"": E.TOPIC_AUTHORIZATION_FAILED},
    ),
    "Produce": (
        0,
        10,
        lambda w: {
            "transactional_id": None,
            "acks": -1,
            "timeout": 1000,
            "topic_data": [{"name": "secret", "partition_data": [{"index": 0, "records": b""}]}],
        },
        {"secret": E.TOPIC_AUTHORIZATION_FAILED},
    ),
    # Kafka: transactional records without a transactional id fail the whole request first
    "Produce transactional without id": (
        0,
        10,
        lambda w: {
            "transactional_id": None,
            "acks": -1,
            "timeout": 1000,
            "topic_data": [
                {"name": name, "partition_data": [{"index": 0, "records": TXN_BATCH}]}
                for name in ("secret", "allowed")
            ],
        },
        {
            "secret": E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            "allowed": E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        },
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule(world: World, name: str) -> None:
    key, version, body, expected = CASES[name]
    response = world.call(key, version, body(world))
    found = dict(codes(response))
    ids = {str(world.topic_id("secret")): "secret-id", str(world.topic_id("allowed")): "allowed-id"}
    found = {ids.get(k, k): v for k, v in found.items()}
    for where, code in expected.items():
        assert found.get(where) == code, (where, response)
    for request in world.seen:
        assert "secret" not in repr(request.body) or name.startswith("Describe"), request


def test_metadata_hides_and_refuses(world: World) -> None:
    listing = world.call(3, 12, {"topics": None, "allow_auto_topic_creation": False})
    assert [t["name"] for t in listing["topics"]] == ["allowed"]
    asked = world.call(
        3,
        12,
        {"topics": [{"name": "secret"}, {"name": "absent"}], "allow_auto_topic_creation": True},
    )
    assert dict(codes(asked)) == {
        "secret": E.TOPIC_AUTHORIZATION_FAILED,
        "absent": E.TOPIC_AUTHORIZATION_FAILED,
    }
    assert world.core.topics.get("absent") is None  # not auto-created


def test_metadata_of_an_internal_topic_needs_create_only_before_it_exists(world: World) -> None:
    """As Kafka: auto-creation asks for CREATE only for topics its metadata cache lacks; an
    internal topic already created is described to a principal that may DESCRIBE it."""
    assert world.gate.authorizer is not None
    world.gate.authorizer.create(
        [
            AclBinding(
                ResourceType.TOPIC,
                "__consumer_offsets",
                PatternType.LITERAL,
                "User:alice",
                "*",
                AclOperation.DESCRIBE,
                AclPermissionType.ALLOW,
            )
        ]
    )
    body = {"topics": [{"name": "__consumer_offsets"}], "allow_auto_topic_creation": True}
    before = world.call(3, 12, body)
    assert dict(codes(before)) == {"__consumer_offsets": E.TOPIC_AUTHORIZATION_FAILED}
    assert not world.core.internal_topics.created("__consumer_offsets")
    world.core.internal_topics.create("__consumer_offsets", world.core.clock.now_ms())
    after = world.call(3, 12, body)
    assert dict(codes(after)).get("__consumer_offsets") == E.NONE
    assert [t["is_internal"] for t in after["topics"]] == [True]


def test_every_rule_case_covers_a_served_api() -> None:
    assert {key for key, _v, _b, _e in CASES.values()} <= set(SUPPORTED)


#: The APIs whose rule may refuse the whole request with one top-level error.
WHOLE_REQUEST_REFUSED = (
    ApiKey.JOIN_GROUP,
    ApiKey.HEARTBEAT,
    ApiKey.LEAVE_GROUP,
    ApiKey.SYNC_GROUP,
    ApiKey.INIT_PRODUCER_ID,
    ApiKey.END_TXN,
    ApiKey.ADD_OFFSETS_TO_TXN,
    ApiKey.ADD_SHARE_ACKS_TO_TXN,
    ApiKey.DESCRIBE_LOG_DIRS,
    ApiKey.UPDATE_FEATURES,
    ApiKey.DESCRIBE_SHARE_PENDING_ACKS,
    ApiKey.CONSUMER_GROUP_HEARTBEAT,
    ApiKey.SHARE_GROUP_HEARTBEAT,
)


@pytest.mark.parametrize("key", WHOLE_REQUEST_REFUSED, ids=lambda k: k.name)
def test_a_request_refused_whole_is_answered_its_apis_message(world: World, key: ApiKey) -> None:
    """The refusal of an API whose handler answers a typed message is that message
    (``acl_rules.WHOLE_REQUEST_DENIALS``), a dict only while the handler answers dicts; it
    renders in every version."""
    answers = typing.get_type_hints(world.handlers.table[key])["return"]
    request = DecodedRequest(key, 0, 7, "test", None)
    refusal = denied_request(request, E.CLUSTER_AUTHORIZATION_FAILED)
    if typing.get_origin(answers) is dict:
        assert isinstance(refusal, dict)
    else:
        assert type(refusal) is answers
    _name, lowest, highest = SUPPORTED[key]
    for version in range(lowest, highest + 1):
        encode_response(key, version, 7, refusal)
