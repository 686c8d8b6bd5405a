"""Signed JWTs and JWKS documents for the OAUTHBEARER tests (RS256 and ES256 keys)."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _int(value: int, size: int | None = None) -> str:
    length = size or (value.bit_length() + 7) // 8
    return b64url(value.to_bytes(length, "big"))


class Signer:
    """A key pair: its JWK and the JWTs it signs."""

    def __init__(self, alg: str = "RS256", kid: str = "k1") -> None:
        self.alg, self.kid = alg, kid
        self.key: Any = (
            rsa.generate_private_key(public_exponent=65537, key_size=2048)
            if alg == "RS256"
            else ec.generate_private_key(ec.SECP256R1())
        )

    def jwk(self) -> dict[str, str]:
        public = self.key.public_key().public_numbers()
        if self.alg == "RS256":
            return {
                "kty": "RSA",
                "kid": self.kid,
                "use": "sig",
                "n": _int(public.n),
                "e": _int(public.e),
            }
        return {
            "kty": "EC",
            "kid": self.kid,
            "crv": "P-256",
            "x": _int(public.x, 32),
            "y": _int(public.y, 32),
        }

    def sign(self, claims: dict[str, Any], header: dict[str, Any] | None = None) -> str:
        head = {"alg": self.alg, "kid": self.kid, "typ": "JWT", **(header or {})}
        data = f"{b64url(json.dumps(head).encode())}.{b64url(json.dumps(claims).encode())}"
        if self.alg == "RS256":
            sig = self.key.sign(data.encode(), padding.PKCS1v15(), hashes.SHA256())
        else:
            der = self.key.sign(data.encode(), ec.ECDSA(hashes.SHA256()))
            r, s = decode_dss_signature(der)
            sig = r.to_bytes(32, "big") + s.to_bytes(32, "big")
        return f"{data}.{b64url(sig)}"


def claims(
    sub: str = "alice", life_s: int = 3600, now_s: int | None = None, **extra: Any
) -> dict[str, Any]:
    now = int(time.time()) if now_s is None else now_s
    return {"sub": sub, "iat": now, "exp": now + life_s, **extra}


def write_jwks(path: Path, *signers: Signer) -> str:
    """Writes the JWKS of ``signers`` to ``path``; returns its file: URL."""
    path.write_text(json.dumps({"keys": [s.jwk() for s in signers]}))
    return path.resolve().as_uri()
