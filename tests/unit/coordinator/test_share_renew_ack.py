"""IsRenewAck on ShareFetch and ShareAcknowledge, checked as Kafka 4.4's KafkaApis checks it."""

from __future__ import annotations

from coordinator.share.manager import PartitionAcks
from coordinator.share.share_partition import AckBatch
from coordinator.share_fetch import ShareFetchRequest, ShareSessionKey, renew_fetch_error
from tests.unit.coordinator.test_share_manager import join, make_core, produce
from txn.errors import ErrorCode
from txn.ids import TopicIdPartition

RENEW = 4


def _renew(**limits: int) -> ShareFetchRequest:
    return ShareFetchRequest(ShareSessionKey("g", "m1", 1), [], renew_ack=True, **limits)


def test_renew_fetch_limits_must_be_zero() -> None:
    assert renew_fetch_error(_renew(min_bytes=0)) is None
    assert renew_fetch_error(_renew(max_bytes=5, min_bytes=1, max_records=0, max_wait_ms=3)) == (
        "maxBytes must be set to 0, minBytes must be set to 0, maxWaitMs must be set to 0, "
        "if isRenewAck is true."
    )
    plain = ShareFetchRequest(ShareSessionKey("g", "m1", 1), [], max_bytes=5)
    assert renew_fetch_error(plain) is None


def _setup() -> tuple[object, TopicIdPartition]:
    core = make_core()
    core.create_topic("t", 1, 1)
    produce(core, "t", 3)
    join(core, "g", "m1", "t")
    tip = TopicIdPartition(core.topics.get("t").topic_id, 0)  # type: ignore[union-attr]
    return core, tip


def test_renewing_fetch_refused_with_limits_and_acquires_nothing() -> None:
    core, tip = _setup()
    fetches = core.share_fetches  # type: ignore[attr-defined]
    first = fetches.fetch(ShareFetchRequest(ShareSessionKey("g", "m1", 0), [tip], max_wait_ms=0))
    while first.step() is not None:
        pass
    assert first.outcome.acquired_count == 3
    bad = fetches.fetch(_renew(max_records=10, min_bytes=0))
    assert bad.outcome.error is ErrorCode.INVALID_REQUEST
    assert bad.outcome.error_message is None and bad.lock_ms == 0
    acks = [PartitionAcks(tip, [AckBatch(0, 2, [RENEW])])]
    renew = ShareFetchRequest(
        ShareSessionKey("g", "m1", 1), [], acks=acks, min_bytes=0, renew_ack=True
    )
    poll = fetches.fetch(renew)
    assert poll.step() is None  # nothing to acquire: answered at once
    assert poll.outcome.error is ErrorCode.NONE
    assert poll.outcome.partitions[tip].ack_error is ErrorCode.NONE
    assert poll.outcome.acquired_count == 0


def test_renew_type_needs_is_renew_ack() -> None:
    core, tip = _setup()
    fetches = core.share_fetches  # type: ignore[attr-defined]
    first = fetches.fetch(ShareFetchRequest(ShareSessionKey("g", "m1", 0), [tip], max_wait_ms=0))
    while first.step() is not None:
        pass
    acks = [PartitionAcks(tip, [AckBatch(0, 2, [RENEW])])]
    refused = fetches.acknowledge(ShareSessionKey("g", "m1", 1), acks)
    assert refused.results == {tip: ErrorCode.INVALID_REQUEST}
    taken = fetches.acknowledge(ShareSessionKey("g", "m1", 2), acks, renew_ack=True)
    assert taken.results == {tip: ErrorCode.NONE}
