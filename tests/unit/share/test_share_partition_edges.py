"""Share partition: read_committed, TX_PENDING (KIP-1289), scale, edges and random operations
against the invariants (scenarios 42-55 and the basics are in ``test_share_partition``)."""

from __future__ import annotations

import itertools
import random

import pytest

from coordinator.log.memory_log import MemoryLog
from coordinator.share.share_partition import (
    AckBatch,
    AcquireResult,
    SharePartition,
    SharePartitionConfig,
)
from tests.unit.share.coordinator_bench import make_coordinator
from tests.unit.share.fakes_sp import (
    ACCEPT,
    ACKNOWLEDGED,
    ACQUIRED,
    ARCHIVED,
    AVAILABLE,
    GAP,
    KEY,
    NOW,
    REJECT,
    RELEASE,
    RENEW,
    TX_PENDING,
    DataLog,
    Events,
    FakePersister,
    Rig,
    ack,
    make_sp,
    ranges,
    rig,
    sb,
    snapshot,
    states,
)
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode, InvalidConfigError

LOCK = 30_000
BIG = 1 << 20  # max_bytes that reads everything


def acquire(sp: SharePartition, member: str = "m1", n: int = 500) -> list[tuple[int, int, int]]:
    return ranges(sp.acquire(member, n, BIG))


# -- read_committed --------------------------------------------------------------------------------


def test_read_committed_archives_aborted_records_and_acquires_markers() -> None:
    log = DataLog()
    log.append_txn(pid=1)  # 0-4 committed below
    log.append_txn(pid=2)  # 5-9 aborted below
    log.end_txn(1, commit=True)  # 10
    log.end_txn(2, commit=False)  # 11
    log.append(5)  # 12-16
    persister = FakePersister.with_state(0)
    events = Events()
    sp = make_sp(
        log, persister, config=SharePartitionConfig(isolation="read_committed"), events=events
    )
    result = sp.acquire("m1", 500, BIG)
    # As Kafka 4.4: the markers' offsets are acquired too (the client acknowledges them as GAP).
    assert ranges(result) == [(0, 4, 1), (10, 16, 1)]
    assert states(sp, 5, 9) == [(ARCHIVED, 0, "")] * 5
    assert states(sp, 10, 11) == [(ACQUIRED, 1, "m1")] * 2
    assert events.get("archived") == 5  # the aborted records
    assert sp.acknowledge("m1", [ack(0, 4, ACCEPT)]) is ErrorCode.NONE
    assert sp.start_offset == 10  # the SPSO steps over the aborted records
    # The write carries the SPSO before it and counts the archived records as complete.
    assert persister.last_write.start_offset == 0
    assert persister.last_write.batches == (sb(0, 4, ACKNOWLEDGED, 1),)
    assert persister.last_write.delivery_complete_count == 10
    # The acquired ranges never include an archived offset; the markers are acknowledged GAP.
    assert sp.acknowledge("m1", [ack(9, 12, ACCEPT)]) is ErrorCode.NONE
    assert sp.start_offset == 13


def test_read_committed_stops_at_the_last_stable_offset() -> None:
    log = DataLog()
    log.append(5)  # 0-4
    log.append_txn(pid=3)  # 5-9, open
    log.append(5)  # 10-14
    persister = FakePersister.with_state(0)
    sp = make_sp(log, persister, config=SharePartitionConfig(isolation="read_committed"))
    assert acquire(sp) == [(0, 4, 1)]
    assert acquire(sp) == []
    assert sp.on_log_appended() is False
    log.end_txn(3, commit=True)  # 15
    assert sp.on_log_appended() is True
    assert acquire(sp) == [(5, 15, 1)]  # the commit marker too
    assert sp.record_state(15) == (ACQUIRED, 1, "m1")


