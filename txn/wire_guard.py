"""Bounds of a Kafka message checked before the native decoder sees it.

kio's native reader allocates an array's or a string's length before reading its elements,
so one untrusted length (a compact array of 2**32 entries in a 20-byte request) aborts the
whole process.  ``check_entity`` walks the message with the same schema, in pure Python,
and raises ``WireBoundsError`` unless every length and count fits in what is left of the
frame (an array of N elements needs at least N times its element's smallest encoding), so
the native reader only ever sees lengths it can honour.  Tagged fields are checked inside
their declared size.  It reads nothing into objects: it only moves a position.

Each schema class is compiled once into closures: consecutive fixed-size fields are one
bound, an array of fixed-size elements is one multiplication, and error texts are built
only on failure.

Used by the broker for every request (``coordinator.protocol.wire``) and by the client library for
every response (a hostile or broken broker must not take the client down either).
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
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


Buf = bytes | bytearray | memoryview
#: A compiled check: the position after the value at ``pos``, within ``end``.
_Check = Callable[[Buf, int, int], int]

_INT16 = struct.Struct(">h").unpack_from
_INT32 = struct.Struct(">i").unpack_from


def _short(what: str, wanted: int, left: int) -> WireBoundsError:
    return WireBoundsError(f"{what}: {wanted} bytes wanted, {left} left")


def _uvarint(buf: Buf, pos: int, end: int, what: str) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end:
            raise _short(what, 1, end - pos)
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            msg = f"{what}: varint too long"
            raise WireBoundsError(msg)


_Length = Callable[[Buf, int, int], tuple[int, int]]


def _length_reader(step: _Step, flexible: bool, what: str) -> _Length:
    """Reads a string's, bytes' or array's length (-1: null), refusing what cannot be."""
    nullable = step.nullable or step.kind == "records"
    wide = step.array or step.kind in ("bytes", "records")

    def read(buf: Buf, pos: int, end: int) -> tuple[int, int]:
        if flexible:
            n, pos = _uvarint(buf, pos, end, what)
            n -= 1
        elif wide:
            if pos + 4 > end:
                raise _short(what, 4, end - pos)
            n = _INT32(buf, pos)[0]
            pos += 4
        else:
            if pos + 2 > end:
                raise _short(what, 2, end - pos)
            n = _INT16(buf, pos)[0]
            pos += 2
        if n < 0:
            if n < -1:
                msg = f"{what}: negative length {n}"
                raise WireBoundsError(msg)
            if not nullable:
                msg = f"{what}: null where the schema has no null"
                raise WireBoundsError(msg)
        return n, pos

    return read


def _fixed_run(names: list[tuple[str, int]], where: str) -> _Check:
    """Consecutive fixed-size fields, checked at once."""
    total = sum(size for _n, size in names)

    def check(buf: Buf, pos: int, end: int) -> int:
        if pos + total > end:
            at = pos
            for name, size in names:  # the error names the first field that does not fit
                if at + size > end:
                    raise _short(f"{where}.{name}", size, end - at)
                at += size
        return pos + total

    return check


def _element_check(step: _Step, flexible: bool, what: str) -> tuple[_Check | None, int]:
    """One element of ``step``'s array: its check (None: fixed size) and smallest size."""
    element = dataclasses.replace(step, array=False, nullable=False)
    smallest = _min_element(step, flexible)
    if element.kind in _FIXED:
        return None, _FIXED[element.kind]
    return _value_check(element, flexible, what), smallest


