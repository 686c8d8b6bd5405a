"""``HeartbeatThread``: the daemon thread a group member heartbeats from."""

from __future__ import annotations

import threading


class HeartbeatThread:
    """Starts ``_run`` once on a daemon thread; ``_stop`` ends it, ``_wakeup`` cuts a wait short."""

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

    def _run(self) -> None:
        raise NotImplementedError
