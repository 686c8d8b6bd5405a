"""SASL/GSSAPI with Apache Kafka 4.4 as the oracle: our client library against Kafka's broker,
and what a bad token gets from Kafka and from sharetxn (the same answer).

Kafka runs with a second listener, SASL_PLAINTEXT on ``localhost`` (GSSAPI, the test realm's
keytab for ``kafka/localhost``); its JVM reads the realm's krb5.conf
(``-Djava.security.krb5.conf``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chaos.apache_kafka import free_port
from coordinator.launcher import LocalBroker
from producer.admin import Admin, TopicSpec
from producer.produce.transactional_producer import TransactionalProducer
from tests.kafka_wire import WireClient
from tests.kerberos_kdc import REALM, Realm, running_realm, why_not
from tests.reference.kafka import ReferenceKafka, java_available
from txn.api_keys import ApiKey

pytestmark = pytest.mark.reference

KRB5 = "com.sun.security.auth.module.Krb5LoginModule"
RULES = "RULE:[2:$1@$0](.*@TEST\\.REALM)s/@.*//U,DEFAULT"


def jaas(realm: Realm) -> str:
    return (
        f'{KRB5} required useKeyTab=true storeKey=true keyTab="{realm.broker_keytab}" '
        f'principal="kafka/localhost@{REALM}";'
    )


class KerberizedKafka(ReferenceKafka):
    """Kafka with a GSSAPI listener on localhost next to its PLAINTEXT one."""

    def __init__(self, data_dir: Path, realm: Realm, rules: str = RULES) -> None:
        super().__init__(
            data_dir,
            settings={
                "sasl.enabled.mechanisms": "GSSAPI",
                "sasl.kerberos.service.name": "kafka",
                "listener.name.sasl_plaintext.gssapi.sasl.jaas.config": jaas(realm),
                "sasl.kerberos.principal.to.local.rules": rules,
            },
        )
        self.sasl_port = free_port()

    def properties(self) -> dict[str, str]:
        props = super().properties()
        props["listeners"] += f",SASL_PLAINTEXT://localhost:{self.sasl_port}"
        props["advertised.listeners"] += f",SASL_PLAINTEXT://localhost:{self.sasl_port}"
        props["listener.security.protocol.map"] = (
            "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT"
        )
        return props


@pytest.fixture(scope="module")
def realm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Realm]:
    if not java_available():
        pytest.skip("Apache Kafka needs a Java runtime: java is not on PATH")
    reason = why_not()
    if reason is not None:
        pytest.fail(reason, pytrace=False)
    with running_realm(tmp_path_factory.mktemp("kdc")) as running:
        yield running


@pytest.fixture(scope="module")
def kafka(realm: Realm, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KerberizedKafka]:
    saved = os.environ.get("JAVA_TOOL_OPTIONS")
    os.environ["JAVA_TOOL_OPTIONS"] = (
        f"{saved or ''} -Djava.security.krb5.conf={realm.kdc.krb5_conf}".strip()
    )
    try:
        node = KerberizedKafka(tmp_path_factory.mktemp("kafka"), realm)
        try:
            node.start()
        except Exception as exc:
            pytest.fail(f"Apache Kafka did not start: {exc}\n{node.log_tail()}", pytrace=False)
        try:
            yield node
        finally:
            node.stop()
    finally:
        if saved is None:
            os.environ.pop("JAVA_TOOL_OPTIONS", None)
        else:
            os.environ["JAVA_TOOL_OPTIONS"] = saved


def client(keytab: Path, principal: str) -> dict[str, str]:
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        "sasl.kerberos.keytab": str(keytab),
        "sasl.kerberos.principal": principal,
    }


def test_our_clients_against_kafka(kafka: KerberizedKafka, realm: Realm) -> None:
    bootstrap = f"localhost:{kafka.sasl_port}"
    alice = client(realm.alice_keytab, f"alice@{REALM}")
    with Admin({"bootstrap.servers": bootstrap, **alice}) as admin:
        admin.create_topics([TopicSpec("krb-oracle", 1, replication_factor=1)])
        assert "krb-oracle" in admin.list_topics()
    bob = client(realm.bob_keytab, f"bob/admin@{REALM}")
    producer = TransactionalProducer(
        {"bootstrap.servers": bootstrap, "transactional.id": "krb-oracle-tx", **bob}
    )
    producer.init_transactions()
    producer.begin_transaction()
    producer.send("krb-oracle", b"v", partition=0)
    producer.commit_transaction()
    producer.close()


def _bad_token_answer(bootstrap: str) -> tuple[int, int, str | None]:
    raw = WireClient(bootstrap)
    try:
        hs = raw.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"})
        resp: Any = raw.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\x60\x03not a token"})
        return int(hs.error_code), int(resp.error_code), resp.error_message
    finally:
        raw.close()


def test_a_bad_token_gets_kafkas_answer(
    kafka: KerberizedKafka, realm: Realm, tmp_path: Path
) -> None:
    config = {
        "listeners": "SASL_PLAINTEXT://localhost:0",
        "sasl.enabled.mechanisms": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        "listener.name.sasl_plaintext.gssapi.sasl.jaas.config": jaas(realm),
    }
    expected = _bad_token_answer(f"localhost:{kafka.sasl_port}")
    with LocalBroker(host="localhost", data_dir=tmp_path / "d", config=config) as broker:
        assert _bad_token_answer(broker.bootstrap_servers) == expected


def _after_login(bootstrap: str, realm: Realm) -> str:
    """What a request gets after a GSSAPI login whose name no rule maps: Kafka completes the
    exchange, then closes the connection at the next request (its principal fails)."""
    alice = client(realm.alice_keytab, f"alice@{REALM}")
    try:
        with Admin({"bootstrap.servers": bootstrap, "request.timeout.ms": 5000, **alice}) as admin:
            admin.list_topics()
    except Exception as exc:  # the kind of failure is what is compared
        return type(exc).__name__
    return "answered"


def test_a_name_without_short_name_closes_the_connection(
    realm: Realm, tmp_path: Path, kafka: KerberizedKafka
) -> None:
    del kafka  # its fixture gives the JVMs the realm's krb5.conf
    bad_rules = "RULE:[1:$1@$0]"  # a result holding '@': not a short name
    node = KerberizedKafka(tmp_path / "kafka", realm, rules=bad_rules)
    node.start()
    try:
        expected = _after_login(f"localhost:{node.sasl_port}", realm)
    finally:
        node.stop()
    config = {
        "listeners": "SASL_PLAINTEXT://localhost:0",
        "sasl.enabled.mechanisms": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        "listener.name.sasl_plaintext.gssapi.sasl.jaas.config": jaas(realm),
        "sasl.kerberos.principal.to.local.rules": bad_rules,
    }
    with LocalBroker(host="localhost", data_dir=tmp_path / "d", config=config) as broker:
        assert _after_login(broker.bootstrap_servers, realm) == expected == "NetworkError"
        assert broker.wait_for_output("Failed to set name for 'alice@TEST.REALM'")
