"""Delegation tokens (KIP-48) end to end: a real broker with a SASL_PLAINTEXT SCRAM listener.

A user creates a token, a client authenticates with it (SCRAM with the ``tokenauth=true``
extension: the token id as user name, the HMAC in base64 as password) and acts as the token's
owner; the token is renewed, described, expired, and outlives a restart.  librdkafka has no
SCRAM token support, so our client is the token client here (Kafka's Java tools:
tests/reference).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from coordinator.launcher import LocalBroker
from producer.admin import Admin, TopicSpec
from tests.sharetxn_cli import run_cli
from txn.errors import ErrorCode, SaslAuthenticationFailedError, error_for_code

pytestmark = pytest.mark.integration

NOT_ALLOWED = error_for_code(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
OWNER_MISMATCH = error_for_code(ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH)
DISABLED = error_for_code(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)

SCRAM_USERS = [
    "--add-scram",
    "SCRAM-SHA-256=[name=alice,password=alice-secret]",
    "--add-scram",
    "SCRAM-SHA-512=[name=bob,password=bob-secret]",
]
CONFIG = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
    "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT",
    "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
    "delegation.token.secret.key": "the-cluster-token-secret",
}


def scram(mechanism: str, user: str, password: str) -> dict[str, str]:
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def with_token(mechanism: str, token_id: str, hmac_b64: str) -> dict[str, str]:
    """A Java client's token settings: ScramLoginModule with tokenauth="true"."""
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{token_id}" password="{hmac_b64}" tokenauth="true";',
    }


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[LocalBroker]:
    with LocalBroker(data_dir=tmp_path / "data", config=CONFIG, extra_args=SCRAM_USERS) as b:
        yield b


def _sasl_bootstrap(b: LocalBroker) -> str:
    return b.listener_bootstrap("SASL_PLAINTEXT")


def test_token_lifecycle_and_authentication(broker: LocalBroker) -> None:
    bootstrap = _sasl_bootstrap(broker)
    alice = scram("SCRAM-SHA-256", "alice", "alice-secret")
    with Admin({"bootstrap.servers": bootstrap, **alice}) as admin:
        token = admin.create_delegation_token(renewers=["User:bob"])
        assert token.owner == "User:alice" and token.requester == "User:alice"
        assert len(token.hmac) == 64  # HmacSHA512
        assert token.expiry_timestamp_ms - token.issue_timestamp_ms == 86_400_000
        assert token.max_timestamp_ms - token.issue_timestamp_ms == 7 * 86_400_000
        (described,) = admin.describe_delegation_tokens()
        assert described.token_id == token.token_id and described.hmac == token.hmac
        assert described.renewers == ("User:bob",)
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        security = with_token(mechanism, token.token_id, token.hmac_base64)
        with Admin({"bootstrap.servers": bootstrap, **security}) as as_token:
            as_token.create_topics([TopicSpec(f"by-token-{mechanism[-3:]}", 1)])
            # A token-authenticated connection may not manage tokens (Kafka's rule).
            with pytest.raises(NOT_ALLOWED):
                as_token.describe_delegation_tokens()
    bob = scram("SCRAM-SHA-512", "bob", "bob-secret")
    with Admin({"bootstrap.servers": bootstrap, **bob}) as admin:
        assert [t.token_id for t in admin.describe_delegation_tokens()] == [token.token_id]
        assert admin.renew_delegation_token(token.hmac, 60_000) > token.issue_timestamp_ms
        mine = admin.create_delegation_token()
        assert [t.token_id for t in admin.describe_delegation_tokens(["User:alice"])] == [
            token.token_id
        ]
    with Admin({"bootstrap.servers": bootstrap, **alice}) as admin:
        with pytest.raises(OWNER_MISMATCH):
            admin.expire_delegation_token(mine.hmac, -1)
        # Without an authorizer every token may be described (Kafka: no authorizer allows).
        seen = {t.token_id for t in admin.describe_delegation_tokens()}
        assert seen == {token.token_id, mine.token_id}
    broker.restart()
    bootstrap = _sasl_bootstrap(broker)
    security = with_token("SCRAM-SHA-512", token.token_id, token.hmac_base64)
    with Admin({"bootstrap.servers": bootstrap, **security}) as as_token:
        assert "by-token-256" in as_token.list_topics()
    with Admin({"bootstrap.servers": bootstrap, **alice}) as admin:
        admin.expire_delegation_token(token.hmac, -1)
        assert [t.token_id for t in admin.describe_delegation_tokens()] == [mine.token_id]
    with (
        pytest.raises(SaslAuthenticationFailedError),
        Admin({"bootstrap.servers": bootstrap, **security}) as as_token,
    ):
        as_token.list_topics()


