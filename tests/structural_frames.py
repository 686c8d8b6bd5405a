"""Structurally hostile Kafka requests, generated from the request schemas.

Where ``bench/fuzz.py``'s byte mutator flips bytes of valid frames, this walks the schema of
each request (every API and version the broker advertises) and writes each field itself, so
every field can carry a value a careful client would never send:

* integers at their boundaries (0, -1, the type's minimum and maximum), booleans other than
  0 and 1, NaN and infinite floats, the nil and the all-ones UUID;
* strings that are null where the schema has no null, empty, long, not UTF-8, the internal
  topics' names, or whose length claims more bytes than the frame holds;
* arrays whose count is huge, negative or null, with few or no elements behind it;
* tagged-field sections that claim millions of tags, repeat a tag, or give a tag a size past
  the end of the frame ("tag bombs");
* frames cut short at any point;
* record batches that are nearly valid (the CRC recomputed after the damage, so the broker's
  deeper checks see them): bad codecs, counts and lengths that lie, wrong magic, control and
  transactional flags where they do not belong, compressed payloads that are not.

A ``FrameFactory`` yields frames from a seed, so every run can be replayed.
"""

from __future__ import annotations

import dataclasses
import io
import math
import random
import struct
from collections.abc import Callable
from typing import Any

from crc32c import crc32c
from kio.serial import entity_writer
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    is_optional,
)

from coordinator.protocol.api_versions import SUPPORTED
from txn.batch import build_batch
from txn.kip1289_schema import load_request

_INT_BOUNDS = {
    "int8": (1, ">b", -(2**7), 2**7 - 1),
    "int16": (2, ">h", -(2**15), 2**15 - 1),
    "uint16": (2, ">H", 0, 2**16 - 1),
    "error_code": (2, ">h", -(2**15), 2**15 - 1),
    "int32": (4, ">i", -(2**31), 2**31 - 1),
    "uint32": (4, ">I", 0, 2**32 - 1),
    "timedelta_i32": (4, ">i", -(2**31), 2**31 - 1),
    "int64": (8, ">q", -(2**63), 2**63 - 1),
    "uint64": (8, ">Q", 0, 2**64 - 1),
    "timedelta_i64": (8, ">q", -(2**63), 2**63 - 1),
    "datetime_i64": (8, ">q", -(2**63), 2**63 - 1),
}
_NAMES = (
    "__consumer_offsets",
    "__transaction_state",
    "__share_group_state",
    "fuzz",
    "orders",
    "",
    ".",
    "..",
    "a" * 300,
    "t/../../etc",
)
MAX_DEPTH = 4


