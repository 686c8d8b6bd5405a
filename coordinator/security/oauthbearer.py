"""SASL/OAUTHBEARER (RFC 7628, KIP-255) on the broker, sans-IO.

The client's one message is the GS2 header ``n,[a=authzid],`` then ``%x01``-separated
``key=value`` pairs (``auth=Bearer <token>`` and any SASL extensions) and ``%x01%x01``.
A token that does not validate is answered, as Kafka's ``OAuthBearerSaslServer``, with
the RFC 7628 JSON error (``{"status":"invalid_token"}``, or ``insufficient_scope`` with
the required scope) and no error code; the client then sends ``%x01`` and the exchange
fails with that JSON as the message.  A malformed message fails at once with Kafka's
generic message.  The principal is ``User:<claim>``.

Two validators, chosen like Kafka's ``sasl.server.callback.handler.class``:

- unset: Kafka's ``OAuthBearerUnsecuredValidatorCallbackHandler``, for tests only: an
  unsigned JWS (``header.payload.``) whose options come from the listener's
  ``oauthbearer.sasl.jaas.config`` (``unsecuredValidatorPrincipalClaimName`` (``sub``),
  ``unsecuredValidatorScopeClaimName`` (``scope``), ``unsecuredValidatorRequiredScope``,
  ``unsecuredValidatorAllowableClockSkewMs`` (0));
- ``org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler``
  (KIP-768): a signed JWT checked against ``sasl.oauthbearer.jwks.endpoint.url``
  (``coordinator.security.jwt``).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from coordinator.security.jwt import (
    InvalidJwtError,
    JwksSource,
    JwtValidator,
    ValidatedJwt,
    b64url_json,
)
from coordinator.security.scram import SaslAuthenticationFailedError
from txn.errors import InvalidConfigError

log = logging.getLogger("sharetxn.security")

OAUTHBEARER: Final = "OAUTHBEARER"
SECURED_HANDLER: Final = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
)
#: The older name of the same class (Kafka 3.x), still accepted by Kafka 4.
SECURED_HANDLER_OLD: Final = (
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler"
)
UNSECURED_HANDLER: Final = (
    "org.apache.kafka.common.security.oauthbearer.internals.unsecured."
    "OAuthBearerUnsecuredValidatorCallbackHandler"
)

_SASLNAME = r"(?:[\x01-\x7F](?<![=,])|=2C|=3D)+"
_KVPAIRS = r"(?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*"
_INITIAL_RESPONSE = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,\x01(?P<kvpairs>{_KVPAIRS})\x01", re.DOTALL
)
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_.a-zA-Z0-9]+)")
_EXTENSION_KEY = re.compile(r"[A-Za-z]+")
_EXTENSION_VALUE = re.compile(r"[\x21-\x7E \t\r\n]+")

GENERIC_FAILURE: Final = (
    "Authentication failed during authentication due to invalid credentials with SASL "
    "mechanism OAUTHBEARER"
)


class InvalidTokenError(Exception):
    """A token refused by a validator: ``status`` and ``scope`` go to the client."""

    def __init__(self, reason: str, *, status: str = "invalid_token", scope: str | None = None):
        super().__init__(reason)
        self.status = status
        self.scope = scope


class TokenValidator(Protocol):
    def validate(self, token: str, now_ms: int) -> ValidatedJwt: ...


@dataclass(frozen=True, slots=True)
class InitialResponse:
    authzid: str
    token: str
    extensions: dict[str, str]


def parse_initial_response(message: bytes) -> InitialResponse:
    """The client's first message (Kafka's ``OAuthBearerClientInitialResponse``)."""
    try:
        text = message.decode()
    except UnicodeDecodeError:
        raise SaslAuthenticationFailedError(GENERIC_FAILURE) from None
    match = _INITIAL_RESPONSE.fullmatch(text)
    if match is None:
        log.debug("Invalid OAUTHBEARER client first message")
        raise SaslAuthenticationFailedError(GENERIC_FAILURE)
    pairs: dict[str, str] = {}
    for item in match.group("kvpairs").split("\x01"):
        if item:
            key, _sep, value = item.partition("=")
            pairs[key] = value
    auth = pairs.pop("auth", None)
    if auth is None:
        log.debug("Invalid OAUTHBEARER client first message: 'auth' not specified")
        raise SaslAuthenticationFailedError(GENERIC_FAILURE)
    auth_match = _AUTH.fullmatch(auth)
    if auth_match is None or auth_match.group("scheme").lower() != "bearer":
        log.debug("Invalid OAUTHBEARER client first message: invalid 'auth' %r", auth[:16])
        raise SaslAuthenticationFailedError(GENERIC_FAILURE)
    authzid = (match.group("authzid") or "").replace("=2C", ",").replace("=3D", "=")
    return InitialResponse(authzid, auth_match.group("token"), pairs)


class UnsecuredValidator:
    """Kafka's ``OAuthBearerUnsecuredValidatorCallbackHandler`` with its JAAS options."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.principal_claim = (options.get("unsecuredValidatorPrincipalClaimName") or "").strip()
        self.principal_claim = self.principal_claim or "sub"
        self.scope_claim = (options.get("unsecuredValidatorScopeClaimName") or "").strip()
        self.scope_claim = self.scope_claim or "scope"
        required = (options.get("unsecuredValidatorRequiredScope") or "").strip()
        self.required_scope = required.split() if required else []
        skew = (options.get("unsecuredValidatorAllowableClockSkewMs") or "").strip()
        try:
            self.skew_ms = int(skew) if skew else 0
        except ValueError as exc:
            raise InvalidConfigError(str(exc)) from None
        if self.skew_ms < 0:
            msg = f"Allowable clock skew millis must not be negative: {skew}"
            raise InvalidConfigError(msg)

    def validate(self, token: str, now_ms: int) -> ValidatedJwt:
        try:
            claims = self._claims(token)
        except InvalidJwtError as exc:
            raise InvalidTokenError(str(exc)) from None
        principal = claims.get(self.principal_claim)
        if principal is None:
            raise InvalidTokenError(f"Required claim missing: {self.principal_claim}")
        if not isinstance(principal, str):
            msg = f"The {self.principal_claim} claim had the incorrect type"
            raise InvalidTokenError(msg)
        issued_at, expiry = _seconds(claims, "iat"), _seconds(claims, "exp")
        if issued_at is not None and 1000 * issued_at > now_ms + self.skew_ms:
            raise InvalidTokenError(f"The Issued At value ({issued_at} seconds) is in the future")
        if expiry is None:
            raise InvalidTokenError("Required claim missing: exp")
        if now_ms - self.skew_ms >= 1000 * expiry:
            raise InvalidTokenError(f"The token expired at {expiry} seconds")
        if issued_at is not None and expiry <= issued_at:
            msg = f"The Expiration Time ({expiry} s) was not after the Issued At time ({issued_at})"
            raise InvalidTokenError(msg)
        raw_scope = claims.get(self.scope_claim)
        scope = (
            raw_scope.split()
            if isinstance(raw_scope, str)
            else [str(s) for s in raw_scope]
            if isinstance(raw_scope, list)
            else []
        )
        for element in self.required_scope:
            if element not in scope:
                # Kafka names the required scope as Java prints a list: [a, b]
                raise InvalidTokenError(
                    f"The provided scope {scope} was missing a required scope ({element})",
                    status="insufficient_scope",
                    scope="[" + ", ".join(self.required_scope) + "]",
                )
        if not principal.strip():
            raise InvalidTokenError("No principal name in the token")
        return ValidatedJwt(
            principal, int(1000 * expiry), int(1000 * (issued_at or 0)), frozenset(scope)
        )

    @staticmethod
    def _claims(token: str) -> dict[str, Any]:
        if ".." in token:
            raise InvalidJwtError("Malformed compact serialization contains '..'")
        parts = token.split(".")
        if len(parts) != 3 or parts[2]:
            msg = "Unsecured JWS compact serializations must have 2 dots and end with one"
            raise InvalidJwtError(msg)
        b64url_json(parts[0], "JOSE header")
        return b64url_json(parts[1], "claims")


