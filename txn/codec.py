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


class Reader:
    """Reads a record field by field; every failure raises ``error`` (the schema's own class)."""

    def __init__(self, buf: bytes | bytearray | memoryview, error: type[ValueError]) -> None:
        self._buf = memoryview(buf)
        self._error = error
        self.pos = 0

    def take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self._buf):
            raise self._error("record ends early")
        (value,) = struct.unpack_from(fmt, self._buf, self.pos)
        self.pos += size
        return int(value)

    def raw(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self._buf):
            raise self._error("record ends early")
        out = bytes(self._buf[self.pos : self.pos + size])
        self.pos += size
        return out

    def uvarint(self) -> int:
        result = shift = 0
        while True:
            if shift > 63:
                raise self._error("varint too long")
            byte = self.take(">B")
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
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
        return self.pos == len(self._buf)
