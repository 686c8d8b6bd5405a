"""``sharetxn sink run`` as real worker processes: scale-out, kill -9, SIGTERM, exactly-once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from chaos.cli.main import main
from coordinator.launcher import LocalBroker
from producer.sink import SinkWorker
from tests.integration.sink_helpers import (
    BROKER_CONFIG,
    eos_sink_config,
    eos_topics,
    fast_group,
    input_topic,
    lines,
    new_names,
    produce,
    read_topic,
    sink_config,
    wait_for,
)

pytestmark = pytest.mark.integration

TASKS = "tests.integration.sink_tasks"
#: A 15 s acquisition lock instead of LOCK_TIMEOUT_MS: no lock runs out while a worker is slow.
LONG_LOCK = {"share.acquisition.lock.timeout.ms": "15000"}


def pausing_sink(
    bs: str,
    name: str,
    topic: str,
    out: Path,
    marker: str,
    max_poll_records: str,
    settings: dict[str, str] | None = None,
) -> dict[str, str]:
    """A ``PausingFileSink`` connector writing to ``out`` (``marker``: "" or its put() file)."""
    return sink_config(
        bs,
        name,
        topic,
        **{
            "connector.class": f"{TASKS}.PausingFileSink",
            "file": str(out),
            "marker": marker,
            **(settings or {}),
            "consumer.override.max.poll.records": max_poll_records,
        },
    )


class Worker:
    """A ``sharetxn sink run`` child process; its output is collected by a thread."""

    def __init__(self, config: dict[str, str], path: Path, *, child_marker: str | None = None):
        path.write_text("".join(f"{k}={v}\n" for k, v in config.items()), encoding="utf-8")
        if child_marker is None:
            cmd = [sys.executable, "-m", "chaos.cli", "sink", "run", str(path)]
        else:
            cmd = [sys.executable, "-m", "tests.integration.sink_child", child_marker, str(path)]
        cmd += ["--status-interval", "0.5"]
        self.process = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.output: list[str] = []
        self.ready = threading.Event()
        self._pump = threading.Thread(target=self._read, daemon=True)
        self._pump.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line.rstrip("\n"))
            if line.startswith("sharetxn sink "):
                self.ready.set()
        self.ready.set()

    def wait_ready(self) -> None:
        assert self.ready.wait(30), self.output
        assert self.process.poll() is None, self.output

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(10)

    def terminate(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(60)
        self._pump.join(5)
        return code

    def close(self) -> None:
        if self.process.poll() is None:
            self.kill()
        self._pump.join(5)
        if self.process.stdout is not None:
            self.process.stdout.close()


@pytest.fixture(scope="module")
def pbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    with LocalBroker(data_dir=tmp_path_factory.mktemp("sinkp") / "d", config=BROKER_CONFIG) as b:
        yield b


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for w in started:
        w.close()


def test_two_workers_share_three_partitions_and_cover_the_topic(
    pbroker: LocalBroker, tmp_path: Path, workers: list[Worker]
) -> None:
    bs = pbroker.bootstrap_servers
    values = [f"v{i}" for i in range(300)]
    topic, name = input_topic(bs, 3, values, batch=5, fast=True)
    outs = [tmp_path / "a.txt", tmp_path / "b.txt"]
    for i, out in enumerate(outs):
        config = pausing_sink(bs, name, topic, out, "", "10", {"put.sleep.ms": "50"})
        workers.append(Worker(config, tmp_path / f"w{i}.properties"))
    for w in workers:
        w.wait_ready()
    wait_for(lambda: sum(len(lines(o)) for o in outs) >= 300, 60, "300 lines")
    assert all(w.terminate() == 0 for w in workers)
    written = [lines(o) for o in outs]
    assert set(written[0]) | set(written[1]) == set(values)
    assert written[0] and written[1], "both workers took records"
    assert any("stopped:" in line for line in workers[0].output)


def test_a_worker_killed_mid_batch_loses_nothing(
    pbroker: LocalBroker, tmp_path: Path, workers: list[Worker]
) -> None:
    bs = pbroker.bootstrap_servers
    values = [f"v{i}" for i in range(100)]
    topic, name = input_topic(bs, 3, values, fast=True)
    marker = tmp_path / "in-put"
    first = tmp_path / "first.txt"
    config = pausing_sink(bs, name, topic, first, str(marker), "40")
    workers.append(Worker(config, tmp_path / "a.properties"))
    workers[0].wait_ready()
    wait_for(marker.exists, 30, "the first put()")
    workers[0].kill()  # kill -9 inside put(): its batch is written but never acknowledged
    held = lines(first)
    assert held
    second = tmp_path / "second.txt"
    config = {**config, "connector.class": "producer.sink.FileSink", "file": str(second)}
    with SinkWorker(config) as worker:
        wait_for(lambda: len(lines(second)) >= 100, 40, "every record, the held ones included")
        worker.wait(1)
    # The held batch came back (its session died with the process, or its locks ran out):
    # the second worker wrote every record, the killed worker's batch included.
    assert Counter(lines(second)) == Counter(values)
    assert set(held) <= set(lines(second))


def test_sigterm_finishes_the_batch_acknowledges_and_exits_0(
    pbroker: LocalBroker, tmp_path: Path, workers: list[Worker]
) -> None:
    bs = pbroker.bootstrap_servers
    values = [f"v{i}" for i in range(60)]
    topic, name = input_topic(bs, 1, values)
    marker = tmp_path / "in-put"
    out = tmp_path / "out.txt"
    settings = {"pause.s": "1", **LONG_LOCK}
    config = pausing_sink(bs, name, topic, out, str(marker), "20", settings)
    workers.append(Worker(config, tmp_path / "a.properties"))
    workers[0].wait_ready()
    wait_for(marker.exists, 30, "the first put()")
    assert workers[0].terminate() == 0  # SIGTERM during put()
    done = lines(out)
    summary = next(line for line in workers[0].output if "stopped:" in line)
    assert f"{len(done)} acknowledged" in summary, summary
    # The rest is still there, first deliveries only: nothing was held back unacknowledged.
    rest = tmp_path / "rest.txt"
    config = {**config, "connector.class": "producer.sink.FileSink", "file": str(rest)}
    with SinkWorker(config) as worker:
        wait_for(lambda: len(lines(rest)) >= len(values) - len(done), 20, "the other records")
        worker.wait(0.5)
    assert Counter(done + lines(rest)) == Counter(values)
    assert worker.stats.snapshot().redelivered == 0


def test_exactly_once_survives_kill_9_between_put_and_commit(
    pbroker: LocalBroker, tmp_path: Path, workers: list[Worker]
) -> None:
    bs = pbroker.bootstrap_servers
    topic, name, target = eos_topics(bs, 3, 3)
    fast_group(bs, f"connect-{name}")
    values = [f"v{i}" for i in range(200)]
    produce(bs, topic, values)
    marker = tmp_path / "before-commit"
    config = eos_sink_config(
        bs,
        name,
        topic,
        target,
        **{
            "producer.override.transaction.timeout.ms": "3000",
            "consumer.override.max.poll.records": "50",
        },
    )
    workers.append(Worker(config, tmp_path / "a.properties", child_marker=str(marker)))
    workers[0].wait_ready()
    wait_for(marker.exists, 30, "a transaction about to commit")
    workers[0].kill()  # outputs produced, share acks pending, no commit
    workers.append(Worker(config, tmp_path / "b.properties"))
    workers[1].wait_ready()
    got = read_topic(bs, target, 3, expect_at_least=200, timeout_s=60)
    assert workers[1].terminate() == 0
    assert Counter(m.value() for m in got) == Counter(v.encode() for v in values)


def test_elastic_scale_up_from_one_to_three_workers(
    pbroker: LocalBroker, tmp_path: Path, workers: list[Worker]
) -> None:
    bs = pbroker.bootstrap_servers
    values = [f"v{i}" for i in range(400)]
    topic, name = input_topic(bs, 2, values, batch=5)
    outs = [tmp_path / f"w{i}.txt" for i in range(3)]

    def config(i: int) -> dict[str, str]:
        # Slow puts: the first worker alone needs ~15 s for the rest, so the others join well
        # within that, even on a loaded machine, and each gets records of its own.
        settings = {"put.sleep.ms": "400", **LONG_LOCK}
        return pausing_sink(bs, name, topic, outs[i], "", "10", settings)

    workers.append(Worker(config(0), tmp_path / "w0.properties"))
    workers[0].wait_ready()
    wait_for(lambda: len(lines(outs[0])) >= 20, 30, "the first worker's progress")
    # Two more workers join, one after the other: more workers than partitions, no
    # rebalance.  One at a time, as Kafka 4.4 computes a share group's assignment at most
    # once per group.share.assignment.interval.ms: a member joining within it of the last
    # one is assigned at its next heartbeat (5 s later).
    for i in (1, 2):
        workers.append(Worker(config(i), tmp_path / f"w{i}.properties"))
        workers[i].wait_ready()
        wait_for(lambda i=i: len(lines(outs[i])) >= 1, 30, f"worker {i}'s first records")
    wait_for(lambda: sum(len(lines(o)) for o in outs) >= 400, 90, "400 lines")
    assert all(w.terminate() == 0 for w in workers)
    written = [lines(o) for o in outs]
    assert Counter(line for w in written for line in w) == Counter(values)
    assert all(written), [len(w) for w in written]


def test_a_bad_config_file_exits_64_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.properties"
    path.write_text(
        "bootstrap.servers=127.0.0.1:1\nconsumer.group.protocol=share\nname=n\n"
        "connector.class=producer.sink.FileSink\ntopics=t\nshare.delivery.semantics=maybe\n",
        encoding="utf-8",
    )
    assert main(["sink", "run", str(path)]) == 64
    assert "share.delivery.semantics" in capsys.readouterr().err
    path.write_text("name=n\nconnector.class=no.such.Task\n", encoding="utf-8")
    assert main(["sink", "run", str(path)]) == 64
    assert "bootstrap.servers" in capsys.readouterr().err
    assert main(["sink", "run", str(tmp_path / "missing.properties")]) == 64


def test_a_task_failing_in_start_exits_1(
    pbroker: LocalBroker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topic, name = new_names()
    path = tmp_path / "c.properties"
    config = sink_config(
        pbroker.bootstrap_servers, name, topic, **{"connector.class": f"{TASKS}.FailingStart"}
    )
    path.write_text("".join(f"{k}={v}\n" for k, v in config.items()), encoding="utf-8")
    assert main(["sink", "run", str(path)]) == 1
    assert "cannot reach the warehouse" in capsys.readouterr().err
