"""Bounds of a Kafka message checked before the native decoder sees it.

kio's native reader allocates an array's or a string's length before reading its elements,
so one untrusted length (a compact array of 2**32 entries in a 20-byte request) aborts the
whole process.  ``check_entity`` walks the message with the same schema, in pure Python,
and raises ``WireBoundsError`` unless every length and count fits in what is left of the
frame (an array of N elements needs at least N times its element's smallest encoding), so
the native reader only ever sees lengths it can honour.  Tagged fields are checked inside
their declared size.  It reads nothing into objects: it only moves a position.

Used by the broker for every request (``coordinator.protocol.wire``) and by the client library for
every response (a hostile or broken broker must not take the client down either).
"""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass
from functools import cache
from typing import Any

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    is_optional,
)

_FIXED: dict[str, int] = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "float64": 8,
    "uuid": 16,
}
_VARIABLE = frozenset({"string", "bytes", "records"})


class WireBoundsError(ValueError):
    """A length or count in a message runs past the end of its frame."""


@dataclass(frozen=True, slots=True)
class _Step:
    name: str
    kind: str  # a _FIXED or _VARIABLE type name, or "entity"
    array: bool
    nullable: bool
    entity: type | None = None  # for "entity"


@dataclass(frozen=True, slots=True)
class _Plan:
    flexible: bool
    steps: tuple[_Step, ...]
    tagged: dict[int, _Step]
    min_size: int  # the smallest encoding of one such entity


def _step(f: dataclasses.Field[Any]) -> _Step:
    kind_class = classify_field(f)
    nullable = is_optional(f)
    if isinstance(kind_class, EntityField | EntityTupleField):
        return _Step(
            f.name, "entity", isinstance(kind_class, EntityTupleField), nullable, kind_class.type_
        )
    kafka_type = str(f.metadata.get("kafka_type"))
    if kafka_type not in _FIXED and kafka_type not in _VARIABLE:
        msg = f"field {f.name}: kafka type {kafka_type!r} unknown to the bounds check"
        raise TypeError(msg)
    return _Step(f.name, kafka_type, isinstance(kind_class, PrimitiveTupleField), nullable)


@cache
def _plan(cls: type) -> _Plan:
    flexible = bool(getattr(cls, "__flexible__", False))
    steps: list[_Step] = []
    tagged: dict[int, _Step] = {}
    for f in dataclasses.fields(cls):
        step = _step(f)
        tag = f.metadata.get("tag")
        if tag is not None:
            tagged[int(tag)] = step
        else:
            steps.append(step)
    size = sum(_min_step(s, flexible) for s in steps) + (1 if flexible else 0)
    return _Plan(flexible, tuple(steps), tagged, size)


def _min_step(step: _Step, flexible: bool) -> int:
    if step.array:
        return 1 if flexible else 4
    if step.kind in _FIXED:
        return _FIXED[step.kind]
    if step.kind == "string":
        return 1 if flexible else 2
    if step.kind in ("bytes", "records"):
        return 1 if flexible else 4
    if step.nullable:
        return 1
    assert step.entity is not None
    return _plan(step.entity).min_size


def _min_element(step: _Step, flexible: bool) -> int:
    if step.kind == "entity":
        assert step.entity is not None
        return max(1, _plan(step.entity).min_size)
    return max(1, _min_step(dataclasses.replace(step, array=False), flexible))


