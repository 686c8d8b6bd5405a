"""Kafka Connect's wire formats for a distributed sink worker.

The "connect" group protocol (JoinGroup/SyncGroup with protocol type ``connect``): the eager
protocol Connect calls ``default`` (``ConnectProtocol`` version 0).  A member's metadata is
``version:int16, url:string, config_offset:int64``; an assignment is ``version:int16,
error:int16, leader:string, leader_url:string, config_offset:int64, assignment:[connector:
string, tasks:[int32]]``.  Strings are int16-length UTF-8, arrays int32-counted, as Kafka's
``Schema`` types.  A connector's own instance is listed as task id -1, as Connect does.

The config topic's records (keys and JSON values as Connect's ``KafkaConfigBackingStore``
writes them with a schemaless ``JsonConverter``): ``connector-<name>`` ``{"properties":
{...}}`` (a tombstone deletes it), ``task-<name>-<n>`` ``{"properties": {...}}``,
``commit-<name>`` ``{"tasks": n}``, ``target-state-<name>`` ``{"state": ..., "state.v2":
...}`` and ``restart-connector-<name>`` ``{"include-tasks": bool, "only-failed": bool}``.
The status topic's: ``status-connector-<name>`` and ``status-task-<name>-<n>``, ``{"state",
"trace", "worker_id", "generation"}`` (``KafkaStatusBackingStore``).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "CONNECTOR_TASK",
    "PROTOCOL_TYPE",
    "Assignment",
    "ConfigState",
    "WireReader",
    "WorkerMetadata",
    "config_key",
    "decode_assignment",
    "decode_metadata",
    "encode_assignment",
    "encode_metadata",
    "json_value",
    "pack_string",
    "status_key",
]

PROTOCOL_TYPE: Final = "connect"
EAGER_PROTOCOL: Final = "default"
PROTOCOL_VERSION: Final = 0
CONNECTOR_TASK: Final = -1  # a connector's own instance in an assignment
ERROR_NONE: Final = 0
CONFIG_MISMATCH: Final = 1

CONNECTOR_PREFIX: Final = "connector-"
TASK_PREFIX: Final = "task-"
COMMIT_PREFIX: Final = "commit-"
TARGET_STATE_PREFIX: Final = "target-state-"
RESTART_PREFIX: Final = "restart-connector-"
STATUS_CONNECTOR_PREFIX: Final = "status-connector-"
STATUS_TASK_PREFIX: Final = "status-task-"

STARTED: Final = "STARTED"
PAUSED: Final = "PAUSED"
STOPPED: Final = "STOPPED"


# -- the group protocol --------------------------------------------------------------------


def pack_string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack(">h", len(raw)) + raw


class WireReader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> Any:
        value = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        size = self.take(">h")
        raw = self.data[self.pos : self.pos + size]
        self.pos += size
        return raw.decode("utf-8")


@dataclass(frozen=True, slots=True)
class WorkerMetadata:
    url: str
    config_offset: int


def encode_metadata(meta: WorkerMetadata) -> bytes:
    return (
        struct.pack(">h", PROTOCOL_VERSION)
        + pack_string(meta.url)
        + struct.pack(">q", meta.config_offset)
    )


def decode_metadata(data: bytes) -> WorkerMetadata:
    r = WireReader(data)
    r.take(">h")
    url = r.string()
    return WorkerMetadata(url, r.take(">q"))


@dataclass(frozen=True, slots=True)
class Assignment:
    error: int
    leader: str
    leader_url: str
    config_offset: int
    #: connector name -> task ids (CONNECTOR_TASK for the connector itself)
    tasks: dict[str, list[int]] = field(default_factory=dict)

    def task_ids(self, connector: str) -> list[int]:
        return [t for t in self.tasks.get(connector, []) if t != CONNECTOR_TASK]

    def owns_connector(self, connector: str) -> bool:
        return CONNECTOR_TASK in self.tasks.get(connector, [])


def encode_assignment(a: Assignment) -> bytes:
    out = struct.pack(">hh", PROTOCOL_VERSION, a.error) + pack_string(a.leader)
    out += pack_string(a.leader_url) + struct.pack(">qi", a.config_offset, len(a.tasks))
    for connector, tasks in sorted(a.tasks.items()):
        out += pack_string(connector) + struct.pack(f">i{len(tasks)}i", len(tasks), *tasks)
    return out


def decode_assignment(data: bytes) -> Assignment:
    r = WireReader(data)
    r.take(">h")
    error = r.take(">h")
    leader, leader_url = r.string(), r.string()
    offset = r.take(">q")
    tasks: dict[str, list[int]] = {}
    for _ in range(r.take(">i")):
        name = r.string()
        tasks[name] = [r.take(">i") for _ in range(r.take(">i"))]
    return Assignment(error, leader, leader_url, offset, tasks)


def assign_eager(
    members: dict[str, WorkerMetadata], connectors: dict[str, int]
) -> dict[str, dict[str, list[int]]]:
    """Connect's eager round robin: connectors, then tasks, over the members by id."""
    ids = sorted(members)
    out: dict[str, dict[str, list[int]]] = {m: {} for m in ids}
    if not ids:
        return out
    turn = 0
    for name in sorted(connectors):
        out[ids[turn % len(ids)]].setdefault(name, []).append(CONNECTOR_TASK)
        turn += 1
    for name in sorted(connectors):
        for task in range(connectors[name]):
            out[ids[turn % len(ids)]].setdefault(name, []).append(task)
            turn += 1
    return out


