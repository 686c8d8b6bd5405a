"""The ``kafka-share`` Spark source on Apache Kafka 4.4, which has no KIP-1289 (issue 17).

The source refuses the cluster when it is created (exactly-once needs TxnShareAcknowledge;
no share groups at all is refused in both modes), and with
``deliverySemantics=at-least-once`` a query whose driver is SIGKILLed mid-batch and
restarted delivers every record at least once and leaves nothing unacknowledged.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from producer import Admin, TransactionalProducer
from producer.admin import TopicSpec
from producer.protocol.connection import BrokerConnection
from producer.spark.errors import SparkConfigError
from tests.reference.kafka import ReferenceKafka, run_tool
from txn.api_keys import ApiKey

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.reference]

FEATURES_TOOL = "org.apache.kafka.tools.FeatureCommand"


def _source_options(bootstrap: str, checkpoint: Path, **extra: str) -> dict[str, str]:
    return {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": "anything",
        "group.id": "anything",
        "checkpointLocation": str(checkpoint),
        **extra,
    }


def _refusal(options: dict[str, str]) -> str:
    from producer.spark.source import ShareDataSource  # noqa: PLC0415 - needs pyspark

    with pytest.raises(SparkConfigError) as caught:
        ShareDataSource(options).schema()
    return str(caught.value)


@contextlib.contextmanager
def _share_groups_disabled(bootstrap: str) -> Iterator[None]:
    """``kafka-features disable --feature share.version``, upgraded back afterwards."""
    host, port = bootstrap.rsplit(":", 1)
    conn = BrokerConnection(host, int(port))
    try:
        conn.connect()
        level = conn.features.get("share.version", 1)
    finally:
        conn.close()
    tool = ["--bootstrap-server", bootstrap]
    done = run_tool(FEATURES_TOOL, [*tool, "disable", "--feature", "share.version"])
    assert done.returncode == 0, done.stderr
    try:
        yield
    finally:
        again = run_tool(FEATURES_TOOL, [*tool, "upgrade", "--feature", f"share.version={level}"])
        assert again.returncode == 0, again.stderr


def test_source_refuses_kafka_without_kip1289_or_share_groups(
    reference_kafka: ReferenceKafka, tmp_path: Path
) -> None:
    from producer.spark.source import ShareDataSource, schema_ddl  # noqa: PLC0415

    bootstrap = reference_kafka.bootstrap_servers
    message = _refusal(_source_options(bootstrap, tmp_path))
    for words in (
        f"cluster at {bootstrap}",
        "KIP-1289",
        f"TxnShareAcknowledge (API {int(ApiKey.TXN_SHARE_ACKNOWLEDGE)}",
        'option("deliverySemantics", "at-least-once")',
        'format("kafka") source and a consumer group',
        "ExactlyOnce sink",
    ):
        assert words in message, message
    # The opt-in passes the check: share groups are on.
    alo = _source_options(bootstrap, tmp_path, deliverySemantics="at-least-once")
    assert ShareDataSource(alo).schema() == schema_ddl()

    # New ApiVersions connections see the feature gone (the share APIs stay advertised).
    with _share_groups_disabled(bootstrap):
        for options in (_source_options(bootstrap, tmp_path), alo):
            message = _refusal(options)
            assert "share groups (KIP-932) off" in message, message
            assert "share.version feature is not enabled" in message, message
            assert "upgrade --feature share.version=1" in message, message


# -- at least once, with a driver SIGKILL ------------------------------------------------------

RECORDS = 120
LOCK_MS = 15_000  # Kafka's minimum (group.share.min.record.lock.duration.ms)


def _driver(
    bootstrap: str, topic: str, group: str, work: Path, *, hang: bool
) -> subprocess.Popen[bytes]:
    log = (work / "driver.log").open("ab")
    try:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.reference.share_alo_driver",
                bootstrap,
                topic,
                group,
                str(work / "checkpoint"),
                str(work / "out"),
                *(["--hang-at-data-batch", "2"] if hang else []),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        log.close()


def _wait_for(
    what: str,
    test: Callable[[], bool],
    timeout_s: float,
    driver: subprocess.Popen[bytes],
    work: Path,
) -> None:
    deadline = time.monotonic() + timeout_s
    while not test():
        if driver.poll() is not None or time.monotonic() > deadline:
            tail = (work / "driver.log").read_text(errors="replace")[-3000:]
            pytest.fail(f"{what} did not happen (driver exit {driver.poll()}):\n{tail}")
        time.sleep(0.5)


def _outputs(out: Path, batch: int | None = None) -> list[tuple[str, int]]:
    """(value, delivery count) of every output row (of one batch's files)."""
    rows = []
    for path in sorted(out.glob("*.txt" if batch is None else f"{batch:05d}-*.txt")):
        for line in path.read_text().splitlines():
            value, count = line.split()
            rows.append((value, int(count)))
    return rows


@pytest.mark.spark
@pytest.mark.timeout(300)
def test_at_least_once_query_survives_driver_sigkill(
    reference_kafka: ReferenceKafka, tmp_path: Path
) -> None:
    bootstrap = reference_kafka.bootstrap_servers
    topic = f"alo-in-{uuid.uuid4().hex[:8]}"
    group = f"alo-{uuid.uuid4().hex[:8]}"
    out = tmp_path / "out"
    out.mkdir()
    with Admin(bootstrap) as admin:
        admin.create_topics([TopicSpec(topic, 1)])
        # A short lock: the killed driver's records come back within the test.
        admin.alter_group_configs(
            group,
            {"share.record.lock.duration.ms": str(LOCK_MS), "share.auto.offset.reset": "earliest"},
        )
    producer = TransactionalProducer({"bootstrap.servers": bootstrap})
    try:
        for i in range(RECORDS):
            producer.send(topic, f"v-{i:04d}".encode(), partition=0)
            if i % 10 == 9:
                producer.flush()  # small batches: a batch of the query takes ~40 records
    finally:
        producer.close()
    values = {f"v-{i:04d}" for i in range(RECORDS)}

    # Run 1: the first batch with records is committed and acknowledged; the second is
    # written, then the driver is SIGKILLed before Spark's commit of it.
    first = _driver(bootstrap, topic, group, tmp_path, hang=True)
    try:
        _wait_for("batch 1", (out / "hanging").exists, 150, first, tmp_path)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    first_batches = sorted({int(p.name.split("-")[0]) for p in out.glob("*.txt")})
    assert len(first_batches) == 2, first_batches
    committed = {v for v, _ in _outputs(out, first_batches[0])}
    hung = {v for v, _ in _outputs(out, first_batches[1])}  # written, never committed

    # Run 2 (same checkpoint): re-runs batch 1, drains the topic; batch 1's records come
    # back when the dead member's locks expire.
    with Admin(bootstrap) as admin:

        def drained() -> bool:
            # Kafka persists the start offset with the next state write; the lag (KIP-1226)
            # already counts acknowledged records past it: 0 = nothing acquired or unread.
            offsets = admin.describe_share_group_offsets(group, [topic])
            return [(o.start_offset >= 0, o.lag) for o in offsets] == [(True, 0)]

        second = _driver(bootstrap, topic, group, tmp_path, hang=False)
        try:
            _wait_for("every record acknowledged", drained, 150, second, tmp_path)
            (out / "stop").touch()
            second.wait(60)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(second.pid, signal.SIGKILL)
            second.wait()
        assert drained()
        assert second.returncode == 0

    rows = _outputs(out)
    assert {v for v, _ in rows} == values  # every record at least once, nothing else
    times = Counter(v for v, _ in rows)
    # The uncommitted batch came back (its locks expired), a committed one did not.
    assert all(times[v] >= 2 for v in hung), sorted(v for v in hung if times[v] < 2)
    assert all(times[v] == 1 for v in committed)
    assert any(count > 1 for v, count in rows if v in hung)