def test_read_uncommitted_delivers_aborted_records_and_markers() -> None:
    log = DataLog()
    log.append_txn(pid=2)  # 0-4
    log.end_txn(2, commit=False)  # 5
    log.append(5)  # 6-10
    sp = make_sp(log, FakePersister.with_state(0))
    assert acquire(sp) == [(0, 10, 1)]
    assert sp.record_state(5) == (ACQUIRED, 1, "m1")
    assert sp.acknowledge("m1", [ack(0, 4, ACCEPT), ack(5, 5, GAP)]) is ErrorCode.NONE
    assert sp.start_offset == 6


# -- KIP-1289: TX_PENDING --------------------------------------------------------------------------


def pending_setup(limit: int = 5) -> Rig:
    return rig(5, 5, config=SharePartitionConfig(delivery_count_limit=limit))


def test_tx_pending_holds_records_until_the_marker() -> None:
    _log, persister, clock, sp = pending_setup()
    acquire(sp, "a", 5)
    acquire(sp, "b", 5)
    request = [AckBatch(0, 4, [ACCEPT, ACCEPT, REJECT, RELEASE, ACCEPT])]
    assert sp.prepare_pending("a", 10, 1, request) is ErrorCode.NONE
    assert persister.writes == []
    assert sp.record_state(0) == (TX_PENDING, 1, "a")
    assert [(f, last, p.ack_type.name) for f, last, p in sp.pending_acks()] == [
        (0, 1, "ACCEPT"),
        (2, 2, "REJECT"),
        (3, 3, "RELEASE"),
        (4, 4, "ACCEPT"),
    ]
    # Never released by a session close, never expired, never acquired, never re-acked.
    assert sp.release_acquired_records("a") is ErrorCode.NONE
    clock.advance(LOCK)
    assert sp.record_state(0) == (TX_PENDING, 1, "a")
    assert sp.record_state(5) == (AVAILABLE, 1, "")  # b's lock expired
    assert acquire(sp, "c") == [(5, 9, 2)]
    assert sp.acknowledge("a", [ack(0, 4, ACCEPT)]) is ErrorCode.INVALID_RECORD_STATE
    assert sp.start_offset == 0
    # A marker of an older epoch does nothing; the commit applies the types.
    assert sp.complete_pending(10, 0, commit=True) is ErrorCode.NONE
    assert sp.record_state(0) == (TX_PENDING, 1, "a")
    assert sp.complete_pending(10, 2, commit=True) is ErrorCode.NONE
    assert sp.pending_acks() == []
    assert states(sp, 3, 4) == [(AVAILABLE, 1, ""), (ACKNOWLEDGED, 1, "")]
    assert sp.start_offset == 3
    assert persister.last_write.start_offset == 0  # the SPSO before the write
    assert persister.last_write.batches == (
        sb(0, 1, ACKNOWLEDGED, 1),
        sb(2, 2, ARCHIVED, 1),
        sb(3, 3, AVAILABLE, 1),
        sb(4, 4, ACKNOWLEDGED, 1),
    )
    assert persister.last_write.delivery_complete_count == 4


def test_tx_pending_abort_reverts_and_respects_the_limit() -> None:
    _log, persister, _clock, sp = pending_setup(limit=2)
    acquire(sp, "a", 5)
    assert sp.acknowledge("a", [ack(0, 1, RELEASE)]) is ErrorCode.NONE
    assert acquire(sp, "a", 1) == [(0, 1, 2)]  # rounded up to the batch: 2-4 are taken
    assert sp.prepare_pending(None, 10, 1, [ack(0, 4, ACCEPT)]) is ErrorCode.NONE
    assert sp.complete_pending(10, 1, commit=False) is ErrorCode.NONE
    # dc 2 reached the limit of 2: archived; dc 1 goes back to AVAILABLE with its count.
    assert states(sp, 2, 4) == [(AVAILABLE, 1, "")] * 3
    assert sp.start_offset == 2
    assert persister.last_write.start_offset == 0  # the SPSO before the write
    assert persister.last_write.batches == (sb(0, 1, ARCHIVED, 2), sb(2, 4, AVAILABLE, 1))
    assert persister.last_write.delivery_complete_count == 2
    assert sp.next_fetch_offset == 2


