"""The sink worker's REST API beside Apache Kafka 4.4's own ``connect-distributed``.

Both run in distributed mode on the reference Kafka broker (so the worker's "connect" group,
JoinGroup/SyncGroup/Heartbeat, runs against Apache Kafka's group coordinator), and the
same requests get the same status and JSON body from both.  Kafka's jars hold no connector
plugin (connect-file is not among them), so connectors themselves are compared through
their errors; the sink worker then runs a FileSink connector on Apache Kafka.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from producer.admin import Admin, TopicSpec
from producer.sink.distributed import DistributedHerder
from producer.sink.rest import RestServer
from tests.integration.sink_helpers import lines, produce, wait_for
from tests.integration.sink_rest_helpers import call, task_states
from tests.reference.kafka import ReferenceKafka, classpath, ensure_jars, free_port

pytestmark = [pytest.mark.reference]

CONNECT_MAIN = "org.apache.kafka.connect.cli.ConnectDistributed"

#: Requests whose status and body must match exactly.
SAME: list[tuple[str, str, Any]] = [
    ("GET", "connectors", None),
    ("GET", "connectors/", None),
    ("GET", "connectors?expand=status", None),
    ("GET", "connectors/nope", None),
    ("GET", "connectors/nope/config", None),
    ("GET", "connectors/nope/status", None),
    ("GET", "connectors/nope/tasks", None),
    ("GET", "connectors/nope/offsets", None),
    ("DELETE", "connectors/nope", None),
    ("PUT", "connectors/nope/pause", None),
    ("PUT", "connectors/nope/resume", None),
    ("PUT", "connectors/nope/stop", None),
    ("POST", "connectors/nope/restart", None),
    ("POST", "connectors/nope/restart?includeTasks=true&onlyFailed=true", None),
    ("PUT", "connectors/a/config", {"name": "b", "topics": "t"}),
    ("PUT", "connectors/a/config", {"topics": "t"}),
    ("PUT", "connector-plugins/Foo/config/validate", {"connector.class": "Bar"}),
    ("GET", "health", None),
    ("GET", "connectors/a/tasks/0/status", None),
    ("GET", "connectors/a/tasks/x/status", None),
    ("POST", "connectors/a/tasks/0/restart", None),
    ("GET", "nowhere", None),
    ("DELETE", "connectors", None),
    ("PATCH", "connectors/nope/config", {"tasks.max": "2", "topics": None}),
    ("GET", "connectors/nope/tasks-config", None),
    ("GET", "connectors/nope/topics", None),
    ("PUT", "connectors/nope/topics/reset", None),
    ("GET", "connectors/nope/topics/reset", None),
    ("PATCH", "connectors/nope/offsets", {"offsets": []}),
    ("PATCH", "connectors/nope/offsets", {"offsets": [{"partition": None, "offset": None}]}),
    ("DELETE", "connectors/nope/offsets", None),
    ("GET", "admin/loggers/no.such.logger.here", None),
    ("PUT", "admin/loggers/org.example", {}),
    ("PUT", "admin/loggers/org.example", {"level": "LOUD"}),
    ("GET", "admin", None),
]


def distributed_props(bootstrap: str, group: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "config.storage.topic": f"{group}-configs",
        "offset.storage.topic": f"{group}-offsets",
        "status.storage.topic": f"{group}-status",
        "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
    }


@pytest.fixture(scope="module")
def connect(
    reference_kafka: ReferenceKafka, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """Apache Kafka's connect-distributed, its REST URL."""
    jars = ensure_jars()
    if not list(jars.glob("connect-runtime-*.jar")):
        pytest.skip("the reference Kafka jars hold no connect-runtime")
    directory = tmp_path_factory.mktemp("connect")
    port = free_port()
    props = {
        **distributed_props(reference_kafka.bootstrap_servers, f"ref-{uuid.uuid4().hex[:6]}"),
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "listeners": f"http://127.0.0.1:{port}",
        "plugin.discovery": "only_scan",
    }
    path = directory / "connect-distributed.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()), encoding="utf-8")
    with (directory / "connect.log").open("w") as out:
        cmd = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-cp", classpath(), CONNECT_MAIN, str(path)]
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if call("GET", url + "connectors", timeout_s=2)[0] == 200:
                    break
            except (OSError, ValueError):  # not listening yet, or not answering JSON yet
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                log = (directory / "connect.log").read_text()[-3000:]
                pytest.fail(f"connect-distributed did not start:\n{log}", pytrace=False)
            time.sleep(1)
        yield url
    finally:
        process.terminate()
        process.wait(60)


