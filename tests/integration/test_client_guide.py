"""The consume-transform-produce example of docs/client.md runs as written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from coordinator.launcher import LocalBroker
from producer.admin import Admin, TopicSpec
from tests.interop.test_stock_clients import read_all

pytestmark = pytest.mark.integration

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "client.md"


def load_example(name: str) -> dict[str, Any]:
    text = GUIDE.read_text()
    block = re.search(rf"<!-- example: {name} -->\n```python\n(.*?)```", text, re.S)
    assert block, f"example {name} not found in {GUIDE}"
    namespace: dict[str, Any] = {}
    exec(compile(block.group(1), str(GUIDE), "exec"), namespace)  # our own docs
    return namespace


def test_consume_transform_produce_example(broker: LocalBroker) -> None:
    b = broker.bootstrap_servers
    with Admin(b) as admin:
        admin.create_topics([TopicSpec("guide-in", 1)])
    stock = Producer({"bootstrap.servers": b})
    for i in range(30):
        stock.produce("guide-in", value=f"x{i}".encode())
    assert stock.flush(10) == 0
    copy = load_example("ctp")["copy_exactly_once"]
    assert copy(b, "guide", "guide-in", "guide-out", 30) == 30
    out = read_all(b, "guide-out", 1, "read_committed", expect_at_least=30)
    assert sorted(out) == sorted(f"X{i}".encode() for i in range(30))
