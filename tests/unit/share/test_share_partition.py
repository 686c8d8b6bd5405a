"""Share partition: reference scenarios 42-55, bad input, acknowledgement types and locks.

End offsets here are exclusive (SPEO = one past the last cached offset); where a
scenario quotes Kafka's inclusive ``endOffset()`` the test says so.
"""

from __future__ import annotations

import pytest

from coordinator.share.persister import PersisterStateBatch
from coordinator.share.share_partition import (
    AckBatch,
    SharePartition,
    SharePartitionConfig,
    SharePartitionState,
    validate_ack_batches,
)
from tests.unit.share.fakes_sp import (
    ACCEPT,
    ACKNOWLEDGED,
    ACQUIRED,
    ARCHIVED,
    AVAILABLE,
    GAP,
    REJECT,
    RELEASE,
    RENEW,
    DataLog,
    Events,
    FakePersister,
    ack,
    make_sp,
    ranges,
    rig,
    sb,
    snapshot,
    states,
)
from txn.errors import ErrorCode
from txn.share_state import RecordState

LOCK = 30_000
BIG = 1 << 20  # max_bytes that reads everything


def acquire(sp: SharePartition, member: str = "m1", n: int = 500) -> list[tuple[int, int, int]]:
    return ranges(sp.acquire(member, n, BIG))


# -- scenario 42/43: initialization ---------------------------------------------------------------


def test_42_initialize_from_persisted_state() -> None:
    log = DataLog()
    log.pad_to(5)
    log.append_batches(5, 5, 5)  # 5-9, 10-14, 15-19
    persister = FakePersister.with_state(
        5, [(5, 10, AVAILABLE, 2), (11, 15, ARCHIVED, 3)], state_epoch=3
    )
    sp = make_sp(log, persister)
    assert sp.state is SharePartitionState.ACTIVE
    assert sp.state_epoch == 3
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset) == (5, 16, 5)  # Kafka end 15
    assert sp.record_state(5) == (AVAILABLE, 2, "")
    assert sp.record_state(10) == (AVAILABLE, 2, "")
    assert sp.record_state(11) == (ARCHIVED, 3, "")
    assert sp.state_batches()[0].delivery_count == 2
    assert persister.writes == []  # a known start offset is not re-written
    assert persister.reads == [0]
    # Redelivery keeps the persisted count: 5-10 come back with dc 3.  The archived batch
    # 11-15 was delivered 3 times, the throttle limit of the default limit 5 (KAFKA-17541):
    # an unsplit batch that far along ends a ShareFetch that already acquired something.
    assert acquire(sp) == [(5, 10, 3)]
    assert acquire(sp) == [(16, 19, 1)]


def test_fresh_state_uses_auto_offset_reset_and_pins_it() -> None:
    log = DataLog()
    log.append_batches(5, 5)
    latest = FakePersister()
    sp = make_sp(log, latest)
    assert (sp.start_offset, sp.end_offset) == (10, 10)
    # As Kafka, the start offset stays -1 until the first acknowledgement is written; the
    # position is recorded as the reset offset, so a restart resumes there.
    assert [(w.start_offset, w.batches, w.reset_offset) for w in latest.writes] == [(-1, (), 10)]
    assert (latest.start_offset, latest.delivery_complete_count) == (-1, -1)
    assert make_sp(log, latest).start_offset == 10
    earliest = FakePersister()
    sp2 = make_sp(log, earliest, config=SharePartitionConfig(auto_offset_reset="earliest"))
    assert (sp2.start_offset, sp2.end_offset, sp2.next_fetch_offset) == (0, 0, 0)
    assert acquire(sp2, n=1) == [(0, 4, 1)]


def test_latest_under_read_committed_is_the_high_watermark() -> None:
    # As Apache Kafka 4.4: the records of a transaction open when the group starts lie below
    # its start offset, whichever way the transaction ends.
    log = DataLog()
    log.append(5)
    log.append_txn(pid=7)  # open transaction at 5-9
    sp = make_sp(log, config=SharePartitionConfig(isolation="read_committed"))
    assert sp.start_offset == 10
    sp2 = make_sp(log)
    assert sp2.start_offset == 10


def test_43_fenced_partition_cannot_initialize() -> None:
    sp = make_sp(DataLog(), initialize=False)
    sp.mark_fenced()
    assert sp.maybe_initialize() is ErrorCode.LEADER_NOT_AVAILABLE
    assert sp.state is SharePartitionState.FENCED


