"""Response shapes the Kafka-protocol handlers share, each built in one place."""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Protocol, TypeVar

from coordinator.protocol.wire import DecodedRequest
from txn.api_keys import ApiKey


class Message(Protocol):
    """A typed response: a frozen dataclass whose fields have the names of the newest schema's
    (``*_messages.py``); ``wire.encode_response`` renders it into the negotiated version."""

    __dataclass_fields__: ClassVar[dict[str, Any]]


#: What a handler answers: a typed message, or (families not yet typed) a dict.
Body = Message | dict[str, Any]
Handler = Callable[[DecodedRequest[Any]], Awaitable[Body | None]]
#: Wait until a log append or ``deadline_ms`` on the broker's Clock, whichever comes first.
WaitForAppend = Callable[[int], Awaitable[None]]
M = TypeVar("M")

_API_KEY = "api_key"


def api(key: ApiKey) -> Callable[[M], M]:
    """Mark a handler method as the handler of the API ``key`` (see ``handler_table``)."""

    def mark(method: M) -> M:
        setattr(method, _API_KEY, key)
        return method

    return mark


def handler_table(family: object) -> dict[int, Any]:
    """API key -> bound handler, for each method of ``family`` marked with ``@api``."""
    table: dict[int, Any] = {}
    for name in dir(type(family)):
        key = getattr(getattr(type(family), name), _API_KEY, None)
        if key is not None:
            table[key] = getattr(family, name)
    return table


#: The authorized operations of an entry whose client did not ask for them (Kafka: INT32_MIN).
OPERATIONS_NOT_REQUESTED = -2147483648


def millis(value: Any) -> int:
    """A duration field as milliseconds (kio decodes some as ``timedelta``)."""
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)
