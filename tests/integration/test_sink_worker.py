"""The KIP-1302 sink worker in this process against a real broker process."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from coordinator.launcher import LocalBroker
from producer.sink import SinkConfigError, SinkWorker, SinkWorkerError
from producer.sink.dlq import HEADER_PREFIX
from tests.integration.sink_helpers import (
    BROKER_CONFIG,
    create_topics,
    eos_sink_config,
    eos_topics,
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


@pytest.fixture(scope="module")
def sbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    with LocalBroker(data_dir=tmp_path_factory.mktemp("sink") / "d", config=BROKER_CONFIG) as b:
        yield b


def test_file_sink_writes_and_accepts_every_record(sbroker: LocalBroker, tmp_path: Path) -> None:
    bs = sbroker.bootstrap_servers
    topic, name = input_topic(bs, 3, [f"v{i}" for i in range(90)])
    out = tmp_path / "out.txt"
    config = sink_config(
        bs, name, topic, **{"connector.class": "producer.sink.FileSink", "file": str(out)}
    )
    config["tasks.max"] = "2"
    with SinkWorker(config) as worker:
        wait_for(lambda: worker.stats.snapshot().acknowledged >= 90, 20, "90 acknowledgements")
    snap = worker.stats.snapshot()
    assert worker.failure is None
    assert (snap.acquired, snap.acknowledged, snap.released, snap.rejected) == (90, 90, 0, 0)
    assert sorted(lines(out)) == sorted(f"v{i}" for i in range(90))
    # Nothing comes back: a second worker on the group finds no records.
    with SinkWorker(config) as again:
        wait_for(lambda: not again.running or True, 1, "start")
        again.wait(2)
    assert again.stats.snapshot().acquired == 0


def test_retriable_failures_are_released_and_redelivered(
    sbroker: LocalBroker, tmp_path: Path
) -> None:
    bs = sbroker.bootstrap_servers
    values = [f"flaky{i}" if i % 4 == 0 else f"ok{i}" for i in range(20)]
    topic, name = input_topic(bs, 1, values)
    out = tmp_path / "out.txt"
    config = sink_config(
        bs,
        name,
        topic,
        **{"connector.class": f"{TASKS}.DeliveryLogSink", "file": str(out)},
    )
    with SinkWorker(config) as worker:
        wait_for(lambda: worker.stats.snapshot().acknowledged >= 20, 20, "20 acknowledgements")
    snap = worker.stats.snapshot()
    assert snap.released == 5
    assert snap.rejected == 0
    assert snap.redelivered == 5
    written = dict(line.split(" ") for line in lines(out))
    # The flaky records came back with delivery count 2; one failing record did not drag
    # its batch with it: the others were written on their first delivery.
    assert written == {v: ("2" if v.startswith("flaky") else "1") for v in values}


def test_rejected_records_reach_the_dead_letter_queue_with_error_headers(
    sbroker: LocalBroker, tmp_path: Path
) -> None:
    bs = sbroker.bootstrap_servers
    topic, name = new_names()
    dlq = f"{topic}-dlq"
    create_topics(bs, (topic, 2))
    values = ["poison0", "bad1", "errant2", *(f"ok{i}" for i in range(3, 12))]
    produce(bs, topic, values)
    out = tmp_path / "out.txt"
    config = sink_config(
        bs,
        name,
        topic,
        **{
            "connector.class": f"{TASKS}.DeliveryLogSink",
            "file": str(out),
            "share.max.delivery.count": "3",
            "errors.deadletterqueue.topic.name": dlq,
            "errors.deadletterqueue.topic.replication.factor": "1",
            "errors.deadletterqueue.context.headers.enable": "true",
        },
    )
    with SinkWorker(config) as worker:
        wait_for(lambda: worker.stats.snapshot().dlq >= 3, 30, "3 dead letters")
        wait_for(lambda: worker.stats.snapshot().acknowledged >= 9, 10, "9 acknowledgements")
    snap = worker.stats.snapshot()
    assert (snap.acknowledged, snap.rejected, snap.dlq) == (9, 3, 3)
    assert snap.released == 2  # poison0 on deliveries 1 and 2; rejected on 3
    assert sorted(line.split(" ")[0] for line in lines(out)) == sorted(values[3:])
    letters = read_topic(bs, dlq, 1, expect_at_least=3, isolation="read_uncommitted")
    by_value = {m.value(): dict(m.headers() or []) for m in letters}
    assert set(by_value) == {b"poison0", b"bad1", b"errant2"}
    exceptions = {v: h[HEADER_PREFIX + "exception.class.name"] for v, h in by_value.items()}
    assert exceptions == {
        b"poison0": b"producer.sink.task.RetriableException",
        b"bad1": b"builtins.ValueError",
        b"errant2": b"builtins.LookupError",
    }
    for value, headers in by_value.items():
        assert headers[HEADER_PREFIX + "topic"] == topic.encode()
        assert int(headers[HEADER_PREFIX + "partition"]) in (0, 1)
        assert int(headers[HEADER_PREFIX + "offset"]) >= 0
        assert headers[HEADER_PREFIX + "connector.name"] == name.encode()
        assert headers[HEADER_PREFIX + "stage"] == b"TASK_PUT"
        assert headers[HEADER_PREFIX + "class.name"] == f"{TASKS}.DeliveryLogSink".encode()
        trace = headers[HEADER_PREFIX + "exception.stacktrace"]
        assert exceptions[value].split(b".")[-1] in trace


def test_exactly_once_copies_through_a_transform(sbroker: LocalBroker) -> None:
    bs = sbroker.bootstrap_servers
    topic, name, target = eos_topics(bs, 3, 2)
    values = [f"drop{i}" if i % 10 == 0 else f"v{i}" for i in range(100)]
    produce(bs, topic, values)
    config = eos_sink_config(
        bs, name, topic, target, **{"transform": f"{TASKS}.shout", "tasks.max": "2"}
    )
    with SinkWorker(config) as worker:
        wait_for(lambda: worker.stats.snapshot().acknowledged >= 100, 20, "100 acknowledgements")
    assert worker.failure is None
    got = Counter(m.value() for m in read_topic(bs, target, 2, expect_at_least=90))
    assert got == Counter(v.upper().encode() for v in values if not v.startswith("drop"))


def test_implicit_mode_acknowledges_on_the_next_poll(sbroker: LocalBroker, tmp_path: Path) -> None:
    bs = sbroker.bootstrap_servers
    topic, name = input_topic(bs, 1, [f"v{i}" for i in range(30)])
    out = tmp_path / "out.txt"
    config = sink_config(
        bs,
        name,
        topic,
        **{
            "connector.class": "producer.sink.FileSink",
            "file": str(out),
            "share.acknowledgement.mode": "implicit",
        },
    )
    with SinkWorker(config) as worker:
        wait_for(lambda: len(lines(out)) >= 30, 20, "30 lines")
    with SinkWorker(config) as again:
        again.wait(2 * 2)  # longer than the lock timeout: nothing was left unacknowledged
    assert again.stats.snapshot().acquired == 0
    assert sorted(lines(out)) == sorted(f"v{i}" for i in range(30))
    assert worker.failure is None


def test_a_task_failing_in_start_fails_the_worker(sbroker: LocalBroker) -> None:
    topic, name = new_names()
    config = sink_config(
        sbroker.bootstrap_servers, name, topic, **{"connector.class": f"{TASKS}.FailingStart"}
    )
    worker = SinkWorker(config)
    with pytest.raises(SinkWorkerError, match=r"failed in start\(\).*cannot reach the warehouse"):
        worker.start()
    assert not worker.running


def test_a_share_group_id_must_not_be_a_consumer_groups(sbroker: LocalBroker) -> None:
    bs = sbroker.bootstrap_servers
    topic, name = input_topic(bs, 1, ["x"])
    classic = Consumer(
        {"bootstrap.servers": bs, "group.id": f"connect-{name}", "auto.offset.reset": "earliest"}
    )
    classic.subscribe([topic])
    wait_for(lambda: bool(classic.consume(1, 0.5)), 20, "the classic consumer's first record")
    classic.commit(asynchronous=False)
    classic.close()
    config = sink_config(bs, name, topic, **{"connector.class": "producer.sink.FileSink"})
    with pytest.raises(SinkConfigError, match=r"^share\.group\.id: .*consumer group"):
        SinkWorker(config).start()


def test_a_dead_letter_topic_that_cannot_be_created_is_reported_with_its_key(
    sbroker: LocalBroker, tmp_path: Path
) -> None:
    topic, name = new_names()
    config = sink_config(
        sbroker.bootstrap_servers,
        name,
        topic,
        **{
            "connector.class": "producer.sink.FileSink",
            "file": str(tmp_path / "f"),
            "errors.deadletterqueue.topic.name": f"{topic}-dlq",
        },
    )
    with pytest.raises(SinkWorkerError, match=r"^errors\.deadletterqueue\.topic\.replication"):
        SinkWorker(config).start()


def test_sink_task_metrics(sbroker: LocalBroker, tmp_path: Path) -> None:
    bs = sbroker.bootstrap_servers
    topic, name = input_topic(bs, 1, ["flaky0", "ok1", "bad2", "ok3"])
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    config = sink_config(
        bs,
        name,
        topic,
        **{"connector.class": f"{TASKS}.DeliveryLogSink", "file": str(tmp_path / "out")},
    )
    with SinkWorker(config, meter_provider=provider) as worker:
        wait_for(lambda: worker.stats.snapshot().acknowledged >= 3, 20, "3 acknowledgements")
    data = reader.get_metrics_data()
    assert data is not None
    found: dict[str, object] = {}
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                point = next(iter(metric.data.data_points))
                attrs = dict(point.attributes or {})
                assert attrs == {"connector": name, "task": "0"}
                found[f"{sm.scope.name}/{metric.name}"] = getattr(point, "value", None) or (
                    getattr(point, "count", None)
                )
    assert found["sink-task-metrics/sink-record-acquire"] == 5
    assert found["sink-task-metrics/sink-record-acknowledge"] == 3
    assert found["sink-task-metrics/sink-record-release"] == 1
    assert found["sink-task-metrics/sink-record-reject"] == 1
    assert found["sink-task-metrics/sink-record-redelivery"] == 1
    assert found["sink-task-metrics/acknowledge-time"] == worker.stats.snapshot().batches


def test_topics_regex_json_converter_and_errors_tolerance(
    sbroker: LocalBroker, tmp_path: Path
) -> None:
    """``topics.regex`` reads every matching topic (one created while the worker runs too);
    JsonConverter hands the task values; with ``errors.tolerance=all`` a record that is not
    JSON is rejected to the dead-letter topic, as Connect's, with its stage, the converter's
    class and its own timestamp; the rest are written."""
    bs = sbroker.bootstrap_servers
    _topic, name = new_names("rx")
    first, second, other = f"{name}-a", f"{name}-b", f"x{name}-a"
    dlq = f"{name}-dlq"
    create_topics(bs, (first, 1), (other, 1))
    stock = Producer({"bootstrap.servers": bs})
    for i in range(3):
        stock.produce(first, value=json.dumps({"n": i}).encode(), timestamp=1_600_000_000_000 + i)
    stock.produce(first, value=b"not json", timestamp=1_500_000_000_000)
    stock.produce(other, value=b'{"n": 99}')
    assert stock.flush(15) == 0
    out = tmp_path / "out.txt"
    config = sink_config(
        bs,
        name,
        "",
        **{
            "topics.regex": f"{name}-[ab]",
            "connector.class": "producer.sink.FileSink",
            "file": str(out),
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
            "errors.tolerance": "all",
            "errors.log.enable": "true",
            "errors.deadletterqueue.topic.name": dlq,
            "errors.deadletterqueue.topic.replication.factor": "1",
            "errors.deadletterqueue.context.headers.enable": "true",
            "consumer.override.metadata.max.age.ms": "500",
        },
    )
    with SinkWorker(config) as worker:
        wait_for(lambda: len(lines(out)) >= 3, 30, "3 lines from the first topic")
        create_topics(bs, (second, 1))
        stock.produce(second, value=b'{"n": 10}')
        assert stock.flush(15) == 0
        wait_for(lambda: len(lines(out)) >= 4, 30, "the new matching topic's record")
        wait_for(lambda: worker.stats.snapshot().dlq >= 1, 10, "a dead letter")
    assert worker.failure is None
    assert sorted(lines(out)) == sorted(['{"n":0}', '{"n":1}', '{"n":2}', '{"n":10}'])
    letters = read_topic(bs, dlq, 1, expect_at_least=1, isolation="read_uncommitted")
    assert [m.value() for m in letters] == [b"not json"]
    headers = dict(letters[0].headers() or [])
    assert headers[HEADER_PREFIX + "stage"] == b"VALUE_CONVERTER"
    assert headers[HEADER_PREFIX + "class.name"] == b"org.apache.kafka.connect.json.JsonConverter"
    assert headers[HEADER_PREFIX + "exception.class.name"].endswith(b"DataException")
    assert letters[0].timestamp()[1] == 1_500_000_000_000


def test_errors_tolerance_none_fails_the_task_on_a_conversion_error(
    sbroker: LocalBroker, tmp_path: Path
) -> None:
    bs = sbroker.bootstrap_servers
    topic, name = input_topic(bs, 1, ["plain text"])
    config = sink_config(
        bs,
        name,
        topic,
        **{
            "connector.class": "producer.sink.FileSink",
            "file": str(tmp_path / "out.txt"),
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        },
    )
    worker = SinkWorker(config)
    worker.start()
    try:
        assert worker.wait(30), "the task should fail"
    finally:
        worker.stop()
    assert worker.failure is not None
    assert "Tolerance exceeded in error handler" in str(worker.failure)
    assert lines(tmp_path / "out.txt") == []
