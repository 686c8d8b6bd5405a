"""SASL/GSSAPI (Kerberos, RFC 4752) on the client side.

Options, librdkafka's names: ``sasl.kerberos.service.name`` (default ``kafka``),
``sasl.kerberos.keytab`` and ``sasl.kerberos.principal`` (default ``kafkaclient``, as
librdkafka; used with a keytab); without a keytab the default credential cache (``kinit``) is
used.  The Java clients' ``sasl.jaas.config`` ``Krb5LoginModule`` line (``keyTab``,
``principal``, ``serviceName``; ``useKeyTab=true``) gives the same, for ``--command-config``.
The broker's service principal is ``<service name>/<the broker's host name>``.
The ``gssapi`` package (the ``kerberos`` extra) does the Kerberos work.
"""

from __future__ import annotations

import importlib
import os
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from txn.errors import InvalidConfigError, SaslAuthenticationFailedError

KERBEROS_DEFAULTS: Final[dict[str, Any]] = {
    "sasl.kerberos.service.name": None,
    "sasl.kerberos.keytab": None,
    "sasl.kerberos.principal": None,
}
NO_SECURITY_LAYER: Final = 0x01
MISSING_PACKAGE: Final = (
    "sasl.mechanism GSSAPI needs the Python package gssapi: pip install 'sharetxn[kerberos]' "
    "(it builds against MIT Kerberos: apt-get install libkrb5-dev)"
)


def _load_gssapi() -> Any:
    try:
        return importlib.import_module("gssapi")
    except ImportError as exc:
        msg = f"{MISSING_PACKAGE} ({exc})"
        raise InvalidConfigError(msg) from None


@dataclass(frozen=True, slots=True)
class KerberosSettings:
    service_name: str = "kafka"
    keytab: str | None = None
    principal: str | None = None

    @classmethod
    def from_values(cls, values: Mapping[str, Any], jaas: str | None) -> KerberosSettings:
        options = dict(re.findall(r'([A-Za-z]+)\s*=\s*"?([^";\s]*)"?', jaas or ""))
        service = values.get("sasl.kerberos.service.name") or options.get("serviceName")
        keytab = values.get("sasl.kerberos.keytab") or (
            options.get("keyTab") if options.get("useKeyTab", "").lower() == "true" else None
        )
        principal = values.get("sasl.kerberos.principal") or options.get("principal")
        if keytab and not principal:
            principal = "kafkaclient"  # librdkafka's default
        if keytab and not os.path.isfile(str(keytab)):
            msg = f"sasl.kerberos.keytab {keytab} does not exist"
            raise InvalidConfigError(msg)
        _load_gssapi()
        return cls(
            service_name=str(service or "kafka"),
            keytab=str(keytab) if keytab else None,
            principal=str(principal) if principal else None,
        )


class GssapiClient:
    """One SASL/GSSAPI exchange: ``first()``, then ``next(challenge)`` until None."""

    def __init__(self, settings: KerberosSettings, host: str) -> None:
        self._gssapi = gssapi = _load_gssapi()
        self._settings = settings
        try:
            creds = None
            if settings.keytab is not None or settings.principal is not None:
                name = (
                    gssapi.Name(settings.principal, gssapi.NameType.kerberos_principal)
                    if settings.principal
                    else None
                )
                store = None
                if settings.keytab is not None:
                    # A private in-memory cache: the keytab's key gets its own tickets.  Named
                    # by a fresh uuid: an id() is reused once its object is gone, and a cache
                    # left holding another principal's tickets fails the next login.
                    store = {
                        "client_keytab": settings.keytab,
                        "ccache": f"MEMORY:sharetxn-{os.getpid()}-{uuid.uuid4().hex}",
                    }
                creds = gssapi.Credentials(name=name, usage="initiate", store=store)
            target = gssapi.Name(
                f"{settings.service_name}@{host}", gssapi.NameType.hostbased_service
            )
            flags = [gssapi.RequirementFlag.mutual_authentication]
            self._ctx = gssapi.SecurityContext(
                name=target, creds=creds, usage="initiate", flags=flags
            )
        except gssapi.exceptions.GSSError as exc:
            raise SaslAuthenticationFailedError(_message(exc)) from None
        self._done = False

    def _step(self, token: bytes | None) -> bytes:
        try:
            out = self._ctx.step(token)
        except self._gssapi.exceptions.GSSError as exc:
            raise SaslAuthenticationFailedError(_message(exc)) from None
        return b"" if out is None else bytes(out)

    def first(self) -> bytes:
        return self._step(None)

    def next(self, challenge: bytes) -> bytes | None:
        if self._done:
            return None
        if not self._ctx.complete:
            return self._step(challenge)
        if not challenge:
            return b""
        try:
            layers = bytes(self._ctx.unwrap(challenge).message)
        except self._gssapi.exceptions.GSSError as exc:
            raise SaslAuthenticationFailedError(_message(exc)) from None
        if len(layers) != 4 or not layers[0] & NO_SECURITY_LAYER:
            msg = "GSSAPI: the broker does not offer the no-security-layer protection"
            raise SaslAuthenticationFailedError(msg)
        self._done = True
        return bytes(self._ctx.wrap(bytes([NO_SECURITY_LAYER, 0, 0, 0]), False).message)


def _message(exc: BaseException) -> str:
    return "GSSAPI: " + " ".join(str(exc).split())
