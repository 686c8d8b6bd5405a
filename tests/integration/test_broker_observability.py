"""What an operator sees of a running broker: Prometheus metrics and readable logs."""

from __future__ import annotations

import http.server
import json
import os
import re
import subprocess
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import ClassVar

import pytest
from confluent_kafka import Producer

from coordinator.launcher import LocalBroker
from producer import Admin
from tests.sharetxn_cli import run_cli
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


def http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


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
        assert figures['sharetxn_offset_commits_total{group_id="watchers"}'] == 1
        assert figures['sharetxn_request_total{request="Produce"}'] >= 1
        assert figures['sharetxn_request_total{request="EndTxn"}'] == 1
        assert figures["sharetxn_bytes_in_bytes_total"] > 100
        assert figures["sharetxn_bytes_out_bytes_total"] > 100
        assert figures["sharetxn_partition_count"] >= 1
        assert figures["sharetxn_transactions_open"] == 0
        assert figures['sharetxn_request_total{request="ApiVersions"}'] >= 1
        assert figures["sharetxn_connection_count"] >= 1
        assert any(k.startswith("sharetxn_request_time_milliseconds_count") for k in figures)
        # every broker metric carries the prefix (the process and target_info series aside)
        ours = [k for k in figures if not k.startswith(("python_", "process_", "target_info"))]
        assert ours and all(k.startswith("sharetxn_") for k in ours)
        assert http_status(url.removesuffix("/metrics") + "/") == 200  # a hint to /metrics
        for path in ("/metric", "/metrics/x", "/favicon.ico", "/anything"):
            assert http_status(url.removesuffix("/metrics") + path) == 404, path
        log = "\n".join(broker.output)
    assert "sharetxn broker starting in" in log and "transaction.max.timeout.ms = " in log
    assert "auto-created topic watched with 1 partition(s)" in log
    assert re.search(r"transaction of 'observed' committed \(producer id \d+, epoch 0\)", log)


def run_broker(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli("broker", *args, timeout=60, env={**os.environ, **(env or {})})


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


class _Collector(http.server.BaseHTTPRequestHandler):
    """A stand-in OTLP/HTTP collector: records the paths and sizes it is sent."""

    received: ClassVar[list[tuple[str, int]]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(length)
        self.received.append((self.path, length))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_args: object) -> None:
        pass


def test_otlp_exporter_pushes_metrics(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    server = http.server.HTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    env = {
        "OTEL_METRICS_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_port}",
        "OTEL_METRIC_EXPORT_INTERVAL": "200",
    }
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with LocalBroker(data_dir=tmp_path / "d") as broker:
            Producer({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10)
            for _ in range(100):
                if _Collector.received:
                    break
                threading.Event().wait(0.1)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.shutdown()
        server.server_close()
    assert _Collector.received and _Collector.received[0][0] == "/v1/metrics"
