"""Herders: what Connect's REST API drives, for share sink connectors.

``Herder`` is the interface the REST resources call (``producer.sink.rest``);
``StandaloneHerder`` keeps its connectors in memory and runs every task in this process
(``connect-standalone``); ``producer.sink.distributed.DistributedHerder`` shares them with
the workers of its ``group.id`` (``connect-distributed``).  ``LocalTasks`` runs the tasks of
one connector that this process owns, on a ``SinkWorker``.

Connect's states: a connector or task is ``UNASSIGNED``, ``RUNNING``, ``PAUSED``,
``STOPPED`` (a connector only), ``RESTARTING`` or ``FAILED`` (with its ``trace``).
"""

from __future__ import annotations

import logging
import re
import threading
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Final, Protocol

from producer.admin import Admin
from producer.protocol.client import KafkaClient
from producer.sink.config import SinkConfigError, resolve
from producer.sink.connect_protocol import PAUSED, STARTED, STOPPED
from producer.sink.loggers import Loggers
from producer.sink.task import SinkTask, load_task_class
from producer.sink.worker import SinkWorker
from txn.api_keys import ApiKey

__all__ = [
    "BUILTIN_PLUGINS",
    "BadRequest",
    "Conflict",
    "Herder",
    "HerderError",
    "LocalTasks",
    "NotFound",
    "NotLeader",
    "StandaloneHerder",
    "Stoppable",
    "stop_all",
]

log = logging.getLogger("producer.sink")

RUNNING: Final = "RUNNING"
FAILED: Final = "FAILED"
UNASSIGNED: Final = "UNASSIGNED"
RESTARTING: Final = "RESTARTING"
TASK_CLASS: Final = "task.class"
BUILTIN_PLUGINS: Final = ("producer.sink.FileSink", "producer.sink.KafkaTopicSink")
#: Worker keys the tasks see (the herder's own keys, group.id and the like, stay out).
_TASK_WORKER_PREFIXES = ("consumer.", "producer.", "ssl.", "sasl.")
_TASK_WORKER_KEYS = ("bootstrap.servers", "security.protocol")


def task_worker_settings(worker: Mapping[str, Any]) -> dict[str, Any]:
    """The worker settings a connector's tasks resolve against."""
    return {
        k: v
        for k, v in worker.items()
        if k in _TASK_WORKER_KEYS or k.startswith(_TASK_WORKER_PREFIXES)
    }


class HerderError(Exception):
    """A request the herder refuses: ``status`` is the HTTP status of Connect's answer."""

    status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(HerderError):
    status = 404


class Conflict(HerderError):
    status = 409


class BadRequest(HerderError):
    status = 400


class Forbidden(HerderError):
    status = 403


class NotLeader(HerderError):
    """Only the leader may do this; the REST layer forwards the request to ``leader_url``."""

    status = 409

    def __init__(self, message: str, leader_url: str | None) -> None:
        super().__init__(message)
        self.leader_url = leader_url


def _enabled(worker: Mapping[str, Any], key: str) -> bool:
    return str(worker.get(key, "true")).strip().lower() != "false"


def not_found(name: str) -> NotFound:
    return NotFound(f"Connector {name} not found")


#: Connect's 404 messages for pause/resume/stop and for restart (not ``not_found``'s).
UNKNOWN: Final = "Unknown connector {}"
UNKNOWN_RESTART: Final = "Unknown connector: {}"


def sharetxn_version() -> str:
    try:
        return version("sharetxn")
    except PackageNotFoundError:
        return "unknown"


def cluster_id(bootstrap: str) -> str | None:
    """The cluster id the brokers report (Metadata), as Connect's ``GET /`` shows it."""
    client = KafkaClient(bootstrap, client_id="sink-worker-rest")
    try:
        body = {"topics": [], "allow_auto_topic_creation": False}
        resp = client.call(lambda: client.send(None, ApiKey.METADATA, body))
        return str(resp.cluster_id) if resp.cluster_id is not None else None
    finally:
        client.close()


def trace_of(error: BaseException) -> str:
    return "".join(traceback.format_exception(error)).rstrip()


# -- the tasks this process runs ------------------------------------------------------------


