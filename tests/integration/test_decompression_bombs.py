"""A decompression bomb sent to a compacted topic (issue 25): refused, the broker's memory
stays bounded, and the broker keeps serving."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coordinator.launcher import LocalBroker
from producer.admin import Admin, TopicSpec
from tests.bombs import bomb_batch
from tests.kafka_wire import WireClient
from txn.batch import build_batch
from txn.compression import Codec

pytestmark = pytest.mark.integration


def _status_kib(b: LocalBroker, field: str) -> int:
    assert b.process is not None
    for line in Path(f"/proc/{b.process.pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(field)


def _produce(client: WireClient, topic: str, records: bytes) -> Any:
    body = {
        "acks": -1,
        "timeout": 10000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
    }
    resp = client.request(0, 9, body)
    return resp.responses[0].partition_responses[0]


def test_a_zstd_bomb_on_a_compacted_topic_is_refused_without_the_memory(tmp_path: Path) -> None:
    with LocalBroker(data_dir=tmp_path / "data") as b:
        with Admin({"bootstrap.servers": b.bootstrap_servers}) as admin:
            admin.create_topics([TopicSpec("compacted", 1, 1, {"cleanup.policy": "compact"})])
        bomb = bomb_batch(Codec.ZSTD, 512)  # ~16 KB on the wire, 512 MiB of records
        assert len(bomb) < 64 * 1024
        client = WireClient(b.bootstrap_servers, timeout_s=60)
        try:
            peak_before = _status_kib(b, "VmHWM")
            answer = _produce(client, "compacted", bomb)
            assert int(answer.error_code) == 10  # MESSAGE_TOO_LARGE (RecordTooLargeException)
            # The bound is 64 x max.message.bytes (64 MiB by default), never the 512 MiB.
            assert _status_kib(b, "VmHWM") - peak_before < 110 * 1024
            # The connection and the topic still work.
            ok = build_batch([(b"k", b"v" * 100)], timestamp_ms=1, compression=Codec.ZSTD)
            assert int(_produce(client, "compacted", ok).error_code) == 0
        finally:
            client.close()
