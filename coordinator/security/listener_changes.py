"""Listener, TLS and SASL configs changed at run time (Kafka's ``DynamicListenerConfig`` and
the per-listener ``SslFactory.reconfigure``): what a change of the effective broker settings
does to the listeners, decided here and applied by the protocol server.

* ``listeners`` / ``listener.security.protocol.map``: a listener named only in the new
  value is bound, one no longer named is closed (with its connections); the others keep
  their socket, as Kafka's ``SocketServer.addListeners`` / ``removeListeners``.
* ``listener.name.<listener>.ssl.*``: a TLS listener whose stores or client-auth setting
  changed, or whose store files were written since they were loaded (set the config again,
  to the same path: Kafka's ``reloadUpdatedFilesWithoutConfigChange``), gets a new SSL
  context, used for the connections accepted from then on (those already open keep theirs,
  as Kafka's reconfigured SslFactory).
* ``listener.name.<listener>.sasl.enabled.mechanisms`` and
  ``listener.name.<listener>.<mechanism>.sasl.jaas.config``: read by the security gate at
  each handshake, so they hold for the next authentication.

``listener_refusal`` holds Kafka 4.4's checks of such a change (before it is recorded).
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field

from coordinator.security.listeners import (
    Listener,
    SecurityProtocol,
    listeners_from_config,
    parse_endpoints,
    parse_protocol_map,
)
from coordinator.security.tls import server_context
from txn.config import BrokerConfig
from txn.errors import InvalidConfigError
from txn.security_config import LISTENER_OVERRIDABLE

__all__ = ["ListenerPlan", "TlsSettings", "listener_refusal", "plan_listeners", "tls_settings"]

_TLS_KEYS = tuple(sorted(k for k in LISTENER_OVERRIDABLE if k.startswith("ssl.")))


@dataclass(frozen=True, slots=True)
class ListenerPlan:
    """What the server does on new effective settings: the listeners to bind and to close,
    and the new SSL contexts (by listener name) of the TLS listeners kept or added."""

    added: tuple[Listener, ...] = ()
    removed: tuple[Listener, ...] = ()
    contexts: Mapping[str, ssl.SSLContext] = field(default_factory=dict)
    #: ``tls_settings`` of each new context, to compare the next change with
    loaded: Mapping[str, TlsSettings] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.contexts)


TlsSettings = tuple[object, ...]


def _modified(path: str | None) -> int | None:
    if not path:
        return None
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def tls_settings(config: BrokerConfig, listener: Listener) -> TlsSettings:
    """Everything a listener's SSL context is made from (its per-listener values first), and
    when its store files were last written."""
    prefixed = config.get(f"listener.name.{listener.name.lower()}.ssl.client.auth")
    stores = ("ssl.keystore.location", "ssl.truststore.location")
    return (
        *(config.get_listener_str(listener.name, key) for key in _TLS_KEYS),
        None if prefixed is None else str(prefixed),
        *(_modified(config.get_listener_str(listener.name, key)) for key in stores),
    )


def plan_listeners(
    current: list[Listener],
    loaded: Mapping[str, TlsSettings],
    new: BrokerConfig,
    listen: tuple[str, int],
) -> ListenerPlan:
    """The change from ``current`` (their SSL contexts made with ``loaded``) to the
    listeners ``new`` gives.

    A listener keeps its socket while its name stays (Kafka compares listeners by name);
    its SSL context is made again when its TLS settings changed.  Raises InvalidConfigError
    when ``new`` names listeners that cannot be served (checked before it was recorded:
    ``listener_refusal``) or a TLS store no longer loads.
    """
    wanted = listeners_from_config(new, listen)
    names = {listener.name for listener in current}
    kept = {listener.name for listener in wanted} & names
    added = tuple(listener for listener in wanted if listener.name not in names)
    removed = tuple(listener for listener in current if listener.name not in kept)
    contexts: dict[str, ssl.SSLContext] = {}
    made: dict[str, TlsSettings] = {}
    for listener in wanted:
        if not listener.protocol.uses_tls:
            continue
        settings = tls_settings(new, listener)
        if listener.name not in names or loaded.get(listener.name) != settings:
            contexts[listener.name] = server_context(
                new, listener.name, sasl=listener.protocol.uses_sasl
            )
            made[listener.name] = settings
    return ListenerPlan(added=added, removed=removed, contexts=contexts, loaded=made)


def _names(text: str | None) -> list[str]:
    if not text:
        return []
    return [name for name, _host, _port in parse_endpoints(text, "listeners")]


def listener_refusal(old: BrokerConfig, new: BrokerConfig, listen: tuple[str, int]) -> str | None:
    """Kafka 4.4's refusal of new ``listeners`` / ``listener.security.protocol.map``
    (KafkaConfig's checks, then DynamicListenerConfig.validateReconfiguration's), or None.
    """
    text = new.get_str("listeners") if new["listeners"] else None
    items = [item.strip() for item in (text or "").split(",") if item.strip()]
    try:
        protocols = parse_protocol_map(new.get_str("listener.security.protocol.map"))
        endpoints = parse_endpoints(text, "listeners") if text else [("PLAINTEXT", *listen)]
    except InvalidConfigError as exc:
        return f"Error creating broker listeners from '[{', '.join(items)}]': {exc}"
    for name, _host, _port in endpoints:
        if name not in protocols:
            return (
                f"Error creating broker listeners from '[{', '.join(items)}]': "
                f"No security protocol defined for listener {name}"
            )
    listener_names = [name for name, _host, _port in endpoints]
    advertised = _names(new.get_str("advertised.listeners") if new["advertised.listeners"] else "")
    if any(name not in listener_names for name in advertised):
        return (
            "requirement failed: advertised.listeners listener names must be equal to or a "
            f"subset of the ones defined in listeners. Found {','.join(advertised)}. The valid "
            f"options based on the current configuration are {','.join(listener_names)}"
        )
    old_text = old.get_str("listeners") if old["listeners"] else None
    try:
        old_protocols = parse_protocol_map(old.get_str("listener.security.protocol.map"))
        old_names = _names(old_text) if old_text else ["PLAINTEXT"]
    except InvalidConfigError:
        return None
    for name in listener_names:
        if name in old_names and _protocol(old_protocols, name) != _protocol(protocols, name):
            return (
                "Invalid value org.apache.kafka.common.config.ConfigException: Security "
                f"protocol cannot be updated for existing listener ListenerName({name}) for "
                "configuration Invalid dynamic configuration"
            )
    return None


def _protocol(protocols: Mapping[str, SecurityProtocol], name: str) -> SecurityProtocol | None:
    return protocols.get(name)
