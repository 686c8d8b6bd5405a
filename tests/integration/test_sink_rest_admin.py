"""Connect's newer REST endpoints on a standalone sink worker: ``PATCH .../config``,
active topics, altering and resetting offsets (KIP-875, on the share group),
``/admin/loggers`` and an ``https://`` listener."""

from __future__ import annotations

import logging
import ssl
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coordinator.launcher import LocalBroker
from producer.admin import Admin
from producer.sink.herder import StandaloneHerder
from producer.sink.rest import RestServer
from tests.integration.sink_helpers import BROKER_CONFIG, input_topic, lines, wait_for
from tests.integration.sink_rest_helpers import call
from tests.integration.test_sink_rest import file_sink
from tests.security_certs import STORE_PASSWORD, make_certs
from txn.ids import TopicPartition

pytestmark = pytest.mark.integration

ALTERED = (
    "The Connect framework-managed offsets for this connector have been altered successfully. "
    "However, if this connector manages offsets externally, they will need to be manually "
    "altered in the system that the connector uses."
)


@pytest.fixture(scope="module")
def abroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    with LocalBroker(data_dir=tmp_path_factory.mktemp("sinka") / "d", config=BROKER_CONFIG) as b:
        yield b


def start_worker(props: dict[str, str]) -> tuple[RestServer, StandaloneHerder]:
    rest = RestServer(props)
    herder = StandaloneHerder(props, rest.url.split("://", 1)[1].rstrip("/"))
    rest.start(herder)
    return rest, herder


@pytest.fixture
def worker(abroker: LocalBroker) -> Iterator[str]:
    props = {
        "bootstrap.servers": abroker.bootstrap_servers,
        "consumer.group.protocol": "share",
        "listeners": "http://127.0.0.1:0",
    }
    rest, herder = start_worker(props)
    yield rest.url
    rest.stop()
    herder.stop()


def start_offsets(url: str) -> dict[int, int]:
    code, body = call("GET", url)
    assert code == 200, body
    return {o["partition"]["kafka_partition"]: o["offset"]["kafka_offset"] for o in body["offsets"]}


def test_patch_config_and_topics(abroker: LocalBroker, worker: str, tmp_path: Path) -> None:
    values = [f"p{i}" for i in range(10)]
    topic, name = input_topic(abroker.bootstrap_servers, 1, values)
    out = tmp_path / "out.txt"
    config = {**file_sink(topic, out), "name": name}
    assert call("PUT", worker + f"connectors/{name}/config", config)[0] == 201

    patch = {"tasks.max": "1", "consumer.override.fetch.max.wait.ms": None}
    code, info = call("PATCH", worker + f"connectors/{name}/config", patch)
    assert code == 200
    expected = {k: v for k, v in config.items() if k != "consumer.override.fetch.max.wait.ms"}
    assert info == {
        "name": name,
        "config": {**expected, "tasks.max": "1"},
        "tasks": [{"connector": name, "task": 0}],
        "type": "sink",
    }
    missing = {"error_code": 404, "message": "Connector nope not found"}
    assert call("PATCH", worker + "connectors/nope/config", {"a": "b"}) == (404, missing)

    wait_for(lambda: set(lines(out)) >= set(values), 30, "every record")
    topics_url = worker + f"connectors/{name}/topics"
    wait_for(lambda: call("GET", topics_url)[1] == {name: {"topics": [topic]}}, 10, "topics")
    assert call("PUT", topics_url + "/reset") == (202, None)
    assert call("GET", topics_url) == (200, {name: {"topics": []}})
    assert call("GET", worker + "connectors/nope/topics") == (200, {"nope": {"topics": []}})
    assert call("PUT", worker + "connectors/nope/topics/reset") == (202, None)
    assert call("DELETE", worker + f"connectors/{name}") == (204, None)


