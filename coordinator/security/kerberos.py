"""SASL/GSSAPI (RFC 4752, Kerberos V5) on the broker, sans-IO, as Kafka's (Java's) server.

``GssapiServer`` runs the exchange over an ``Acceptor`` (a GSS-API security context on the
accepting side): context tokens until the context is established (the client's AP-REQ, our
AP-REP), then the security-layer negotiation: we send, wrapped, [0x01 (no security layer:
Kafka's auth-only QOP), maximum message size], the client answers, wrapped, [the layer it
chose, its size, an optional authorization id].  As Kafka's SaslServerCallbackHandler the
authorization id does not matter: the session's principal is the authenticated Kerberos
name, mapped by ``sasl.kerberos.principal.to.local.rules`` (``kerberos_names``); when no rule
gives a short name the exchange still succeeds and, as Kafka, the connection is closed
unanswered at its next request (``principal_error``).  Kafka sets
no credential lifetime for GSSAPI: KIP-368 sessions end at ``connections.max.reauth.ms``.

``GssapiAcceptor`` is the real acceptor (the ``gssapi`` package, MIT Kerberos), given the
listener's JAAS ``Krb5LoginModule`` keytab and principal.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
from dataclasses import dataclass
from typing import Any, Final, Protocol

from coordinator.security.kerberos_names import (
    KerberosName,
    KerberosNameError,
    KerberosShortNamer,
)
from coordinator.security.scram import SaslAuthenticationFailedError
from txn.errors import InvalidConfigError

log = logging.getLogger("sharetxn.security")

GSSAPI: Final = "GSSAPI"
KRB5_LOGIN_MODULE: Final = "com.sun.security.auth.module.Krb5LoginModule"
#: RFC 4752 security layers: we offer only "no security layer" (Kafka's QOP ``auth``).
NO_SECURITY_LAYER: Final = 0x01
#: Java's GssKrb5Server default maximum receive buffer.
MAX_BUFFER: Final = 65536
FAILED: Final = "Authentication failed during authentication due to invalid credentials"
MISSING_PACKAGE: Final = (
    "SASL/GSSAPI needs the Python package gssapi: pip install 'sharetxn[kerberos]' "
    "(it builds against MIT Kerberos: apt-get install libkrb5-dev)"
)


def load_gssapi() -> Any:
    """The ``gssapi`` module, or an error with one clear line when it cannot be imported."""
    try:
        return importlib.import_module("gssapi")
    except ImportError as exc:
        msg = f"{MISSING_PACKAGE} ({exc})"
        raise ImportError(msg) from None


class Acceptor(Protocol):
    """The accepting side of one GSS-API security context."""

    @property
    def established(self) -> bool: ...

    def step(self, token: bytes) -> bytes | None: ...

    def initiator(self) -> str: ...

    def wrap(self, data: bytes) -> bytes: ...

    def unwrap(self, data: bytes) -> bytes: ...


@dataclass(frozen=True, slots=True)
class ServerIdentity:
    """The broker's Kerberos identity on a listener: its JAAS keytab and principal."""

    keytab: str
    principal: str
    service_name: str


class GssapiAcceptor:
    """An ``Acceptor`` on the ``gssapi`` package: the keytab's key for ``principal``."""

    def __init__(self, identity: ServerIdentity) -> None:
        self._identity = identity
        self._gssapi = load_gssapi()
        self._ctx: Any = None

    @property
    def established(self) -> bool:
        return self._ctx is not None and bool(self._ctx.complete)

    def step(self, token: bytes) -> bytes | None:
        gssapi = self._gssapi
        try:
            if self._ctx is None:
                identity = self._identity
                name = gssapi.Name(identity.principal, gssapi.NameType.kerberos_principal)
                creds = gssapi.Credentials(
                    name=name, usage="accept", store={"keytab": identity.keytab}
                )
                self._ctx = gssapi.SecurityContext(creds=creds, usage="accept")
            out = self._ctx.step(token)
        except self._gssapi.exceptions.GSSError as exc:
            raise SaslAuthenticationFailedError(_gss_message(exc)) from None
        return None if out is None else bytes(out)

    def initiator(self) -> str:
        return str(self._ctx.initiator_name)

    def wrap(self, data: bytes) -> bytes:
        return bytes(self._ctx.wrap(data, False).message)

    def unwrap(self, data: bytes) -> bytes:
        try:
            return bytes(self._ctx.unwrap(data).message)
        except self._gssapi.exceptions.GSSError as exc:
            raise SaslAuthenticationFailedError(_gss_message(exc)) from None


