"""``sharetxn sink distributed``: two worker processes in one group, kill -9, tasks move.

Each worker is a real ``python -m chaos.cli sink distributed`` process with a
connect-distributed.properties file; connectors are created over the REST API (on a follower,
so the request is forwarded to the leader) and kept in the config topic in Connect's format.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from coordinator.launcher import LocalBroker
from tests.integration.sink_helpers import (
    BROKER_CONFIG,
    eos_topics,
    fast_group,
    input_topic,
    lines,
    produce,
    read_topic,
    wait_for,
)
from tests.integration.sink_rest_helpers import WorkerProcess, call, task_states
from tests.stock_reads import read_messages

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def dbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    with LocalBroker(data_dir=tmp_path_factory.mktemp("sinkd") / "d", config=BROKER_CONFIG) as b:
        yield b


@pytest.fixture
def workers() -> Iterator[list[WorkerProcess]]:
    started: list[WorkerProcess] = []
    yield started
    for w in started:
        w.close()


def worker_props(bootstrap: str, group: str) -> dict[str, str]:
    """connect-distributed.properties, Connect's key names, for one broker."""
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "config.storage.topic": f"{group}-configs",
        "offset.storage.topic": f"{group}-offsets",
        "status.storage.topic": f"{group}-status",
        "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "listeners": "http://127.0.0.1:0",
        "consumer.group.protocol": "share",
        "session.timeout.ms": "6000",
        "heartbeat.interval.ms": "1000",
        # a killed worker's tasks wait this long for it to come back (5 minutes by default)
        "scheduled.rebalance.max.delay.ms": "2000",
    }


def lists(url: str, names: list[str]) -> bool:
    return bool(call("GET", f"{url}connectors")[1] == names)


def connector_state(url: str, name: str, state: str) -> bool:
    code, body = call("GET", f"{url}connectors/{name}/status")
    return code == 200 and body["connector"]["state"] == state


def statuses(url: str, name: str) -> dict[int, tuple[str, str]]:
    code, body = call("GET", f"{url}connectors/{name}/status")
    return task_states(body) if code == 200 else {}


@pytest.mark.parametrize("protocol", ["sessioned", "compatible", "eager"])
def test_two_workers_share_tasks_and_a_killed_workers_tasks_move(
    dbroker: LocalBroker, tmp_path: Path, workers: list[WorkerProcess], protocol: str
) -> None:
    bs = dbroker.bootstrap_servers
    group = f"connect-cluster-{uuid.uuid4().hex[:6]}"
    first = [f"a{i}" for i in range(150)]
    topic, name = input_topic(bs, 3, first, batch=5, fast=True)
    for i in range(2):
        workers.append(
            WorkerProcess(
                "distributed",
                {**worker_props(bs, group), "connect.protocol": protocol},
                tmp_path / f"w{i}.properties",
            )
        )
    for w in workers:
        w.wait_ready()
    out = tmp_path / "out.txt"
    config = {
        "connector.class": "producer.sink.FileSink",
        "topics": topic,
        "file": str(out),
        "tasks.max": "4",
        "share.acquisition.lock.timeout.ms": "2000",
        "consumer.override.fetch.max.wait.ms": "100",
        "consumer.override.max.poll.records": "10",
    }
    ids = {w.worker_id for w in workers}
    # The leader is the one that answers for itself; ask both: one of them forwards.
    for w in workers:
        code, body = call("PUT", f"{w.url}connectors/{name}/config", config)
        assert code in (200, 201), body
    wait_for(
        lambda: (
            {s for s, _ in statuses(workers[0].url, name).values()} == {"RUNNING"}
            and len(statuses(workers[0].url, name)) == 4
        ),
        60,
        "four running tasks",
    )
    owners = {wid for _, wid in statuses(workers[1].url, name).values()}
    assert owners == ids, "the leader spread the tasks over both workers"
    wait_for(lambda: set(lines(out)) >= set(first), 60, "the first records")

    # kill -9 one worker: after its session times out, its tasks go to the other
    victim, survivor = workers
    victim.kill()
    wait_for(
        lambda: (
            set(statuses(survivor.url, name).items())
            == {(t, ("RUNNING", survivor.worker_id)) for t in range(4)}
        ),
        90,
        "every task running on the survivor",
    )
    second = [f"b{i}" for i in range(150)]
    produce(bs, topic, second, batch=5)
    wait_for(lambda: set(lines(out)) >= set(first + second), 60, "every record")
    # at-least-once (KIP-1302 on a share group): every record, a killed batch maybe twice
    assert set(Counter(lines(out))) == set(first + second)

    # The config topic holds Connect's records.
    records = read_messages(
        bs, f"{group}-configs", 1, "read_uncommitted", 6, first_idle_s=2, timeout_s=30
    )
    keys = {m.key().decode() for m in records}
    assert {f"connector-{name}", f"commit-{name}"} | {f"task-{name}-{t}" for t in range(4)} <= keys
    assert ("session-key" in keys) == (protocol == "sessioned")  # KIP-507
    assert survivor.terminate() == 0
    assert any("stopped" in line for line in survivor.output)


