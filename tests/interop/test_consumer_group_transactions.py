"""Offsets in transactions: stock send_offsets_to_transaction, and one transaction carrying
outputs, consumer-group offsets and share acknowledgements together."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from coordinator.launcher import LocalBroker
from producer import (
    Admin,
    ConsumerGroupMetadata,
    ShareConsumer,
    TransactionalProducer,
)
from tests.interop.test_consumer_groups import FAST_GROUPS, topic_with_records
from tests.interop.test_stock_clients import create_topic, read_all
from txn.ids import TopicPartition

pytestmark = pytest.mark.interop

COPIER = """
import sys, time
from confluent_kafka import Consumer, Producer
bootstrap, group, src, dst = sys.argv[1:5]
stop_after = int(sys.argv[5])
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
              "enable.auto.commit": False, "isolation.level": "read_committed",
              "session.timeout.ms": 6000})
c.subscribe([src])
p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "copier"})
p.init_transactions(30)
copied, idle = 0, 0
while idle < 20:
    msgs = [m for m in c.consume(10, 0.3) if m.error() is None]
    if not msgs:
        idle += 1
        continue
    idle = 0
    p.begin_transaction()
    for m in msgs:
        p.produce(dst, m.value())
    p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
    if copied + len(msgs) > stop_after:
        p.flush(30)
        print("killing myself mid-transaction", flush=True)
        import os, signal; os.kill(os.getpid(), signal.SIGKILL)
    p.commit_transaction(30)
    copied += len(msgs)
print("done", copied, flush=True)
"""


@pytest.fixture
def gbroker(tmp_path: Path) -> Iterator[LocalBroker]:
    config = {**FAST_GROUPS, "transaction.max.timeout.ms": "60000"}
    with LocalBroker(data_dir=tmp_path / "data", config=config) as running:
        yield running


def run_copier(b: str, src: str, dst: str, stop_after: int) -> str:
    done = subprocess.run(
        [sys.executable, "-c", COPIER, b, "copy-group", src, dst, str(stop_after)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.stdout


def test_stock_copy_with_offsets_in_transactions_survives_a_killed_copier(
    gbroker: LocalBroker,
) -> None:
    b = gbroker.bootstrap_servers
    src = topic_with_records(b, 2, 200)
    dst = f"out-{uuid.uuid4().hex[:6]}"
    create_topic(b, dst, 2)
    assert "killing myself" in run_copier(b, src, dst, stop_after=90)
    # the new copier fences the dead one's transaction (same transactional.id), reads the
    # group's committed offsets and copies the rest
    assert "done" in run_copier(b, src, dst, stop_after=10**9)
    out = read_all(b, dst, 2, "read_committed", expect_at_least=200)
    assert sorted(out) == sorted(f"v{i}".encode() for i in range(200))  # exactly once


def _outputs(b: str, topic: str) -> list[bytes]:
    return read_all(b, topic, 1, "read_committed")


@pytest.mark.parametrize("commit", [True, False])
def test_one_transaction_carries_outputs_offsets_and_share_acks(
    gbroker: LocalBroker, commit: bool
) -> None:
    b = gbroker.bootstrap_servers
    orders = topic_with_records(b, 1, 5)  # read by a share group
    payments = topic_with_records(b, 1, 5)  # read by a consumer group
    out = f"out-{uuid.uuid4().hex[:6]}"
    create_topic(b, out, 1)
    with Admin(b) as admin:
        admin.alter_group_configs("shares", {"share.auto.offset.reset": "earliest"})
    share = ShareConsumer(
        {
            "bootstrap.servers": b,
            "group.id": "shares",
            "share.acknowledgement.mode": "transactional",
        }
    )
    share.subscribe([orders])
    stock = Consumer(
        {
            "bootstrap.servers": b,
            "group.id": "readers",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    stock.subscribe([payments])
    got: list[object] = []
    deadline = time.monotonic() + 30
    while len(got) < 5 and time.monotonic() < deadline:
        got += share.poll(0.5)
    consumed = 0
    while consumed < 5 and time.monotonic() < deadline:
        m = stock.poll(0.3)
        consumed += m is not None and m.error() is None
    producer = TransactionalProducer({"bootstrap.servers": b, "transactional.id": "all-three"})
    producer.init_transactions()
    producer.begin_transaction()
    for r in got:
        producer.send(out, r.value)  # type: ignore[attr-defined]
        share.acknowledge(r)  # type: ignore[arg-type]
    producer.send_share_acks_to_transaction(share.acknowledgements(), share.group_metadata())
    producer.send_offsets_to_transaction(
        {TopicPartition(payments, 0): 5}, ConsumerGroupMetadata("readers")
    )
    with Admin(b) as admin:
        # before the end of the transaction nothing of it is visible
        assert _outputs(b, out) == []
        assert admin.list_consumer_group_offsets("readers") == {}
    if commit:
        producer.commit_transaction()
    else:
        producer.abort_transaction()
    producer.close()
    stock.close()
    with Admin(b) as admin:
        offsets = admin.list_consumer_group_offsets("readers", require_stable=True)
        (start,) = admin.describe_share_group_offsets("shares")
    if commit:
        assert sorted(_outputs(b, out)) == sorted(f"v{i}".encode() for i in range(5))
        assert offsets == {TopicPartition(payments, 0): 5}
        # every share record acknowledged: Kafka's lag leaves out the records delivered
        assert start.start_offset >= 0 and start.lag == 0
    else:
        assert _outputs(b, out) == []
        assert offsets == {}
        assert start.start_offset == 0  # the records are available again
        again: list[object] = []
        deadline = time.monotonic() + 30
        while len(again) < 5 and time.monotonic() < deadline:
            batch = share.poll(0.5)
            for r in batch:
                share.acknowledge(r)
            share.acknowledgements()  # recorded, never sent: this consumer only looks
            again += batch
        assert len(again) == 5  # the aborted records came back
    share.close()
