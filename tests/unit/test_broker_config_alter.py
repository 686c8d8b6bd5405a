"""Alters of a BROKER resource, checked as Kafka checks them."""

from __future__ import annotations

from pathlib import Path

from coordinator.protocol.broker_config_alter import (
    broker_alter_refusal,
    java_hash_set_order,
    tls_store_refusal,
)
from coordinator.protocol.config_describe import describe_broker_configs
from tests.security_certs import make_certs
from txn.config import BrokerConfig
from txn.errors import ErrorCode

SET, DELETE, APPEND = 0, 1, 2


def test_resource_names() -> None:
    ops = [("message.max.bytes", SET, "1000")]
    assert broker_alter_refusal(1, "1", ops) == (ErrorCode.NONE, None)
    assert broker_alter_refusal(1, "", ops) == (ErrorCode.NONE, None)
    assert broker_alter_refusal(1, "2", ops) == (
        ErrorCode.INVALID_REQUEST,
        "Unexpected broker id, expected 1, but received 2",
    )


def test_read_only_values_and_operations() -> None:
    def check(*ops: tuple[str, int, str | None]) -> tuple[ErrorCode, str | None]:
        return broker_alter_refusal(1, "1", list(ops))

    assert check(("node.id", SET, "2"), ("broker.id", SET, "2")) == (
        ErrorCode.INVALID_REQUEST,
        "Cannot update these configs dynamically: [node.id, broker.id]",
    )
    assert check(("log.segment.bytes", SET, "100")) == (
        ErrorCode.INVALID_REQUEST,
        "Invalid value 100 for configuration log.segment.bytes: Value must be at least 1048576",
    )
    assert check(("message.max.bytes", APPEND, "1"))[0] == ErrorCode.INVALID_CONFIG
    assert check(("log.cleanup.policy", APPEND, "compact")) == (ErrorCode.NONE, None)
    assert check(("message.max.bytes", SET, None)) == (
        ErrorCode.INVALID_REQUEST,
        "Null value not supported for : message.max.bytes",
    )
    assert check(("no.such.config", SET, "x"), ("log.retention.ms", DELETE, None)) == (
        ErrorCode.NONE,
        None,
    )


def test_java_hash_set_order() -> None:
    assert java_hash_set_order(["num.partitions", "log.retention.hours"]) == [
        "log.retention.hours",
        "num.partitions",
    ]


def test_broker_description_marks_static_settings_and_read_only_ones() -> None:
    broker = BrokerConfig({"log.retention.check.interval.ms": "1000"})
    got = {
        e.name: e
        for e in describe_broker_configs(
            broker, None, include_synonyms=True, include_documentation=False
        )
    }
    check = got["log.retention.check.interval.ms"]
    assert (check.value, check.config_source, check.read_only) == ("1000", 4, True)
    assert [s.source for s in check.synonyms] == [4, 5]
    assert got["message.max.bytes"].read_only is False
    assert got["min.insync.replicas"].config_source == 3


def test_per_broker_configs_are_refused_on_the_cluster_default() -> None:
    def check(name: str, *ops: tuple[str, int, str | None]) -> tuple[ErrorCode, str | None]:
        return broker_alter_refusal(1, name, list(ops))

    per_broker = "Cannot update these configs at default cluster level, broker id must be specified"
    sasl = ("sasl.enabled.mechanisms", SET, "PLAIN")
    assert check("1", sasl) == (ErrorCode.NONE, None)
    assert check("", sasl) == (
        ErrorCode.INVALID_REQUEST,
        f"{per_broker}: [sasl.enabled.mechanisms]",
    )
    listener = ("listener.name.plaintext.ssl.keystore.type", SET, "JKS")
    assert check("1", listener) == (ErrorCode.NONE, None)
    assert check("", listener)[1] == f"{per_broker}: [listener.name.plaintext.ssl.keystore.type]"
    # connection limits are cluster-wide too, per listener as well
    for name in ("1", ""):
        assert check(name, ("max.connections", SET, "10")) == (ErrorCode.NONE, None)
        limit = ("listener.name.plaintext.max.connections", SET, "10")
        assert check(name, limit) == (ErrorCode.NONE, None)
        assert check(name, ("listener.name.plaintext.max.connections", SET, "-5")) == (
            ErrorCode.INVALID_REQUEST,
            "Invalid value -5 for configuration max.connections: Value must be at least 0",
        )
        # a plain SSL config is refused everywhere: only per listener
        assert check(name, ("ssl.keystore.password", SET, "x")) == (
            ErrorCode.INVALID_REQUEST,
            "These security configs can be dynamically updated only per-listener using the"
            " listener prefix: [ssl.keystore.password]",
        )
    # read-only configs and bad values are named first
    assert check("", sasl, ("num.partitions", SET, "3"))[1] == (
        "Cannot update these configs dynamically: [num.partitions]"
    )
    assert check("", sasl, ("message.max.bytes", SET, "-1"))[1] == (
        "Invalid value -1 for configuration message.max.bytes: Value must be at least 0"
    )


