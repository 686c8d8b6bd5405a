"""SASL/GSSAPI (Kerberos) end to end: a real KDC (``tests.kerberos_kdc``), our broker and
our clients, and librdkafka when its build has GSSAPI.

The realm is the test's own (KRB5_CONFIG in a temporary directory, krb5kdc as a child
process); a machine without MIT Kerberos' KDC or the ``gssapi`` package fails these tests
with the reason, never skips them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import pytest

from coordinator.launcher import LocalBroker
from producer.admin import Admin, TopicSpec
from producer.produce.transactional_producer import TransactionalProducer
from tests.kerberos_kdc import REALM, Realm, running_realm, why_not
from txn.errors import SaslAuthenticationFailedError

pytestmark = pytest.mark.integration

KRB5 = "com.sun.security.auth.module.Krb5LoginModule"


@pytest.fixture(scope="module")
def realm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Realm]:
    reason = why_not()
    if reason is not None:
        pytest.fail(reason, pytrace=False)
    with running_realm(tmp_path_factory.mktemp("kdc")) as running:
        yield running


def broker_config(realm: Realm, **extra: str) -> dict[str, str]:
    jaas = (
        f'{KRB5} required useKeyTab=true storeKey=true keyTab="{realm.broker_keytab}" '
        f'principal="kafka/localhost@{REALM}";'
    )
    return {
        "listeners": "SASL_PLAINTEXT://localhost:0",
        "sasl.enabled.mechanisms": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        "listener.name.sasl_plaintext.gssapi.sasl.jaas.config": jaas,
        **extra,
    }


def client(keytab: Path, principal: str) -> dict[str, str]:
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        "sasl.kerberos.keytab": str(keytab),
        "sasl.kerberos.principal": principal,
    }


def test_our_clients_authenticate_with_keytabs(tmp_path: Path, realm: Realm) -> None:
    rules = "RULE:[2:$1@$0](.*@TEST\\.REALM)s/@.*//U,DEFAULT"
    config = broker_config(
        realm,
        **{
            "sasl.kerberos.principal.to.local.rules": rules,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:alice;User:BOB",
        },
    )
    with LocalBroker(host="localhost", data_dir=tmp_path / "d", config=config) as broker:
        bootstrap = broker.bootstrap_servers
        alice = client(realm.alice_keytab, f"alice@{REALM}")
        with Admin({"bootstrap.servers": bootstrap, **alice}) as admin:
            admin.create_topics([TopicSpec("krb", 1)])
        # bob/admin@TEST.REALM is mapped to BOB by the first rule: a super user.
        bob = client(realm.bob_keytab, f"bob/admin@{REALM}")
        producer = TransactionalProducer(
            {"bootstrap.servers": bootstrap, "transactional.id": "krb-tx", **bob}
        )
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("krb", b"v", partition=0)
        producer.commit_transaction()
        producer.close()
        # The Java clients' JAAS line works as well (--command-config files).
        jaas = (
            f'{KRB5} required useKeyTab=true keyTab="{realm.alice_keytab}" '
            f'principal="alice@{REALM}" serviceName="kafka";'
        )
        java_style = {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "GSSAPI",
            "sasl.jaas.config": jaas,
        }
        with Admin({"bootstrap.servers": bootstrap, **java_style}) as admin:
            assert "krb" in admin.list_topics()


def test_unknown_service_principal_is_refused(tmp_path: Path, realm: Realm) -> None:
    with LocalBroker(
        host="localhost", data_dir=tmp_path / "d", config=broker_config(realm)
    ) as broker:
        wrong = client(realm.alice_keytab, f"alice@{REALM}") | {
            "sasl.kerberos.service.name": "nosuch"
        }
        with (
            pytest.raises(SaslAuthenticationFailedError, match="GSSAPI"),
            Admin({"bootstrap.servers": broker.bootstrap_servers, **wrong}) as admin,
        ):
            admin.list_topics()


def test_broker_refuses_to_start_without_jaas_or_keytab(tmp_path: Path, realm: Realm) -> None:
    config = broker_config(realm)
    del config["listener.name.sasl_plaintext.gssapi.sasl.jaas.config"]
    with pytest.raises(RuntimeError, match="Could not find a 'KafkaServer'"):
        LocalBroker(host="localhost", data_dir=tmp_path / "a", config=config).start()
    config = broker_config(realm)
    key = "listener.name.sasl_plaintext.gssapi.sasl.jaas.config"
    config[key] = config[key].replace(str(realm.broker_keytab), str(tmp_path / "none.keytab"))
    with pytest.raises(RuntimeError, match="Unable to obtain password from user"):
        LocalBroker(host="localhost", data_dir=tmp_path / "b", config=config).start()


def test_librdkafka_wheel_has_no_gssapi(realm: Realm) -> None:
    """confluent-kafka's manylinux wheels build librdkafka without Cyrus SASL: GSSAPI is
    refused when the client is made (if a release adds it, this test says so)."""
    with pytest.raises(confluent_kafka.KafkaException, match="No provider for SASL mechanism"):
        confluent_kafka.Producer(
            {
                "bootstrap.servers": "localhost:1",
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "GSSAPI",
                "sasl.kerberos.keytab": str(realm.alice_keytab),
                "sasl.kerberos.principal": f"alice@{REALM}",
            }
        )


def test_our_client_reauthenticates(tmp_path: Path, realm: Realm) -> None:
    """KIP-368: a 1.5 s session; our client re-authenticates (GSSAPI again) on its connection."""
    config = broker_config(realm, **{"connections.max.reauth.ms": "1500"})
    with LocalBroker(host="localhost", data_dir=tmp_path / "d", config=config) as broker:
        alice = client(realm.alice_keytab, f"alice@{REALM}")
        with Admin({"bootstrap.servers": broker.bootstrap_servers, **alice}) as admin:
            admin.create_topics([TopicSpec("reauth", 1)])
            deadline = time.monotonic() + 4
            while time.monotonic() < deadline:
                assert "reauth" in admin.list_topics()
                time.sleep(0.3)
        assert not broker.wait_for_output("SASL session ended", timeout_s=1)