def _value_check(step: _Step, flexible: bool, what: str) -> _Check:
    if step.kind in _FIXED:
        return _fixed_run([(step.name, _FIXED[step.kind])], what.rpartition(".")[0])
    if step.kind in _VARIABLE:
        length = _length_reader(step, flexible, what)

        def variable(buf: Buf, pos: int, end: int) -> int:
            n, pos = length(buf, pos, end)
            if n > 0:
                if pos + n > end:
                    raise _short(what, n, end - pos)
                pos += n
            return pos

        return variable
    assert step.entity is not None
    entity = _entity_check(step.entity)
    if not (step.nullable and not step.array):
        return entity

    def nullable_entity(buf: Buf, pos: int, end: int) -> int:
        if pos >= end:
            raise _short(what, 1, end - pos)
        marker = buf[pos]
        if marker == 0xFF:  # -1: null
            return pos + 1
        return entity(buf, pos + 1, end)

    return nullable_entity


def _field_check(step: _Step, flexible: bool, where: str) -> _Check:
    what = f"{where}.{step.name}"
    if not step.array:
        return _value_check(step, flexible, what)
    length = _length_reader(step, flexible, what)
    element, smallest = _element_check(step, flexible, what)

    def array(buf: Buf, pos: int, end: int) -> int:
        count, pos = length(buf, pos, end)
        if count <= 0:
            return pos
        if count * smallest > end - pos:
            msg = f"{what}: {count} elements cannot fit in {end - pos} bytes"
            raise WireBoundsError(msg)
        if element is None:  # fixed-size elements: all of them fit
            return pos + count * smallest
        for _ in range(count):
            pos = element(buf, pos, end)
        return pos

    return array


@cache
def _entity_check(cls: type) -> _Check:
    """The compiled check of entity ``cls`` (fixed-size runs merged into one bound)."""
    plan = _plan(cls)
    where = cls.__name__
    checks: list[_Check] = []
    run: list[tuple[str, int]] = []
    for step in plan.steps:
        if step.kind in _FIXED and not step.array:
            run.append((step.name, _FIXED[step.kind]))
            continue
        if run:
            checks.append(_fixed_run(run, where))
            run = []
        checks.append(_field_check(step, plan.flexible, where))
    if run:
        checks.append(_fixed_run(run, where))
    if not plan.flexible:
        if len(checks) == 1:
            return checks[0]

        def fields(buf: Buf, pos: int, end: int) -> int:
            for check in checks:
                pos = check(buf, pos, end)
            return pos

        return fields
    tagged = {tag: _field_check(step, True, where) for tag, step in plan.tagged.items()}
    what = f"{where} tagged fields"

    def flexible_fields(buf: Buf, pos: int, end: int) -> int:
        for check in checks:
            pos = check(buf, pos, end)
        count, pos = _uvarint(buf, pos, end, what)
        for _ in range(count):
            tag, pos = _uvarint(buf, pos, end, f"{where} tag")
            size, pos = _uvarint(buf, pos, end, f"{where} tag {tag} size")
            if pos + size > end:
                raise _short(f"{where} tag {tag}", size, end - pos)
            inner = tagged.get(tag)
            if inner is not None:
                inner(buf, pos, pos + size)
            pos += size
        return pos

    return flexible_fields


def check_entity(cls: type, buf: Buf, pos: int = 0) -> int:
    """Check the entity ``cls`` encoded at ``pos``; the position after it."""
    return _entity_check(cls)(buf, pos, len(buf))


def check_request_header(frame: Buf, flexible: bool) -> int:
    """Request header v1/v2: the client id is a legacy nullable string in both; the position
    of the body."""
    end = len(frame)
    if end < 10:
        raise _short("request header", 10, end)
    n = _INT16(frame, 8)[0]
    pos = 10
    if n < -1:
        msg = f"client id: negative length {n}"
        raise WireBoundsError(msg)
    if n > 0:
        if pos + n > end:
            raise _short("client id", n, end - pos)
        pos += n
    if flexible:
        count, pos = _uvarint(frame, pos, end, "header tagged fields")
        for _ in range(count):
            _tag, pos = _uvarint(frame, pos, end, "header tag")
            size, pos = _uvarint(frame, pos, end, "header tag size")
            if pos + size > end:
                raise _short("header tag", size, end - pos)
            pos += size
    return pos
