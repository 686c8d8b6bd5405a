"""Build kio entities of any version from version-free values (shared by the broker and the
client).

Code that speaks several versions of one API builds a dict, or a typed dataclass of its own
(the broker's handlers, ``coordinator/protocol/messages*.py``), with the newest schema's field
names; ``render(cls, data)`` turns it into the entity ``cls``,
dropping fields that version lacks and filling neutral values for required
fields the dict omits.  Error codes, durations (``timedelta``) and timestamps
(``datetime``) may be given as plain integers (milliseconds).
"""

from __future__ import annotations

import dataclasses
import datetime
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any

from kio.schema.errors import ErrorCode as KioErrorCode
from kio.static.primitive import TZAware

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@cache
def _fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(cls)


def _convert(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _convert(args[0], value)
    if origin is tuple:
        (inner, _ellipsis) = typing.get_args(tp)
        return tuple(_convert(inner, v) for v in value)
    if tp is KioErrorCode:
        return KioErrorCode(int(value))
    if tp is TZAware or (isinstance(tp, type) and issubclass(tp, datetime.datetime)):
        if isinstance(value, datetime.datetime):
            return value
        return _EPOCH + datetime.timedelta(milliseconds=int(value))
    if isinstance(tp, type) and issubclass(tp, datetime.timedelta):
        if isinstance(value, datetime.timedelta):
            return value
        return datetime.timedelta(milliseconds=int(value))
    if dataclasses.is_dataclass(tp) and (
        isinstance(value, Mapping)
        or (dataclasses.is_dataclass(value) and not isinstance(value, type))
    ):
        return render(typing.cast(type, tp), value)
    return value


def _as_mapping(data: Any) -> Mapping[str, Any]:
    """A dict as it is; a dataclass instance as its fields by name (not recursively)."""
    if isinstance(data, Mapping):
        return data
    return {f.name: getattr(data, f.name) for f in dataclasses.fields(data)}


def render(cls: type, data: Any) -> Any:
    """Build the kio entity ``cls`` from a dict or a dataclass instance with the same field
    names, converting nested dicts and dataclasses, codes and durations."""
    hints = _hints(cls)
    data = _as_mapping(data)
    kwargs: dict[str, Any] = {}
    for f in _fields(cls):
        if f.name in data:
            kwargs[f.name] = _convert(hints[f.name], data[f.name])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            kwargs[f.name] = _zero(hints[f.name])
    return cls(**kwargs)


def _zero(tp: Any) -> Any:
    """A neutral value for a required field the handler did not set."""
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        return None
    if origin is tuple:
        return ()
    if tp is KioErrorCode:
        return KioErrorCode.none
    if tp is TZAware:
        return _EPOCH - datetime.timedelta(milliseconds=1)
    if isinstance(tp, type):
        if issubclass(tp, datetime.timedelta):
            return datetime.timedelta(0)
        if issubclass(tp, bool):
            return False
        if issubclass(tp, int):
            return 0
        if issubclass(tp, str):
            return ""
        if issubclass(tp, bytes):
            return b""
    if dataclasses.is_dataclass(tp):
        return render(typing.cast(type, tp), {})
    return None
