"""Dynamic broker configs: applied at once, recorded in the metadata log, applied again on
restart; this broker's over the cluster default's over the static settings."""

from __future__ import annotations

import random

from coordinator.broker import BrokerCore
from coordinator.log.memory_log import MemoryStorage
from coordinator.protocol.config_describe import describe_broker_configs, describe_topic_configs
from coordinator.security.limits import ConnectionQuotas
from txn.batch import build_batch
from txn.clock import ManualClock
from txn.compression import Codec
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicPartition

SET, DELETE, APPEND = 0, 1, 2
STATIC = BrokerConfig({"log.retention.hours": "24"})


def core(storage: MemoryStorage) -> BrokerCore:
    return BrokerCore(storage, ManualClock(), STATIC, random.Random(3))


def produce(c: BrokerCore, size: int) -> ErrorCode:
    batch = build_batch([(None, b"x" * size)], timestamp_ms=c.clock.now_ms())
    return c.produce(TopicPartition("t", 0), batch, None).error


def test_a_change_applies_at_once_and_after_a_restart() -> None:
    storage = MemoryStorage()
    c = core(storage)
    c.create_topic("t", 1, 1)
    assert produce(c, 5000) is ErrorCode.NONE
    c.alter_broker_configs("1", [("message.max.bytes", SET, "2000")])
    assert produce(c, 5000) is ErrorCode.MESSAGE_TOO_LARGE
    c.alter_broker_configs(
        "", [("log.retention.ms", SET, "100000"), ("message.max.bytes", SET, "9")]
    )
    assert c.log_settings(c.topics.get("t")).retention.retention_ms == 100000  # type: ignore[arg-type]
    restarted = core(storage)
    assert restarted.config.get_int("message.max.bytes") == 2000  # this broker's wins
    assert produce(restarted, 5000) is ErrorCode.MESSAGE_TOO_LARGE
    info = restarted.topics.get("t")
    assert info is not None
    assert restarted.log_settings(info).retention.retention_ms == 100000
    described = {
        e.name: e
        for e in describe_topic_configs(
            restarted.dynamic.static,
            info.configs,
            ["retention.ms", "max.message.bytes"],
            include_synonyms=True,
            include_documentation=False,
            dynamic=restarted.dynamic.layers,
        )
    }
    assert described["retention.ms"].value == "100000"
    assert [(s.name, s.value, s.source) for s in described["retention.ms"].synonyms] == [
        ("log.retention.ms", "100000", 3),
        ("log.retention.hours", "24", 4),
        ("log.retention.hours", "168", 5),
    ]
    assert [(s.name, s.source) for s in described["max.message.bytes"].synonyms] == [
        ("message.max.bytes", 2),
        ("message.max.bytes", 3),
        ("message.max.bytes", 5),
    ]
    restarted.alter_broker_configs("1", [("message.max.bytes", DELETE, None)])
    restarted.alter_broker_configs("", [("message.max.bytes", DELETE, None)])
    assert produce(restarted, 5000) is ErrorCode.NONE


def test_configs_the_broker_does_not_take_are_kept_and_described() -> None:
    c = core(MemoryStorage())
    c.alter_broker_configs("1", [("log.cleanup.policy", SET, "delete")])
    c.alter_broker_configs("1", [("log.cleanup.policy", APPEND, "compact")])
    c.alter_broker_configs("1", [("no.such.config", SET, "x"), ("log.cleaner.threads", SET, "2")])
    assert c.config.get_str("log.cleanup.policy") == "delete,compact"
    entries = {
        e.name: e
        for e in describe_broker_configs(
            c.dynamic.static,
            ["no.such.config", "log.cleaner.threads"],
            include_synonyms=False,
            include_documentation=False,
            dynamic=c.dynamic.layers,
        )
    }
    assert (entries["log.cleaner.threads"].value, entries["log.cleaner.threads"].config_source) == (
        "2",
        2,
    )
    custom = entries["no.such.config"]
    assert (custom.value, custom.is_sensitive, custom.read_only, custom.config_type) == (
        None,
        True,
        True,
        0,
    )


def test_connection_limits_follow_dynamic_configs() -> None:
    c = core(MemoryStorage())
    quotas = ConnectionQuotas.from_config(c.config)
    c.dynamic.on_change(quotas.reconfigure)
    assert quotas.slot_available()
    c.alter_broker_configs("", [("max.connections", SET, "1")])
    assert quotas.acquire("10.0.0.1") is None
    # Over the cap the acceptor waits for a slot (Kafka's), it does not refuse.
    assert not quotas.slot_available()
    quotas.release("10.0.0.1")
    assert quotas.slot_available()


def test_producer_id_expiration_follows_the_dynamic_config() -> None:
    """``producer.id.expiration.ms`` is dynamic in Kafka: an idle producer is forgotten at the
    next check once the new, shorter expiry has passed."""
    c = core(MemoryStorage())
    c.create_topic("t", 1, 1)
    tp = TopicPartition("t", 0)
    batch = build_batch(
        [(None, b"x")],
        timestamp_ms=c.clock.now_ms(),
        producer_id=7,
        producer_epoch=0,
        base_sequence=0,
    )
    assert c.produce(tp, batch, None).error is ErrorCode.NONE
    assert [p.producer_id for p in c.describe_producers(tp)[1]] == [7]
    c.alter_broker_configs("", [("producer.id.expiration.ms", SET, "60000")])
    c.clock.advance(10 * 60 * 1000)  # the check scheduled at start (every 10 minutes)
    assert c.describe_producers(tp)[1] == []


def test_topics_without_compression_type_take_the_brokers() -> None:
    """The broker's ``compression.type`` (static or a dynamic cluster default) is the codec of
    topics that do not set their own, as Kafka's server default; a topic's own wins."""
    c = core(MemoryStorage())
    c.create_topic("t", 1, 1)
    c.create_topic("own", 1, 1, configs={"compression.type": "producer"})
    plain, own = c.topics.get("t"), c.topics.get("own")
    assert plain is not None and own is not None
    assert c.log_settings(plain).log.compression is None
    c.alter_broker_configs("", [("compression.type", SET, "gzip")])
    assert c.log_settings(plain).log.compression is Codec.GZIP
    assert c.log_settings(own).log.compression is None
    c.alter_broker_configs("", [("compression.type", DELETE, None)])
    assert c.log_settings(plain).log.compression is None
    static = BrokerCore(
        MemoryStorage(),
        ManualClock(),
        BrokerConfig({"compression.type": "zstd", "compression.zstd.level": "7"}),
        random.Random(3),
    )
    static.create_topic("t", 1, 1)
    info = static.topics.get("t")
    assert info is not None
    settings = static.log_settings(info).log
    assert (settings.compression, settings.compression_level) == (Codec.ZSTD, 7)
