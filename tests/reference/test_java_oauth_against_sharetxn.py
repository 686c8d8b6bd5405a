"""Apache Kafka 4.4's Java clients against sharetxn over SASL/OAUTHBEARER (KIP-255/768/368).

The clients are Kafka's tools run as their Java main classes: the console producer and
consumer with the unsecured JWT login module, then with a signed JWT read from a file
(``sasl.oauthbearer.token.endpoint.url=file:...``) that the broker checks against a JWKS
file; the producer perf test holds its connection across several short sessions
(``connections.max.reauth.ms``) and must re-authenticate instead of being disconnected.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from coordinator.launcher import LocalBroker
from tests.oauth_tokens import Signer, claims, write_jwks
from tests.reference.kafka import java_available, run_tool

pytestmark = pytest.mark.reference

UNSECURED_LOGIN = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
    'unsecuredLoginStringClaim_sub="{sub}";'
)
SECURED_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"


@pytest.fixture(autouse=True)
def _java() -> None:
    if not java_available():
        pytest.skip("Kafka's tools need a Java runtime: java is not on PATH")


def broker_config(**extra: str) -> dict[str, str]:
    return {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": UNSECURED_LOGIN.format(
            sub="broker"
        ),
        **extra,
    }


def client_properties(path: Path, **settings: str) -> str:
    lines = [
        "security.protocol=SASL_PLAINTEXT",
        "sasl.mechanism=OAUTHBEARER",
        *(f"{key}={value}" for key, value in settings.items()),
    ]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def tool(name: str, *args: str, stdin: str | None = None) -> str:
    done = run_tool(name, list(args), input=stdin, timeout=120)
    assert done.returncode == 0, f"{name} {' '.join(args)}\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def produce_then_consume(bootstrap: str, config: str) -> list[str]:
    topic = f"oauth-{uuid.uuid4().hex[:8]}"
    tool(
        "kafka-console-producer",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--command-config",
        config,
        stdin="a\nb\nc\n",
    )
    out = tool(
        "kafka-console-consumer",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--from-beginning",
        "--max-messages",
        "3",
        "--timeout-ms",
        "30000",
        "--command-config",
        config,
    )
    return [line for line in out.splitlines() if line in ("a", "b", "c")]


def test_console_clients_with_the_unsecured_login_module(tmp_path: Path) -> None:
    with LocalBroker(data_dir=tmp_path / "d", config=broker_config()) as broker:
        config = client_properties(
            tmp_path / "client.properties",
            **{"sasl.jaas.config": UNSECURED_LOGIN.format(sub="alice")},
        )
        assert produce_then_consume(broker.bootstrap_servers, config) == ["a", "b", "c"]


def test_console_clients_with_a_signed_jwt_and_a_jwks_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    signer = Signer("RS256", "rsa-key")
    jwks = write_jwks(tmp_path / "jwks.json", signer)
    token = tmp_path / "token.jwt"
    token.write_text(signer.sign(claims("svc", 3600, scope="kafka", aud="kafka")))
    # Kafka 4's clients read a token file only when its URL is allowed (a JVM property).
    monkeypatch.setenv(
        "JAVA_TOOL_OPTIONS",
        " ".join(
            filter(
                None,
                [
                    os.environ.get("JAVA_TOOL_OPTIONS"),
                    f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={token.as_uri()}",
                ],
            )
        ),
    )
    config = broker_config(
        **{
            "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": (
                SECURED_HANDLER
            ),
            "sasl.oauthbearer.jwks.endpoint.url": jwks,
            "sasl.oauthbearer.expected.audience": "kafka",
        }
    )
    with LocalBroker(data_dir=tmp_path / "d", config=config) as broker:
        client = client_properties(
            tmp_path / "client.properties",
            **{
                "sasl.jaas.config": (
                    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;"
                ),
                "sasl.login.callback.handler.class": (
                    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
                ),
                "sasl.oauthbearer.token.endpoint.url": token.as_uri(),
            },
        )
        assert produce_then_consume(broker.bootstrap_servers, client) == ["a", "b", "c"]
        token.write_text(Signer("RS256", "rsa-key").sign(claims("svc", 3600, aud="kafka")))
        refused = run_tool(
            "kafka-console-producer",
            [
                "--bootstrap-server",
                broker.bootstrap_servers,
                "--topic",
                "refused",
                "--command-config",
                client,
                "--command-property",
                "max.block.ms=5000",
            ],
            input="x\n",
            timeout=120,
        )
        assert "invalid_token" in refused.stdout + refused.stderr
        assert broker.wait_for_output("OAUTHBEARER token refused")


def test_producer_reauthenticates_on_its_connection(tmp_path: Path) -> None:
    """KIP-368: 2 s sessions over a 6 s run; no connection is closed for want of re-auth."""
    config = broker_config(**{"connections.max.reauth.ms": "2000"})
    with LocalBroker(data_dir=tmp_path / "d", config=config) as broker:
        client = client_properties(
            tmp_path / "client.properties",
            **{"sasl.jaas.config": UNSECURED_LOGIN.format(sub="alice")},
        )
        out = tool(
            "kafka-producer-perf-test",
            "--bootstrap-server",
            broker.bootstrap_servers,
            "--topic",
            "reauth",
            "--num-records",
            "48",
            "--record-size",
            "10",
            "--throughput",
            "8",
            "--command-config",
            client,
        )
        assert "48 records sent" in out
        assert not broker.wait_for_output("SASL session ended", timeout_s=1)
