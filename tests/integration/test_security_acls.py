"""Authorization end to end: per resource type denied without the ACL, allowed with it.

One broker with a SASL_PLAINTEXT listener, ``authorizer.class.name`` set to
Kafka's StandardAuthorizer and ``admin`` a super user; ``alice`` starts with no
ACLs.  Stock librdkafka clients and ours, as an operator would use them.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from coordinator.launcher import LocalBroker
from producer.admin import Admin
from producer.consumer.share_consumer import ShareConsumer
from producer.produce.transactional_producer import TransactionalProducer
from producer.protocol.connection import BrokerConnection
from producer.protocol.security import ClientSecurity
from tests.integration.test_security_auth import sasl
from txn.errors import ErrorCode, GroupAuthorizationFailedError

pytestmark = pytest.mark.integration

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" '
    'user_admin="admin-secret" user_alice="alice-secret";'
)
CONFIG = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin",
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.min.session.timeout.ms": "2000",
    "group.share.min.heartbeat.interval.ms": "500",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
}
ADMIN = sasl("PLAIN", "admin", "admin-secret")
ALICE = sasl("PLAIN", "alice", "alice-secret")
CAROL = sasl("SCRAM-SHA-512", "carol", "carol-secret")


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    data = tmp_path_factory.mktemp("acl") / "data"
    users = ["--add-scram", "SCRAM-SHA-512=[name=carol,password=carol-secret]"]
    with LocalBroker(data_dir=data, config=CONFIG, extra_args=users) as b:
        yield b


def admin(broker: LocalBroker, security: dict[str, str] = ADMIN) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers, **security})


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def allow(
    broker: LocalBroker,
    rtype: ResourceType,
    name: str,
    op: AclOperation,
    principal: str = "User:alice",
    pattern: ResourcePatternType = ResourcePatternType.LITERAL,
) -> None:
    binding = AclBinding(rtype, name, pattern, principal, "*", op, AclPermissionType.ALLOW)
    client = admin(broker)  # kept alive until the futures complete
    for future in client.create_acls([binding]).values():
        future.result(10)


def create_topic(broker: LocalBroker, name: str, partitions: int = 1) -> None:
    client = admin(broker)
    for future in client.create_topics([NewTopic(name, partitions)]).values():
        future.result(10)


def produce_errors(broker: LocalBroker, topic: str, security: dict[str, str]) -> list[Any]:
    outcomes: list[Any] = []
    p = Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "message.timeout.ms": 5000, **security}
    )
    p.produce(topic, b"v", on_delivery=lambda err, _m: outcomes.append(err))
    p.flush(10)
    return outcomes


def test_topic_write_denied_then_allowed(broker: LocalBroker) -> None:
    topic = unique("orders")
    create_topic(broker, topic)
    [error] = produce_errors(broker, topic, ALICE)
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    allow(broker, ResourceType.TOPIC, topic, AclOperation.WRITE)
    assert produce_errors(broker, topic, ALICE) == [None]


def test_topics_alice_may_not_describe_are_hidden(broker: LocalBroker) -> None:
    secret, visible = unique("secret"), unique("visible")
    create_topic(broker, secret)
    create_topic(broker, visible)
    allow(
        broker,
        ResourceType.TOPIC,
        "visible-",
        AclOperation.DESCRIBE,
        pattern=ResourcePatternType.PREFIXED,
    )
    alice = admin(broker, ALICE)
    listed = alice.list_topics(timeout=10).topics
    assert visible in listed
    assert secret not in listed
    # Asked by name: the same answer whether the topic exists or not (no existence leak).
    for name in (secret, unique("absent")):
        meta = alice.list_topics(topic=name, timeout=10).topics[name]
        assert meta.error is not None
        assert meta.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_group_read_denied_then_allowed(broker: LocalBroker) -> None:
    topic, group = unique("gt"), unique("group")
    create_topic(broker, topic)
    assert produce_errors(broker, topic, ADMIN) == [None]
    allow(broker, ResourceType.TOPIC, topic, AclOperation.READ)

    def consume() -> tuple[list[bytes], list[int]]:
        c = Consumer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "group.id": group,
                "auto.offset.reset": "earliest",
                **ALICE,
            }
        )
        c.subscribe([topic])
        got: list[bytes] = []
        errors: list[int] = []
        deadline = time.monotonic() + 10
        while not got and not errors and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                errors.append(msg.error().code())
            else:
                got.append(msg.value())
        c.close()
        return got, errors

    got, errors = consume()
    assert got == []
    assert KafkaError.GROUP_AUTHORIZATION_FAILED in errors
    allow(broker, ResourceType.GROUP, group, AclOperation.READ)
    got, errors = consume()
    assert got == [b"v"]


def test_transactional_id_denied_then_allowed(broker: LocalBroker) -> None:
    topic, tid = unique("txt"), unique("tx")
    create_topic(broker, topic)
    allow(broker, ResourceType.TOPIC, topic, AclOperation.WRITE)
    config = {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": tid, **ALICE}
    p = Producer(config)
    with pytest.raises(KafkaException) as denied:
        p.init_transactions(10)
    assert denied.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    allow(
        broker,
        ResourceType.TRANSACTIONAL_ID,
        tid[:3],
        AclOperation.WRITE,
        pattern=ResourcePatternType.PREFIXED,
    )
    p = Producer(config)
    p.init_transactions(10)
    p.begin_transaction()
    p.produce(topic, b"in-txn")
    p.commit_transaction(10)


def test_cluster_operations_denied_then_allowed(broker: LocalBroker) -> None:
    alice = admin(broker, ALICE)
    topic = unique("created")
    [future] = alice.create_topics([NewTopic(topic, 1)]).values()
    with pytest.raises(KafkaException) as denied:
        future.result(10)
    assert denied.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    everything = AclBindingFilter(
        ResourceType.ANY,
        None,
        ResourcePatternType.ANY,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    # DescribeAcls needs DESCRIBE on the cluster (librdkafka hides the top-level error: ask raw).
    describe = {
        "resource_type_filter": 1,
        "resource_name_filter": None,
        "pattern_type_filter": 1,
        "principal_filter": None,
        "host_filter": None,
        "operation": 1,
        "permission_type": 1,
    }
    raw = BrokerConnection("127.0.0.1", broker.port, security=ClientSecurity.from_config(ALICE))
    assert raw.request(29, 3, describe).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    allow(broker, ResourceType.BROKER, "kafka-cluster", AclOperation.CREATE)
    allow(broker, ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE)
    [future] = alice.create_topics([NewTopic(topic, 1)]).values()
    future.result(10)
    assert raw.request(29, 3, describe).error_code == ErrorCode.NONE
    described = alice.describe_acls(everything).result(10)
    assert any(b.principal == "User:alice" and b.name == "kafka-cluster" for b in described)
    raw.close()


def test_acls_are_durable_and_deletable(broker: LocalBroker, tmp_path: Any) -> None:
    topic = unique("durable")
    allow(broker, ResourceType.TOPIC, topic, AclOperation.READ, principal="User:dave")
    only = AclBindingFilter(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        "User:dave",
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    broker.restart()
    client = admin(broker)
    assert len(client.describe_acls(only).result(10)) == 1
    [future] = client.delete_acls([only]).values()
    assert len(future.result(10)) == 1
    assert client.describe_acls(only).result(10) == []


def test_share_consumer_without_read_on_its_group(broker: LocalBroker) -> None:
    topic, group = unique("share"), unique("sg")
    create_topic(broker, topic)
    allow(broker, ResourceType.TOPIC, topic, AclOperation.READ)
    consumer = ShareConsumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": group, **ALICE}
    )
    consumer.subscribe([topic])
    with pytest.raises(GroupAuthorizationFailedError):
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            consumer.poll(0.5)
    consumer.close()


def test_exactly_once_share_copy_with_authentication_and_acls(broker: LocalBroker) -> None:
    """KIP-1289 with SCRAM and only the ACLs the copy needs (see docs/security.md)."""
    topic_in, topic_out, group, tid = unique("in"), unique("out"), unique("copy"), unique("cp")
    create_topic(broker, topic_in)
    create_topic(broker, topic_out)
    with Admin({"bootstrap.servers": broker.bootstrap_servers, **ADMIN}) as ours:
        ours.alter_group_configs(group, {"share.auto.offset.reset": "earliest"})
    stock = Producer({"bootstrap.servers": broker.bootstrap_servers, **ADMIN})
    for i in range(20):
        stock.produce(topic_in, f"r{i}".encode())
    assert stock.flush(10) == 0
    carol = "User:carol"
    allow(broker, ResourceType.TOPIC, topic_in, AclOperation.READ, carol)
    allow(broker, ResourceType.TOPIC, topic_out, AclOperation.WRITE, carol)
    allow(broker, ResourceType.GROUP, group, AclOperation.READ, carol)
    allow(broker, ResourceType.TRANSACTIONAL_ID, tid, AclOperation.WRITE, carol)
    bootstrap = {"bootstrap.servers": broker.bootstrap_servers, **CAROL}
    consumer = ShareConsumer(
        {**bootstrap, "group.id": group, "share.acknowledgement.mode": "transactional"}
    )
    consumer.subscribe([topic_in])
    producer = TransactionalProducer({**bootstrap, "transactional.id": tid})
    producer.init_transactions()
    copied = 0
    deadline = time.monotonic() + 30
    while copied < 20 and time.monotonic() < deadline:
        records = consumer.poll(0.5)
        if not records:
            continue
        producer.begin_transaction()
        for r in records:
            producer.send(topic_out, (r.value or b"").upper())
            consumer.acknowledge(r)
        producer.send_share_acks_to_transaction(
            consumer.acknowledgements(), consumer.group_metadata()
        )
        producer.commit_transaction()
        copied += len(records)
    consumer.close()
    producer.close()
    assert copied == 20
    reader = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": unique("verify"),
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            **ADMIN,
        }
    )
    reader.subscribe([topic_out])
    out: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(out) < 20 and time.monotonic() < deadline:
        out += [m.value() for m in reader.consume(100, 0.5) if m.error() is None]
    time.sleep(0.5)  # nothing more arrives (no duplicate)
    out += [m.value() for m in reader.consume(100, 0.5) if m.error() is None]
    reader.close()
    assert sorted(out) == sorted(f"R{i}".encode() for i in range(20))


def test_command_config_for_every_client_command(broker: LocalBroker, tmp_path: Any) -> None:
    """--command-config with librdkafka's names or the Java clients' (as Kafka's tools)."""
    from chaos.cli.main import main  # noqa: PLC0415

    librdkafka_style = tmp_path / "admin.properties"
    librdkafka_style.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.username=admin\nsasl.password=admin-secret\n"
    )
    java_style = tmp_path / "carol.properties"  # carol may not create topics
    java_style.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="carol" password="carol-secret";\n'
    )
    topic = unique("cli")
    common = ["--bootstrap-server", broker.bootstrap_servers]
    assert (
        main(
            [
                "topics",
                "--create",
                "--topic",
                topic,
                *common,
                "--command-config",
                str(librdkafka_style),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "topics",
                "--create",
                "--topic",
                unique("cli"),
                *common,
                "--command-config",
                str(java_style),
            ]
        )
        != 0
    )
    for command in (
        ["topics", "--list"],
        ["configs", "--entity-type", "topics", "--entity-name", topic, "--describe"],
        ["consumer-groups", "--list"],
        ["share-groups", "--list"],
        ["txn", "list"],
    ):
        assert main([*command, *common, "--command-config", str(librdkafka_style)]) == 0, command


