"""Listener, TLS and SASL broker configs changed at run time (IncrementalAlterConfigs on the
broker, as ``kafka-configs --entity-type brokers --entity-name 1 --alter``), used at once by
a real broker: a listener added is bound and served, one removed is closed, a rotated TLS
key store holds for new connections, new SASL users authenticate."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer

from coordinator.launcher import LocalBroker
from producer.admin import Admin
from tests.kafka_wire import WireClient
from tests.security_certs import CertFiles, make_certs
from txn.errors import ErrorCode

BROKER = 4
PLAIN_JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required {users};"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _round_trip(bootstrap: str, security: dict[str, str], topic: str) -> list[bytes]:
    common = {"bootstrap.servers": bootstrap, **security}
    producer = Producer({**common, "message.timeout.ms": 15000})
    producer.produce(topic, b"hello")
    assert producer.flush(20) == 0
    consumer = Consumer({**common, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    for _ in range(60):
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value() or b"")
            break
    consumer.close()
    return got


def _refused(bootstrap: str, security: dict[str, str]) -> bool:
    errors: list[KafkaError] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            **security,
            "error_cb": errors.append,
            "reconnect.backoff.max.ms": 200,
        }
    )
    metadata_failed = False
    try:
        producer.list_topics(timeout=4)
    except Exception:
        metadata_failed = True
    return metadata_failed or bool(errors)


def _alter(admin: Admin, configs: dict[str, str], delete: list[str] | None = None) -> None:
    result = admin.incremental_alter_configs(BROKER, "1", configs, delete)
    assert result.error == ErrorCode.NONE, result.message


def test_a_listener_added_and_removed_at_run_time(tmp_path: Path) -> None:
    with LocalBroker(data_dir=tmp_path / "d") as b:
        extra = f"127.0.0.1:{_free_port()}"
        with Admin({"bootstrap.servers": b.bootstrap_servers}) as admin:
            # a listener with no security protocol is refused, nothing is bound
            refused = admin.incremental_alter_configs(
                BROKER, "1", {"listeners": f"PLAINTEXT://{b.bootstrap_servers},EXTRA://{extra}"}
            )
            assert refused.error == ErrorCode.INVALID_REQUEST
            assert "No security protocol defined for listener EXTRA" in (refused.message or "")
            assert _refused(extra, {})
            _alter(
                admin,
                {
                    "listeners": f"PLAINTEXT://{b.bootstrap_servers},EXTRA://{extra}",
                    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTRA:PLAINTEXT",
                },
            )
            # served at once; Metadata over it tells the new listener's address
            assert _round_trip(extra, {}, "over-extra") == [b"hello"]
            probe = Producer({"bootstrap.servers": extra})
            brokers = probe.list_topics(timeout=10).brokers
            assert [f"{x.host}:{x.port}" for x in brokers.values()] == [extra]
            _alter(admin, {"listeners": f"PLAINTEXT://{b.bootstrap_servers}"})
            assert _refused(extra, {})
            # the first listener was never disturbed
            assert _round_trip(b.bootstrap_servers, {}, "over-plain") == [b"hello"]


def _tls(certs: CertFiles) -> dict[str, str]:
    return {"security.protocol": "SSL", "ssl.ca.location": str(certs.ca)}


def test_a_rotated_key_store_holds_for_new_connections(tmp_path: Path) -> None:
    old, new = make_certs(tmp_path / "old"), make_certs(tmp_path / "new")
    config = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(old.server_keystore),
    }
    with LocalBroker(data_dir=tmp_path / "d", config=config) as b:
        ssl_addr = b.listener_bootstrap("SSL")
        assert _round_trip(ssl_addr, _tls(old), "before") == [b"hello"]
        kept = Producer({"bootstrap.servers": ssl_addr, **_tls(old)})
        kept.produce("before", b"kept")
        assert kept.flush(20) == 0
        with Admin({"bootstrap.servers": b.listener_bootstrap("PLAINTEXT")}) as admin:
            # a key store that cannot be loaded is refused, the old one stays
            bad = admin.incremental_alter_configs(
                BROKER, "1", {"listener.name.ssl.ssl.keystore.location": str(tmp_path / "no")}
            )
            assert bad.error == ErrorCode.INVALID_REQUEST
            assert (bad.message or "").startswith(
                "Validation of dynamic config update of listener SSL failed"
            )
            assert _round_trip(ssl_addr, _tls(old), "still-old") == [b"hello"]
            _alter(admin, {"listener.name.ssl.ssl.keystore.location": str(new.server_keystore)})
        # new connections get the new certificate: clients trusting only the old CA refuse it
        assert _round_trip(ssl_addr, _tls(new), "after") == [b"hello"]
        assert _refused(ssl_addr, _tls(old))
        # the connection opened before the rotation keeps going
        kept.produce("before", b"still")
        assert kept.flush(20) == 0
        # rewritten in place, then set again to the same path: loaded again (as Kafka)
        new.server_keystore.write_bytes(old.server_keystore.read_bytes())
        with Admin({"bootstrap.servers": b.listener_bootstrap("PLAINTEXT")}) as admin:
            _alter(admin, {"listener.name.ssl.ssl.keystore.location": str(new.server_keystore)})
        assert _round_trip(ssl_addr, _tls(old), "in-place") == [b"hello"]


def test_sasl_users_and_mechanisms_changed_at_run_time(tmp_path: Path) -> None:
    config = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS.format(
            users='user_alice="alice-secret"'
        ),
    }

    def plain(user: str, password: str) -> dict[str, str]:
        return {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": user,
            "sasl.password": password,
        }

    with LocalBroker(data_dir=tmp_path / "d", config=config) as b:
        sasl_addr = b.listener_bootstrap("SASL_PLAINTEXT")
        assert _refused(sasl_addr, plain("bob", "bob-secret"))
        with Admin({"bootstrap.servers": b.listener_bootstrap("PLAINTEXT")}) as admin:
            jaas = PLAIN_JAAS.format(users='user_alice="alice-secret" user_bob="bob-secret"')
            _alter(admin, {"listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas})
            assert _round_trip(sasl_addr, plain("bob", "bob-secret"), "bob") == [b"hello"]
            # PLAIN no longer enabled on the listener: its users are refused
            _alter(admin, {"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "SCRAM-SHA-256"})
            assert _refused(sasl_addr, plain("alice", "alice-secret"))


def test_a_listener_added_at_run_time_is_bound_again_after_a_restart(tmp_path: Path) -> None:
    extra = f"127.0.0.1:{_free_port()}"
    with (
        LocalBroker(data_dir=tmp_path / "d") as b,
        Admin({"bootstrap.servers": b.bootstrap_servers}) as admin,
    ):
        _alter(
            admin,
            {
                "listeners": f"PLAINTEXT://{b.bootstrap_servers},EXTRA://{extra}",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTRA:PLAINTEXT",
            },
        )
    # the dynamic configs are replayed from the metadata log when the broker starts
    with LocalBroker(data_dir=tmp_path / "d"):
        assert _round_trip(extra, {}, "after-restart") == [b"hello"]


def test_a_listener_connection_limit_set_at_run_time(tmp_path: Path) -> None:
    """``listener.name.<listener>.max.connections`` of a listener added at run time: its
    clients wait once it is reached (Kafka's acceptor)."""
    extra = f"127.0.0.1:{_free_port()}"
    with (
        LocalBroker(data_dir=tmp_path / "d") as b,
        Admin({"bootstrap.servers": b.bootstrap_servers}) as admin,
    ):
        _alter(
            admin,
            {
                "listeners": f"PLAINTEXT://{b.bootstrap_servers},EXTRA://{extra}",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTRA:PLAINTEXT",
                "listener.name.extra.max.connections": "1",
            },
        )
        first = WireClient(extra)
        assert int(first.request(18, 3, {"client_software_name": "t"}).error_code) == 0
        waiting = WireClient(extra)
        waiting.send_raw(waiting.encode(18, 3, {"client_software_name": "t"}))
        waiting.sock.settimeout(0.5)
        with pytest.raises(TimeoutError):
            waiting.sock.recv(4)
        first.close()
        waiting.sock.settimeout(10)
        assert waiting.recv_frame()
        waiting.close()
