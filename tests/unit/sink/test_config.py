"""Sink worker configuration: KIP-1302's names, defaults, resolution order and validation."""

from __future__ import annotations

import pytest

from producer.protocol.types import Record
from producer.sink import SinkConfigError, resolve
from producer.sink.dlq import HEADER_PREFIX, DeadLetterQueue
from producer.sink.task import SinkRecord, SinkTask, SinkTaskContext

WORKER = {"bootstrap.servers": "127.0.0.1:9092", "consumer.group.protocol": "share"}
CONNECTOR = {"name": "orders", "connector.class": "producer.sink.FileSink", "topics": "a, b"}


def test_kip_defaults() -> None:
    cfg = resolve(WORKER, CONNECTOR)
    assert cfg.share_group_id == "connect-orders"
    assert cfg.acknowledgement_mode == "explicit"
    assert cfg.delivery_semantics == "at-least-once"
    assert cfg.tasks_max == 1
    assert cfg.topics == ("a", "b")
    assert cfg.dlq_topic is None
    assert cfg.dlq_replication_factor == 3
    assert cfg.dlq_context_headers is False
    # Unset KIP group keys leave the group's own settings alone.
    assert cfg.group_configs() == {}
    assert cfg.consumer_config()["share.acknowledgement.mode"] == "explicit"
    assert cfg.consumer_config()["group.id"] == "connect-orders"


def test_one_file_holds_worker_and_connector_keys() -> None:
    assert resolve({**WORKER, **CONNECTOR}) == resolve(WORKER, CONNECTOR)


def test_kip_keys_become_group_configs() -> None:
    cfg = resolve(
        WORKER,
        {
            **CONNECTOR,
            "share.acquisition.lock.timeout.ms": "15000",
            "share.max.delivery.count": "3",
            "consumer.override.auto.offset.reset": "latest",
        },
    )
    assert cfg.group_configs() == {
        "share.record.lock.duration.ms": "15000",
        "share.delivery.count.limit": "3",
        "share.auto.offset.reset": "latest",
    }


@pytest.mark.parametrize(
    ("worker_protocol", "connector_protocol", "ok"),
    [
        ("share", None, True),  # the worker's global default
        ("consumer", "share", True),  # a connector opts in
        ("share", "consumer", False),  # a connector opts out
        (None, None, False),  # the KIP's default is consumer
        (None, "share", True),
    ],
)
def test_resolution_order(
    worker_protocol: str | None, connector_protocol: str | None, ok: bool
) -> None:
    worker = {"bootstrap.servers": "b:1"}
    if worker_protocol is not None:
        worker["consumer.group.protocol"] = worker_protocol
    connector = dict(CONNECTOR)
    if connector_protocol is not None:
        connector["consumer.override.group.protocol"] = connector_protocol
    if ok:
        assert resolve(worker, connector).group_protocol == "share"
    else:
        with pytest.raises(SinkConfigError, match="share-group sinks only"):
            resolve(worker, connector)


def test_client_overrides_win_over_worker_settings() -> None:
    cfg = resolve(
        {**WORKER, "consumer.max.poll.records": "100", "producer.linger.ms": "20"},
        {**CONNECTOR, "consumer.override.max.poll.records": "7"},
    )
    assert cfg.consumer_config()["max.poll.records"] == "7"
    assert cfg.producer_config(0, transactional=False)["linger.ms"] == "20"
    assert "transactional.id" not in cfg.producer_config(0, transactional=False)


