"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677): credentials and the server side.

A stored credential is Kafka's: salt, StoredKey = H(HMAC(SaltedPassword,
"Client Key")), ServerKey = HMAC(SaltedPassword, "Server Key") and the
iteration count; the password itself is never kept.  ``ScramServer`` is a
sans-IO exchange: ``evaluate(client message) -> server message`` twice, then
``principal`` names the user.  A client-first message with the ``tokenauth=true`` extension
authenticates with a delegation token (KIP-48): the user name is the token id, the password
the token's HMAC in base64, and the principal is the token's owner (``token_authenticated``).
The server nonce comes from an injectable function
(``os.urandom`` by default) so the exchange can be replayed in tests.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

MIN_ITERATIONS = 4096  # RFC 7677 and Kafka's lower bound
MAX_ITERATIONS = 16384  # Kafka's upper bound (AlterUserScramCredentials)


class ScramMechanism(enum.IntEnum):
    """Mechanism ids of Describe/AlterUserScramCredentials (Kafka's ScramMechanism)."""

    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        return self.name.replace("_", "-")

    @property
    def hash_name(self) -> str:
        return "sha256" if self is ScramMechanism.SCRAM_SHA_256 else "sha512"

    @classmethod
    def from_name(cls, name: str) -> ScramMechanism:
        try:
            return cls[name.strip().upper().replace("-", "_")]
        except KeyError:
            msg = f"unknown SCRAM mechanism {name!r} (SCRAM-SHA-256 or SCRAM-SHA-512)"
            raise ValueError(msg) from None


