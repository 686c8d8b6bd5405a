"""The append-only JSONL audit log of every action the recovery tool takes.

One JSON object per line, appended and fsynced before the tool goes on, so a crash of
the tool leaves a ``begin`` line without its ``end`` line: the partial run is visible,
and a re-run (which re-plans from the cluster's state) completes it.  Dry runs write
nothing.  Every line carries the operator, the tool version, the run id, the command
and a UTC timestamp.
"""

from __future__ import annotations

import getpass
import importlib.metadata
import json
import os
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DEFAULT_AUDIT_LOG = "sharetxn-audit.jsonl"
TOOL = "sharetxn-recovery"


def tool_version() -> str:
    try:
        return importlib.metadata.version("sharetxn")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def default_operator() -> str:
    """``$USER`` (or the login name), else ``unknown``."""
    user = os.environ.get("USER") or os.environ.get("LOGNAME")
    if user:
        return user
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


class AuditLog:
    """Appends audit events for one run of the tool."""

    def __init__(
        self, path: str | Path, *, operator: str, command: str, principal: str | None = None
    ) -> None:
        self.path = Path(path)
        self.operator = operator
        self.principal = principal  # who the broker authenticated (security.protocol)
        self.command = command
        self.run_id = uuid.uuid4().hex
        self.version = tool_version()
        self.written = 0

    def write(self, event: str, fields: Mapping[str, Any]) -> dict[str, Any]:
        """Append one line (``event``: begin, end, refused, raced, noop, ...) and fsync it."""
        now = datetime.now(UTC)
        line = {
            "ts": now.isoformat(timespec="milliseconds"),
            "ts_ms": int(now.timestamp() * 1000),
            "event": event,
            "tool": TOOL,
            "tool_version": self.version,
            "operator": self.operator,
            **({"principal": self.principal} if self.principal is not None else {}),
            "run_id": self.run_id,
            "command": self.command,
            **fields,
        }
        data = (json.dumps(line, sort_keys=True, default=str) + "\n").encode()
        if self.path.parent != Path():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        self.written += 1
        return line


def previously_applied(
    path: str | Path, transactional_id: str, producer_id: int, producer_epoch: int
) -> dict[str, Any] | None:
    """The last ``end`` event that applied an action to exactly this transaction, if any.

    This is how a re-run recognizes its own earlier work once the coordinator no longer
    shows the transaction (the resumed producer moves the id to a new epoch after
    completing it, so the coordinator cannot say how (producer id, epoch) ended).
    """
    found = None
    for event in read_audit_log(path):
        step = event.get("step") or {}
        if (
            event.get("event") == "end"
            and event.get("outcome") == "applied"
            and step.get("transactional_id") == transactional_id
            and step.get("producer_id") == producer_id
            and step.get("producer_epoch") == producer_epoch
        ):
            found = event
    return found


def read_audit_log(path: str | Path) -> list[dict[str, Any]]:
    """Every event of an audit log (for tests and for operators' scripts)."""
    p = Path(path)
    if not p.exists():
        return []
    events = []
    for line in p.read_text().splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line torn by a crash of the tool: ignored
    return events


def unresolved_heuristics(path: str | Path) -> list[dict[str, Any]]:
    """The ``heuristic`` events no later ``forget`` event cleared, oldest first.

    A heuristic event records an action whose outcome the tool could not confirm (it
    sent EndTxn and the call failed).  It stays in the tool's in-doubt bookkeeping until
    an operator checked the outputs and ran ``sharetxn txn forget --transactional-id ID
    --i-understand`` (Narayana's HEURISTIC and ``:delete``/forget).
    """
    open_: dict[str, list[dict[str, Any]]] = {}
    for event in read_audit_log(path):
        tid = event.get("transactional_id")
        if not isinstance(tid, str):
            continue
        if event.get("event") == "heuristic":
            open_.setdefault(tid, []).append(event)
        elif event.get("event") == "forget":
            open_.pop(tid, None)
    return sorted((e for es in open_.values() for e in es), key=lambda e: e.get("ts_ms", 0))
