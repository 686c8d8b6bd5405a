"""Binary primitives shared by the coordinator record schemas (Kafka's flexible encoding)."""

from __future__ import annotations

import struct


def uvarint(value: int) -> bytes:
    """An unsigned varint (compact lengths, tag numbers)."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def compact_string(text: str) -> bytes:
    data = text.encode("utf-8")
    return uvarint(len(data) + 1) + data


_STRUCTS: dict[str, struct.Struct] = {}


def _struct(fmt: str) -> struct.Struct:
    compiled = _STRUCTS.get(fmt)
    if compiled is None:
        compiled = _STRUCTS[fmt] = struct.Struct(fmt)
    return compiled


class Reader:
    """Reads a record field by field; every failure raises ``error`` (the schema's own class)."""

    def __init__(self, buf: bytes | bytearray | memoryview, error: type[ValueError]) -> None:
        self._buf = memoryview(buf)
        self._len = len(self._buf)
        self._error = error
        self.pos = 0

    def take(self, fmt: str) -> int:
        (value,) = self.unpack(fmt)
        return int(value)

    def unpack(self, fmt: str) -> tuple[int, ...]:
        """The next fields of struct format ``fmt``, all at once."""
        compiled = _STRUCTS.get(fmt) or _struct(fmt)
        pos = self.pos
        end = pos + compiled.size
        if end > self._len:
            raise self._error("record ends early")
        self.pos = end
        return compiled.unpack_from(self._buf, pos)

    def raw(self, size: int) -> bytes:
        if size < 0 or self.pos + size > self._len:
            raise self._error("record ends early")
        out = bytes(self._buf[self.pos : self.pos + size])
        self.pos += size
        return out

    def uvarint(self) -> int:
        buf = self._buf
        pos = self.pos
        result = shift = 0
        while True:
            if shift > 63:
                raise self._error("varint too long")
            if pos >= self._len:
                raise self._error("record ends early")
            byte = buf[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                self.pos = pos
                return result
            shift += 7

    def varint(self) -> int:
        raw = self.uvarint()
        return (raw >> 1) ^ -(raw & 1)

    def text(self, size: int) -> str:
        try:
            return self.raw(size).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._error("invalid UTF-8 string") from exc

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self.raw(self.uvarint())

    def at_end(self) -> bool:
        return self.pos == self._len