def test_tx_pending_ownership_and_bad_input() -> None:
    _log, persister, _clock, sp = pending_setup()
    acquire(sp, "a", 5)
    acquire(sp, "b", 5)
    before = snapshot(sp)
    assert sp.prepare_pending("a", 10, 1, [ack(3, 6, ACCEPT)]) is ErrorCode.INVALID_RECORD_STATE
    assert sp.prepare_pending("a", 10, 1, [ack(0, 4, RENEW)]) is ErrorCode.INVALID_REQUEST
    assert sp.prepare_pending("a", 10, 1, [ack(0, 40, ACCEPT)]) is ErrorCode.INVALID_REQUEST
    assert snapshot(sp) == before
    # Without a member id any ACQUIRED record may be acknowledged (the KIP as written).
    assert sp.prepare_pending(None, 10, 1, [ack(3, 6, ACCEPT)]) is ErrorCode.NONE
    assert sp.record_state(6) == (TX_PENDING, 1, "b")
    assert sp.complete_pending(11, 1, commit=True) is ErrorCode.NONE  # another producer
    assert sp.record_state(6) == (TX_PENDING, 1, "b")
    assert persister.writes == []


# -- scale -----------------------------------------------------------------------------------------


def test_twenty_thousand_records_acquire_and_acknowledge() -> None:
    events = Events()
    _, persister, _, sp = rig(*[5] * 4000, events=events)
    rounds = 0
    while sp.start_offset < 20_000:
        rounds += 1
        got = sp.acquire(f"m{rounds % 3}", 500, BIG)
        assert got.error is ErrorCode.NONE
        if rounds % 4 == 0 and got.acquired:
            # Mixed per-offset acknowledgements: every third record released once.
            for r in got.acquired:
                types = [
                    RELEASE if (o % 3 == 0 and r.delivery_count == 1) else ACCEPT
                    for o in range(r.first_offset, r.last_offset + 1)
                ]
                batch = AckBatch(r.first_offset, r.last_offset, types)
                assert sp.acknowledge(f"m{rounds % 3}", [batch]) is ErrorCode.NONE
        else:
            batches = [ack(r.first_offset, r.last_offset, ACCEPT) for r in got.acquired]
            assert sp.acknowledge(f"m{rounds % 3}", batches) is ErrorCode.NONE
        assert rounds < 1000
    assert (sp.start_offset, sp.end_offset, sp.in_flight_count) == (20_000, 20_000, 0)
    assert events.get("acknowledged") == 20_000
    assert events.get("acquired") == 20_000 + events.get("released")
    assert sp.state_batches() == []
    # The persisted start offset lags one write behind; every record from it on is complete.
    assert persister.start_offset + persister.delivery_complete_count == 20_000


def test_twenty_thousand_in_flight_records_stay_few_runs() -> None:
    config = SharePartitionConfig(max_in_flight_records=20_000)
    _, persister, clock, sp = rig(*[5] * 4000, config=config)
    assert acquire(sp, n=20_000) == [(0, 19_999, 1)]
    assert len(sp.state_batches()) == 1
    clock.advance(LOCK)
    assert sp.state_batches()[0].last_offset == 19_999
    assert persister.last_write.batches == (sb(0, 19_999, AVAILABLE, 1),)
    assert acquire(sp, n=20_000) == [(0, 19_999, 2)]
    # Acknowledge every other offset individually, then the rest.
    types = [ACCEPT if o % 2 else REJECT for o in range(20_000)]
    assert sp.acknowledge("m1", [AckBatch(0, 19_999, types)]) is ErrorCode.NONE
    assert (sp.start_offset, sp.end_offset) == (20_000, 20_000)


# -- more edges ------------------------------------------------------------------------------------


def test_config_validation_and_broker_defaults() -> None:
    for bad in (
        {"delivery_count_limit": 0},
        {"record_lock_duration_ms": 0},
        {"max_in_flight_records": 0},
        {"isolation": "read_dirty"},
        {"auto_offset_reset": "by_duration:PT1H"},
    ):
        with pytest.raises(InvalidConfigError):
            SharePartitionConfig(**bad)
    cfg = SharePartitionConfig.from_broker_config(
        BrokerConfig({"group.share.delivery.count.limit": "3"}), isolation="read_committed"
    )
    assert (cfg.delivery_count_limit, cfg.record_lock_duration_ms) == (3, 30_000)
    assert (cfg.max_in_flight_records, cfg.read_committed) == (2000, True)