def test_new_tls_stores_are_loaded_before_the_answer(tmp_path: Path) -> None:
    """A change of a TLS listener's stores is answered only once they load (validate-only
    too), as Kafka loads them; other listeners' and plain listeners' are not loaded."""
    certs = make_certs(tmp_path)
    static = BrokerConfig(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(certs.server_keystore),
        }
    )
    good = [("listener.name.ssl.ssl.keystore.location", SET, str(certs.server_keystore))]
    assert tls_store_refusal(static, {}, good) is None
    missing = [("listener.name.ssl.ssl.keystore.location", SET, str(tmp_path / "none.pem"))]
    refusal = tls_store_refusal(static, {}, missing)
    assert refusal is not None and refusal[0] is ErrorCode.INVALID_REQUEST
    assert "listener SSL" in refusal[1] and "cannot load TLS key" in refusal[1]
    not_a_key = [("listener.name.ssl.ssl.keystore.location", SET, str(certs.ca))]
    assert tls_store_refusal(static, {}, not_a_key) is not None
    plain = [("listener.name.plaintext.ssl.keystore.location", SET, str(tmp_path / "none.pem"))]
    assert tls_store_refusal(static, {}, plain) is None
    # the listener's dynamic configs so far count: deleting a good override falls back
    current = {"listener.name.ssl.ssl.keystore.location": str(tmp_path / "none.pem")}
    delete = [("listener.name.ssl.ssl.keystore.location", DELETE, None)]
    assert tls_store_refusal(static, current, delete) is None


def test_listener_changes_checked_as_kafka() -> None:
    static = BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:9092"})
    added = "PLAINTEXT://127.0.0.1:9092,EXTRA://127.0.0.1:0"
    assert tls_store_refusal(static, {}, [("listeners", SET, added)]) == (
        ErrorCode.INVALID_REQUEST,
        "Error creating broker listeners from '[PLAINTEXT://127.0.0.1:9092, "
        "EXTRA://127.0.0.1:0]': No security protocol defined for listener EXTRA",
    )
    mapped = ("listener.security.protocol.map", SET, "PLAINTEXT:PLAINTEXT,EXTRA:PLAINTEXT")
    assert tls_store_refusal(static, {}, [("listeners", SET, added), mapped]) is None
    changed = [("listener.security.protocol.map", SET, "PLAINTEXT:SSL")]
    refusal = tls_store_refusal(static, {}, changed)
    assert refusal is not None
    assert (
        "Security protocol cannot be updated for existing listener ListenerName(PLAINTEXT)"
        in (refusal[1])
    )
    advertised = BrokerConfig(
        {
            "listeners": "PLAINTEXT://127.0.0.1:9092",
            "advertised.listeners": "PLAINTEXT://broker:9092",
        }
    )
    gone = [("listeners", SET, "EXTRA://127.0.0.1:0"), mapped]
    assert tls_store_refusal(advertised, {}, gone) == (
        ErrorCode.INVALID_REQUEST,
        "requirement failed: advertised.listeners listener names must be equal to or a subset "
        "of the ones defined in listeners. Found PLAINTEXT. The valid options based on the "
        "current configuration are EXTRA",
    )


def test_a_tls_listener_added_needs_stores_that_load(tmp_path: Path) -> None:
    static = BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:9092"})
    ops = [
        ("listeners", SET, "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:0"),
        ("listener.name.ssl.ssl.keystore.type", SET, "PEM"),
        ("listener.name.ssl.ssl.keystore.location", SET, str(tmp_path / "none.pem")),
    ]
    refusal = tls_store_refusal(static, {}, ops)
    assert refusal is not None and "listener SSL" in refusal[1]
    certs = make_certs(tmp_path)
    ops[2] = ("listener.name.ssl.ssl.keystore.location", SET, str(certs.server_keystore))
    assert tls_store_refusal(static, {}, ops) is None


def test_a_negative_roll_jitter_fails_kafkas_requirement() -> None:
    refused = broker_alter_refusal(1, "1", [("log.roll.jitter.ms", 0, "-1")])
    assert refused == (
        ErrorCode.INVALID_REQUEST,
        "requirement failed: log.roll.jitter.ms must be greater than or equal to 0",
    )
    assert broker_alter_refusal(1, "", [("log.roll.jitter.ms", 0, "0")]) == (ErrorCode.NONE, None)
    hours = broker_alter_refusal(1, "1", [("log.roll.jitter.hours", 0, "1")])
    assert hours == (
        ErrorCode.INVALID_REQUEST,
        "Cannot update these configs dynamically: [log.roll.jitter.hours]",
    )
