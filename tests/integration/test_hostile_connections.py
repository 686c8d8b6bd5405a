"""Hostile connections (issue 25): limits before and after authentication, as Kafka 4.4.

Each test states what Apache Kafka does (SaslServerAuthenticator, ConnectionQuotas,
the Selector's idle expiry) and checks the broker does the same.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from coordinator.launcher import LocalBroker
from tests.kafka_wire import WireClient

pytestmark = pytest.mark.integration

PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret";'
)
SASL_CONFIG = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
}
API_VERSIONS = {"client_software_name": "t", "client_software_version": "1"}


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    with LocalBroker(data_dir=tmp_path_factory.mktemp("hostile"), config=SASL_CONFIG) as b:
        yield b


def _bootstrap(b: LocalBroker) -> str:
    return b.listener_bootstrap("SASL_PLAINTEXT")


def _rss_kib(b: LocalBroker) -> int:
    assert b.process is not None
    for line in Path(f"/proc/{b.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """True if the broker closes ``sock`` (EOF or reset) within ``seconds``, sending nothing."""
    sock.settimeout(seconds)
    try:
        data = sock.recv(4)
    except TimeoutError:
        return False
    except ConnectionError:
        return True
    assert data == b"", f"the broker answered {data!r}"
    return True


def _send_quietly(sock: socket.socket, data: bytes) -> None:
    """Send what the broker will take; it may close the connection at any point."""
    with contextlib.suppress(OSError):
        sock.sendall(data)


def _authenticated_client_works(bootstrap: str) -> None:
    client = WireClient(bootstrap)
    try:
        assert int(client.request(18, 3, API_VERSIONS).error_code) == 0
        assert int(client.request(17, 1, {"mechanism": "PLAIN"}).error_code) == 0
        token = b"\x00admin\x00admin-secret"
        assert int(client.request(36, 2, {"auth_bytes": token}).error_code) == 0
        topics = client.request(3, 12, {"topics": None, "allow_auto_topic_creation": False})
        assert topics.brokers
    finally:
        client.close()


def test_large_frames_before_authentication_close_the_connection(sasl_broker: LocalBroker) -> None:
    """Kafka reads at most sasl.server.max.receive.size (512 KiB) until authenticated."""
    bootstrap = _bootstrap(sasl_broker)
    before = _rss_kib(sasl_broker)
    socks = []
    for _ in range(3):  # three connections announcing 100 MB frames
        sock = socket.create_connection(bootstrap.rsplit(":", 1), timeout=5)  # type: ignore[arg-type]
        _send_quietly(sock, struct.pack(">i", 100 * 1024 * 1024) + b"\x00" * (8 << 20))
        socks.append(sock)
    for sock in socks:
        assert _closed_within(sock, 5)
        sock.close()
    assert _rss_kib(sasl_broker) - before < 16 * 1024  # nothing of the frames was kept
    # A SaslAuthenticate (after the handshake) larger than the limit: closed, not answered.
    client = WireClient(bootstrap)
    assert int(client.request(17, 1, {"mechanism": "PLAIN"}).error_code) == 0
    _send_quietly(client.sock, client.encode(36, 2, {"auth_bytes": b"\x00" * 600_000}))
    assert _closed_within(client.sock, 5)
    client.close()
    _authenticated_client_works(bootstrap)


def test_frames_up_to_the_limit_are_read_before_authentication(
    sasl_broker: LocalBroker,
) -> None:
    """A 500 KB SaslAuthenticate is read and refused by the mechanism, as in Kafka."""
    client = WireClient(_bootstrap(sasl_broker))
    try:
        assert int(client.request(17, 1, {"mechanism": "PLAIN"}).error_code) == 0
        resp = client.request(36, 2, {"auth_bytes": b"\x00u\x00" + b"p" * 500_000})
        assert int(resp.error_code) == 58  # SASL_AUTHENTICATION_FAILED
    finally:
        client.close()


def test_only_sasl_requests_before_authentication_and_no_body_decoded(
    sasl_broker: LocalBroker,
) -> None:
    bootstrap = _bootstrap(sasl_broker)
    # A malformed ApiVersions / SaslHandshake body before authentication: Kafka closes the
    # connection (InvalidRequestException) rather than answering.
    for key, version in ((18, 3), (17, 1)):
        client = WireClient(bootstrap)
        header = struct.pack(">hhih", key, version, 7, 1) + b"x" + (b"\x00" if key == 18 else b"")
        client.send_raw(header + b"\xff\xff\xff\xff\x0f")
        assert _closed_within(client.sock, 5), key
        client.close()
    # Any other API before the handshake: closed unanswered, whatever its body.
    client = WireClient(bootstrap)
    client.send_raw(struct.pack(">hhih", 3, 12, 7, 1) + b"x\x00" + b"\xff" * 64)
    assert _closed_within(client.sock, 5)
    client.close()
    # After the handshake only SaslAuthenticate: Kafka answers ILLEGAL_SASL_STATE, then closes.
    client = WireClient(bootstrap)
    assert int(client.request(17, 1, {"mechanism": "PLAIN"}).error_code) == 0
    resp = client.request(18, 3, API_VERSIONS)
    assert int(resp.error_code) == 34  # ILLEGAL_SASL_STATE
    assert _closed_within(client.sock, 5)
    client.close()
    _authenticated_client_works(bootstrap)


def test_a_connection_stalled_mid_frame_is_closed(tmp_path: Path) -> None:
    """connections.max.idle.ms also applies inside a frame (Kafka: no bytes for that long)."""
    config = {"connections.max.idle.ms": "1000"}
    with LocalBroker(data_dir=tmp_path / "data", config=config) as b:
        sock = socket.create_connection((b.host, b.port), timeout=5)
        sock.sendall(struct.pack(">i", 200) + b"\x00\x12\x00\x03")  # 8 of 204 bytes
        started = time.monotonic()
        assert _closed_within(sock, 6)
        assert time.monotonic() - started < 5
        sock.close()
        # A slow but steady sender is not cut off: each byte is activity.
        client = WireClient(b.bootstrap_servers)
        frame = client.encode(18, 3, API_VERSIONS)
        data = struct.pack(">i", len(frame)) + frame
        for i in range(0, len(data), max(1, len(data) // 4)):
            client.sock.sendall(data[i : i + max(1, len(data) // 4)])
            time.sleep(0.4)
        assert client.recv_frame()
        client.close()


def test_connections_per_ip_are_capped(tmp_path: Path) -> None:
    """max.connections.per.ip (and its overrides): Kafka closes the extra connection at once."""
    config = {"max.connections.per.ip": "5", "max.connections.per.ip.overrides": "127.0.0.1:2"}
    with LocalBroker(data_dir=tmp_path / "data", config=config) as b:
        first, second = WireClient(b.bootstrap_servers), WireClient(b.bootstrap_servers)
        try:
            assert int(first.request(18, 3, API_VERSIONS).error_code) == 0
            assert int(second.request(18, 3, API_VERSIONS).error_code) == 0
            with socket.create_connection((b.host, b.port), timeout=5) as third:
                assert _closed_within(third, 5)
            assert b.wait_for_output("Rejected connection from 127.0.0.1")
            first.close()
            time.sleep(0.3)  # the slot is freed when the broker sees the close
            again = WireClient(b.bootstrap_servers)
            try:
                assert int(again.request(18, 3, API_VERSIONS).error_code) == 0
            finally:
                again.close()
        finally:
            first.close()
            second.close()
