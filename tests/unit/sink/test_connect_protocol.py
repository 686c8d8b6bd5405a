"""Connect's group protocol and config-topic records, as the distributed sink worker writes them."""

from __future__ import annotations

import json
import struct

import pytest

from producer.sink.connect_protocol import (
    CONNECTOR_TASK,
    Assignment,
    ConfigState,
    WorkerMetadata,
    assign_eager,
    decode_assignment,
    decode_metadata,
    encode_assignment,
    encode_metadata,
    status_key,
    status_value,
    target_state_value,
)
from producer.sink.rest import listener_of


def test_metadata_is_connect_protocol_v0() -> None:
    raw = encode_metadata(WorkerMetadata("http://w1:8083/", 41))
    # version int16, url as an int16-length string, config offset int64
    url = b"http://w1:8083/"
    assert raw == struct.pack(">hh", 0, len(url)) + url + struct.pack(">q", 41)
    assert decode_metadata(raw) == WorkerMetadata("http://w1:8083/", 41)


def test_assignment_round_trips_in_connects_layout() -> None:
    a = Assignment(0, "member-1", "http://w1:8083/", 7, {"b": [1], "a": [CONNECTOR_TASK, 0, 2]})
    raw = encode_assignment(a)
    assert raw[:4] == struct.pack(">hh", 0, 0)  # version, error
    back = decode_assignment(raw)
    assert back == Assignment(0, "member-1", "http://w1:8083/", 7, {"a": [-1, 0, 2], "b": [1]})
    assert back.owns_connector("a") and not back.owns_connector("b")
    assert back.task_ids("a") == [0, 2]


def test_eager_round_robin_spreads_connectors_then_tasks() -> None:
    members = {m: WorkerMetadata(f"http://{m}/", 0) for m in ("m2", "m1")}
    plan = assign_eager(members, {"x": 3, "y": 0})
    # one circular walk over the members, connectors first (Connect's EagerAssignor)
    assert plan == {"m1": {"x": [CONNECTOR_TASK, 0, 2]}, "m2": {"y": [CONNECTOR_TASK], "x": [1]}}
    assert assign_eager({}, {"x": 1}) == {}


def test_config_state_reads_connects_keys() -> None:
    state = ConfigState()
    records: list[tuple[str, object]] = [
        ("connector-c", {"properties": {"name": "c", "tasks.max": "2"}}),
        ("task-c-0", {"properties": {"name": "c", "task.class": "T"}}),
        ("task-c-1", {"properties": {"name": "c", "task.class": "T"}}),
        ("commit-c", {"tasks": 2}),
        ("target-state-c", target_state_value("PAUSED")),
        ("restart-connector-c", {"include-tasks": True, "only-failed": False}),
    ]
    for offset, (key, value) in enumerate(records):
        state.apply(key, json.dumps(value).encode(), offset)
    assert state.offset == len(records)
    assert state.connectors == {"c": {"name": "c", "tasks.max": "2"}}
    assert state.tasks("c") == 2
    assert state.task_config("c", 1) == {"name": "c", "task.class": "T"}
    assert state.target_state("c") == "PAUSED"
    assert state.restarts == [("c", True, False, 5)]
    state.apply("target-state-c", json.dumps(target_state_value("STOPPED")).encode(), 6)
    assert state.tasks("c") == 0, "a stopped connector has no tasks"
    state.apply("connector-c", None, 7)
    assert state.connectors == {}
    assert state.target_state("c") == "STARTED"


def test_stopped_is_written_as_paused_for_old_workers() -> None:
    assert target_state_value("STOPPED") == {"state": "PAUSED", "state.v2": "STOPPED"}
    assert target_state_value("STARTED") == {"state": "STARTED", "state.v2": "STARTED"}


def test_status_records() -> None:
    assert status_key("c") == "status-connector-c"
    assert status_key("c", 3) == "status-task-c-3"
    assert json.loads(status_value("RUNNING", "w:8083", 4)) == {
        "state": "RUNNING",
        "trace": None,
        "worker_id": "w:8083",
        "generation": 4,
    }


@pytest.mark.parametrize(
    ("worker", "expected"),
    [
        ({}, ("", 8083)),
        ({"listeners": "http://127.0.0.1:0"}, ("127.0.0.1", 0)),
        ({"listeners": "http://:9000,http://other:1"}, ("", 9000)),
        ({"rest.port": "8084"}, ("", 8084)),
    ],
)
def test_listener(worker: dict[str, str], expected: tuple[str, int]) -> None:
    assert listener_of(worker) == expected


def test_listener_schemes() -> None:
    assert listener_of({"listeners": "https://:8443"}) == ("", 8443)
    with pytest.raises(ValueError, match="listeners"):
        listener_of({"listeners": "ftp://:8443"})
