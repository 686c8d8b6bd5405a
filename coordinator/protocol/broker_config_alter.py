"""AlterConfigs and IncrementalAlterConfigs on a BROKER resource, checked as Kafka 4.4
checks them; a change that passes is applied by ``BrokerCore.alter_broker_configs``
(``coordinator.broker_dynamic``) unless ``validate_only``.

Kafka's order, observed by the differential suite: the resource name (this broker's id or
"" for the cluster default), then each operation (a null value, APPEND or SUBTRACT on a
config that is no list), then the configs it cannot update dynamically (named together),
then the SSL configs it reloads only per listener (named without the
``listener.name.<listener>.`` prefix), then each value against its config's validator (a
per-listener config's as its base config's) and Kafka's requirements of the new settings,
then, on the cluster default, the configs it updates only per broker (Kafka's
``DynamicBrokerConfig.validateConfigs``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from coordinator.broker_dynamic import changed_configs
from coordinator.protocol.config_describe import broker_resource_error
from coordinator.security.listener_changes import listener_refusal
from coordinator.security.listeners import listeners_from_config
from coordinator.security.tls import server_context
from txn.broker_config_defs import (
    DYNAMIC_BROKER_CONFIGS,
    DYNAMIC_SECURITY_CONFIGS,
    is_per_broker,
    is_read_only,
    listener_base_name,
)
from txn.config import BrokerConfig
from txn.errors import ErrorCode, InvalidConfigError
from txn.topic_config_defs import ConfigOperation, ConfigType, config_value_error

__all__ = ["broker_alter_refusal", "legacy_broker_ops", "tls_store_refusal"]

Op = tuple[str, int, str | None]

_MIN_ISR = "min.insync.replicas"
_MIN_ISR_KEPT = "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."


_PER_LISTENER = (
    "These security configs can be dynamically updated only per-listener using the listener prefix"
)
_CLUSTER_DEFAULT = (
    "Cannot update these configs at default cluster level, broker id must be specified"
)


#: Kafka's KafkaConfig requirements (checked on the new settings after each value's own
#: validator), with no validator of their own: the config and its least value.
_REQUIRED_AT_LEAST = {"log.roll.jitter.ms": 0}


def _requirement_failed(name: str, value: str) -> str | None:
    low = _REQUIRED_AT_LEAST.get(name)
    if low is None or int(value.strip()) >= low:
        return None
    return f"requirement failed: {name} must be greater than or equal to {low}"


def _named(reason: str, names: Sequence[str]) -> str:
    """Kafka's ConfigException message naming a set of configs."""
    return f"{reason}: [{', '.join(names)}]"


def _java_hash(text: str) -> int:
    value = 0
    for char in text:
        value = (31 * value + ord(char)) & 0xFFFFFFFF
    return value


def java_hash_set_order(names: Sequence[str]) -> list[str]:
    """``names`` in the order a Java HashSet built from them iterates (Kafka names the
    configs it refuses from one): by bucket of the spread String hash, then insertion."""
    capacity = 16
    while len(names) > capacity * 3 // 4:
        capacity *= 2

    def bucket(name: str) -> int:
        h = _java_hash(name)
        return (h ^ (h >> 16)) & (capacity - 1)

    return [name for _i, name in sorted(enumerate(names), key=lambda p: (bucket(p[1]), p[0]))]