def _seconds(claims: Mapping[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidTokenError(f"The {name} claim had the incorrect type")
    return float(value)


class SecuredValidator:
    """Kafka's ``OAuthBearerValidatorCallbackHandler``: every refusal is ``invalid_token``."""

    def __init__(self, validator: JwtValidator) -> None:
        self._validator = validator

    def validate(self, token: str, now_ms: int) -> ValidatedJwt:
        try:
            return self._validator.validate(token, now_ms)
        except InvalidJwtError as exc:
            raise InvalidTokenError(f"Could not validate the access token: {exc}") from None


def secured_validator(setting: Callable[[str], str | None]) -> SecuredValidator:
    """The KIP-768 validator from the ``sasl.oauthbearer.*`` configs (``setting(name)``)."""
    url = setting("sasl.oauthbearer.jwks.endpoint.url")
    if not url:
        msg = (
            f"{SECURED_HANDLER} needs sasl.oauthbearer.jwks.endpoint.url (a file: or https: "
            "URL of the JWKS)"
        )
        raise InvalidConfigError(msg)
    audience = [a.strip() for a in (setting("sasl.oauthbearer.expected.audience") or "").split(",")]
    jwks = JwksSource(url, int(setting("sasl.oauthbearer.jwks.endpoint.refresh.ms") or 3600000))
    return SecuredValidator(
        JwtValidator(
            jwks,
            audience=[a for a in audience if a],
            issuer=setting("sasl.oauthbearer.expected.issuer") or None,
            sub_claim=setting("sasl.oauthbearer.sub.claim.name") or "sub",
            scope_claim=setting("sasl.oauthbearer.scope.claim.name") or "scope",
            clock_skew_s=int(setting("sasl.oauthbearer.clock.skew.seconds") or 30),
        )
    )


class OAuthBearerServer:
    """One OAUTHBEARER exchange (Kafka's ``OAuthBearerSaslServer``)."""

    def __init__(self, validator: TokenValidator, now_ms: Callable[[], int]) -> None:
        self._validator = validator
        self._now_ms = now_ms
        self._error: str | None = None
        self._token: ValidatedJwt | None = None
        self.complete = False
        #: When the token expires (ms on the broker's clock): KIP-368's credential lifetime.
        self.credential_expiry_ms: int | None = None
        self.extensions: dict[str, str] = {}

    def evaluate(self, token: bytes) -> bytes:
        if token == b"\x01" and self._error is not None:
            raise SaslAuthenticationFailedError(self._error)
        self._error = None
        response = parse_initial_response(token)
        for key, value in response.extensions.items():
            if not _EXTENSION_KEY.fullmatch(key) or not _EXTENSION_VALUE.fullmatch(value):
                raise SaslAuthenticationFailedError(GENERIC_FAILURE)
        try:
            validated = self._validator.validate(response.token, self._now_ms())
        except InvalidTokenError as exc:
            log.info("OAUTHBEARER token refused: %s", exc)
            error: dict[str, str] = {"status": exc.status}
            if exc.scope is not None:
                error["scope"] = exc.scope
            # Kafka's layout: {"status":"invalid_token"} or {"status":"...", "scope":"[a, b]"}
            self._error = json.dumps(error, separators=(", ", ":"))
            return self._error.encode()
        if response.authzid and response.authzid != validated.principal:
            msg = (
                "Authentication failed: Client requested an authorization id "
                f"({response.authzid}) that is different from the token's principal name "
                f"({validated.principal})"
            )
            raise SaslAuthenticationFailedError(msg)
        self._token = validated
        self.extensions = dict(response.extensions)
        self.credential_expiry_ms = validated.expiry_ms
        self.complete = True
        return b""

    @property
    def principal(self) -> str:
        assert self.complete and self._token is not None
        return f"User:{self._token.principal}"