def test_plaintext_connections_may_not_manage_tokens(broker: LocalBroker) -> None:
    with (
        Admin(broker.listener_bootstrap("PLAINTEXT")) as admin,
        pytest.raises(NOT_ALLOWED),
    ):
        admin.create_delegation_token()


def test_disabled_without_a_secret_key(tmp_path: Path) -> None:
    config = {k: v for k, v in CONFIG.items() if k != "delegation.token.secret.key"}
    with LocalBroker(data_dir=tmp_path / "d", config=config, extra_args=SCRAM_USERS) as b:
        alice = scram("SCRAM-SHA-256", "alice", "alice-secret")
        with Admin({"bootstrap.servers": _sasl_bootstrap(b), **alice}) as admin:
            with pytest.raises(DISABLED):
                admin.create_delegation_token()
            with pytest.raises(DISABLED):
                admin.describe_delegation_tokens()


def test_cli_like_kafka_delegation_tokens(broker: LocalBroker, tmp_path: Path) -> None:
    alice = tmp_path / "alice.properties"
    alice.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
        "sasl.username=alice\nsasl.password=alice-secret\n"
    )
    bootstrap = ("--bootstrap-server", _sasl_bootstrap(broker), "--command-config", str(alice))

    def tokens(*args: str) -> subprocess.CompletedProcess[str]:
        return run_cli("delegation-tokens", *bootstrap, *args, timeout=60)

    plan = tokens("--create", "--renewer-principal", "User:bob", "--json")
    assert plan.returncode == 0, plan.stderr
    assert json.loads(plan.stdout)[0]["renewers"] == "User:bob"
    assert json.loads(tokens("--describe", "--json").stdout) == []  # the plan created nothing
    created = tokens("--create", "--renewer-principal", "User:bob", "--execute", "--json")
    assert created.returncode == 0, created.stderr
    token = json.loads(created.stdout)
    assert token["owner"] == "User:alice" and token["renewers"] == "User:bob"
    (described,) = json.loads(
        tokens("--describe", "--owner-principal", "User:alice", "--json").stdout
    )
    assert described["token_id"] == token["token_id"]
    renewed = tokens(
        "--renew", "--hmac", token["hmac"], "--renew-time-period", "60000", "--execute"
    )
    assert renewed.returncode == 0 and "Completed renew operation" in renewed.stdout
    expired = tokens("--expire", "--hmac", token["hmac"], "--execute", "--json")
    assert expired.returncode == 0 and json.loads(expired.stdout)["operation"] == "expire"
    again = tokens("--expire", "--hmac", token["hmac"], "--execute")
    assert again.returncode == 66 and "DELEGATION_TOKEN_NOT_FOUND" in again.stderr
    usage = tokens("--renew")
    assert usage.returncode == 64 and "--hmac" in usage.stderr
    plaintext = run_cli(
        "delegation-tokens",
        "--bootstrap-server",
        broker.listener_bootstrap("PLAINTEXT"),
        "--describe",
        timeout=60,
    )
    assert plaintext.returncode == 1 and "REQUEST_NOT_ALLOWED" in plaintext.stderr
