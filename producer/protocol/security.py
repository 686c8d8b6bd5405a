"""Client security with librdkafka's option names: TLS and SASL (PLAIN, SCRAM-SHA-256/512,
OAUTHBEARER: its token options in ``producer.protocol.oauth``; GSSAPI: its Kerberos options
in ``producer.protocol.kerberos``).

``security.protocol`` = plaintext, ssl, sasl_plaintext or sasl_ssl;
``sasl.mechanism`` (or ``sasl.mechanisms``), ``sasl.username``,
``sasl.password``; ``ssl.ca.location`` (PEM CA file), ``ssl.certificate.location``
and ``ssl.key.location`` (the client certificate and key, PEM),
``ssl.key.password`` and ``ssl.endpoint.identification.algorithm`` (``https``,
the default, checks the broker's host name; ``none`` does not).  The same keys
work with every sharetxn client and with ``--command-config`` files, as do the Java
clients' ``ssl.truststore.*`` and ``ssl.keystore.*`` (``type`` PEM or PKCS12, with
``location`` and ``password``; JKS needs Java and is refused).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from producer.protocol.kerberos import KERBEROS_DEFAULTS, GssapiClient, KerberosSettings
from producer.protocol.oauth import OAuthBearerClient, TokenSource, jaas_options, token_source
from txn.api_keys import ApiKey
from txn.errors import ErrorCode, InvalidConfigError, SaslAuthenticationFailedError, error_for_code
from txn.tls_stores import load_pkcs12_key_store, pkcs12_trusted_pem

SECURITY_DEFAULTS: Final[dict[str, Any]] = {
    "security.protocol": "plaintext",
    "sasl.mechanism": None,
    "sasl.mechanisms": None,
    "sasl.username": None,
    "sasl.password": None,
    "ssl.ca.location": None,
    "ssl.certificate.location": None,
    "ssl.key.location": None,
    "ssl.key.password": None,
    "ssl.endpoint.identification.algorithm": "https",
    # The Java clients' names, as Kafka tools' --command-config files hold them: the
    # JAAS line's username/password, and PEM trust and key stores.
    "sasl.jaas.config": None,
    "ssl.truststore.type": None,
    "ssl.truststore.location": None,
    "ssl.truststore.password": None,
    "ssl.keystore.type": None,
    "ssl.keystore.location": None,
    "ssl.keystore.password": None,
    # OAUTHBEARER (producer.protocol.oauth): librdkafka's and the Java clients' names.
    "sasl.oauthbearer.config": None,
    "enable.sasl.oauthbearer.unsecure.jwt": None,
    "sasl.oauthbearer.method": None,
    "sasl.oauthbearer.token.endpoint.url": None,
    "sasl.oauthbearer.client.id": None,
    "sasl.oauthbearer.client.secret": None,
    "sasl.oauthbearer.scope": None,
    "sasl.login.callback.handler.class": None,
    "oauth_cb": None,
    **KERBEROS_DEFAULTS,
}
SECURITY_KEYS: Final = frozenset(SECURITY_DEFAULTS)

_PROTOCOLS: Final = ("plaintext", "ssl", "sasl_plaintext", "sasl_ssl")
_MECHANISMS: Final = {
    "PLAIN": None,
    "SCRAM-SHA-256": "sha256",
    "SCRAM-SHA-512": "sha512",
    "OAUTHBEARER": None,
    "GSSAPI": None,
}

#: ``exchange(api_key, version, body) -> response`` on an open connection.
Exchange = Callable[[ApiKey, int, Mapping[str, Any]], Any]


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    protocol: str = "plaintext"
    mechanism: str = "GSSAPI"
    username: str | None = None
    password: str | None = None
    ca_location: str | None = None
    certificate_location: str | None = None
    key_location: str | None = None
    key_password: str | None = None
    check_hostname: bool = True
    #: PKCS12 stores (the Java clients' ``ssl.truststore``/``ssl.keystore`` of that type):
    #: (location, password)
    pkcs12_truststore: tuple[str, str | None] | None = None
    pkcs12_keystore: tuple[str, str] | None = None
    #: SCRAM with a delegation token (the JAAS option ``tokenauth="true"``, KIP-48): the
    #: username is the token id, the password its HMAC in base64.
    token_auth: bool = False
    #: OAUTHBEARER's token (``producer.protocol.oauth``).
    oauth: TokenSource | None = None
    #: GSSAPI's Kerberos settings (``producer.protocol.kerberos``).
    kerberos: KerberosSettings | None = None

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("ssl", "sasl_ssl")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("sasl_plaintext", "sasl_ssl")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ClientSecurity:
        """The security settings among a client config (other keys are ignored here)."""
        values = {**SECURITY_DEFAULTS, **{k: v for k, v in config.items() if k in SECURITY_KEYS}}
        protocol = str(values["security.protocol"]).strip().lower()
        if protocol not in _PROTOCOLS:
            msg = f"security.protocol must be one of {', '.join(_PROTOCOLS)}, not {protocol!r}"
            raise InvalidConfigError(msg)
        mechanism = str(values["sasl.mechanism"] or values["sasl.mechanisms"] or "GSSAPI")
        mechanism = mechanism.strip().upper()
        username, password = _opt(values["sasl.username"]), _opt(values["sasl.password"])
        token_auth = False
        if values["sasl.jaas.config"] and mechanism not in ("OAUTHBEARER", "GSSAPI"):
            jaas = str(values["sasl.jaas.config"])
            token_auth = _jaas_token_auth(jaas)
            if username is None:
                username, password = _jaas_credentials(jaas)
        types = {
            key: str(values[f"{key}.type"] or "PEM").strip().upper()
            for key in ("ssl.truststore", "ssl.keystore")
        }
        for key, kind in types.items():
            if kind not in ("PEM", "PKCS12"):
                msg = (
                    f"{key}.type={kind} is not supported by this client (PEM or PKCS12; "
                    "convert a JKS store with keytool -importkeystore -deststoretype PKCS12)"
                )
                raise InvalidConfigError(msg)
        java_pem = {
            key: _opt(values[f"{key}.location"]) for key, kind in types.items() if kind == "PEM"
        }
        pkcs12: dict[str, tuple[str, str | None]] = {}
        for key, kind in types.items():
            location = _opt(values[f"{key}.location"])
            if kind == "PKCS12" and location is not None:
                pkcs12[key] = (location, _opt(values[f"{key}.password"]))
        keystore = pkcs12.get("ssl.keystore")
        if keystore is not None and keystore[1] is None:
            # Kafka's DefaultSslEngineFactory message
            msg = "SSL key store is specified, but key store password is not specified."
            raise InvalidConfigError(msg)
        security = cls(
            protocol=protocol,
            mechanism=mechanism,
            username=username,
            password=password,
            ca_location=_opt(values["ssl.ca.location"]) or java_pem.get("ssl.truststore"),
            certificate_location=_opt(values["ssl.certificate.location"])
            or java_pem.get("ssl.keystore"),
            key_location=_opt(values["ssl.key.location"]) or java_pem.get("ssl.keystore"),
            key_password=_opt(values["ssl.key.password"]),
            check_hostname=str(values["ssl.endpoint.identification.algorithm"]).lower() == "https",
            pkcs12_truststore=pkcs12.get("ssl.truststore"),
            pkcs12_keystore=(keystore[0], keystore[1] or "") if keystore is not None else None,
            token_auth=token_auth,
            oauth=(
                token_source(values, jaas_options(_opt(values["sasl.jaas.config"])))
                if mechanism == "OAUTHBEARER" and protocol.startswith("sasl")
                else None
            ),
            kerberos=(
                KerberosSettings.from_values(values, _opt(values["sasl.jaas.config"]))
                if mechanism == "GSSAPI" and protocol.startswith("sasl")
                else None
            ),
        )
        if security.uses_sasl:
            if mechanism not in _MECHANISMS:
                msg = (
                    f"sasl.mechanism {mechanism} is not supported by this client "
                    f"(use {', '.join(_MECHANISMS)})"
                )
                raise InvalidConfigError(msg)
            if mechanism not in ("OAUTHBEARER", "GSSAPI") and (
                security.username is None or security.password is None
            ):
                msg = f"sasl.mechanism {mechanism} needs sasl.username and sasl.password"
                raise InvalidConfigError(msg)
        if bool(security.certificate_location) != bool(security.key_location):
            msg = "ssl.certificate.location and ssl.key.location go together"
            raise InvalidConfigError(msg)
        return security

    @property
    def principal(self) -> str:
        """Who the broker will see (for audit logs): the SASL user, else the certificate."""
        if self.uses_sasl and self.mechanism == "OAUTHBEARER":
            return "User:<the subject of the OAUTHBEARER token>"
        if self.uses_sasl and self.mechanism == "GSSAPI":
            who = self.kerberos.principal if self.kerberos is not None else None
            return f"User:<the short name of {who or 'the ticket cache principal'}>"
        if self.uses_sasl:
            return f"User:{self.username}"
        if self.uses_tls and self.certificate_location:
            return f"the subject of {self.certificate_location}"
        return "User:ANONYMOUS"

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.uses_tls:
            return None
        if self.pkcs12_truststore is not None:
            context = ssl.create_default_context(cadata=pkcs12_trusted_pem(*self.pkcs12_truststore))
        else:
            context = ssl.create_default_context(cafile=self.ca_location)
        context.check_hostname = self.check_hostname
        if self.pkcs12_keystore is not None:
            load_pkcs12_key_store(context, *self.pkcs12_keystore)
        elif self.certificate_location and self.key_location:
            context.load_cert_chain(
                self.certificate_location, self.key_location, password=self.key_password
            )
        return context

    def authenticate(self, exchange: Exchange, address: str) -> int:
        """SaslHandshake v1 then SaslAuthenticate rounds (KIP-152); again to re-authenticate.

        Returns the session lifetime the broker gave (KIP-368, ms; 0: no limit).
        """
        if not self.uses_sasl:
            return 0
        hs = exchange(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": self.mechanism})
        if int(hs.error_code) != ErrorCode.NONE:
            msg = (
                f"{address} does not accept SASL mechanism {self.mechanism} "
                f"(enabled: {', '.join(hs.mechanisms) or 'none'})"
            )
            raise error_for_code(int(hs.error_code))(msg)
        client: _SaslClient | OAuthBearerClient | GssapiClient
        if self.mechanism == "GSSAPI":
            assert self.kerberos is not None
            client = GssapiClient(self.kerberos, _host_of(address))
        elif self.mechanism == "OAUTHBEARER":
            assert self.oauth is not None
            client = OAuthBearerClient(self.oauth)
        else:
            assert self.username is not None and self.password is not None
            client = (
                _PlainClient(self.username, self.password)
                if self.mechanism == "PLAIN"
                else _ScramClient(
                    self.mechanism, self.username, self.password, token_auth=self.token_auth
                )
            )
        token: bytes | None = client.first()
        lifetime_ms = 0
        while token is not None:
            resp = exchange(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
            if int(resp.error_code) != ErrorCode.NONE:
                reason = resp.error_message or "authentication failed"
                who = "its token" if self.username is None else repr(self.username)
                if self.kerberos is not None:
                    who = repr(self.kerberos.principal or "the ticket cache principal")
                msg = f"SASL {self.mechanism} authentication of {who} failed: {reason}"
                raise error_for_code(int(resp.error_code))(msg, broker=address)
            lifetime = getattr(resp, "session_lifetime", None)
            lifetime_ms = int(lifetime.total_seconds() * 1000) if lifetime is not None else 0
            token = client.next(bytes(resp.auth_bytes))
        return lifetime_ms


def _jaas_credentials(jaas: str) -> tuple[str | None, str | None]:
    """username and password of a Java client's ``sasl.jaas.config`` line."""
    found = dict(re.findall(r'(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"', jaas))
    username, password = found.get("username"), found.get("password")

    def unescape(value: str | None) -> str | None:
        return None if value is None else re.sub(r"\\(.)", r"\1", value)

    return unescape(username), unescape(password)


