"""Share acquisition as Apache Kafka 4.4 does it, as the differential suite observed it
(``share/record_limit_*``, ``share/batch_size_*``, ``share/redeliver_*``, ``share/acquire_*``):
ShareFetch v2's record_limit mode, its BatchSize split, in-flight batches taken whole and never
joined in one acquired range, and aborted records counting towards the records wanted."""

from __future__ import annotations

from coordinator.share.share_partition import SharePartition, SharePartitionConfig
from tests.unit.share.fakes_sp import (
    ACCEPT,
    ACQUIRED,
    AVAILABLE,
    RELEASE,
    DataLog,
    FakePersister,
    ack,
    make_sp,
    ranges,
    rig,
    states,
)
from txn.errors import ErrorCode

BIG = 1 << 20


def take(
    sp: SharePartition, n: int = 500, *, record_limit: bool = False, batch_size: int | None = None
) -> list[tuple[int, int, int]]:
    return ranges(sp.acquire("m1", n, BIG, record_limit=record_limit, batch_size=batch_size))


# -- record_limit (KIP-1206) ----------------------------------------------------------------------


def test_record_limit_splits_a_log_batch_and_keeps_the_rest_available() -> None:
    _log, _persister, _clock, sp = rig(6, 3)  # 0-5, 6-8
    assert take(sp, 4, record_limit=True) == [(0, 3, 1)]
    assert sp.end_offset == 6  # the log batch is in flight, its rest never delivered
    assert states(sp, 4, 5) == [(AVAILABLE, 0, "")] * 2
    assert sp.next_fetch_offset == 4
    # The rest of the first in-flight batch, then a new one: two ranges, never joined.
    assert take(sp, 4, record_limit=True) == [(4, 5, 1), (6, 7, 1)]
    assert take(sp, 4, record_limit=True) == [(8, 8, 1)]
    assert states(sp, 0, 8) == [(ACQUIRED, 1, "m1")] * 9


def test_record_limit_redelivers_a_split_batch() -> None:
    _log, _persister, _clock, sp = rig(6)
    assert take(sp, 2, record_limit=True) == [(0, 1, 1)]
    assert sp.acknowledge("m1", [ack(0, 1, RELEASE)]) is ErrorCode.NONE
    assert take(sp, 3, record_limit=True) == [(0, 1, 2), (2, 2, 1)]
    assert take(sp) == [(3, 5, 1)]  # batch_optimized: the rest of the in-flight batch
    assert sp.acknowledge("m1", [ack(0, 5, ACCEPT)]) is ErrorCode.NONE
    assert sp.start_offset == 6


def test_record_limit_rest_survives_a_lock_timeout_uncounted() -> None:
    _log, _persister, clock, sp = rig(6)
    assert take(sp, 2, record_limit=True) == [(0, 1, 1)]
    clock.advance(30_000)
    assert states(sp, 0, 5) == [(AVAILABLE, 1, "")] * 2 + [(AVAILABLE, 0, "")] * 4
    assert take(sp) == [(0, 1, 2), (2, 5, 1)]


def test_record_limit_across_markers_and_aborted_records() -> None:
    log = DataLog()
    log.append_txn(pid=1, n=2)  # 0-1
    log.end_txn(1, commit=True)  # 2
    log.append_txn(pid=2, n=2)  # 3-4
    log.end_txn(2, commit=False)  # 5
    log.append(2)  # 6-7
    sp = make_sp(
        log, FakePersister.with_state(0), config=SharePartitionConfig(isolation="read_committed")
    )
    assert take(sp, 3, record_limit=True) == [(0, 2, 1)]
    assert take(sp, 3, record_limit=True) == [(5, 5, 1)]  # 3-4 aborted: taken, archived
    assert take(sp, 3, record_limit=True) == [(6, 7, 1)]


# -- BatchSize ------------------------------------------------------------------------------------


def test_batch_size_splits_new_records_at_log_batches() -> None:
    _log, _persister, _clock, sp = rig(2, 2, 2, 2)
    assert take(sp, 6, batch_size=3) == [(0, 3, 1), (4, 5, 1)]


def test_batch_size_split_batches_come_back_each_alone() -> None:
    _log, _persister, _clock, sp = rig(2, 2, 2)
    assert take(sp, 6, batch_size=2) == [(0, 1, 1), (2, 3, 1), (4, 5, 1)]
    assert sp.acknowledge("m1", [ack(2, 3, RELEASE)]) is ErrorCode.NONE
    assert take(sp) == [(2, 3, 2)]
    assert sp.acknowledge("m1", [ack(0, 5, RELEASE)]) is ErrorCode.NONE
    assert take(sp) == [(0, 1, 2), (2, 3, 3), (4, 5, 2)]


def test_batch_size_zero_cuts_at_every_log_batch() -> None:
    """Kafka 4.4 does too, and answers an empty range (0, -1) first: not copied."""
    _log, _persister, _clock, sp = rig(2, 2, 2)
    assert take(sp, 6, batch_size=0) == [(0, 1, 1), (2, 3, 1), (4, 5, 1)]


def test_batch_size_not_below_the_records_taken_splits_nothing() -> None:
    _log, _persister, _clock, sp = rig(2, 2, 2)
    assert take(sp, 2, batch_size=2) == [(0, 1, 1)]
    assert take(sp, 500, batch_size=500) == [(2, 5, 1)]


# -- in-flight batches ----------------------------------------------------------------------------


def test_two_in_flight_batches_are_two_ranges() -> None:
    _log, _persister, _clock, sp = rig(2, 2)
    assert take(sp, 2) == [(0, 1, 1)]
    assert take(sp, 2) == [(2, 3, 1)]
    assert sp.acknowledge("m1", [ack(0, 3, RELEASE)]) is ErrorCode.NONE
    assert take(sp) == [(0, 1, 2), (2, 3, 2)]


def test_an_in_flight_batch_is_taken_whole_past_the_records_wanted() -> None:
    _log, _persister, _clock, sp = rig(2, 2, 2)
    assert take(sp) == [(0, 5, 1)]
    assert sp.acknowledge("m1", [ack(0, 5, RELEASE)]) is ErrorCode.NONE
    assert take(sp, 2) == [(0, 5, 2)]


def test_aborted_records_count_towards_the_records_wanted() -> None:
    log = DataLog()
    log.append_txn(pid=1, n=3)  # 0-2
    log.end_txn(1, commit=False)  # 3
    log.append(3)  # 4-6
    sp = make_sp(
        log, FakePersister.with_state(0), config=SharePartitionConfig(isolation="read_committed")
    )
    result = sp.acquire("m1", 2, BIG)
    assert ranges(result) == []
    assert result.archived == 3
    assert take(sp, 2) == [(3, 6, 1)]
