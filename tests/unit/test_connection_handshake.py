"""A broker that accepts the TCP connection and drops it during ApiVersions (a broker starting
up, shutting down or restarting after kill -9): a retriable NetworkError, not a raw OSError."""

from __future__ import annotations

import socket
import struct
import threading

import pytest

from producer.protocol.connection import BrokerConnection
from txn.errors import NetworkError, RetriableError


def test_a_connection_reset_during_the_handshake_is_a_network_error() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def reset_first_connection() -> None:
        conn, _ = server.accept()
        conn.recv(4096)  # the ApiVersions request
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()  # RST

    peer = threading.Thread(target=reset_first_connection)
    peer.start()
    try:
        client = BrokerConnection("127.0.0.1", port, client_id="t", timeout_s=5)
        with pytest.raises(NetworkError) as raised:
            client.connect()
        assert isinstance(raised.value, RetriableError)
        assert "handshake" in str(raised.value)
        client.close()
    finally:
        peer.join()
        server.close()
