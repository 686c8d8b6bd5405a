"""DescribeProducers' view of a coordinator log: the producers of its transactional records."""

from __future__ import annotations

from coordinator.internal_producers import producers_of
from coordinator.log.memory_log import MemoryStorage
from coordinator.log.storage import LogConfig
from txn.batch import ControlType, build_batch, build_control_batch

DAY_MS = 86_400_000


def test_open_then_committed_transaction_and_expiry() -> None:
    log = MemoryStorage().open_log("__consumer_offsets", 1, LogConfig())
    log.append(build_batch([(b"k", b"plain")], timestamp_ms=1000), 1000)  # no producer
    txn = build_batch(
        [(b"a", b"1"), (b"b", b"2")],
        timestamp_ms=2000,
        producer_id=7,
        producer_epoch=3,
        transactional=True,
    )
    log.append(txn, 2000)
    (opened,) = producers_of(log, 2000, DAY_MS)
    assert (opened.producer_id, opened.producer_epoch) == (7, 3)
    # As Kafka's state of a coordinator batch (base sequence 0): two records, last sequence 1.
    assert opened.last_sequence == 1
    assert opened.current_txn_start_offset == 1
    assert opened.coordinator_epoch == -1
    marker = build_control_batch(
        ControlType.COMMIT,
        producer_id=7,
        producer_epoch=3,
        coordinator_epoch=4,
        timestamp_ms=3000,
    )
    log.append(marker, 3000)
    (ended,) = producers_of(log, 3000, DAY_MS)
    assert ended.current_txn_start_offset == -1
    assert ended.coordinator_epoch == 4
    assert ended.last_timestamp == 3000
    assert producers_of(log, 3000 + DAY_MS + 1, DAY_MS) == []  # expired, as Kafka's
    assert producers_of(None, 0, DAY_MS) == []