# How a persister error reaches the share partition's caller, on a read or a write alike.
PERSISTER_ERRORS = [
    (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER),
    (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.GROUP_ID_NOT_FOUND),
    (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    (ErrorCode.INVALID_REQUEST, ErrorCode.UNKNOWN_SERVER_ERROR),
]


@pytest.mark.parametrize(
    ("persister_error", "expected"),
    [
        *PERSISTER_ERRORS,
        (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_NOT_AVAILABLE),
        (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
        (ErrorCode.FENCED_STATE_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER),
    ],
)
def test_43_persister_errors_fail_initialization(
    persister_error: ErrorCode, expected: ErrorCode
) -> None:
    persister = FakePersister(read_error=persister_error)
    sp = make_sp(DataLog(), persister, initialize=False)
    assert sp.maybe_initialize() is expected
    assert sp.state is SharePartitionState.FAILED
    # A failed partition is not re-initialized: its owner replaces it.
    assert sp.maybe_initialize() is ErrorCode.UNKNOWN_SERVER_ERROR
    assert sp.acquire("m1", 10, BIG).error is ErrorCode.UNKNOWN_SERVER_ERROR


@pytest.mark.parametrize(
    "batches",
    [
        [(3, 6, AVAILABLE, 1)],  # below the start offset
        [(5, 8, AVAILABLE, 1), (8, 9, ARCHIVED, 1)],  # overlapping
    ],
)
def test_invalid_persisted_batches_fail_initialization(
    batches: list[tuple[int, int, RecordState, int]],
) -> None:
    persister = FakePersister(start_offset=5)
    persister.raw_batches = [PersisterStateBatch(f, la, int(st), dc) for f, la, st, dc in batches]
    sp = make_sp(DataLog(), persister, initialize=False)
    assert sp.maybe_initialize() is ErrorCode.UNKNOWN_SERVER_ERROR
    assert sp.state is SharePartitionState.FAILED


def test_initialization_gap_window_is_fetched_as_new_records() -> None:
    log = DataLog()
    log.pad_to(5)
    log.append_batches(5, 5, 5)  # 5-9, 10-14, 15-19
    # Start 5; only 8 (ACKNOWLEDGED) and 12-13 (AVAILABLE dc 3) are known.
    persister = FakePersister.with_state(5, [(8, 8, ACKNOWLEDGED, 1), (12, 13, AVAILABLE, 3)])
    sp = make_sp(log, persister)
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset) == (5, 14, 5)
    assert sp.record_state(6) is None  # a gap has no state until it is fetched
    # 12-13 were delivered 3 times, the throttle limit of the default limit 5 (KAFKA-17541):
    # a ShareFetch that acquired the gaps stops there; the next takes 2 >> 1 = 1 of them, and
    # nothing new after a throttled batch.
    assert acquire(sp) == [(5, 7, 1), (9, 11, 1)]
    assert acquire(sp) == [(12, 12, 4)]
    assert acquire(sp) == [(13, 13, 4)]
    assert acquire(sp) == [(14, 19, 1)]


def test_operations_before_initialization_are_refused() -> None:
    sp = make_sp(DataLog(), initialize=False)
    assert sp.acquire("m1", 10, BIG).error is ErrorCode.LEADER_NOT_AVAILABLE
    assert sp.acknowledge("m1", [ack(0, 0, ACCEPT)]) is ErrorCode.LEADER_NOT_AVAILABLE
    assert sp.release_acquired_records("m1") is ErrorCode.LEADER_NOT_AVAILABLE


# -- scenarios 44-47: acknowledge ------------------------------------------------------------------


def test_44_another_member_cannot_acknowledge() -> None:
    _, persister, _, sp = rig(5, start=5)
    assert acquire(sp, "member-1") == [(5, 9, 1)]
    before = snapshot(sp)
    assert sp.acknowledge("member-2", [ack(5, 9, REJECT)]) is ErrorCode.INVALID_RECORD_STATE
    assert snapshot(sp) == before
    assert persister.writes == []
    assert sp.record_state(7) == (ACQUIRED, 1, "member-1")


def test_45_acknowledge_when_offset_not_acquired() -> None:
    _, persister, _, sp = rig(5, start=5)
    acquire(sp)
    assert sp.acknowledge("m1", [ack(5, 9, RELEASE)]) is ErrorCode.NONE
    assert persister.last_write.batches == (sb(5, 9, AVAILABLE, 1),)
    assert sp.acknowledge("m1", [ack(5, 9, ACCEPT)]) is ErrorCode.INVALID_RECORD_STATE
    assert acquire(sp) == [(5, 9, 2)]
    assert sp.acknowledge("m1", [ack(6, 8, REJECT)]) is ErrorCode.NONE
    assert states(sp, 5, 9) == [
        (ACQUIRED, 2, "m1"),
        (ARCHIVED, 2, ""),
        (ARCHIVED, 2, ""),
        (ARCHIVED, 2, ""),
        (ACQUIRED, 2, "m1"),
    ]
    writes = len(persister.writes)
    assert sp.acknowledge("m1", [ack(6, 8, REJECT)]) is ErrorCode.INVALID_RECORD_STATE
    assert len(persister.writes) == writes


def test_46_acknowledge_out_of_range() -> None:
    log = DataLog()
    log.pad_to(5)
    log.append(5)
    persister = FakePersister.with_state(0)
    sp = make_sp(log, persister)
    assert sp.acknowledge("m1", [ack(0, 15, REJECT)]) is ErrorCode.INVALID_RECORD_STATE
    acquire(sp, n=1)  # 0-4
    acquire(sp, n=1)  # 5-9
    assert sp.acknowledge("m1", [ack(20, 25, REJECT)]) is ErrorCode.INVALID_REQUEST
    assert sp.acknowledge("m1", [ack(8, 12, REJECT)]) is ErrorCode.INVALID_REQUEST
    assert persister.writes == []


def test_47_release_part_of_a_batch_and_reacquire_it() -> None:
    log, persister, _, sp = rig(5, start=10)
    assert acquire(sp) == [(10, 14, 1)]
    assert sp.acknowledge("m1", [ack(12, 13, RELEASE)]) is ErrorCode.NONE
    assert sp.next_fetch_offset == 12
    assert states(sp, 12, 13) == [(AVAILABLE, 1, ""), (AVAILABLE, 1, "")]
    assert persister.last_write.batches == (sb(12, 13, AVAILABLE, 1),)
    result = sp.acquire("m2", 500, BIG)
    assert ranges(result) == [(12, 13, 2)]
    assert result.records == log.partition.log.read(10, BIG)  # the whole batch 10-14
    assert sp.record_state(12) == (ACQUIRED, 2, "m2")
    assert sp.record_state(14) == (ACQUIRED, 1, "m1")


# -- scenarios 48-50: delivery limit and lock timeout ---------------------------------------------


def test_48_release_at_the_delivery_limit_archives() -> None:
    events = Events()
    _, persister, _, sp = rig(
        10,
        start=5,
        config=SharePartitionConfig(delivery_count_limit=2),
        events=events,  # 5-14
    )
    for _ in range(2):
        acquire(sp)
        assert sp.acknowledge("m1", [ack(5, 14, RELEASE)]) is ErrorCode.NONE
    assert (sp.next_fetch_offset, sp.start_offset, sp.end_offset) == (15, 15, 15)
    assert sp.state_batches() == []
    assert sp.in_flight_count == 0
    # As Kafka: the write carries the SPSO before it (the SPSO moves once it succeeded) and the
    # records from there whose delivery is complete.
    assert persister.last_write.start_offset == 5
    assert persister.last_write.batches == (sb(5, 14, ARCHIVED, 2),)
    assert persister.last_write.delivery_complete_count == 10
    assert events.get("released") == 10
    assert events.get("archived") == 10
    assert events.get("redelivered") == 10


def test_49_lock_timeout_reaches_the_delivery_limit() -> None:
    _, persister, clock, sp = rig(
        10,
        10,
        config=SharePartitionConfig(delivery_count_limit=2),  # 0-9, 10-19
    )
    assert acquire(sp, n=10) == [(0, 9, 1)]
    assert acquire(sp, n=10) == [(10, 19, 1)]
    clock.advance(LOCK)
    assert states(sp, 9, 10) == [(AVAILABLE, 1, ""), (AVAILABLE, 1, "")]
    assert [w.batches for w in persister.writes] == [
        (sb(0, 9, AVAILABLE, 1),),
        (sb(10, 19, AVAILABLE, 1),),
    ]
    assert sp.next_fetch_offset == 0
    assert acquire(sp, n=10) == [(0, 9, 2)]
    clock.advance(10_000)
    assert acquire(sp, n=10) == [(10, 19, 2)]
    clock.advance(15_000)
    assert sp.acknowledge("m1", [ack(0, 9, RENEW)]) is ErrorCode.NONE  # keeps 0-9 locked
    clock.advance(16_000)  # 10-19's lock expired; 0-9's was renewed
    assert sp.record_state(10) == (ARCHIVED, 2, "")
    assert sp.record_state(0) == (ACQUIRED, 2, "m1")
    assert persister.last_write.batches == (sb(10, 19, ARCHIVED, 2),)
    assert (sp.start_offset, sp.next_fetch_offset) == (0, 20)
    assert persister.last_write.delivery_complete_count == 10
    clock.advance(LOCK)
    assert (sp.start_offset, sp.end_offset) == (20, 20)
    assert persister.last_write.start_offset == 0  # the SPSO before the write
    assert persister.last_write.delivery_complete_count == 20


def test_50_lock_timeout_moves_the_start_offset() -> None:
    _, persister, clock, sp = rig(
        5,
        5,
        config=SharePartitionConfig(delivery_count_limit=2),  # 0-4, 5-9
    )
    assert acquire(sp, n=5) == [(0, 4, 1)]
    assert acquire(sp, n=5) == [(5, 9, 1)]
    clock.advance(LOCK)
    assert states(sp, 0, 9) == [(AVAILABLE, 1, "")] * 10
    # Two in-flight batches: the limit is reached after the first (taken whole, as Kafka).
    assert acquire(sp, n=5) == [(0, 4, 2)]
    clock.advance(LOCK)
    assert sp.start_offset == 5
    assert sp.next_fetch_offset == 5
    assert states(sp, 5, 9) == [(AVAILABLE, 1, "")] * 5
    assert sp.record_state(0) is None  # archived and evicted below the SPSO
    assert persister.last_write.start_offset == 0  # the SPSO before the write
    assert persister.last_write.batches == (sb(0, 4, ARCHIVED, 2),)
    assert persister.last_write.delivery_complete_count == 5


# -- scenario 51: session release ------------------------------------------------------------------


def test_51_release_acquired_records_keeps_the_delivery_count() -> None:
    """Apache Kafka 4.4 counts an acquisition lost to a closed session as a delivery (observed
    by the differential suite: share/close_session_releases)."""
    events = Events()
    log, persister, _, sp = rig(10, start=5, events=events)  # 5-14
    assert acquire(sp) == [(5, 14, 1)]
    assert sp.acknowledge("m1", [ack(12, 13, ACCEPT)]) is ErrorCode.NONE
    assert log.partition.delete_records(11) == (ErrorCode.NONE, 11)  # log start offset 11
    sp.on_log_appended()
    assert sp.start_offset == 11
    assert sp.record_state(5) == (ACQUIRED, 1, "m1")  # waits for its lock (or release)
    assert sp.release_acquired_records("m1") is ErrorCode.NONE
    assert events.get("archived") == 6  # 5-10: below the start offset
    assert sp.record_state(5) is None
    assert states(sp, 11, 14) == [
        (AVAILABLE, 1, ""),
        (ACKNOWLEDGED, 1, ""),
        (ACKNOWLEDGED, 1, ""),
        (AVAILABLE, 1, ""),
    ]
    assert persister.last_write.start_offset == 11  # the lazily persisted log start
    assert persister.last_write.batches == (sb(11, 11, AVAILABLE, 1), sb(14, 14, AVAILABLE, 1))


def test_release_leaves_other_members_and_below_limit_records() -> None:
    sp = rig(5, 5, config=SharePartitionConfig(delivery_count_limit=2)).sp
    acquire(sp, "a", 5)
    acquire(sp, "b", 5)
    assert sp.acknowledge("a", [ack(0, 4, RELEASE)]) is ErrorCode.NONE
    assert acquire(sp, "a", 5) == [(0, 4, 2)]  # at the limit now
    assert sp.release_acquired_records("a") is ErrorCode.NONE
    # The delivery count stays: at the limit, released records are archived.
    assert sp.record_state(0) is None
    assert sp.start_offset == 5
    assert sp.record_state(5) == (ACQUIRED, 1, "b")
    assert sp.release_acquired_records("nobody") is ErrorCode.NONE


def test_release_write_failure_keeps_records_acquired() -> None:
    _, persister, _, sp = rig(5)
    acquire(sp)
    persister.write_error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert sp.release_acquired_records("m1") is ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert sp.record_state(0) == (ACQUIRED, 1, "m1")


# -- scenario 52: in-flight limit ------------------------------------------------------------------


def test_52_max_in_flight_rounds_up_to_a_log_batch() -> None:
    config = SharePartitionConfig(max_in_flight_records=20)
    sp = rig(10, 5, 10, 5, config=config).sp  # 0-9, 10-14, 15-24, 25-29
    assert acquire(sp, n=10) == [(0, 9, 1)]
    assert acquire(sp) == [(10, 24, 1)]
    assert sp.in_flight_count == 25
    assert sp.acquire("m1", 500, BIG).acquired == []
    assert sp.on_log_appended() is False
    # Acknowledging the head frees room again.
    assert sp.acknowledge("m1", [ack(0, 9, ACCEPT)]) is ErrorCode.NONE
    assert sp.on_log_appended() is True
    assert acquire(sp) == [(25, 29, 1)]


def test_max_fetch_records_rounds_up_to_a_log_batch() -> None:
    log, _, _, sp = rig(5, 5, 5)
    result = sp.acquire("m1", 7, BIG)
    assert ranges(result) == [(0, 9, 1)]
    assert result.count == 10
    assert result.records == log.partition.log.read(0, BIG)[: len(result.records)]
    assert acquire(sp, n=1) == [(10, 14, 1)]
    assert sp.acquire("m1", 0, BIG).acquired == []


def test_max_bytes_bounds_the_log_read() -> None:
    sp = rig(5, 5, 5).sp
    assert ranges(sp.acquire("m1", 500, 1)) == [(0, 4, 1)]  # at least one whole batch


# -- scenarios 53/54: whole-request rollback -------------------------------------------------------


def fifteen_acquired() -> tuple[DataLog, FakePersister, SharePartition]:
    log, persister, _, sp = rig(5, 5, 5, 5, start=5)  # 5-9, 10-14, 15-19, 20-24
    assert acquire(sp, n=15) == [(5, 19, 1)]
    return log, persister, sp


def test_53_overlapping_batches_are_an_invalid_request() -> None:
    _log, persister, sp = fifteen_acquired()
    before = snapshot(sp)
    request = [ack(5, 9, RELEASE), ack(10, 14, ACCEPT), ack(15, 19, ACCEPT), ack(15, 19, ACCEPT)]
    # Kafka's broker rejects this request before the share partition sees it (KafkaApis); the
    # share partition alone would answer INVALID_RECORD_STATE.  Either way nothing changes.
    assert sp.acknowledge("m1", request) is ErrorCode.INVALID_REQUEST
    assert snapshot(sp) == before
    assert persister.writes == []


def test_53_one_bad_batch_rolls_back_the_whole_request() -> None:
    _log, persister, sp = fifteen_acquired()
    assert acquire(sp, "other", 5) == [(20, 24, 1)]
    before = snapshot(sp)
    request = [ack(5, 9, RELEASE), ack(10, 14, ACCEPT), ack(15, 19, ACCEPT), ack(20, 24, ACCEPT)]
    assert sp.acknowledge("m1", request) is ErrorCode.INVALID_RECORD_STATE
    assert snapshot(sp) == before
    assert states(sp, 5, 19) == [(ACQUIRED, 1, "m1")] * 15
    assert persister.writes == []


@pytest.mark.parametrize(
    ("write_error", "expected"),
    [*PERSISTER_ERRORS, (ErrorCode.FENCED_STATE_EPOCH, ErrorCode.FENCED_STATE_EPOCH)],
)
def test_54_persister_failure_rolls_back(write_error: ErrorCode, expected: ErrorCode) -> None:
    _, persister, clock, sp = rig(10, start=5)  # 5-14
    acquire(sp)
    before = snapshot(sp)
    persister.write_errors = [write_error]
    assert sp.acknowledge("m1", [ack(5, 14, ACCEPT)]) is expected
    assert snapshot(sp) == before
    assert states(sp, 5, 14) == [(ACQUIRED, 1, "m1")] * 10
    assert len(persister.writes) == 1  # it was attempted once
    # The lock survived the failed acknowledgement.
    clock.advance(LOCK)
    assert states(sp, 5, 14) == [(AVAILABLE, 1, "")] * 10


# -- scenario 55: log start offset movement --------------------------------------------------------


def test_55_log_start_movement_archives_available_batches() -> None:
    events = Events()
    log, persister, _, sp = rig(*[5] * 7, start=2, events=events)  # 2-6, 7-11, ..., 32-36
    for _ in range(7):
        acquire(sp, n=5)
    assert sp.end_offset == 37
    request = [ack(2, 6, ACCEPT), ack(12, 16, RELEASE), ack(22, 26, RELEASE), ack(27, 31, REJECT)]
    assert sp.acknowledge("m1", request) is ErrorCode.NONE
    assert sp.start_offset == 7
    assert log.partition.delete_records(20)[0] is ErrorCode.NONE
    archived_before = events.get("archived")
    assert sp.on_log_appended() is True
    assert (sp.start_offset, sp.next_fetch_offset, sp.end_offset) == (20, 22, 37)  # Kafka end 36
    assert events.get("archived") - archived_before == 5  # 12-16
    assert sp.record_state(12) is None  # archived below the SPSO and evicted
    assert sp.record_state(7) == (ACQUIRED, 1, "m1")  # acquired batches are untouched
    assert sp.record_state(17) == (ACQUIRED, 1, "m1")
    assert sp.record_state(22) == (AVAILABLE, 1, "")
    assert sp.record_state(27) == (ARCHIVED, 1, "")
    assert sp.record_state(32) == (ACQUIRED, 1, "m1")
    assert [(b.first_offset, b.last_offset) for b in sp.state_batches()] == [
        (20, 21),
        (22, 26),
        (27, 31),
        (32, 36),
    ]
    writes = len(persister.writes)  # the new start is persisted lazily
    assert sp.acknowledge("m1", [ack(32, 36, ACCEPT)]) is ErrorCode.NONE
    assert len(persister.writes) == writes + 1
    assert persister.last_write.start_offset == 20
    assert persister.last_write.batches == (sb(32, 36, ACKNOWLEDGED, 1),)
    # Acknowledging records below the SPSO is ignored; 17-19 of 17-21 are skipped.
    assert sp.acknowledge("m1", [ack(7, 11, ACCEPT), ack(17, 21, ACCEPT)]) is ErrorCode.NONE
    last = persister.writes[-1]
    assert (last.start_offset, last.batches) == (20, (sb(20, 21, ACKNOWLEDGED, 1),))
    assert last.delivery_complete_count == 12  # 20-21, 27-31 and 32-36
    assert sp.record_state(7) == (ACQUIRED, 1, "m1")  # still held: its lock will archive it
    # Records that were acquired before the move come back only as ARCHIVED.
    sp.release_acquired_records("m1")
    assert sp.record_state(7) is None
    assert sp.acquire("m1", 5, BIG).acquired[0].first_offset == 22


def test_log_start_beyond_the_cache_resets_both_offsets() -> None:
    log, _, _, sp = rig(5, 5, 5)
    acquire(sp, n=5)
    assert sp.acknowledge("m1", [ack(0, 4, RELEASE)]) is ErrorCode.NONE
    log.partition.delete_records(12)
    assert acquire(sp) == [(12, 14, 1)]  # acquire follows the log start itself
    assert (sp.start_offset, sp.end_offset) == (12, 15)


# -- bad input -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_batches", "expected"),
    [
        ([ack(5, 9, 5)], ErrorCode.INVALID_REQUEST),  # unknown type
        ([ack(5, 9, -1)], ErrorCode.INVALID_REQUEST),
        ([AckBatch(5, 9, [])], ErrorCode.INVALID_REQUEST),  # no types
        ([ack(5, 9, ACCEPT, ACCEPT)], ErrorCode.INVALID_REQUEST),  # neither 1 nor 5 types
        ([ack(9, 5, ACCEPT)], ErrorCode.INVALID_REQUEST),  # first > last
        ([ack(-1, 5, ACCEPT)], ErrorCode.INVALID_REQUEST),
        ([ack(7, 9, ACCEPT), ack(5, 6, ACCEPT)], ErrorCode.INVALID_REQUEST),  # descending
        ([ack(5, 7, ACCEPT), ack(7, 9, ACCEPT)], ErrorCode.INVALID_REQUEST),  # touching overlap
        ([ack(5, 9, ACCEPT), ack(20, 22, ACCEPT)], ErrorCode.INVALID_REQUEST),  # beyond the cache
        ([ack(5, 30, ACCEPT)], ErrorCode.INVALID_REQUEST),
        ([ack(12, 14, ACCEPT)], ErrorCode.INVALID_RECORD_STATE),  # not acquired (AVAILABLE)
        ([ack(5, 9, ACCEPT), ack(12, 12, REJECT)], ErrorCode.INVALID_RECORD_STATE),
    ],
)
def test_bad_acknowledgements_change_nothing(
    request_batches: list[AckBatch], expected: ErrorCode
) -> None:
    _, persister, _, sp = rig(5, 5, start=5)  # 5-9, 10-14
    acquire(sp)
    assert sp.acknowledge("m1", [ack(10, 14, RELEASE)]) is ErrorCode.NONE
    writes = len(persister.writes)
    before = snapshot(sp)
    assert sp.acknowledge("m1", request_batches) is expected
    assert snapshot(sp) == before
    assert len(persister.writes) == writes


