"""``DistributedHerder``: sink workers sharing connectors, as ``connect-distributed``.

Workers with the same ``group.id`` form a classic group of protocol type ``connect`` (on
any Kafka broker), with ``connect.protocol``'s protocols: ``sessioned`` (the default) and
``compatible`` rebalance incrementally (``producer.sink.cooperative``, KIP-415: a worker
gives up only what the leader revokes); ``eager`` (protocol ``default``, ConnectProtocol
v0) revokes everything at every rebalance, and the leader assigns every connector and
task round-robin.  Connector configs live in ``config.storage.topic`` (one partition,
compacted) in Connect's record format (``producer.sink.connect_protocol``); statuses in
``status.storage.topic``.  KIP-1302's sinks keep their progress in their share groups, so
``offset.storage.topic`` is accepted and never written.

Writes that Connect leaves to the leader (creating, reconfiguring, deleting, stopping and
restarting connectors) raise ``NotLeader`` on a follower; the REST layer forwards them to
the leader's URL, as Connect's ``HerderRequestHandler`` does.  Pause and resume are written
by any worker, as in Connect.  A worker that dies leaves the group when its session times
out (``session.timeout.ms``); the rebalance that follows gives its tasks to the others, and
the records it held come back to the share group.
"""

from __future__ import annotations

import base64
import json
import logging
import secrets
import threading
import time
from collections.abc import Mapping
from typing import Any, Final

from producer.sink.connect_protocol import (
    COMMIT_PREFIX,
    CONNECTOR_PREFIX,
    CONNECTOR_TASK,
    ERROR_NONE,
    PROTOCOL_TYPE,
    RESTART_PREFIX,
    STARTED,
    STOPPED,
    TARGET_STATE_PREFIX,
    TASK_PREFIX,
    Assignment,
    ConfigState,
    WorkerMetadata,
    assign_eager,
    config_key,
    decode_assignment,
    decode_metadata,
    encode_assignment,
    encode_metadata,
    json_value,
    status_key,
    status_value,
    target_state_value,
)
from producer.sink.cooperative import (
    DEFAULT,
    EAGER,
    PROTOCOLS,
    SESSIONED,
    VERSIONS,
    CoopAssignment,
    CooperativeAssignor,
    CoopMetadata,
    Item,
    decode_coop_assignment,
    decode_coop_metadata,
    encode_coop_assignment,
    encode_coop_metadata,
    items_of,
    tasks_of,
)
from producer.sink.group_member import GroupMember
from producer.sink.herder import (
    FAILED,
    RESTARTING,
    RUNNING,
    UNASSIGNED,
    UNKNOWN,
    UNKNOWN_RESTART,
    Conflict,
    Herder,
    LocalTasks,
    NotFound,
    NotLeader,
    Stoppable,
    not_found,
    restart_plan,
    stop_all,
    task_config,
)
from producer.sink.kafka_log import KafkaLog
from producer.sink.loggers import LEVELS

__all__ = ["DistributedHerder", "DistributedSettings"]

log = logging.getLogger("producer.sink")

_TICK_S: Final = 0.25
TOPIC_STATUS_PREFIX: Final = "status-topic-"
TOPIC_SEPARATOR: Final = ":connector-"
LOGGER_PREFIX: Final = "logger-cluster-"
SESSION_KEY: Final = "session-key"


class DistributedSettings:
    """The worker keys of ``connect-distributed.properties`` this herder reads."""

    def __init__(self, worker: Mapping[str, Any]) -> None:
        def get(key: str, default: str | None = None) -> str:
            value = worker.get(key, default)
            if value is None or str(value).strip() == "":
                msg = f"{key}: is required in distributed mode"
                raise ValueError(msg)
            return str(value).strip()

        def number(key: str, default: int) -> int:
            raw = get(key, str(default))
            try:
                return int(raw)
            except ValueError:
                msg = f"{key}: must be an integer, not {raw!r}"
                raise ValueError(msg) from None

        self.bootstrap = get("bootstrap.servers")
        self.group_id = get("group.id")
        self.config_topic = get("config.storage.topic")
        self.status_topic = get("status.storage.topic")
        self.offset_topic = str(worker.get("offset.storage.topic", ""))
        self.config_replication = number("config.storage.replication.factor", 3)
        self.status_replication = number("status.storage.replication.factor", 3)
        self.status_partitions = number("status.storage.partitions", 5)
        self.session_timeout_ms = number("session.timeout.ms", 10_000)
        self.heartbeat_interval_ms = number("heartbeat.interval.ms", 3_000)
        self.rebalance_timeout_ms = number("rebalance.timeout.ms", 60_000)
        self.protocol = get("connect.protocol", SESSIONED).lower()
        if self.protocol not in PROTOCOLS:
            msg = f"connect.protocol: must be one of {', '.join(PROTOCOLS)}, not {self.protocol!r}"
            raise ValueError(msg)
        self.max_delay_ms = number("scheduled.rebalance.max.delay.ms", 300_000)
        self.key_ttl_ms = number("inter.worker.key.ttl.ms", 3_600_000)


