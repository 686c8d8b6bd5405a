"""SCRAM and PLAIN servers (sans-IO), against RFC 7677's example and our client."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.security.sasl import PlainServer, parse_jaas, plain_users
from coordinator.security.scram import (
    SaslAuthenticationFailedError,
    ScramMechanism,
    ScramServer,
    make_credential,
)
from producer.protocol.security import _ScramClient

SHA256 = ScramMechanism.SCRAM_SHA_256


def test_rfc7677_example_exchange() -> None:
    """RFC 7677 section 3: user "user", password "pencil"."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    credential = make_credential(SHA256, "pencil", 4096, salt)
    server = ScramServer(
        SHA256,
        lambda _m, user: credential if user == "user" else None,
        server_nonce=lambda: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
    )
    first = server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    final = server.evaluate(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete
    assert server.principal == "User:user"


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
def test_our_client_and_server_agree(mechanism: ScramMechanism) -> None:
    credential = make_credential(mechanism, "s3cret", 4096)
    server = ScramServer(mechanism, lambda _m, _u: credential)
    client = _ScramClient(mechanism.mechanism_name, "a,b=c", "s3cret")
    final = client.next(server.evaluate(client.first()))
    assert final is not None
    assert client.next(server.evaluate(final)) is None
    assert server.principal == "User:a,b=c"  # saslname escapes undone


def test_wrong_password_and_unknown_user_fail_without_the_password() -> None:
    credential = make_credential(SHA256, "right", 4096)
    server = ScramServer(SHA256, lambda _m, _u: credential)
    client = _ScramClient("SCRAM-SHA-256", "alice", "wrong-password")
    final = client.next(server.evaluate(client.first()))
    assert final is not None
    with pytest.raises(SaslAuthenticationFailedError) as failure:
        server.evaluate(final)
    assert "wrong-password" not in str(failure.value)
    assert "invalid credentials" in str(failure.value)
    unknown = ScramServer(SHA256, lambda _m, _u: None)
    with pytest.raises(SaslAuthenticationFailedError):
        unknown.evaluate(b"n,,n=nobody,r=abc")


def test_tampered_nonce_is_refused() -> None:
    credential = make_credential(SHA256, "pw", 4096)
    server = ScramServer(SHA256, lambda _m, _u: credential)
    server.evaluate(b"n,,n=u,r=abc")
    with pytest.raises(SaslAuthenticationFailedError, match="nonce"):
        server.evaluate(b"c=biws,r=other,p=AAAA")


def test_plain_users_from_kafka_jaas() -> None:
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-secret" user_admin="admin-secret" '
        'user_alice="al\\"ice";'
    )
    module, options = parse_jaas(jaas)
    assert module == "org.apache.kafka.common.security.plain.PlainLoginModule"
    assert options["username"] == "admin"
    assert plain_users(jaas) == {"admin": "admin-secret", "alice": 'al"ice'}


def test_plain_server() -> None:
    server = PlainServer({"alice": "pw"})
    assert server.evaluate(b"\x00alice\x00pw") == b""
    assert server.principal == "User:alice"
    with pytest.raises(SaslAuthenticationFailedError, match="Invalid username or password"):
        PlainServer({"alice": "pw"}).evaluate(b"\x00alice\x00nope")
    with pytest.raises(SaslAuthenticationFailedError, match="authorization id"):
        PlainServer({"alice": "pw"}).evaluate(b"bob\x00alice\x00pw")
    with pytest.raises(SaslAuthenticationFailedError):
        PlainServer({"alice": "pw"}).evaluate(b"garbage")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=200), min_size=1, max_size=3))
def test_hostile_tokens_only_fail_authentication(tokens: list[bytes]) -> None:
    """Whatever a client sends, the SASL servers answer or refuse; nothing else escapes."""
    credential = make_credential(SHA256, "pw", 4096, salt=b"salt")
    servers = [ScramServer(SHA256, lambda _m, _u: credential), PlainServer({"u": "pw"})]
    for server in servers:
        try:
            for token in tokens:
                server.evaluate(token)
        except SaslAuthenticationFailedError:
            pass


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60), st.text(max_size=60))
def test_hostile_scram_text_only_fails_authentication(first: str, final: str) -> None:
    credential = make_credential(SHA256, "pw", 4096, salt=b"salt")
    server = ScramServer(SHA256, lambda _m, _u: credential)
    try:
        server.evaluate(f"n,,n=u,r={first}".encode())
        server.evaluate(final.encode())
    except SaslAuthenticationFailedError:
        pass
    assert not server.complete