class _TaskRun:
    """One task of a connector on its own ``SinkWorker``, started in the background (after
    ``previous``, the run it replaces, stopped)."""

    def __init__(
        self,
        worker: Mapping[str, Any],
        connector: Mapping[str, str],
        task: int,
        previous: _TaskRun | None = None,
    ) -> None:
        self.task = task
        self._worker_config = worker
        self._connector = connector
        self._previous = previous
        self._sink: SinkWorker | None = None
        self.start_error: BaseException | None = None
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._start, daemon=True)
        self._thread.start()

    def _start(self) -> None:
        try:
            if self._previous is not None:
                self._previous.stop()
                self._previous = None
            if self._stopped.is_set():
                return
            sink = SinkWorker(self._worker_config, self._connector)
            self._sink = sink
            if not self._stopped.is_set():
                sink.start([self.task])
        except BaseException as exc:
            name = self._connector.get("name")
            log.warning("connector %s: task %d failed to start: %s", name, self.task, exc)
            self.start_error = exc

    def state(self) -> tuple[str, str | None]:
        if self.start_error is not None:
            return FAILED, trace_of(self.start_error)
        if self._previous is not None:
            return RESTARTING, None
        error = self._sink.task_errors().get(self.task) if self._sink is not None else None
        return (RUNNING, None) if error is None else (FAILED, trace_of(error))

    def topics(self) -> set[str]:
        return set().union(*self._sink.active_topics().values()) if self._sink else set()

    def request_stop(self) -> None:
        self._stopped.set()
        if self._sink is not None:
            self._sink.request_stop()

    def stop(self) -> None:
        """The task finishes, acknowledges and commits its batch, then stops."""
        self.request_stop()
        self._thread.join(60)
        if self._sink is not None:
            self._sink.stop()


class LocalTasks:
    """Some tasks of one connector, each run by its own ``SinkWorker`` in the background,
    so that one task restarts alone (Connect's ``POST .../tasks/{n}/restart``)."""

    def __init__(
        self, worker: Mapping[str, Any], connector: Mapping[str, str], task_ids: Sequence[int]
    ) -> None:
        self.task_ids = list(task_ids)
        self._worker_config = dict(worker)
        self._connector = {k: v for k, v in connector.items() if k != TASK_CLASS}
        self._recorded: set[str] = set()
        self._runs = {t: _TaskRun(self._worker_config, self._connector, t) for t in task_ids}

    @property
    def name(self) -> str:
        return str(self._connector.get("name"))

    def states(self) -> dict[int, tuple[str, str | None]]:
        """Each task's (state, trace)."""
        return {task: run.state() for task, run in sorted(self._runs.items())}

    def restart(self, tasks: Sequence[int]) -> None:
        """Restart these tasks (each stops, then starts again); the others run on."""
        for task in tasks:
            old = self._runs.get(task)
            if old is not None:
                old.request_stop()
                self._runs[task] = _TaskRun(self._worker_config, self._connector, task, old)

    def add(self, tasks: Sequence[int]) -> None:
        """Start these tasks too (an incremental assignment gave them to this worker)."""
        for task in tasks:
            if task not in self._runs:
                self._runs[task] = _TaskRun(self._worker_config, self._connector, task)
        self.task_ids = sorted(self._runs)

    def remove(self, tasks: Sequence[int]) -> list[Stoppable]:
        """Give these tasks up: their runs, to be stopped (once the caller's lock is off)."""
        taken: list[Stoppable] = [self._runs.pop(t) for t in tasks if t in self._runs]
        for run in taken:
            run.request_stop()
        self.task_ids = sorted(self._runs)
        return taken

    def new_topics(self) -> dict[str, int]:
        """Topics the tasks received records from since the last call: topic -> a task
        (Connect records a topic once per task run, KIP-558)."""
        out: dict[str, int] = {}
        for task, run in sorted(self._runs.items()):
            for topic in sorted(run.topics() - self._recorded):
                out.setdefault(topic, task)
        self._recorded.update(out)
        return out

    def request_stop(self) -> None:
        """Ask the tasks to stop; ``stop`` waits for them."""
        for run in self._runs.values():
            run.request_stop()

    def stop(self) -> None:
        """Each task finishes, acknowledges and commits its batch, then stops."""
        self.request_stop()
        for run in self._runs.values():
            run.stop()


