"""Broker configs as Kafka 4.4 describes and alters them: each one's type, whether Kafka can
update it dynamically, and the validator Kafka runs on a new value.

Facts observed on Apache Kafka 4.4 by the differential suite
(``tests/reference/differential/scenarios_config_broker.py``).  These rules give Kafka's
answers to a DescribeConfigs and the checks of an alter (``coordinator.broker_dynamic``
applies the changes that pass).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from txn.config import BrokerConfig
from txn.topic_config_defs import (
    COMPRESSION_TYPES,
    ConfigDef,
    ConfigType,
    at_least,
    between,
    list_of,
    one_of,
)

__all__ = [
    "DYNAMIC_BROKER_CONFIGS",
    "DYNAMIC_SECURITY_CONFIGS",
    "broker_config_type",
    "is_kafka_config",
    "is_per_broker",
    "is_read_only",
    "listener_base_name",
]

_B, _S, _I, _L, _D, _LIST = (
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
)

#: Broker configs Kafka updates dynamically (IncrementalAlterConfigs on a BROKER), with
#: the type and validator Kafka checks a new value with.
DYNAMIC_BROKER_CONFIGS: Final[Mapping[str, ConfigDef]] = {
    d.name: d
    for d in (
        ConfigDef("compression.type", _S, one_of(*COMPRESSION_TYPES)),
        # KIP-1191: the group coordinator's reconfigurable dead-letter queue configs
        ConfigDef("errors.deadletterqueue.auto.create.topics.enable", _B),
        ConfigDef("errors.deadletterqueue.topic.name.prefix", _S),
        ConfigDef("listener.security.protocol.map", _S),
        ConfigDef("listeners", _LIST),
        ConfigDef("log.cleaner.backoff.ms", _L, at_least(0)),
        ConfigDef("log.cleaner.delete.retention.ms", _L, at_least(0)),
        ConfigDef("log.cleaner.io.buffer.size", _I, at_least(0)),
        ConfigDef("log.cleaner.max.compaction.lag.ms", _L, at_least(1)),
        ConfigDef("log.cleaner.min.cleanable.ratio", _D, between(0, 1)),
        ConfigDef("log.cleaner.min.compaction.lag.ms", _L, at_least(0)),
        ConfigDef("log.cleaner.threads", _I, at_least(0)),
        ConfigDef("log.cleanup.policy", _LIST, list_of("compact", "delete")),
        ConfigDef("log.flush.interval.messages", _L, at_least(1)),
        ConfigDef("log.flush.interval.ms", _L),
        ConfigDef("log.index.interval.bytes", _I, at_least(0)),
        ConfigDef("log.message.timestamp.after.max.ms", _L, at_least(0)),
        ConfigDef("log.message.timestamp.before.max.ms", _L, at_least(0)),
        ConfigDef("log.message.timestamp.type", _S, one_of("CreateTime", "LogAppendTime")),
        ConfigDef("log.retention.bytes", _L),
        ConfigDef("log.retention.ms", _L),
        ConfigDef("log.roll.jitter.ms", _L),
        ConfigDef("log.roll.ms", _L),
        ConfigDef("log.segment.bytes", _I, at_least(1024 * 1024)),
        ConfigDef("log.segment.delete.delay.ms", _L, at_least(0)),
        ConfigDef("max.connections", _I, at_least(0)),
        ConfigDef("max.connection.creation.rate", _I, at_least(0)),
        ConfigDef("max.connections.per.ip", _I, at_least(0)),
        ConfigDef("max.connections.per.ip.overrides", _S),
        ConfigDef("message.max.bytes", _I, at_least(0)),
        ConfigDef("min.insync.replicas", _I, at_least(1)),
        ConfigDef("producer.id.expiration.ms", _I, at_least(1)),
        ConfigDef("sasl.enabled.mechanisms", _LIST),
        ConfigDef("ssl.client.auth", _S),
        ConfigDef("ssl.key.password", _S),
        ConfigDef("ssl.keystore.certificate.chain", _S),
        ConfigDef("ssl.keystore.key", _S),
        ConfigDef("ssl.keystore.location", _S),
        ConfigDef("ssl.keystore.password", _S),
        ConfigDef("ssl.keystore.type", _S),
        ConfigDef("ssl.truststore.certificates", _S),
        ConfigDef("ssl.truststore.location", _S),
        ConfigDef("ssl.truststore.password", _S),
        ConfigDef("ssl.truststore.type", _S),
        ConfigDef("unclean.leader.election.enable", _B),
    )
}

#: Kafka configs no broker takes at run time besides those sharetxn knows (which are all
#: read-only unless dynamic in Kafka): its identity and storage layout.
_KAFKA_READ_ONLY: Final = frozenset(
    {
        "broker.id",
        "controller.listener.names",
        "controller.quorum.bootstrap.servers",
        "controller.quorum.voters",
        "log.dir",
        "log.dirs",
        "node.id",
        "process.roles",
    }
)


#: Kafka's SSL configs it reloads at run time (its ``SslConfigs.RECONFIGURABLE_CONFIGS``):
#: updated only per listener (``listener.name.<listener>.<config>``), never plain.
DYNAMIC_SECURITY_CONFIGS: Final = frozenset(
    {
        "ssl.key.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.keystore.type",
        "ssl.truststore.certificates",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.type",
    }
)

#: The listener configs Kafka reconfigures at run time (its ``DynamicListenerConfig``).
_LISTENER_CONFIGS: Final = frozenset(
    {
        "listeners",
        "listener.security.protocol.map",
        "principal.builder.class",
        "ssl.protocol",
        "ssl.provider",
        "ssl.cipher.suites",
        "ssl.enabled.protocols",
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.keymanager.algorithm",
        "ssl.trustmanager.algorithm",
        "ssl.endpoint.identification.algorithm",
        "ssl.secure.random.implementation",
        "ssl.client.auth",
        "ssl.engine.factory.class",
        "sasl.mechanism.inter.broker.protocol",
        "sasl.jaas.config",
        "sasl.enabled.mechanisms",
        "sasl.kerberos.service.name",
        "sasl.kerberos.kinit.cmd",
        "sasl.kerberos.ticket.renew.window.factor",
        "sasl.kerberos.ticket.renew.jitter",
        "sasl.kerberos.min.time.before.relogin",
        "sasl.kerberos.principal.to.local.rules",
        "sasl.login.refresh.window.factor",
        "sasl.login.refresh.window.jitter",
        "sasl.login.refresh.min.period.seconds",
        "sasl.login.refresh.buffer.seconds",
        "max.connections",
        "max.connection.creation.rate",
        "num.network.threads",
    }
)
#: Listener configs Kafka also takes cluster-wide (the cluster default, resource name "").
_CLUSTER_LEVEL_LISTENER_CONFIGS: Final = frozenset(
    {"max.connections", "max.connection.creation.rate", "num.network.threads"}
)
#: Configs Kafka updates only per broker (its ``PerBrokerConfigs``).
_PER_BROKER: Final = (
    DYNAMIC_SECURITY_CONFIGS | _LISTENER_CONFIGS
) - _CLUSTER_LEVEL_LISTENER_CONFIGS

_LISTENER_PREFIX: Final = re.compile(r"listener\.name\.[^.]*\.(.*)", re.DOTALL)


def listener_base_name(name: str) -> str | None:
    """``<config>`` of a per-listener name ``listener.name.<listener>.<config>``, else None."""
    match = _LISTENER_PREFIX.fullmatch(name)
    return match.group(1) if match else None


def is_per_broker(name: str) -> bool:
    """Whether Kafka refuses ``name`` on the cluster default: a per-broker config, or a
    per-listener one other than the connection limits and network threads."""
    if name in _PER_BROKER:
        return True
    base = listener_base_name(name)
    return base is not None and base not in _CLUSTER_LEVEL_LISTENER_CONFIGS


def is_kafka_config(name: str) -> bool:
    """Whether Kafka knows broker config ``name`` (a custom one is described as sensitive,
    read-only and of unknown type)."""
    base = listener_base_name(name) or name
    return (
        base in DYNAMIC_BROKER_CONFIGS
        or base in _LISTENER_CONFIGS
        or base in _KAFKA_READ_ONLY
        or base == "min.insync.replicas"
        or BrokerConfig.is_known(base)
    )


def is_read_only(name: str) -> bool:
    """Whether Kafka refuses to update broker config ``name`` dynamically (a config neither
    broker knows is a custom one: Kafka accepts it)."""
    if name in DYNAMIC_BROKER_CONFIGS or name in _LISTENER_CONFIGS:
        return False
    return name in _KAFKA_READ_ONLY or BrokerConfig.is_known(name)


# Kafka's DescribeConfigs config_type ids of the broker configs sharetxn knows, where the
# plain mapping (bool BOOLEAN, int INT, str STRING) is not Kafka's.
_LONG: Final = frozenset(
    {
        "connections.max.idle.ms",
        "connections.max.reauth.ms",
        "delegation.token.expiry.check.interval.ms",
        "delegation.token.expiry.time.ms",
        "delegation.token.max.lifetime.ms",
        "log.cleaner.backoff.ms",
        "log.cleaner.dedupe.buffer.size",
        "log.cleaner.delete.retention.ms",
        "log.cleaner.max.compaction.lag.ms",
        "log.cleaner.min.compaction.lag.ms",
        "log.flush.interval.messages",
        "log.flush.interval.ms",
        "log.initial.task.delay.ms",
        "log.message.timestamp.after.max.ms",
        "log.message.timestamp.before.max.ms",
        "log.retention.bytes",
        "log.retention.check.interval.ms",
        "log.retention.ms",
        "log.roll.jitter.ms",
        "log.roll.ms",
        "log.segment.delete.delay.ms",
        "offsets.retention.check.interval.ms",
        "sasl.oauthbearer.jwks.endpoint.refresh.ms",
    }
)
_LISTS: Final = frozenset(
    {
        "advertised.listeners",
        "listeners",
        "log.cleanup.policy",
        "sasl.enabled.mechanisms",
        "sasl.oauthbearer.expected.audience",
        "sasl.kerberos.principal.to.local.rules",
    }
)
_PASSWORDS: Final = frozenset(
    {
        "delegation.token.secret.key",
        "ssl.key.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.keystore.password",
        "ssl.truststore.certificates",
        "ssl.truststore.password",
    }
)
_TYPE_IDS: Final = {"bool": 1, "str": 2, "int": 3}


def broker_config_type(name: str, plain: str) -> int:
    """Kafka's config_type id of broker config ``name`` whose sharetxn type is ``plain``."""
    if name in _LONG:
        return 5
    if name in _LISTS:
        return 7
    if name in _PASSWORDS:
        return 9
    if name == "log.cleaner.min.cleanable.ratio":
        return 6
    return _TYPE_IDS.get(plain, 0)