def _bits(*ops: AclOperation) -> int:
    return sum(1 << int(op.value) for op in ops)


def test_authorized_operations_follow_the_acls(broker: LocalBroker) -> None:
    """As Kafka's AuthHelper.authorizedOperations: the operations alice's ACLs allow, with
    DESCRIBE implied by READ (and DESCRIBE_CONFIGS by ALTER_CONFIGS); INT32_MIN unasked."""
    topic, group, share = unique("ops"), unique("ops-group"), unique("ops-share")
    create_topic(broker, topic)
    allow(broker, ResourceType.GROUP, share, AclOperation.READ)
    allow(broker, ResourceType.TOPIC, topic, AclOperation.READ)
    allow(broker, ResourceType.TOPIC, topic, AclOperation.ALTER_CONFIGS)
    allow(broker, ResourceType.GROUP, group, AclOperation.READ)
    raw = BrokerConnection("127.0.0.1", broker.port, security=ClientSecurity.from_config(ALICE))
    topic_ops = _bits(
        AclOperation.READ,
        AclOperation.DESCRIBE,
        AclOperation.ALTER_CONFIGS,
        AclOperation.DESCRIBE_CONFIGS,
    )
    every_topic_op = _bits(
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    )
    try:
        ask = {"topics": [{"name": topic}, {"name": "not-for-alice"}]}
        asked = raw.request(3, 12, {**ask, "include_topic_authorized_operations": True})
        ops = {t.name: int(t.topic_authorized_operations) for t in asked.topics}
        # a topic alice may not describe: refused, no operations (as Kafka)
        assert ops == {topic: topic_ops, "not-for-alice": -(2**31)}
        unasked = raw.request(3, 12, {**ask, "include_topic_authorized_operations": False})
        assert {int(t.topic_authorized_operations) for t in unasked.topics} == {-(2**31)}
        # DescribeGroups v5, ConsumerGroupDescribe and ShareGroupDescribe: READ implies DESCRIBE
        group_ops = _bits(AclOperation.READ, AclOperation.DESCRIBE)
        groups = raw.request(15, 5, {"groups": [group], "include_authorized_operations": True})
        assert [int(g.authorized_operations) for g in groups.groups] == [group_ops]
        member = {"member_id": uuid.uuid4().hex, "member_epoch": 0}
        subscribed = {"subscribed_topic_names": [topic], **member}
        joined = raw.request(
            68,
            1,
            {"group_id": group, "rebalance_timeout": 30000, "topic_partitions": [], **subscribed},
        )
        assert int(joined.error_code) == ErrorCode.NONE
        assert int(raw.request(76, 1, {"group_id": share, **subscribed}).error_code) == 0
        for key, version, name in ((69, 0, group), (77, 1, share)):
            body = {"group_ids": [name, unique("unknown")], "include_authorized_operations": True}
            described = raw.request(key, version, body)
            # an unknown group is an error: no operations (as Kafka)
            assert [int(g.authorized_operations) for g in described.groups] == [
                group_ops,
                -(2**31),
            ], key
            body["include_authorized_operations"] = False
            unasked_groups = raw.request(key, version, body)
            assert {int(g.authorized_operations) for g in unasked_groups.groups} == {-(2**31)}
        # a super user: every operation the resource type supports
        super_user = BrokerConnection(
            "127.0.0.1", broker.port, security=ClientSecurity.from_config(ADMIN)
        )
        try:
            every = super_user.request(3, 12, {**ask, "include_topic_authorized_operations": True})
            assert int(every.topics[0].topic_authorized_operations) == every_topic_op
            every_cluster = super_user.request(
                60, 0, {"include_cluster_authorized_operations": True}
            )
            assert int(every_cluster.cluster_authorized_operations) == _bits(
                AclOperation.CREATE,
                AclOperation.CLUSTER_ACTION,
                AclOperation.DESCRIBE_CONFIGS,
                AclOperation.ALTER_CONFIGS,
                AclOperation.IDEMPOTENT_WRITE,
                AclOperation.ALTER,
                AclOperation.DESCRIBE,
            )
        finally:
            super_user.close()
    finally:
        raw.close()


def test_cluster_authorized_operations(broker: LocalBroker) -> None:
    """0 for a principal that may not DESCRIBE the cluster (Kafka), else its operations."""
    user = unique("dave")
    upsert = UserScramCredentialUpsertion(
        user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"dave-secret"
    )
    client = admin(broker)
    for future in client.alter_user_scram_credentials([upsert]).values():
        future.result(10)
    security = ClientSecurity.from_config(sasl("SCRAM-SHA-512", user, "dave-secret"))
    raw = BrokerConnection("127.0.0.1", broker.port, security=security)
    try:

        def cluster_ops() -> tuple[int, int]:
            v10 = raw.request(3, 10, {"topics": [], "include_cluster_authorized_operations": True})
            cluster = raw.request(60, 0, {"include_cluster_authorized_operations": True})
            return (
                int(v10.cluster_authorized_operations),
                int(cluster.cluster_authorized_operations),
            )

        assert cluster_ops() == (0, 0)
        allow(broker, ResourceType.BROKER, "kafka-cluster", AclOperation.ALTER, f"User:{user}")
        both = _bits(AclOperation.ALTER, AclOperation.DESCRIBE)  # ALTER implies DESCRIBE
        assert cluster_ops() == (both, both)
    finally:
        raw.close()
