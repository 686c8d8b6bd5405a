"""PKCS12 key and trust stores for Python's ``ssl`` module (the broker's listeners and the
client library share them): Kafka's store type ``PKCS12`` as PEM the ``ssl`` module loads.

A key is handed to ``ssl`` encrypted with a one-time password in a private temporary file,
removed at once: never in clear on disk.  Errors are ``InvalidConfigError`` with Kafka's
messages (``Failed to load SSL keystore PATH of type PKCS12``).
"""

from __future__ import annotations

import os
import secrets
import ssl
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from txn.errors import InvalidConfigError

__all__ = ["load_pkcs12_key_store", "pem_files", "pkcs12_trusted_pem", "read_pkcs12"]


@contextmanager
def pem_files(chain: str, key: str) -> Iterator[tuple[str, str]]:
    """Inline PEM written to private temporary files for the ssl module, removed after."""
    with tempfile.TemporaryDirectory(prefix="sharetxn-tls-") as tmp:
        paths = []
        for name, text in (("chain.pem", chain), ("key.pem", key)):
            path = Path(tmp) / name
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(text)
            paths.append(str(path))
        yield paths[0], paths[1]


def read_pkcs12(path: str, password: str | None, kind: str) -> Any:
    """A PKCS12 file opened with ``password``; Kafka's message if it cannot be."""
    from cryptography.hazmat.primitives.serialization import pkcs12  # noqa: PLC0415

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        msg = f"Failed to load SSL {kind} {path} of type PKCS12: {exc.strerror or exc}"
        raise InvalidConfigError(msg) from None
    try:
        return pkcs12.load_pkcs12(data, None if password is None else password.encode())
    except ValueError:
        msg = f"Failed to load SSL {kind} {path} of type PKCS12 (wrong password or not PKCS12)"
        raise InvalidConfigError(msg) from None


def load_pkcs12_key_store(context: ssl.SSLContext, location: str, password: str) -> None:
    """The key and certificate chain of a PKCS12 key store into ``context``.

    As Java's PKCS12 key stores: one password for the file and its key (keytool refuses a
    different key password for PKCS12).
    """
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415

    store = read_pkcs12(location, password, "keystore")
    if store.key is None or store.cert is None:
        msg = f"Failed to load SSL keystore {location} of type PKCS12: it holds no private key"
        raise InvalidConfigError(msg)
    one_time = secrets.token_urlsafe(24)
    key_pem = store.key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(one_time.encode()),
    ).decode()
    chain = [store.cert.certificate, *(c.certificate for c in store.additional_certs)]
    chain_pem = "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in chain)
    with pem_files(chain_pem, key_pem) as (chain_path, key_path):
        context.load_cert_chain(chain_path, key_path, password=one_time)


def pkcs12_trusted_pem(location: str, password: str | None) -> str:
    """Every certificate of a PKCS12 trust store, as PEM."""
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415

    store = read_pkcs12(location, password, "truststore")
    certs = ([store.cert] if store.cert is not None else []) + list(store.additional_certs)
    if not certs:
        msg = f"Failed to load SSL truststore {location} of type PKCS12: it holds no certificate"
        raise InvalidConfigError(msg)
    return "".join(c.certificate.public_bytes(serialization.Encoding.PEM).decode() for c in certs)
