"""What an operator sees of a running broker: Prometheus metrics and readable logs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Producer

from coordinator.launcher import LocalBroker
from producer import Admin
from txn.ids import TopicPartition

pytestmark = pytest.mark.integration


def scrape(url: str) -> dict[str, float]:
    """Prometheus text → {'name{labels}': value}, without the otel_scope labels."""
    with urllib.request.urlopen(url, timeout=10) as resp:
        text = resp.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, value = line.rsplit(" ", 1)
        name = re.sub(r'otel_scope_[a-z_]+="[^"]*",?', "", name).replace(",}", "}")
        out[name.replace("{}", "")] = float(value)
    return out


def test_metrics_endpoint_and_logs(tmp_path: Path) -> None:
    with LocalBroker(data_dir=tmp_path / "d", extra_args=["--metrics-port", "0"]) as broker:
        (line,) = [x for x in broker.output if x.startswith("sharetxn broker metrics on ")]
        url = line.rsplit(" ", 1)[1]
        producer = Producer(
            {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "observed"}
        )
        producer.init_transactions(30)
        producer.begin_transaction()
        for i in range(10):
            producer.produce("watched", f"v{i}".encode())
        producer.commit_transaction(30)
        with Admin(broker.bootstrap_servers) as admin:
            admin.alter_consumer_group_offsets("watchers", {TopicPartition("watched", 0): 4})
        figures = scrape(url)
        assert figures['offset_commits_total{group_id="watchers"}'] == 1
        assert figures['request_total{request="Produce"}'] >= 1
        assert figures['request_total{request="EndTxn"}'] == 1
        assert figures["bytes_in_bytes_total"] > 100 and figures["bytes_out_bytes_total"] > 100
        assert figures["partition_count"] >= 1
        assert figures["transactions_open"] == 0
        assert figures['request_total{request="ApiVersions"}'] >= 1
        assert figures["connection_count"] >= 1
        assert any(k.startswith("request_time_milliseconds_count") for k in figures)
        log = "\n".join(broker.output)
    assert "sharetxn broker starting in" in log and "transaction.max.timeout.ms = " in log
    assert "auto-created topic watched with 1 partition(s)" in log
    assert re.search(r"transaction of 'observed' committed \(producer id \d+, epoch 0\)", log)


def run_broker(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coordinator.cli", "broker", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_json_logs(tmp_path: Path) -> None:
    with LocalBroker(data_dir=tmp_path / "d", extra_args=["--log-format", "json"]) as broker:
        lines = [x for x in broker.output if x.startswith("{")]
    entries = [json.loads(x) for x in lines]
    assert entries and {"time", "level", "logger", "message"} <= set(entries[0])
    assert any("starting in" in e["message"] for e in entries)


def test_data_dir_that_is_a_file(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    done = run_broker("--data-dir", str(not_a_dir), "--listen", "127.0.0.1:0")
    assert done.returncode == 1
    assert "cannot use data directory" in done.stderr and "not a directory" in done.stderr
    assert "listen" not in done.stderr


def test_otlp_without_its_package_is_a_clear_error(tmp_path: Path) -> None:
    try:
        import opentelemetry.exporter.otlp.proto.http  # noqa: F401, PLC0415

        pytest.skip("the OTLP exporter is installed")
    except ImportError:
        pass
    done = run_broker(
        "--data-dir",
        str(tmp_path / "d"),
        "--listen",
        "127.0.0.1:0",
        env={"OTEL_METRICS_EXPORTER": "otlp"},
    )
    assert done.returncode == 1 and "sharetxn[otlp]" in done.stderr
