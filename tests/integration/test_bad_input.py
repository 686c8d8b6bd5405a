"""Random, truncated, unknown and oversized frames never disturb the broker."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.launcher import LocalBroker
from tests.kafka_wire import WireClient

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    with LocalBroker(data_dir=tmp_path_factory.mktemp("bad")) as b:
        yield b


def _still_serves(bootstrap: str) -> None:
    client = WireClient(bootstrap)
    try:
        resp = client.request(18, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert int(resp.error_code) == 0
    finally:
        client.close()


def _send_and_read(bootstrap: str, payload: bytes) -> bytes | None:
    """Send one frame; return the response frame, or None if the broker closed the connection."""
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        try:
            head = sock.recv(4)
        except (ConnectionResetError, TimeoutError):
            return None
        if len(head) < 4:
            return None
        size = struct.unpack(">i", head)[0]
        body = b""
        while len(body) < size:
            chunk = sock.recv(size - len(body))
            if not chunk:
                break
            body += chunk
        return body


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    api_key=st.sampled_from(
        [
            0,
            1,
            2,
            3,
            8,
            9,
            10,
            11,
            12,
            13,
            14,
            15,
            18,
            19,
            22,
            24,
            25,
            26,
            28,
            47,
            65,
            66,
            68,
            69,
            999,
        ]
    ),
    version=st.integers(-1, 20),
    tail=st.binary(max_size=200),
)
def test_random_frames_get_an_error_or_a_clean_close(
    shared_broker: LocalBroker, api_key: int, version: int, tail: bytes
) -> None:
    payload = struct.pack(">hhi", api_key, version, 42) + tail
    response = _send_and_read(shared_broker.bootstrap_servers, payload)
    if response is not None:
        assert struct.unpack_from(">i", response, 0)[0] == 42  # correlation id echoed
    _still_serves(shared_broker.bootstrap_servers)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cut=st.integers(min_value=8, max_value=60))
def test_truncated_valid_frames(shared_broker: LocalBroker, cut: int) -> None:
    client = WireClient(shared_broker.bootstrap_servers)
    frame = client.encode(
        19,
        7,
        {
            "topics": [{"name": "never-created", "num_partitions": 1, "replication_factor": 1}],
            "timeout": 1000,
        },
    )
    client.close()
    response = _send_and_read(shared_broker.bootstrap_servers, frame[: min(cut, len(frame) - 1)])
    if response is not None:
        assert len(response) >= 4
    _still_serves(shared_broker.bootstrap_servers)


def test_unsupported_api_versions_request_gets_v0_error(shared_broker: LocalBroker) -> None:
    response = _send_and_read(
        shared_broker.bootstrap_servers, struct.pack(">hhi", 18, 99, 7) + b"\x00\x00"
    )
    assert response is not None
    correlation, error = struct.unpack_from(">ih", response, 0)
    assert (correlation, error) == (7, 35)


@pytest.mark.parametrize(
    "payload",
    [
        # Heartbeat v3 (its response has an error code): the group id runs past the frame
        struct.pack(">hhih", 12, 3, 7, 1) + b"x" + b"\x00\x05ab",
        # Heartbeat at a version no broker serves
        struct.pack(">hhih", 12, 99, 7, 1) + b"x" + b"\x00" * 10,
        # FindCoordinator v0 with a null key
        struct.pack(">hhih", 10, 0, 7, 1) + b"x" + b"\xff\xff",
        # an unknown API key
        struct.pack(">hhih", 2000, 0, 7, 1) + b"x",
    ],
    ids=["undecodable", "unsupported-version", "null-key", "unknown-api"],
)
def test_undecodable_or_unsupported_requests_close_the_connection(
    shared_broker: LocalBroker, payload: bytes
) -> None:
    """As Kafka's SocketServer (InvalidRequestException): closed, nothing answered."""
    assert _send_and_read(shared_broker.bootstrap_servers, payload) is None
    _still_serves(shared_broker.bootstrap_servers)


def test_unknown_topic_gets_an_error(shared_broker: LocalBroker) -> None:
    client = WireClient(shared_broker.bootstrap_servers)
    try:
        resp = client.request(
            2,
            7,
            {
                "replica_id": -1,
                "topics": [
                    {"name": "missing", "partitions": [{"partition_index": 0, "timestamp": -1}]}
                ],
            },
        )
        assert int(resp.topics[0].partitions[0].error_code) == 3  # UNKNOWN_TOPIC_OR_PARTITION
    finally:
        client.close()


