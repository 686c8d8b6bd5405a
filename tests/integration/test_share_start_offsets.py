"""Share start offsets as Kafka reports them, across a real broker restart (kill -9).

Kafka's DescribeShareGroupOffsets shows the persisted share state: start offset -1 until the
first acknowledgement is written, then the start offset before each write, with a lag that
leaves out the records delivered from it.  The records delivered after a restart must not
depend on that lag: the state read back resumes exactly where the group was.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Producer

from coordinator.launcher import LocalBroker
from producer.admin import Admin
from tests.interop.test_share_consumer import consumer, explicit_reader, poll_until, setup_topic
from tests.share_setup import FAST_LOCKS

pytestmark = pytest.mark.integration


def _offsets(bootstrap: str, group: str, topic: str) -> tuple[int, int]:
    with Admin(bootstrap) as admin:
        (offset,) = admin.describe_share_group_offsets(group, [topic])
    return offset.start_offset, offset.lag


def _produce(bootstrap: str, topic: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value=value.encode(), partition=0)
    assert producer.flush(30) == 0


def test_restart_keeps_the_reported_offsets_and_resumes_where_the_group_was(
    tmp_path: Path,
) -> None:
    broker = LocalBroker(data_dir=tmp_path / "d", config=FAST_LOCKS).start()
    try:
        b = broker.bootstrap_servers
        topic, old, first = explicit_reader(b, "restarted", 10)
        assert len(first) == 10
        assert _offsets(b, "restarted", topic) == (-1, -1)  # nothing acknowledged yet
        for m in first:
            if m.offset() < 4:
                old.acknowledge(m, AcknowledgeType.ACCEPT)
            elif m.offset() < 6:
                old.acknowledge(m, AcknowledgeType.RELEASE)
            # 6..9 stay acquired
        old.commit_sync(10)
        # The write carried the start offset before it (0); 0-3 are delivered: lag 10-0-4.
        assert _offsets(b, "restarted", topic) == (0, 6)

        broker.kill()
        broker.start()
        assert _offsets(b, "restarted", topic) == (0, 6)  # read back as written

        fresh = consumer(b, "restarted", "explicit")
        fresh.subscribe([topic])
        again = poll_until(fresh, 6, timeout_s=30)
        assert sorted(m.offset() for m in again) == [4, 5, 6, 7, 8, 9]
        for m in again:
            fresh.acknowledge(m, AcknowledgeType.ACCEPT)
        fresh.commit_sync(10)
        # The state read back moved the start past 0-3 in memory: the next write carried 4.
        assert _offsets(b, "restarted", topic) == (4, 0)
        assert poll_until(fresh, 1, timeout_s=2) == []
        fresh.close()
        old.close()
    finally:
        broker.stop()


def test_latest_start_survives_a_restart_before_any_acknowledgement(tmp_path: Path) -> None:
    """Kafka reports -1 until the first acknowledgement; the position "latest" chose is still
    kept, so a record acquired but not acknowledged before the restart is delivered again
    (Kafka 4.4 would take "latest" afresh and skip it)."""
    broker = LocalBroker(data_dir=tmp_path / "d", config=FAST_LOCKS).start()
    try:
        b = broker.bootstrap_servers
        topic = setup_topic(b, 1, 3, "latest", **{"share.auto.offset.reset": "latest"})
        old = consumer(b, "latest", "explicit")
        old.subscribe([topic])
        deadline = time.monotonic() + 30
        got: list[Any] = []
        while not got and time.monotonic() < deadline:
            # Until the share partition is read (at "latest") the record is not delivered.
            _produce(b, topic, ["x"])
            got = poll_until(old, 1, timeout_s=2)
        assert got
        start = min(m.offset() for m in got)  # where "latest" put the group
        assert start >= 3
        assert _offsets(b, "latest", topic) == (-1, -1)

        broker.kill()
        old.close()  # while the broker is down: it cannot take the record again
        broker.start()
        _produce(b, topic, ["after"])
        assert _offsets(b, "latest", topic) == (-1, -1)
        fresh = consumer(b, "latest")  # implicit: each poll accepts the one before
        fresh.subscribe([topic])
        again = poll_until(fresh, 100, timeout_s=8)
        offsets = sorted(m.offset() for m in again)
        assert offsets[0] == start  # the first record after "latest" comes back
        assert offsets == list(range(start, offsets[-1] + 1))
        fresh.close()
    finally:
        broker.stop()
