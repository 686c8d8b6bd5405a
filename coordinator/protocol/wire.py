"""Frame-level codec over kio: decode request frames, render version-free responses.

Handlers build responses as plain dicts with the field names of the newest
schema; ``render`` turns such a dict into the kio entity of the negotiated
version, dropping fields that version lacks and filling defaults for fields
the dict omits.  This keeps each handler version-agnostic.
"""

from __future__ import annotations

import io
import struct
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from kio.serial import entity_reader, entity_writer

from txn.errors import ErrorCode
from txn.kip1289_schema import load_request as load_request_schema
from txn.kip1289_schema import load_response as load_response_schema
from txn.wire_guard import check_entity, check_request_header
from txn.wire_render import render

_PEEK = struct.Struct(">hhi")
_SIZE = struct.Struct(">i")  # a frame's length prefix


class FrameError(Exception):
    """A frame that cannot be decoded; ``error_code`` says which Kafka error to answer."""

    def __init__(
        self,
        error_code: ErrorCode,
        message: str,
        api_key: int = -1,
        api_version: int = -1,
        correlation_id: int = -1,
    ) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


#: A request body's type: a handler names the version-free view of its API (``*request_views``).
B = TypeVar("B")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class DecodedRequest(Generic[B]):
    """A decoded request frame; ``body`` is the kio entity of the negotiated version.

    A handler declares ``DecodedRequest[XRequestView]``: the fields every supported version
    of its API has.  ``decode_request`` answers ``DecodedRequest[Any]``, the one place a body's
    type is not known: the dispatcher picks the handler by ``api_key``.
    """

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: B
    connection_id: int = 0
    client_host: str = ""


def peek_header(frame: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) of a frame, or FrameError if too short."""
    if len(frame) < _PEEK.size:
        raise FrameError(ErrorCode.INVALID_REQUEST, "frame shorter than a request header")
    key, version, correlation_id = _PEEK.unpack_from(frame, 0)
    return int(key), int(version), int(correlation_id)


def decode_request(frame: bytes) -> DecodedRequest[Any]:
    """Decode a request frame (without its length prefix); raises FrameError."""
    api_key, api_version, correlation_id = peek_header(frame)
    try:
        cls = load_request_schema(api_key, api_version)
    except Exception as exc:
        raise FrameError(
            ErrorCode.UNSUPPORTED_VERSION,
            f"unsupported API {api_key} v{api_version}",
            api_key,
            api_version,
            correlation_id,
        ) from exc
    try:
        # Every length bounded by the frame first: the native reader allocates what a
        # length says before it reads (txn.wire_guard).
        body_at = check_request_header(frame, bool(cls.__header_schema__.__flexible__))
        check_entity(cls, frame, body_at)
        header, header_size = entity_reader(cls.__header_schema__)(frame, 0)
        body, _size = entity_reader(cls)(frame, header_size)
    except Exception as exc:
        raise FrameError(
            ErrorCode.CORRUPT_MESSAGE,
            f"malformed {cls.__name__} v{api_version}: {exc}",
            api_key,
            api_version,
            correlation_id,
        ) from exc
    # Not ``DecodedRequest[Any](...)``: that sets ``__orig_class__`` on the frozen instance.
    request: DecodedRequest[Any] = DecodedRequest(
        api_key, api_version, correlation_id, getattr(header, "client_id", None), body
    )
    return request


def response_class(api_key: int, api_version: int) -> type:
    return typing.cast(type, load_response_schema(api_key, api_version))


def encode_response(
    api_key: int, api_version: int, correlation_id: int, body: Mapping[str, Any] | Any
) -> bytes:
    """A length-prefixed response frame: ``body`` is the entity of the negotiated version, or
    a version-free dict or typed message that ``render`` turns into it."""
    cls = response_class(api_key, api_version)
    entity: Any = body if isinstance(body, cls) else render(cls, body)
    buf = io.BytesIO()
    buf.write(b"\x00\x00\x00\x00")
    header_cls = cls.__header_schema__  # type: ignore[attr-defined]
    entity_writer(header_cls)(buf, header_cls(correlation_id=correlation_id))
    entity_writer(cls)(buf, entity)
    # The size written over the placeholder in place, then the buffer itself: ``getvalue()``
    # hands over BytesIO's own bytes object (no export is open), where ``bytes(getbuffer())``
    # copied it into a new one -- a second allocation and copy of every Fetch / ShareFetch's
    # records (about 1 MB per response in bench/share.py).
    size = buf.tell() - 4
    buf.seek(0)
    buf.write(_SIZE.pack(size))
    return buf.getvalue()


def optional(body: object, *names: str, default: T) -> T:
    """A field some versions lack: the first attribute of ``body`` among ``names``, else
    ``default``, declared to be of ``default``'s type (or the type the caller asks for)."""
    for name in names:
        if hasattr(body, name):
            return cast(T, getattr(body, name))
    return default
