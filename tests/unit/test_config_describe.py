"""A topic's DescribeConfigs entries over the broker's settings (Kafka's synonym rules)."""

from __future__ import annotations

from coordinator.protocol.config_describe import (
    ConfigSource,
    describe_group_configs,
    describe_topic_configs,
    describe_topic_name_error,
)
from coordinator.share.group_config import group_alter_refusal
from txn.config import BrokerConfig
from txn.errors import ErrorCode


def _entries(broker: BrokerConfig, topic: dict[str, str], *keys: str) -> dict[str, object]:
    out = describe_topic_configs(
        broker, topic, keys or None, include_synonyms=True, include_documentation=True
    )
    return {
        e.name: (e.value, e.config_source, [(s.name, s.value, s.source) for s in e.synonyms])
        for e in out
    }


def test_every_topic_config_is_listed_with_type_and_documentation() -> None:
    out = describe_topic_configs(
        BrokerConfig(), {}, None, include_synonyms=False, include_documentation=True
    )
    names = [e.name for e in out]
    assert names == sorted(names)
    assert {"retention.ms", "cleanup.policy", "segment.jitter.ms"} <= set(names)
    assert "internal.segment.bytes" not in names
    assert all(e.documentation and e.config_type and not e.synonyms for e in out)
    assert not any(e.read_only or e.is_sensitive for e in out)


def test_defaults_come_from_the_broker_defaults() -> None:
    got = _entries(BrokerConfig(), {}, "retention.ms", "cleanup.policy", "min.insync.replicas")
    assert got["retention.ms"] == ("604800000", ConfigSource.DEFAULT, [])
    assert got["cleanup.policy"] == (
        "delete",
        ConfigSource.DEFAULT,
        [("log.cleanup.policy", "delete", ConfigSource.DEFAULT)],
    )
    assert got["min.insync.replicas"][1] == ConfigSource.DYNAMIC_DEFAULT_BROKER


def test_static_broker_settings_head_the_chain() -> None:
    broker = BrokerConfig({"log.retention.ms": "5000", "log.cleanup.policy": "compact"})
    got = _entries(broker, {}, "retention.ms", "cleanup.policy")
    assert got["retention.ms"] == (
        "5000",
        ConfigSource.STATIC_BROKER,
        [
            ("log.retention.ms", "5000", ConfigSource.STATIC_BROKER),
            ("log.retention.hours", "168", ConfigSource.DEFAULT),
        ],
    )
    assert got["cleanup.policy"][2] == [
        ("log.cleanup.policy", "compact", ConfigSource.STATIC_BROKER),
        ("log.cleanup.policy", "delete", ConfigSource.DEFAULT),
    ]


def test_a_coarser_unit_gives_the_value_but_no_synonyms() -> None:
    got = _entries(BrokerConfig({"log.retention.hours": "2"}), {}, "retention.ms")
    assert got["retention.ms"] == ("7200000", ConfigSource.DEFAULT, [])


def test_topic_override_is_shown_parsed_and_first() -> None:
    got = _entries(BrokerConfig(), {"cleanup.policy": "compact, delete"}, "cleanup.policy")
    assert got["cleanup.policy"] == (
        "compact,delete",
        ConfigSource.TOPIC,
        [
            ("cleanup.policy", "compact,delete", ConfigSource.TOPIC),
            ("log.cleanup.policy", "delete", ConfigSource.DEFAULT),
        ],
    )


def test_internal_config_is_listed_only_when_set() -> None:
    got = _entries(BrokerConfig(), {"internal.segment.bytes": "2048"}, "internal.segment.bytes")
    assert got == {
        "internal.segment.bytes": (
            "2048",
            ConfigSource.TOPIC,
            [("internal.segment.bytes", "2048", ConfigSource.TOPIC)],
        )
    }


def test_invalid_names_are_refused_in_kafkas_words() -> None:
    assert describe_topic_name_error("ok.name") is None
    assert describe_topic_name_error("") == "Topic name is invalid: the empty string is not allowed"
    assert describe_topic_name_error("..") == "Topic name is invalid: '..' is not allowed"


def test_group_configs_show_overrides_then_the_broker_setting() -> None:
    broker = BrokerConfig({"group.share.session.timeout.ms": "50000"})
    out = describe_group_configs(
        broker,
        {"share.session.timeout.ms": ("55000", False), "share.isolation.level": ("x", True)},
        None,
        include_synonyms=True,
        include_documentation=True,
    )
    got = {
        e.name: (e.config_source, [(s.name, s.value, s.source) for s in e.synonyms]) for e in out
    }
    assert got["share.session.timeout.ms"] == (
        ConfigSource.GROUP,
        [
            ("share.session.timeout.ms", "55000", ConfigSource.GROUP),
            ("group.share.session.timeout.ms", "50000", ConfigSource.STATIC_BROKER),
            ("group.share.session.timeout.ms", "45000", ConfigSource.DEFAULT),
        ],
    )
    assert got["share.isolation.level"] == (
        ConfigSource.DEFAULT,
        [("share.isolation.level", "read_uncommitted", ConfigSource.DEFAULT)],
    )


def test_group_alter_refusals() -> None:
    assert group_alter_refusal("", [("share.session.timeout.ms", 0, "1")]) == (
        ErrorCode.INVALID_REQUEST,
        "Default group resources are not allowed.",
    )
    assert group_alter_refusal("g", [("share.isolation.level", 2, "x")]) == (
        ErrorCode.INVALID_CONFIG,
        "Can't APPEND to key share.isolation.level because its type is not LIST.",
    )
    assert group_alter_refusal("g", [("share.session.timeout.ms", 1, None)]) is None


def test_segment_jitter_takes_the_broker_roll_jitter_settings() -> None:
    got = _entries(BrokerConfig({"log.roll.jitter.ms": "1234"}), {}, "segment.jitter.ms")
    assert got["segment.jitter.ms"] == (
        "1234",
        ConfigSource.STATIC_BROKER,
        [
            ("log.roll.jitter.ms", "1234", ConfigSource.STATIC_BROKER),
            ("log.roll.jitter.hours", "0", ConfigSource.DEFAULT),
        ],
    )
    # As for log.retention.hours: the coarser unit gives the value, as a default.
    got = _entries(BrokerConfig({"log.roll.jitter.hours": "3"}), {}, "segment.jitter.ms")
    assert got["segment.jitter.ms"] == ("10800000", ConfigSource.DEFAULT, [])
