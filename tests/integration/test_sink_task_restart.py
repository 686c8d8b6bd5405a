"""One task restarted alone, and KIP-745's ``restart?includeTasks=&onlyFailed=``, on a
standalone sink worker."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from coordinator.launcher import LocalBroker
from producer.sink.herder import StandaloneHerder
from producer.sink.rest import RestServer
from tests.integration.sink_helpers import BROKER_CONFIG, input_topic, lines, wait_for
from tests.integration.sink_rest_helpers import call, task_states

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def tbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    with LocalBroker(data_dir=tmp_path_factory.mktemp("sinkt") / "d", config=BROKER_CONFIG) as b:
        yield b


def starts(path: Path) -> Counter[int]:
    return Counter(int(line.split()[1]) for line in lines(path))


def test_one_task_restarts_alone(tbroker: LocalBroker, tmp_path: Path) -> None:
    props = {
        "bootstrap.servers": tbroker.bootstrap_servers,
        "consumer.group.protocol": "share",
        "listeners": "http://127.0.0.1:0",
    }
    rest = RestServer(props)
    herder = StandaloneHerder(props, rest.url.removeprefix("http://").rstrip("/"))
    rest.start(herder)
    url = rest.url
    try:
        topic, name = input_topic(tbroker.bootstrap_servers, 3, [f"v{i}" for i in range(9)])
        log = tmp_path / "starts.txt"
        config = {
            "connector.class": "tests.integration.sink_tasks.StartCountingSink",
            "topics": topic,
            "file": str(tmp_path / "out.txt"),
            "tasks.max": "3",
            "starts.file": str(log),
            "fail.tasks": "1",
        }
        assert call("PUT", url + f"connectors/{name}/config", config)[0] == 201
        status_url = url + f"connectors/{name}/status"

        def states() -> dict[int, str]:
            return {t: s for t, (s, _) in task_states(call("GET", status_url)[1]).items()}

        wanted = {0: "RUNNING", 1: "FAILED", 2: "RUNNING"}
        wait_for(lambda: states() == wanted, 30, "tasks 0 and 2 running, 1 failed")
        assert starts(log) == {0: 1, 1: 1, 2: 1}

        # one task: the others run on
        assert call("POST", url + f"connectors/{name}/tasks/0/restart") == (204, None)
        wait_for(lambda: starts(log)[0] == 2 and states() == wanted, 30, "task 0 again")
        assert starts(log) == {0: 2, 1: 1, 2: 1}

        # KIP-745: only the failed tasks; the connector did not fail, so it does not restart
        code, plan = call(
            "POST", url + f"connectors/{name}/restart?includeTasks=true&onlyFailed=true"
        )
        assert code == 202
        assert plan["connector"]["state"] == "RUNNING"
        assert {t: s for t, (s, _) in task_states(plan).items()} == {
            0: "RUNNING",
            1: "RESTARTING",
            2: "RUNNING",
        }
        wait_for(lambda: starts(log)[1] == 2 and states() == wanted, 30, "task 1 again")
        assert starts(log) == {0: 2, 1: 2, 2: 1}

        # onlyFailed without includeTasks: nothing failed at the connector's level
        code, plan = call("POST", url + f"connectors/{name}/restart?onlyFailed=true")
        assert code == 202 and plan["connector"]["state"] == "RUNNING"
        assert "RESTARTING" not in {t["state"] for t in plan["tasks"]}
        # every task and the connector
        code, plan = call("POST", url + f"connectors/{name}/restart?includeTasks=true")
        assert code == 202 and plan["connector"]["state"] == "RESTARTING"
        assert {t["state"] for t in plan["tasks"]} == {"RESTARTING"}
        wait_for(lambda: starts(log) == {0: 3, 1: 3, 2: 2}, 30, "every task again")
        code, body = call("POST", url + f"connectors/{name}/tasks/3/restart")
        assert (code, body["message"]) == (404, f"Unknown task: {name}-3")
        assert call("DELETE", url + f"connectors/{name}") == (204, None)
    finally:
        rest.stop()
        herder.stop()