class Stoppable(Protocol):
    def request_stop(self) -> None: ...

    def stop(self) -> None: ...


def stop_all(tasks: Sequence[Stoppable]) -> None:
    """Stop several connectors' tasks at once (they finish their batches in parallel)."""
    for local in tasks:
        local.request_stop()
    for local in tasks:
        local.stop()


# -- the interface --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Status:
    state: str
    worker_id: str
    trace: str | None = None

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"state": self.state, "worker_id": self.worker_id}
        if self.trace is not None:
            out["trace"] = self.trace
        return out


class Herder:
    """What the REST API calls; subclasses keep the configs and run the tasks."""

    worker_id: str = ""

    def __init__(self, worker: Mapping[str, Any]) -> None:
        self.worker = task_worker_settings(worker)
        self._cluster_id: str | None = None
        self.loggers = Loggers()
        self.topic_tracking = _enabled(worker, "topic.tracking.enable")
        self.topic_reset = _enabled(worker, "topic.tracking.allow.reset")

    # configs (subclasses)
    def connectors(self) -> list[str]:
        raise NotImplementedError

    def connector_config(self, name: str) -> dict[str, str]:
        raise NotImplementedError

    def task_count(self, name: str) -> int:
        raise NotImplementedError

    def put_connector_config(
        self, name: str, config: dict[str, str], allow_replace: bool
    ) -> tuple[bool, dict[str, Any]]:
        raise NotImplementedError

    def delete_connector(self, name: str) -> None:
        raise NotImplementedError

    def set_target_state(self, name: str, state: str) -> None:
        raise NotImplementedError

    def restart(self, name: str, include_tasks: bool, only_failed: bool) -> dict[str, Any] | None:
        raise NotImplementedError

    def connector_status(self, name: str) -> dict[str, Any]:
        raise NotImplementedError

    def target_state(self, name: str) -> str:
        raise NotImplementedError

    def topics_of(self, name: str) -> list[str]:
        """The connector's active topics, sorted (KIP-558)."""
        raise NotImplementedError

    def forget_topics(self, name: str) -> None:
        raise NotImplementedError

    def set_cluster_logger_level(self, namespace: str, level: str) -> None:
        """``?scope=cluster``: in one process the cluster is this worker, as Connect's
        standalone herder."""
        self.loggers.set_level(namespace, level)

    def before_offsets_change(self) -> None:
        """Raise ``NotLeader`` where only the leader may change offsets."""

    # shared
    def active_topics(self, name: str) -> list[str]:
        if not self.topic_tracking:
            raise Forbidden("Topic tracking is disabled.")
        return self.topics_of(name)

    def reset_active_topics(self, name: str) -> None:
        if not self.topic_tracking:
            raise Forbidden("Topic tracking is disabled.")
        if not self.topic_reset:
            raise Forbidden("Topic tracking reset is disabled.")
        self.forget_topics(name)

    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]) -> dict[str, Any]:
        """Connect's ``PATCH .../config``: ``null`` removes a key, the rest set theirs."""
        config = self.connector_config(name)
        for key, value in patch.items():
            if value is None:
                config.pop(key, None)
            else:
                config[key] = value
        _, info = self.put_connector_config(name, config, allow_replace=True)
        return info

    def offsets_target(self, name: str) -> tuple[dict[str, Any], str, str]:
        """Connect's checks before changing offsets (the connector exists, is STOPPED and
        has no tasks); the admin client's config, the connector and its share group."""
        self.before_offsets_change()
        if name not in self.connectors():
            raise not_found(name)
        if self.target_state(name) != STOPPED or self.task_count(name) != 0:
            raise BadRequest(
                "Connectors must be in the STOPPED state before their offsets can be modified. "
                "This can be done for the specified connector by issuing a 'PUT' request to the "
                f"'/connectors/{name}/stop' endpoint"
            )
        config = resolve(self.worker, self.connector_config(name))
        return {"bootstrap.servers": config.bootstrap_servers}, name, config.share_group_id

    def server_info(self) -> dict[str, Any]:
        if self._cluster_id is None:
            try:
                self._cluster_id = cluster_id(str(self.worker["bootstrap.servers"]))
            except Exception as exc:
                log.debug("cluster id: %s", exc)
        return {
            "version": sharetxn_version(),
            "commit": "unknown",
            "kafka_cluster_id": self._cluster_id,
        }

    def connector_info(self, name: str) -> dict[str, Any]:
        config = self.connector_config(name)
        tasks = [{"connector": name, "task": t} for t in range(self.task_count(name))]
        return {"name": name, "config": config, "tasks": tasks, "type": "sink"}

    def task_configs(self, name: str) -> list[dict[str, Any]]:
        config = self.connector_config(name)
        return [
            {"id": {"connector": name, "task": t}, "config": task_config(config)}
            for t in range(self.task_count(name))
        ]

    def ready(self) -> bool:
        """Whether the worker finished starting (``GET /health``)."""
        return True

    def task_status(self, name: str, task: int) -> dict[str, Any]:
        try:
            found = self.connector_status(name)["tasks"]
        except NotFound:
            found = []
        for entry in found:
            if entry["id"] == task:
                return dict(entry)
        raise NotFound(f"No status found for task {name}-{task}")

    def restart_task(self, name: str, task: int) -> None:
        """Restart one task alone (the connector's other tasks run on)."""
        self.require(name, UNKNOWN_RESTART)
        if not 0 <= task < self.task_count(name):
            raise NotFound(f"Unknown task: {name}-{task}")
        self.restart_one(name, task)

    def restart_one(self, name: str, task: int) -> None:
        raise NotImplementedError

    def require(self, name: str, message: str) -> None:
        """NotFound with Connect's ``message`` (``UNKNOWN``...) unless ``name`` exists."""
        if name not in self.connectors():
            raise NotFound(message.format(name))

    def offsets(self, name: str) -> dict[str, Any]:
        """Connect's sink offsets body from the share group's start offsets (KIP-1302:
        every record before a partition's start offset is delivered)."""
        config = resolve(self.worker, self.connector_config(name))
        with Admin({"bootstrap.servers": config.bootstrap_servers}) as admin:
            topics = list(config.topics) or [
                t for t in admin.list_topics() if re.fullmatch(config.topics_regex or "", t)
            ]
            found = admin.describe_share_group_offsets(config.share_group_id, topics)
        return {
            "offsets": [
                {
                    "partition": {"kafka_topic": o.topic, "kafka_partition": o.partition},
                    "offset": {"kafka_offset": o.start_offset},
                }
                for o in sorted(found, key=lambda o: (o.topic, o.partition))
                if o.start_offset >= 0
            ]
        }

    def check_config(self, name: str, config: Mapping[str, str]) -> None:
        """A config ``resolve`` refuses is a 400, as Connect's validation failure."""
        check_class(config)
        problems = validate(self.worker, config)["error_count"]
        if problems:
            errors = [
                f"{c['value']['name']}: {e}"
                for c in validate(self.worker, config)["configs"]
                for e in c["value"]["errors"]
            ]
            raise BadRequest(
                f"Connector configuration is invalid and contains the following {problems} "
                f"error(s):\n" + "\n".join(errors) + "\nYou can also find the above list of "
                "errors at the endpoint `/connector-plugins/{connectorType}/config/validate`"
            )
        if config.get("name", name) != name:
            raise BadRequest("connector name mismatch")


