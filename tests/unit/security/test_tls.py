"""The broker's SSL context from PEM settings (files or inline) or PKCS12 stores, and refusals."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from coordinator.security.tls import server_context
from tests.security_certs import STORE_PASSWORD, make_certs
from txn.config import BrokerConfig
from txn.errors import InvalidConfigError


def test_keystore_from_a_file_or_inline(tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    from_file = server_context(
        BrokerConfig(
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(certs.server_keystore),
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(certs.ca),
                "ssl.client.auth": "requested",
            }
        ),
        "SSL",
    )
    assert from_file.verify_mode is ssl.CERT_OPTIONAL
    text = certs.server_keystore.read_text()
    key_end = text.index("-----END PRIVATE KEY-----") + len("-----END PRIVATE KEY-----\n")
    inline = server_context(
        BrokerConfig(
            {
                "ssl.keystore.type": "PEM",
                "listener.name.internal.ssl.keystore.key": text[:key_end],
                "listener.name.internal.ssl.keystore.certificate.chain": text[key_end:],
                "listener.name.internal.ssl.truststore.certificates": certs.ca.read_text(),
                "ssl.truststore.type": "PEM",
                "listener.name.internal.ssl.client.auth": "required",
                "ssl.client.auth": "none",
            }
        ),
        "INTERNAL",
    )
    assert inline.verify_mode is ssl.CERT_REQUIRED


def test_sasl_ssl_ignores_the_unprefixed_client_auth(tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    config = BrokerConfig(
        {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(certs.server_keystore),
            "ssl.client.auth": "required",
        }
    )
    assert server_context(config, "SASL_SSL", sasl=True).verify_mode is ssl.CERT_NONE


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"ssl.keystore.location": "{keystore}"},
            "Invalid value JKS for configuration ssl.keystore.type: JKS stores are not supported",
        ),
        (
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": "{keystore}",
                "ssl.truststore.location": "{keystore}",
            },
            "Invalid value JKS for configuration ssl.truststore.type",
        ),
        (
            {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": "{p12}"},
            "SSL key store is specified, but key store password is not specified.",
        ),
        (
            {
                "ssl.keystore.type": "PKCS12",
                "ssl.keystore.location": "{p12}",
                "ssl.keystore.password": "wrong",
            },
            "Failed to load SSL keystore .*server.p12 of type PKCS12",
        ),
        (
            {
                "ssl.keystore.type": "PKCS12",
                "ssl.keystore.location": "{keystore}",
                "ssl.keystore.password": STORE_PASSWORD,
            },
            "Failed to load SSL keystore .*server.pem of type PKCS12",
        ),
        (
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": "{keystore}",
                "ssl.truststore.type": "PKCS12",
                "ssl.truststore.location": "{ca_p12}",
            },
            "Failed to load SSL truststore .*ca.p12 of type PKCS12",
        ),
        ({"ssl.keystore.type": "PEM"}, "ssl.keystore.location"),
        # Kafka's DefaultSslEngineFactory refusals
        (
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": "{keystore}",
                "ssl.keystore.password": "x",
            },
            "SSL key store password cannot be specified with PEM format",
        ),
        (
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": "{keystore}",
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": "{keystore}",
                "ssl.truststore.password": "x",
            },
            "SSL trust store password cannot be specified for PEM format.",
        ),
        (
            {
                "ssl.keystore.type": "PKCS12",
                "ssl.keystore.key": "k",
                "ssl.keystore.certificate.chain": "c",
            },
            "SSL private key can be specified only for PEM, but key store type is PKCS12.",
        ),
        (
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": "{keystore}",
                "ssl.truststore.certificates": "c",
            },
            "SSL trust store certs can be specified only for PEM, but trust store type is JKS.",
        ),
        (
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": "{keystore}",
                "ssl.client.auth": "required",
            },
            "trust store",
        ),
        ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "{missing}"}, "cannot load"),
    ],
)
def test_refusals(tmp_path: Path, settings: dict[str, str], message: str) -> None:
    certs = make_certs(tmp_path)
    paths = {
        "keystore": str(certs.server_keystore),
        "missing": str(tmp_path / "nope.pem"),
        "p12": str(certs.server_p12),
        "ca_p12": str(certs.ca_p12),
    }
    config = BrokerConfig({k: v.format(**paths) for k, v in settings.items()})
    with pytest.raises(InvalidConfigError, match=message):
        server_context(config, "SSL")


def test_pkcs12_key_and_trust_stores(tmp_path: Path) -> None:
    """Kafka's ssl.keystore.type=PKCS12: the store password opens the file (and the key)."""
    certs = make_certs(tmp_path)
    config = {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(certs.server_p12),
        "ssl.keystore.password": STORE_PASSWORD,
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": str(certs.ca_p12),
        "ssl.truststore.password": STORE_PASSWORD,
        "ssl.client.auth": "required",
    }
    context = server_context(BrokerConfig(config), "SSL")
    assert context.verify_mode is ssl.CERT_REQUIRED
    assert [c["subject"] for c in context.get_ca_certs()] == [
        ((("commonName", "sharetxn test CA"),),)
    ]
