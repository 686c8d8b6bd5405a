"""Listener configs with Kafka's names; SCRAM bootstrap specs; TLS principal names."""

from __future__ import annotations

import pytest

from coordinator.security.bootstrap import ScramSpecError, parse_add_scram
from coordinator.security.listeners import SecurityProtocol, listeners_from_config
from coordinator.security.scram import ScramMechanism
from coordinator.security.tls import dn_of
from txn.config import BrokerConfig, per_ip_overrides
from txn.errors import InvalidConfigError


def test_listen_is_one_plaintext_listener() -> None:
    [listener] = listeners_from_config(BrokerConfig(), ("127.0.0.1", 9092))
    assert (listener.name, listener.host, listener.port) == ("PLAINTEXT", "127.0.0.1", 9092)
    assert listener.protocol is SecurityProtocol.PLAINTEXT


def test_several_listeners_and_the_protocol_map() -> None:
    config = BrokerConfig(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://:9094,INTERNAL://[::1]:9095",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,"
            "INTERNAL:SASL_PLAINTEXT",
            "advertised.listeners": "SASL_SSL://broker.example:19094",
        }
    )
    plain, sasl_ssl, internal = listeners_from_config(config, ("x", 1))
    assert sasl_ssl.protocol.uses_tls and sasl_ssl.protocol.uses_sasl
    assert (sasl_ssl.host, sasl_ssl.port) == ("", 9094)
    assert (sasl_ssl.advertised_host, sasl_ssl.advertised_port) == ("broker.example", 19094)
    assert (internal.host, internal.protocol) == ("::1", SecurityProtocol.SASL_PLAINTEXT)
    assert plain.advertised_host is None


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"listeners": "127.0.0.1:9092"}, "NAME://HOST:PORT"),
        ({"listeners": "CUSTOM://:9092"}, "listener.security.protocol.map"),
        ({"listeners": "PLAINTEXT://:1,PLAINTEXT://:2"}, "twice"),
        (
            {"listeners": "PLAINTEXT://:1", "advertised.listeners": "SSL://h:2"},
            "not one of the listeners",
        ),
        ({"listener.security.protocol.map": "A:TLS"}, "unknown security protocol"),
    ],
)
def test_bad_listener_configs(settings: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        listeners_from_config(BrokerConfig(settings), ("127.0.0.1", 9092))


def test_listener_prefixed_configs_are_accepted() -> None:
    config = BrokerConfig(
        {
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.internal.sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.internal.plain.sasl.jaas.config": "x required;",
        }
    )
    assert config.get_listener_str("INTERNAL", "sasl.enabled.mechanisms") == "SCRAM-SHA-512"
    assert config.get_listener_str("OTHER", "sasl.enabled.mechanisms") == "PLAIN"
    with pytest.raises(InvalidConfigError):
        BrokerConfig({"listener.name.internal.no.such.config": "1"})


def test_add_scram_spec() -> None:
    name, mechanism, credential = parse_add_scram(
        'SCRAM-SHA-512=[name=admin,password="a,b=c",iterations=8192]'
    )
    assert (name, mechanism, credential.iterations) == (
        "admin",
        ScramMechanism.SCRAM_SHA_512,
        8192,
    )
    for bad in ("SCRAM-SHA-1=[name=a,password=b]", "SCRAM-SHA-256=[name=a]", "nonsense"):
        with pytest.raises(ScramSpecError):
            parse_add_scram(bad)
    with pytest.raises(ScramSpecError, match="iterations"):
        parse_add_scram("SCRAM-SHA-256=[name=a,password=b,iterations=10]")


def test_certificate_subject_in_rfc2253_order() -> None:
    cert = {
        "subject": (
            (("countryName", "US"),),
            (("organizationName", "Acme, Inc."),),
            (("commonName", "alice"),),
        )
    }
    assert dn_of(cert) == "CN=alice,O=Acme\\, Inc.,C=US"


def test_connection_limit_configs_are_checked() -> None:
    assert per_ip_overrides(" a.example:1, 10.0.0.1:3 ,") == {"a.example": 1, "10.0.0.1": 3}
    BrokerConfig(
        {"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "h:1"}
    ).validate()
    for bad, message in (
        ({"max.connections.per.ip.overrides": "host"}, "max.connections.per.ip.overrides"),
        ({"max.connections.per.ip.overrides": "host:-1"}, "max.connections.per.ip.overrides"),
        ({"max.connections.per.ip": "-1"}, "Value must be at least 0"),
        ({"max.connections.per.ip": "0"}, "must be set when max.connections.per.ip is 0"),
    ):
        with pytest.raises(InvalidConfigError, match=message):
            BrokerConfig(bad).validate()
    assert BrokerConfig()["sasl.server.max.receive.size"] == 524288