class SaslAuthenticationFailedError(Exception):
    """The client failed to authenticate; the message is safe to send to it (no secret)."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hmac(hash_name: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hash_name).digest()


def salted_password(
    mechanism: ScramMechanism, password: str, salt: bytes, iterations: int
) -> bytes:
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), salt, iterations)


def credential_from_salted(
    mechanism: ScramMechanism, salt: bytes, salted: bytes, iterations: int
) -> ScramCredential:
    """The stored credential from a salted password (as AlterUserScramCredentials sends it)."""
    h = mechanism.hash_name
    client_key = _hmac(h, salted, b"Client Key")
    return ScramCredential(
        salt=salt,
        stored_key=hashlib.new(h, client_key).digest(),
        server_key=_hmac(h, salted, b"Server Key"),
        iterations=iterations,
    )


def make_credential(
    mechanism: ScramMechanism,
    password: str,
    iterations: int = MIN_ITERATIONS,
    salt: bytes | None = None,
) -> ScramCredential:
    salt = salt if salt is not None else os.urandom(32)
    return credential_from_salted(
        mechanism, salt, salted_password(mechanism, password, salt, iterations), iterations
    )


def _attributes(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            msg = f"invalid SCRAM message attribute {part[:20]!r}"
            raise SaslAuthenticationFailedError(msg)
        out.setdefault(key, value)
    return out


def _saslname(value: str) -> str:
    return value.replace("=2C", ",").replace("=3D", "=")


CredentialLookup = Callable[[ScramMechanism, str], ScramCredential | None]
#: (mechanism, token id) -> the token's credential and its owner's name, or None.
#: A delegation token's SCRAM credential, its owner's name and its expiry (ms since the epoch).
TokenLookup = Callable[[ScramMechanism, str], tuple[ScramCredential, str, int] | None]

_EXTENSION_NAME = re.compile(r"[A-Za-z]+")


def _client_first_bare(bare: str) -> tuple[dict[str, str], dict[str, str]]:
    """The n= and r= attributes of a client-first-message-bare and its extensions
    (``,name=value`` after the nonce, as Kafka's ClientFirstMessage)."""
    parts = bare.split(",")
    attrs = _attributes(",".join(parts[:2]))
    extensions: dict[str, str] = {}
    for part in parts[2:]:
        key, sep, value = part.partition("=")
        if not sep or not _EXTENSION_NAME.fullmatch(key):
            msg = f"invalid SCRAM message attribute {part[:20]!r}"
            raise SaslAuthenticationFailedError(msg)
        extensions.setdefault(key, value)
    return attrs, extensions


class ScramServer:
    """The server side of one SCRAM exchange."""

    def __init__(
        self,
        mechanism: ScramMechanism,
        lookup: CredentialLookup,
        server_nonce: Callable[[], str] | None = None,
        token_lookup: TokenLookup | None = None,
    ) -> None:
        self.mechanism = mechanism
        self._lookup = lookup
        self._token_lookup = token_lookup
        #: The authorization id: the user, or the owner of the token authenticated with.
        self.authorization_id: str | None = None
        self.token_authenticated = False
        #: A token's expiry: the session ends then (KIP-368; Kafka's CREDENTIAL_LIFETIME_MS).
        self.credential_expiry_ms: int | None = None
        self._server_nonce = server_nonce or (lambda: base64.b64encode(os.urandom(18)).decode())
        self._step = 0
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._gs2_header = ""
        self._nonce = ""
        self.username: str | None = None
        self.complete = False

    def _failed(self) -> SaslAuthenticationFailedError:
        return SaslAuthenticationFailedError(
            "Authentication failed during authentication due to invalid credentials with SASL "
            f"mechanism {self.mechanism.mechanism_name}"
        )

    def evaluate(self, token: bytes) -> bytes:
        try:
            message = token.decode()
        except UnicodeDecodeError:
            msg = "SCRAM message is not UTF-8"
            raise SaslAuthenticationFailedError(msg) from None
        if self._step == 0:
            self._step = 1
            return self._first(message)
        if self._step == 1:
            self._step = 2
            return self._final(message)
        msg = "unexpected SCRAM message after the exchange completed"
        raise SaslAuthenticationFailedError(msg)

    def _first(self, message: str) -> bytes:
        parts = message.split(",", 2)
        if len(parts) != 3 or parts[0] not in ("n", "y"):
            msg = "invalid SCRAM client-first message (channel binding is not supported)"
            raise SaslAuthenticationFailedError(msg)
        authzid = parts[1][2:] if parts[1].startswith("a=") else ""
        self._gs2_header = f"{parts[0]},{parts[1]},"
        self._client_first_bare = parts[2]
        attrs, extensions = _client_first_bare(parts[2])
        if "n" not in attrs or "r" not in attrs or not attrs["r"]:
            msg = "invalid SCRAM client-first message"
            raise SaslAuthenticationFailedError(msg)
        self.username = _saslname(attrs["n"])
        if authzid and _saslname(authzid) != self.username:
            msg = "Authentication failed: client requested an authorization id that is different"
            raise SaslAuthenticationFailedError(msg)
        if extensions.get("tokenauth", "").lower() == "true":
            found = (
                self._token_lookup(self.mechanism, self.username) if self._token_lookup else None
            )
            if found is None:  # Kafka: "Invalid tokenId", a SaslException (generic answer)
                raise self._failed()
            self._credential, self.authorization_id, self.credential_expiry_ms = found
            self.token_authenticated = True
        else:
            self._credential = self._lookup(self.mechanism, self.username)
            self.authorization_id = self.username
        if self._credential is None:
            raise self._failed()
        self._nonce = attrs["r"] + self._server_nonce()
        salt = base64.b64encode(self._credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={self._credential.iterations}"
        return self._server_first.encode()

    def _final(self, message: str) -> bytes:
        assert self._credential is not None
        without_proof, sep, proof_part = message.rpartition(",p=")
        if not sep:
            msg = "invalid SCRAM client-final message"
            raise SaslAuthenticationFailedError(msg)
        attrs = _attributes(without_proof)
        if attrs.get("r") != self._nonce:
            msg = "Invalid client nonce in the final client message."
            raise SaslAuthenticationFailedError(msg)
        if attrs.get("c") != base64.b64encode(self._gs2_header.encode()).decode():
            msg = "invalid SCRAM channel binding"
            raise SaslAuthenticationFailedError(msg)
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        h = self.mechanism.hash_name
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError:
            raise self._failed() from None
        signature = _hmac(h, self._credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise self._failed()
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(
            hashlib.new(h, client_key).digest(), self._credential.stored_key
        ):
            raise self._failed()
        self.complete = True
        server_signature = _hmac(h, self._credential.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)

    @property
    def principal(self) -> str:
        assert self.complete and self.authorization_id is not None
        return f"User:{self.authorization_id}"
