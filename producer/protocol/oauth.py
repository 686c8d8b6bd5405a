"""SASL/OAUTHBEARER on the client side: where the token comes from, and the client's message.

The token comes, in this order of precedence, from:

- ``oauth_cb``: a callable given the ``sasl.oauthbearer.config`` string, returning
  ``(token, expiry_epoch_seconds)`` (confluent-kafka's callback; an optional third item is
  the principal and a fourth the extensions dict);
- ``sasl.oauthbearer.token.endpoint.url`` (KIP-768): a ``file:`` URL whose file holds the
  token (read again at every authentication), or an ``https:`` token endpoint asked with
  the client_credentials grant (``sasl.oauthbearer.client.id`` /
  ``sasl.oauthbearer.client.secret`` / ``sasl.oauthbearer.scope``, or the JAAS
  ``clientId`` / ``clientSecret`` / ``scope`` options);
- an unsecured JWT (tests only; the broker's default validator accepts it): librdkafka's
  ``enable.sasl.oauthbearer.unsecure.jwt=true`` with ``sasl.oauthbearer.config`` =
  ``principal=NAME [scope=a,b] [lifeSeconds=3600] [principalClaimName=sub]
  [scopeClaimName=scope] [extension_KEY=value]``, or the Java clients' JAAS line
  ``OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="NAME"
  [unsecuredLoginLifetimeSeconds="3600"] [unsecuredLoginExtension_KEY="value"];``.

A token is reused until 80% of its life has passed.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from txn.errors import InvalidConfigError, SaslAuthenticationFailedError


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsecured_jwt(claims: Mapping[str, Any]) -> str:
    """An unsigned JWS (``alg: none``): header, payload and an empty signature."""
    header = _b64url(json.dumps({"alg": "none"}).encode())
    payload = _b64url(json.dumps(dict(claims), separators=(",", ":")).encode())
    return f"{header}.{payload}."


def jwt_expiry_ms(token: str) -> int | None:
    """The ``exp`` of a JWT in ms, None if the token is not a JWT with one."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, ValueError):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return int(exp * 1000) if isinstance(exp, int | float) else None


def initial_response(token: str, extensions: Mapping[str, str], authzid: str = "") -> bytes:
    """RFC 7628's client message as Kafka's ``OAuthBearerClientInitialResponse`` writes it."""
    gs2 = f"n,{'a=' + authzid if authzid else ''},"
    pairs = "".join(f"\x01{k}={v}" for k, v in extensions.items())
    return f"{gs2}\x01auth=Bearer {token}{pairs}\x01\x01".encode()


@dataclass
class TokenSource:
    """Fetches and caches the token (see the module docstring)."""

    fetch: Callable[[], tuple[str, int, dict[str, str]]]  # (token, expiry ms, extensions)
    _cached: tuple[str, int, dict[str, str]] | None = field(default=None, repr=False)
    _fetched_ms: int = 0

    def token(self) -> tuple[str, dict[str, str]]:
        now = int(time.time() * 1000)
        if self._cached is not None:
            _token, expiry, _ext = self._cached
            if now < self._fetched_ms + 0.8 * (expiry - self._fetched_ms):
                return self._cached[0], self._cached[2]
        self._cached = self.fetch()
        self._fetched_ms = now
        return self._cached[0], self._cached[2]


def _librdkafka_unsecured(text: str) -> tuple[str, int, dict[str, str]]:
    options = dict(item.split("=", 1) for item in text.split() if "=" in item)
    principal = options.get("principal")
    if not principal:
        msg = "sasl.oauthbearer.config: principal=NAME is needed for an unsecured JWT"
        raise InvalidConfigError(msg)
    life_s = int(options.get("lifeSeconds", "3600"))
    now = int(time.time())
    claims: dict[str, Any] = {options.get("principalClaimName", "sub"): principal}
    claims.update({"iat": now, "exp": now + life_s})
    if options.get("scope"):
        claims[options.get("scopeClaimName", "scope")] = options["scope"].split(",")
    extensions = {
        k[len("extension_") :]: v for k, v in options.items() if k.startswith("extension_")
    }
    return unsecured_jwt(claims), (now + life_s) * 1000, extensions


def _java_unsecured(options: Mapping[str, str]) -> tuple[str, int, dict[str, str]]:
    life_s = int(options.get("unsecuredLoginLifetimeSeconds", "3600"))
    now = int(time.time())
    principal_claim = options.get("unsecuredLoginPrincipalClaimName", "sub")
    claims: dict[str, Any] = {"iat": now, "exp": now + life_s}
    for key, value in options.items():
        if key.startswith("unsecuredLoginStringClaim_"):
            claims[key[len("unsecuredLoginStringClaim_") :]] = value
        elif key.startswith("unsecuredLoginNumberClaim_"):
            claims[key[len("unsecuredLoginNumberClaim_") :]] = float(value)
        elif key.startswith("unsecuredLoginListClaim_") and value:
            claims[key[len("unsecuredLoginListClaim_") :]] = value[1:].split(value[0])
    if principal_claim not in claims:
        msg = f'the JAAS line needs unsecuredLoginStringClaim_{principal_claim}="NAME"'
        raise InvalidConfigError(msg)
    extensions = {
        k[len("unsecuredLoginExtension_") :]: v
        for k, v in options.items()
        if k.startswith("unsecuredLoginExtension_")
    }
    return unsecured_jwt(claims), (now + life_s) * 1000, extensions


