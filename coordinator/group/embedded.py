"""The consumer protocol embedded in classic JoinGroup/SyncGroup (ConsumerProtocol).

Subscription, versions 0-3: version (int16), topics ([string]), user data (bytes), and from
version 1 the owned partitions ([topic, [int32]]), from 2 the generation (int32), from 3 the
rack id (nullable string).  Assignment, versions 0-3: version, partitions ([topic, [int32]]),
user data.  The coordinator reads them for classic members of KIP-848 groups and when it
converts a group from one protocol to the other; it writes an assignment in the version of
the member's subscription, as Kafka does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

CONSUMER_PROTOCOL_TYPE = "consumer"


class EmbeddedProtocolError(ValueError):
    """Malformed consumer-protocol bytes."""


@dataclass(frozen=True, slots=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    owned: tuple[tuple[str, int], ...]
    rack_id: str | None


class _Reader:
    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.pos = 0

    def unpack(self, fmt: str) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.raw):
            msg = "consumer-protocol bytes end early"
            raise EmbeddedProtocolError(msg)
        out = struct.unpack_from(fmt, self.raw, self.pos)
        self.pos += size
        return out

    def count(self) -> int:
        (n,) = self.unpack(">i")
        if n < -1 or n > len(self.raw) - self.pos:
            msg = f"bad array length {n}"
            raise EmbeddedProtocolError(msg)
        return max(n, 0)

    def string(self) -> str | None:
        (n,) = self.unpack(">h")
        if n < 0:
            return None
        if self.pos + n > len(self.raw):
            msg = "consumer-protocol string ends early"
            raise EmbeddedProtocolError(msg)
        text = self.raw[self.pos : self.pos + n]
        self.pos += n
        try:
            return text.decode()
        except UnicodeDecodeError as exc:
            raise EmbeddedProtocolError(str(exc)) from None

    def skip_bytes(self) -> None:
        (n,) = self.unpack(">i")
        if n > 0:
            if self.pos + n > len(self.raw):
                msg = "consumer-protocol bytes end early"
                raise EmbeddedProtocolError(msg)
            self.pos += n


def parse_subscription(raw: bytes) -> Subscription:
    r = _Reader(raw)
    (version,) = r.unpack(">h")
    if version < 0:
        msg = f"bad consumer-protocol version {version}"
        raise EmbeddedProtocolError(msg)
    topics = tuple(r.string() or "" for _ in range(r.count()))
    r.skip_bytes()  # user data
    owned: list[tuple[str, int]] = []
    rack: str | None = None
    if version >= 1 and r.pos < len(raw):
        for _ in range(r.count()):
            topic = r.string() or ""
            owned.extend((topic, p) for p in (r.unpack(">i")[0] for _ in range(r.count())))
    if version >= 2 and r.pos < len(raw):
        r.unpack(">i")  # generation
    if version >= 3 and r.pos < len(raw):
        rack = r.string()
    return Subscription(version, topics, tuple(owned), rack)


def subscription_version(raw: bytes) -> int:
    """The version of a subscription (0 if unreadable), the version its assignment is written in."""
    if len(raw) < 2:
        return 0
    (version,) = struct.unpack_from(">h", raw)
    return max(0, min(3, int(version)))


def parse_assignment(raw: bytes) -> tuple[tuple[str, int], ...]:
    if not raw:
        return ()
    r = _Reader(raw)
    r.unpack(">h")
    out: list[tuple[str, int]] = []
    for _ in range(r.count()):
        topic = r.string() or ""
        out.extend((topic, r.unpack(">i")[0]) for _ in range(r.count()))
    return tuple(out)


def encode_assignment(version: int, partitions: dict[str, list[int]]) -> bytes:
    out = struct.pack(">hi", version, len(partitions))
    for name, numbers in sorted(partitions.items()):
        raw = name.encode()
        ordered = sorted(numbers)
        out += struct.pack(">h", len(raw)) + raw
        out += struct.pack(f">i{len(ordered)}i", len(ordered), *ordered)
    return out + struct.pack(">i", -1)  # no user data
