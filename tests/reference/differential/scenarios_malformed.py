"""Malformed, unsupported and out-of-order requests on the raw wire."""

from __future__ import annotations

import socket
import struct
from typing import Any

from tests.kafka_wire import WireClient
from tests.reference.differential.ctx import Ctx
from tests.reference.differential.framework import scenario
from tests.reference.differential.share import ShareMember, share_group, unjoined_member
from tests.reference.differential.wire import plain

AREA = "malformed"


def _closed(client: WireClient, timeout_s: float = 5.0) -> str:
    """What the broker did after a bad frame: "closed" or "answered"."""
    client.sock.settimeout(timeout_s)
    try:
        data = client.sock.recv(4)
    except TimeoutError:
        return "kept-open-silent"
    except OSError:
        return "closed"
    return "closed" if not data else "answered"


def _raw(ctx: Ctx) -> WireClient:
    return WireClient(ctx.bootstrap)


def _reaction_to(ctx: Ctx, data: bytes, *, framed: bool = True) -> str:
    """Send ``data`` on a new connection (as one frame, or as raw bytes) and say what followed."""
    c = _raw(ctx)
    try:
        if framed:
            c.send_raw(data)
        else:
            c.sock.sendall(data)
        return _closed(c)
    finally:
        c.close()


def _header(api_key: int, version: int, correlation: int = 1, client: str = "t") -> bytes:
    cid = client.encode()
    return struct.pack(">hhih", api_key, version, correlation, len(cid)) + cid


@scenario(AREA)
def api_versions_unsupported_version(ctx: Ctx) -> Any:
    c = _raw(ctx)
    try:
        c.send_raw(_header(18, 99) + b"\x00")
        frame = c.recv_frame()
        correlation, error = struct.unpack_from(">ih", frame, 0)
        count = struct.unpack_from(">i", frame, 6)[0]
        keys = {struct.unpack_from(">h", frame, 10 + 6 * i)[0] for i in range(count)}
        return {"correlation": correlation, "error": error, "lists_api_versions": 18 in keys}
    finally:
        c.close()


@scenario(AREA)
def unknown_api_key(ctx: Ctx) -> Any:
    return _reaction_to(ctx, _header(2000, 0))


@scenario(AREA)
def produce_version_below_minimum(ctx: Ctx) -> Any:
    return _reaction_to(ctx, _header(0, 1) + b"\x00" * 10)


@scenario(AREA)
def unsupported_version_above_maximum(ctx: Ctx) -> Any:
    return _reaction_to(ctx, _header(3, 40) + b"\x00" * 10)


@scenario(AREA)
def garbage_body(ctx: Ctx) -> Any:
    return _reaction_to(ctx, _header(3, 12) + b"\xff" * 7)


@scenario(AREA)
def garbage_body_with_error_code(ctx: Ctx) -> Any:
    # Heartbeat v3: its response has a top-level error code; the group id runs past the frame
    return _reaction_to(ctx, _header(12, 3) + b"\x00\x05ab")


@scenario(AREA)
def unsupported_version_with_error_code(ctx: Ctx) -> Any:
    return _reaction_to(ctx, _header(12, 99) + b"\x00" * 10)


@scenario(AREA)
def garbage_api_versions_body(ctx: Ctx) -> Any:
    # ApiVersions v3 (flexible): the client software name's length runs past the frame
    return _reaction_to(ctx, _header(18, 3) + b"\x00\x7fab")


@scenario(AREA)
def truncated_header(ctx: Ctx) -> Any:
    return _reaction_to(ctx, b"\x00\x03")


@scenario(AREA)
def negative_frame_size(ctx: Ctx) -> Any:
    return _reaction_to(ctx, struct.pack(">i", -5) + b"abcd", framed=False)


@scenario(AREA)
def oversized_frame(ctx: Ctx) -> Any:
    return _reaction_to(ctx, struct.pack(">i", 200 * 1024 * 1024) + b"abcd", framed=False)


@scenario(AREA)
def request_after_bad_one_on_new_connection(ctx: Ctx) -> Any:
    c = _raw(ctx)
    c.send_raw(_header(2000, 0))
    _closed(c)
    c.close()
    return plain(ctx.metadata([]).topics)


@scenario(AREA)
def share_fetch_before_heartbeat_with_acks(ctx: Ctx) -> Any:
    t, m = unjoined_member(ctx, "m")
    return {
        "fetch_with_acks_epoch0": m.fetch({(t, 0): [(0, 0, [1])]}, max_wait_ms=100)["error_code"],
        "ack_unknown_session": m.acknowledge({(t, 0): [(0, 0, [1])]}, session_epoch=3)[
            "error_code"
        ],
    }


@scenario(AREA)
def share_fetch_unknown_topic_id(ctx: Ctx) -> Any:
    import uuid  # noqa: PLC0415

    t = ctx.create_topic("m")
    g = share_group(ctx)
    m = ShareMember(ctx, g, [t])
    m.join()
    resp = m.fetch_raw(
        topics=[
            {
                "topic_id": uuid.uuid4(),
                "partitions": [{"partition_index": 0, "acknowledgement_batches": []}],
            }
        ],
        max_wait_ms=100,
    )
    return {
        "error_code": plain(resp.error_code, "error_code"),
        "partitions": [
            plain(p.error_code, "error_code") for r in resp.responses for p in r.partitions
        ],
    }


@scenario(AREA)
def share_heartbeat_empty_group_id(ctx: Ctx) -> Any:
    t = ctx.create_topic("m")
    m = ShareMember(ctx, "", [t])
    return plain(m.heartbeat().error_code, "error_code")


@scenario(AREA)
def end_txn_before_init(ctx: Ctx) -> Any:
    tid = ctx.name("never")
    ctx.find_coordinator(tid, 1)
    return {"end": ctx.end_txn(tid, 12345, 0, True), "add": ctx.add_partitions(tid, 12345, 0, "x")}


@scenario(AREA)
def transactional_produce_with_idempotent_pid(ctx: Ctx) -> Any:
    t = ctx.create_topic("m")
    _, pid, epoch = ctx.init_pid()
    return ctx.produce(t, ["a"], pid=pid, epoch=epoch, seq=0, txn_id=ctx.name("fake"))


@scenario(AREA)
def idle_connection_stays_open(ctx: Ctx) -> Any:
    s = socket.create_connection(tuple(ctx.bootstrap.rsplit(":", 1)))  # type: ignore[arg-type]
    try:
        s.settimeout(1.0)
        try:
            data = s.recv(1)
        except TimeoutError:
            return "open"
        return "closed" if not data else "data"
    finally:
        s.close()
