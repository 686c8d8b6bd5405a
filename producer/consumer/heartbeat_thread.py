"""``HeartbeatThread``: the daemon thread a group member heartbeats from."""

from __future__ import annotations

import threading

from producer.consumer.heartbeat_backoff import HeartbeatBackoff


class HeartbeatThread:
    """Runs ``_beat`` on a daemon thread, started once, until ``_stop``: each beat returns the
    milliseconds to wait before the next one, and ``_wakeup`` cuts a wait short."""

    _backoff: HeartbeatBackoff

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._wakeup = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self._thread_name(), daemon=True)
            self._thread.start()

    def _thread_name(self) -> str:
        raise NotImplementedError

    def _beat(self) -> int:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                wait_ms = self._beat()
            except Exception:  # never let the heartbeat thread die silently
                wait_ms = self._backoff.crashed()
            if self._wakeup.wait(wait_ms / 1000):
                self._wakeup.clear()
