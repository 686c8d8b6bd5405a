"""``encode_response`` frames: a big-endian length prefix, then the header and the body, the
same bytes the kio writers produce (the prefix is written over a placeholder in place)."""

from __future__ import annotations

import io
import struct
import uuid

from kio.serial import entity_writer

from coordinator.protocol.share_messages import (
    AcquiredRecords,
    ShareFetchPartition,
    ShareFetchResponse,
    ShareFetchTopic,
)
from coordinator.protocol.wire import encode_response, response_class
from txn.api_keys import ApiKey
from txn.errors import ErrorCode
from txn.wire_render import render


def _by_hand(api_key: int, version: int, correlation_id: int, body: object) -> bytes:
    cls = response_class(api_key, version)
    buf = io.BytesIO()
    header_cls = cls.__header_schema__  # type: ignore[attr-defined]
    entity_writer(header_cls)(buf, header_cls(correlation_id=correlation_id))
    entity_writer(cls)(buf, render(cls, body))
    payload = buf.getvalue()
    return struct.pack(">i", len(payload)) + payload


def _share_fetch(records: bytes) -> ShareFetchResponse:
    partition = ShareFetchPartition(
        partition_index=2,
        error_code=ErrorCode.NONE,
        acknowledge_error_code=ErrorCode.NONE,
        records=records,
        acquired_records=(AcquiredRecords(first_offset=0, last_offset=966, delivery_count=1),),
    )
    return ShareFetchResponse(
        error_code=ErrorCode.NONE,
        error_message=None,
        acquisition_lock_timeout=30_000,
        responses=(ShareFetchTopic(topic_id=uuid.UUID(int=7), partitions=(partition,)),),
        node_endpoints=(),
    )


def test_a_big_share_fetch_response_is_framed_as_the_writers_write_it() -> None:
    records = bytes(range(256)) * 4096  # 1 MiB
    for version in (1, 2):
        frame = encode_response(ApiKey.SHARE_FETCH, version, 41, _share_fetch(records))
        assert frame == _by_hand(ApiKey.SHARE_FETCH, version, 41, _share_fetch(records))
        (size,) = struct.unpack_from(">i", frame)
        assert size == len(frame) - 4


def test_an_empty_body_is_framed_too() -> None:
    frame = encode_response(ApiKey.API_VERSIONS, 0, 5, {"error_code": 0, "api_keys": []})
    assert frame == _by_hand(ApiKey.API_VERSIONS, 0, 5, {"error_code": 0, "api_keys": []})
    assert struct.unpack_from(">ii", frame) == (len(frame) - 4, 5)
