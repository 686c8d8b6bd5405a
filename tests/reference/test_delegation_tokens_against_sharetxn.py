"""Kafka 4.4's ``kafka-delegation-tokens.sh`` and a Java client logging in with a token
(ScramLoginModule ``tokenauth="true"``), against a sharetxn broker with a SASL_PLAINTEXT
SCRAM listener and ``delegation.token.secret.key`` (KIP-48, KIP-373)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from coordinator.launcher import LocalBroker
from tests.reference.kafka import java_available, run_tool

pytestmark = pytest.mark.reference

TOKENS = "org.apache.kafka.tools.DelegationTokenCommand"  # bin/kafka-delegation-tokens.sh
SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule required"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    if not java_available():
        pytest.skip("Kafka's tools need a Java runtime: java is not on PATH")
    config = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "delegation.token.secret.key": "reference-secret",
    }
    users = [
        "--add-scram",
        "SCRAM-SHA-256=[name=alice,password=alice-secret]",
        "--add-scram",
        "SCRAM-SHA-256=[name=bob,password=bob-secret]",
    ]
    data = tmp_path_factory.mktemp("tokens") / "data"
    with LocalBroker(data_dir=data, config=config, extra_args=users) as b:
        yield b


def _properties(directory: Path, name: str, mechanism: str, jaas: str) -> Path:
    path = directory / f"{name}.properties"
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        f"sasl.mechanism={mechanism}\n"
        f"sasl.jaas.config={SCRAM_LOGIN} {jaas};\n"
    )
    return path


def _user(directory: Path, user: str) -> Path:
    return _properties(
        directory, user, "SCRAM-SHA-256", f'username="{user}" password="{user}-secret"'
    )


def _tool(
    main: str, broker: LocalBroker, config: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    bootstrap = broker.listener_bootstrap("SASL_PLAINTEXT")
    return run_tool(
        main, ["--bootstrap-server", bootstrap, "--command-config", str(config), *args], timeout=120
    )


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr[-3000:]}"
    return done.stdout


def _token_rows(output: str) -> list[list[str]]:
    """The rows under the TOKENID header of the tool's table."""
    lines = [line.split() for line in output.splitlines() if line.strip()]
    start = next(i for i, row in enumerate(lines) if row and row[0] == "TOKENID")
    return lines[start + 1 :]


def test_kafka_delegation_tokens_and_a_java_client_with_a_token(
    broker: LocalBroker, tmp_path: Path
) -> None:
    alice, bob = _user(tmp_path, "alice"), _user(tmp_path, "bob")
    created = _ok(
        _tool(
            TOKENS,
            broker,
            alice,
            "--create",
            "--max-life-time-period",
            "-1",
            "--renewer-principal",
            "User:bob",
        )
    )
    assert "Created delegation token with tokenId" in created
    ((token_id, hmac, owner, requester, renewers, *_dates),) = _token_rows(created)
    assert (owner, requester, renewers) == ("User:alice", "User:alice", "[User:bob]")
    described = _ok(_tool(TOKENS, broker, bob, "--describe", "--owner-principal", "User:alice"))
    assert [row[0] for row in _token_rows(described)] == [token_id]
    # kafka-delegation-tokens.sh --describe without an owner sends an empty owner list, which
    # Kafka's broker answers with no tokens; sharetxn does the same.
    assert "Total number of tokens : 0" in _ok(_tool(TOKENS, broker, alice, "--describe"))
    renewed = _ok(
        _tool(TOKENS, broker, bob, "--renew", "--hmac", hmac, "--renew-time-period", "-1")
    )
    assert "Completed renew operation" in renewed
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        with_token = _properties(
            tmp_path,
            f"token-{mechanism}",
            mechanism,
            f'username="{token_id}" password="{hmac}" tokenauth="true"',
        )
        topic = f"by-token-{mechanism[-3:]}"
        _ok(_tool("kafka-topics", broker, with_token, "--create", "--topic", topic))
        assert topic in _ok(_tool("kafka-topics", broker, with_token, "--list"))
        refused = _tool(TOKENS, broker, with_token, "--describe", "--owner-principal", "User:alice")
        assert refused.returncode != 0
        assert "UnsupportedByAuthenticationException" in refused.stderr, refused.stderr[-2000:]
    by_bob = _ok(_tool(TOKENS, broker, bob, "--create", "--max-life-time-period", "-1"))
    bobs = _token_rows(by_bob)[0][1]
    mismatch = _tool(
        TOKENS, broker, alice, "--expire", "--hmac", bobs, "--expiry-time-period", "-1"
    )
    assert "DelegationTokenOwnerMismatchException" in mismatch.stderr, mismatch.stderr[-2000:]
    expired = _ok(
        _tool(TOKENS, broker, alice, "--expire", "--hmac", hmac, "--expiry-time-period", "-1")
    )
    assert "Completed expire operation" in expired
    gone = _tool("kafka-topics", broker, with_token, "--list")
    assert gone.returncode != 0 and "invalid credentials" in gone.stdout + gone.stderr