def _jaas_token_auth(jaas: str) -> bool:
    """Whether a ScramLoginModule line sets ``tokenauth="true"`` (a delegation token)."""
    found = re.search(r'tokenauth\s*=\s*"?(\w+)"?', jaas)
    return found is not None and found.group(1).lower() == "true"


def _host_of(address: str) -> str:
    """The host of ``host:port`` (``[v6]:port``): the broker's Kerberos service host."""
    host = address.rsplit(":", 1)[0] if ":" in address else address
    return host.strip("[]")


def _opt(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


class _SaslClient:
    def first(self) -> bytes:
        raise NotImplementedError

    def next(self, challenge: bytes) -> bytes | None:
        raise NotImplementedError


class _PlainClient(_SaslClient):
    def __init__(self, username: str, password: str) -> None:
        self._token = b"\x00" + username.encode() + b"\x00" + password.encode()

    def first(self) -> bytes:
        return self._token

    def next(self, challenge: bytes) -> bytes | None:
        return None


class _ScramClient(_SaslClient):
    """RFC 5802 client: client-first, client-final, then the server signature is checked."""

    def __init__(
        self, mechanism: str, username: str, password: str, *, token_auth: bool = False
    ) -> None:
        self._hash = _MECHANISMS[mechanism] or "sha256"
        self._password = password
        name = username.replace("=", "=3D").replace(",", "=2C")
        self._nonce = base64.b64encode(os.urandom(24)).decode()
        # The tokenauth extension after the nonce (Kafka's ScramExtensions).
        extension = ",tokenauth=true" if token_auth else ""
        self._first_bare = f"n={name},r={self._nonce}{extension}"
        self._step = 0
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._first_bare}".encode()

    def next(self, challenge: bytes) -> bytes | None:
        h = self._hash
        if self._step == 0:
            self._step = 1
            server_first = challenge.decode()
            attrs = dict(part.split("=", 1) for part in server_first.split(","))
            nonce, salt, iterations = attrs["r"], base64.b64decode(attrs["s"]), int(attrs["i"])
            if not nonce.startswith(self._nonce):
                msg = "SCRAM: the server's nonce does not extend ours"
                raise SaslAuthenticationFailedError(msg)
            salted = hashlib.pbkdf2_hmac(h, self._password.encode(), salt, iterations)
            client_key = hmac.new(salted, b"Client Key", h).digest()
            stored_key = hashlib.new(h, client_key).digest()
            without_proof = f"c={base64.b64encode(b'n,,').decode()},r={nonce}"
            auth_message = f"{self._first_bare},{server_first},{without_proof}".encode()
            signature = hmac.new(stored_key, auth_message, h).digest()
            proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
            server_key = hmac.new(salted, b"Server Key", h).digest()
            self._server_signature = hmac.new(server_key, auth_message, h).digest()
            return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()
        final = challenge.decode()
        if not final.startswith("v=") or not hmac.compare_digest(
            base64.b64decode(final[2:]), self._server_signature
        ):
            msg = "SCRAM: the broker's signature is wrong (not the server holding our credential)"
            raise SaslAuthenticationFailedError(msg)
        return None


#: No TLS, no SASL (``security.protocol=plaintext``).
PLAINTEXT: Final = ClientSecurity()
