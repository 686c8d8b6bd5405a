"""Response shapes the Kafka-protocol handlers share, each built in one place."""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from coordinator.protocol.wire import DecodedRequest
from txn.api_keys import ApiKey
from txn.errors import ErrorCode
from txn.ids import TopicPartition

if TYPE_CHECKING:
    import uuid

    from coordinator.share.group_model import GroupHeartbeatResult


class Message(Protocol):
    """A typed response: a frozen dataclass whose fields have the names of the newest schema's
    (``*_messages.py``); ``wire.encode_response`` renders it into the negotiated version."""

    __dataclass_fields__: ClassVar[dict[str, Any]]


#: What a handler answers: a typed message, or (families not yet typed) a dict.
Body = Message | dict[str, Any]
Handler = Callable[[DecodedRequest], Awaitable[Body | None]]
#: Wait until a log append or ``deadline_ms`` on the broker's Clock, whichever comes first.
WaitForAppend = Callable[[int], Awaitable[None]]
M = TypeVar("M", bound=Callable[..., Any])

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


def undescribed_group(group_id: str, error: ErrorCode, message: str | None) -> dict[str, Any]:
    """A Consumer/ShareGroupDescribe entry for a group it cannot describe: as Kafka, no state
    and no epochs."""
    return {
        "error_code": error,
        "error_message": message,
        "group_id": group_id,
        "group_state": "",
        "members": [],
        "authorized_operations": OPERATIONS_NOT_REQUESTED,
    }


def heartbeat_response(
    result: GroupHeartbeatResult[Any],
    assignment: Iterable[tuple[uuid.UUID, Iterable[int]]] | None,
) -> dict[str, Any]:
    """A Consumer/ShareGroupHeartbeat response; ``assignment`` as (topic id, partitions) pairs,
    None when it is not sent."""
    return {
        "error_code": result.error,
        "error_message": result.error_message,
        "member_id": result.member_id,
        "member_epoch": result.member_epoch,
        "heartbeat_interval": result.heartbeat_interval_ms,
        "assignment": None
        if assignment is None
        else {
            "topic_partitions": [
                {"topic_id": topic_id, "partitions": sorted(partitions)}
                for topic_id, partitions in assignment
            ]
        },
    }


def millis(value: Any) -> int:
    """A duration field as milliseconds (kio decodes some as ``timedelta``)."""
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)


def by_topic(
    results: dict[TopicPartition, Any], entry: Callable[[Any], dict[str, Any]]
) -> list[dict[str, Any]]:
    """``[{name, partitions: [{partition_index, **entry(result)}]}]`` in request order."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp, result in results.items():
        topics.setdefault(tp.topic, []).append({"partition_index": tp.partition, **entry(result)})
    return [{"name": name, "partitions": parts} for name, parts in topics.items()]
