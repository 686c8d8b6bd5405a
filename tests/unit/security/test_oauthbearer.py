"""SASL/OAUTHBEARER on the broker: the client's message, both validators, the JSON errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from coordinator.security.jwt import JwksSource, JwtValidator
from coordinator.security.oauthbearer import (
    GENERIC_FAILURE,
    OAuthBearerServer,
    SecuredValidator,
    UnsecuredValidator,
    parse_initial_response,
)
from coordinator.security.scram import SaslAuthenticationFailedError
from producer.protocol.oauth import initial_response, jwt_expiry_ms, unsecured_jwt
from tests.oauth_tokens import Signer, claims, write_jwks
from txn.errors import InvalidConfigError

NOW_S = 1_700_000_000
NOW_MS = NOW_S * 1000


def server(validator: UnsecuredValidator | SecuredValidator) -> OAuthBearerServer:
    return OAuthBearerServer(validator, lambda: NOW_MS)


def test_the_client_message_as_kafka_writes_it() -> None:
    message = initial_response("a.b.", {"traceId": "123"})
    assert message == b"n,,\x01auth=Bearer a.b.\x01traceId=123\x01\x01"
    parsed = parse_initial_response(message)
    assert (parsed.token, parsed.extensions, parsed.authzid) == ("a.b.", {"traceId": "123"}, "")
    assert parse_initial_response(b"n,a=al=2Cice,\x01auth=bearer x.y.\x01\x01").authzid == "al,ice"


@pytest.mark.parametrize(
    "message",
    [
        b"",
        b"n,,auth=Bearer x.y.",  # RFC 7628 needs %x01 separators
        b"n,,\x01auth=Basic x.y.\x01\x01",
        b"n,,\x01auth=Bearer x y\x01\x01",
        b"n,,\x01traceId=1\x01\x01",  # no auth
        b"y,,\x01auth=Bearer x.y.\x01\x01",
        b"\xff\xfe",
    ],
)
def test_malformed_client_messages_fail_with_kafkas_generic_message(message: bytes) -> None:
    with pytest.raises(SaslAuthenticationFailedError) as info:
        server(UnsecuredValidator({})).evaluate(message)
    assert str(info.value) == GENERIC_FAILURE


def test_unsecured_token_authenticates_its_subject() -> None:
    s = server(UnsecuredValidator({}))
    token = unsecured_jwt(claims("alice", now_s=NOW_S))
    assert s.evaluate(initial_response(token, {})) == b""
    assert s.complete and s.principal == "User:alice"
    assert s.credential_expiry_ms == NOW_MS + 3_600_000


def test_unsecured_principal_claim_option() -> None:
    s = server(UnsecuredValidator({"unsecuredValidatorPrincipalClaimName": "client_id"}))
    token = unsecured_jwt({"client_id": "svc", "exp": NOW_S + 60})
    s.evaluate(initial_response(token, {}))
    assert s.principal == "User:svc"


@pytest.mark.parametrize(
    ("token_claims", "options"),
    [
        ({"exp": NOW_S + 60}, {}),  # no sub
        ({"sub": "alice"}, {}),  # no exp
        ({"sub": "alice", "exp": NOW_S - 1}, {}),  # expired
        ({"sub": "alice", "exp": NOW_S + 60, "iat": NOW_S + 30}, {}),  # issued in the future
        ({"sub": 7, "exp": NOW_S + 60}, {}),
    ],
)
def test_refused_unsecured_tokens_get_the_json_error_then_fail(
    token_claims: dict[str, object], options: dict[str, str]
) -> None:
    s = server(UnsecuredValidator(options))
    challenge = s.evaluate(initial_response(unsecured_jwt(token_claims), {}))
    assert challenge == b'{"status":"invalid_token"}'
    assert not s.complete
    with pytest.raises(SaslAuthenticationFailedError, match=r'^\{"status":"invalid_token"\}$'):
        s.evaluate(b"\x01")


def test_clock_skew_option_accepts_a_just_expired_token() -> None:
    token = unsecured_jwt({"sub": "alice", "exp": NOW_S - 1})
    s = server(UnsecuredValidator({"unsecuredValidatorAllowableClockSkewMs": "5000"}))
    assert s.evaluate(initial_response(token, {})) == b""
    with pytest.raises(InvalidConfigError):
        UnsecuredValidator({"unsecuredValidatorAllowableClockSkewMs": "-1"})


def test_required_scope_is_insufficient_scope_with_the_scope_named() -> None:
    validator = UnsecuredValidator({"unsecuredValidatorRequiredScope": "read write"})
    token = unsecured_jwt({"sub": "alice", "exp": NOW_S + 60, "scope": ["read"]})
    s = server(validator)
    challenge = s.evaluate(initial_response(token, {}))
    assert json.loads(challenge) == {"status": "insufficient_scope", "scope": "[read, write]"}
    assert challenge == b'{"status":"insufficient_scope", "scope":"[read, write]"}'
    ok = unsecured_jwt({"sub": "alice", "exp": NOW_S + 60, "scope": "write read"})
    assert server(validator).evaluate(initial_response(ok, {})) == b""


def test_authzid_must_be_the_tokens_principal() -> None:
    token = unsecured_jwt(claims("alice", now_s=NOW_S))
    message = initial_response(token, {}, authzid="bob")
    with pytest.raises(SaslAuthenticationFailedError, match="different from the token's"):
        server(UnsecuredValidator({})).evaluate(message)
    s = server(UnsecuredValidator({}))
    s.evaluate(initial_response(token, {}, authzid="alice"))
    assert s.principal == "User:alice"


@pytest.fixture
def signers() -> tuple[Signer, Signer]:
    return Signer("RS256", "rsa1"), Signer("ES256", "ec1")


def secured(tmp_path: Path, *signers: Signer, **kwargs: object) -> SecuredValidator:
    url = write_jwks(tmp_path / "jwks.json", *signers)
    options: dict[str, object] = {
        "audience": [],
        "issuer": None,
        "sub_claim": "sub",
        "scope_claim": "scope",
        "clock_skew_s": 30,
        **kwargs,
    }
    return SecuredValidator(JwtValidator(JwksSource(url, 3_600_000), **options))  # type: ignore[arg-type]


def test_signed_tokens_of_the_jwks_keys_authenticate(
    tmp_path: Path, signers: tuple[Signer, Signer]
) -> None:
    validator = secured(tmp_path, *signers)
    for signer in signers:
        s = server(validator)
        token = signer.sign(claims("carol", now_s=NOW_S))
        assert s.evaluate(initial_response(token, {})) == b""
        assert s.principal == "User:carol"
        assert jwt_expiry_ms(token) == s.credential_expiry_ms == NOW_MS + 3_600_000


def test_signed_tokens_refused(tmp_path: Path, signers: tuple[Signer, Signer]) -> None:
    rsa_signer, ec_signer = signers
    validator = secured(tmp_path, rsa_signer)
    stranger = Signer("RS256", "rsa1")  # same kid, another key
    refused = [
        stranger.sign(claims(now_s=NOW_S)),
        ec_signer.sign(claims(now_s=NOW_S)),  # kid not in the JWKS
        rsa_signer.sign(claims(now_s=NOW_S - 7200)),  # expired
        rsa_signer.sign({"sub": "alice", "exp": NOW_S + 60}),  # no iat
        rsa_signer.sign(claims(now_s=NOW_S, aud="kafka")),  # aud, but none expected
        rsa_signer.sign(claims(sub="", now_s=NOW_S)),
        unsecured_jwt(claims(now_s=NOW_S)),  # alg none
    ]
    for token in refused:
        s = server(validator)
        assert s.evaluate(initial_response(token, {})) == b'{"status":"invalid_token"}', token
        with pytest.raises(SaslAuthenticationFailedError):
            s.evaluate(b"\x01")


def test_audience_issuer_and_skew(tmp_path: Path) -> None:
    signer = Signer()
    validator = secured(tmp_path, signer, audience=["kafka"], issuer="https://idp", clock_skew_s=30)

    def accepted(**extra: object) -> bool:
        token = signer.sign(claims(now_s=NOW_S, **extra))
        return server(validator).evaluate(initial_response(token, {})) == b""

    assert accepted(aud="kafka", iss="https://idp")
    assert accepted(aud=["other", "kafka"], iss="https://idp")
    assert not accepted(aud="other", iss="https://idp")
    assert not accepted(iss="https://idp")  # no aud
    assert not accepted(aud="kafka", iss="https://evil")
    assert not accepted(aud="kafka", iss="https://idp", nbf=NOW_S + 60)
    assert accepted(aud="kafka", iss="https://idp", nbf=NOW_S + 20)  # within the skew
    just_expired = signer.sign(
        {"sub": "a", "iat": NOW_S - 100, "exp": NOW_S - 10, "aud": "kafka", "iss": "https://idp"}
    )
    assert server(validator).evaluate(initial_response(just_expired, {})) == b""


def test_the_jwks_file_is_read_again_when_it_changes(tmp_path: Path) -> None:
    first, second = Signer(kid="a"), Signer(kid="b")
    validator = secured(tmp_path, first)
    token = second.sign(claims(now_s=NOW_S))
    assert server(validator).evaluate(initial_response(token, {})) != b""
    write_jwks(tmp_path / "jwks.json", first, second)
    os.utime(tmp_path / "jwks.json", (NOW_S + 5, NOW_S + 5))
    assert server(validator).evaluate(initial_response(token, {})) == b""