def restart_plan(
    status: dict[str, Any], include_tasks: bool, only_failed: bool
) -> tuple[dict[str, Any], list[int]]:
    """KIP-745's plan: the status with what restarts ``RESTARTING`` (the connector unless
    ``only_failed`` and it did not fail; with ``include_tasks``, the tasks, or only the
    failed ones), and the tasks to restart."""
    connector = status["connector"]
    if not only_failed or connector["state"] == FAILED:
        connector["state"] = RESTARTING
        connector.pop("trace", None)
    chosen: list[int] = []
    for task in status["tasks"]:
        if include_tasks and (not only_failed or task["state"] == FAILED):
            task["state"] = RESTARTING
            task.pop("trace", None)
            chosen.append(int(task["id"]))
    return status, chosen


def check_class(config: Mapping[str, str]) -> None:
    """Connect's 400s for a config without a loadable connector class."""
    cls = config.get("connector.class")
    if not cls:
        raise BadRequest("Connector config contains no connector type")
    try:
        load_task_class(plugin_class(cls))
    except ValueError:
        raise BadRequest(
            "Failed to find any class that implements Connector and which name matches "
            f"{cls}, available connectors are: {', '.join(BUILTIN_PLUGINS)}"
        ) from None


def task_config(connector: Mapping[str, str]) -> dict[str, str]:
    """A sink task's config: the connector's plus ``task.class``, as Connect writes it."""
    return {**connector, TASK_CLASS: connector.get("connector.class", "")}