# -- the config and status topics ----------------------------------------------------------


def json_value(value: dict[str, Any] | None) -> bytes | None:
    return None if value is None else json.dumps(value, separators=(",", ":")).encode()


def config_key(kind: str, connector: str, task: int | None = None) -> str:
    return f"{kind}{connector}" if task is None else f"{kind}{connector}-{task}"


def status_key(connector: str, task: int | None = None) -> str:
    if task is None:
        return f"{STATUS_CONNECTOR_PREFIX}{connector}"
    return f"{STATUS_TASK_PREFIX}{connector}-{task}"


@dataclass(slots=True)
class ConfigState:
    """The config topic read so far (``offset``: the next offset to read)."""

    offset: int = 0
    connectors: dict[str, dict[str, str]] = field(default_factory=dict)
    task_counts: dict[str, int] = field(default_factory=dict)
    task_configs: dict[tuple[str, int], dict[str, str]] = field(default_factory=dict)
    target_states: dict[str, str] = field(default_factory=dict)
    #: restart requests seen: (connector, include_tasks, only_failed, offset)
    restarts: list[tuple[str, bool, bool, int]] = field(default_factory=list)

    def apply(self, key: str, value: bytes | None, offset: int) -> None:
        self.offset = offset + 1
        body: dict[str, Any] | None = json.loads(value) if value else None
        if key.startswith(CONNECTOR_PREFIX):
            name = key[len(CONNECTOR_PREFIX) :]
            if body is None:
                self.connectors.pop(name, None)
                self.task_counts.pop(name, None)
                self.target_states.pop(name, None)
            else:
                self.connectors[name] = dict(body.get("properties") or {})
        elif key.startswith(TASK_PREFIX):
            name, _, number = key[len(TASK_PREFIX) :].rpartition("-")
            if body is not None and number.isdigit():
                self.task_configs[(name, int(number))] = dict(body.get("properties") or {})
        elif key.startswith(COMMIT_PREFIX):
            name = key[len(COMMIT_PREFIX) :]
            if body is not None:
                self.task_counts[name] = int(body.get("tasks", 0))
        elif key.startswith(TARGET_STATE_PREFIX):
            name = key[len(TARGET_STATE_PREFIX) :]
            if body is None:
                self.target_states.pop(name, None)
            else:
                self.target_states[name] = str(body.get("state.v2") or body.get("state"))
        elif key.startswith(RESTART_PREFIX) and body is not None:
            name = key[len(RESTART_PREFIX) :]
            include = bool(body.get("include-tasks", False))
            self.restarts.append((name, include, bool(body.get("only-failed", False)), offset))

    def target_state(self, connector: str) -> str:
        return self.target_states.get(connector, STARTED)

    def tasks(self, connector: str) -> int:
        """The committed task count, 0 when the connector is stopped."""
        if self.target_state(connector) == STOPPED:
            return 0
        return self.task_counts.get(connector, 0)

    def task_config(self, connector: str, task: int) -> dict[str, str]:
        return self.task_configs.get((connector, task), self.connectors.get(connector, {}))


def target_state_value(state: str) -> dict[str, str]:
    """Connect writes STOPPED as PAUSED under ``state`` for workers that predate KIP-875."""
    return {"state": PAUSED if state == STOPPED else state, "state.v2": state}


def status_value(state: str, worker_id: str, generation: int, trace: str | None = None) -> bytes:
    body = {"state": state, "trace": trace, "worker_id": worker_id, "generation": generation}
    value = json_value(body)
    assert value is not None
    return value
