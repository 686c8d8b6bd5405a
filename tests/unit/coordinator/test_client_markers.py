"""WriteTxnMarkers from a client (``coordinator.protocol.client_markers``)."""

from __future__ import annotations

import random

from coordinator.broker import BrokerCore
from coordinator.log.memory_log import MemoryStorage
from coordinator.marker_channel import TxnMarker
from coordinator.protocol.client_markers import write_client_markers
from txn.batch import ControlType
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import GROUP_METADATA_TOPIC, TopicPartition

T0 = 1_700_000_000_000


def test_abort_of_transactional_offsets_and_unknown_partitions() -> None:
    core = BrokerCore(MemoryStorage(), ManualClock(T0), BrokerConfig(), random.Random(1))
    assert core.create_topic("t", 1, 1).error is ErrorCode.NONE
    started = core.txn_coordinator.init_producer_id("tx", 60_000)
    pid, epoch = started.producer_id, started.producer_epoch
    assert core.add_offsets_to_txn("tx", pid, epoch) is ErrorCode.NONE
    tp = TopicPartition("t", 0)
    staged = core.txn_offset_commit("tx", pid, epoch, "g", -1, "", None, {tp: (5, -1, None)})
    assert staged == {tp: ErrorCode.NONE}
    assert core.groups.fetch_offsets("g", [tp], True)[1][tp].error is (
        ErrorCode.UNSTABLE_OFFSET_COMMIT
    )
    core.internal_topics.create(GROUP_METADATA_TOPIC, T0)
    offsets = core.consumer_offsets_partition
    other = TopicPartition(GROUP_METADATA_TOPIC, 0)  # listed; no transactional records here
    missing = [TopicPartition(GROUP_METADATA_TOPIC, 999), TopicPartition("none", 0)]
    marker = TxnMarker("", pid, epoch, 0, ControlType.ABORT, (offsets, other, *missing))
    assert write_client_markers(core, marker) == {
        offsets: ErrorCode.NONE,
        other: ErrorCode.NONE,
        missing[0]: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        missing[1]: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    fetched = core.groups.fetch_offsets("g", [tp], True)[1][tp]
    assert (fetched.error, fetched.offset) == (ErrorCode.NONE, -1)  # the staged offset dropped
