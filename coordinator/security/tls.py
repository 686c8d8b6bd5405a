"""TLS for SSL and SASL_SSL listeners, from PEM or PKCS12 stores (Kafka's store types).

``ssl.keystore.type=PEM``: a PEM file holding the private key and the certificate chain
(``ssl.keystore.location``) or the two inline (``ssl.keystore.key`` and
``ssl.keystore.certificate.chain``); the trust store is a PEM file of CA
certificates (``ssl.truststore.location``) or inline
(``ssl.truststore.certificates``).  ``PKCS12``: the file at ``ssl.keystore.location``
opened with ``ssl.keystore.password`` (required, as Kafka; its key under the same
password, as keytool makes them), the trust store's every certificate trusted
(``ssl.truststore.password`` optional, as Kafka).  JKS needs Java: refused.
``ssl.client.auth`` = none, requested or required.  A client that presented a
certificate is ``User:<its subject DN>`` in RFC 2253 form, as Kafka's default principal
builder names it.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

from txn.config import BrokerConfig
from txn.errors import InvalidConfigError
from txn.tls_stores import load_pkcs12_key_store, pem_files, pkcs12_trusted_pem

ANONYMOUS = "User:ANONYMOUS"

# Python's attribute names -> the RFC 2253 keywords Java's X500Principal uses.
_KEYWORDS = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
    "emailAddress": "1.2.840.113549.1.9.1",
}
_SPECIAL = set(',+"\\<>;')


def _escape(value: str) -> str:
    out = []
    for i, ch in enumerate(value):
        if ch in _SPECIAL or (ch == "#" and i == 0) or (ch == " " and i in (0, len(value) - 1)):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def dn_of(peer_cert: dict[str, Any]) -> str | None:
    """The subject of a certificate from ``SSLSocket.getpeercert()``, RFC 2253 order."""
    subject = peer_cert.get("subject")
    if not subject:
        return None
    rdns = []
    for rdn in reversed(subject):
        rdns.append("+".join(f"{_KEYWORDS.get(k, k)}={_escape(str(v))}" for k, v in rdn))
    return ",".join(rdns)


def principal_of(ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> str:
    """``User:<DN>`` of the client certificate, ``User:ANONYMOUS`` without one."""
    if ssl_object is None:
        return ANONYMOUS
    cert = ssl_object.getpeercert()
    dn = dn_of(cert) if cert else None
    return f"User:{dn}" if dn else ANONYMOUS


#: ``ssl.keystore.type`` / ``ssl.truststore.type`` values served (Kafka's JKS needs Java).
STORE_TYPES = ("PEM", "PKCS12")


def _load_pkcs12_keystore(
    context: ssl.SSLContext, get: Callable[[str], str | None], listener: str
) -> None:
    """The key and certificate chain of a PKCS12 key store, as Kafka's FileBasedStore."""
    location, store_password = get("ssl.keystore.location"), get("ssl.keystore.password")
    if not location:
        msg = f"listener {listener} uses TLS: set ssl.keystore.location (a PKCS12 key store)"
        raise InvalidConfigError(msg)
    if store_password is None:
        msg = "SSL key store is specified, but key store password is not specified."
        raise InvalidConfigError(msg)
    load_pkcs12_key_store(context, location, store_password)


def _pkcs12_trusted(get: Callable[[str], str | None]) -> str:
    """Every certificate of a PKCS12 trust store, as PEM."""
    location = get("ssl.truststore.location")
    assert location is not None
    return pkcs12_trusted_pem(location, get("ssl.truststore.password"))


