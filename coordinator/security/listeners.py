"""Kafka's listener configs: ``listeners``, ``advertised.listeners``, the protocol map.

``listeners=PLAINTEXT://127.0.0.1:9092,SASL_SSL://:9093`` names each listener;
``listener.security.protocol.map`` gives each name its security protocol (a
name that is itself a protocol maps to it by Kafka's default map).
``advertised.listeners`` is what Metadata and FindCoordinator tell a client
that came in on that listener; unset, the listener's own address is told.
"""

from __future__ import annotations

import contextvars
import enum
import re
import socket
from dataclasses import dataclass

from txn.config import BrokerConfig
from txn.errors import InvalidConfigError


class SecurityProtocol(enum.Enum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def uses_tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


@dataclass(frozen=True, slots=True)
class Listener:
    """One listener: where it binds, what it tells clients, and its protocol."""

    name: str
    host: str
    port: int
    protocol: SecurityProtocol
    advertised_host: str | None = None
    advertised_port: int | None = None


_ENDPOINT = re.compile(r"^([A-Za-z0-9_]+)://(\[[^\]]*\]|[^:\[\]]*):(\d+)$")


def parse_endpoints(text: str, config_name: str) -> list[tuple[str, str, int]]:
    """``NAME://HOST:PORT,...`` as (NAME, host, port); an empty host means every interface."""
    out: list[tuple[str, str, int]] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        match = _ENDPOINT.match(item)
        if match is None:
            msg = f"{config_name}: expected NAME://HOST:PORT, got {item!r}"
            raise InvalidConfigError(msg)
        name, host, port = match.group(1).upper(), match.group(2).strip("[]"), int(match.group(3))
        if port > 65535:
            msg = f"{config_name}: port {port} of {item!r} is out of range"
            raise InvalidConfigError(msg)
        if any(existing == name for existing, _h, _p in out):
            msg = f"{config_name}: listener name {name} appears twice"
            raise InvalidConfigError(msg)
        out.append((name, host, port))
    return out


def parse_protocol_map(text: str) -> dict[str, SecurityProtocol]:
    out: dict[str, SecurityProtocol] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, proto = item.partition(":")
        try:
            out[name.strip().upper()] = SecurityProtocol(proto.strip().upper())
        except ValueError:
            msg = f"listener.security.protocol.map: unknown security protocol in {item!r}"
            raise InvalidConfigError(msg) from None
        if not sep:
            msg = f"listener.security.protocol.map: expected NAME:PROTOCOL, got {item!r}"
            raise InvalidConfigError(msg)
    return out


def listeners_from_config(config: BrokerConfig, listen: tuple[str, int]) -> list[Listener]:
    """The listeners to bind: ``listeners`` if set, else PLAINTEXT on ``--listen``."""
    text = config["listeners"]
    endpoints = (
        parse_endpoints(text, "listeners") if text else [("PLAINTEXT", listen[0], listen[1])]
    )
    if not endpoints:
        msg = "listeners: no listener given"
        raise InvalidConfigError(msg)
    protocols = parse_protocol_map(config.get_str("listener.security.protocol.map"))
    advertised: dict[str, tuple[str, int]] = {}
    if config["advertised.listeners"]:
        for name, host, port in parse_endpoints(
            config.get_str("advertised.listeners"), "advertised.listeners"
        ):
            if name not in {n for n, _h, _p in endpoints}:
                msg = f"advertised.listeners: {name} is not one of the listeners"
                raise InvalidConfigError(msg)
            if port == 0:
                msg = f"advertised.listeners: {name} advertises port 0"
                raise InvalidConfigError(msg)
            advertised[name] = (host, port)
    out: list[Listener] = []
    for name, host, port in endpoints:
        protocol = protocols.get(name)
        if protocol is None:
            msg = (
                f"listener {name} has no security protocol: add {name}:PROTOCOL to "
                "listener.security.protocol.map"
            )
            raise InvalidConfigError(msg)
        adv = advertised.get(name)
        out.append(
            Listener(
                name,
                host,
                port,
                protocol,
                advertised_host=adv[0] if adv else None,
                advertised_port=adv[1] if adv else None,
            )
        )
    return out


#: The advertised (host, port) of the listener serving the current connection: each
#: connection runs in its own asyncio task, so Metadata and FindCoordinator answered on
#: an SSL listener name the SSL listener's address.
CURRENT_ENDPOINT: contextvars.ContextVar[tuple[str, int] | None] = contextvars.ContextVar(
    "sharetxn_listener_endpoint", default=None
)


def advertised_endpoint(listener: Listener, bound_port: int) -> tuple[str, int]:
    """What clients are told: advertised.listeners, else the bound address."""
    if listener.advertised_host is not None and listener.advertised_port is not None:
        return listener.advertised_host or socket.getfqdn(), listener.advertised_port
    host = listener.host
    if host in ("", "0.0.0.0", "::"):  # noqa: S104 - naming, not binding
        host = socket.getfqdn()
    return host, bound_port
