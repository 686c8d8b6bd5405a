"""The example task of docs/sink.md runs as written, through a real worker and broker."""

from __future__ import annotations

import re
import sqlite3
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from coordinator.launcher import LocalBroker
from producer.sink import SinkWorker
from tests.integration.sink_helpers import create_topics, read_topic, wait_for

pytestmark = pytest.mark.integration

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "sink.md"


@pytest.fixture
def example_module() -> Iterator[str]:
    text = GUIDE.read_text(encoding="utf-8")
    block = re.search(r"<!-- example: upsert -->\n```python\n(.*?)```", text, re.S)
    assert block, "the upsert example is missing from docs/sink.md"
    module = types.ModuleType("warehouse_sink")
    exec(compile(block.group(1), str(GUIDE), "exec"), module.__dict__)  # our own docs
    sys.modules["warehouse_sink"] = module
    yield "warehouse_sink"
    del sys.modules["warehouse_sink"]


def test_the_guide_example_upserts_and_dead_letters(
    broker: LocalBroker, tmp_path: Path, example_module: str
) -> None:
    bs = broker.bootstrap_servers
    create_topics(bs, ("orders", 3))
    stock = Producer({"bootstrap.servers": bs})
    for i in range(50):
        stock.produce("orders", key=f"order-{i % 20}".encode(), value=f"state-{i}".encode())
    stock.produce("orders", key=None, value=b"no key")
    assert stock.flush(10) == 0
    database = tmp_path / "warehouse.db"
    config = {
        "bootstrap.servers": bs,
        "consumer.group.protocol": "share",
        "name": "orders-to-warehouse",
        "connector.class": f"{example_module}.SqliteUpsertSink",
        "tasks.max": "2",
        "topics": "orders",
        "database": str(database),
        "table": "orders",
        "errors.deadletterqueue.topic.name": "orders-dlq",
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true",
    }
    with SinkWorker(config) as worker:
        wait_for(lambda: worker.stats.snapshot().acquired >= 51, 20, "51 records")
        wait_for(lambda: worker.stats.snapshot().dlq >= 1, 10, "the keyless record in the DLQ")
    with sqlite3.connect(database) as db:
        rows = dict(db.execute("SELECT k, v FROM orders").fetchall())
    assert set(rows) == {f"order-{i}" for i in range(20)}
    (letter,) = read_topic(bs, "orders-dlq", 1, expect_at_least=1, isolation="read_uncommitted")
    assert letter.value() == b"no key"
    headers = dict(letter.headers())
    assert headers["__connect.errors.exception.class.name"] == b"builtins.ValueError"