def test_restart_and_delete_from_a_follower_are_forwarded(
    dbroker: LocalBroker, tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    bs = dbroker.bootstrap_servers
    group = f"connect-cluster-{uuid.uuid4().hex[:6]}"
    topic, name = input_topic(bs, 1, ["x"])
    for i in range(2):
        workers.append(
            WorkerProcess("distributed", worker_props(bs, group), tmp_path / f"w{i}.properties")
        )
    for w in workers:
        w.wait_ready()
    config = {
        "connector.class": "producer.sink.FileSink",
        "topics": topic,
        "file": str(tmp_path / "o"),
    }
    code, created = call("POST", f"{workers[1].url}connectors", {"name": name, "config": config})
    assert code == 201, created
    assert created["tasks"] == [] and created["type"] == "sink"
    for w in workers:
        wait_for(partial(lists, w.url, [name]), 30, "the config")
    wait_for(lambda: statuses(workers[0].url, name) != {}, 30, "a task status")
    code, body = call("POST", f"{workers[0].url}connectors", {"name": name, "config": config})
    assert (code, body["message"]) == (409, f"Connector {name} already exists")
    for w in workers:
        code, _ = call("POST", f"{w.url}connectors/{name}/restart?includeTasks=true")
        assert code == 202
    # pause and resume are written by any worker; stop is the leader's (forwarded)
    for action, state in (("pause", "PAUSED"), ("resume", "RUNNING"), ("stop", "STOPPED")):
        for w in workers:
            assert call("PUT", f"{w.url}connectors/{name}/{action}") == (202, None)
        wait_for(
            partial(connector_state, workers[0].url, name, state), 30, f"the connector {state}"
        )
    code, status = call("GET", f"{workers[1].url}connectors/{name}/status")
    assert status["tasks"] == [], "a stopped connector has no tasks"
    # offsets are the leader's to change: from either worker (forwarded), once stopped
    one = {"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {"kafka_offset": 0}}
    for w in workers:
        # as Connect: 500 ("zombie sink tasks") until the stopped tasks left the share group
        alter = partial(call, "PATCH", f"{w.url}connectors/{name}/offsets", {"offsets": [one]})
        wait_for(lambda a=alter: a()[0] == 200, 30, "the tasks gone from the share group")
        code, body = call("GET", f"{w.url}connectors/{name}/offsets")
        assert body == {"offsets": [one]}
        code, body = call("DELETE", f"{w.url}connectors/{name}/offsets")
        assert code == 200 and "reset successfully" in body["message"], body
    code, _ = call("DELETE", f"{workers[1].url}connectors/{name}")
    assert code == 204
    for w in workers:
        wait_for(partial(lists, w.url, []), 30, "the delete")
    assert all(w.terminate() == 0 for w in workers)


def test_exactly_once_survives_a_killed_worker(
    dbroker: LocalBroker, tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    """KafkaTopicSink, exactly-once: a worker killed mid-stream; each record once."""
    bs = dbroker.bootstrap_servers
    group = f"connect-cluster-{uuid.uuid4().hex[:6]}"
    topic, name, target = eos_topics(bs, 3, 3)
    fast_group(bs, f"connect-{name}")
    first = [f"a{i}" for i in range(200)]
    produce(bs, topic, first, batch=10)
    for i in range(2):
        props = worker_props(bs, group)
        workers.append(WorkerProcess("distributed", props, tmp_path / f"w{i}.properties"))
    for w in workers:
        w.wait_ready()
    config = {
        "connector.class": "producer.sink.KafkaTopicSink",
        "topics": topic,
        "target.topic": target,
        "tasks.max": "2",
        "share.delivery.semantics": "exactly-once",
        "share.acquisition.lock.timeout.ms": "2000",
        "producer.override.transaction.timeout.ms": "3000",
        "consumer.override.fetch.max.wait.ms": "100",
        "consumer.override.max.poll.records": "10",
    }
    code, body = call("PUT", f"{workers[0].url}connectors/{name}/config", config)
    assert code == 201, body
    wait_for(
        lambda: (
            {wid for _, wid in statuses(workers[0].url, name).values()}
            == {w.worker_id for w in workers}
        ),
        60,
        "a task on each worker",
    )
    victim, survivor = workers
    victim.kill()
    second = [f"b{i}" for i in range(200)]
    produce(bs, topic, second, batch=10)
    wait_for(
        lambda: (
            set(statuses(survivor.url, name).items())
            == {(t, ("RUNNING", survivor.worker_id)) for t in range(2)}
        ),
        90,
        "both tasks on the survivor",
    )
    got = read_topic(bs, target, 3, expect_at_least=400, timeout_s=90)
    assert survivor.terminate() == 0
    assert Counter(m.value() for m in got) == Counter(v.encode() for v in first + second)


def test_one_task_restarts_alone_on_either_worker(
    dbroker: LocalBroker, tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    """``POST .../tasks/{n}/restart`` on a worker that does not run the task is forwarded
    (to the leader, then to the task's worker); the connector's other tasks run on.  Also:
    active topics and a cluster-wide logger level seen from both workers."""
    bs = dbroker.bootstrap_servers
    group = f"connect-cluster-{uuid.uuid4().hex[:6]}"
    topic, name = input_topic(bs, 4, [f"r{i}" for i in range(20)], fast=True)
    for i in range(2):
        workers.append(
            WorkerProcess("distributed", worker_props(bs, group), tmp_path / f"w{i}.properties")
        )
    for w in workers:
        w.wait_ready()
    log = tmp_path / "starts.txt"
    config = {
        "connector.class": "tests.integration.sink_tasks.StartCountingSink",
        "topics": topic,
        "file": str(tmp_path / "out.txt"),
        "tasks.max": "4",
        "starts.file": str(log),
        "consumer.override.fetch.max.wait.ms": "100",
    }
    code, body = call("PUT", f"{workers[0].url}connectors/{name}/config", config)
    assert code == 201, body
    wait_for(
        lambda: (
            {s for s, _ in statuses(workers[0].url, name).values()} == {"RUNNING"}
            and len(statuses(workers[0].url, name)) == 4
        ),
        60,
        "four running tasks",
    )
    wait_for(lambda: len(lines(log)) == 4, 30, "four starts")
    owners = {t: wid for t, (_, wid) in statuses(workers[0].url, name).items()}
    by_id = {w.worker_id: w for w in workers}
    expected: Counter[int] = Counter({t: 1 for t in range(4)})
    for task, owner in sorted(owners.items()):
        other = next(w for w in workers if w.worker_id != owner)
        assert by_id[owner] is not other
        code, body = call("POST", f"{other.url}connectors/{name}/tasks/{task}/restart")
        assert (code, body) == (204, None)
        expected[task] += 1
        wait_for(
            lambda e=dict(expected): Counter(int(x.split()[1]) for x in lines(log)) == e,
            30,
            f"task {task} started again, alone",
        )
    topics = {name: {"topics": [topic]}}
    for w in workers:
        wait_for(
            lambda u=w.url: call("GET", f"{u}connectors/{name}/topics")[1] == topics, 30, "topics"
        )
    path = "admin/loggers/producer.sink.rest"
    assert call("PUT", f"{workers[0].url}{path}?scope=cluster", {"level": "WARN"}) == (204, None)
    for w in workers:
        wait_for(
            lambda u=w.url: (call("GET", u + path)[1] or {}).get("level") == "WARN",
            30,
            "cluster level",
        )
    assert call("DELETE", f"{workers[1].url}connectors/{name}") == (204, None)


@pytest.mark.parametrize(
    ("protocol", "second", "kept"),
    [("sessioned", "sessioned", 1), ("eager", "eager", 2), ("sessioned", "eager", 2)],
)
def test_a_joining_worker_leaves_the_others_tasks_running(
    dbroker: LocalBroker,
    tmp_path: Path,
    workers: list[WorkerProcess],
    protocol: str,
    second: str,
    kept: int,
) -> None:
    """KIP-415: when a second worker joins, the first gives up half of its tasks and the
    others run on (eager, or a group where one worker is eager: every task stops and starts
    again)."""
    bs = dbroker.bootstrap_servers
    group = f"connect-cluster-{uuid.uuid4().hex[:6]}"
    topic, name = input_topic(bs, 4, [f"j{i}" for i in range(8)], fast=True)
    props = {**worker_props(bs, group), "connect.protocol": protocol}
    workers.append(WorkerProcess("distributed", props, tmp_path / "w0.properties"))
    workers[0].wait_ready()
    log = tmp_path / "starts.txt"
    config = {
        "connector.class": "tests.integration.sink_tasks.StartCountingSink",
        "topics": topic,
        "file": str(tmp_path / "out.txt"),
        "tasks.max": "4",
        "starts.file": str(log),
        "consumer.override.fetch.max.wait.ms": "100",
    }
    assert call("PUT", f"{workers[0].url}connectors/{name}/config", config)[0] == 201
    wait_for(lambda: len(lines(log)) == 4, 60, "four starts")
    props = {**props, "connect.protocol": second}
    workers.append(WorkerProcess("distributed", props, tmp_path / "w1.properties"))
    workers[1].wait_ready()
    ids = {w.worker_id for w in workers}
    wait_for(
        lambda: (
            {wid for _, wid in statuses(workers[0].url, name).values()} == ids
            and {s for s, _ in statuses(workers[0].url, name).values()} == {"RUNNING"}
        ),
        60,
        "the tasks spread over both workers",
    )
    first = workers[0].worker_id
    stayed = [t for t, (_, wid) in statuses(workers[0].url, name).items() if wid == first]
    assert stayed

    def counts() -> Counter[int]:
        return Counter(int(x.split()[1]) for x in lines(log))

    moved = [t for t in range(4) if t not in stayed]
    wait_for(lambda: all(counts()[t] == 2 for t in moved), 30, "the moved tasks started")
    if kept == 2:
        wait_for(lambda: all(counts()[t] == 2 for t in stayed), 30, "every task restarted")
    else:
        time.sleep(3)  # what stayed never stopped
        assert all(counts()[t] == 1 for t in stayed), (counts(), stayed)