def test_switching_to_read_committed_never_redelivers_aborted_records() -> None:
    log = DataLog()
    log.append_txn(pid=4)  # 0-4
    log.end_txn(4, commit=False)  # 5
    log.append(5)  # 6-10
    persister = FakePersister.with_state(0)
    events = Events()
    sp = make_sp(log, persister, events=events)
    assert acquire(sp, n=5) == [(0, 4, 1)]
    assert sp.acknowledge("m1", [ack(0, 4, RELEASE)]) is ErrorCode.NONE
    sp.update_config(SharePartitionConfig(isolation="read_committed"))
    assert acquire(sp) == [(5, 10, 1)]  # the abort marker and the records after it
    assert states(sp, 0, 4) == [None] * 5  # archived, then evicted below the SPSO
    assert sp.start_offset == 5
    assert events.get("archived") == 5


def test_lock_expiry_below_the_start_offset_archives() -> None:
    events = Events()
    log, persister, clock, sp = rig(10, events=events)
    acquire(sp)
    log.partition.delete_records(5)
    assert sp.on_log_appended() is False  # nothing new to fetch
    clock.advance(LOCK)
    assert states(sp, 0, 4) == [None] * 5
    assert states(sp, 5, 9) == [(AVAILABLE, 1, "")] * 5
    assert events.get("archived") == 5
    assert (persister.last_write.start_offset, persister.last_write.batches) == (
        5,
        (sb(5, 9, AVAILABLE, 1),),
    )


def test_complete_pending_below_the_start_offset_and_without_persisting() -> None:
    log, persister, _, sp = rig(5, 5)
    acquire(sp)
    assert sp.prepare_pending("m1", 10, 1, [ack(0, 9, ACCEPT)]) is ErrorCode.NONE
    log.partition.delete_records(3)
    assert sp.on_log_appended() is False
    assert sp.record_state(0) == (TX_PENDING, 1, "m1")
    writes = len(persister.writes)
    assert sp.complete_pending(10, 1, commit=False, persist=False) is ErrorCode.NONE
    assert len(persister.writes) == writes
    assert states(sp, 0, 2) == [None] * 3  # aborted below the SPSO: archived and evicted
    assert states(sp, 3, 4) == [(AVAILABLE, 1, "")] * 2
    assert sp.next_fetch_offset == 3
    persister.write_error = ErrorCode.COORDINATOR_NOT_AVAILABLE
    acquire(sp)
    assert sp.prepare_pending("m1", 10, 2, [ack(3, 9, REJECT)]) is ErrorCode.NONE
    # The outcome is final: a failed write is logged, the state still changes.
    assert sp.complete_pending(10, 2, commit=True) is ErrorCode.NONE
    assert (sp.start_offset, sp.end_offset) == (10, 10)


def test_start_offset_beyond_the_log_waits_for_data() -> None:
    log = DataLog()
    log.append(5)
    sp = make_sp(log, FakePersister.with_state(8))
    assert sp.acquire("m1", 10, BIG) == AcquireResult()
    log.append_batches(5, 5)  # 5-9, 10-14
    assert acquire(sp) == [(8, 14, 1)]


def test_a_failing_metrics_callback_does_not_break_the_partition() -> None:
    def broken(kind: str, count: int) -> None:
        raise RuntimeError(kind)

    sp = rig(5).sp
    sp._on_event = broken
    assert acquire(sp) == [(0, 4, 1)]
    assert sp.acknowledge("m1", [ack(0, 4, ACCEPT)]) is ErrorCode.NONE


