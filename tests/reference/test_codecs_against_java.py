"""Compressed batches across implementations, for gzip, snappy, lz4 and zstd.

* Batches the client library writes, batches sharetxn's cleaner rewrites when it compacts
  a topic, and batches the broker compresses again for a topic's ``compression.type`` (at its
  ``compression.<codec>.level``) are read by Apache Kafka 4.4's Java console consumer
  (``KafkaLZ4BlockInputStream`` refuses LZ4 frames whose blocks depend on each other:
  "Dependent block stream is unsupported").
* Batches the client library writes are accepted by Apache Kafka's broker.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from coordinator.launcher import LocalBroker
from producer import Admin, TransactionalProducer
from producer.admin import TopicSpec
from tests.reference.kafka import ReferenceKafka, java_available, run_tool
from txn.batch import ATTR_DELETE_HORIZON, BatchFormatError, BatchHeader, iter_batches
from txn.errors import ErrorCode

pytestmark = pytest.mark.reference

CODECS = ["gzip", "snappy", "lz4", "zstd"]
KEYS = 5
VERSIONS = 8  # values per key: compaction keeps the last
WRITE_WHILE_READING_S = 12.0  # the Java consumer starts (a few seconds) and reads meanwhile
COMPACTION = {
    "log.cleaner.backoff.ms": "300",
    "log.retention.check.interval.ms": "300",
    "log.initial.task.delay.ms": "300",
}


@pytest.fixture(scope="module")
def sharetxn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    if not java_available():
        pytest.skip("Kafka's console consumer needs a Java runtime: java is not on PATH")
    data = tmp_path_factory.mktemp("codecs") / "data"
    with LocalBroker(data_dir=data, config=COMPACTION) as broker:
        yield broker


def _produce(bootstrap: str, topic: str, codec: str) -> dict[str, str]:
    """KEYS keys x VERSIONS values, one small batch at a time; returns the last values."""
    producer = TransactionalProducer(
        {"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 0}
    )
    last: dict[str, str] = {}
    try:
        for version in range(VERSIONS):
            for key in range(KEYS):
                noise = "".join(uuid.uuid4().hex for _ in range(6))  # not compressible away
                value = f"{codec}-k{key}-v{version}-{noise}"
                sent = producer.send(topic, value.encode(), key=f"k{key}".encode(), partition=0)
                # One record a batch: a batch larger than the topic's 1000-byte segments is
                # refused (RECORD_LIST_TOO_LARGE), as Kafka refuses it.
                producer.flush()
                sent.result(timeout=30)
                last[f"k{key}"] = value
    finally:
        producer.close()
    return last


def _read_all(bootstrap: str, topic: str) -> list[tuple[str, str]]:
    """Every record of partition 0, read up to its end offset (a fetch reads one segment, and
    the cleaner may swap segments meanwhile: a reader that stops at a quiet poll misses some)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    out: list[tuple[str, str]] = []
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        last = -1
        deadline = time.monotonic() + 120
        while last < high - 1 and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                last = message.offset()
                out.append(((message.key() or b"").decode(), (message.value() or b"").decode()))
        assert last == high - 1, f"read up to offset {last} of {topic}, its end is {high}"
    finally:
        consumer.close()
    return out


