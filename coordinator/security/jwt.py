"""Signed JWTs (RFC 7515/7519) and JWKS (RFC 7517) for OAUTHBEARER's secured validator (KIP-768).

``JwtValidator`` checks what Kafka's ``BrokerJwtValidator`` (jose4j) checks: a signed
compact JWS (``alg: none`` refused), its signature by a key of the JWKS found by ``kid``
(RS256/384/512, PS256/384/512, ES256/384/512), ``exp`` and ``iat`` present, ``exp`` and
``nbf`` against the clock with the allowed skew, the expected audience and issuer if
configured (a token with an ``aud`` claim is refused when no audience is expected, as
jose4j), and a non-empty subject claim.  The JWKS comes from a ``file:`` URL (read again
when the file changes) or an ``https:`` URL (fetched again every
``sasl.oauthbearer.jwks.endpoint.refresh.ms``, or when a token names an unknown ``kid``).
Nothing here does I/O on the event loop except reading a local file.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from txn.errors import InvalidConfigError

log = logging.getLogger("sharetxn.security")

_HASHES: Final[dict[str, Callable[[], hashes.HashAlgorithm]]] = {
    "256": hashes.SHA256,
    "384": hashes.SHA384,
    "512": hashes.SHA512,
}
_CURVES: Final[dict[str, tuple[ec.EllipticCurve, int]]] = {
    "P-256": (ec.SECP256R1(), 32),
    "P-384": (ec.SECP384R1(), 48),
    "P-521": (ec.SECP521R1(), 66),
}


class InvalidJwtError(Exception):
    """A token that is refused; the message goes to the broker's log, never to the client."""