def test_wrong_member_in_a_later_batch_changes_nothing() -> None:
    _, persister, _, sp = rig(5, 5)
    acquire(sp, "a", 5)
    acquire(sp, "b", 5)
    before = snapshot(sp)
    assert sp.acknowledge("a", [ack(0, 4, ACCEPT), ack(5, 5, ACCEPT)]) is (
        ErrorCode.INVALID_RECORD_STATE
    )
    assert sp.acknowledge("a", [ack(3, 6, ACCEPT)]) is ErrorCode.INVALID_RECORD_STATE
    assert snapshot(sp) == before
    assert persister.writes == []


def test_acknowledgements_below_the_start_offset_are_ignored() -> None:
    _, persister, _, sp = rig(5, 5)
    acquire(sp)
    assert sp.acknowledge("m1", [ack(0, 4, ACCEPT)]) is ErrorCode.NONE
    writes = len(persister.writes)
    assert sp.acknowledge("m1", [ack(0, 4, ACCEPT)]) is ErrorCode.NONE
    assert len(persister.writes) == writes
    # A batch straddling the start offset acknowledges only its cached part.
    assert sp.acknowledge("m1", [ack(2, 6, REJECT)]) is ErrorCode.NONE
    assert sp.record_state(5) is None  # archived and evicted
    assert (persister.last_write.start_offset, persister.last_write.batches) == (
        5,
        (sb(5, 6, ARCHIVED, 1),),
    )
    assert sp.acknowledge("m1", [ack(2, 8, REJECT)]) is ErrorCode.NONE
    assert (persister.last_write.start_offset, persister.last_write.batches) == (
        7,
        (sb(7, 8, ARCHIVED, 1),),
    )