def _produce_for(
    bootstrap: str, topic: str, codec: str, seconds: float, last: dict[str, str]
) -> None:
    """Later versions of the same keys, one record a batch, for ``seconds``; updates ``last``."""
    producer = TransactionalProducer(
        {"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 0}
    )
    deadline = time.monotonic() + seconds
    version = VERSIONS
    try:
        while time.monotonic() < deadline:
            for key in range(KEYS):
                noise = "".join(uuid.uuid4().hex for _ in range(6))
                value = f"{codec}-k{key}-v{version}-{noise}"
                sent = producer.send(topic, value.encode(), key=f"k{key}".encode(), partition=0)
                producer.flush()
                sent.result(timeout=30)
                last[f"k{key}"] = value
            version += 1
            time.sleep(0.05)
    finally:
        producer.close()


def _watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        return int(low), int(high)
    finally:
        consumer.close()


def _java_console_consumer_to_idle(
    bootstrap: str, topic: str, idle_ms: int = 8000
) -> list[tuple[int, str, str]]:
    """(offset, key, value) of every record the console consumer reads from the start until
    nothing comes for ``idle_ms``."""
    args = [
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--from-beginning",
        "--timeout-ms",
        str(idle_ms),
        "--formatter-property",
        "print.offset=true",
        "--formatter-property",
        "print.key=true",
        "--formatter-property",
        "key.separator=|",
    ]
    done = run_tool("kafka-console-consumer", args, timeout=180)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert "Dependent block stream" not in done.stderr, done.stderr
    out: list[tuple[int, str, str]] = []
    for line in done.stdout.splitlines():
        if line.startswith("Offset:"):
            offset, key, value = line.split("|", 2)
            out.append((int(offset.removeprefix("Offset:")), key, value))
    return out


def _java_console_consumer(bootstrap: str, topic: str, count: int) -> list[tuple[str, str]]:
    args = [
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--from-beginning",
        "--max-messages",
        str(count),
        "--timeout-ms",
        "30000",
        "--property",
        "print.key=true",
        "--property",
        "key.separator=|",
    ]
    done = run_tool("kafka-console-consumer", args, timeout=120)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert "Dependent block stream" not in done.stderr, done.stderr
    rows = [line.split("|", 1) for line in done.stdout.splitlines() if "|" in line]
    return [(key, value) for key, value in rows]


@pytest.mark.parametrize("codec", CODECS)
def test_java_consumer_reads_client_and_cleaner_batches(sharetxn: LocalBroker, codec: str) -> None:
    """The Java consumer reads the topic from its start while new versions keep coming and the
    cleaner keeps swapping segments under it, as a user's consumer would: it reads to the end
    offset, in offset order, and ends with the last value of every key."""
    bootstrap = sharetxn.bootstrap_servers
    topic = f"compacted-{codec}-{uuid.uuid4().hex[:6]}"
    configs = {
        "cleanup.policy": "compact",
        "internal.segment.bytes": "1000",
        "min.cleanable.dirty.ratio": "0.01",
    }
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        created = admin.create_topics([TopicSpec(topic, 1, 1, configs=configs)])
        assert created[topic] == ErrorCode.NONE
    last = _produce(bootstrap, topic, codec)
    # The cleaner has rewritten what it keeps of the closed segments once fewer records remain.
    deadline = time.monotonic() + 60
    while len(_read_all(bootstrap, topic)) >= KEYS * VERSIONS and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _checkpointed(sharetxn.data_dir / f"{topic}-0"), "the cleaner did not run within 60 s"
    # More versions while the Java consumer starts and reads: the cleaner passes meanwhile.
    failures: list[BaseException] = []

    def write() -> None:
        try:
            _produce_for(bootstrap, topic, codec, WRITE_WHILE_READING_S, last)
        except BaseException as exc:  # reported by the test below
            failures.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        seen = _java_console_consumer_to_idle(bootstrap, topic)
    finally:
        writer.join(WRITE_WHILE_READING_S + 60)
    assert not failures, failures
    _low, high = _watermarks(bootstrap, topic)
    offsets = [offset for offset, _key, _value in seen]
    assert offsets == sorted(set(offsets)), "offsets went back or repeated"
    assert offsets[-1] == high - 1, f"read up to offset {offsets[-1]} of {topic}, its end is {high}"
    assert {key: value for _offset, key, value in seen} == last
    assert len(seen) < high  # the cleaner removed records before the reader got to them


#: A topic level other than the codec's default for each codec that has levels (KIP-390).
LEVELS = {"gzip": "1", "lz4": "17", "zstd": "19"}


def _produce_batches(bootstrap: str, topic: str, codec: str, batches: int) -> list[tuple[str, str]]:
    """``batches`` batches of 10 records each with the producer's ``codec``."""
    producer = TransactionalProducer(
        {"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 50}
    )
    out: list[tuple[str, str]] = []
    try:
        for batch in range(batches):
            sent = []
            for index in range(10):
                key, value = f"k{index}", f"{codec}-{batch}-{index}-{uuid.uuid4().hex}"
                sent.append(producer.send(topic, value.encode(), key=key.encode(), partition=0))
                out.append((key, value))
            producer.flush()
            for future in sent:
                future.result(timeout=30)
    finally:
        producer.close()
    return out


@pytest.mark.parametrize("codec", CODECS)
def test_java_consumer_reads_batches_the_broker_compressed(
    sharetxn: LocalBroker, codec: str
) -> None:
    """A topic whose ``compression.type`` differs from the producer's: the broker writes each
    batch again with the topic's codec, at the topic's level, and Kafka's Java consumer reads
    every record."""
    bootstrap = sharetxn.bootstrap_servers
    topic = f"recompressed-{codec}-{uuid.uuid4().hex[:6]}"
    configs = {"compression.type": codec}
    if codec in LEVELS:
        configs[f"compression.{codec}.level"] = LEVELS[codec]
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        assert admin.create_topics([TopicSpec(topic, 1, 1, configs=configs)])[topic] == (
            ErrorCode.NONE
        )
    other = "gzip" if codec != "gzip" else "zstd"
    records = _produce_batches(bootstrap, topic, "none", 3)
    records += _produce_batches(bootstrap, topic, other, 3)
    assert _read_all(bootstrap, topic) == records
    assert _java_console_consumer(bootstrap, topic, len(records)) == records


def _checkpointed(directory: Path) -> bool:
    return (directory / "cleaner-offset-checkpoint").exists()


def _stored_batches(directory: Path) -> list[BatchHeader]:
    """The headers of the batches in the log's segment files (read while the broker runs:
    a segment the cleaner swaps meanwhile is read again on the next look)."""
    out: list[BatchHeader] = []
    for segment in sorted(directory.glob("*.log")):
        data = segment.read_bytes()
        with contextlib.suppress(BatchFormatError):  # a tail being written: seen next look
            out.extend(header for _pos, header in iter_batches(data))
    return out


def _send_each(bootstrap: str, topic: str, codec: str, rows: list[tuple[str, str | None]]) -> None:
    """One batch per record, each in a segment of its own (segment.ms is 100 ms)."""
    producer = TransactionalProducer(
        {"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 0}
    )
    try:
        for key, value in rows:
            time.sleep(0.15)
            sent = producer.send(topic, value, key=key, partition=0)
            producer.flush()
            sent.result(timeout=30)
    finally:
        producer.close()


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_java_consumer_reads_delete_horizon_and_emptied_batches(
    sharetxn: LocalBroker, codec: str
) -> None:
    """KIP-534 as the cleaner writes it: tombstones kept with the batch's delete horizon (the
    DELETE_HORIZON attribute, the horizon as base timestamp, records' deltas against it) and
    a producer's last batch kept empty once another writer superseded its record.  Kafka's
    console consumer reads them: every tombstone (value null) and value, in offset order."""
    bootstrap = sharetxn.bootstrap_servers
    topic = f"horizon-{codec}-{uuid.uuid4().hex[:6]}"
    configs = {
        "cleanup.policy": "compact",
        "segment.ms": "100",
        "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": "600000",
    }
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        created = admin.create_topics([TopicSpec(topic, 1, 1, configs=configs)])
        assert created[topic] == ErrorCode.NONE
    rows: list[tuple[str, str | None]] = [(f"k{n}", f"v{n}") for n in range(4)]
    rows += [("k0", None), ("k1", None), ("e", "first")]
    _send_each(bootstrap, topic, codec, rows)  # one idempotent producer: its last is "e"
    _send_each(bootstrap, topic, codec, [("e", "second"), ("k2", "w2"), ("z", "end")])
    directory = sharetxn.data_dir / f"{topic}-0"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        headers = _stored_batches(directory)
        horizons = [h for h in headers if h.attributes & ATTR_DELETE_HORIZON]
        emptied = [h for h in headers if h.records_count == 0]
        if len(horizons) == 2 and emptied:
            break
        time.sleep(0.5)
    assert len(horizons) == 2 and all(h.base_timestamp > h.max_timestamp for h in horizons)
    assert [h.base_offset for h in emptied] == [6]  # the first producer's "e"
    # Nothing is written meanwhile: a long idle time lets a slow start read everything.
    seen = _java_console_consumer_to_idle(bootstrap, topic, idle_ms=30_000)
    offsets = [offset for offset, _key, _value in seen]
    assert offsets == sorted(set(offsets))
    assert {key: value for _offset, key, value in seen} == {
        "k0": "null",
        "k1": "null",
        "k2": "w2",
        "k3": "v3",
        "e": "second",
        "z": "end",
    }


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_accepts_the_client_librarys_batches(
    reference_kafka: ReferenceKafka, codec: str
) -> None:
    bootstrap = reference_kafka.bootstrap_servers
    topic = f"codec-{codec}-{uuid.uuid4().hex[:6]}"
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        assert admin.create_topics([TopicSpec(topic, 1, 1)])[topic] == ErrorCode.NONE
    last = _produce(bootstrap, topic, codec)
    records = _read_all(bootstrap, topic)
    assert len(records) == KEYS * VERSIONS
    assert {key: value for key, value in records} == last
    assert _java_console_consumer(bootstrap, topic, len(records)) == records
