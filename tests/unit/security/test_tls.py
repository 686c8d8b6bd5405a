"""The broker's SSL context from PEM settings (files or inline), and refusals."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from coordinator.security.tls import server_context
from tests.security_certs import make_certs
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
        ({"ssl.keystore.location": "{keystore}"}, "only PEM"),
        ({"ssl.keystore.type": "PEM"}, "ssl.keystore.location"),
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
    paths = {"keystore": str(certs.server_keystore), "missing": str(tmp_path / "nope.pem")}
    config = BrokerConfig({k: v.format(**paths) for k, v in settings.items()})
    with pytest.raises(InvalidConfigError, match=message):
        server_context(config, "SSL")