def broker_alter_refusal(
    node_id: int,
    resource: str,
    ops: Sequence[Op],
    *,
    replace_all: bool = False,
) -> tuple[ErrorCode, str | None]:
    """The refusal of an alter of BROKER ``resource`` with ``ops`` (config,
    ConfigOperation, value), or (NONE, None); AlterConfigs (``replace_all``: the configs given
    replace the resource's) sends each config as a SET."""
    wrong = broker_resource_error(node_id, resource, describe=False)
    if wrong is not None:
        return ErrorCode.INVALID_REQUEST, wrong
    for name, op, value in ops:
        if op != ConfigOperation.DELETE and value is None:
            return ErrorCode.INVALID_REQUEST, f"Null value not supported for : {name}"
        if op in (ConfigOperation.APPEND, ConfigOperation.SUBTRACT):
            defn = DYNAMIC_BROKER_CONFIGS.get(name)
            if is_read_only(name) or (defn is not None and defn.type is not ConfigType.LIST):
                word = ConfigOperation(op).name.lower()
                message = f"Config value {word} is not allowed for config key: {name}"
                return ErrorCode.INVALID_CONFIG, message
    names = list(dict.fromkeys(name for name, _op, _value in ops))
    fixed = java_hash_set_order([name for name in names if is_read_only(name)])
    if fixed:
        return ErrorCode.INVALID_REQUEST, _named("Cannot update these configs dynamically", fixed)
    plain_ssl = java_hash_set_order([name for name in names if name in DYNAMIC_SECURITY_CONFIGS])
    if plain_ssl:
        return ErrorCode.INVALID_REQUEST, _named(_PER_LISTENER, plain_ssl)
    for name, op, value in ops:
        # a per-listener config is checked as its base config
        defn = DYNAMIC_BROKER_CONFIGS.get(listener_base_name(name) or name)
        if defn is None or value is None or op != ConfigOperation.SET:
            continue
        reason = config_value_error(defn, value) or _requirement_failed(name, value)
        if reason is not None:
            return ErrorCode.INVALID_REQUEST, reason
    per_broker = java_hash_set_order([name for name in names if is_per_broker(name)])
    if resource == "" and per_broker:
        return ErrorCode.INVALID_REQUEST, _named(_CLUSTER_DEFAULT, per_broker)
    if replace_all and resource == "" and _MIN_ISR not in {name for name, _op, _value in ops}:
        # AlterConfigs replaces the cluster default's configs: the formatted min.insync.replicas
        return ErrorCode.INVALID_CONFIG, _MIN_ISR_KEPT
    return ErrorCode.NONE, None


def legacy_broker_ops(current: Sequence[str], given: Sequence[tuple[str, str | None]]) -> list[Op]:
    """The legacy AlterConfigs on a broker as operations: the configs given replace the
    resource's dynamic ones (those not given are deleted)."""
    named = {name for name, _value in given}
    ops: list[Op] = [(name, ConfigOperation.DELETE, None) for name in current if name not in named]
    return ops + [(name, ConfigOperation.SET, value) for name, value in given]


_LISTENER_SSL = re.compile(r"listener\.name\.([^.]*)\.ssl\..*", re.DOTALL)
_LISTENER_SET = ("listeners", "listener.security.protocol.map")
_ANY_PORT = ("127.0.0.1", 0)


def tls_store_refusal(
    static: BrokerConfig, current: Mapping[str, str], ops: Sequence[Op]
) -> tuple[ErrorCode, str] | None:
    """Kafka's checks of a change of this broker's listeners (``current``: its dynamic
    configs; ``coordinator.security.listener_changes``), then load the key and trust stores a
    change of ``listener.name.<listener>.ssl.*`` gives one of its TLS listeners, as Kafka
    loads them before it answers, validate-only or not; the refusal if either fails."""
    changed = changed_configs(current, ops)
    touched = {m.group(1).lower() for name, _op, _v in ops if (m := _LISTENER_SSL.fullmatch(name))}
    listeners_touched = any(name in _LISTENER_SET for name, _op, _v in ops)
    if not touched and not listeners_touched:
        return None
    try:
        old = static.with_overrides({k: v for k, v in current.items() if k in _LISTENER_SET})
        new = static.with_overrides({k: v for k, v in changed.items() if k in _LISTENER_SET})
    except InvalidConfigError as exc:
        return ErrorCode.INVALID_REQUEST, str(exc)
    if listeners_touched:
        refusal = listener_refusal(old, new, _ANY_PORT)
        if refusal is not None:
            return ErrorCode.INVALID_REQUEST, refusal
    prefixed = {name: value for name, value in changed.items() if _LISTENER_SSL.fullmatch(name)}
    try:
        listeners = listeners_from_config(new, _ANY_PORT)
        before = {x.name for x in listeners_from_config(old, _ANY_PORT)}
        config = new.with_overrides(prefixed)
    except InvalidConfigError:
        return None
    for listener in listeners:
        checked = listener.name.lower() in touched or listener.name not in before
        if checked and listener.protocol.uses_tls:
            try:
                server_context(config, listener.name, sasl=listener.protocol.uses_sasl)
            except InvalidConfigError as exc:
                message = (
                    f"Validation of dynamic config update of listener {listener.name} failed: {exc}"
                )
                return ErrorCode.INVALID_REQUEST, message
    return None