def _from_file(path: str) -> tuple[str, int, dict[str, str]]:
    try:
        with open(path, encoding="utf-8") as fh:
            token = fh.read().strip()
    except OSError as exc:
        msg = f"sasl.oauthbearer.token.endpoint.url: cannot read the token file {path}: {exc}"
        raise SaslAuthenticationFailedError(msg) from None
    return token, jwt_expiry_ms(token) or int(time.time() * 1000) + 3600_000, {}


def _client_credentials(
    url: str, client_id: str, secret: str, scope: str | None
) -> tuple[str, int, dict[str, str]]:
    """The client_credentials grant, as Kafka's ClientCredentialsRequestFormatter asks it."""
    basic = base64.b64encode(
        f"{urllib.parse.quote(client_id)}:{urllib.parse.quote(secret)}".encode()
    ).decode()
    form = {"grant_type": "client_credentials", **({"scope": scope} if scope else {})}
    request = urllib.request.Request(  # noqa: S310 - the configured endpoint
        url,
        data=urllib.parse.urlencode(form).encode(),
        headers={
            "Authorization": f"Basic {basic}",
            "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json",
            "Cache-Control": "no-cache",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:  # noqa: S310
            body = json.loads(resp.read())
    except (OSError, ValueError) as exc:
        msg = f"the token endpoint {url} did not give a token: {exc}"
        raise SaslAuthenticationFailedError(msg) from None
    token = body.get("access_token") if isinstance(body, dict) else None
    if not isinstance(token, str) or not token:
        msg = f"the token endpoint {url} answered without an access_token"
        raise SaslAuthenticationFailedError(msg)
    expiry = jwt_expiry_ms(token)
    if expiry is None:
        expiry = int(time.time() * 1000) + int(body.get("expires_in", 3600)) * 1000
    return token, expiry, {}


def _callback(cb: Callable[[str], Any], config: str) -> tuple[str, int, dict[str, str]]:
    result = cb(config)
    token, expiry_s = str(result[0]), float(result[1])
    extensions = dict(result[3]) if len(result) > 3 and result[3] else {}
    return token, int(expiry_s * 1000), extensions


def token_source(values: Mapping[str, Any], jaas_options: Mapping[str, str]) -> TokenSource:
    """Where this client's OAUTHBEARER token comes from (see the module docstring)."""
    config = str(values.get("sasl.oauthbearer.config") or "")
    cb = values.get("oauth_cb")
    if callable(cb):
        return TokenSource(lambda: _callback(cb, config))
    url = values.get("sasl.oauthbearer.token.endpoint.url")
    if url:
        parsed = urllib.parse.urlparse(str(url))
        if parsed.scheme == "file":
            path = urllib.request.url2pathname(parsed.path)
            return TokenSource(lambda: _from_file(path))
        client_id = values.get("sasl.oauthbearer.client.id") or jaas_options.get("clientId")
        secret = values.get("sasl.oauthbearer.client.secret") or jaas_options.get("clientSecret")
        if not client_id or not secret:
            msg = "a token endpoint needs sasl.oauthbearer.client.id and .client.secret"
            raise InvalidConfigError(msg)
        scope = values.get("sasl.oauthbearer.scope") or jaas_options.get("scope")
        return TokenSource(
            lambda: _client_credentials(
                str(url), str(client_id), str(secret), None if not scope else str(scope)
            )
        )
    if str(values.get("enable.sasl.oauthbearer.unsecure.jwt") or "").lower() == "true":
        return TokenSource(lambda: _librdkafka_unsecured(config))
    if any(k.startswith("unsecuredLogin") for k in jaas_options):
        return TokenSource(lambda: _java_unsecured(jaas_options))
    msg = (
        "sasl.mechanism OAUTHBEARER needs a token: oauth_cb, sasl.oauthbearer.token.endpoint.url,"
        " enable.sasl.oauthbearer.unsecure.jwt=true with sasl.oauthbearer.config, or a JAAS "
        "line with unsecuredLoginStringClaim_sub"
    )
    raise InvalidConfigError(msg)


_JAAS_OPTION = re.compile(r'([A-Za-z0-9_.\-]+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def jaas_options(jaas: str | None) -> dict[str, str]:
    if not jaas:
        return {}
    return {m.group(1): re.sub(r"\\(.)", r"\1", m.group(2)) for m in _JAAS_OPTION.finditer(jaas)}


class OAuthBearerClient:
    """The client half: the initial response; on the broker's JSON error, ``%x01``."""

    def __init__(self, source: TokenSource) -> None:
        self._source = source
        self.error: str | None = None

    def first(self) -> bytes:
        token, extensions = self._source.token()
        return initial_response(token, extensions)

    def next(self, challenge: bytes) -> bytes | None:
        if not challenge:
            return None
        # RFC 7628 3.2.2: the server's error; the client answers %x01 and the broker fails.
        self.error = challenge.decode(errors="replace")
        return b"\x01"
