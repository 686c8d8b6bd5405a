"""Socket-level limits of the protocol server, with Kafka's configs and behaviour.

- ``max.connections`` (broker-wide) and ``listener.name.<listener>.max.connections``: as
  Kafka's ``ConnectionQuotas.waitForConnectionSlot``, a listener at either limit stops
  accepting until a connection closes; the clients waiting meanwhile wait in the
  kernel's listen backlog (no socket is queued here beyond the one accepted).
- ``max.connections.per.ip`` (with ``max.connections.per.ip.overrides``): a connection
  from an address at its limit is closed as soon as it is accepted (nothing is read or
  answered), as Kafka's ``TooManyConnectionsException``.
- Frame sizes: ``socket.request.max.bytes`` once a connection may send requests;
  on a SASL listener, until the client has authenticated, ``sasl.server.max.receive.size``
  (512 KiB), as Kafka's ``SaslServerAuthenticator``.  A larger size prefix closes the
  connection without reading (or buffering) the frame.
- ``connections.max.idle.ms``: a connection that sends nothing for that long is
  closed, whether it is between requests or in the middle of one (a frame whose
  bytes stop arriving: "slow loris").  As in Kafka, any byte received counts as
  activity.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

from txn.config import BrokerConfig, per_ip_overrides
from txn.errors import InvalidConfigError

log = logging.getLogger("sharetxn.server")

#: The most one read takes from the socket buffer while a frame body arrives.
CHUNK = 1 << 16


class FrameRefused(Exception):
    """The connection must be closed: a size prefix over the limit, or an impossible one."""


class ConnectionIdle(Exception):
    """Nothing arrived for ``connections.max.idle.ms``."""


def _resolve(host: str) -> str:
    """An override's host as the address connections come from (names are resolved once)."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    try:
        return socket.gethostbyname(host)
    except OSError:
        log.warning("max.connections.per.ip.overrides: cannot resolve %s", host)
        return host


@dataclass(slots=True)
class ConnectionQuotas:
    """Counts open connections: in all, per listener and per client address."""

    max_connections: int
    max_per_ip: int
    overrides: dict[str, int]
    #: listener name (upper case) -> its ``listener.name.<listener>.max.connections``
    listener_max: dict[str, int] = field(default_factory=dict)
    _per_ip: dict[str, int] = field(default_factory=dict)
    _per_listener: dict[str, int] = field(default_factory=dict)
    _total: int = 0

    @classmethod
    def from_config(cls, config: BrokerConfig, listeners: Iterable[str] = ()) -> ConnectionQuotas:
        raw = per_ip_overrides(config.get_str("max.connections.per.ip.overrides"))
        listener_max: dict[str, int] = {}
        for name in listeners:
            key = f"listener.name.{name.lower()}.max.connections"
            text = config.get(key)
            if text is None:
                continue
            try:
                value = int(str(text))
            except ValueError:
                value = -1
            if value < 0:
                msg = f"Invalid value {text} for configuration {key}: Value must be at least 0"
                raise InvalidConfigError(msg)
            listener_max[name.upper()] = value
        return cls(
            config.get_int("max.connections"),
            config.get_int("max.connections.per.ip"),
            {_resolve(host): count for host, count in raw.items()},
            listener_max,
        )

    def reconfigure(self, config: BrokerConfig) -> None:
        """New limits (dynamic broker configs); open connections are kept."""
        fresh = ConnectionQuotas.from_config(config)
        self.max_connections, self.max_per_ip = fresh.max_connections, fresh.max_per_ip
        self.overrides = fresh.overrides

    def limit_for(self, host: str) -> int:
        return self.overrides.get(host, self.max_per_ip)

    def slot_available(self, listener: str = "") -> bool:
        """Whether ``listener`` may accept one more connection (Kafka's connectionSlotAvailable)."""
        limit = self.listener_max.get(listener.upper())
        if limit is not None and self._per_listener.get(listener.upper(), 0) >= limit:
            return False
        return self._total < self.max_connections

    def acquire(self, host: str, listener: str = "") -> str | None:
        """Count a connection accepted from ``host`` while a slot was available; or the
        reason it must be closed (``host`` is at its per-address limit: not counted)."""
        limit = self.limit_for(host)
        if self._per_ip.get(host, 0) >= limit:
            return f"address already has the configured maximum of {limit} connections"
        self._total += 1
        self._per_ip[host] = self._per_ip.get(host, 0) + 1
        name = listener.upper()
        self._per_listener[name] = self._per_listener.get(name, 0) + 1
        return None

    def release(self, host: str, listener: str = "") -> None:
        self._total -= 1
        left = self._per_ip.get(host, 0) - 1
        if left > 0:
            self._per_ip[host] = left
        else:
            self._per_ip.pop(host, None)
        name = listener.upper()
        left = self._per_listener.get(name, 0) - 1
        if left > 0:
            self._per_listener[name] = left
        else:
            self._per_listener.pop(name, None)


async def _read(reader: asyncio.StreamReader, n: int, idle_s: float | None) -> bytes:
    """Up to ``n`` bytes: IncompleteReadError at EOF, ConnectionIdle after ``idle_s`` of nothing."""
    # asyncio.timeout, not wait_for: on 3.11 wait_for returns a read that completed as its
    # task was cancelled and drops the cancellation, so a busy connection outlived stop().
    try:
        async with asyncio.timeout(idle_s):
            chunk = await reader.read(n)
    except TimeoutError:
        raise ConnectionIdle from None
    if not chunk:
        raise asyncio.IncompleteReadError(b"", n)
    return chunk


async def read_exactly(reader: asyncio.StreamReader, n: int, idle_s: float | None) -> bytes:
    """``n`` bytes, each read waiting at most ``idle_s`` (None: forever) for the next bytes."""
    first = await _read(reader, n, idle_s)
    if len(first) == n:
        return first
    buf = bytearray(first)
    while len(buf) < n:
        buf += await _read(reader, min(CHUNK, n - len(buf)), idle_s)
    return bytes(buf)


async def read_frame(
    reader: asyncio.StreamReader, max_bytes: int, idle_s: float | None, *, limit_name: str
) -> bytes:
    """One size-prefixed frame of at most ``max_bytes``, else FrameRefused (nothing more read)."""
    (size,) = struct.unpack(">i", await read_exactly(reader, 4, idle_s))
    if size < 8:
        raise FrameRefused(f"frame of {size} bytes is too short")
    if size > max_bytes:
        raise FrameRefused(f"frame of {size} bytes exceeds {limit_name} ({max_bytes})")
    return await read_exactly(reader, size, idle_s)