def _uvarint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class _Writer:
    """Writes one message body field by field, choosing hostile values as it goes."""

    def __init__(self, rng: random.Random, hostility: float) -> None:
        self.rng = rng
        self.hostility = hostility  # the chance that a field is hostile
        self.buf = io.BytesIO()

    def hostile(self) -> bool:
        return self.rng.random() < self.hostility

    # -- lengths --------------------------------------------------------------------------------

    def length(self, n: int, flexible: bool, wide: bool) -> None:
        """A length or count: compact (n + 1 as an unsigned varint), int32 or int16."""
        if flexible:
            self.buf.write(_uvarint(n + 1))
        elif wide:
            self.buf.write(struct.pack(">i", max(-(2**31), min(n, 2**31 - 1))))
        else:
            self.buf.write(struct.pack(">h", max(-(2**15), min(n, 2**15 - 1))))

    def lying_count(self, real: int) -> int:
        """A count that says more (or less) than what follows."""
        return self.rng.choice([2**31 - 1, 2**20, real + 1, real + 1000, -1, -2, 2**31 - 2])

    # -- values ---------------------------------------------------------------------------------

    def fixed(self, kind: str) -> None:
        rng = self.rng
        if kind == "bool":
            self.buf.write(bytes([rng.choice([0, 1, 2, 255]) if self.hostile() else 0]))
        elif kind == "float64":
            value = (
                rng.choice([math.nan, math.inf, -math.inf, 0.0, 1e308]) if self.hostile() else 0.5
            )
            self.buf.write(struct.pack(">d", value))
        elif kind == "uuid":
            self.buf.write(rng.choice([bytes(16), b"\xff" * 16, rng.randbytes(16)]))
        else:
            _size, fmt, low, high = _INT_BOUNDS[kind]
            if self.hostile():
                value = rng.choice([low, high, -1, 0, 1, low + 1, high - 1])
            else:
                value = rng.randint(max(low, -1), min(high, 1000))
            self.buf.write(struct.pack(fmt, value))

    def string(self, flexible: bool, nullable: bool) -> None:
        rng = self.rng
        if not self.hostile():
            data = rng.choice(_NAMES[3:5]).encode()
            self.length(len(data), flexible, wide=False)
            self.buf.write(data)
            return
        choice = rng.randrange(6)
        if choice == 0:
            self.length(-1, flexible, wide=False)  # null, allowed or not
        elif choice == 1:
            data = rng.choice(_NAMES).encode()
            self.length(len(data), flexible, wide=False)
            self.buf.write(data)
        elif choice == 2:
            data = rng.randbytes(rng.randint(1, 40))  # not UTF-8, most of the time
            self.length(len(data), flexible, wide=False)
            self.buf.write(data)
        elif choice == 3:
            self.length(self.rng.choice([2**15 - 1, 2**31 - 1, 5000]), flexible, wide=False)
            self.buf.write(b"short")
        elif choice == 4:
            data = b"x" * rng.choice([2**15 - 1, 70_000])
            self.length(len(data), flexible, wide=False)
            self.buf.write(data)
        else:
            self.length(-2, flexible, wide=False)
        del nullable

    def blob(self, kind: str, flexible: bool) -> None:
        """A bytes or records field: records get a crafted batch most of the time."""
        rng = self.rng
        if kind == "records" and rng.random() < 0.8:
            data = crafted_batch(rng)
        elif self.hostile():
            choice = rng.randrange(3)
            if choice == 0:
                self.length(-1, flexible, wide=True)
                return
            if choice == 1:
                self.length(self.lying_count(0), flexible, wide=True)
                self.buf.write(rng.randbytes(rng.randint(0, 16)))
                return
            data = rng.randbytes(rng.randint(0, 200))
        else:
            data = rng.randbytes(rng.randint(0, 16))
        self.length(len(data), flexible, wide=True)
        self.buf.write(data)

    def tags(self, flexible: bool) -> None:
        if not flexible:
            return
        rng = self.rng
        if not self.hostile():
            self.buf.write(b"\x00")
            return
        choice = rng.randrange(5)
        if choice == 0:  # millions of tags claimed, a few present
            self.buf.write(_uvarint(rng.choice([2**31, 10**6, 2**63])))
            self.buf.write(_uvarint(1) + _uvarint(2) + b"ab")
        elif choice == 1:  # the same tag twice
            self.buf.write(_uvarint(2) + (_uvarint(7) + _uvarint(1) + b"x") * 2)
        elif choice == 2:  # a tag whose size runs past the frame
            self.buf.write(_uvarint(1) + _uvarint(3) + _uvarint(2**31) + b"y")
        elif choice == 3:  # many small unknown tags, in order
            count = rng.randint(50, 500)
            self.buf.write(_uvarint(count))
            for tag in range(count):
                self.buf.write(_uvarint(tag + 100) + _uvarint(1) + b"z")
        else:  # tags out of order
            self.buf.write(_uvarint(2) + _uvarint(9) + _uvarint(0) + _uvarint(3) + _uvarint(0))

    # -- messages -------------------------------------------------------------------------------

    def entity(self, cls: type, depth: int) -> None:
        flexible = bool(getattr(cls, "__flexible__", False))
        for f in dataclasses.fields(cls):
            if f.metadata.get("tag") is not None:
                continue  # tagged fields are written (or faked) in the tag section
            self.field(f, flexible, depth)
        self.tags(flexible)

    def field(self, f: dataclasses.Field[Any], flexible: bool, depth: int) -> None:
        shape = classify_field(f)
        nullable = is_optional(f)
        if isinstance(shape, EntityTupleField | PrimitiveTupleField):
            self.array(f, shape, flexible, depth)
        elif isinstance(shape, EntityField):
            if nullable and self.rng.random() < 0.3:
                self.buf.write(b"\xff")
                return
            if nullable:
                self.buf.write(b"\x01")
            self.entity(shape.type_, depth + 1)
        else:
            self.value(str(f.metadata.get("kafka_type")), flexible, nullable)

    def value(self, kind: str, flexible: bool, nullable: bool) -> None:
        if kind == "string":
            self.string(flexible, nullable)
        elif kind in ("bytes", "records"):
            self.blob(kind, flexible)
        else:
            self.fixed(kind)

    def array(self, f: dataclasses.Field[Any], shape: Any, flexible: bool, depth: int) -> None:
        rng = self.rng
        real = 0 if depth >= MAX_DEPTH else rng.choice([0, 1, 1, 2, 3])
        if self.hostile():
            self.length(self.lying_count(real), flexible, wide=True)
        else:
            self.length(real, flexible, wide=True)
        for _ in range(real):
            if isinstance(shape, EntityTupleField):
                self.entity(shape.type_, depth + 1)
            else:
                self.value(str(f.metadata.get("kafka_type")), flexible, nullable=False)


