"""Connect's ``/admin/loggers`` (KIP-495, KIP-976) over Python's ``logging``.

Connect names log4j loggers and levels; here a logger is a Python logger (``root`` is the
root logger) and a level one of log4j's names, mapped onto Python's levels: ``OFF``
(above ``CRITICAL``), ``FATAL`` (``CRITICAL``), ``ERROR``, ``WARN`` (``WARNING``),
``INFO``, ``DEBUG``, ``TRACE`` (5) and ``ALL`` (1).

- ``GET /admin/loggers``: ``{name: {"level", "last_modified"}}`` for every logger with a
  level of its own (the root logger once its level was set here: Kafka 4.4 does not list
  it otherwise).
- ``GET /admin/loggers/{name}``: that logger's ``{"level", "last_modified"}`` (its
  effective level), 404 ``Logger {name} not found.`` when it was never created.
- ``PUT /admin/loggers/{name}`` ``{"level": ...}``: sets the level of the logger and of
  every logger under it (all of them for ``root``), answers the sorted names it changed;
  ``?scope=cluster`` answers 204 and a distributed worker writes the level to the config
  topic (``logger-cluster-<name>``) for every worker to apply, as Connect.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Final

__all__ = ["CLUSTER_SCOPE", "LEVELS", "WORKER_SCOPE", "Loggers"]

ROOT: Final = "root"
LEVELS: Final = {
    "OFF": logging.CRITICAL + 10,
    "FATAL": logging.CRITICAL,
    "ERROR": logging.ERROR,
    "WARN": logging.WARNING,
    "INFO": logging.INFO,
    "DEBUG": logging.DEBUG,
    "TRACE": 5,
    "ALL": 1,
}
WORKER_SCOPE: Final = "worker"
CLUSTER_SCOPE: Final = "cluster"


def level_name(level: int) -> str:
    """log4j's name for a Python level (the nearest one at or below it)."""
    for name, value in sorted(LEVELS.items(), key=lambda kv: -kv[1]):
        if level >= value:
            return name
    return "ALL"


class Loggers:
    """This process's loggers, with the time each level was last set here."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._modified: dict[str, int] = {}

    @staticmethod
    def _named() -> dict[str, logging.Logger]:
        manager = logging.Logger.manager
        return {n: lg for n, lg in manager.loggerDict.items() if isinstance(lg, logging.Logger)}

    def _body(self, name: str, logger: logging.Logger) -> dict[str, Any]:
        return {
            "level": level_name(logger.getEffectiveLevel()),
            "last_modified": self._modified.get(name),
        }

    def all_levels(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            out: dict[str, dict[str, Any]] = {}
            if ROOT in self._modified:
                out[ROOT] = self._body(ROOT, logging.getLogger())
            for name, logger in sorted(self._named().items()):
                if logger.level != logging.NOTSET:
                    out[name] = self._body(name, logger)
            return out

    def level(self, name: str) -> dict[str, Any] | None:
        """The logger's level, None when no logger has this name."""
        with self._lock:
            logger = logging.getLogger() if name == ROOT else self._named().get(name)
            return None if logger is None else self._body(name, logger)

    def set_level(self, namespace: str, level: str) -> list[str]:
        """Set ``namespace`` and the loggers under it; the names changed, sorted."""
        value = LEVELS[level.upper()]
        now = int(time.time() * 1000)
        with self._lock:
            named = self._named()
            if namespace == ROOT:
                targets = {ROOT: logging.getLogger(), **named}
            else:
                targets = {
                    n: lg
                    for n, lg in named.items()
                    if n == namespace or n.startswith(namespace + ".")
                }
                if namespace not in targets:
                    targets[namespace] = logging.getLogger(namespace)
            for name, logger in targets.items():
                logger.setLevel(value)
                self._modified[name] = now
            return sorted(targets)
