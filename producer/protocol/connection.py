"""One blocking, thread-safe connection to one broker, speaking the Kafka protocol via kio.

The connection negotiates API versions on connect (ApiVersions v3, falling
back to v0 as KIP-511 describes) and serialises requests: one in flight at a
time, responses matched by correlation id.  Request bodies are plain dicts
rendered into the negotiated version (``txn.wire_render.render``).
"""

from __future__ import annotations

import io
import random
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from kio.serial import entity_reader, entity_writer

from producer.protocol.security import ClientSecurity
from txn.api_keys import KIP1289_APIS, ApiKey
from txn.errors import (
    ClosedError,
    ErrorCode,
    Kip1289NotSupportedError,
    NetworkError,
    UnsupportedVersionError,
)
from txn.kip1289_schema import KIP1289_FEATURE, KIP1289_FEATURE_LEVEL
from txn.kip1289_schema import load_request as load_request_schema
from txn.kip1289_schema import load_response as load_response_schema
from txn.wire_guard import WireBoundsError, check_entity
from txn.wire_render import render

CLIENT_SOFTWARE_VERSION = "0.1.0"

_T = TypeVar("_T")


class BrokerConnection:
    """A socket to ``host:port`` with negotiated API versions."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str = "sharetxn",
        timeout_s: float = 30.0,
        security: ClientSecurity | None = None,
    ) -> None:
        self.security = security or ClientSecurity()
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._correlation = 0
        self.versions: dict[int, tuple[int, int]] = {}
        #: Finalized feature levels (ApiVersions v3), e.g. ``{"share.version": 2}``.
        self.features: dict[str, int] = {}
        #: KIP-368: when (time.monotonic()) to re-authenticate before the next request.
        self._reauth_at: float | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def connect(self) -> None:
        with self._lock:
            if self._sock is not None:
                return
            try:
                self._sock = socket.create_connection(
                    (self.host, self.port), timeout=self.timeout_s
                )
            except socket.gaierror as exc:
                msg = f"cannot resolve {self.host!r} ({self.address}): {exc.strerror or exc}"
                raise NetworkError(msg) from exc
            except OSError as exc:
                msg = f"cannot connect to {self.address}: {exc}"
                raise NetworkError(msg) from exc
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                context = self.security.ssl_context()
                if context is not None:
                    try:
                        self._sock = context.wrap_socket(self._sock, server_hostname=self.host)
                    except (ssl.SSLError, OSError) as exc:
                        msg = f"TLS handshake with {self.address} failed: {exc}"
                        raise NetworkError(msg) from exc
                # KIP-511: Apache Kafka answers INVALID_REQUEST to an empty software version
                # (the client would then fall back to v0 and learn no feature levels).
                resp = self._roundtrip(
                    ApiKey.API_VERSIONS,
                    3,
                    {
                        "client_software_name": "sharetxn",
                        "client_software_version": CLIENT_SOFTWARE_VERSION,
                    },
                )
                if int(resp.error_code) == ErrorCode.NONE:
                    self.versions = {
                        int(k.api_key): (int(k.min_version), int(k.max_version))
                        for k in resp.api_keys
                    }
                    self.features = {
                        str(f.name): int(f.max_version_level) for f in resp.finalized_features
                    }
                else:
                    resp = self._roundtrip(ApiKey.API_VERSIONS, 0, {})
                    self.versions = {
                        int(k.api_key): (int(k.min_version), int(k.max_version))
                        for k in resp.api_keys
                    }
                self._session_started(self.security.authenticate(self._roundtrip, self.address))
            except OSError as exc:
                # A broker that accepts and then drops the connection (starting up, shutting
                # down, or restarting after a crash) is a network error: retriable.
                self._close_locked()
                msg = f"connection to {self.address} failed during its handshake: {exc}"
                raise NetworkError(msg) from exc
            except BaseException:
                self._close_locked()
                raise

    def _session_started(self, lifetime_ms: int) -> None:
        """Re-authenticate after 85-95% of the session's lifetime, as the Java clients."""
        if lifetime_ms <= 0:
            self._reauth_at = None
            return
        share = random.uniform(0.85, 0.95)
        self._reauth_at = time.monotonic() + lifetime_ms * share / 1000

    def pick_version(self, api_key: ApiKey, client_max: int, client_min: int = 0) -> int:
        """The highest version both sides support."""
        if not self.versions:
            self.connect()
        if api_key in KIP1289_APIS:
            self.require_kip1289(api_key)
        span = self.versions.get(api_key)
        if span is None or span[1] < client_min or span[0] > client_max:
            wanted = f"v{client_min}-v{client_max}"
            msg = f"broker {self.address} does not support API {api_key} in {wanted}"
            raise UnsupportedVersionError(msg, api_key=int(api_key))
        return min(span[1], client_max)

    def require_kip1289(self, api_key: ApiKey) -> None:
        """Fail fast unless the broker serves the KIP-1289 API ``api_key`` (sharetxn's keys).

        The keys alone prove nothing (Apache Kafka 4.4 serves other APIs under two of them,
        see ``txn.api_keys``): the broker must also finalize the ``share.transaction.version``
        feature.
        """
        if not self.versions:
            self.connect()
        name = ApiKey(api_key).api_name if api_key in KIP1289_APIS else f"API {api_key}"
        if self.features.get(KIP1289_FEATURE, 0) >= KIP1289_FEATURE_LEVEL and (
            api_key in self.versions
        ):
            return
        msg = (
            f"the cluster at {self.address} does not support KIP-1289 (transactional share "
            f"acknowledgements): {name} (API {api_key}) is not available, the broker does not "
            f"advertise the {KIP1289_FEATURE} feature; acknowledge with "
            "share.acknowledgement.mode=explicit or implicit instead"
        )
        raise Kip1289NotSupportedError(msg, api=name, api_key=int(api_key), broker=self.address)

    def request(self, api_key: ApiKey, version: int, body: Mapping[str, Any]) -> Any:
        """Send one request and wait for its response (a kio entity)."""
        return self._on_open_socket(lambda: self._roundtrip(api_key, version, body))

    def request_raw(self, api_key: ApiKey, version: int, body: Mapping[str, Any]) -> bytes:
        """Send one request; return the response body bytes after the response header."""
        payload, offset = self._on_open_socket(lambda: self._exchange(api_key, version, body))
        return payload[offset:]

    def _on_open_socket(self, exchange: Callable[[], _T]) -> _T:
        """Run ``exchange`` on the open socket, under the lock; a socket error closes it."""
        self.connect()
        with self._lock:
            if self._sock is None:
                msg = f"connection to {self.address} is closed"
                raise ClosedError(msg)
            try:
                if self._reauth_at is not None and time.monotonic() >= self._reauth_at:
                    # KIP-368: SaslHandshake + SaslAuthenticate again on this connection
                    # (a refusal closes it, as the broker does).
                    try:
                        lifetime = self.security.authenticate(self._roundtrip, self.address)
                    except Exception:
                        self._close_locked()
                        raise
                    self._session_started(lifetime)
                return exchange()
            except OSError as exc:
                self._close_locked()
                msg = f"request to {self.address} failed: {exc}"
                raise NetworkError(msg) from exc

    def _roundtrip(self, api_key: ApiKey, version: int, body: Mapping[str, Any]) -> Any:
        payload, offset = self._exchange(api_key, version, body)
        resp_cls = load_response_schema(api_key, version)
        value, _ = entity_reader(resp_cls)(payload, offset)
        return value

    def _exchange(
        self, api_key: ApiKey, version: int, body: Mapping[str, Any]
    ) -> tuple[bytes, int]:
        assert self._sock is not None
        self._correlation += 1
        correlation = self._correlation
        cls = load_request_schema(api_key, version)
        buf = io.BytesIO()
        buf.write(b"\x00\x00\x00\x00")
        header_cls = cls.__header_schema__
        header = render(
            header_cls,
            {
                "request_api_key": api_key,
                "request_api_version": version,
                "correlation_id": correlation,
                "client_id": self.client_id,
            },
        )
        entity_writer(header_cls)(buf, header)
        entity_writer(cls)(buf, render(cls, body))
        frame = buf.getbuffer()
        struct.pack_into(">i", frame, 0, len(frame) - 4)
        self._sock.sendall(frame)
        size = struct.unpack(">i", self._recv_exact(4))[0]
        payload = self._recv_exact(size)
        resp_cls = load_response_schema(api_key, version)
        try:
            # Every length bounded by the frame before the native reader allocates it.
            check_entity(resp_cls, payload, check_entity(resp_cls.__header_schema__, payload, 0))
        except WireBoundsError as exc:
            self._close_locked()
            msg = f"malformed response from {self.address}: {exc}"
            raise NetworkError(msg) from exc
        resp_header, offset = entity_reader(resp_cls.__header_schema__)(payload, 0)
        if int(resp_header.correlation_id) != correlation:
            self._close_locked()
            msg = f"correlation id mismatch from {self.address}"
            raise NetworkError(msg)
        return payload, offset

    def _recv_exact(self, n: int) -> bytes:
        assert self._sock is not None
        chunks = bytearray()
        while len(chunks) < n:
            chunk = self._sock.recv(n - len(chunks))
            if not chunk:
                msg = f"{self.address} closed the connection"
                raise ConnectionResetError(msg)
            chunks += chunk
        return bytes(chunks)

    def _close_locked(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None
                self.versions = {}

    def close(self) -> None:
        with self._lock:
            self._close_locked()
