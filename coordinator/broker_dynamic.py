"""Dynamic broker configs (Kafka's ``DynamicBrokerConfig``): set at run time with
IncrementalAlterConfigs or AlterConfigs on a BROKER resource, this broker's id for its own
(DYNAMIC_BROKER_CONFIG) or ``""`` for the cluster default (DYNAMIC_DEFAULT_BROKER_CONFIG).

Each change of a resource's dynamic configs is a record in ``__cluster_metadata`` (the topic
registry's log: ``TopicRegistry.set_broker_configs``), replayed when the broker starts, so the
configs outlive a restart as Kafka's ConfigRecords do.  The broker's effective settings are
its static ones (``sharetxn broker --set``) under the cluster default's under its own, for the
configs it takes (per-listener ``listener.name.<listener>.*`` ones too: the protocol server
applies the listener, TLS and SASL changes, ``coordinator.security.listener_changes``); the
others Kafka updates dynamically (``txn.broker_config_defs``) are kept and described.
Checks happen before (``coordinator.protocol.broker_config_alter``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from txn.config import BrokerConfig
from txn.errors import InvalidConfigError
from txn.security_config import is_listener_override
from txn.topic_config_defs import ConfigOperation, parse_list

log = logging.getLogger("sharetxn.broker")

__all__ = ["NO_DYNAMIC", "DynamicBrokerConfigs", "DynamicLayers", "Op", "changed_configs"]

Op = tuple[str, int, str | None]


@dataclass(frozen=True, slots=True)
class DynamicLayers:
    """The dynamic broker configs in force: this broker's and the cluster default's."""

    broker: Mapping[str, str] = field(default_factory=dict)
    cluster: Mapping[str, str] = field(default_factory=dict)


NO_DYNAMIC = DynamicLayers()


def changed_configs(current: Mapping[str, str], ops: Sequence[Op]) -> dict[str, str]:
    """A resource's dynamic configs after ``ops`` (already checked): SET and DELETE, APPEND
    and SUBTRACT on list configs (over the current dynamic value)."""
    out = dict(current)
    for name, op, value in ops:
        if op == ConfigOperation.DELETE:
            out.pop(name, None)
        elif op == ConfigOperation.SET and value is not None:
            out[name] = value
        elif op in (ConfigOperation.APPEND, ConfigOperation.SUBTRACT) and value is not None:
            old = parse_list(out.get(name, ""))
            items = [item.strip() for item in value.split(",") if item.strip()]
            if op == ConfigOperation.APPEND:
                out[name] = ",".join(old + [i for i in items if i not in old])
            else:
                out[name] = ",".join(i for i in old if i not in items)
    return out


def _usable(name: str, value: str) -> bool:
    """Whether the broker takes ``name`` and reads ``value`` (Kafka's validator passed it
    already; one the broker cannot read is kept and described, never used, so a recorded
    value cannot stop the broker from starting)."""
    if not (BrokerConfig.is_known(name) or is_listener_override(name)):
        return False
    try:
        BrokerConfig({name: value})
    except InvalidConfigError:
        log.warning("dynamic broker config %s=%r is recorded but not used", name, value)
        return False
    return True


class DynamicBrokerConfigs:
    """The dynamic configs of this broker and of the cluster default, and the effective
    settings they give."""

    def __init__(
        self, static: BrokerConfig, node_id: int, stored: Mapping[str, Mapping[str, str]]
    ) -> None:
        self.static = static
        self._node = str(node_id)
        self._stored = {name: dict(configs) for name, configs in stored.items()}
        self._listeners: list[Callable[[BrokerConfig], None]] = []

    @property
    def layers(self) -> DynamicLayers:
        return DynamicLayers(
            broker=dict(self._stored.get(self._node, {})),
            cluster=dict(self._stored.get("", {})),
        )

    def configs_of(self, resource: str) -> dict[str, str]:
        """The dynamic configs stored for ``resource`` (this broker's id, or "")."""
        return dict(self._stored.get(self._key(resource), {}))

    def _key(self, resource: str) -> str:
        return "" if resource == "" else self._node

    def effective(self) -> BrokerConfig:
        """The static settings under the cluster default's under this broker's, for the
        configs the broker takes."""
        layers = self.layers
        merged = {**layers.cluster, **layers.broker}
        known = {name: value for name, value in merged.items() if _usable(name, value)}
        return self.static.with_overrides(known) if known else self.static

    def replace(self, resource: str, configs: Mapping[str, str]) -> BrokerConfig:
        """``resource``'s dynamic configs become ``configs`` (as recorded); the new effective
        settings, given to every listener."""
        self._stored[self._key(resource)] = dict(configs)
        config = self.effective()
        for listener in self._listeners:
            listener(config)
        return config

    def on_change(self, listener: Callable[[BrokerConfig], None]) -> None:
        """Call ``listener`` with the effective settings after each change."""
        self._listeners.append(listener)