def test_exactly_once_uses_a_transactional_consumer_and_one_id_per_task() -> None:
    cfg = resolve(
        WORKER,
        {
            **CONNECTOR,
            "share.delivery.semantics": "exactly-once",
            "transactional.id.prefix": "orders-w1",
        },
    )
    assert cfg.exactly_once
    assert cfg.consumer_config()["share.acknowledgement.mode"] == "transactional"
    assert cfg.producer_config(2, transactional=True)["transactional.id"] == "orders-w1-2"


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"share.max.delivery.count": "zero"}, "share.max.delivery.count"),
        ({"share.max.delivery.count": "0"}, "share.max.delivery.count"),
        ({"share.acquisition.lock.timeout.ms": "10"}, "share.acquisition.lock.timeout.ms"),
        ({"share.delivery.semantics": "at-most-once"}, "share.delivery.semantics"),
        ({"share.acknowledgement.mode": "transactional"}, "share.acknowledgement.mode"),
        (
            {"share.delivery.semantics": "exactly-once", "share.acknowledgement.mode": "implicit"},
            "share.acknowledgement.mode",
        ),
        ({"tasks.max": "-1"}, "tasks.max"),
        ({"topics": " , "}, "topics"),
        ({"topics.regex": "o.*"}, "topics"),  # both set
        ({"topics": "", "topics.regex": "o(["}, "topics.regex"),
        ({"errors.tolerance": "some"}, "errors.tolerance"),
        ({"errors.retry.timeout": "-2"}, "errors.retry.timeout"),
        ({"errors.log.enable": "maybe"}, "errors.log.enable"),
        (
            {
                "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                "value.converter.converter.encoding": "klingon",
            },
            "value.converter",
        ),
        ({"key.converter": "no.such.Converter"}, "key.converter"),
        ({"errors.deadletterqueue.topic.name": "b"}, "topics"),
        (
            {
                "topics": "",
                "topics.regex": "orders-.*",
                "errors.deadletterqueue.topic.name": "orders-dlq",
            },
            "topics.regex",
        ),
        ({"share.group.id": "bad id!"}, "share.group.id"),
        ({"consumer.override.max.poll.records": "many"}, "consumer.override.max.poll.records"),
        ({"consumer.override.no.such.key": "1"}, "consumer.override.no.such.key"),
        ({"consumer.override.group.id": "g"}, "consumer.override.group.id"),
        ({"producer.override.transactional.id": "t"}, "producer.override.transactional.id"),
        ({"producer.override.acks": "0"}, "producer.override.acks"),
        ({"consumer.override.auto.offset.reset": "none"}, "consumer.override.auto.offset.reset"),
        ({"value.converter": "JsonConverter"}, "value.converter"),
        ({"errors.deadletterqueue.context.headers.enable": "yes"}, "errors.deadletterqueue."),
        ({"name": ""}, "name"),
        ({"connector.class": ""}, "connector.class"),
    ],
)
def test_a_bad_value_is_reported_with_its_key(extra: dict[str, str], key: str) -> None:
    with pytest.raises(SinkConfigError) as info:
        resolve(WORKER, {**CONNECTOR, **extra})
    assert str(info.value).startswith(key), str(info.value)


def test_connects_messages_for_topics_and_the_dead_letter_topic() -> None:
    bare = {k: v for k, v in CONNECTOR.items() if k != "topics"}
    with pytest.raises(SinkConfigError, match=r"Must configure one of topics or topics\.regex"):
        resolve(WORKER, bare)
    with pytest.raises(SinkConfigError, match="mutually exclusive options, but both are set"):
        resolve(WORKER, {**CONNECTOR, "topics.regex": "a"})
    with pytest.raises(
        SinkConfigError,
        match=r"The DLQ topic 'b' may not be included in the list of topics \('topics=a,b'\)",
    ):
        resolve(WORKER, {**CONNECTOR, "errors.deadletterqueue.topic.name": "b"})