def test_against_the_real_share_coordinator() -> None:
    """The persister seam as the broker wires it: writes are accepted and reload the same."""
    clock = ManualClock(NOW)
    coordinator = make_coordinator(clock, lambda _index: MemoryLog(), BrokerConfig())
    coordinator.load()
    assert coordinator.initialize_state(KEY, 0, -1) is ErrorCode.NONE
    log = DataLog()
    log.pad_to(100)
    sp = make_sp(log, coordinator, clock)  # type: ignore[arg-type]
    log.append_batches(5, 5, 5)
    assert acquire(sp, n=15) == [(100, 114, 1)]
    request = [ack(100, 104, ACCEPT), AckBatch(105, 109, [RELEASE, REJECT] * 2 + [RELEASE])]
    assert sp.acknowledge("m1", request) is ErrorCode.NONE
    clock.advance(LOCK)
    expected = sp.state_batches()
    reloaded = make_sp(log, coordinator, clock)  # type: ignore[arg-type]
    assert (reloaded.start_offset, reloaded.end_offset) == (sp.start_offset, sp.end_offset)
    assert reloaded.state_batches() == expected
    assert acquire(reloaded) == [(105, 105, 2), (107, 107, 2), (109, 114, 2)]


# -- randomized invariants -------------------------------------------------------------------------


def derived_archived(log: DataLog, read_committed: bool) -> set[int]:
    """Offsets the share partition archives from the log alone (markers, aborted records)."""
    out: set[int] = set()
    partition = log.partition
    for header, _raw in partition.log.batches(0):
        aborted = read_committed and any(
            a.producer_id == header.producer_id
            for a in partition.aborted_between(header.base_offset, header.last_offset + 1)
            if a.first_offset <= header.base_offset <= a.last_offset
        )
        if header.is_control or (header.is_transactional and aborted):
            out.update(range(header.base_offset, header.last_offset + 1))
    return out


def check_invariants(sp: SharePartition, log: DataLog, persister: FakePersister) -> None:
    runs = list(sp.inflight.runs)
    start, end = sp.start_offset, sp.end_offset
    assert start <= end
    for a, b in itertools.pairwise(runs):
        assert a.last < b.first
    # [start, end) is tiled; nothing at or beyond end; only held runs wholly below start.
    covered = [r for r in runs if r.last >= start]
    if start < end:
        assert covered[0].first <= start
        assert covered[-1].last == end - 1
        for a, b in itertools.pairwise(covered):
            assert a.last + 1 == b.first
    else:
        assert covered == []
    for r in runs:
        if r.last < start:
            assert r.state in (ACQUIRED, TX_PENDING)
    # The SPSO sits on an unfinished record.
    head = sp.inflight.runs.find(start)
    assert start == end or (head is not None and (head.state is None or not head.state.is_terminal))
    # Lock accounting: every ACQUIRED record has a live lock; nothing else has one.
    held: dict[int, int] = {}
    for r in runs:
        if r.state is ACQUIRED:
            assert r.lock is not None and r.lock in sp.inflight.locks and r.member_id
            held[id(r.lock)] = held.get(id(r.lock), 0) + r.count
        else:
            assert r.lock is None
        assert (r.pending is not None) == (r.state is TX_PENDING)
        # The delivery limit: a record at the limit is never offered again.
        limit = sp.config.delivery_count_limit
        assert r.state is not AVAILABLE or r.delivery_count < limit
        assert r.delivery_count <= limit
    assert {id(lock): lock.held for lock in sp.inflight.locks} == held
    # next_fetch_offset is the first AVAILABLE or never-fetched offset.
    expected_next = end
    for r in covered:
        if r.state is None or r.state is AVAILABLE:
            expected_next = max(r.first, start)
            break
    assert sp.next_fetch_offset == expected_next
    # Durability: a reload neither loses an unfinished record nor revives a finished one.
    reloaded = make_sp(
        log,
        FakePersister(
            state_epoch=persister.state_epoch,
            start_offset=persister.start_offset,
            offsets=dict(persister.offsets),
        ),
        ManualClock(NOW),
        sp.config,
    )
    derived = derived_archived(log, sp.config.read_committed)
    log_start = log.partition.log_start_offset
    for offset in range(min(reloaded.start_offset, start), max(reloaded.end_offset, end)):
        mine = sp.record_state(offset) if offset >= start else None
        theirs = reloaded.record_state(offset) if offset >= reloaded.start_offset else None
        finished_here = offset < start or (mine is not None and mine[0].is_terminal)
        finished_there = offset < reloaded.start_offset or (
            theirs is not None and theirs[0].is_terminal
        )
        if offset < log_start or offset in derived:
            continue
        if offset >= end and theirs is None:
            continue
        assert finished_here == finished_there, (offset, mine, theirs)