class _Cursor:
    __slots__ = ("buf", "end", "pos")

    def __init__(self, buf: bytes | memoryview, pos: int, end: int) -> None:
        self.buf = buf
        self.pos = pos
        self.end = end

    def need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > self.end:
            msg = f"{what}: {n} bytes wanted, {self.end - self.pos} left"
            raise WireBoundsError(msg)

    def skip(self, n: int, what: str) -> None:
        self.need(n, what)
        self.pos += n

    def int16(self, what: str) -> int:
        self.need(2, what)
        (value,) = struct.unpack_from(">h", self.buf, self.pos)
        self.pos += 2
        return int(value)

    def int32(self, what: str) -> int:
        self.need(4, what)
        (value,) = struct.unpack_from(">i", self.buf, self.pos)
        self.pos += 4
        return int(value)

    def uvarint(self, what: str) -> int:
        value = shift = 0
        while True:
            self.need(1, what)
            byte = self.buf[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 63:
                msg = f"{what}: varint too long"
                raise WireBoundsError(msg)


def _length(cur: _Cursor, step: _Step, flexible: bool, what: str) -> int:
    """A string's, bytes' or array's length (-1: null)."""
    if flexible:
        n = cur.uvarint(what) - 1
    elif step.array or step.kind in ("bytes", "records"):
        n = cur.int32(what)
    else:
        n = cur.int16(what)
    if n < -1:
        msg = f"{what}: negative length {n}"
        raise WireBoundsError(msg)
    if n == -1 and not step.nullable and step.kind != "records":
        msg = f"{what}: null where the schema has no null"
        raise WireBoundsError(msg)
    return n


def _value(cur: _Cursor, step: _Step, flexible: bool, what: str) -> None:
    if step.kind in _FIXED:
        cur.skip(_FIXED[step.kind], what)
    elif step.kind in _VARIABLE:
        n = _length(cur, step, flexible, what)
        if n > 0:
            cur.skip(n, what)
    else:
        assert step.entity is not None
        if step.nullable and not step.array:
            cur.need(1, what)
            marker = cur.buf[cur.pos]
            cur.pos += 1
            if marker == 0xFF:  # -1: null
                return
        _entity(cur, step.entity, what)


def _field(cur: _Cursor, step: _Step, flexible: bool, where: str) -> None:
    what = f"{where}.{step.name}"
    if not step.array:
        _value(cur, step, flexible, what)
        return
    count = _length(cur, step, flexible, what)
    if count <= 0:
        return
    smallest = _min_element(step, flexible)
    if count * smallest > cur.end - cur.pos:
        msg = f"{what}: {count} elements cannot fit in {cur.end - cur.pos} bytes"
        raise WireBoundsError(msg)
    element = dataclasses.replace(step, array=False, nullable=False)
    for _ in range(count):
        _value(cur, element, flexible, what)


def _entity(cur: _Cursor, cls: type, where: str) -> None:
    plan = _plan(cls)
    for step in plan.steps:
        _field(cur, step, plan.flexible, where)
    if plan.flexible:
        for _ in range(cur.uvarint(f"{where} tagged fields")):
            tag = cur.uvarint(f"{where} tag")
            size = cur.uvarint(f"{where} tag {tag} size")
            cur.need(size, f"{where} tag {tag}")
            tagged = plan.tagged.get(tag)
            if tagged is None:
                cur.pos += size
                continue
            inner = _Cursor(cur.buf, cur.pos, cur.pos + size)
            _field(inner, tagged, True, where)
            cur.pos += size


def check_entity(cls: type, buf: bytes | memoryview, pos: int = 0) -> int:
    """Check the entity ``cls`` encoded at ``pos``; the position after it."""
    cur = _Cursor(buf, pos, len(buf))
    _entity(cur, cls, cls.__name__)
    return cur.pos


def check_request_header(frame: bytes | memoryview, flexible: bool) -> int:
    """Request header v1/v2: the client id is a legacy nullable string in both; the position
    of the body."""
    cur = _Cursor(frame, 0, len(frame))
    cur.skip(8, "request header")
    n = cur.int16("client id")
    if n < -1:
        msg = f"client id: negative length {n}"
        raise WireBoundsError(msg)
    if n > 0:
        cur.skip(n, "client id")
    if flexible:
        for _ in range(cur.uvarint("header tagged fields")):
            cur.uvarint("header tag")
            cur.skip(cur.uvarint("header tag size"), "header tag")
    return cur.pos