def _check_store_settings(
    get: Callable[[str], str | None], keystore_type: str, truststore_type: str
) -> None:
    """The combinations Kafka's DefaultSslEngineFactory refuses, with its messages."""
    key, chain, location = (
        get("ssl.keystore.key"),
        get("ssl.keystore.certificate.chain"),
        get("ssl.keystore.location"),
    )
    refusals = (
        (
            key is not None and keystore_type != "PEM",
            "SSL private key can be specified only for PEM, but key store type is "
            f"{keystore_type}.",
        ),
        (
            key is not None and location is not None,
            "Both SSL key store location and separate private key are specified.",
        ),
        (
            key is None and chain is not None,
            "SSL certificate chain is specified, but private key is not specified",
        ),
        (
            get("ssl.truststore.certificates") is not None and truststore_type != "PEM",
            "SSL trust store certs can be specified only for PEM, but trust store type is "
            f"{truststore_type}.",
        ),
        (
            keystore_type == "PEM" and get("ssl.keystore.password") is not None,
            "SSL key store password cannot be specified with PEM format, only key password "
            "may be specified",
        ),
        (
            truststore_type == "PEM"
            and get("ssl.truststore.password") is not None
            and (get("ssl.truststore.location") or get("ssl.truststore.certificates")),
            "SSL trust store password cannot be specified for PEM format.",
        ),
    )
    for refused, msg in refusals:
        if refused:
            raise InvalidConfigError(msg)


def server_context(config: BrokerConfig, listener: str, *, sasl: bool = False) -> ssl.SSLContext:
    """The SSL context of one listener (``listener.name.<listener>.ssl.*`` overrides).

    ``sasl``: a SASL_SSL listener, where clients authenticate with SASL and a plain
    ``ssl.client.auth`` does not apply (Kafka's KIP-684 rule).
    """

    def get(key: str) -> str | None:
        return config.get_listener_str(listener, key)

    keystore_type = (get("ssl.keystore.type") or "").upper()
    truststore_type = (get("ssl.truststore.type") or "").upper()
    for store, kind in (
        ("ssl.keystore.type", keystore_type),
        ("ssl.truststore.type", truststore_type),
    ):
        relevant = store == "ssl.keystore.type" or get("ssl.truststore.location")
        if relevant and kind not in STORE_TYPES:
            msg = (
                f"Invalid value {kind} for configuration {store}: {kind} stores are not "
                f"supported here (set {store} to PKCS12 or PEM)"
            )
            raise InvalidConfigError(msg)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    password = get("ssl.key.password")
    location, chain, key = (
        get("ssl.keystore.location"),
        get("ssl.keystore.certificate.chain"),
        get("ssl.keystore.key"),
    )
    _check_store_settings(get, keystore_type, truststore_type)
    try:
        if keystore_type == "PKCS12":
            _load_pkcs12_keystore(context, get, listener)
        elif location:
            context.load_cert_chain(location, password=password)
        elif chain and key:
            with pem_files(chain, key) as (chain_path, key_path):
                context.load_cert_chain(chain_path, key_path, password=password)
        else:
            msg = (
                f"listener {listener} uses TLS: set ssl.keystore.location (PEM key and chain) "
                "or ssl.keystore.certificate.chain and ssl.keystore.key"
            )
            raise InvalidConfigError(msg)
        trust_file, trust_inline = (
            get("ssl.truststore.location"),
            get("ssl.truststore.certificates"),
        )
        if trust_file and truststore_type == "PKCS12":
            context.load_verify_locations(cadata=_pkcs12_trusted(get))
        elif trust_file:
            context.load_verify_locations(cafile=trust_file)
        elif trust_inline:
            context.load_verify_locations(cadata=trust_inline)
    except (OSError, ssl.SSLError) as exc:
        msg = f"listener {listener}: cannot load TLS key or certificates: {exc}"
        raise InvalidConfigError(msg) from exc
    if sasl:
        # KIP-684: on SASL_SSL only the listener-prefixed ssl.client.auth counts.
        prefixed = config.get(f"listener.name.{listener.lower()}.ssl.client.auth")
        auth = str(prefixed or "none").lower()
    else:
        auth = (get("ssl.client.auth") or "none").lower()
    if auth not in ("none", "requested", "required"):
        msg = f"ssl.client.auth must be none, requested or required, got {auth!r}"
        raise InvalidConfigError(msg)
    if auth != "none" and not (
        get("ssl.truststore.location") or get("ssl.truststore.certificates")
    ):
        msg = f"ssl.client.auth={auth} needs a trust store (ssl.truststore.location)"
        raise InvalidConfigError(msg)
    context.verify_mode = {
        "none": ssl.CERT_NONE,
        "requested": ssl.CERT_OPTIONAL,
        "required": ssl.CERT_REQUIRED,
    }[auth]
    return context
