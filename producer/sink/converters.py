"""The convert step of the sink loop: Kafka Connect's converters, for share sinks.

``key.converter``, ``value.converter`` and ``header.converter`` name a converter by
Connect's class name (or a dotted path to a Python class with the same two methods); its
settings are the connector's keys under the converter's prefix (``value.converter.X``):

``org.apache.kafka.connect.converters.ByteArrayConverter`` (the default here)
    the record's bytes, unchanged;
``org.apache.kafka.connect.storage.StringConverter``
    text, decoded with ``converter.encoding`` (UTF-8);
``org.apache.kafka.connect.json.JsonConverter``
    JSON; with ``schemas.enable`` (true, Connect's default) the bytes must be Connect's
    envelope ``{"schema": ..., "payload": ...}`` and the payload is converted by its schema
    (``bytes`` fields are base64 in JSON and bytes here; structs and maps are dicts); with
    ``schemas.enable=false`` any JSON value.

A null (tombstone) stays None.  A failure is a ``DataException`` (Connect's), handled by
``errors.tolerance`` (``producer.sink.errors``).  Connect's default header converter is
``SimpleHeaderConverter``; here headers stay bytes unless ``header.converter`` is set.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import json
from collections.abc import Mapping
from typing import Any, Final, Protocol

from producer.sink.task import ConnectException, load_object

__all__ = [
    "BYTE_ARRAY_CONVERTER",
    "JSON_CONVERTER",
    "STRING_CONVERTER",
    "Converter",
    "DataException",
    "converter_settings",
    "load_converter",
]

BYTE_ARRAY_CONVERTER: Final = "org.apache.kafka.connect.converters.ByteArrayConverter"
STRING_CONVERTER: Final = "org.apache.kafka.connect.storage.StringConverter"
JSON_CONVERTER: Final = "org.apache.kafka.connect.json.JsonConverter"


class DataException(ConnectException):
    """Bytes a converter cannot turn into a value (Connect's ``DataException``)."""


class Converter(Protocol):
    """Connect's ``Converter``, the reading half: ``configure`` once, then ``to_connect``."""

    def configure(self, configs: Mapping[str, str], is_key: bool) -> None: ...

    def to_connect(self, topic: str, data: bytes | None) -> Any: ...


class ByteArrayConverter:
    def configure(self, configs: Mapping[str, str], is_key: bool) -> None:
        pass

    def to_connect(self, topic: str, data: bytes | None) -> Any:
        return data


class StringConverter:
    def __init__(self) -> None:
        self.encoding = "utf-8"

    def configure(self, configs: Mapping[str, str], is_key: bool) -> None:
        encoding = configs.get("converter.encoding", "UTF-8")
        try:
            self.encoding = codecs.lookup(encoding).name
        except LookupError:
            msg = f"converter.encoding: unknown character set {encoding!r}"
            raise ValueError(msg) from None

    def to_connect(self, topic: str, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            return data.decode(self.encoding)
        except UnicodeDecodeError as exc:
            msg = f"Failed to deserialize data for topic {topic} to string: {exc}"
            raise DataException(msg) from exc


_ENVELOPE: Final = frozenset({"schema", "payload"})


class JsonConverter:
    def __init__(self) -> None:
        self.schemas_enable = True

    def configure(self, configs: Mapping[str, str], is_key: bool) -> None:
        raw = configs.get("schemas.enable", "true").strip().lower()
        if raw not in ("true", "false"):
            msg = f"schemas.enable: must be true or false, not {raw!r}"
            raise ValueError(msg)
        self.schemas_enable = raw == "true"

    def to_connect(self, topic: str, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            node = json.loads(data)
        except (UnicodeDecodeError, ValueError) as exc:
            msg = (
                f"Converting byte[] to Kafka Connect data failed due to serialization error: {exc}"
            )
            raise DataException(msg) from exc
        if not self.schemas_enable:
            return node
        if not isinstance(node, dict) or set(node) != _ENVELOPE:
            msg = (
                'JsonConverter with schemas.enable requires "schema" and "payload" fields and '
                "may not contain additional fields. If you are trying to deserialize plain JSON "
                "data, set schemas.enable=false in your converter configuration."
            )
            raise DataException(msg)
        return _by_schema(node["schema"], node["payload"])


_INTEGERS: Final = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def _by_schema(schema: Any, value: Any) -> Any:
    """A JSON payload as the value its Connect schema describes (None schema: as is)."""
    if schema is None:
        return value
    if not isinstance(schema, dict) or not isinstance(schema.get("type"), str):
        msg = f"Unknown schema type: {schema!r}"
        raise DataException(msg)
    kind: str = schema["type"]
    if value is None:
        if schema.get("optional") or "default" in schema:
            return schema.get("default")
        msg = f"Invalid null value for required {kind.upper()} field"
        raise DataException(msg)
    if kind in _INTEGERS:
        bits = _INTEGERS[kind]
        if isinstance(value, bool) or not isinstance(value, int):
            raise DataException(f"Invalid value for {kind.upper()}: {value!r}")
        if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
            raise DataException(f"{kind.upper()} out of range: {value}")
        return value
    if kind in ("float32", "float64"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise DataException(f"Invalid value for {kind.upper()}: {value!r}")
        return float(value)
    simple: dict[str, type] = {"boolean": bool, "string": str}
    if kind in simple:
        if not isinstance(value, simple[kind]):
            raise DataException(f"Invalid value for {kind.upper()}: {value!r}")
        return value
    if kind == "bytes":
        if not isinstance(value, str):
            raise DataException(f"Invalid value for BYTES: {value!r}")
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error as exc:
            raise DataException(f"Invalid base64 for BYTES: {exc}") from exc
    if kind == "array":
        if not isinstance(value, list):
            raise DataException(f"Invalid value for ARRAY: {value!r}")
        return [_by_schema(schema.get("items"), v) for v in value]
    if kind == "map":
        keys, values = schema.get("keys"), schema.get("values")
        if isinstance(value, dict):  # string keys: a JSON object
            return {_by_schema(keys, k): _by_schema(values, v) for k, v in value.items()}
        if isinstance(value, list) and all(isinstance(p, list) and len(p) == 2 for p in value):
            return {_by_schema(keys, k): _by_schema(values, v) for k, v in value}
        raise DataException(f"Invalid value for MAP: {value!r}")
    if kind == "struct":
        if not isinstance(value, dict):
            raise DataException(f"Invalid value for STRUCT: {value!r}")
        fields = schema.get("fields") or []
        return {
            f["field"]: _by_schema(f, value.get(f["field"]))
            for f in fields
            if isinstance(f, dict) and isinstance(f.get("field"), str)
        }
    msg = f"Unknown schema type: {kind}"
    raise DataException(msg)


_BUILT_IN: Final[dict[str, type]] = {
    BYTE_ARRAY_CONVERTER: ByteArrayConverter,
    STRING_CONVERTER: StringConverter,
    JSON_CONVERTER: JsonConverter,
}


def converter_settings(props: Mapping[str, str], key: str) -> dict[str, str]:
    """The settings of the converter named by ``key``: the keys under ``key + "."``."""
    prefix = f"{key}."
    return {k[len(prefix) :]: v for k, v in props.items() if k.startswith(prefix)}


def load_converter(key: str, name: str | None, props: Mapping[str, str]) -> Converter:
    """The configured converter of ``key`` (``key.converter`` and the like); ValueError
    naming ``key`` for an unknown class or a bad setting."""
    name = name or BYTE_ARRAY_CONVERTER
    made: Any
    if name in _BUILT_IN:
        made = _BUILT_IN[name]()
    else:
        try:
            cls = load_object(name, key)
        except ValueError:
            known = ", ".join(_BUILT_IN)
            msg = f"{key}: unknown converter {name!r} (built in: {known}; or a dotted path)"
            raise ValueError(msg) from None
        made = cls() if isinstance(cls, type) else None
        if made is None or not callable(getattr(made, "to_connect", None)):
            msg = f"{key}: {name} is not a converter class (configure and to_connect)"
            raise ValueError(msg)
    try:
        made.configure(converter_settings(props, key), key == "key.converter")
    except ValueError as exc:
        msg = f"{key}.{exc}" if not str(exc).startswith(key) else str(exc)
        raise ValueError(msg) from None
    converter: Converter = made
    return converter