def test_validate_ack_batches_is_the_request_level_check() -> None:
    assert validate_ack_batches([]) is ErrorCode.NONE
    assert validate_ack_batches([ack(0, 2, ACCEPT, RELEASE, GAP)]) is ErrorCode.NONE
    assert validate_ack_batches([ack(0, 2, ACCEPT), ack(2, 3, ACCEPT)]) is (
        ErrorCode.INVALID_REQUEST
    )


# -- acknowledgement types -------------------------------------------------------------------------


def test_per_offset_types_and_coalesced_write() -> None:
    events = Events()
    _, persister, _, sp = rig(10, events=events)
    acquire(sp)
    types = [ACCEPT, ACCEPT, GAP, REJECT, RELEASE, RELEASE, ACCEPT, RENEW, RENEW, ACCEPT]
    assert sp.acknowledge("m1", [AckBatch(0, 9, types)]) is ErrorCode.NONE
    # The SPSO before the write (it moves to 4 once the write succeeded), and 0-3, 6 and 9
    # complete.
    assert persister.last_write.start_offset == 0
    assert persister.last_write.batches == (
        sb(0, 1, ACKNOWLEDGED, 1),
        sb(2, 3, ARCHIVED, 1),
        sb(4, 5, AVAILABLE, 1),
        sb(6, 6, ACKNOWLEDGED, 1),
        sb(9, 9, ACKNOWLEDGED, 1),
    )
    assert persister.last_write.delivery_complete_count == 6
    assert sp.start_offset == 4
    assert states(sp, 4, 9) == [
        (AVAILABLE, 1, ""),
        (AVAILABLE, 1, ""),
        (ACKNOWLEDGED, 1, ""),
        (ACQUIRED, 1, "m1"),
        (ACQUIRED, 1, "m1"),
        (ACKNOWLEDGED, 1, ""),
    ]
    assert (sp.start_offset, sp.next_fetch_offset) == (4, 4)
    assert events.totals == {
        "acquired": 10,
        "acknowledged": 4,
        "archived": 1,
        "rejected": 1,
        "released": 2,
    }


