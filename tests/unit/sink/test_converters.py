"""The convert step: Connect's converters and its error handling for them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from producer.sink.converters import (
    BYTE_ARRAY_CONVERTER,
    JSON_CONVERTER,
    STRING_CONVERTER,
    DataException,
    load_converter,
)
from producer.sink.errors import ErrorHandling, Stage, StageError
from producer.sink.task import RetriableException


def _json(props: dict[str, str] | None = None) -> Any:
    return load_converter("value.converter", JSON_CONVERTER, props or {})


def test_byte_array_and_string_converters() -> None:
    raw = load_converter("value.converter", None, {})
    assert raw.to_connect("t", b"\xff\x00") == b"\xff\x00"
    text = load_converter("key.converter", STRING_CONVERTER, {})
    assert text.to_connect("t", "été".encode()) == "été"
    assert text.to_connect("t", None) is None
    latin = load_converter(
        "key.converter", STRING_CONVERTER, {"key.converter.converter.encoding": "ISO-8859-1"}
    )
    assert latin.to_connect("t", b"\xe9") == "é"
    with pytest.raises(DataException, match="Failed to deserialize data for topic t"):
        text.to_connect("t", b"\xff")
    assert load_converter("header.converter", BYTE_ARRAY_CONVERTER, {}).to_connect("t", b"") == b""


def test_json_converter_with_and_without_schemas() -> None:
    envelope = {
        "schema": {
            "type": "struct",
            "fields": [
                {"field": "id", "type": "int32"},
                {"field": "blob", "type": "bytes", "optional": True},
                {"field": "tags", "type": "array", "items": {"type": "string"}},
                {
                    "field": "counts",
                    "type": "map",
                    "keys": {"type": "int32"},
                    "values": {"type": "int64"},
                },
                {"field": "note", "type": "string", "optional": True, "default": "none"},
            ],
        },
        "payload": {"id": 7, "blob": "aGk=", "tags": ["a"], "counts": [[1, 2]], "note": None},
    }
    value = _json().to_connect("t", json.dumps(envelope).encode())
    assert value == {"id": 7, "blob": b"hi", "tags": ["a"], "counts": {1: 2}, "note": "none"}
    assert _json().to_connect("t", None) is None
    with pytest.raises(DataException, match='requires "schema" and "payload" fields'):
        _json().to_connect("t", b'{"id": 7}')
    plain = _json({"value.converter.schemas.enable": "false"})
    assert plain.to_connect("t", b'{"id": 7}') == {"id": 7}
    with pytest.raises(DataException, match="Converting byte\\[\\] to Kafka Connect data failed"):
        plain.to_connect("t", b"{not json")
    bad = {"schema": {"type": "int8"}, "payload": 300}
    with pytest.raises(DataException, match="INT8 out of range"):
        _json().to_connect("t", json.dumps(bad).encode())
    with pytest.raises(DataException, match="Invalid null value for required INT32"):
        _json().to_connect("t", b'{"schema": {"type": "int32"}, "payload": null}')
    with pytest.raises(ValueError, match=r"value\.converter\.schemas\.enable"):
        _json({"value.converter.schemas.enable": "maybe"})


class _Flaky:
    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise RetriableException("busy")
        return "ok"


class _FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_retriable_converter_failures_are_retried_with_backoff_until_the_timeout() -> None:
    time = _FakeTime()
    handling = ErrorHandling(retry_timeout_ms=2_000, retry_delay_max_ms=1_000)
    flaky = _Flaky(3)
    assert handling.run(flaky, Stage.VALUE_CONVERTER, "C", clock=time.clock, sleep=time.sleep)
    assert time.sleeps == [0.3, 0.6, 1.0]  # doubling from 300 ms, capped by delay.max
    time = _FakeTime()
    with pytest.raises(StageError) as info:
        handling.run(_Flaky(99), Stage.KEY_CONVERTER, "C", clock=time.clock, sleep=time.sleep)
    assert info.value.stage is Stage.KEY_CONVERTER and isinstance(
        info.value.error, RetriableException
    )
    assert sum(time.sleeps) == pytest.approx(2.0)  # never past the deadline
    no_retry = ErrorHandling()  # errors.retry.timeout=0: Connect's default
    with pytest.raises(StageError):
        no_retry.run(_Flaky(1), Stage.VALUE_CONVERTER, "C", clock=time.clock, sleep=time.sleep)


def test_any_other_converter_failure_is_a_stage_error_at_once() -> None:
    def broken() -> None:
        raise DataException("nope")

    time = _FakeTime()
    with pytest.raises(StageError) as info:
        ErrorHandling(retry_timeout_ms=-1).run(
            broken, Stage.HEADER_CONVERTER, "X", clock=time.clock, sleep=time.sleep
        )
    assert time.sleeps == [] and info.value.executing_class == "X"
