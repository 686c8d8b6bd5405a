"""Share-group state survives kill -9 of the broker."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType

from coordinator.launcher import LocalBroker
from tests.interop.test_share_consumer import consumer, explicit_reader, poll_until
from tests.share_setup import FAST_LOCKS

pytestmark = pytest.mark.integration


def test_kill_with_records_in_every_state(tmp_path: Path) -> None:
    broker = LocalBroker(data_dir=tmp_path / "d", config=FAST_LOCKS).start()
    try:
        b = broker.bootstrap_servers
        topic, old, first = explicit_reader(b, "durable", 20)
        assert len(first) == 20
        for m in first:
            offset = m.offset()
            if offset < 5:
                old.acknowledge(m, AcknowledgeType.ACCEPT)  # -> ACKNOWLEDGED
            elif offset < 10:
                old.acknowledge(m, AcknowledgeType.REJECT)  # -> ARCHIVED
            elif offset < 15:
                old.acknowledge(m, AcknowledgeType.RELEASE)  # -> AVAILABLE
            # 15..19 stay ACQUIRED
        old.commit_sync(10)

        broker.kill()
        broker.start()

        fresh = consumer(b, "durable", "explicit")
        fresh.subscribe([topic])
        again = poll_until(fresh, 10, timeout_s=30)
        offsets = sorted(m.offset() for m in again)
        assert offsets == list(range(10, 20))
        for m in again:
            fresh.acknowledge(m, AcknowledgeType.ACCEPT)
        fresh.commit_sync(10)
        assert poll_until(fresh, 1, timeout_s=2) == []
        fresh.close()
        old.close()
    finally:
        broker.stop()