class DistributedHerder(Herder):
    """One worker of a distributed sink cluster (see the module docstring)."""

    def __init__(self, worker: Mapping[str, Any], url: str) -> None:
        super().__init__(worker)
        self.settings = DistributedSettings(worker)
        s = self.settings
        self.url = url
        self.worker_id = url.removeprefix("http://").removeprefix("https://").rstrip("/")
        client_id = f"connect-{self.worker_id}"
        self._config_log = KafkaLog(
            s.bootstrap,
            s.config_topic,
            partitions=1,
            replication_factor=s.config_replication,
            client_id=client_id,
        )
        self._status_log = KafkaLog(
            s.bootstrap,
            s.status_topic,
            partitions=s.status_partitions,
            replication_factor=s.status_replication,
            client_id=client_id,
        )
        self._member = GroupMember(
            s.bootstrap,
            s.group_id,
            protocol_type=PROTOCOL_TYPE,
            session_timeout_ms=s.session_timeout_ms,
            rebalance_timeout_ms=s.rebalance_timeout_ms,
            client_id=client_id,
        )
        self._lock = threading.RLock()
        self._state = ConfigState()
        self._statuses: dict[str, dict[str, Any]] = {}
        self._assignment: Assignment | None = None
        self._assigned_counts: dict[str, int] = {}
        self._planned_counts: dict[str, int] = {}
        self._leader = False
        self._rejoin = threading.Event()
        self._stop = threading.Event()
        self._local: dict[str, LocalTasks] = {}
        self._local_configs: dict[str, dict[str, str]] = {}
        self._restart_mark = 0
        self._owners: dict[tuple[str, int], str] = {}
        self._protocol = DEFAULT if s.protocol == EAGER else ""
        self._owned: set[Item] | None = None
        self.session_key: dict[str, Any] | None = None
        self._rejoin_at: float | None = None
        self._assignor = CooperativeAssignor(s.max_delay_ms)
        self._written: dict[str, tuple[str, str | None]] = {}
        self._threads: list[threading.Thread] = []
        self.error: BaseException | None = None
        self.joined = threading.Event()

    # -- running ---------------------------------------------------------------------------

    def start(self) -> None:
        """Create the topics, read them, then join the group in the background."""
        self._config_log.start()
        self._status_log.start()
        self._refresh()
        self._restart_mark = self._state.offset
        for target, name in ((self._tick_loop, "herder"), (self._heartbeat_loop, "heartbeat")):
            thread = threading.Thread(target=target, name=f"sink-{name}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def stop(self) -> None:
        """Stop every task (each commits its batch), leave the group, close the clients."""
        self._stop.set()
        for thread in self._threads:
            thread.join(90)
        with self._lock:
            stopping = self._take_all()
        stop_all(stopping)
        self._member.leave()
        self._member.close()
        self._config_log.close()
        self._status_log.close()

    def _tick_loop(self) -> None:
        try:
            while not self._stop.is_set():
                due = self._rejoin_at is not None and time.monotonic() >= self._rejoin_at
                if self._assignment is None or self._rejoin.is_set() or due:
                    self._rebalance()
                self._tick()
                self._stop.wait(_TICK_S)
        except BaseException as exc:
            log.exception("sink worker %s: herder failed", self.worker_id)
            self.error = exc
            self._stop.set()

    def _heartbeat_loop(self) -> None:
        interval = self.settings.heartbeat_interval_ms / 1000
        while not self._stop.wait(interval):
            stable = self._assignment is not None and not self._rejoin.is_set()
            if stable and not self._member.heartbeat():
                log.info("sink worker %s: the group is rebalancing", self.worker_id)
                self._rejoin.set()

    def _refresh(self) -> None:
        def on_config(key: str, value: bytes | None, _part: int, offset: int) -> None:
            with self._lock:
                self._state.apply(key, value, offset)
            if key == SESSION_KEY and value:
                self.session_key = json.loads(value)
            if key.startswith(LOGGER_PREFIX) and value:
                level = str(json.loads(value).get("level") or "")
                if level.upper() in LEVELS:
                    self.loggers.set_level(key[len(LOGGER_PREFIX) :], level)

        def on_status(key: str, value: bytes | None, _part: int, _offset: int) -> None:
            with self._lock:
                if value is None:
                    self._statuses.pop(key, None)
                else:
                    self._statuses[key] = json.loads(value)

        # Always the herder's lock first, then a log's (the tick holds it while it writes).
        with self._lock:
            self._config_log.read_to_end(on_config)
            self._status_log.read_to_end(on_status)

    # -- the rebalance ---------------------------------------------------------------------

    def _rebalance(self) -> None:
        """Join the group.  Eager (``default``): give everything up first, then start the
        new assignment.  Incremental cooperative (``compatible``, ``sessioned``): keep
        running, give up what the leader revokes (then join again at once), start what it
        assigns, and join again after its ``delay``."""
        eager = self._protocol == DEFAULT
        if eager:
            with self._lock:
                stopping = self._take_all()
                self._assignment = None
                self._owned = None
            stop_all(stopping)
        self._rejoin.clear()
        self._rejoin_at = None
        self._refresh()
        offset = self._state.offset - 1
        with self._lock:
            owned = None if self._owned is None else set(self._owned)
        protocols = [
            (
                name,
                encode_metadata(WorkerMetadata(self.url, offset))
                if name == DEFAULT
                else encode_coop_metadata(CoopMetadata(self.url, offset, owned), VERSIONS[name]),
            )
            for name in PROTOCOLS[self.settings.protocol]
        ]
        joined = self._member.join(protocols, self._assign)
        self._refresh()
        revoked: set[Item] = set()
        delay_ms = 0
        if joined.protocol == DEFAULT:
            if not eager:
                with self._lock:
                    stopping = self._take_all()
                stop_all(stopping)
            assignment = decode_assignment(joined.assignment)
            now_owned = items_of(assignment.tasks)
        else:
            coop = decode_coop_assignment(joined.assignment)
            revoked, delay_ms = coop.revoked, coop.delay_ms
            now_owned = ((owned or set()) - revoked) | coop.assigned
            assignment = Assignment(
                coop.error, coop.leader, coop.leader_url, coop.config_offset, tasks_of(now_owned)
            )
        with self._lock:
            giving_up = self._revoke(revoked)
            self._protocol = joined.protocol
            self._leader = joined.leader_id == joined.member_id
            self._assignment = assignment
            self._owned = now_owned
            self._assigned_counts = self._planned_counts if self._leader else {}
        stop_all(giving_up)
        if revoked:
            self._rejoin.set()
        elif delay_ms > 0:
            self._rejoin_at = time.monotonic() + delay_ms / 1000
        log.info(
            "sink worker %s: generation %d (%s), leader %s, running %s, revoked %s, delay %d ms",
            self.worker_id,
            joined.generation,
            joined.protocol,
            assignment.leader_url,
            assignment.tasks,
            tasks_of(revoked),
            delay_ms,
        )
        self.joined.set()

    def _revoke(self, revoked: set[Item]) -> list[Stoppable]:
        """Take the revoked tasks off this worker (stopped by the caller, lock released)."""
        stopping: list[Stoppable] = []
        for name, ids in tasks_of(revoked).items():
            for task in ids:
                self._written.pop(status_key(name, None if task == CONNECTOR_TASK else task), None)
            local = self._local.get(name)
            if local is None:
                continue
            stopping += local.remove([t for t in ids if t != CONNECTOR_TASK])
            if not local.task_ids:
                del self._local[name]
        return stopping

    def _assign(self, protocol: str, members: dict[str, bytes]) -> dict[str, bytes]:
        self._refresh()
        with self._lock:
            counts = self._counts()
            offset = self._state.offset - 1
            self._planned_counts = counts
        if protocol != DEFAULT:
            return self._assign_cooperative(protocol, members, counts, offset)
        metas = {m: decode_metadata(b) for m, b in members.items()}
        plan = assign_eager(metas, counts)
        with self._lock:
            self._owners = {
                (name, task): metas[member].url
                for member, tasks in plan.items()
                for name, ids in tasks.items()
                for task in ids
                if task != CONNECTOR_TASK
            }
        return {
            member: encode_assignment(
                Assignment(ERROR_NONE, self._member.member_id, self.url, offset, tasks)
            )
            for member, tasks in plan.items()
        }

    def _assign_cooperative(
        self, protocol: str, members: dict[str, bytes], counts: dict[str, int], offset: int
    ) -> dict[str, bytes]:
        metas = {m: decode_coop_metadata(b) for m, b in members.items()}
        now_ms = int(time.monotonic() * 1000)
        plan, delay = self._assignor.assign(metas, counts, now_ms)
        with self._lock:
            self._owners = {
                item: url
                for item, url in self._assignor.previous.items()
                if item[1] != CONNECTOR_TASK
            }
        leader = self._member.member_id
        return {
            member: encode_coop_assignment(
                CoopAssignment(ERROR_NONE, leader, self.url, offset, gained, lost, delay),
                VERSIONS[protocol],
            )
            for member, (gained, lost) in plan.items()
        }

    def _counts(self) -> dict[str, int]:
        return {name: self._state.tasks(name) for name in self._state.connectors}

    # -- one pass of the herder ------------------------------------------------------------

    def _tick(self) -> None:
        self._refresh()
        stopping: list[LocalTasks] = []
        with self._lock:
            if self._leader and self._protocol == SESSIONED:
                self._rotate_session_key()
            if self._leader:
                self._write_task_configs()
                if self._counts() != self._assigned_counts:
                    self._rejoin.set()
                    return
            if self._assignment is None:
                return
            self._apply_restarts()
            stopping = self._reconcile([])
            self._write_statuses()
        # Tasks finish their batches without holding up the REST API.
        stop_all(stopping)

    def _write_task_configs(self) -> None:
        """The leader writes a connector's task configs when they are not its config's."""
        for name, config in sorted(self._state.connectors.items()):
            if self._state.target_state(name) == STOPPED:
                continue
            wanted = task_config(config)
            count = int(config.get("tasks.max", "1") or 1)
            have = self._state.task_counts.get(name)
            current = [self._state.task_configs.get((name, t)) for t in range(have or 0)]
            if have == count and all(c == wanted for c in current):
                continue
            for task in range(count):
                value = json_value({"properties": wanted})
                self._config_log.send(config_key(TASK_PREFIX, name, task), value)
            self._config_log.send(config_key(COMMIT_PREFIX, name), json_value({"tasks": count}))
        self._refresh()

    def _rotate_session_key(self) -> None:
        """KIP-507: the leader writes a new session key when there is none or it is older
        than ``inter.worker.key.ttl.ms``."""
        now = int(time.time() * 1000)
        key = self.session_key
        if (
            key is not None
            and now - int(key.get("creation-timestamp", 0)) < self.settings.key_ttl_ms
        ):
            return
        value = {
            "key": base64.b64encode(secrets.token_bytes(32)).decode(),
            "algorithm": "HmacSHA256",
            "creation-timestamp": now,
        }
        self.session_key = value
        self._config_log.send(SESSION_KEY, json_value(value))

    def _reconcile(self, stopping: list[LocalTasks]) -> list[LocalTasks]:
        """Run the assigned tasks that should run, with their current configs; the tasks
        that should not run any more, to be stopped (``stopping``: already on their way;
        they start again on the next pass, once they stopped)."""
        assignment = self._assignment
        assert assignment is not None
        stopping = list(stopping)
        for name in list(self._local):
            tasks = self._local[name].task_ids
            config = self._state.task_config(name, tasks[0]) if tasks else {}
            if (
                name not in self._state.connectors
                or self._state.target_state(name) != STARTED
                or config != self._local_configs.get(name)
            ):
                stopping.append(self._local.pop(name))
        busy = {local.name for local in stopping}
        for name in assignment.tasks:
            tasks = [t for t in assignment.task_ids(name) if t < self._state.tasks(name)]
            if not tasks or name in busy or name not in self._state.connectors:
                continue
            if self._state.target_state(name) != STARTED:
                continue
            local = self._local.get(name)
            if local is not None:
                missing = [t for t in tasks if t not in local.task_ids]
                if missing:  # an incremental assignment gave this worker more of them
                    local.add(missing)
                continue
            config = self._state.task_config(name, tasks[0])
            self._local[name] = LocalTasks(self.worker, config, tasks)
            self._local_configs[name] = config
        return stopping

    def _apply_restarts(self) -> None:
        """KIP-745: restart this worker's tasks a restart request names (with
        ``only-failed``, the failed ones); the others run on."""
        for name, include_tasks, only_failed, offset in self._state.restarts:
            if offset < self._restart_mark:
                continue
            self._restart_mark = offset + 1
            running = self._local.get(name)
            if not include_tasks or running is None:
                continue
            states = running.states()
            chosen = [t for t in running.task_ids if not only_failed or states[t][0] == FAILED]
            for task in chosen:
                self._put_status(status_key(name, task), RESTARTING, None)
            running.restart(chosen)

    def _write_statuses(self) -> None:
        assignment = self._assignment
        assert assignment is not None
        for name in assignment.tasks:
            if name not in self._state.connectors:
                continue
            target = self._state.target_state(name)
            if assignment.owns_connector(name):
                state = RUNNING if target == STARTED else target
                self._put_status(status_key(name), state, None)
            running = self._local.get(name)
            states = running.states() if running is not None else {}
            if running is not None and self.topic_tracking:
                for topic, task in running.new_topics().items():
                    self._status_log.send(topic_key(topic, name), topic_value(topic, name, task))
            for task in assignment.task_ids(name):
                if task >= self._state.tasks(name):
                    continue
                state, trace = states.get(task, (target, None))
                self._put_status(status_key(name, task), state, trace)

    def _put_status(self, key: str, state: str, trace: str | None) -> None:
        if self._written.get(key) == (state, trace):
            return
        self._written[key] = (state, trace)
        value = status_value(state, self.worker_id, self._member.generation, trace)
        self._status_log.send(key, value)

    def _take_all(self) -> list[LocalTasks]:
        """Every running connector's tasks, to be stopped once the lock is released."""
        self._written.clear()
        taken = list(self._local.values())
        self._local.clear()
        return taken

    # -- what the REST API calls -----------------------------------------------------------

    @property
    def leader_url(self) -> str | None:
        return self._assignment.leader_url if self._assignment is not None else None

    def _require_leader(self, what: str) -> None:
        if not self._leader or self._assignment is None:
            raise NotLeader(f"Only the leader can {what}.", self.leader_url)

    def connectors(self) -> list[str]:
        with self._lock:
            return sorted(self._state.connectors)

    def connector_config(self, name: str) -> dict[str, str]:
        with self._lock:
            if name not in self._state.connectors:
                raise not_found(name)
            return dict(self._state.connectors[name])

    def task_count(self, name: str) -> int:
        with self._lock:
            return self._state.tasks(name)

    def put_connector_config(
        self, name: str, config: dict[str, str], allow_replace: bool
    ) -> tuple[bool, dict[str, Any]]:
        self._require_leader("set connector configs")
        self.check_config(name, config)
        with self._lock:
            created = name not in self._state.connectors
            if not created and not allow_replace:
                raise Conflict(f"Connector {name} already exists")
        self._config_log.send(
            config_key(CONNECTOR_PREFIX, name), json_value({"properties": config})
        )
        self._refresh()
        return created, self.connector_info(name)

    def delete_connector(self, name: str) -> None:
        self._require_leader("delete connectors")
        self.connector_config(name)
        self._config_log.send(config_key(CONNECTOR_PREFIX, name), None)
        self._config_log.send(config_key(TARGET_STATE_PREFIX, name), None)
        self._refresh()
        self.forget_topics(name)

    def set_target_state(self, name: str, state: str) -> None:
        self.require(name, UNKNOWN)
        if state == STOPPED:
            self._require_leader("transition connectors to the STOPPED state")
            self._config_log.send(config_key(COMMIT_PREFIX, name), json_value({"tasks": 0}))
        value = json_value(target_state_value(state))
        self._config_log.send(config_key(TARGET_STATE_PREFIX, name), value)
        self._refresh()

    def restart(self, name: str, include_tasks: bool, only_failed: bool) -> dict[str, Any] | None:
        self.require(name, UNKNOWN_RESTART)
        self._require_leader("restart connectors")
        status = self.connector_status(name)
        value = json_value({"include-tasks": include_tasks, "only-failed": only_failed})
        self._config_log.send(config_key(RESTART_PREFIX, name), value)
        if not include_tasks and not only_failed:
            return None
        return restart_plan(status, include_tasks, only_failed)[0]

    def restart_one(self, name: str, task: int) -> None:
        """Restart a task this worker runs; else the leader forwards the request to the
        worker it assigned the task to, as Connect (a follower, to the leader)."""
        with self._lock:
            assignment = self._assignment
            running = self._local.get(name)
            if assignment is not None and task in assignment.task_ids(name):
                if running is not None and task in running.task_ids:
                    self._put_status(status_key(name, task), RESTARTING, None)
                    running.restart([task])
                return
            owner = self._owners.get((name, task)) if self._leader else None
        message = "Cannot restart task since it is not assigned to this member"
        if owner is not None and owner != self.url:
            raise NotLeader(message, owner)
        raise NotLeader(message, self.leader_url)

    def target_state(self, name: str) -> str:
        with self._lock:
            return self._state.target_state(name)

    def topics_of(self, name: str) -> list[str]:
        self._refresh()
        with self._lock:
            return sorted(_topics_in(self._statuses, name))

    def forget_topics(self, name: str) -> None:
        self._refresh()
        with self._lock:
            topics = sorted(_topics_in(self._statuses, name))
        for topic in topics:
            self._status_log.send(topic_key(topic, name), None)
        self._refresh()

    def set_cluster_logger_level(self, namespace: str, level: str) -> None:
        """KIP-976: every worker applies the level when it reads the record."""
        value = json_value({"level": level})
        self._config_log.send(f"{LOGGER_PREFIX}{namespace}", value)
        self._refresh()

    def before_offsets_change(self) -> None:
        self._require_leader("process external offsets modification requests")

    def connector_status(self, name: str) -> dict[str, Any]:
        self._refresh()
        with self._lock:
            if name not in self._state.connectors:
                raise NotFound(f"No status found for connector {name}")
            connector = self._statuses.get(status_key(name)) or {"state": UNASSIGNED}
            tasks = []
            for task in range(self._state.tasks(name)):
                found = self._statuses.get(status_key(name, task)) or {"state": UNASSIGNED}
                tasks.append({"id": task, **_state_body(found)})
            return {
                "name": name,
                "connector": _state_body(connector),
                "tasks": tasks,
                "type": "sink",
            }

    def ready(self) -> bool:
        return self.joined.is_set()

    def wait_until_joined(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not self.joined.wait(0.1):
            if self.error is not None or time.monotonic() > deadline:
                return False
        return True


def topic_key(topic: str, connector: str) -> str:
    """Connect's status-topic key of a connector's active topic (KIP-558)."""
    return f"{TOPIC_STATUS_PREFIX}{topic}{TOPIC_SEPARATOR}{connector}"


def topic_value(topic: str, connector: str, task: int) -> bytes | None:
    body = {
        "name": topic,
        "connector": connector,
        "task": task,
        "partition": 0,
        "discoverTimestamp": int(time.time() * 1000),
    }
    return json_value({"topic": body})


def _topics_in(statuses: Mapping[str, Any], connector: str) -> set[str]:
    suffix = TOPIC_SEPARATOR + connector
    return {
        key[len(TOPIC_STATUS_PREFIX) : -len(suffix)]
        for key in statuses
        if key.startswith(TOPIC_STATUS_PREFIX) and key.endswith(suffix)
    }


def _state_body(record: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "state": record.get("state", UNASSIGNED),
        "worker_id": record.get("worker_id", ""),
    }
    if record.get("trace"):
        out["trace"] = record["trace"]
    return out
