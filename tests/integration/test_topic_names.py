"""Illegal topic names are refused as Kafka refuses them, so clients fail at once."""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest
from confluent_kafka import KafkaException, Producer

from coordinator.launcher import LocalBroker
from producer import TransactionalProducer
from tests.kafka_wire import WireClient
from txn.errors import ErrorCode, InvalidTopicError

pytestmark = pytest.mark.integration

TOO_LONG = "t" * 300


@pytest.mark.parametrize("auto_create", [True, False])
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (TOO_LONG, ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("bad name!", ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("..", ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("fine-but-absent", None),
    ],
)
def test_metadata_answers_invalid_topic(
    broker: LocalBroker, auto_create: bool, name: str, expected: ErrorCode | None
) -> None:
    client = WireClient(broker.bootstrap_servers)
    try:
        resp = client.request(
            3, 12, {"topics": [{"name": name}], "allow_auto_topic_creation": auto_create}
        )
    finally:
        client.close()
    (topic,) = resp.topics
    if expected is None:  # a legal name: created, or unknown without auto-creation
        want = ErrorCode.NONE if auto_create else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert int(topic.error_code) == want
    else:
        assert int(topic.error_code) == expected


def test_our_producer_fails_fast_on_an_illegal_name(broker: LocalBroker) -> None:
    producer = TransactionalProducer(
        {"bootstrap.servers": broker.bootstrap_servers, "max.block.ms": 60000}
    )
    try:
        with pytest.raises(InvalidTopicError, match="longer than the max allowed length 249"):
            producer.send(TOO_LONG, b"v")
    finally:
        producer.close()


def test_stock_producer_delivery_fails_with_invalid_topic(broker: LocalBroker) -> None:
    failures: list[str] = []
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "message.timeout.ms": 60000}
    )
    try:
        producer.produce(TOO_LONG, b"v", on_delivery=lambda err, _m: failures.append(str(err)))
    except KafkaException as exc:  # some librdkafka versions refuse at produce()
        failures.append(str(exc))
    deadline = time.monotonic() + 30
    while not failures and time.monotonic() < deadline:
        producer.poll(0.2)
    assert failures and "nvalid" in failures[0]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_gives_up_on_an_illegal_name(broker: LocalBroker) -> None:
    done = subprocess.run(
        ["kcat", "-b", broker.bootstrap_servers, "-t", TOO_LONG, "-P"],
        input="x\n",
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    assert done.returncode != 0
    assert "nvalid" in done.stderr or "illegal" in done.stderr.lower()
