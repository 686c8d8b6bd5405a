"""A stock HTTP client (urllib) for the sink worker's Connect REST API tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

READY = "sharetxn sink worker "


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


class WorkerProcess:
    """A ``sharetxn sink standalone|distributed`` child process; a thread collects its output."""

    def __init__(
        self, mode: str, props: dict[str, str], path: Path, *connectors: dict[str, str]
    ) -> None:
        files = [path, *(path.with_suffix(f".c{n}.properties") for n in range(len(connectors)))]
        for file, values in zip(files, (props, *connectors), strict=True):
            file.write_text("".join(f"{k}={v}\n" for k, v in values.items()), encoding="utf-8")
        cmd = [sys.executable, "-m", "chaos.cli", "sink", mode, *map(str, files)]
        self.process = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.output: list[str] = []
        self.url = ""
        self.ready = threading.Event()
        self._pump = threading.Thread(target=self._read, daemon=True)
        self._pump.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line.rstrip("\n"))
            if line.startswith(READY) and not self.url:
                self.url = line[len(READY) :].split()[0]
                self.ready.set()
        self.ready.set()

    @property
    def worker_id(self) -> str:
        return self.url.removeprefix("http://").rstrip("/")

    def wait_ready(self) -> None:
        assert self.ready.wait(90), self.output
        assert self.process.poll() is None and self.url, self.output

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(10)

    def terminate(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(90)
        self._pump.join(5)
        return code

    def close(self) -> None:
        if self.process.poll() is None:
            self.kill()
        self._pump.join(5)
        if self.process.stdout is not None:
            self.process.stdout.close()