# -- plugins and validation -----------------------------------------------------------------


def plugin_class(plugin: str) -> str:
    """A plugin's class from its name: the class, or a built-in's simple name."""
    for builtin in BUILTIN_PLUGINS:
        if plugin in (builtin, builtin.rsplit(".", 1)[1]):
            return builtin
    return plugin


def plugins() -> list[dict[str, str]]:
    return [{"class": c, "type": "sink", "version": sharetxn_version()} for c in BUILTIN_PLUGINS]


_DEFINITIONS: Final = (
    ("name", "STRING", True, "Globally unique name to use for this connector."),
    ("connector.class", "STRING", True, "The SinkTask class, package.module.Class."),
    ("tasks.max", "INT", False, "Maximum number of tasks to use for this connector."),
    ("topics", "LIST", False, "List of topics to consume, separated by commas."),
    ("topics.regex", "STRING", False, "Regular expression giving topics to consume."),
    ("share.group.id", "STRING", False, "The share group of the connector's tasks."),
)


def validate(worker: Mapping[str, Any], config: Mapping[str, str]) -> dict[str, Any]:
    """Connect's ``ConfigInfos`` for a connector config (the shape of ``/config/validate``)."""
    errors: dict[str, list[str]] = {}
    cls = config.get("connector.class", "")
    try:
        task: type[SinkTask] | Any = load_task_class(plugin_class(cls)) if cls else None
        if task is None:
            errors.setdefault("connector.class", []).append("Missing required configuration")
    except ValueError as exc:
        errors.setdefault("connector.class", []).append(str(exc))
    if not config.get("name"):
        errors.setdefault("name", []).append("Missing required configuration")
    if "connector.class" not in errors and "name" not in errors:
        settings = {k: v for k, v in worker.items() if k not in config}
        try:
            resolve(settings, {**config, "connector.class": plugin_class(cls)})
        except SinkConfigError as exc:
            key, _, problem = str(exc).partition(": ")
            errors.setdefault(key, []).append(problem)
    keys = [d[0] for d in _DEFINITIONS] + sorted(
        k for k in {*config, *errors} if k not in {d[0] for d in _DEFINITIONS}
    )
    definitions = {d[0]: d for d in _DEFINITIONS}
    configs = []
    for order, key in enumerate(keys, 1):
        _, kind, required, doc = definitions.get(key, (key, "STRING", False, ""))
        configs.append(
            {
                "definition": {
                    "name": key,
                    "type": kind,
                    "required": required,
                    "default_value": None,
                    "importance": "HIGH" if required else "MEDIUM",
                    "documentation": doc,
                    "group": "Common",
                    "width": "NONE",
                    "display_name": key,
                    "dependents": [],
                    "order": order,
                },
                "value": {
                    "name": key,
                    "value": config.get(key),
                    "recommended_values": [],
                    "errors": errors.get(key, []),
                    "visible": True,
                },
            }
        )
    return {
        "name": plugin_class(cls),
        "error_count": sum(len(e) for e in errors.values()),
        "groups": ["Common"],
        "configs": configs,
    }


# -- standalone -----------------------------------------------------------------------------