def test_renew_restarts_the_lock_and_writes_nothing() -> None:
    _, persister, clock, sp = rig(5)
    acquire(sp)
    clock.advance(20_000)
    assert sp.acknowledge("m1", [ack(1, 2, RENEW)]) is ErrorCode.NONE
    assert persister.writes == []
    clock.advance(10_000)  # the original lock expires for 0, 3, 4 only
    assert states(sp, 0, 4) == [
        (AVAILABLE, 1, ""),
        (ACQUIRED, 1, "m1"),
        (ACQUIRED, 1, "m1"),
        (AVAILABLE, 1, ""),
        (AVAILABLE, 1, ""),
    ]
    assert persister.last_write.batches == (sb(0, 0, AVAILABLE, 1), sb(3, 4, AVAILABLE, 1))
    clock.advance(20_000)
    assert states(sp, 1, 2) == [(AVAILABLE, 1, "")] * 2


def test_failed_write_does_not_renew() -> None:
    _, persister, clock, sp = rig(5)
    acquire(sp)
    clock.advance(20_000)
    persister.write_errors = [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    request = [ack(0, 0, ACCEPT), ack(1, 4, RENEW)]
    assert sp.acknowledge("m1", request) is ErrorCode.COORDINATOR_NOT_AVAILABLE
    clock.advance(10_000)
    assert states(sp, 0, 4) == [(AVAILABLE, 1, "")] * 5


# -- locks and in-flight transitions ---------------------------------------------------------------


def test_lock_timeout_write_failure_is_ignored() -> None:
    _, persister, clock, sp = rig(5)
    acquire(sp)
    persister.write_error = ErrorCode.COORDINATOR_NOT_AVAILABLE
    clock.advance(LOCK)
    assert states(sp, 0, 4) == [(AVAILABLE, 1, "")] * 5
    assert len(persister.writes) == 1
    assert sp.next_fetch_offset == 0


def test_acknowledged_records_lose_their_lock() -> None:
    _, persister, clock, sp = rig(5)
    acquire(sp)
    assert sp.acknowledge("m1", [ack(0, 4, ACCEPT)]) is ErrorCode.NONE
    assert clock.next_due_ms() is None  # the timer was cancelled
    writes = len(persister.writes)
    clock.advance(LOCK)
    assert len(persister.writes) == writes


def test_acknowledging_records_in_transition_is_invalid() -> None:
    _, persister, _, sp = rig(10)
    acquire(sp)
    inner: list[ErrorCode] = []

    def reenter() -> None:
        inner.append(sp.acknowledge("m1", [ack(3, 3, REJECT)]))
        inner.append(sp.acknowledge("m1", [ack(7, 7, REJECT)]))
        inner.append(sp.release_acquired_records("m1"))

    persister.on_write = reenter
    assert sp.acknowledge("m1", [ack(0, 4, ACCEPT)]) is ErrorCode.NONE
    # 3 was being written; 7 was not; the release skipped 0-4 and released 5, 6, 8, 9.
    assert inner == [ErrorCode.INVALID_RECORD_STATE, ErrorCode.NONE, ErrorCode.NONE]
    assert states(sp, 5, 9) == [
        (AVAILABLE, 1, ""),
        (AVAILABLE, 1, ""),
        (ARCHIVED, 1, ""),
        (AVAILABLE, 1, ""),
        (AVAILABLE, 1, ""),
    ]
    assert sp.start_offset == 5


@pytest.mark.parametrize("write_ok", [True, False])
def test_lock_expiring_during_a_write(write_ok: bool) -> None:
    _, persister, clock, sp = rig(5)
    acquire(sp)
    clock.advance(LOCK - 1)
    persister.on_write = lambda: clock.advance(1)  # the lock fires while the ack is written
    if not write_ok:
        persister.write_errors = [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    result = sp.acknowledge("m1", [ack(0, 4, ACCEPT)])
    if write_ok:
        assert result is ErrorCode.NONE
        assert (sp.start_offset, sp.end_offset) == (5, 5)
    else:
        # Rolled back to ACQUIRED, then the expired lock made the records AVAILABLE.
        assert result is ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert states(sp, 0, 4) == [(AVAILABLE, 1, "")] * 5


def test_fencing_stops_lock_timers() -> None:
    _, persister, clock, sp = rig(5)
    acquire(sp)
    sp.mark_fenced()
    clock.advance(LOCK)
    assert persister.writes == []
    assert sp.acquire("m1", 5, BIG).error is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert sp.acknowledge("m1", [ack(0, 4, ACCEPT)]) is ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_update_config_applies_to_new_locks_and_limits() -> None:
    _, _, clock, sp = rig(5, 5, 5)
    acquire(sp, n=5)
    sp.update_config(SharePartitionConfig(record_lock_duration_ms=1000, max_in_flight_records=10))
    assert sp.config.record_lock_duration_ms == 1000
    acquire(sp, n=5)
    assert sp.acquire("m1", 500, BIG).acquired == []  # 10 in flight
    clock.advance(1000)
    assert sp.record_state(0) == (ACQUIRED, 1, "m1")  # old lock: 30 s
    assert sp.record_state(5) == (AVAILABLE, 1, "")  # new lock: 1 s


def test_restart_reloads_the_persisted_state() -> None:
    log, persister, _, sp = rig(5, 5, 5)
    acquire(sp)
    assert sp.acknowledge("m1", [ack(0, 4, ACCEPT), ack(5, 6, RELEASE)]) is ErrorCode.NONE
    # A crash: acquisitions are not persisted, so 7-14 are a gap for the new leader.
    again = make_sp(log, persister, config=SharePartitionConfig(leader_epoch=1))
    assert persister.reads == [0, 1]
    assert (again.start_offset, again.end_offset, again.next_fetch_offset) == (5, 7, 5)
    assert acquire(again) == [(5, 6, 2), (7, 14, 1)]


def test_a_restart_from_the_lagging_start_offset_resumes_where_the_partition_was() -> None:
    """Each write carries the SPSO before it, so the persisted start lags; the state read back
    moves past the records it says are complete and redelivers exactly the others."""
    log, persister, _, sp = rig(5, 5)  # 0-4, 5-9
    assert acquire(sp) == [(0, 9, 1)]
    assert sp.acknowledge("m1", [AckBatch(0, 9, [ACCEPT] * 3 + [RELEASE] + [ACCEPT] * 6)]) is (
        ErrorCode.NONE
    )
    assert (sp.start_offset, persister.start_offset) == (3, 0)
    assert persister.delivery_complete_count == 9
    again = make_sp(log, persister)
    assert (again.start_offset, again.end_offset, again.next_fetch_offset) == (3, 10, 3)
    assert acquire(again) == [(3, 3, 2)]
    assert again.acknowledge("m1", [ack(3, 3, ACCEPT)]) is ErrorCode.NONE
    assert (persister.last_write.start_offset, persister.last_write.delivery_complete_count) == (
        3,
        7,
    )
    assert (again.start_offset, again.end_offset) == (10, 10)


def test_renew_refused_when_the_group_disables_it() -> None:
    """``share.renew.acknowledge.enable=false``: a RENEW is INVALID_RECORD_STATE and changes
    nothing (Kafka 4.4); re-enabled, the same RENEW is taken."""
    _, persister, _, sp = rig(5, 5)
    acquire(sp, n=10)
    sp.update_config(SharePartitionConfig(renew_acknowledge_enabled=False))
    refused = sp.acknowledge("m1", [ack(0, 4, ACCEPT), ack(5, 9, RENEW)])
    assert refused is ErrorCode.INVALID_RECORD_STATE
    assert sp.record_state(0) == (ACQUIRED, 1, "m1")  # the whole request was refused
    assert persister.writes == []
    sp.update_config(SharePartitionConfig())
    assert sp.acknowledge("m1", [ack(5, 9, RENEW)]) is ErrorCode.NONE
