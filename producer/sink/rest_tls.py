"""``https://`` listeners of the sink worker's REST API, with Connect's TLS keys.

Connect reads a listener's TLS settings from ``listeners.https.ssl.*`` and, for a key not
given there, from the worker's ``ssl.*`` keys.  The stores are Kafka's PEM and PKCS12
types (JKS needs Java: refused):

- ``ssl.keystore.type`` (``JKS`` by default in Connect: set ``PEM`` or ``PKCS12``);
  ``ssl.keystore.location`` (PEM: the key and the certificate chain in one file; PKCS12
  with ``ssl.keystore.password``), or PEM inline as ``ssl.keystore.key`` and
  ``ssl.keystore.certificate.chain``; ``ssl.key.password`` for an encrypted PEM key;
- ``ssl.truststore.type``, ``ssl.truststore.location`` (``ssl.truststore.password`` for
  PKCS12) or ``ssl.truststore.certificates``: who may present a client certificate;
- ``ssl.client.authentication``: ``none`` (the default), ``requested`` or ``required``.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any, Final

from txn.tls_stores import load_pkcs12_key_store, pem_files, pkcs12_trusted_pem

__all__ = ["HTTPS_PREFIX", "https_context"]

HTTPS_PREFIX: Final = "listeners.https."


def https_context(worker: Mapping[str, Any]) -> ssl.SSLContext:
    """The server context of an ``https://`` listener; ``ValueError`` naming the key."""

    def get(key: str) -> str | None:
        value = worker.get(HTTPS_PREFIX + key)
        if value is None:
            value = worker.get(key)
        return None if value is None or str(value) == "" else str(value)

    kind = (get("ssl.keystore.type") or "JKS").upper()
    trust_kind = (get("ssl.truststore.type") or "JKS").upper()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    location = get("ssl.keystore.location")
    try:
        if kind == "PKCS12":
            password = get("ssl.keystore.password")
            if not location or password is None:
                msg = "ssl.keystore.location and ssl.keystore.password: required for PKCS12"
                raise ValueError(msg)
            load_pkcs12_key_store(context, location, password)
        elif kind == "PEM":
            key, chain = get("ssl.keystore.key"), get("ssl.keystore.certificate.chain")
            if location:
                context.load_cert_chain(location, password=get("ssl.key.password"))
            elif key and chain:
                with pem_files(chain, key) as (chain_path, key_path):
                    context.load_cert_chain(chain_path, key_path, password=get("ssl.key.password"))
            else:
                msg = "ssl.keystore.location: an https listener needs a key store"
                raise ValueError(msg)
        else:
            msg = f"ssl.keystore.type: {kind} stores are not supported here (PEM or PKCS12)"
            raise ValueError(msg)
        trust = get("ssl.truststore.location")
        if trust and trust_kind == "PKCS12":
            trusted = pkcs12_trusted_pem(trust, get("ssl.truststore.password"))
            context.load_verify_locations(cadata=trusted)
        elif trust:
            context.load_verify_locations(cafile=trust)
        elif get("ssl.truststore.certificates"):
            context.load_verify_locations(cadata=get("ssl.truststore.certificates"))
    except (OSError, ssl.SSLError) as exc:
        msg = f"listeners: cannot load the https listener's key or certificates: {exc}"
        raise ValueError(msg) from exc
    auth = (get("ssl.client.authentication") or "none").lower()
    modes = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
    if auth not in modes:
        msg = f"ssl.client.authentication: none, requested or required, not {auth!r}"
        raise ValueError(msg)
    context.verify_mode = modes[auth]
    return context


def client_context(worker: Mapping[str, Any]) -> ssl.SSLContext:
    """The context a worker forwards requests to an ``https://`` leader with: the trust
    store of its https listener (PEM), else the system's certificate authorities."""
    trust = worker.get(HTTPS_PREFIX + "ssl.truststore.location") or worker.get(
        "ssl.truststore.location"
    )
    kind = str(
        worker.get(HTTPS_PREFIX + "ssl.truststore.type")
        or worker.get("ssl.truststore.type")
        or "PEM"
    ).upper()
    if trust and kind == "PKCS12":
        password = worker.get(HTTPS_PREFIX + "ssl.truststore.password") or worker.get(
            "ssl.truststore.password"
        )
        pem = pkcs12_trusted_pem(str(trust), None if password is None else str(password))
        return ssl.create_default_context(cadata=pem)
    return ssl.create_default_context(cafile=str(trust) if trust else None)
