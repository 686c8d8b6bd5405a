"""``SinkWorker``: runs ``tasks.max`` share sink tasks of one connector in this process.

    from producer.sink import SinkWorker

    worker = SinkWorker({
        "bootstrap.servers": "127.0.0.1:9092",
        "consumer.group.protocol": "share",
        "name": "orders-to-file",
        "connector.class": "producer.sink.FileSink",
        "topics": "orders",
        "file": "/tmp/orders.txt",
    })
    worker.run()          # until worker.stop() (another thread, a signal handler)

Start-up, once per process: the share group id must not be a consumer group's (KIP-1302's
validation); the KIP's group settings are applied to the group (IncrementalAlterConfigs);
a new group starts at the earliest offset (Connect's consumer default) unless the group has
its own ``share.auto.offset.reset``; the dead-letter topic is created if missing.  Then each
task runs in its own thread with its own ShareConsumer: several worker processes on one
``share.group.id`` share the records with no rebalance and no partition ownership.

``stop()`` (SIGTERM in ``sharetxn sink run``) stops polling; each task finishes the batch it
holds (``put``, acknowledge, commit), then ``stop()`` is called and the consumer closes.  A
task that fails (in ``start`` or later) stops the whole worker and ``run()`` raises its error,
so a supervisor can restart the process.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Self

from opentelemetry.metrics import MeterProvider

from producer.admin import RESOURCE_GROUP, Admin
from producer.sink.config import SinkConfig, SinkConfigError, resolve
from producer.sink.dlq import ensure_topic
from producer.sink.loop import TaskStartError, WorkerShareSinkTask
from producer.sink.metrics import SinkTaskMetrics, WorkerStats
from producer.sink.task import SinkTask, load_task_class
from txn.errors import InvalidConfigError

__all__ = ["SinkWorker", "SinkWorkerError", "TaskStartError"]

log = logging.getLogger("producer.sink")

# The KIP's keys for the group configs the worker sets.
_GROUP_CONFIG_KEYS = {
    "share.record.lock.duration.ms": "share.acquisition.lock.timeout.ms",
    "share.delivery.count.limit": "share.max.delivery.count",
    "share.auto.offset.reset": "consumer.override.auto.offset.reset",
}
_STOP_TIMEOUT_S = 60.0


class SinkWorkerError(Exception):
    """The worker could not start or one of its tasks failed."""


class SinkWorker:
    """A KIP-1302 share sink worker for one connector (see the module docstring)."""

    def __init__(
        self,
        worker: Mapping[str, Any],
        connector: Mapping[str, Any] | None = None,
        *,
        stats: WorkerStats | None = None,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        self.config: SinkConfig = resolve(worker, connector)
        self._meter_provider = meter_provider
        try:
            self._task_class: Callable[[], SinkTask] = load_task_class(self.config.connector_class)
        except ValueError as exc:
            raise SinkConfigError("connector.class", str(exc).split(": ", 1)[-1]) from None
        self.stats = stats or WorkerStats()
        self.delivery_limit = 0
        self._stop = threading.Event()
        self._tasks: list[WorkerShareSinkTask] = []
        self._threads: list[threading.Thread] = []

    # -- start-up ---------------------------------------------------------------------------

    def prepare(self) -> None:
        """The once-per-process checks and group settings (``start`` calls it)."""
        cfg = self.config
        with Admin({"bootstrap.servers": cfg.bootstrap_servers, "client.id": "sink-worker"}) as a:
            for group in a.list_groups():
                if group.group_id == cfg.share_group_id and group.type != "share":
                    raise SinkConfigError(
                        "share.group.id",
                        f"{cfg.share_group_id!r} is the id of an existing {group.type} consumer "
                        "group; a share group id must not collide with a consumer group id",
                    )
            wanted = cfg.group_configs()
            if "share.auto.offset.reset" not in wanted:
                own = a.describe_configs(RESOURCE_GROUP, cfg.share_group_id, explicit_only=True)
                if "share.auto.offset.reset" not in own:
                    wanted["share.auto.offset.reset"] = "earliest"
            try:
                a.alter_group_configs(cfg.share_group_id, wanted)
            except InvalidConfigError as exc:
                text = str(exc)
                key = next(
                    (k for g, k in _GROUP_CONFIG_KEYS.items() if g in text), "share.group.id"
                )
                raise SinkConfigError(key, f"the broker refused it: {text}") from None
            effective = a.describe_configs(RESOURCE_GROUP, cfg.share_group_id)
            limit = effective.get("share.delivery.count.limit")
            self.delivery_limit = int(limit) if limit else (cfg.max_delivery_count or 5)
            if cfg.dlq_topic is not None:
                try:
                    ensure_topic(a, cfg.dlq_topic, cfg.dlq_replication_factor)
                except Exception as exc:
                    raise SinkWorkerError(str(exc)) from exc

    def start(self, task_ids: Sequence[int] | None = None) -> None:
        """Prepare, then start the tasks; raises if one of them fails to start.

        ``task_ids``: only these of the connector's ``tasks.max`` tasks (a distributed
        worker runs the ones its group assigned it); all of them by default.
        """
        self.prepare()
        cfg = self.config
        for task_id in range(cfg.tasks_max) if task_ids is None else task_ids:
            runner = WorkerShareSinkTask(
                cfg,
                task_id,
                self._task_class,
                SinkTaskMetrics(cfg.name, task_id, self.stats, self._meter_provider),
                self._stop,
                self.delivery_limit,
            )
            thread = threading.Thread(
                target=runner.run, name=f"sink-{cfg.name}-{task_id}", daemon=True
            )
            self._tasks.append(runner)
            self._threads.append(thread)
            thread.start()
        for runner in self._tasks:
            runner.started.wait()
        failure = self.failure
        if failure is not None:
            self.stop()
            raise SinkWorkerError(str(failure)) from failure
        log.info(
            "sink %s: %d task(s) on share group %s, topics %s, %s, acknowledgement mode %s",
            cfg.name,
            len(self._tasks),
            cfg.share_group_id,
            ",".join(cfg.topics) or f"matching {cfg.topics_regex}",
            cfg.delivery_semantics,
            cfg.acknowledgement_mode,
        )

    # -- running and stopping ---------------------------------------------------------------

    @property
    def failure(self) -> BaseException | None:
        """The first task error, if any."""
        return next((t.error for t in self._tasks if t.error is not None), None)

    def task_errors(self) -> dict[int, BaseException | None]:
        """Each started task's error (None while it runs or after it stopped cleanly)."""
        return {t.task_id: t.error for t in self._tasks}

    def active_topics(self) -> dict[int, set[str]]:
        """Each started task's topics it received records from."""
        return {t.task_id: set(t.active_topics) for t in self._tasks}

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def stop(self, timeout_s: float = _STOP_TIMEOUT_S) -> None:
        """Stop polling; each task finishes and commits its batch, then stops.  Idempotent."""
        self._stop.set()
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def stop_requested(self) -> bool:
        return self._stop.is_set()

    def request_stop(self) -> None:
        """Ask the tasks to stop (safe from a signal handler); ``run`` then returns."""
        self._stop.set()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Until stop is requested or a task fails; True if the worker is stopping."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not self._stop.is_set() and self.failure is None:
            if deadline is not None and time.monotonic() >= deadline:
                return False
            self._stop.wait(0.2)
        return True

    def run(self) -> None:
        """Start, run until ``request_stop``/``stop``, stop cleanly; raises a task's failure."""
        self.start()
        try:
            self.wait()
        finally:
            self.stop()
        failure = self.failure
        if failure is not None:
            raise SinkWorkerError(f"{type(failure).__name__}: {failure}") from failure

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
