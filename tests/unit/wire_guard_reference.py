"""The first bounds check (a schema walker, one step at a time), kept as the oracle of the
compiled one in ``txn.wire_guard``: both must accept and refuse the same bytes at the same
positions.  It shares the schema plans (``_plan``) with the compiled check and walks them
with a cursor, field by field."""

from __future__ import annotations

import dataclasses
import struct

from txn.wire_guard import (
    _FIXED,
    _VARIABLE,
    WireBoundsError,
    _min_element,
    _plan,
    _Step,
)


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