def b64url_decode(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        msg = f"not Base64URL: {exc}"
        raise InvalidJwtError(msg) from None


def b64url_json(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(b64url_decode(text))
    except (UnicodeDecodeError, ValueError) as exc:
        msg = f"the {what} is not JSON: {exc}"
        raise InvalidJwtError(msg) from None
    if not isinstance(value, dict):
        msg = f"the {what} is not a JSON object"
        raise InvalidJwtError(msg)
    return value


def _int_of(jwk: dict[str, Any], name: str) -> int:
    return int.from_bytes(b64url_decode(str(jwk[name])), "big")


@dataclass(frozen=True, slots=True)
class VerificationKey:
    kid: str | None
    kty: str
    key: Any  # rsa.RSAPublicKey | ec.EllipticCurvePublicKey
    curve_bytes: int = 0

    @classmethod
    def from_jwk(cls, jwk: dict[str, Any]) -> VerificationKey | None:
        """The public key of one JWK (None for a key type or use not for signatures)."""
        kty = str(jwk.get("kty", ""))
        if jwk.get("use", "sig") != "sig":
            return None
        kid = None if jwk.get("kid") is None else str(jwk["kid"])
        if kty == "RSA":
            numbers = rsa.RSAPublicNumbers(_int_of(jwk, "e"), _int_of(jwk, "n"))
            return cls(kid, kty, numbers.public_key())
        if kty == "EC" and str(jwk.get("crv")) in _CURVES:
            curve, size = _CURVES[str(jwk["crv"])]
            ec_numbers = ec.EllipticCurvePublicNumbers(_int_of(jwk, "x"), _int_of(jwk, "y"), curve)
            return cls(kid, kty, ec_numbers.public_key(), size)
        return None

    def verify(self, alg: str, signature: bytes, data: bytes) -> bool:
        family, bits = alg[:2], alg[2:]
        hash_of = _HASHES.get(bits)
        if hash_of is None:
            return False
        try:
            if family == "RS" and self.kty == "RSA":
                self.key.verify(signature, data, padding.PKCS1v15(), hash_of())
            elif family == "PS" and self.kty == "RSA":
                pss = padding.PSS(mgf=padding.MGF1(hash_of()), salt_length=hash_of().digest_size)
                self.key.verify(signature, data, pss, hash_of())
            elif family == "ES" and self.kty == "EC":
                size = self.curve_bytes
                if len(signature) != 2 * size:
                    return False
                r = int.from_bytes(signature[:size], "big")
                s = int.from_bytes(signature[size:], "big")
                self.key.verify(encode_dss_signature(r, s), data, ec.ECDSA(hash_of()))
            else:
                return False
        except InvalidSignature:
            return False
        return True


def parse_jwks(text: str | bytes) -> list[VerificationKey]:
    try:
        document = json.loads(text)
        keys = document["keys"]
    except (ValueError, KeyError, TypeError) as exc:
        msg = f"not a JWKS document (a JSON object with a keys array): {exc}"
        raise InvalidConfigError(msg) from None
    out: list[VerificationKey] = []
    for jwk in keys:
        try:
            key = VerificationKey.from_jwk(dict(jwk))
        except (KeyError, ValueError, TypeError, InvalidJwtError) as exc:
            log.warning("JWKS: a key is skipped: %s", exc)
            continue
        if key is not None:
            out.append(key)
    return out


class JwksSource:
    """The keys of ``sasl.oauthbearer.jwks.endpoint.url`` (file: or https:), kept fresh."""

    def __init__(self, url: str, refresh_ms: int) -> None:
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("file", "https", "http"):
            msg = f"sasl.oauthbearer.jwks.endpoint.url {url!r}: a file: or https: URL is needed"
            raise InvalidConfigError(msg)
        if refresh_ms < 0:
            msg = (
                "The OAuth configuration option sasl.oauthbearer.jwks.endpoint.refresh.ms value"
                " must be non-negative"
            )
            raise InvalidConfigError(msg)
        self.url = url
        self._path = urllib.request.url2pathname(parsed.path) if parsed.scheme == "file" else None
        self._refresh_s = refresh_ms / 1000
        self._lock = threading.Lock()
        self._keys: list[VerificationKey] = []
        self._stamp: float = -1.0  # file mtime, or monotonic time of the last fetch
        self._fetching = False
        if self._path is not None:
            self._read_file()
        else:
            self._fetch()

    def _read_file(self) -> None:
        assert self._path is not None
        try:
            mtime = os.stat(self._path).st_mtime
            if mtime == self._stamp:
                return
            with open(self._path, "rb") as fh:
                keys = parse_jwks(fh.read())
        except OSError as exc:
            if self._stamp < 0:
                msg = f"sasl.oauthbearer.jwks.endpoint.url {self.url}: cannot read: {exc}"
                raise InvalidConfigError(msg) from None
            log.warning("JWKS file %s: %s (the keys read before are kept)", self._path, exc)
            return
        self._keys, self._stamp = keys, mtime

    def _fetch(self) -> None:
        try:
            with urllib.request.urlopen(self.url, timeout=10) as resp:  # noqa: S310 - https only
                keys = parse_jwks(resp.read())
        except (OSError, InvalidConfigError) as exc:
            log.warning("JWKS %s could not be fetched: %s", self.url, exc)
            with self._lock:
                self._fetching = False
            return
        with self._lock:
            self._keys, self._stamp, self._fetching = keys, time.monotonic(), False

    def _refresh_in_background(self) -> None:
        with self._lock:
            if self._fetching:
                return
            self._fetching = True
        threading.Thread(target=self._fetch, name="jwks-refresh", daemon=True).start()

    def keys(self, kid: str | None) -> list[VerificationKey]:
        if self._path is not None:
            self._read_file()
        elif time.monotonic() - self._stamp > self._refresh_s or (
            kid is not None and all(k.kid != kid for k in self._keys)
        ):
            self._refresh_in_background()  # meanwhile the keys fetched before serve
        return [k for k in self._keys if kid is None or k.kid == kid]


@dataclass(frozen=True, slots=True)
class ValidatedJwt:
    principal: str
    expiry_ms: int
    issued_at_ms: int
    scope: frozenset[str]


class JwtValidator:
    """Kafka's ``BrokerJwtValidator``: see the module docstring."""

    def __init__(
        self,
        jwks: JwksSource,
        *,
        audience: list[str],
        issuer: str | None,
        sub_claim: str,
        scope_claim: str,
        clock_skew_s: int,
    ) -> None:
        self.jwks = jwks
        self.audience = frozenset(audience)
        self.issuer = issuer
        self.sub_claim = sub_claim
        self.scope_claim = scope_claim
        self.skew_ms = clock_skew_s * 1000

    def validate(self, token: str, now_ms: int) -> ValidatedJwt:
        parts = token.split(".")
        if len(parts) != 3:
            msg = f"malformed JWT: {len(parts)} dot-separated parts instead of 3"
            raise InvalidJwtError(msg)
        header = b64url_json(parts[0], "JWS header")
        claims = b64url_json(parts[1], "JWT payload")
        alg = str(header.get("alg", "none"))
        if alg == "none" or not parts[2]:
            msg = "'none' is not a permitted algorithm (the JWT must be signed)"
            raise InvalidJwtError(msg)
        kid = None if header.get("kid") is None else str(header["kid"])
        signature = b64url_decode(parts[2])
        data = f"{parts[0]}.{parts[1]}".encode()
        if not any(key.verify(alg, signature, data) for key in self.jwks.keys(kid)):
            msg = f"no key of the JWKS (kid {kid}) verifies the signature of this {alg} JWT"
            raise InvalidJwtError(msg)
        expiry = _numeric_date(claims, "exp")
        issued_at = _numeric_date(claims, "iat")
        if expiry is None:
            raise InvalidJwtError("No Expiration Time (exp) claim present.")
        if issued_at is None:
            raise InvalidJwtError("No Issued At (iat) claim present.")
        if now_ms - self.skew_ms >= expiry:
            msg = f"The JWT is no longer valid: exp {expiry} ms, now {now_ms} ms"
            raise InvalidJwtError(msg)
        not_before = _numeric_date(claims, "nbf")
        if not_before is not None and now_ms + self.skew_ms < not_before:
            msg = f"The JWT is not yet valid: nbf {not_before} ms, now {now_ms} ms"
            raise InvalidJwtError(msg)
        self._check_audience(claims.get("aud"))
        if self.issuer is not None and claims.get("iss") != self.issuer:
            msg = f"Issuer (iss) claim value ({claims.get('iss')}) doesn't match {self.issuer}"
            raise InvalidJwtError(msg)
        sub = claims.get(self.sub_claim)
        if sub is not None and not isinstance(sub, str):
            msg = f"Could not extract the '{self.sub_claim}' claim from the access token"
            raise InvalidJwtError(msg)
        if not sub or not sub.strip():
            msg = f"The {self.sub_claim} claim value must not be empty"
            raise InvalidJwtError(msg)
        raw_scope = claims.get(self.scope_claim)
        scope: list[str] = []
        if isinstance(raw_scope, str):
            scope = [raw_scope]
        elif isinstance(raw_scope, list):
            scope = [str(s) for s in raw_scope]
        return ValidatedJwt(sub.strip(), expiry, issued_at, frozenset(s.strip() for s in scope))

    def _check_audience(self, aud: Any) -> None:
        values = [aud] if isinstance(aud, str) else list(aud) if isinstance(aud, list) else []
        if not self.audience:
            if aud is not None:
                msg = (
                    f"Audience (aud) claim {values} present in the JWT but no expected audience "
                    "value(s) were provided to the JWT Consumer."
                )
                raise InvalidJwtError(msg)
            return
        if aud is None:
            raise InvalidJwtError("No Audience (aud) claim present.")
        if not self.audience.intersection(str(v) for v in values):
            msg = f"Audience (aud) claim {values} doesn't contain an acceptable identifier."
            raise InvalidJwtError(msg)


def _numeric_date(claims: dict[str, Any], name: str) -> int | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        msg = f"The value of the '{name}' claim is not the expected type (a NumericDate)"
        raise InvalidJwtError(msg)
    return int(value * 1000)