@pytest.fixture(scope="module")
def ours(reference_kafka: ReferenceKafka) -> Iterator[str]:
    """The sink worker in distributed mode on Apache Kafka, its REST URL."""
    props = {
        **distributed_props(reference_kafka.bootstrap_servers, f"ours-{uuid.uuid4().hex[:6]}"),
        "listeners": "http://127.0.0.1:0",
        "consumer.group.protocol": "share",
        "session.timeout.ms": "10000",
        "heartbeat.interval.ms": "1000",
    }
    rest = RestServer(props)
    herder = DistributedHerder(props, rest.url)
    herder.start()
    rest.start(herder)
    assert herder.wait_until_joined(120), "joined its group on Apache Kafka"
    yield rest.url
    rest.stop()
    herder.stop()


def test_root_names_the_same_cluster(connect: str, ours: str) -> None:
    theirs, mine = call("GET", connect), call("GET", ours)
    assert theirs[0] == mine[0] == 200
    assert set(theirs[1]) == set(mine[1]) == {"version", "commit", "kafka_cluster_id"}
    assert theirs[1]["kafka_cluster_id"] == mine[1]["kafka_cluster_id"]


@pytest.mark.parametrize(("method", "path", "body"), SAME)
def test_same_answer(connect: str, ours: str, method: str, path: str, body: Any) -> None:
    assert call(method, ours + path, body) == call(method, connect + path, body)


def test_unknown_connector_class(connect: str, ours: str) -> None:
    config = {"connector.class": "no.such.Class", "topics": "t"}
    theirs = call("POST", connect + "connectors", {"name": "x", "config": config})
    mine = call("POST", ours + "connectors", {"name": "x", "config": config})
    prefix = "Failed to find any class that implements Connector and which name matches"
    assert theirs[0] == mine[0] == 400
    assert theirs[1]["message"].startswith(f"{prefix} no.such.Class, available connectors are:")
    assert mine[1]["message"].startswith(f"{prefix} no.such.Class, available connectors are:")


def test_a_file_sink_runs_on_apache_kafka(
    reference_kafka: ReferenceKafka, ours: str, tmp_path: Path
) -> None:
    bs = reference_kafka.bootstrap_servers
    topic = f"sink-in-{uuid.uuid4().hex[:6]}"
    with Admin(bs) as admin:
        admin.create_topics([TopicSpec(topic, 2, 1)])
    values = [f"v{i}" for i in range(50)]
    produce(bs, topic, values)
    out = tmp_path / "out.txt"
    config = {
        "connector.class": "producer.sink.FileSink",
        "topics": topic,
        "file": str(out),
        "tasks.max": "2",
        "consumer.override.fetch.max.wait.ms": "100",
    }
    code, info = call("PUT", f"{ours}connectors/file-{topic}/config", config)
    assert code == 201, info
    wait_for(lambda: set(lines(out)) >= set(values), 90, "every record")
    code, status = call("GET", f"{ours}connectors/file-{topic}/status")
    assert {s for s, _ in task_states(status).values()} == {"RUNNING"}
    assert call("DELETE", f"{ours}connectors/file-{topic}") == (204, None)


def test_set_and_get_a_logger(connect: str, ours: str) -> None:
    path = "admin/loggers/org.example.sinkref"
    theirs = call("PUT", connect + path, {"level": "DEBUG"})
    mine = call("PUT", ours + path, {"level": "DEBUG"})
    assert theirs == mine == (200, ["org.example.sinkref"])
    theirs, mine = call("GET", connect + path), call("GET", ours + path)
    assert theirs[0] == mine[0] == 200
    assert set(theirs[1]) == set(mine[1]) == {"level", "last_modified"}
    assert theirs[1]["level"] == mine[1]["level"] == "DEBUG"
    assert call("PUT", connect + path + "?scope=cluster", {"level": "INFO"}) == (204, None)
    assert call("PUT", ours + path + "?scope=cluster", {"level": "INFO"}) == (204, None)
    for url in (connect, ours):
        wait_for(lambda u=url: call("GET", u + path)[1]["level"] == "INFO", 30, "cluster level")
    theirs, mine = call("GET", connect + "admin/loggers"), call("GET", ours + "admin/loggers")
    assert theirs[0] == mine[0] == 200
    ref, own = theirs[1]["org.example.sinkref"], mine[1]["org.example.sinkref"]
    assert set(ref) == set(own) == {"level", "last_modified"}
    assert ref["level"] == own["level"] == "INFO"