def _gss_message(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"GSS-API: {text}"


class GssapiServer:
    """One SASL/GSSAPI exchange (``evaluate(token) -> token``, ``complete``, ``principal``)."""

    def __init__(self, acceptor: Acceptor, short_namer: KerberosShortNamer) -> None:
        self._acceptor = acceptor
        self._namer = short_namer
        self._stage = 0
        self.complete = False
        self.authentication_id: str | None = None
        self.authorization_id: str | None = None
        self._principal: str | None = None
        #: Set when the rules gave no short name: the connection closes at its next request.
        self.principal_error: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        try:
            return self._evaluate(token)
        except SaslAuthenticationFailedError as exc:
            log.info("GSSAPI authentication failed: %s", exc)
            msg = f"{FAILED} with SASL mechanism {GSSAPI}"
            raise SaslAuthenticationFailedError(msg) from None

    def _evaluate(self, token: bytes) -> bytes:
        if self.complete:
            msg = "GSSAPI: the exchange is already complete"
            raise SaslAuthenticationFailedError(msg)
        if self._stage == 0:
            out = self._acceptor.step(token)
            if not self._acceptor.established:
                return out or b""
            self._stage = 1
            self.authentication_id = self._acceptor.initiator()
            if out:
                return out  # the AP-REP (mutual authentication); the client answers empty
            return self._challenge(b"")
        if self._stage == 1:
            return self._challenge(token)
        return self._final(token)

    def _challenge(self, token: bytes) -> bytes:
        if token:
            msg = "GSSAPI: expected an empty response after the context was established"
            raise SaslAuthenticationFailedError(msg)
        self._stage = 2
        return self._acceptor.wrap(bytes([NO_SECURITY_LAYER]) + MAX_BUFFER.to_bytes(3, "big"))

    def _final(self, token: bytes) -> bytes:
        data = self._acceptor.unwrap(token)
        if len(data) < 4:
            msg = f"GSSAPI: the final handshake message has {len(data)} bytes, not at least 4"
            raise SaslAuthenticationFailedError(msg)
        if data[0] & NO_SECURITY_LAYER == 0:
            msg = f"GSSAPI: the client selected unsupported protection: {data[0]}"
            raise SaslAuthenticationFailedError(msg)
        assert self.authentication_id is not None
        try:
            self.authorization_id = data[4:].decode() if len(data) > 4 else None
        except UnicodeDecodeError:
            msg = "GSSAPI: the authorization id is not UTF-8"
            raise SaslAuthenticationFailedError(msg) from None
        log.info(
            "Successfully authenticated client: authenticationID=%s; authorizationID=%s.",
            self.authentication_id,
            self.authorization_id or self.authentication_id,
        )
        self.complete = True
        try:
            name = KerberosName.parse(self.authentication_id)
            self._principal = f"User:{self._namer.short_name(name)}"
        except KerberosNameError as exc:
            # As Kafka: the exchange succeeds; the principal is built at the connection's next
            # request, which fails and closes the connection unanswered.
            self.principal_error = (
                f"Failed to set name for '{self.authentication_id}' based on Kerberos "
                f"authentication rules: {exc}"
            )
        return b""

    @property
    def principal(self) -> str:
        """``User:<short name>`` (with ``principal_error``: the unmapped name, never used)."""
        assert self.complete and self.authentication_id is not None
        return self._principal or f"User:{self.authentication_id}"


_JAAS_OPTION = re.compile(r'([A-Za-z0-9_.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


def jaas_options(jaas: str | None) -> dict[str, str]:
    """The options of a JAAS line, quoted (``keyTab="..."``) or not (``useKeyTab=true``)."""
    options: dict[str, str] = {}
    for found in _JAAS_OPTION.finditer(jaas or ""):
        quoted = found.group(2)
        options[found.group(1)] = (
            re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else found.group(3)
        )
    return options


def server_identity(
    jaas: str | None, options: dict[str, str], service_name: str | None, context: str
) -> ServerIdentity:
    """The listener's Kerberos identity, or Kafka's start-up error for a missing piece.

    ``jaas`` is the JAAS line, ``options`` its options, ``service_name`` the
    ``sasl.kerberos.service.name`` config, ``context`` the JAAS context Kafka names.
    """
    if not jaas:
        msg = (
            f"Could not find a 'KafkaServer' or '{context}' entry in the JAAS configuration. "
            "System property 'java.security.auth.login.config' is not set"
        )
        raise InvalidConfigError(msg)
    module = jaas.strip().split(None, 1)[0]
    if module != KRB5_LOGIN_MODULE:
        msg = f"GSSAPI needs a {KRB5_LOGIN_MODULE} JAAS line, not {module}"
        raise InvalidConfigError(msg)
    jaas_service = options.get("serviceName")
    if jaas_service and service_name and jaas_service != service_name:
        # Kafka's KerberosLogin.getServiceName
        msg = (
            f"Conflicting serviceName values found in JAAS and Kafka configs value in JAAS "
            f"file {jaas_service}, value in Kafka config {service_name}"
        )
        raise InvalidConfigError(msg)
    service = jaas_service or service_name
    if not service:
        msg = "No serviceName defined in either JAAS or Kafka configs"
        raise InvalidConfigError(msg)
    keytab, principal = options.get("keyTab"), options.get("principal")
    if options.get("useKeyTab", "false").lower() != "true" or not keytab or not principal:
        msg = (
            f'GSSAPI: the {KRB5_LOGIN_MODULE} line needs useKeyTab=true, keyTab="..." and '
            'principal="..." (a ticket cache cannot serve a broker)'
        )
        raise InvalidConfigError(msg)
    if not os.path.isfile(keytab):
        # Krb5LoginModule's message
        msg = f"Unable to obtain password from user (keyTab {keytab} does not exist)"
        raise InvalidConfigError(msg)
    try:
        load_gssapi()
    except ImportError as exc:
        raise InvalidConfigError(str(exc)) from None
    return ServerIdentity(keytab=keytab, principal=principal, service_name=service)
