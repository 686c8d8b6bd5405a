"""Apache Kafka 4.4's Java console producer and consumer against sharetxn over SASL/GSSAPI.

The realm is the test's own (``tests.kerberos_kdc``: krb5kdc as a child process); the JVMs get
its krb5.conf with ``-Djava.security.krb5.conf`` and log in from a keytab with the
Krb5LoginModule JAAS line of their ``--command-config`` file.  The broker maps
``bob/admin@TEST.REALM`` to ``User:BOB`` with a principal rule; ACLs make that mapping
observable (only BOB may write).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from coordinator.launcher import LocalBroker
from tests.kerberos_kdc import REALM, Realm, running_realm, why_not
from tests.reference.kafka import java_available, run_tool

pytestmark = pytest.mark.reference

KRB5 = "com.sun.security.auth.module.Krb5LoginModule"


@pytest.fixture(scope="module")
def realm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Realm]:
    if not java_available():
        pytest.skip("Kafka's tools need a Java runtime: java is not on PATH")
    reason = why_not()
    if reason is not None:
        pytest.fail(reason, pytrace=False)
    with running_realm(tmp_path_factory.mktemp("kdc")) as running:
        yield running


def client_properties(path: Path, keytab: Path, principal: str) -> str:
    jaas = (
        f'{KRB5} required useKeyTab=true storeKey=true keyTab="{keytab}" principal="{principal}";'
    )
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=GSSAPI\n"
        "sasl.kerberos.service.name=kafka\n"
        f"sasl.jaas.config={jaas}\n"
    )
    return str(path)


def test_console_clients_log_in_from_keytabs(
    tmp_path: Path, realm: Realm, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "JAVA_TOOL_OPTIONS",
        " ".join(
            filter(
                None,
                [
                    os.environ.get("JAVA_TOOL_OPTIONS"),
                    f"-Djava.security.krb5.conf={realm.kdc.krb5_conf}",
                ],
            )
        ),
    )
    jaas = (
        f'{KRB5} required useKeyTab=true storeKey=true keyTab="{realm.broker_keytab}" '
        f'principal="kafka/localhost@{REALM}";'
    )
    config = {
        "listeners": "SASL_PLAINTEXT://localhost:0",
        "sasl.enabled.mechanisms": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        "listener.name.sasl_plaintext.gssapi.sasl.jaas.config": jaas,
        "sasl.kerberos.principal.to.local.rules": "RULE:[2:$1@$0](.*@TEST\\.REALM)s/@.*//U,DEFAULT",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:BOB",
    }
    with LocalBroker(host="localhost", data_dir=tmp_path / "d", config=config) as broker:
        bootstrap = broker.bootstrap_servers
        bob = client_properties(tmp_path / "bob.properties", realm.bob_keytab, f"bob/admin@{REALM}")
        topic = f"krb-{uuid.uuid4().hex[:8]}"
        produced = run_tool(
            "kafka-console-producer",
            ["--bootstrap-server", bootstrap, "--topic", topic, "--command-config", bob],
            input="a\nb\nc\n",
            timeout=120,
        )
        assert produced.returncode == 0, produced.stderr[-3000:]
        consumed = run_tool(
            "kafka-console-consumer",
            [
                "--bootstrap-server",
                bootstrap,
                "--topic",
                topic,
                "--from-beginning",
                "--max-messages",
                "3",
                "--timeout-ms",
                "30000",
                "--command-config",
                bob,
            ],
            timeout=120,
        )
        assert consumed.returncode == 0, consumed.stderr[-3000:]
        assert [line for line in consumed.stdout.splitlines() if line] == ["a", "b", "c"]
        # alice authenticates (User:alice) but holds no ACL: refused by the authorizer.
        alice = client_properties(
            tmp_path / "alice.properties", realm.alice_keytab, f"alice@{REALM}"
        )
        refused = run_tool(
            "kafka-console-producer",
            [
                "--bootstrap-server",
                bootstrap,
                "--topic",
                topic,
                "--command-config",
                alice,
                "--command-property",
                "max.block.ms=10000",
            ],
            input="x\n",
            timeout=120,
        )
        assert "TopicAuthorizationException" in refused.stdout + refused.stderr, refused.stderr[
            -3000:
        ]


def test_producer_reauthenticates_with_kerberos(
    tmp_path: Path, realm: Realm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KIP-368 with GSSAPI: 2 s sessions over a 6 s run; the producer re-authenticates on its
    connection (Kafka sets no credential lifetime for GSSAPI: connections.max.reauth.ms rules)."""
    monkeypatch.setenv(
        "JAVA_TOOL_OPTIONS",
        f"{os.environ.get('JAVA_TOOL_OPTIONS', '')} "
        f"-Djava.security.krb5.conf={realm.kdc.krb5_conf}".strip(),
    )
    jaas = (
        f'{KRB5} required useKeyTab=true storeKey=true keyTab="{realm.broker_keytab}" '
        f'principal="kafka/localhost@{REALM}";'
    )
    config = {
        "listeners": "SASL_PLAINTEXT://localhost:0",
        "sasl.enabled.mechanisms": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        "listener.name.sasl_plaintext.gssapi.sasl.jaas.config": jaas,
        "connections.max.reauth.ms": "2000",
    }
    with LocalBroker(host="localhost", data_dir=tmp_path / "d", config=config) as broker:
        alice = client_properties(
            tmp_path / "alice.properties", realm.alice_keytab, f"alice@{REALM}"
        )
        done = run_tool(
            "kafka-producer-perf-test",
            [
                "--bootstrap-server",
                broker.bootstrap_servers,
                "--topic",
                "reauth",
                "--num-records",
                "48",
                "--record-size",
                "10",
                "--throughput",
                "8",
                "--command-config",
                alice,
            ],
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert "48 records sent" in done.stdout
        assert not broker.wait_for_output("SASL session ended", timeout_s=1)