@pytest.mark.parametrize("seed", range(24))
def test_random_operations_keep_the_invariants(seed: int) -> None:
    rng = random.Random(seed)
    read_committed = seed % 2 == 1
    log = DataLog()
    persister = FakePersister.with_state(0)
    clock = ManualClock(NOW)
    config = SharePartitionConfig(
        delivery_count_limit=rng.choice([2, 3, 5]),
        max_in_flight_records=rng.choice([8, 20, 200]),
        isolation="read_committed" if read_committed else "read_uncommitted",
    )
    sp = make_sp(log, persister, clock, config)
    members = ["m1", "m2", "m3"]
    open_txns: set[int] = set()
    pending_pids: set[int] = set()
    for _step in range(250):
        op = rng.random()
        if op < 0.2:
            if rng.random() < 0.3:
                pid = rng.choice([1, 2])
                log.append_txn(pid, rng.randint(1, 4))
                open_txns.add(pid)
            else:
                log.append(rng.randint(1, 6))
        elif op < 0.25 and open_txns:
            pid = rng.choice(sorted(open_txns))
            log.end_txn(pid, commit=rng.random() < 0.5)
            open_txns.discard(pid)
        elif op < 0.5:
            got = sp.acquire(rng.choice(members), rng.randint(1, 12), rng.choice([1, BIG]))
            assert got.error is ErrorCode.NONE
        elif op < 0.75:
            owners: dict[str, list[int]] = {}
            for o in range(sp.start_offset, sp.end_offset):
                found = sp.record_state(o)
                if found is not None and found[0] is ACQUIRED:
                    owners.setdefault(found[2], []).append(o)
            member = rng.choice(sorted(owners)) if owners else rng.choice(members)
            mine = owners.get(member, [])
            if not mine or rng.random() < 0.1:
                first = rng.randint(0, sp.end_offset + 3)
                batches = [ack(first, first + rng.randint(0, 4), rng.choice([0, 1, 2, 3, 4]))]
            else:
                first = rng.choice(mine)
                last = first
                while last + 1 in mine and last - first < 6 and rng.random() < 0.8:
                    last += 1
                if rng.random() < 0.5:
                    types = [rng.choice([GAP, ACCEPT, ACCEPT, RELEASE, REJECT, RENEW])]
                else:
                    types = [
                        rng.choice([ACCEPT, ACCEPT, RELEASE, REJECT])
                        for _ in range(last - first + 1)
                    ]
                batches = [AckBatch(first, last, types)]
            if rng.random() < 0.1:
                persister.write_errors = [ErrorCode.COORDINATOR_NOT_AVAILABLE]
            if rng.random() < 0.15 and all(t != RENEW for b in batches for t in b.ack_types):
                pid = rng.choice([10, 11])
                if sp.prepare_pending(member, pid, 0, batches) is ErrorCode.NONE:
                    pending_pids.add(pid)
            else:
                sp.acknowledge(member, batches)
            persister.write_errors = []
        elif op < 0.8 and pending_pids:
            pid = rng.choice(sorted(pending_pids))
            assert sp.complete_pending(pid, 0, commit=rng.random() < 0.5) is ErrorCode.NONE
            pending_pids.discard(pid)
        elif op < 0.85:
            sp.release_acquired_records(rng.choice(members))
        elif op < 0.97:
            clock.advance(rng.choice([1_000, 1_000, 10_000, LOCK]))
        else:
            hw = log.partition.high_watermark
            target = rng.randint(log.partition.log_start_offset, hw)
            log.partition.delete_records(target)
            sp.on_log_appended()
        check_invariants(sp, log, persister)
