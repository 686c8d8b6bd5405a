"""SASL/OAUTHBEARER and KIP-368 re-authentication end to end: librdkafka and our clients.

The broker is a real process; tokens are unsecured JWTs (the broker's default validator)
or JWTs signed by keys the test makes, whose JWKS is a file (KIP-768's validator).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer

from coordinator.launcher import LocalBroker
from producer.admin import Admin, TopicSpec
from producer.produce.transactional_producer import TransactionalProducer
from producer.protocol.oauth import initial_response, unsecured_jwt
from tests.kafka_wire import WireClient
from tests.oauth_tokens import Signer, claims, write_jwks
from txn.api_keys import ApiKey
from txn.errors import SaslAuthenticationFailedError

pytestmark = pytest.mark.integration

OAUTH_JAAS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
    'unsecuredLoginStringClaim_sub="admin";'
)
SECURED_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"


def oauth_config(**extra: str) -> dict[str, str]:
    return {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": OAUTH_JAAS,
        **extra,
    }


def unsecured(principal: str, life_s: int = 3600, **extra: Any) -> dict[str, Any]:
    """librdkafka's unsecured JWT settings."""
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "enable.sasl.oauthbearer.unsecure.jwt": True,
        "sasl.oauthbearer.config": f"principal={principal} lifeSeconds={life_s}",
        **extra,
    }


class _Captured(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def produce_for(bootstrap: str, security: dict[str, Any], topic: str, seconds: float) -> list[Any]:
    """Produce one record every 0.25 s for ``seconds``; the errors librdkafka reported."""
    errors: list[Any] = []
    p = Producer(
        {"bootstrap.servers": bootstrap, "error_cb": errors.append, "message.timeout.ms": 10000}
        | security
    )
    delivered: list[Any] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        p.produce(topic, b"v", on_delivery=lambda err, _msg: delivered.append(err))
        p.poll(0.25)
    assert p.flush(15) == 0
    assert delivered and all(err is None for err in delivered), delivered
    return errors


def consume_one(bootstrap: str, security: dict[str, Any], topic: str) -> bytes | None:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
            **security,
        }
    )
    c.subscribe([topic])
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is not None and msg.error() is None:
                return bytes(msg.value())
        return None
    finally:
        c.close()


def test_librdkafka_unsecured_jwt_and_reauthentication(tmp_path: Path) -> None:
    """A 2 s session: librdkafka re-authenticates (KIP-368) and is never disconnected."""
    config = oauth_config(**{"connections.max.reauth.ms": "2000"})
    with LocalBroker(data_dir=tmp_path / "d", config=config) as broker:
        bootstrap = broker.bootstrap_servers
        logs = _Captured()
        logger = logging.getLogger("rdkafka-reauth")
        logger.setLevel(logging.DEBUG)
        logger.addHandler(logs)
        security = unsecured("alice", logger=logger, debug="security")
        errors = produce_for(bootstrap, security, "reauth", 5.5)
        assert errors == []
        assert any("Received session lifetime 2000 ms" in m for m in logs.lines), logs.lines[:5]
        assert any("Auth in state REAUTH" in m for m in logs.lines)
        assert not [m for m in logs.lines if "Disconnected" in m]
        assert consume_one(bootstrap, unsecured("alice"), "reauth") == b"v"


def test_librdkafka_token_refused_by_required_scope(tmp_path: Path) -> None:
    jaas = OAUTH_JAAS.rstrip(";") + ' unsecuredValidatorRequiredScope="kafka";'
    config = oauth_config(**{"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": jaas})
    with LocalBroker(data_dir=tmp_path / "d", config=config) as broker:
        errors: list[KafkaError] = []
        p = Producer(
            {"bootstrap.servers": broker.bootstrap_servers, "error_cb": errors.append}
            | unsecured("alice")
        )
        p.produce("refused", b"x")
        p.flush(5)
        assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
        assert "insufficient_scope" in " ".join(e.str() for e in errors)
        assert broker.wait_for_output("Failed authentication")


def test_librdkafka_oauth_cb_with_signed_jwt_and_our_clients(tmp_path: Path) -> None:
    """KIP-768 validator (a JWKS file): librdkafka's oauth_cb and our token file."""
    signer = Signer("ES256", "ec-1")
    jwks = write_jwks(tmp_path / "jwks.json", signer, Signer("RS256", "rsa-1"))
    prefix = "listener.name.sasl_plaintext.oauthbearer."
    config = oauth_config(
        **{
            f"{prefix}sasl.server.callback.handler.class": SECURED_HANDLER,
            "sasl.oauthbearer.jwks.endpoint.url": jwks,
            "sasl.oauthbearer.expected.audience": "kafka",
        }
    )

    def token(_config: str) -> tuple[str, float]:
        body = claims("svc-a", 3600, aud="kafka")
        return signer.sign(body), float(body["exp"])

    stock = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER"}
    with LocalBroker(data_dir=tmp_path / "d", config=config) as broker:
        bootstrap = broker.bootstrap_servers
        assert produce_for(bootstrap, stock | {"oauth_cb": token}, "signed", 0.5) == []
        token_file = tmp_path / "token.jwt"
        token_file.write_text(signer.sign(claims("svc-b", 3600, aud="kafka")))
        ours = stock | {"sasl.oauthbearer.token.endpoint.url": token_file.as_uri()}
        with Admin({"bootstrap.servers": bootstrap, **ours}) as admin:
            admin.create_topics([TopicSpec("ours", 1)])
        producer = TransactionalProducer(
            {"bootstrap.servers": bootstrap, "transactional.id": "svc-b-tx", **ours}
        )
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("ours", b"v")
        producer.commit_transaction()
        producer.close()
        token_file.write_text(signer.sign(claims("svc-b", 3600, aud="other")))
        wrong = TransactionalProducer({"bootstrap.servers": bootstrap, **ours})
        with pytest.raises(SaslAuthenticationFailedError, match="invalid_token"):
            wrong.send("ours", b"v").result(10)
        wrong.close()


def test_our_clients_reauthenticate_and_a_silent_connection_is_closed(tmp_path: Path) -> None:
    config = oauth_config(**{"connections.max.reauth.ms": "1500"})
    ours = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.jaas.config": OAUTH_JAAS.replace('"admin"', '"carol"'),
    }
    with LocalBroker(data_dir=tmp_path / "d", config=config) as broker:
        bootstrap = broker.bootstrap_servers
        with Admin({"bootstrap.servers": bootstrap, **ours}) as admin:
            admin.create_topics([TopicSpec("long", 1)])
            for _ in range(4):
                time.sleep(0.8)
                assert "long" in admin.list_topics()
        # Our connections re-authenticated: the broker closed none of them.
        assert not broker.wait_for_output("SASL session ended", timeout_s=0.5)
        # A connection that authenticates and then does not re-authenticate in time.
        raw = WireClient(bootstrap)
        raw.request(
            ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}
        )
        raw.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"})
        now = int(time.time())
        jwt = unsecured_jwt({"sub": "dave", "iat": now, "exp": now + 3600})
        resp = raw.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": initial_response(jwt, {})})
        assert resp.session_lifetime.total_seconds() == 1.5
        time.sleep(1.7)
        with pytest.raises((ConnectionError, OSError, AssertionError)):
            raw.request(
                ApiKey.API_VERSIONS,
                3,
                {"client_software_name": "t", "client_software_version": "1"},
            )
        raw.close()
        assert broker.wait_for_output("SASL session ended")
