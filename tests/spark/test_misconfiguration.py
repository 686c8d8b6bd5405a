"""Misconfigured queries fail fast with a message that says what to change."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from coordinator.launcher import LocalBroker
from producer.admin import Admin, TopicSpec
from producer.spark.errors import SparkConfigError
from producer.spark.fs_server import CheckpointServer
from producer.spark.options import SourceOptions
from producer.twophase.checkpoint_fs import LOCAL

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.timeout(400)]

DRIVER = Path(__file__).parent / "misconfig_driver.py"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    with LocalBroker(data_dir=tmp_path_factory.mktemp("misconfig")) as running:
        with Admin(running.bootstrap_servers) as admin:
            admin.create_topics([TopicSpec("in", 1), TopicSpec("out", 1)])
            admin.alter_group_configs("g", {"share.auto.offset.reset": "earliest"})
            admin.alter_group_configs("g-spec", {"share.auto.offset.reset": "earliest"})
        producer = Producer({"bootstrap.servers": running.bootstrap_servers})
        for i in range(10):
            producer.produce("in", f"v{i}".encode())
        producer.flush()
        yield running


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("misconfig-queries")


@pytest.fixture(scope="module")
def results(broker: LocalBroker, workdir: Path) -> dict[str, Any]:
    """Every misconfigured query's outcome, from one driver (one JVM for all the cases)."""
    done = subprocess.run(
        [sys.executable, str(DRIVER), broker.bootstrap_servers, "in", str(workdir)],
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULTS ")]
    assert lines, done.stdout[-3000:] + done.stderr[-3000:]
    found: dict[str, Any] = json.loads(lines[-1].removeprefix("RESULTS "))
    return found


def test_option_errors_name_the_option() -> None:
    base = {"kafka.bootstrap.servers": "h:1", "group.id": "g", "subscribe": "t"}
    with pytest.raises(SparkConfigError, match="checkpointLocation"):
        SourceOptions.parse(base)
    with pytest.raises(SparkConfigError, match=r"'group\.id' is required"):
        SourceOptions.parse({**base, "group.id": " ", "checkpointLocation": "/c"})
    with pytest.raises(SparkConfigError, match="unknown option 'maxRecords'"):
        SourceOptions.parse({**base, "checkpointLocation": "/c", "maxRecords": "5"})
    with pytest.raises(SparkConfigError, match="positive integer"):
        SourceOptions.parse({**base, "checkpointLocation": "/c", "numPartitions": "0"})
    # Without the driver's checkpoint server (ExactlyOnce.read_stream) only local paths.
    with pytest.raises(SparkConfigError, match=r"ExactlyOnce\.read_stream"):
        SourceOptions.parse({**base, "checkpointLocation": "s3a://bucket/chk"})
    with pytest.raises(SparkConfigError, match="go together"):
        SourceOptions.parse(
            {**base, "checkpointLocation": "s3a://b/c", "sharetxn.checkpointServer": "h:1"}
        )
    served = SourceOptions.parse(
        {
            **base,
            "checkpointLocation": "s3a://b/c",
            "sharetxn.checkpointServer": "127.0.0.1:1",
            "sharetxn.checkpointToken": "secret",
        }
    )
    assert served.checkpoint == "s3a://b/c"
    assert served.checkpoint_server == ("127.0.0.1:1", "secret")
    opts = SourceOptions.parse({**base, "CHECKPOINTLOCATION": "file:///tmp/c", "subscribe": "a,b"})
    assert opts.topics == ("a", "b") and str(opts.checkpoint) == "/tmp/c"
    assert not opts.at_least_once  # exactly-once unless the user opts in
    with pytest.raises(SparkConfigError, match="deliverySemantics must be exactly-once or"):
        SourceOptions.parse({**base, "checkpointLocation": "/c", "deliverySemantics": "once"})
    alo = {**base, "checkpointLocation": "/c", "deliverySemantics": "At-Least-Once"}
    assert SourceOptions.parse(alo).at_least_once


def test_misconfigured_queries_fail_fast(results: dict[str, Any], workdir: Path) -> None:
    no_checkpoint = results["no_checkpoint"]["error"]
    assert no_checkpoint and "checkpointLocation' is required" in no_checkpoint
    unknown_group = results["unknown_group"]["error"]
    assert unknown_group and "share group 'no-such-group' does not exist" in unknown_group
    assert "startingOffsets" in unknown_group
    unknown_topic = results["unknown_topic"]["error"]
    assert unknown_topic and "no-such-topic do not exist" in unknown_topic
    mismatch = results["sink_checkpoint_mismatch"]["error"]
    assert mismatch and "must be the query's checkpointLocation" in mismatch
    assert results["empty_batch"]["error"] is None, results["empty_batch"]  # empty is fine
    for case in ("write_stream_dropped_receipts", "batch_dropped_receipts"):
        error = results[case]["error"]
        assert error and "reads the kafka-share source" in error, (case, error)
        assert "receipt_transactional_id" in error, error
    for case, option in (
        ("read_stream_prefix", "transactional.id.prefix='other'"),
        ("read_stream_checkpoint", "checkpointLocation="),
        ("write_stream_checkpoint", "checkpointLocation"),
    ):
        error = results[case]["error"]
        assert error and option in error and "set it once, on ExactlyOnce" in error, error
    assert not (workdir / "once" / "offsets").exists()  # refused before any query started
    for case in ("unknown_group", "unknown_topic"):
        # Failed at start: Spark never planned a batch.
        assert not (workdir / case / "offsets" / "0").exists(), case


def test_speculation_is_refused_before_the_query_starts(
    results: dict[str, Any], workdir: Path
) -> None:
    error = results["speculation"]["error"]
    assert error and "spark.speculation is on" in error
    assert not (workdir / "speculation" / "offsets").exists()  # refused before any batch


def test_spark_connect_is_refused_with_the_reason() -> None:
    from producer.spark import register  # noqa: PLC0415
    from producer.spark.sink import ExactlyOnce  # noqa: PLC0415

    # A stand-in for pyspark.sql.connect's session (importing it needs pandas and grpc):
    # detection is by the class's module, as PySpark's own checks do.
    connect_session = type("SparkSession", (), {"__module__": "pyspark.sql.connect.session"})()
    connect_df = type("DataFrame", (), {"__module__": "pyspark.sql.connect.dataframe"})()
    eos = ExactlyOnce("h:1", "/tmp/chk")
    calls = [
        lambda: register(connect_session),  # type: ignore[arg-type]
        lambda: eos.read_stream(connect_session, subscribe="t", group_id="g"),  # type: ignore[arg-type]
        lambda: eos.write_stream(connect_df, lambda d, n: None),  # type: ignore[arg-type]
        lambda: eos.open_checkpoint(connect_session),  # type: ignore[arg-type]
    ]
    for call in calls:
        with pytest.raises(SparkConfigError, match="Spark Connect is not supported") as info:
            call()
        assert "separate Python process" in str(info.value)


def test_a_source_configured_apart_from_its_exactly_once_is_refused() -> None:
    from producer.spark.source import ShareStreamReader  # noqa: PLC0415

    server = CheckpointServer(
        LOCAL, {"checkpointLocation": "s3a://b/chk", "transactional.id.prefix": "app"}
    )
    try:
        base = {
            "kafka.bootstrap.servers": "h:1",
            "group.id": "g",
            "subscribe": "t",
            "sharetxn.checkpointServer": server.address,
            "sharetxn.checkpointToken": server.token,
        }
        for options, wrong in (
            ({"checkpointLocation": "s3a://b/other", "transactional.id.prefix": "app"}, "chk"),
            ({"checkpointLocation": "s3a://b/chk", "transactional.id.prefix": "x"}, "prefix"),
        ):
            reader = ShareStreamReader(SourceOptions.parse({**base, **options}))
            with pytest.raises(SparkConfigError, match="configure it once") as info:
                reader._check_server()
            assert wrong in str(info.value)
        ok = {"checkpointLocation": "s3a://b/chk", "transactional.id.prefix": "app"}
        ShareStreamReader(SourceOptions.parse({**base, **ok}))._check_server()
    finally:
        server.close()