def test_oversized_frame_is_refused_without_reading_it_all(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with LocalBroker(
        data_dir=tmp_path_factory.mktemp("big"), config={"socket.request.max.bytes": "1024"}
    ) as b:
        client = WireClient(b.bootstrap_servers)
        frame = client.encode(
            0,
            10,
            {
                "acks": -1,
                "timeout": 1000,
                "topic_data": [
                    {"name": "x", "partition_data": [{"index": 0, "records": b"\x00" * 4000}]}
                ],
            },
        )
        client.close()
        response = _send_and_read(b.bootstrap_servers, frame)
        assert response is None  # closed without reading it, as Kafka does
        _still_serves(b.bootstrap_servers)


def test_idle_connections_are_closed_and_connections_capped(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    config = {"connections.max.idle.ms": "1000", "max.connections": "2"}
    with LocalBroker(data_dir=tmp_path_factory.mktemp("conn"), config=config) as b:
        idle = WireClient(b.bootstrap_servers)
        busy = WireClient(b.bootstrap_servers)
        assert int(busy.request(18, 3, {"client_software_name": "t"}).error_code) == 0
        # A third connection is over max.connections: as Kafka's acceptor, the broker stops
        # accepting (the client waits in the listen backlog) until a connection closes.
        third = WireClient(b.bootstrap_servers)
        third.send_raw(third.encode(18, 3, {"client_software_name": "t"}))
        third.sock.settimeout(0.5)
        with pytest.raises(TimeoutError):
            third.sock.recv(4)
        third.sock.settimeout(10)
        for _ in range(15):  # busy keeps talking; idle says nothing for longer than 1 s
            resp = busy.request(18, 3, {"client_software_name": "t"})
            assert int(resp.error_code) == 0
            time.sleep(0.1)
        with pytest.raises((ConnectionError, OSError)):
            idle.recv_frame()  # the broker closed it
        idle.close()
        # idle's slot went to the waiting connection: its request is answered now
        assert third.recv_frame()
        third.close()
        busy.close()


def test_a_listener_limit_holds_its_clients_until_a_slot_frees(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """``listener.name.<l>.max.connections``: the listener waits; others are not affected."""
    config = {
        "listeners": "PLAINTEXT://127.0.0.1:0,OTHER://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT",
        "listener.name.plaintext.max.connections": "1",
    }
    with LocalBroker(data_dir=tmp_path_factory.mktemp("lst"), config=config) as b:
        plain, other = b.listener_bootstrap("PLAINTEXT"), b.listener_bootstrap("OTHER")
        first = WireClient(plain)
        assert int(first.request(18, 3, {"client_software_name": "t"}).error_code) == 0
        waiting = WireClient(plain)
        waiting.send_raw(waiting.encode(18, 3, {"client_software_name": "t"}))
        waiting.sock.settimeout(0.5)
        with pytest.raises(TimeoutError):
            waiting.sock.recv(4)
        _still_serves(other)  # the broker-wide limit is not reached
        first.close()
        waiting.sock.settimeout(10)
        assert waiting.recv_frame()
        waiting.close()


HUGE_LENGTHS = [
    # (api key, version, flexible header, body): each once aborted the whole broker process
    # (the native decoder allocated the length before reading; txn.wire_guard bounds it now)
    (3, 12, True, b"\xff\xff\xff\xff\x0f"),
    (3, 4, False, struct.pack(">i", 0x7FFFFFFF)),
    (0, 9, True, b"\x00" + struct.pack(">hi", -1, 1000) + b"\xff\xff\xff\xff\x0f"),
    (19, 7, True, b"\xff\xff\xff\xff\x07"),
    (78, 1, True, b"\x01\xff\xff\xff\xff\x07"),
]


@pytest.mark.parametrize(("api_key", "version", "flexible", "body"), HUGE_LENGTHS)
def test_untrusted_lengths_do_not_take_the_broker_down(
    shared_broker: LocalBroker, api_key: int, version: int, flexible: bool, body: bytes
) -> None:
    bystander = WireClient(shared_broker.bootstrap_servers)  # another client, connected
    try:
        header = (
            struct.pack(">hhih", api_key, version, 9, 1) + b"x" + (b"\x00" if flexible else b"")
        )
        response = _send_and_read(shared_broker.bootstrap_servers, header + body)
        if response is not None:
            assert struct.unpack_from(">i", response, 0)[0] == 9
        resp = bystander.request(
            18, 3, {"client_software_name": "t", "client_software_version": "1"}
        )
        assert int(resp.error_code) == 0  # the other connection was not disturbed
    finally:
        bystander.close()
    _still_serves(shared_broker.bootstrap_servers)


def test_broker_only_apis_are_neither_advertised_nor_served(shared_broker: LocalBroker) -> None:
    client = WireClient(shared_broker.bootstrap_servers)
    try:
        resp = client.request(18, 3, {"client_software_name": "t", "client_software_version": "1"})
        advertised = {int(k.api_key) for k in resp.api_keys}
        assert advertised.isdisjoint({83, 84, 85, 86, 87})  # the share state RPCs
        frame = client.encode(85, 0, {"group_id": "g", "topics": []})  # WriteShareGroupState
        client.send_raw(frame)
        # As Kafka for an API not enabled on the listener: the connection is closed (its
        # response has no top-level error code to answer with).
        with pytest.raises(ConnectionError):
            client.recv_frame()
    finally:
        client.close()
    _still_serves(shared_broker.bootstrap_servers)