def test_alter_and_reset_offsets(abroker: LocalBroker, worker: str, tmp_path: Path) -> None:
    bs = abroker.bootstrap_servers
    values = [f"o{i}" for i in range(20)]
    topic, name = input_topic(bs, 2, values)
    out = tmp_path / "out.txt"
    config = {**file_sink(topic, out), "name": name}
    assert call("PUT", worker + f"connectors/{name}/config", config)[0] == 201
    wait_for(lambda: len(lines(out)) >= len(values), 30, "every record")
    offsets_url = worker + f"connectors/{name}/offsets"
    with Admin({"bootstrap.servers": bs}) as admin:
        end0 = admin.list_offsets(TopicPartition(topic, 0), -1)

    one = {"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {"kafka_offset": 0}}
    running = (
        "Connectors must be in the STOPPED state before their offsets can be modified. This can "
        f"be done for the specified connector by issuing a 'PUT' request to the "
        f"'/connectors/{name}/stop' endpoint"
    )
    assert call("PATCH", offsets_url, {"offsets": [one]}) == (
        400,
        {"error_code": 400, "message": running},
    )
    assert call("DELETE", offsets_url)[0] == 400
    assert call("PATCH", offsets_url, {"offsets": []}) == (
        400,
        {
            "error_code": 400,
            "message": "Partitions / offsets need to be provided for an alter offsets request",
        },
    )
    missing = {"error_code": 404, "message": "Connector nope not found"}
    assert call("PATCH", worker + "connectors/nope/offsets", {"offsets": [one]}) == (404, missing)
    assert call("DELETE", worker + "connectors/nope/offsets") == (404, missing)

    assert call("PUT", worker + f"connectors/{name}/stop") == (202, None)
    ends = start_offsets(offsets_url)
    assert call("PATCH", offsets_url, {"offsets": [one]}) == (200, {"message": ALTERED})
    assert start_offsets(offsets_url) == {**ends, 0: 0}
    partial = {"partition": {"kafka_topic": topic, "kafka_partition": 1}, "offset": None}
    code, body = call("PATCH", offsets_url, {"offsets": [partial]})
    assert code == 400 and "every partition" in body["message"]

    # resumed, the share group delivers partition 0 again from offset 0
    before = len(lines(out))
    assert call("PUT", worker + f"connectors/{name}/resume") == (202, None)
    wait_for(lambda: len(lines(out)) >= before + end0, 30, "partition 0 again")

    assert call("PUT", worker + f"connectors/{name}/stop") == (202, None)
    reset = ALTERED.replace("altered", "reset")
    assert call("DELETE", offsets_url) == (200, {"message": reset})
    assert start_offsets(offsets_url) == {}
    assert call("DELETE", worker + f"connectors/{name}") == (204, None)


def test_admin_loggers(worker: str) -> None:
    logger = logging.getLogger("producer.sink")
    saved = {n: logging.getLogger(n).level for n in ("producer.sink", "producer.sink.rest")}
    try:
        code, found = call("GET", worker + "admin/loggers")
        assert code == 200 and "root" not in found
        code, changed = call("PUT", worker + "admin/loggers/producer.sink", {"level": "DEBUG"})
        assert code == 200 and "producer.sink" in changed and "producer.sink.rest" in changed
        assert changed == sorted(changed)
        assert logger.level == logging.DEBUG
        found = call("GET", worker + "admin/loggers")[1]
        assert found["producer.sink"] == call("GET", worker + "admin/loggers/producer.sink")[1]
        code, level = call("GET", worker + "admin/loggers/producer.sink")
        assert code == 200 and level["level"] == "DEBUG" and level["last_modified"] > 0
        assert (
            call("PUT", worker + "admin/loggers/producer.sink?scope=cluster", {"level": "WARN"})[0]
            == 204
        )
        assert logger.level == logging.WARNING
        assert call("PUT", worker + "admin/loggers/producer.sink", {}) == (
            400,
            {
                "error_code": 400,
                "message": "Desired 'level' parameter was not specified in request.",
            },
        )
        assert call("PUT", worker + "admin/loggers/producer.sink", {"level": "LOUD"}) == (
            404,
            {"error_code": 404, "message": "invalid log level 'LOUD'."},
        )
        assert call("GET", worker + "admin/loggers/never.made.here") == (
            404,
            {"error_code": 404, "message": "Logger never.made.here not found."},
        )
    finally:
        for name, value in saved.items():
            logging.getLogger(name).setLevel(value)


@pytest.mark.parametrize("store", ["PEM", "PKCS12"])
def test_https_listener(abroker: LocalBroker, tmp_path: Path, store: str) -> None:
    certs = make_certs(tmp_path)
    props: dict[str, Any] = {
        "bootstrap.servers": abroker.bootstrap_servers,
        "consumer.group.protocol": "share",
        "listeners": "https://127.0.0.1:0",
        "rest.advertised.host.name": "localhost",
        "listeners.https.ssl.keystore.type": store,
    }
    if store == "PEM":
        props["listeners.https.ssl.keystore.location"] = str(certs.server_keystore)
    else:
        props["listeners.https.ssl.keystore.location"] = str(certs.server_p12)
        props["listeners.https.ssl.keystore.password"] = STORE_PASSWORD
    rest, herder = start_worker(props)
    try:
        assert rest.url.startswith("https://localhost:")
        context = ssl.create_default_context(cafile=str(certs.ca))
        with urllib.request.urlopen(rest.url + "connectors", context=context, timeout=30) as r:
            assert (r.status, r.read()) == (200, b"[]")
        untrusted = ssl.create_default_context(cafile=str(certs.other_ca))
        with pytest.raises(OSError, match="CERTIFICATE_VERIFY_FAILED"):
            urllib.request.urlopen(rest.url + "connectors", context=untrusted, timeout=30)
    finally:
        rest.stop()
        herder.stop()


def test_https_listener_needs_a_key_store(abroker: LocalBroker) -> None:
    props = {"bootstrap.servers": abroker.bootstrap_servers, "listeners": "https://127.0.0.1:0"}
    with pytest.raises(ValueError, match="JKS stores are not supported"):
        RestServer(props)
