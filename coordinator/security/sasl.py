"""SASL servers (sans-IO) and the PLAIN users of Kafka's JAAS syntax.

``PlainServer`` checks ``authzid NUL username NUL password`` against the
``user_NAME="password"`` options of
``listener.name.<listener>.plain.sasl.jaas.config``; SCRAM lives in ``scram``,
OAUTHBEARER in ``oauthbearer``.
Both answer ``evaluate(token) -> token`` and raise
``SaslAuthenticationFailedError`` with a message that never holds a password.
GSSAPI (Kerberos) lives in ``kerberos``.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable, Mapping
from typing import Protocol

from coordinator.security.kerberos import GSSAPI
from coordinator.security.oauthbearer import OAUTHBEARER, OAuthBearerServer, TokenValidator
from coordinator.security.scram import (
    CredentialLookup,
    SaslAuthenticationFailedError,
    ScramMechanism,
    ScramServer,
    TokenLookup,
)

PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
SUPPORTED_MECHANISMS = (GSSAPI, PLAIN, SCRAM_SHA_256, SCRAM_SHA_512, OAUTHBEARER)


class SaslServer(Protocol):
    complete: bool

    def evaluate(self, token: bytes) -> bytes: ...

    @property
    def principal(self) -> str: ...


_OPTION = re.compile(r'([A-Za-z0-9_.\-]+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def parse_jaas(text: str) -> tuple[str, dict[str, str]]:
    """``LoginModule required key="value" ...;`` as (login module, options)."""
    body = text.strip().rstrip(";").strip()
    head, _sep, rest = body.partition(" ")
    options = {m.group(1): m.group(2).replace('\\"', '"') for m in _OPTION.finditer(rest)}
    return head, options


def plain_users(jaas: str | None) -> dict[str, str]:
    """The ``user_NAME="password"`` entries of a PlainLoginModule JAAS config."""
    if not jaas:
        return {}
    _module, options = parse_jaas(jaas)
    return {k[len("user_") :]: v for k, v in options.items() if k.startswith("user_")}


class PlainServer:
    """SASL/PLAIN (RFC 4616) against a fixed user table."""

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.username: str | None = None
        self.complete = False

    def evaluate(self, token: bytes) -> bytes:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            msg = "Invalid SASL/PLAIN response: expected 3 tokens"
            raise SaslAuthenticationFailedError(msg)
        try:
            authzid, username, password = (p.decode() for p in parts)
        except UnicodeDecodeError:
            msg = "Invalid SASL/PLAIN response: not UTF-8"
            raise SaslAuthenticationFailedError(msg) from None
        if not username:
            msg = "Authentication failed: username not specified"
            raise SaslAuthenticationFailedError(msg)
        if not password:
            msg = "Authentication failed: password not specified"
            raise SaslAuthenticationFailedError(msg)
        self.username = username
        expected = self._users.get(username)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            msg = "Authentication failed: Invalid username or password"
            raise SaslAuthenticationFailedError(msg)
        if authzid and authzid != username:
            msg = "Authentication failed: Client requested an authorization id that is different"
            raise SaslAuthenticationFailedError(msg)
        self.complete = True
        return b""

    @property
    def principal(self) -> str:
        assert self.complete and self.username is not None
        return f"User:{self.username}"


def new_server(
    mechanism: str,
    plain_users_of: Callable[[], Mapping[str, str]],
    scram_lookup: CredentialLookup,
    token_lookup: TokenLookup | None = None,
    oauth: tuple[Callable[[], TokenValidator], Callable[[], int]] | None = None,
    gssapi: Callable[[], SaslServer] | None = None,
) -> SaslServer:
    """A server for ``mechanism``; OAUTHBEARER needs ``oauth``: (its validator, the clock),
    GSSAPI ``gssapi`` (a new ``kerberos.GssapiServer`` for the listener)."""
    if mechanism == GSSAPI:
        assert gssapi is not None
        return gssapi()
    if mechanism == PLAIN:
        return PlainServer(plain_users_of())
    if mechanism == OAUTHBEARER:
        assert oauth is not None
        validator_of, now_ms = oauth
        return OAuthBearerServer(validator_of(), now_ms)
    return ScramServer(ScramMechanism.from_name(mechanism), scram_lookup, token_lookup=token_lookup)
