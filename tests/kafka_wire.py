"""A minimal blocking Kafka wire client for tests (APIs stock clients do not expose)."""

from __future__ import annotations

import io
import socket
import struct
from typing import Any

from kio.serial import entity_reader, entity_writer

from coordinator.protocol.wire import render
from txn.kip1289_schema import load_request as load_request_schema
from txn.kip1289_schema import load_response as load_response_schema


class WireClient:
    def __init__(self, bootstrap: str, timeout_s: float = 10.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        self.correlation = 0

    def close(self) -> None:
        self.sock.close()

    def send_raw(self, payload: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

    def recv_frame(self) -> bytes:
        size = struct.unpack(">i", self._exact(4))[0]
        return self._exact(size)

    def _exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return bytes(buf)

    def encode(self, api_key: int, version: int, body: dict[str, Any]) -> bytes:
        cls = load_request_schema(api_key, version)
        self.correlation += 1
        buf = io.BytesIO()
        header_cls = cls.__header_schema__
        header = header_cls(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=self.correlation,
            client_id="tests",
        )
        entity_writer(header_cls)(buf, header)
        entity_writer(cls)(buf, render(cls, body))
        return buf.getvalue()

    def request(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        self.send_raw(self.encode(api_key, version, body))
        frame = self.recv_frame()
        resp_cls = load_response_schema(api_key, version)
        header, size = entity_reader(resp_cls.__header_schema__)(frame, 0)
        assert header.correlation_id == self.correlation
        value, _ = entity_reader(resp_cls)(frame, size)
        return value