class StandaloneHerder(Herder):
    """Every connector in memory, every task in this process (``connect-standalone``)."""

    def __init__(self, worker: Mapping[str, Any], worker_id: str) -> None:
        super().__init__(worker)
        self.worker_id = worker_id
        self._lock = threading.RLock()
        self._configs: dict[str, dict[str, str]] = {}
        self._states: dict[str, str] = {}
        self._running: dict[str, LocalTasks] = {}
        self._restarting: set[str] = set()
        self._topics: dict[str, set[str]] = {}

    def connectors(self) -> list[str]:
        with self._lock:
            return sorted(self._configs)

    def connector_config(self, name: str) -> dict[str, str]:
        with self._lock:
            if name not in self._configs:
                raise not_found(name)
            return dict(self._configs[name])

    def task_count(self, name: str) -> int:
        config = self.connector_config(name)
        if self._states.get(name) == STOPPED:
            return 0
        return int(config.get("tasks.max", "1"))

    def put_connector_config(
        self, name: str, config: dict[str, str], allow_replace: bool
    ) -> tuple[bool, dict[str, Any]]:
        self.check_config(name, config)
        with self._lock:
            created = name not in self._configs
            if not created and not allow_replace:
                raise Conflict(f"Connector {name} already exists")
            self._configs[name] = dict(config)
            self._states.setdefault(name, STARTED)
            self._restart_tasks(name)
            return created, self.connector_info(name)

    def delete_connector(self, name: str) -> None:
        with self._lock:
            self.connector_config(name)
            self._stop_tasks(name)
            del self._configs[name]
            self._states.pop(name, None)
            self._topics.pop(name, None)

    def set_target_state(self, name: str, state: str) -> None:
        with self._lock:
            self.require(name, UNKNOWN)
            self._states[name] = state
            self._restart_tasks(name)

    def restart(self, name: str, include_tasks: bool, only_failed: bool) -> dict[str, Any] | None:
        with self._lock:
            self.require(name, UNKNOWN_RESTART)
            if not include_tasks and not only_failed:
                return None
            status, chosen = restart_plan(self.connector_status(name), include_tasks, only_failed)
            running = self._running.get(name)
            if running is not None and chosen:
                running.restart(chosen)
            return status

    def restart_one(self, name: str, task: int) -> None:
        with self._lock:
            running = self._running.get(name)
            if running is not None:
                running.restart([task])

    def connector_status(self, name: str) -> dict[str, Any]:
        with self._lock:
            if name not in self._configs:
                raise NotFound(f"No status found for connector {name}")
            state = self._states.get(name, STARTED)
            connector = Status(RUNNING if state == STARTED else state, self.worker_id)
            running = self._running.get(name)
            tasks: list[dict[str, Any]] = []
            if state == PAUSED:
                tasks = [
                    {"id": t, **Status(PAUSED, self.worker_id).body()}
                    for t in range(self.task_count(name))
                ]
            elif running is not None:
                for task, (task_state, trace) in sorted(running.states().items()):
                    tasks.append({"id": task, **Status(task_state, self.worker_id, trace).body()})
            return {"name": name, "connector": connector.body(), "tasks": tasks, "type": "sink"}

    def target_state(self, name: str) -> str:
        with self._lock:
            return self._states.get(name, STARTED)

    def topics_of(self, name: str) -> list[str]:
        with self._lock:
            self._collect_topics(name)
            return sorted(self._topics.get(name, ()))

    def forget_topics(self, name: str) -> None:
        with self._lock:
            self._collect_topics(name)
            self._topics.pop(name, None)

    def _collect_topics(self, name: str) -> None:
        running = self._running.get(name)
        if running is not None and name in self._configs:
            self._topics.setdefault(name, set()).update(running.new_topics())

    def _stop_tasks(self, name: str) -> None:
        self._collect_topics(name)
        running = self._running.pop(name, None)
        if running is not None:
            running.stop()

    def _restart_tasks(self, name: str) -> None:
        self._stop_tasks(name)
        if self._states.get(name, STARTED) == STARTED:
            config = task_config(self._configs[name])
            self._running[name] = LocalTasks(self.worker, config, range(self.task_count(name)))

    def stop(self) -> None:
        with self._lock:
            for name in list(self._running):
                self._stop_tasks(name)
