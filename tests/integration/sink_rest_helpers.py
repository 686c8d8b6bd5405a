"""A stock HTTP client (urllib) for the sink worker's Connect REST API tests."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


def call(method: str, url: str, body: Any = None, timeout_s: float = 60) -> tuple[int, Any]:
    """(HTTP status, decoded JSON body or None)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as error:
        raw = error.read()
        return error.code, json.loads(raw) if raw else None


def task_states(status: dict[str, Any]) -> dict[int, tuple[str, str]]:
    """task id -> (state, worker_id) from a ``/status`` body."""
    return {t["id"]: (t["state"], t["worker_id"]) for t in status["tasks"]}
