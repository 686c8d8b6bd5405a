"""The bounds check in front of the native decoder: valid messages pass exactly, hostile
lengths are refused, and byte-level mutations of valid requests never reach the native
reader with a length it cannot honour (a failure here aborts the test process)."""

from __future__ import annotations

import contextlib
import io
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.serial import entity_reader, entity_writer

from coordinator.protocol.api_versions import SUPPORTED
from coordinator.protocol.wire import FrameError, decode_request
from tests.unit import wire_guard_reference as reference
from txn.kip1289_schema import load_request
from txn.wire_guard import WireBoundsError, check_entity, check_request_header
from txn.wire_render import render

VERSIONS = [(k, v) for k, (_n, lo, hi) in sorted(SUPPORTED.items()) for v in range(lo, hi + 1)]


def frame(api_key: int, version: int, body: dict[str, object]) -> bytes:
    cls = load_request(api_key, version)
    header_cls = cls.__header_schema__
    buf = io.BytesIO()
    entity_writer(header_cls)(
        buf,
        header_cls(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=7,
            client_id="guard",
        ),
    )
    entity_writer(cls)(buf, render(cls, body))
    return buf.getvalue()


@pytest.mark.parametrize(("api_key", "version"), VERSIONS)
def test_every_valid_request_passes_exactly(api_key: int, version: int) -> None:
    raw = frame(api_key, version, {})
    cls = load_request(api_key, version)
    at = check_request_header(raw, bool(cls.__header_schema__.__flexible__))
    assert check_entity(cls, raw, at) == len(raw)
    assert decode_request(raw).api_key == api_key


def test_populated_requests_pass() -> None:
    produce = frame(
        0,
        9,
        {
            "acks": -1,
            "timeout": 1000,
            "topic_data": [
                {"name": "t", "partition_data": [{"index": 0, "records": b"\x00" * 70}]},
            ],
        },
    )
    assert decode_request(produce).api_key == 0
    metadata = frame(3, 12, {"topics": [{"name": "a"}, {"name": "b"}]})
    assert decode_request(metadata).api_key == 3


HOSTILE = [
    ("compact array of 2**32 - 2 topics", 3, 12, b"\xff\xff\xff\xff\x0f"),
    ("legacy array of 2**31 - 1 topics", 3, 4, struct.pack(">i", 0x7FFFFFFF)),
    ("array of 1e6 int32 in 20 bytes", 3, 4, struct.pack(">i", 1_000_000) + b"\x00" * 16),
    ("string of 30,000 bytes in 4", 19, 4, struct.pack(">ih", 1, 30000) + b"abcd"),
    ("negative length", 3, 4, struct.pack(">i", -5)),
]


@pytest.mark.parametrize(("what", "api_key", "version", "body"), HOSTILE)
def test_hostile_lengths_are_refused(what: str, api_key: int, version: int, body: bytes) -> None:
    raw = frame(api_key, version, {})
    cls = load_request(api_key, version)
    at = check_request_header(raw, bool(cls.__header_schema__.__flexible__))
    hostile = raw[:at] + body
    with pytest.raises(WireBoundsError):
        check_entity(cls, hostile, at)
    with pytest.raises(FrameError):
        decode_request(hostile)


@settings(max_examples=400, deadline=None)
@given(
    which=st.sampled_from(VERSIONS),
    edits=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), min_size=1, max_size=6),
    cut=st.integers(0, 400),
    tail=st.binary(max_size=12),
)
def test_mutated_requests_never_reach_the_native_reader_unbounded(
    which: tuple[int, int], edits: list[tuple[int, int]], cut: int, tail: bytes
) -> None:
    api_key, version = which
    raw = bytearray(frame(api_key, version, {}))
    for at, byte in edits:
        raw[at % len(raw)] = byte
    mutated = bytes(raw[: max(8, min(cut, len(raw)))]) + tail
    with contextlib.suppress(FrameError):
        decode_request(mutated)


def test_header_client_id_is_bounded() -> None:
    raw = struct.pack(">hhih", 3, 4, 1, 32000) + b"x"
    with pytest.raises(WireBoundsError):
        check_request_header(raw, flexible=False)
    cls = load_request(3, 4)
    assert entity_reader(cls.__header_schema__)  # the native reader is only reached after it


@pytest.mark.parametrize(("api_key", "version"), VERSIONS)
def test_every_response_schema_is_understood(api_key: int, version: int) -> None:
    from txn.kip1289_schema import load_response  # noqa: PLC0415

    cls = load_response(api_key, version)
    buf = io.BytesIO()
    entity_writer(cls)(buf, render(cls, {}))
    assert check_entity(cls, buf.getvalue(), 0) == len(buf.getvalue())


def _outcome(check: Any, cls: type, data: bytes, at: int) -> int | str:
    try:
        return int(check(cls, data, at))
    except WireBoundsError:
        return "refused"


@settings(max_examples=600, deadline=None)
@given(
    which=st.sampled_from(VERSIONS),
    edits=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), min_size=0, max_size=6),
    cut=st.integers(0, 400),
    tail=st.binary(max_size=12),
)
def test_the_compiled_check_agrees_with_the_schema_walker(
    which: tuple[int, int], edits: list[tuple[int, int]], cut: int, tail: bytes
) -> None:
    """The compiled check (merged fixed runs, fixed arrays in one step) accepts and refuses
    exactly what the first, step-by-step walker did, at the same end position."""
    api_key, version = which
    cls = load_request(api_key, version)
    raw = bytearray(frame(api_key, version, {}))
    at = check_request_header(bytes(raw), bool(cls.__header_schema__.__flexible__))
    for where, byte in edits:
        raw[where % len(raw)] = byte
    mutated = bytes(raw[: max(at, min(cut, len(raw)))]) + tail
    assert _outcome(check_entity, cls, mutated, at) == _outcome(
        reference.check_entity, cls, mutated, at
    )


def test_the_compiled_check_agrees_on_populated_messages() -> None:
    produce = frame(
        0,
        11,
        {
            "acks": -1,
            "timeout": 1000,
            "topic_data": [
                {"name": "t", "partition_data": [{"index": p, "records": b"\x01" * 99}]}
                for p in range(3)
            ],
        },
    )
    cls = load_request(0, 11)
    at = check_request_header(produce, False)
    for cut in range(at, len(produce) + 1):
        assert _outcome(check_entity, cls, produce[:cut], at) == _outcome(
            reference.check_entity, cls, produce[:cut], at
        ), cut
