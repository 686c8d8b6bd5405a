"""What the client library says while the broker is unreachable."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from coordinator.launcher import LocalBroker
from producer import Admin
from tests.integration.test_share_consumer_client import (
    consumer,
    new_group,
    poll_until,
    setup_topic,
)
from tests.share_setup import FAST_LOCKS
from txn.errors import InvalidConfigError, KafkaProtocolError

pytestmark = pytest.mark.integration


def test_share_consumer_poll_warns_while_the_broker_is_down(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="producer")
    with LocalBroker(data_dir=tmp_path / "d", config=FAST_LOCKS) as broker:
        group = new_group()
        topic = setup_topic(broker.bootstrap_servers, 1, 3, group)
        with consumer(broker.bootstrap_servers, group) as c:
            c.subscribe([topic])
            assert len(poll_until(c, 3)) == 3
            broker.kill()
            for _ in range(40):  # the heartbeat finds the coordinator gone
                assert c.poll(0.5) == []
                if "cannot reach the group coordinator" in caplog.text:
                    break
            assert "poll() returns no records until it can" in caplog.text
            broker.start()
            for _ in range(60):
                c.poll(0.5)
                if "reachable again" in caplog.text:
                    break
            assert "the group coordinator is reachable again" in caplog.text


def test_retries_say_what_they_wait_for(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="producer")
    admin = Admin({"bootstrap.servers": "127.0.0.1:9", "request.timeout.ms": 1500})
    with pytest.raises(KafkaProtocolError, match="cannot connect"):
        admin.list_topics()
    admin.close()
    assert "retrying after" in caplog.text and "Connection refused" in caplog.text


def test_unresolvable_bootstrap_fails_at_once() -> None:
    admin = Admin({"bootstrap.servers": "no-such-host.invalid:9092", "request.timeout.ms": 60000})
    with pytest.raises(InvalidConfigError, match="no resolvable bootstrap urls"):
        admin.list_topics()
    admin.close()