def crafted_batch(rng: random.Random) -> bytes:
    """A record batch with one kind of damage, its CRC recomputed so deeper checks see it."""
    records = [(b"k", b"v" * rng.randint(0, 64)) for _ in range(rng.randint(1, 5))]
    buf = bytearray(build_batch(records, timestamp_ms=1_700_000_000_000))
    damage = rng.randrange(12)
    if damage == 0:  # an unknown or mismatched codec (attributes: low 3 bits)
        buf[22] = (buf[22] & 0xF8) | rng.choice([1, 2, 3, 4, 5, 6, 7])
    elif damage == 1:  # a record count that lies
        struct.pack_into(">i", buf, 57, rng.choice([2**31 - 1, -1, 0, 10**6]))
    elif damage == 2:  # a batch length that lies
        struct.pack_into(">i", buf, 8, rng.choice([2**31 - 1, 0, -1, len(buf) + 100, 10]))
    elif damage == 3:  # magic 0, 1 or unknown
        buf[16] = rng.choice([0, 1, 3, 255])
    elif damage == 4:  # the control flag on data records
        buf[22] |= 0x20
    elif damage == 5:  # the transactional flag without a producer id
        buf[22] |= 0x10
    elif damage == 6:  # a lastOffsetDelta that disagrees with the records
        struct.pack_into(">i", buf, 23, rng.choice([2**31 - 1, -1, 1000]))
    elif damage == 7:  # extreme timestamps
        struct.pack_into(">qq", buf, 27, -(2**63), 2**63 - 1)
    elif damage == 8:  # a record's varint length past the batch (records start at 61)
        buf[61 : 61 + 5] = b"\xff\xff\xff\xff\x0f"
    elif damage == 9:  # truncated inside the records
        del buf[rng.randint(61, len(buf) - 1) :]
    elif damage == 10:  # two batches, the second one cut short
        buf += buf[: rng.randint(1, 40)]
    else:  # a producer id and epoch out of range
        struct.pack_into(
            ">qh", buf, 43, rng.choice([-2, 2**63 - 1, 0]), rng.choice([-2, 2**15 - 1])
        )
    _fix_crc(buf)
    return bytes(buf)


def _fix_crc(buf: bytearray) -> None:
    """The batch CRC covers the attributes to the end."""
    if len(buf) >= 21:
        struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))


def _header(api_key: int, version: int, correlation_id: int) -> bytes:
    cls = load_request(api_key, version)
    header_cls = cls.__header_schema__
    buf = io.BytesIO()
    entity_writer(header_cls)(
        buf,
        header_cls(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=correlation_id,
            client_id="structural-fuzz",
        ),
    )
    return buf.getvalue()


class FrameFactory:
    """Hostile request bodies (without the 4-byte size) of every advertised API and version."""

    def __init__(self, seed: int, hostility: float = 0.3) -> None:
        self.rng = random.Random(seed)
        self.hostility = hostility
        self.versions = [
            (k, v) for k, (_n, lo, hi) in sorted(SUPPORTED.items()) for v in range(lo, hi + 1)
        ]
        self.correlation = 0

    def __call__(self) -> bytes:
        rng = self.rng
        if rng.random() < 0.25:
            api_key, version = 0, rng.choice([v for k, v in self.versions if k == 0])
        else:
            api_key, version = rng.choice(self.versions)
        self.correlation += 1
        writer = _Writer(rng, self.hostility)
        writer.entity(load_request(api_key, version), depth=0)
        body = writer.buf.getvalue()
        if rng.random() < 0.15:  # cut short anywhere
            body = body[: rng.randint(0, len(body))]
        return _header(api_key, version, self.correlation) + body


def factory(seed: int) -> Callable[[], bytes]:
    """A frame source for ``tests.fuzz_rig`` (hostile fields 30 % of the time)."""
    return FrameFactory(seed)
