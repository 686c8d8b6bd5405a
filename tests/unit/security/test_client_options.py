"""Client security options: librdkafka's names, the Java clients' names, Spark's kafka.*."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from producer.protocol.security import ClientSecurity
from producer.spark.options import SourceOptions
from txn.errors import InvalidConfigError


def test_librdkafka_names() -> None:
    security = ClientSecurity.from_config(
        {
            "bootstrap.servers": "h:1",
            "security.protocol": "SASL_SSL",
            "sasl.mechanisms": "scram-sha-512",
            "sasl.username": "alice",
            "sasl.password": "pw",
            "ssl.ca.location": "/ca.pem",
        }
    )
    assert (security.uses_tls, security.uses_sasl, security.mechanism) == (
        True,
        True,
        "SCRAM-SHA-512",
    )
    assert security.principal == "User:alice"
    assert ClientSecurity.from_config({}).principal == "User:ANONYMOUS"


def test_java_names_from_a_command_config_file() -> None:
    security = ClientSecurity.from_config(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
            'required username="bob" password="b\\"ob";',
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": "/ca.pem",
        }
    )
    assert (security.username, security.password, security.ca_location) == (
        "bob",
        'b"ob',
        "/ca.pem",
    )


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"security.protocol": "tls"}, "security.protocol"),
        (
            {"security.protocol": "sasl_plaintext", "sasl.kerberos.keytab": "/no/such.keytab"},
            "does not exist",
        ),
        ({"security.protocol": "sasl_plaintext", "sasl.mechanism": "DIGEST-MD5"}, "GSSAPI"),
        ({"security.protocol": "sasl_plaintext", "sasl.mechanism": "PLAIN"}, "sasl.username"),
        ({"ssl.certificate.location": "/c.pem"}, "go together"),
    ],
)
def test_bad_client_security(config: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        ClientSecurity.from_config(config)


def test_spark_source_passes_kafka_security_options() -> None:
    options = SourceOptions.parse(
        {
            "kafka.bootstrap.servers": "h:1",
            "group.id": "g",
            "subscribe": "t",
            "checkpointLocation": "/tmp/chk",
            "kafka.security.protocol": "SASL_PLAINTEXT",
            "KAFKA.SASL.MECHANISM": "PLAIN",
            "kafka.sasl.username": "alice",
            "kafka.sasl.password": "pw",
        }
    )
    config = dict(options.client_config)
    assert config == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "pw",
    }
    assert ClientSecurity.from_config(config).uses_sasl


def test_recovery_audit_log_records_the_authenticated_principal(tmp_path: Path) -> None:
    from chaos.cli import recovery_support as cli_common  # noqa: PLC0415
    from producer.twophase.audit import read_audit_log  # noqa: PLC0415

    props = tmp_path / "client.properties"
    props.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"
        "sasl.username=ops-bot\nsasl.password=secret\n"
    )
    args = argparse.Namespace(
        audit_log=str(tmp_path / "audit.jsonl"),
        operator="alice",
        bootstrap_server="127.0.0.1:9092",
        command_config=props,
    )
    log = cli_common.audit_log(args, "txn abort")
    log.write("begin", {"transactional_id": "t"})
    [event] = read_audit_log(tmp_path / "audit.jsonl")
    assert (event["operator"], event["principal"]) == ("alice", "User:ops-bot")
    assert "secret" not in (tmp_path / "audit.jsonl").read_text()
    assert cli_common.executor_config(args)["sasl.username"] == "ops-bot"
