"""KIP-368 on the broker, on a manual clock: session lifetimes, expiry, re-authentication."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from kio.serial import entity_reader

from coordinator.broker import BrokerCore
from coordinator.log.memory_log import MemoryStorage
from coordinator.protocol.server import KafkaServer
from coordinator.protocol.session import Session
from coordinator.security.listeners import Listener, SecurityProtocol
from coordinator.security.reauth import session_lifetime_ms
from producer.protocol.oauth import initial_response, unsecured_jwt
from tests.kafka_wire import WireClient
from txn.api_keys import ApiKey
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.kip1289_schema import load_response

NOW_MS = 1_700_000_000_000
LISTENER = Listener("SASL_PLAINTEXT", "127.0.0.1", 0, SecurityProtocol.SASL_PLAINTEXT)
OAUTH_JAAS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
    'unsecuredLoginStringClaim_sub="admin";'
)
PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'user_alice="alice-secret" user_bob="bob-secret";'
)


class Conn:
    """One SASL connection to a broker served in-process, frames in and out."""

    def __init__(self, **config: object) -> None:
        self.clock = ManualClock(NOW_MS)
        settings = {
            "sasl.enabled.mechanisms": "OAUTHBEARER,PLAIN",
            "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": OAUTH_JAAS,
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
            **config,
        }
        core = BrokerCore(
            MemoryStorage(),  # type: ignore[arg-type]
            self.clock,
            BrokerConfig(settings),
            random.Random(1),
        )
        self.server = KafkaServer(core, "127.0.0.1", 0, listeners=[LISTENER])
        self.server.gate.check_listener(LISTENER)
        self.session: Session = self.server.gate.open_session(LISTENER, "127.0.0.1", None)
        self.wire = WireClient.__new__(WireClient)
        self.wire.correlation = 0

    def call(self, key: ApiKey, version: int, body: dict[str, Any]) -> Any:
        frame = self.wire.encode(key, version, body)
        out = asyncio.run(self.server._handle_frame(frame, 1, "127.0.0.1", self.session))
        if not isinstance(out, bytes):
            return out  # False: closed unanswered
        cls = load_response(key, version)
        _header, offset = entity_reader(cls.__header_schema__)(out[4:], 0)
        value, _ = entity_reader(cls)(out[4:], offset)
        return value

    def authenticate(self, mechanism: str, token: bytes, version: int = 2) -> Any:
        hs = self.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism})
        assert hs is not False, "handshake closed the connection"
        assert hs.error_code == ErrorCode.NONE, hs
        return self.call(ApiKey.SASL_AUTHENTICATE, version, {"auth_bytes": token})

    def oauth(self, sub: str, life_s: int) -> Any:
        now_s = self.clock.now_ms() // 1000
        token = unsecured_jwt({"sub": sub, "iat": now_s, "exp": now_s + life_s})
        return self.authenticate("OAUTHBEARER", initial_response(token, {}))

    def plain(self, user: str) -> Any:
        return self.authenticate("PLAIN", f"\x00{user}\x00{user}-secret".encode())

    def api_versions(self) -> Any:
        return self.call(
            ApiKey.API_VERSIONS,
            3,
            {"client_software_name": "t", "client_software_version": "1"},
        )


def lifetime_ms(resp: Any) -> int:
    return int(resp.session_lifetime.total_seconds() * 1000)


def test_lifetime_is_the_smaller_of_the_config_and_the_token() -> None:
    assert session_lifetime_ms(0, None, 0) == (0, None)
    assert session_lifetime_ms(100, None, 500) == (500, 600)
    assert session_lifetime_ms(100, 60_100, 0) == (60_000, 60_100)
    assert session_lifetime_ms(100, 60_100, 5_000) == (5_000, 5_100)
    assert session_lifetime_ms(100, 50, 5_000) == (0, 100)


def test_oauthbearer_session_lives_as_long_as_its_token_by_default() -> None:
    conn = Conn()
    resp = conn.oauth("alice", 60)
    assert resp.error_code == ErrorCode.NONE
    assert lifetime_ms(resp) == 60_000
    assert conn.session.principal == "User:alice"


def test_plain_session_without_reauth_config_never_expires() -> None:
    conn = Conn()
    assert lifetime_ms(conn.plain("alice")) == 0
    conn.clock.advance(10**9)
    assert conn.api_versions().error_code == ErrorCode.NONE


@pytest.mark.parametrize("mechanism", ["OAUTHBEARER", "PLAIN"])
def test_a_request_after_the_session_ends_closes_the_connection(mechanism: str) -> None:
    conn = Conn(**{"connections.max.reauth.ms": 5000})
    resp = conn.oauth("alice", 3600) if mechanism == "OAUTHBEARER" else conn.plain("alice")
    assert lifetime_ms(resp) == 5000
    conn.clock.advance(5000)
    assert conn.api_versions().error_code == ErrorCode.NONE  # at the end, not after it
    conn.clock.advance(1)
    assert conn.api_versions() is False


def test_per_listener_and_mechanism_override() -> None:
    conn = Conn(
        **{
            "connections.max.reauth.ms": 5000,
            "listener.name.sasl_plaintext.oauthbearer.connections.max.reauth.ms": 2000,
        }
    )
    assert lifetime_ms(conn.oauth("alice", 3600)) == 2000
    conn2 = Conn(**{"listener.name.sasl_plaintext.connections.max.reauth.ms": 3000})
    assert lifetime_ms(conn2.plain("alice")) == 3000


def test_reauthentication_renews_the_session() -> None:
    conn = Conn(**{"connections.max.reauth.ms": 5000})
    conn.oauth("alice", 3600)
    conn.clock.advance(4500)
    resp = conn.oauth("alice", 3600)
    assert resp.error_code == ErrorCode.NONE and lifetime_ms(resp) == 5000
    conn.clock.advance(4000)  # past the first session's end
    assert conn.api_versions().error_code == ErrorCode.NONE
    assert conn.session.principal == "User:alice"


def test_reauthentication_may_begin_after_the_session_ended() -> None:
    conn = Conn(**{"connections.max.reauth.ms": 5000})
    conn.plain("alice")
    conn.clock.advance(60_000)
    assert conn.plain("alice").error_code == ErrorCode.NONE
    assert conn.api_versions().error_code == ErrorCode.NONE


def test_reauthentication_as_someone_else_fails_and_closes() -> None:
    conn = Conn(**{"connections.max.reauth.ms": 5000})
    conn.plain("alice")
    conn.clock.advance(2000)
    resp = conn.plain("bob")
    assert resp.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert resp.error_message == (
        "Cannot change principals during re-authentication from User.alice: User.bob"
    )
    assert conn.session.close_after_response


def test_reauthentication_with_another_mechanism_is_closed() -> None:
    conn = Conn(**{"connections.max.reauth.ms": 5000})
    conn.plain("alice")
    conn.clock.advance(2000)
    hs = conn.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"})
    assert hs.error_code == ErrorCode.NONE  # as Kafka: refused at the next request
    assert conn.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"x"}) is False


def test_failed_reauthentication_says_re_authentication() -> None:
    conn = Conn(**{"connections.max.reauth.ms": 5000})
    conn.oauth("alice", 3600)
    conn.clock.advance(2000)
    resp = conn.authenticate("OAUTHBEARER", b"garbage")
    assert resp.error_message == (
        "Authentication failed during re-authentication due to invalid credentials with "
        "SASL mechanism OAUTHBEARER"
    )


def test_one_reauthentication_a_second_at_most() -> None:
    conn = Conn(**{"connections.max.reauth.ms": 5000})
    conn.plain("alice")
    conn.clock.advance(2000)
    conn.plain("alice")
    conn.clock.advance(500)
    hs = conn.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    assert hs.error_code == ErrorCode.ILLEGAL_SASL_STATE


def test_expired_token_session_ends_at_the_tokens_expiry() -> None:
    conn = Conn(**{"connections.max.reauth.ms": 600_000})
    assert lifetime_ms(conn.oauth("alice", 30)) == 30_000
    conn.clock.advance(30_001)
    assert conn.api_versions() is False
