"""Connection limits: the same raw-socket program against Apache Kafka and sharetxn.

``max.connections``: a listener at the cap stops accepting; a client over it stays
unanswered (waiting in the listen backlog) until a connection closes, then it is served.
``max.connections.per.ip``: a connection over the per-address limit is closed at once.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator

import pytest

from coordinator.launcher import LocalBroker
from tests.kafka_wire import WireClient
from tests.reference.conftest import kafka_node

pytestmark = pytest.mark.reference

LIMITS = {"max.connections": "3", "max.connections.per.ip.overrides": "127.0.0.2:1"}
API_VERSIONS = {"client_software_name": "t", "client_software_version": "1"}


@pytest.fixture(scope="module", params=["kafka", "sharetxn"])
def bootstrap(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    directory = tmp_path_factory.mktemp(f"limits-{request.param}")
    if request.param == "kafka":
        yield from (node.bootstrap_servers for node in kafka_node(directory, LIMITS))
    else:
        with LocalBroker(data_dir=directory / "data", config=LIMITS) as broker:
            yield broker.bootstrap_servers


def _answered_within(client: WireClient, seconds: float) -> bool:
    client.sock.settimeout(seconds)
    try:
        return bool(client.sock.recv(4))
    except TimeoutError:
        return False
    finally:
        client.sock.settimeout(10)


def test_over_max_connections_waits_for_a_slot(bootstrap: str) -> None:
    """What a client over ``max.connections`` sees: silence, then service once one closes."""
    held = [WireClient(bootstrap) for _ in range(3)]
    try:
        for client in held:
            assert int(client.request(18, 3, API_VERSIONS).error_code) == 0
        waiting = WireClient(bootstrap)  # connected: the kernel's backlog completes it
        waiting.send_raw(waiting.encode(18, 3, API_VERSIONS))
        assert not _answered_within(waiting, 2.0)
        held.pop().close()
        assert _answered_within(waiting, 10.0)
        waiting.close()
    finally:
        for client in held:
            client.close()


def test_over_the_per_ip_limit_is_closed(bootstrap: str) -> None:
    """From 127.0.0.2 (limit 1): the second connection is closed without an answer."""
    host, port = bootstrap.rsplit(":", 1)
    first = socket.create_connection((host, int(port)), timeout=10, source_address=("127.0.0.2", 0))
    second = socket.create_connection(
        (host, int(port)), timeout=10, source_address=("127.0.0.2", 0)
    )
    try:
        frame = WireClient.__new__(WireClient)
        frame.correlation = 0
        request = frame.encode(18, 3, API_VERSIONS)
        first.sendall(struct.pack(">i", len(request)) + request)
        assert len(first.recv(4)) == 4
        second.settimeout(10)
        try:
            second.sendall(struct.pack(">i", len(request)) + request)
            data = second.recv(4)
        except OSError:
            data = b""
        assert data == b""  # closed, unanswered
    finally:
        first.close()
        second.close()
