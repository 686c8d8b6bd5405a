"""The client library's OAUTHBEARER token sources and its re-authentication schedule."""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from coordinator.security.jwt import JwksSource
from coordinator.security.oauthbearer import UnsecuredValidator, parse_initial_response
from producer.protocol.oauth import OAuthBearerClient, jwt_expiry_ms
from producer.protocol.security import ClientSecurity
from tests.oauth_tokens import Signer, claims
from txn.errors import InvalidConfigError, SaslAuthenticationFailedError

BASE = {"security.protocol": "sasl_plaintext", "sasl.mechanism": "OAUTHBEARER"}


def first_token(security: ClientSecurity) -> tuple[str, dict[str, str]]:
    assert security.oauth is not None
    parsed = parse_initial_response(OAuthBearerClient(security.oauth).first())
    return parsed.token, parsed.extensions


def test_librdkafka_unsecured_jwt() -> None:
    security = ClientSecurity.from_config(
        BASE
        | {
            "enable.sasl.oauthbearer.unsecure.jwt": "true",
            "sasl.oauthbearer.config": (
                "principal=alice lifeSeconds=120 scope=a,b extension_traceId=x1"
            ),
        }
    )
    token, extensions = first_token(security)
    validated = UnsecuredValidator({"unsecuredValidatorRequiredScope": "a b"}).validate(
        token, int(time.time() * 1000)
    )
    assert validated.principal == "alice"
    assert extensions == {"traceId": "x1"}
    expiry = jwt_expiry_ms(token)
    assert expiry is not None and 110_000 < expiry - time.time() * 1000 <= 120_000


def test_java_jaas_unsecured_login() -> None:
    jaas = (
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        'unsecuredLoginStringClaim_sub="bob" unsecuredLoginExtension_tenant="t1";'
    )
    token, extensions = first_token(ClientSecurity.from_config(BASE | {"sasl.jaas.config": jaas}))
    assert UnsecuredValidator({}).validate(token, int(time.time() * 1000)).principal == "bob"
    assert extensions == {"tenant": "t1"}


def test_oauth_cb_and_token_file(tmp_path: Path) -> None:
    calls: list[str] = []

    def cb(config: str) -> tuple[str, float]:
        calls.append(config)
        return "a.b.c", time.time() + 3600

    security = ClientSecurity.from_config(BASE | {"oauth_cb": cb, "sasl.oauthbearer.config": "x=1"})
    assert first_token(security)[0] == "a.b.c"
    assert first_token(security)[0] == "a.b.c"
    assert calls == ["x=1"]  # cached while fresh
    token_file = tmp_path / "token"
    token_file.write_text("t.o.k\n")
    url = {"sasl.oauthbearer.token.endpoint.url": token_file.as_uri()}
    assert first_token(ClientSecurity.from_config(BASE | url))[0] == "t.o.k"
    missing = ClientSecurity.from_config(
        BASE | {"sasl.oauthbearer.token.endpoint.url": "file:///nonexistent/token"}
    )
    with pytest.raises(SaslAuthenticationFailedError):
        first_token(missing)


def test_a_token_is_needed() -> None:
    with pytest.raises(InvalidConfigError, match="needs a token"):
        ClientSecurity.from_config(BASE)
    with pytest.raises(InvalidConfigError, match=r"client\.id"):
        ClientSecurity.from_config(
            BASE | {"sasl.oauthbearer.token.endpoint.url": "https://idp/token"}
        )


class _Idp(BaseHTTPRequestHandler):
    """A token endpoint (client_credentials) and a JWKS, over plain HTTP, for the test."""

    signer = Signer("ES256", "idp-1")
    seen: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        self.seen.append(
            {"auth": self.headers["Authorization"], "form": urllib.parse.parse_qs(body)}
        )
        self._json({"access_token": self.signer.sign(claims("svc-c", 600)), "token_type": "bearer"})

    def do_GET(self) -> None:
        self._json({"keys": [self.signer.jwk()]})

    def _json(self, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def idp() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Idp)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_client_credentials_token_endpoint_and_an_http_jwks(idp: str) -> None:
    security = ClientSecurity.from_config(
        BASE
        | {
            "sasl.oauthbearer.token.endpoint.url": f"{idp}/token",
            "sasl.oauthbearer.client.id": "my client",
            "sasl.oauthbearer.client.secret": "s3cr=t",
            "sasl.oauthbearer.scope": "kafka",
        }
    )
    token, _ext = first_token(security)
    request = _Idp.seen[-1]
    assert request["form"] == {"grant_type": ["client_credentials"], "scope": ["kafka"]}
    basic = base64.b64decode(request["auth"].removeprefix("Basic ")).decode()
    assert basic == "my%20client:s3cr%3Dt"
    keys = JwksSource(f"{idp}/jwks", 3_600_000).keys("idp-1")
    header, payload, signature = token.split(".")
    assert keys and keys[0].verify(
        "ES256", base64.urlsafe_b64decode(signature + "=="), f"{header}.{payload}".encode()
    )
