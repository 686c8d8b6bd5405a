"""Connect's REST API on a standalone sink worker, driven by a stock HTTP client (urllib)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from coordinator.launcher import LocalBroker
from producer.sink.herder import StandaloneHerder
from producer.sink.rest import RestServer
from tests.integration.sink_helpers import BROKER_CONFIG, input_topic, lines, wait_for
from tests.integration.sink_rest_helpers import WorkerProcess, call, task_states

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def rbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    with LocalBroker(data_dir=tmp_path_factory.mktemp("sinkr") / "d", config=BROKER_CONFIG) as b:
        yield b


@pytest.fixture
def worker(rbroker: LocalBroker) -> Iterator[str]:
    props = {
        "bootstrap.servers": rbroker.bootstrap_servers,
        "consumer.group.protocol": "share",
        "listeners": "http://127.0.0.1:0",
    }
    rest = RestServer(props)
    herder = StandaloneHerder(props, rest.url.removeprefix("http://").rstrip("/"))
    rest.start(herder)
    yield rest.url
    rest.stop()
    herder.stop()


def file_sink(topic: str, out: Path, **extra: str) -> dict[str, str]:
    return {
        "connector.class": "producer.sink.FileSink",
        "topics": topic,
        "file": str(out),
        "tasks.max": "2",
        "consumer.override.fetch.max.wait.ms": "100",
        **extra,
    }


def test_root_and_plugins(worker: str) -> None:
    healthy = "Worker has completed startup and is ready to handle requests."
    assert call("GET", worker + "health") == (200, {"status": "healthy", "message": healthy})
    code, info = call("GET", worker)
    assert code == 200
    assert set(info) == {"version", "commit", "kafka_cluster_id"}
    assert info["kafka_cluster_id"]
    code, found = call("GET", worker + "connector-plugins")
    assert code == 200
    assert {"class": "producer.sink.FileSink", "type": "sink", "version": info["version"]} in found


def test_connector_lifecycle(rbroker: LocalBroker, worker: str, tmp_path: Path) -> None:
    bs = rbroker.bootstrap_servers
    values = [f"v{i}" for i in range(40)]
    topic, name = input_topic(bs, 2, values)
    out = tmp_path / "out.txt"
    config = file_sink(topic, out)

    code, created = call("POST", worker + "connectors", {"name": name, "config": config})
    assert code == 201
    assert created == {
        "name": name,
        "config": {**config, "name": name},
        "tasks": [{"connector": name, "task": 0}, {"connector": name, "task": 1}],
        "type": "sink",
    }
    code, again = call("POST", worker + "connectors", {"name": name, "config": config})
    assert (code, again) == (
        409,
        {"error_code": 409, "message": f"Connector {name} already exists"},
    )
    assert call("GET", worker + "connectors") == (200, [name])
    assert call("GET", worker + f"connectors/{name}/config") == (200, {**config, "name": name})
    wait_for(lambda: len(lines(out)) >= len(values), 30, "every record in the file")
    assert set(lines(out)) == set(values)
    # the share group's start offsets, in Connect's sink offsets shape
    code, offsets = call("GET", worker + f"connectors/{name}/offsets")
    assert code == 200
    for entry in offsets["offsets"]:
        assert set(entry["partition"]) == {"kafka_topic", "kafka_partition"}
        assert entry["partition"]["kafka_topic"] == topic
        assert entry["offset"]["kafka_offset"] >= 0

    code, status = call("GET", worker + f"connectors/{name}/status")
    assert code == 200
    assert status["connector"]["state"] == "RUNNING" and status["type"] == "sink"
    assert {s for s, _ in task_states(status).values()} == {"RUNNING"}
    code, task = call("GET", worker + f"connectors/{name}/tasks/1/status")
    assert (code, task["id"], task["state"]) == (200, 1, "RUNNING")
    code, body = call("GET", worker + f"connectors/{name}/tasks/7/status")
    assert (code, body["message"]) == (404, f"No status found for task {name}-7")
    assert call("POST", worker + f"connectors/{name}/tasks/0/restart") == (204, None)
    code, tasks = call("GET", worker + f"connectors/{name}/tasks")
    assert code == 200
    assert [t["id"] for t in tasks] == [{"connector": name, "task": t} for t in (0, 1)]
    assert tasks[0]["config"]["task.class"] == "producer.sink.FileSink"
    code, expanded = call("GET", worker + "connectors?expand=status&expand=info")
    assert code == 200 and set(expanded[name]) == {"status", "info"}

    assert call("PUT", worker + f"connectors/{name}/pause") == (202, None)
    code, status = call("GET", worker + f"connectors/{name}/status")
    assert status["connector"]["state"] == "PAUSED"
    assert {s for s, _ in task_states(status).values()} == {"PAUSED"}
    assert call("PUT", worker + f"connectors/{name}/resume") == (202, None)
    assert call("POST", worker + f"connectors/{name}/restart") == (204, None)
    code, restarted = call("POST", worker + f"connectors/{name}/restart?includeTasks=true")
    assert code == 202
    assert {s for s, _ in task_states(restarted).values()} == {"RESTARTING"}

    # PUT config: 200 when it exists (201 when it creates)
    code, info = call("PUT", worker + f"connectors/{name}/config", {**config, "tasks.max": "1"})
    assert code == 200 and info["tasks"] == [{"connector": name, "task": 0}]
    assert call("PUT", worker + f"connectors/{name}/stop") == (202, None)
    code, status = call("GET", worker + f"connectors/{name}/status")
    assert status["connector"]["state"] == "STOPPED" and status["tasks"] == []
    assert call("DELETE", worker + f"connectors/{name}") == (204, None)
    assert call("GET", worker + "connectors") == (200, [])


def test_errors_are_connects_json(worker: str, tmp_path: Path) -> None:
    missing = {"error_code": 404, "message": "Connector nope not found"}
    assert call("GET", worker + "connectors/nope") == (404, missing)
    assert call("GET", worker + "connectors/nope/config") == (404, missing)
    assert call("DELETE", worker + "connectors/nope") == (404, missing)
    for action in ("pause", "resume", "stop"):
        unknown = {"error_code": 404, "message": "Unknown connector nope"}
        assert call("PUT", worker + f"connectors/nope/{action}") == (404, unknown)
    code, body = call("POST", worker + "connectors/nope/restart?includeTasks=true")
    assert (code, body["message"]) == (404, "Unknown connector: nope")
    assert call("GET", worker + "connectors/nope/offsets") == (404, missing)
    code, body = call("GET", worker + "connectors/nope/status")
    assert (code, body["message"]) == (404, "No status found for connector nope")
    assert call("GET", worker + "nowhere")[0] == 404
    code, body = call("PUT", worker + "connectors/a/config", {"name": "b", "topics": "t"})
    assert code == 400
    assert body["message"] == (
        "Connector name configuration (b) doesn't match connector name in the URL (a)"
    )
    bad = {"name": "bad", "config": {"connector.class": "producer.sink.FileSink"}}
    code, body = call("POST", worker + "connectors", bad)
    assert code == 400 and body["error_code"] == 400
    assert "Must configure one of topics or topics.regex" in body["message"]
    code, body = call("PUT", worker + "connectors/a/config", {"topics": "t"})
    assert (code, body["message"]) == (400, "Connector config contains no connector type")
    code, body = call("PUT", worker + "connectors/a/config", {"connector.class": "no.Such"})
    assert code == 400
    assert body["message"].startswith(
        "Failed to find any class that implements Connector and which name matches no.Such, "
    )


def test_validate(worker: str, tmp_path: Path) -> None:
    url = worker + "connector-plugins/FileSink/config/validate"
    config = {"connector.class": "FileSink", "name": "v", "topics": "t"}
    code, result = call("PUT", url, {**config, "file": str(tmp_path / "f")})
    assert code == 200
    assert result["name"] == "producer.sink.FileSink" and result["error_count"] == 0
    assert {"definition", "value"} == set(result["configs"][0])
    bad = {"connector.class": "FileSink", "name": "v", "share.max.delivery.count": "five"}
    code, result = call("PUT", url, bad)
    assert result["error_count"] >= 1
    errors = {c["value"]["name"]: c["value"]["errors"] for c in result["configs"]}
    assert errors["topics"] or errors.get("share.max.delivery.count")
    code, body = call("PUT", url, {"connector.class": "Other"})
    assert (code, body["message"]) == (
        400,
        "Included connector type Other does not match request type FileSink",
    )


def test_sharetxn_sink_standalone(rbroker: LocalBroker, tmp_path: Path) -> None:
    """``sharetxn sink standalone worker.properties connector.properties``: a process."""
    bs = rbroker.bootstrap_servers
    values = [f"v{i}" for i in range(20)]
    topic, name = input_topic(bs, 1, values)
    out = tmp_path / "out.txt"
    props = {
        "bootstrap.servers": bs,
        "consumer.group.protocol": "share",
        "listeners": "http://127.0.0.1:0",
    }
    connector = {"name": name, **file_sink(topic, out)}
    worker = WorkerProcess("standalone", props, tmp_path / "worker.properties", connector)
    try:
        worker.wait_ready()
        assert call("GET", worker.url + "connectors") == (200, [name])
        wait_for(lambda: set(lines(out)) >= set(values), 30, "every record")
        assert worker.terminate() == 0
    finally:
        worker.close()