def test_topics_regex_matches_whole_names_and_errors_keys_have_connects_defaults() -> None:
    bare = {k: v for k, v in CONNECTOR.items() if k != "topics"}
    cfg = resolve(WORKER, {**bare, "topics.regex": "orders-[0-9]+"})
    assert cfg.topics == ()
    assert cfg.matching(["orders-1", "orders-12", "orders-1x", "xorders-1", "orders-"]) == (
        "orders-1",
        "orders-12",
    )
    assert cfg.metadata_max_age_ms == 300_000
    assert (cfg.errors.tolerance, cfg.errors.retry_timeout_ms) == ("none", 0)
    assert (cfg.errors.retry_delay_max_ms, cfg.errors.log_enable) == (60_000, False)
    assert cfg.errors.log_include_messages is False
    assert cfg.converters == {}
    tuned = resolve(
        WORKER,
        {
            **CONNECTOR,
            "consumer.override.metadata.max.age.ms": "1000",
            "errors.tolerance": "all",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        },
    )
    assert tuned.metadata_max_age_ms == 1000 and tuned.errors.tolerates
    assert tuned.converters == {"value.converter": "org.apache.kafka.connect.json.JsonConverter"}
    assert "metadata.max.age.ms" not in tuned.consumer_config()


def test_bootstrap_servers_is_required() -> None:
    with pytest.raises(SinkConfigError, match=r"^bootstrap\.servers"):
        resolve({"consumer.group.protocol": "share"}, CONNECTOR)


def test_task_keys_reach_the_task_untouched() -> None:
    cfg = resolve(WORKER, {**CONNECTOR, "file": "/tmp/x", "my.setting": "42"})
    assert cfg.task["file"] == "/tmp/x"
    assert cfg.task["my.setting"] == "42"


def test_dead_letter_record_carries_connects_error_headers() -> None:
    failed = Record("orders", 2, 41, b"k", b"v", (("h", b"1"),), 1000, 5)
    try:
        raise ValueError("no such customer")
    except ValueError as exc:
        error = exc
    dlq = DeadLetterQueue("orders-dlq", "orders", 3, SinkTask, context_headers=True)
    out = dlq.record(failed, error)
    assert (out.topic, out.key, out.value) == ("orders-dlq", b"k", b"v")
    assert out.timestamp_ms == 1000  # the original record's, as Connect's reporter
    headers = dict(out.headers)
    assert headers["h"] == b"1"
    assert headers[HEADER_PREFIX + "topic"] == b"orders"
    assert headers[HEADER_PREFIX + "partition"] == b"2"
    assert headers[HEADER_PREFIX + "offset"] == b"41"
    assert headers[HEADER_PREFIX + "connector.name"] == b"orders"
    assert headers[HEADER_PREFIX + "task.id"] == b"3"
    assert headers[HEADER_PREFIX + "stage"] == b"TASK_PUT"
    assert headers[HEADER_PREFIX + "class.name"] == b"producer.sink.task.SinkTask"
    assert headers[HEADER_PREFIX + "exception.class.name"] == b"builtins.ValueError"
    assert headers[HEADER_PREFIX + "exception.message"] == b"no such customer"
    assert b"ValueError: no such customer" in (
        headers[HEADER_PREFIX + "exception.stacktrace"] or b""
    )
    # Without context headers (Connect's default) the record goes as it came.
    plain = DeadLetterQueue("orders-dlq", "orders", 3, SinkTask, context_headers=False)
    assert plain.record(failed, error).headers == (("h", b"1"),)


def test_context_send_and_report() -> None:
    ctx = SinkTaskContext("c", 0, {"a": "b"})
    ctx.worker_begin()
    ctx.send("out", "text", key="k", headers=[("h", "v")])
    record = SinkRecord("in", 0, 1, None, None)
    ctx.report(record, ValueError("x"))
    outputs, errant = ctx.worker_take()
    assert outputs[0].value == b"text"
    assert outputs[0].key == b"k"
    assert outputs[0].headers == (("h", b"v"),)
    assert errant[0][0] is record
    assert ctx.worker_take() == ([], [])
    with pytest.raises(TypeError):
        ctx.send("out", 42)  # type: ignore[arg-type]
    assert ctx.configs() == {"a": "b"}
