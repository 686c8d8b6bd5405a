"""SASL/OAUTHBEARER and KIP-368 on the wire: Apache Kafka 4.4 and sharetxn answer the same.

Both brokers get a SASL_PLAINTEXT listener with OAUTHBEARER (the unsecured validator, its
default) and PLAIN, and ``connections.max.reauth.ms``; the same raw exchanges run against
each and their observations must be equal: session lifetimes, the RFC 7628 JSON error and
the failure after the client's ``%x01``, Kafka's generic message for a malformed message,
re-authentication (same principal, another principal, another mechanism, too soon) and the
connection closed at the first request after the session's end.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from chaos.apache_kafka import free_port
from coordinator.launcher import LocalBroker
from producer.protocol.oauth import initial_response, unsecured_jwt
from tests.kafka_wire import WireClient
from tests.reference.kafka import ReferenceKafka, java_available
from txn.api_keys import ApiKey

pytestmark = pytest.mark.reference

REAUTH_MS = 3000
OAUTH_JAAS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
    'unsecuredLoginStringClaim_sub="broker";'
)
PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_alice="alice-secret" user_bob="bob-secret";'
)
SASL = {
    "sasl.enabled.mechanisms": "OAUTHBEARER,PLAIN",
    "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": OAUTH_JAAS,
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
    "connections.max.reauth.ms": str(REAUTH_MS),
}


class SaslKafka(ReferenceKafka):
    """The reference node with a SASL_PLAINTEXT listener beside its PLAINTEXT one."""

    def __init__(self) -> None:
        super().__init__(settings=SASL)
        self.sasl_port = free_port()

    def properties(self) -> dict[str, str]:
        props = super().properties()
        props["listeners"] += f",SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}"
        props["advertised.listeners"] += f",SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}"
        props["listener.security.protocol.map"] += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
        return props


@pytest.fixture(scope="module")
def bootstraps() -> Iterator[dict[str, str]]:
    if not java_available():
        pytest.skip("the reference Kafka needs a Java runtime")
    config = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        **SASL,
    }
    with contextlib.ExitStack() as stack:
        kafka = stack.enter_context(SaslKafka())
        ours = stack.enter_context(LocalBroker(config=config))
        yield {
            "kafka": f"127.0.0.1:{kafka.sasl_port}",
            "sharetxn": ours.listener_bootstrap("SASL_PLAINTEXT"),
        }


def token(sub: str, life_s: int = 3600, **extra: Any) -> bytes:
    now = int(time.time())
    return initial_response(
        unsecured_jwt({"sub": sub, "iat": now, "exp": now + life_s, **extra}), {}
    )


class Probe:
    """A raw connection recording what a scenario observes."""

    def __init__(self, bootstrap: str) -> None:
        self.wire = WireClient(bootstrap)
        self.wire.request(
            ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}
        )

    def handshake(self, mechanism: str) -> Any:
        try:
            resp = self.wire.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism})
        except (ConnectionError, OSError):
            return "closed"
        return {"error": int(resp.error_code), "mechanisms": sorted(resp.mechanisms)}

    def authenticate(self, auth: bytes) -> Any:
        try:
            resp = self.wire.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": auth})
        except (ConnectionError, OSError):
            return "closed"
        lifetime = int(resp.session_lifetime.total_seconds() * 1000)
        return {
            "error": int(resp.error_code),
            "message": resp.error_message,
            "auth_bytes": bytes(resp.auth_bytes).decode(),
            # the token's own remaining life is seconds away from the config; round it
            "lifetime": lifetime if lifetime <= REAUTH_MS else "token",
        }

    def request(self) -> Any:
        try:
            resp = self.wire.request(
                ApiKey.API_VERSIONS,
                3,
                {"client_software_name": "t", "client_software_version": "1"},
            )
        except (ConnectionError, OSError):
            return "closed"
        return int(resp.error_code)


def login(probe: Probe, mechanism: str, auth: bytes) -> list[Any]:
    return [probe.handshake(mechanism), probe.authenticate(auth)]


def plain(user: str) -> bytes:
    return f"\x00{user}\x00{user}-secret".encode()


def s_authenticated(p: Probe) -> list[Any]:
    return [*login(p, "OAUTHBEARER", token("alice")), p.request()]


def s_token_lifetime_below_the_config(p: Probe) -> list[Any]:
    out = login(p, "OAUTHBEARER", token("alice", life_s=2))
    lifetime = out[1]["lifetime"]
    out[1]["lifetime"] = "<=2000" if lifetime <= 2000 else lifetime
    return out


def s_expired_token(p: Probe) -> list[Any]:
    return [*login(p, "OAUTHBEARER", token("alice", life_s=-10)), p.authenticate(b"\x01")]


def s_no_subject(p: Probe) -> list[Any]:
    now = int(time.time())
    auth = initial_response(unsecured_jwt({"exp": now + 60}), {})
    return [*login(p, "OAUTHBEARER", auth), p.authenticate(b"\x01")]


def s_malformed_message(p: Probe) -> list[Any]:
    return login(p, "OAUTHBEARER", b"n,,auth=Bearer abc")


def s_authzid_not_the_principal(p: Probe) -> list[Any]:
    now = int(time.time())
    jwt = unsecured_jwt({"sub": "alice", "iat": now, "exp": now + 60})
    return login(p, "OAUTHBEARER", initial_response(jwt, {}, authzid="bob"))


def s_extensions_accepted(p: Probe) -> list[Any]:
    now = int(time.time())
    jwt = unsecured_jwt({"sub": "alice", "iat": now, "exp": now + 3600})
    return [*login(p, "OAUTHBEARER", initial_response(jwt, {"traceId": "abc"})), p.request()]


def s_session_end_closes(p: Probe) -> list[Any]:
    out = login(p, "PLAIN", plain("alice"))
    time.sleep(REAUTH_MS / 1000 + 0.5)
    return [*out, p.request()]


def s_reauthenticate(p: Probe) -> list[Any]:
    out = login(p, "OAUTHBEARER", token("alice"))
    time.sleep(1.2)
    out += login(p, "OAUTHBEARER", token("alice"))
    time.sleep(2.2)  # past the first session's end, inside the second's
    return [*out, p.request()]


def s_reauthenticate_after_the_end(p: Probe) -> list[Any]:
    out = login(p, "PLAIN", plain("alice"))
    time.sleep(REAUTH_MS / 1000 + 0.5)
    return [*out, *login(p, "PLAIN", plain("alice")), p.request()]


def s_reauthenticate_as_another(p: Probe) -> list[Any]:
    out = login(p, "PLAIN", plain("alice"))
    time.sleep(1.2)
    return [*out, *login(p, "PLAIN", plain("bob")), p.request()]


def s_reauthenticate_with_another_mechanism(p: Probe) -> list[Any]:
    out = login(p, "PLAIN", plain("alice"))
    time.sleep(1.2)
    return [*out, *login(p, "OAUTHBEARER", token("alice"))]


def s_reauthenticate_too_soon(p: Probe) -> list[Any]:
    out = login(p, "PLAIN", plain("alice"))
    time.sleep(1.2)
    out += login(p, "PLAIN", plain("alice"))
    return [*out, p.handshake("PLAIN"), p.request()]


def s_reauthenticate_with_an_expired_token(p: Probe) -> list[Any]:
    out = login(p, "OAUTHBEARER", token("alice"))
    time.sleep(1.2)
    out += login(p, "OAUTHBEARER", token("alice", life_s=-10))
    return [*out, p.authenticate(b"\x01"), p.request()]


def s_authenticate_again_without_handshake(p: Probe) -> list[Any]:
    out = login(p, "PLAIN", plain("alice"))
    return [*out, p.authenticate(plain("alice")), p.request()]


SCENARIOS: dict[str, Callable[[Probe], list[Any]]] = {
    name[2:]: fn for name, fn in dict(globals()).items() if name.startswith("s_") and callable(fn)
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_same_as_kafka(bootstraps: dict[str, str], name: str) -> None:
    seen: dict[str, list[Any]] = {}
    for side, bootstrap in bootstraps.items():
        probe = Probe(bootstrap)
        try:
            seen[side] = SCENARIOS[name](probe)
        finally:
            probe.wire.close()
    assert seen["sharetxn"] == seen["kafka"]
