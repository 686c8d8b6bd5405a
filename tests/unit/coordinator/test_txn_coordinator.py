"""The transaction coordinator through its public methods (reference §1, scenarios 1-32)."""

from __future__ import annotations

import dataclasses

import pytest

from coordinator.txn_coordinator import TransactionCoordinator
from tests.unit.coordinator.txn_harness import (
    PID,
    RETRY_MS,
    TIMEOUT_MS,
    TP0,
    TP1,
    TP2,
    TV_0,
    TV_2,
    TXN,
    Bench,
    S,
)
from txn.batch import ControlType
from txn.errors import ErrorCode, KafkaStorageError, error_for_code
from txn.limits import INT32_MAX
from txn.state import TransactionState

E = ErrorCode
NotEnoughReplicasError = error_for_code(ErrorCode.NOT_ENOUGH_REPLICAS)
MAX_TIMEOUT = 900000
ABORT_INTERVAL = 10000


@pytest.fixture
def bench() -> Bench:
    return Bench()


def started(
    state: TransactionState | None = None,
    tv_level: int = TV_2,
    *,
    blocked: bool = False,
    **seed: object,
) -> Bench:
    """A loaded coordinator, seeded with one transaction in ``state`` if given; ``blocked``
    makes markers to TP0 fail, so that a transaction's completion cannot finish."""
    bench = Bench(tv_level=tv_level)
    if blocked:
        bench.handler.blocked = {TP0}
    if state is not None:
        bench.seed(state, **seed)  # type: ignore[arg-type]
    bench.load()
    return bench


# --- InitProducerId (scenarios 1-13, 29, 30) ------------------------------------------------


def test_s01_null_transactional_id_gets_fresh_ids(bench: Bench) -> None:
    c = bench.load()
    first = c.init_producer_id(None, TIMEOUT_MS)
    second = c.init_producer_id(None, TIMEOUT_MS)
    assert (first.error, first.producer_id, first.producer_epoch) == (E.NONE, 0, 0)
    assert (second.error, second.producer_id, second.producer_epoch) == (E.NONE, 1, 0)
    assert bench.record_count() == 0  # no state kept for idempotent producers


def test_s02_empty_transactional_id_is_invalid(bench: Bench) -> None:
    result = bench.load().init_producer_id("", TIMEOUT_MS)
    assert (result.error, result.producer_id, result.producer_epoch) == (E.INVALID_REQUEST, -1, -1)


@pytest.mark.parametrize("expected", [(-1, -1), (5, 3)])
def test_s03_unknown_id_starts_at_epoch_zero(bench: Bench, expected: tuple[int, int]) -> None:
    result = bench.load().init_producer_id(TXN, TIMEOUT_MS, *expected)
    assert (result.error, result.producer_id, result.producer_epoch) == (E.NONE, 0, 0)
    assert bench.states_written() == [S.EMPTY]
    assert bench.view().state is S.EMPTY


def test_init_pid_pair_must_be_both_or_neither(bench: Bench) -> None:
    c = bench.load()
    assert c.init_producer_id(TXN, TIMEOUT_MS, 5, -1).error is E.INVALID_REQUEST
    assert c.init_producer_id(TXN, TIMEOUT_MS, -1, 3).error is E.INVALID_REQUEST


@pytest.mark.parametrize("state", [S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT])
def test_s04_idle_id_gets_epoch_bump_and_new_timeout(state: TransactionState) -> None:
    bench = started(state, epoch=1)
    result = bench.coordinator.init_producer_id(TXN, 10)
    assert (result.error, result.producer_id, result.producer_epoch) == (E.NONE, PID, 2)
    [description] = bench.coordinator.describe_transactions([TXN])
    assert (description.state, description.transaction_timeout_ms) == ("Empty", 10)


@pytest.mark.parametrize("state", [S.PREPARE_COMMIT, S.PREPARE_ABORT])
def test_s05_prepare_states_make_init_wait(state: TransactionState) -> None:
    bench = started(state, blocked=True)  # the markers cannot complete
    c = bench.coordinator
    bench.settle()
    assert c.init_producer_id(TXN, TIMEOUT_MS).error is E.CONCURRENT_TRANSACTIONS
    assert bench.view().state is state


def test_s06_tv0_ongoing_is_fenced_and_aborted() -> None:
    bench = Bench(tv_level=TV_0)
    bench.handler.blocked = {TP0}
    bench.seed(S.ONGOING, epoch=1)
    c = bench.load()
    result = c.init_producer_id(TXN, TIMEOUT_MS)
    assert (result.error, result.producer_id, result.producer_epoch) == (
        E.CONCURRENT_TRANSACTIONS,
        -1,
        -1,
    )
    view = bench.view()
    assert (view.state, view.producer_epoch, view.last_producer_epoch) == (S.PREPARE_ABORT, 2, -1)
    written = bench.records()[-1][1]
    assert written is not None and (written.state, written.producer_epoch) == (S.PREPARE_ABORT, 2)


def test_s07_failed_fence_appends_do_not_bump_again() -> None:
    bench = Bench(tv_level=TV_0)
    bench.seed(S.ONGOING, epoch=1)
    c = bench.load()
    bench.txn_log.fail_next(NotEnoughReplicasError(), times=2)
    for _ in range(2):
        result = c.init_producer_id(TXN, TIMEOUT_MS)
        assert result.error is E.COORDINATOR_NOT_AVAILABLE  # NOT_ENOUGH_REPLICAS, mapped
        view = bench.view()
        assert (view.state, view.producer_epoch, view.has_failed_epoch_fence) == (
            S.ONGOING,
            2,
            True,
        )
        assert view.pending_state is None
    assert c.init_producer_id(TXN, TIMEOUT_MS).error is E.CONCURRENT_TRANSACTIONS
    assert bench.view().producer_epoch == 2
    bench.settle()
    view = bench.view()
    assert (view.state, view.producer_epoch, view.has_failed_epoch_fence) == (
        S.COMPLETE_ABORT,
        2,
        False,
    )
    # The retry now gets a fresh epoch.
    result = c.init_producer_id(TXN, TIMEOUT_MS)
    assert (result.error, result.producer_epoch) == (E.NONE, 3)


def test_s08_tv2_fence_at_32766_bumps_once() -> None:
    bench = Bench(tv_level=TV_2)
    bench.handler.blocked = {TP0}
    bench.seed(S.ONGOING, epoch=32766, tv=TV_2)
    c = bench.load()
    assert c.init_producer_id(TXN, TIMEOUT_MS).error is E.CONCURRENT_TRANSACTIONS
    view = bench.view()
    assert (view.state, view.producer_id, view.producer_epoch) == (S.PREPARE_ABORT, PID, 32767)


def test_s09_exhausted_epoch_rotates_the_producer_id() -> None:
    bench = started(S.EMPTY, epoch=32766)
    result = bench.coordinator.init_producer_id(TXN, TIMEOUT_MS)
    assert result.error is E.NONE
    assert result.producer_id != PID and result.producer_epoch == 0


def test_s10_expected_current_epoch_bumps_and_retry_is_idempotent() -> None:
    bench = started(S.EMPTY, epoch=10)
    c = bench.coordinator
    first = c.init_producer_id(TXN, TIMEOUT_MS, PID, 10)
    retry = c.init_producer_id(TXN, TIMEOUT_MS, PID, 10)
    assert (first.error, first.producer_id, first.producer_epoch) == (E.NONE, PID, 11)
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (E.NONE, PID, 11)


def test_s11_stale_expected_epoch_is_fenced() -> None:
    bench = started(S.EMPTY, epoch=10)
    c = bench.coordinator
    assert c.init_producer_id(TXN, TIMEOUT_MS).producer_epoch == 11  # the new producer
    assert c.init_producer_id(TXN, TIMEOUT_MS, PID, 10).error is E.PRODUCER_FENCED


def test_s12_expected_previous_id_with_live_epoch_is_fenced() -> None:
    bench = started(S.EMPTY, pid=11, prev=10, epoch=1)
    assert bench.coordinator.init_producer_id(TXN, TIMEOUT_MS, 10, 1).error is E.PRODUCER_FENCED


def test_s13_rotation_retry_returns_the_same_new_id() -> None:
    bench = started(S.EMPTY, epoch=32766)
    c = bench.coordinator
    first = c.init_producer_id(TXN, TIMEOUT_MS, PID, 32766)
    assert first.error is E.NONE and first.producer_id != PID and first.producer_epoch == 0
    retry = c.init_producer_id(TXN, TIMEOUT_MS, PID, 32766)
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (E.NONE, first.producer_id, 0)
    assert c.init_producer_id(TXN, TIMEOUT_MS, PID, 32765).error is E.PRODUCER_FENCED


def test_s29_2pc_needs_the_broker_flag() -> None:
    bench = Bench(config={"transaction.two.phase.commit.enable": "false"})
    c = bench.load()
    result = c.init_producer_id(TXN, TIMEOUT_MS, enable_2pc=True)
    assert result.error is E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_s29_keep_prepared_without_transaction_is_a_plain_init(bench: Bench) -> None:
    result = bench.load().init_producer_id(TXN, TIMEOUT_MS, keep_prepared_txn=True)
    assert (result.error, result.producer_epoch) == (E.NONE, 0)
    assert (result.ongoing_txn_producer_id, result.ongoing_txn_producer_epoch) == (-1, -1)


@pytest.mark.parametrize(
    ("timeout", "valid"),
    [(0, False), (-1, False), (MAX_TIMEOUT + 1, False), (1, True), (MAX_TIMEOUT, True)],
)
def test_s30_transaction_timeout_bounds(bench: Bench, timeout: int, valid: bool) -> None:
    c = bench.load()
    result = c.init_producer_id(TXN, timeout)
    assert result.error is (E.NONE if valid else E.INVALID_TRANSACTION_TIMEOUT)
    two_pc = c.init_producer_id("txn-2pc", timeout, enable_2pc=True)
    assert two_pc.error is E.NONE
    view = c.transaction_view("txn-2pc")
    assert view is not None and view.two_phase_commit and view.txn_timeout_ms == INT32_MAX


def test_requests_before_load_get_load_in_progress(bench: Bench) -> None:
    c = bench.coordinator
    assert c.init_producer_id(TXN, TIMEOUT_MS).error is E.COORDINATOR_LOAD_IN_PROGRESS
    assert c.end_txn(TXN, PID, 1, True, tv2=False).error is E.COORDINATOR_LOAD_IN_PROGRESS
    assert c.add_partitions_to_txn(TXN, PID, 1, [TP0]) == {TP0: E.COORDINATOR_LOAD_IN_PROGRESS}
    assert c.describe_transactions([TXN])[0].error is E.COORDINATOR_LOAD_IN_PROGRESS
    assert c.availability() is E.COORDINATOR_LOAD_IN_PROGRESS


# --- AddPartitionsToTxn / verify (scenarios 14-16, 25) --------------------------------------


@pytest.mark.parametrize("state", [S.PREPARE_COMMIT, S.PREPARE_ABORT])
def test_s14_add_partitions_during_prepare_waits(state: TransactionState) -> None:
    bench = started(state, blocked=True)
    c = bench.coordinator
    assert c.add_partitions_to_txn(TXN, PID, 1, [TP2]) == {TP2: E.CONCURRENT_TRANSACTIONS}


def test_s15_add_partitions_with_wrong_epoch_is_fenced() -> None:
    bench = started(S.EMPTY, epoch=10)
    assert bench.coordinator.add_partitions_to_txn(TXN, PID, 0, [TP0]) == {TP0: E.PRODUCER_FENCED}


def test_add_partitions_happy_path_and_subset_is_not_written() -> None:
    bench = started(S.EMPTY, epoch=1)
    c = bench.coordinator
    assert c.add_partitions_to_txn(TXN, PID, 1, [TP0, TP1]) == {TP0: E.NONE, TP1: E.NONE}
    assert c.transaction_partitions(TXN) == {TP0, TP1}
    count = bench.record_count()
    assert c.add_partitions_to_txn(TXN, PID, 1, [TP0]) == {TP0: E.NONE}
    assert bench.record_count() == count
    assert c.add_partitions_to_txn(TXN, PID, 1, [TP2]) == {TP2: E.NONE}
    view = bench.view()
    assert view.state is S.ONGOING and set(view.topic_partitions) == {TP0, TP1, TP2}


def test_add_partitions_errors(bench: Bench) -> None:
    c = bench.load()
    assert c.add_partitions_to_txn("", PID, 1, [TP0]) == {TP0: E.INVALID_REQUEST}
    assert c.add_partitions_to_txn(TXN, PID, 1, [TP0]) == {TP0: E.INVALID_PRODUCER_ID_MAPPING}
    ids = c.init_producer_id(TXN, TIMEOUT_MS)
    assert c.add_partitions_to_txn(TXN, ids.producer_id + 1, 0, [TP0]) == {
        TP0: E.INVALID_PRODUCER_ID_MAPPING
    }


def test_add_partitions_append_failure_is_mapped_and_forgotten() -> None:
    bench = started(S.EMPTY, epoch=1)
    c = bench.coordinator
    bench.txn_log.fail_next(KafkaStorageError())
    assert c.add_partitions_to_txn(TXN, PID, 1, [TP0]) == {TP0: E.NOT_COORDINATOR}
    view = bench.view()
    assert (view.state, view.pending_state, view.topic_partitions) == (S.EMPTY, None, ())
    bench.txn_log.fail_next(OSError("disk"))
    assert c.add_partitions_to_txn(TXN, PID, 1, [TP0]) == {TP0: E.NOT_COORDINATOR}
    assert c.add_partitions_to_txn(TXN, PID, 1, [TP0]) == {TP0: E.NONE}


def test_s16_verify_only() -> None:
    bench = started(S.ONGOING, epoch=1, partitions=(TP0,))
    c = bench.coordinator
    assert c.verify_partitions(TXN, PID + 1, 1, [TP0]) == {TP0: E.INVALID_PRODUCER_ID_MAPPING}
    assert c.verify_partitions("unknown", PID, 1, [TP0]) == {TP0: E.INVALID_PRODUCER_ID_MAPPING}
    assert c.verify_partitions(TXN, PID, 0, [TP0]) == {TP0: E.PRODUCER_FENCED}
    assert c.verify_partitions(TXN, PID, 1, [TP0, TP1]) == {
        TP0: E.NONE,
        TP1: E.TRANSACTION_ABORTABLE,
    }
    # Even while the add of TP1 is pending, TP1 is not in the transaction yet.
    seen: dict[object, E] = {}
    bench.txn_log.on_append = lambda: seen.update(c.verify_partitions(TXN, PID, 1, [TP1]))
    c.add_partitions_to_txn(TXN, PID, 1, [TP1])
    assert seen == {TP1: E.TRANSACTION_ABORTABLE}
    assert c.verify_partitions(TXN, PID, 1, [TP1]) == {TP1: E.NONE}
    bench.handler.blocked = {TP0}
    c.end_txn(TXN, PID, 1, True, tv2=False)
    assert c.verify_partitions(TXN, PID, 1, [TP0]) == {TP0: E.CONCURRENT_TRANSACTIONS}


# --- EndTxn (scenarios 17-25) ---------------------------------------------------------------


@pytest.mark.parametrize("tv2", [False, True])
def test_s17_end_txn_wrong_id_or_epoch(tv2: bool) -> None:
    bench = started(S.ONGOING, epoch=1)
    c = bench.coordinator
    assert c.end_txn(TXN, 0, 1, True, tv2).error is E.INVALID_PRODUCER_ID_MAPPING
    assert c.end_txn(TXN, PID, 0, True, tv2).error is E.PRODUCER_FENCED
    assert c.end_txn("unknown", PID, 1, True, tv2).error is E.INVALID_PRODUCER_ID_MAPPING
    assert c.end_txn("", PID, 1, True, tv2).error is E.INVALID_REQUEST


def test_s18_tv0_complete_commit() -> None:
    bench = started(S.COMPLETE_COMMIT, epoch=1)
    c = bench.coordinator
    count = bench.record_count()
    retry = c.end_txn(TXN, PID, 1, True, tv2=False)
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (E.NONE, -1, -1)
    assert bench.record_count() == count
    assert c.end_txn(TXN, PID, 0, True, tv2=False).error is E.PRODUCER_FENCED
    assert c.end_txn(TXN, PID, 1, False, tv2=False).error is E.INVALID_TXN_STATE


def test_s19_tv2_complete_commit() -> None:
    bench = started(S.COMPLETE_COMMIT, blocked=True, epoch=1, tv=TV_2)
    c = bench.coordinator
    count = bench.record_count()
    retry = c.end_txn(TXN, PID, 0, True, tv2=True)
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (E.NONE, PID, 1)
    assert bench.record_count() == count
    assert c.end_txn(TXN, PID, 1, True, tv2=True).error is E.INVALID_TXN_STATE
    assert c.end_txn(TXN, PID, 0, False, tv2=True).error is E.INVALID_TXN_STATE
    bench.clock.advance(7)
    abort = c.end_txn(TXN, PID, 1, False, tv2=True)
    assert (abort.error, abort.producer_id, abort.producer_epoch) == (E.NONE, PID, 2)
    written = bench.records()[-1][1]
    assert written is not None
    assert (written.state, written.producer_epoch) == (S.PREPARE_ABORT, 2)
    assert written.start_timestamp_ms == bench.clock.now_ms()


def test_s20_tv2_complete_abort() -> None:
    bench = started(S.COMPLETE_ABORT, epoch=1, tv=TV_2)
    c = bench.coordinator
    count = bench.record_count()
    assert c.end_txn(TXN, PID, 0, False, tv2=True).error is E.NONE
    assert bench.record_count() == count
    assert c.end_txn(TXN, PID, 1, True, tv2=True).error is E.INVALID_TXN_STATE
    assert c.end_txn(TXN, PID, 0, True, tv2=True).error is E.INVALID_TXN_STATE
    result = c.end_txn(TXN, PID, 1, False, tv2=True)
    assert (result.error, result.producer_epoch) == (E.NONE, 2)
    assert bench.states_written()[-1] is S.PREPARE_ABORT


def test_s21_empty_state() -> None:
    bench = started(S.EMPTY, epoch=1)
    c = bench.coordinator
    assert c.end_txn(TXN, PID, 1, False, tv2=False).error is E.INVALID_TXN_STATE
    assert c.end_txn(TXN, PID, 1, True, tv2=False).error is E.INVALID_TXN_STATE
    assert c.end_txn(TXN, PID, 0, False, tv2=True).error is E.PRODUCER_FENCED
    assert c.end_txn(TXN, PID, 1, True, tv2=True).error is E.INVALID_TXN_STATE
    assert c.end_txn(TXN, PID, 0, True, tv2=True).error is E.PRODUCER_FENCED
    result = c.end_txn(TXN, PID, 1, False, tv2=True)
    assert (result.error, result.producer_id, result.producer_epoch) == (E.NONE, PID, 2)
    bench.settle()
    assert bench.view().state is S.COMPLETE_ABORT  # no partitions: no marker to wait for


@pytest.mark.parametrize("tv2", [False, True])
def test_s22_end_txn_while_markers_are_in_flight(tv2: bool) -> None:
    # Kafka sets the pending Complete* state while markers are in flight, so a client sees
    # CONCURRENT_TRANSACTIONS for any EndTxn until they are written; then the table applies.
    bench = started(S.ONGOING, blocked=True, epoch=1, tv=TV_2 if tv2 else TV_0)
    c = bench.coordinator
    first = c.end_txn(TXN, PID, 1, False, tv2)
    assert first.error is E.NONE
    epoch = first.producer_epoch if tv2 else 1
    retry_epoch = 1
    assert c.end_txn(TXN, PID, retry_epoch, False, tv2).error is E.CONCURRENT_TRANSACTIONS
    assert c.end_txn(TXN, PID, retry_epoch, True, tv2).error is E.CONCURRENT_TRANSACTIONS
    bench.handler.blocked.clear()
    bench.settle(RETRY_MS)
    assert bench.view().state is S.COMPLETE_ABORT
    assert c.end_txn(TXN, PID, retry_epoch, True, tv2).error is E.INVALID_TXN_STATE
    assert c.end_txn(TXN, PID, retry_epoch, False, tv2).error is E.NONE
    assert bench.view().producer_epoch == epoch


def test_tv2_commit_at_short_max_is_refused_and_abort_recovers() -> None:
    bench = started(S.ONGOING, epoch=32767, tv=TV_2)
    c = bench.coordinator
    assert c.end_txn(TXN, PID, 32767, True, tv2=True).error is E.UNKNOWN_SERVER_ERROR
    assert bench.view().pending_state is None
    result = c.end_txn(TXN, PID, 32767, False, tv2=True)
    assert result.error is E.NONE and result.producer_id != PID and result.producer_epoch == 0
    bench.settle()
    view = bench.view()
    assert (view.state, view.producer_id, view.producer_epoch) == (
        S.COMPLETE_ABORT,
        result.producer_id,
        0,
    )


def test_s23_tv2_same_epoch_on_prepared_commit_is_not_a_retry() -> None:
    bench = started(S.ONGOING, blocked=True, epoch=1, tv=TV_2)
    c = bench.coordinator
    assert c.end_txn(TXN, PID, 1, True, tv2=True).producer_epoch == 2
    bench.handler.blocked.clear()
    bench.settle(RETRY_MS)
    # Epoch 2 is the current epoch, so a commit at 2 is a new (empty) transaction's commit.
    assert c.end_txn(TXN, PID, 2, True, tv2=True).error is E.INVALID_TXN_STATE
    assert c.end_txn(TXN, PID, 1, True, tv2=True).error is E.NONE  # the retry
    assert c.end_txn(TXN, PID, 3, True, tv2=True).error is E.PRODUCER_FENCED


def test_s24_s25_tv2_overflow_retries_and_new_id_before_completion() -> None:
    bench = started(S.ONGOING, blocked=True, epoch=32766, tv=TV_2)
    c = bench.coordinator
    result = c.end_txn(TXN, PID, 32766, True, tv2=True)
    new_pid = result.producer_id
    assert result.error is E.NONE and new_pid != PID and result.producer_epoch == 0
    view = bench.view()
    assert (view.state, view.producer_epoch, view.next_producer_id) == (
        S.PREPARE_COMMIT,
        32767,
        new_pid,
    )
    assert c.end_txn(TXN, PID, 32766, True, tv2=True).error is E.CONCURRENT_TRANSACTIONS
    assert c.add_partitions_to_txn(TXN, new_pid, 0, [TP2]) == {TP2: E.CONCURRENT_TRANSACTIONS}
    # The markers carry the post-prepare id and epoch.
    bench.settle()
    assert {(m.producer_id, m.producer_epoch) for m in bench.handler.received} == {(PID, 32767)}

    bench.handler.blocked.clear()
    bench.settle(RETRY_MS)
    view = bench.view()
    assert (view.state, view.producer_id, view.producer_epoch, view.prev_producer_id) == (
        S.COMPLETE_COMMIT,
        new_pid,
        0,
        PID,
    )
    retry = c.end_txn(TXN, PID, 32766, True, tv2=True)
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (E.NONE, new_pid, 0)
    assert c.add_partitions_to_txn(TXN, new_pid, 0, [TP2]) == {TP2: E.NONE}


# --- timeouts (scenarios 26-28, 31) ---------------------------------------------------------


def test_s26_timed_out_tv0_transaction_is_aborted_with_epoch_bump() -> None:
    bench = Bench(tv_level=TV_0)
    bench.handler.blocked = {TP0}
    bench.seed(S.ONGOING, epoch=1, timeout_ms=1000)
    c = bench.load()
    bench.clock.advance(1001)
    assert c.abort_timed_out_transactions() == [TXN]
    view = bench.view()
    assert (view.state, view.producer_epoch, view.last_producer_epoch) == (S.PREPARE_ABORT, 2, -1)


def test_s27_reaper_skips_transactions_with_a_pending_transition() -> None:
    bench = started(S.ONGOING, epoch=1, timeout_ms=1000)
    c = bench.coordinator
    bench.clock.advance(1001)
    aborted: list[list[str]] = []
    count = bench.record_count()
    bench.txn_log.on_append = lambda: aborted.append(c.abort_timed_out_transactions())
    assert c.add_partitions_to_txn(TXN, PID, 1, [TP2]) == {TP2: E.NONE}
    assert aborted == [[]]
    assert bench.record_count() == count + 1  # only the AddPartitions record
    assert bench.view().state is S.ONGOING


def test_s28_tv2_timeout_at_32766_ends_at_32767() -> None:
    bench = started(S.ONGOING, epoch=32766, tv=TV_2, timeout_ms=1000)
    bench.clock.advance(1001)
    assert bench.coordinator.abort_timed_out_transactions() == [TXN]
    bench.settle()
    view = bench.view()
    assert (view.state, view.producer_id, view.producer_epoch) == (S.COMPLETE_ABORT, PID, 32767)
    # The next InitProducerId rotates the id instead of overflowing.
    result = bench.coordinator.init_producer_id(TXN, TIMEOUT_MS)
    assert result.error is E.NONE and result.producer_id != PID and result.producer_epoch == 0


def test_s31_only_expired_ongoing_transactions_time_out() -> None:
    bench = Bench()
    bench.handler.blocked = {TP0}
    bench.seed(S.ONGOING, tid="expired", timeout_ms=1000)
    bench.seed(S.ONGOING, tid="young", timeout_ms=1_000_000)
    bench.seed(S.PREPARE_COMMIT, tid="prepare-commit", timeout_ms=1000)
    bench.seed(S.PREPARE_ABORT, tid="prepare-abort", timeout_ms=1000)
    bench.seed(S.COMPLETE_COMMIT, tid="complete-commit", timeout_ms=1000)
    bench.seed(S.COMPLETE_ABORT, tid="complete-abort", timeout_ms=1000)
    bench.seed(S.ONGOING, tid="2pc", timeout_ms=INT32_MAX, two_phase_commit=True)
    c = bench.load()
    bench.clock.advance(5000)
    assert [tid for tid, _pid, _epoch in c.timed_out_transactions()] == ["expired"]


def test_timed_out_transaction_aborted_by_the_clock() -> None:
    bench = started(S.EMPTY, epoch=1)
    c = bench.coordinator
    c.init_producer_id(TXN, 5000)
    ids = c.init_producer_id(TXN, 5000)
    assert c.add_partitions_to_txn(TXN, PID, ids.producer_epoch, [TP0]) == {TP0: E.NONE}
    bench.clock.advance(5000 + ABORT_INTERVAL)
    view = bench.view()
    assert view.state is S.COMPLETE_ABORT
    assert view.producer_epoch == ids.producer_epoch + 1
    assert bench.handler.acked == [(TP0, PID, ids.producer_epoch + 1)]
    # The timed-out producer is fenced.
    late = c.end_txn(TXN, PID, ids.producer_epoch, True, tv2=False)
    assert late.error is E.PRODUCER_FENCED


def test_2pc_transaction_never_times_out(bench: Bench) -> None:
    c = bench.load()
    ids = c.init_producer_id(TXN, TIMEOUT_MS, enable_2pc=True)
    assert c.add_partitions_to_txn(TXN, ids.producer_id, ids.producer_epoch, [TP0]) == {TP0: E.NONE}
    bench.clock.advance(30 * 24 * 3600 * 1000)  # a month of reaper runs
    assert bench.view().state is S.ONGOING
    assert c.abort_timed_out_transactions() == []


def test_2pc_ongoing_is_fenced_by_a_plain_init(bench: Bench) -> None:
    c = bench.load()
    ids = c.init_producer_id(TXN, TIMEOUT_MS, enable_2pc=True)
    c.add_partitions_to_txn(TXN, ids.producer_id, ids.producer_epoch, [TP0])
    assert c.init_producer_id(TXN, TIMEOUT_MS).error is E.CONCURRENT_TRANSACTIONS
    bench.settle()
    assert bench.view().state is S.COMPLETE_ABORT
    result = c.init_producer_id(TXN, TIMEOUT_MS)
    assert result.error is E.NONE
    view = bench.view()
    assert not view.two_phase_commit and view.txn_timeout_ms == TIMEOUT_MS


# --- KIP-939 keepPreparedTxn ----------------------------------------------------------------


def test_keep_prepared_txn_hands_over_the_ongoing_transaction(bench: Bench) -> None:
    c = bench.load()
    ids = c.init_producer_id(TXN, TIMEOUT_MS, enable_2pc=True)
    pid, epoch = ids.producer_id, ids.producer_epoch
    c.add_partitions_to_txn(TXN, pid, epoch, [TP0, TP1])
    count = bench.record_count()

    resumed = c.init_producer_id(TXN, TIMEOUT_MS, enable_2pc=True, keep_prepared_txn=True)
    assert (resumed.error, resumed.producer_id, resumed.producer_epoch) == (E.NONE, pid, epoch)
    assert (resumed.ongoing_txn_producer_id, resumed.ongoing_txn_producer_epoch) == (pid, epoch)
    assert bench.record_count() == count  # nothing aborted, nothing bumped
    assert bench.view().state is S.ONGOING

    assert c.end_txn(TXN, pid, epoch, True, tv2=False).error is E.NONE
    bench.settle()
    assert bench.view().state is S.COMPLETE_COMMIT
    assert bench.handler.partitions_marked() == {TP0, TP1}
    assert all(m.result is ControlType.COMMIT for m in bench.handler.received)


def test_keep_prepared_txn_during_prepare_waits() -> None:
    bench = started(S.PREPARE_COMMIT, blocked=True, two_phase_commit=True, timeout_ms=INT32_MAX)
    c = bench.coordinator
    result = c.init_producer_id(TXN, TIMEOUT_MS, keep_prepared_txn=True)
    assert result.error is E.CONCURRENT_TRANSACTIONS


# --- markers --------------------------------------------------------------------------------


def test_markers_reach_every_partition_before_complete_is_written() -> None:
    bench = started(S.ONGOING, epoch=1, partitions=(TP0, TP1, TP2))
    c = bench.coordinator
    bench.handler.script = {TP1: [E.NOT_LEADER_OR_FOLLOWER, E.REQUEST_TIMED_OUT]}
    assert c.end_txn(TXN, PID, 1, True, tv2=False).error is E.NONE
    assert bench.states_written()[-1] is S.PREPARE_COMMIT
    assert bench.handler.received == []  # delivery is asynchronous

    bench.settle()
    assert bench.handler.partitions_marked() == {TP0, TP2}
    assert bench.view().state is S.PREPARE_COMMIT
    assert bench.view().markers_pending == (TP1,)
    assert S.COMPLETE_COMMIT not in bench.states_written()

    bench.settle(RETRY_MS)  # first retry fails again
    assert S.COMPLETE_COMMIT not in bench.states_written()
    bench.settle(RETRY_MS)  # the retry goes to TP1 only and succeeds
    assert [m.partitions for m in bench.handler.received] == [(TP2, TP0, TP1), (TP1,), (TP1,)]
    assert bench.states_written()[-1] is S.COMPLETE_COMMIT
    assert bench.view().state is S.COMPLETE_COMMIT
    marker = bench.handler.received[0]
    assert (marker.transactional_id, marker.producer_id, marker.producer_epoch) == (TXN, PID, 1)
    assert marker.result is ControlType.COMMIT


def test_complete_append_failure_is_retried_with_the_clock() -> None:
    bench = started(S.ONGOING, epoch=1)
    c = bench.coordinator
    assert c.end_txn(TXN, PID, 1, False, tv2=False).error is E.NONE
    bench.txn_log.fail_next(NotEnoughReplicasError(), times=2)
    bench.settle()
    view = bench.view()
    assert (view.state, view.pending_state) == (S.PREPARE_ABORT, S.COMPLETE_ABORT)
    bench.settle(RETRY_MS)
    assert bench.view().state is S.PREPARE_ABORT
    bench.settle(RETRY_MS)
    assert bench.view().state is S.COMPLETE_ABORT
    assert bench.states_written().count(S.COMPLETE_ABORT) == 1


def test_prepare_append_failure_sends_no_marker() -> None:
    bench = started(S.ONGOING, epoch=1)
    c = bench.coordinator
    bench.txn_log.fail_next(NotEnoughReplicasError())
    assert c.end_txn(TXN, PID, 1, True, tv2=False).error is E.COORDINATOR_NOT_AVAILABLE
    bench.settle()
    assert bench.handler.received == []
    view = bench.view()
    assert (view.state, view.pending_state) == (S.ONGOING, None)
    assert c.end_txn(TXN, PID, 1, True, tv2=False).error is E.NONE


def test_restart_completes_a_prepared_commit() -> None:
    bench = started(S.ONGOING, epoch=1)
    bench.handler.blocked = {TP0}
    assert bench.coordinator.end_txn(TXN, PID, 1, True, tv2=False).error is E.NONE
    bench.settle()
    assert bench.view().state is S.PREPARE_COMMIT

    bench.handler.blocked.clear()
    bench.handler.received.clear()
    c = bench.restart()
    view = bench.view()
    assert (view.state, view.producer_epoch, set(view.topic_partitions)) == (
        S.PREPARE_COMMIT,
        1,
        {TP0, TP1},
    )
    bench.settle()
    assert bench.view().state is S.COMPLETE_COMMIT
    assert {tp for m in bench.handler.received for tp in m.partitions} == {TP0, TP1}
    assert c.end_txn(TXN, PID, 1, True, tv2=False).error is E.NONE  # a client retry


def test_restart_replays_every_state_and_tombstone() -> None:
    bench = Bench()
    c = bench.load()
    c.init_producer_id("a", TIMEOUT_MS)
    ids = c.init_producer_id("b", TIMEOUT_MS, enable_2pc=True)
    c.add_partitions_to_txn("b", ids.producer_id, ids.producer_epoch, [TP0, TP2])
    before = {v.transactional_id: v for v in c.transaction_views()}
    bench.restart()
    after = {v.transactional_id: v for v in bench.coordinator.transaction_views()}
    assert after.keys() == before.keys()
    for tid, view in after.items():
        # Everything but the last epoch, which Kafka does not persist either.
        assert view == dataclasses.replace(before[tid], last_producer_epoch=-1)


def test_restart_never_reuses_producer_ids() -> None:
    bench = Bench()
    c = bench.load()
    first = c.init_producer_id(None, TIMEOUT_MS).producer_id
    bench.restart()
    second = bench.coordinator.init_producer_id(None, TIMEOUT_MS).producer_id
    assert second > first


# --- expiry (scenario 32) -------------------------------------------------------------------


def test_s32_idle_ids_expire_and_others_stay() -> None:
    bench = Bench(config={"transactional.id.expiration.ms": 1000})
    bench.handler.blocked = {TP0}
    for state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT, S.ONGOING, S.PREPARE_COMMIT):
        bench.seed(state, tid=state.state_name, timeout_ms=INT32_MAX, two_phase_commit=True)
    c = bench.load()
    bench.clock.advance(1000)
    bench.txn_log.fail_next(KafkaStorageError())
    assert c.remove_expired_transactional_ids() == []
    assert len(c.transaction_views()) == 5
    assert all(
        v.pending_state is None for v in c.transaction_views() if v.state is not S.PREPARE_COMMIT
    )

    removed = c.remove_expired_transactional_ids()
    assert sorted(removed) == ["CompleteAbort", "CompleteCommit", "Empty"]
    assert sorted(v.transactional_id for v in c.transaction_views()) == ["Ongoing", "PrepareCommit"]
    assert [v for t, v in bench.records() if t == "Empty"][-1] is None  # tombstone
    [gone] = c.describe_transactions(["Empty"])
    assert gone.error is E.TRANSACTIONAL_ID_NOT_FOUND
    bench.restart()
    assert sorted(v.transactional_id for v in bench.coordinator.transaction_views()) == [
        "Ongoing",
        "PrepareCommit",
    ]


def test_expiry_runs_on_the_clock() -> None:
    bench = Bench(
        config={
            "transactional.id.expiration.ms": 1000,
            "transaction.remove.expired.transaction.cleanup.interval.ms": 5000,
        }
    )
    c = bench.load()
    c.init_producer_id(TXN, TIMEOUT_MS)
    bench.clock.advance(4999)
    assert c.transaction_view(TXN) is not None
    bench.clock.advance(1)
    assert c.transaction_view(TXN) is None


# --- List / Describe / force-terminate ------------------------------------------------------


def test_list_and_describe() -> None:
    bench = Bench()
    bench.handler.blocked = {TP0}
    bench.seed(S.ONGOING, tid="a", pid=1, partitions=(TP0, TP2))
    bench.seed(S.EMPTY, tid="b", pid=2)
    bench.seed(S.PREPARE_COMMIT, tid="c", pid=3)
    c = bench.load()
    listing = c.list_transactions([], [])
    assert [(t.transactional_id, t.producer_id, t.state) for t in listing] == [
        ("a", 1, "Ongoing"),
        ("b", 2, "Empty"),
        ("c", 3, "PrepareCommit"),
    ]
    assert [t.transactional_id for t in c.list_transactions(["Ongoing", "Bogus"], [])] == ["a"]
    assert [t.transactional_id for t in c.list_transactions([], [2, 3])] == ["b", "c"]
    bench.clock.advance(100)
    # "b" never started (start -1), so it is listed as running for a long time, as in Kafka.
    assert [t.transactional_id for t in c.list_transactions([], [], 100)] == ["b"]
    assert [t.transactional_id for t in c.list_transactions([], [], 99)] == ["a", "b", "c"]

    a, unknown, empty = c.describe_transactions(["a", "zzz", ""])
    assert (a.error, a.state, a.producer_id, a.producer_epoch) == (E.NONE, "Ongoing", 1, 1)
    assert a.partitions == (TP2, TP0)
    assert a.transaction_timeout_ms == TIMEOUT_MS
    assert a.transaction_start_time_ms == 1_000_000
    assert unknown.error is E.TRANSACTIONAL_ID_NOT_FOUND
    assert empty.error is E.INVALID_REQUEST


def test_force_terminate_aborts_a_2pc_transaction(bench: Bench) -> None:
    c = bench.load()
    ids = c.init_producer_id(TXN, TIMEOUT_MS, enable_2pc=True)
    c.add_partitions_to_txn(TXN, ids.producer_id, ids.producer_epoch, [TP0])
    assert c.force_terminate(TXN).error is E.CONCURRENT_TRANSACTIONS
    assert c.force_terminate(TXN).error is E.CONCURRENT_TRANSACTIONS  # markers in flight
    bench.settle()
    assert bench.view().state is S.COMPLETE_ABORT
    done = c.force_terminate(TXN)
    assert done.error is E.NONE and done.producer_epoch == ids.producer_epoch + 2
    assert c.end_txn(TXN, ids.producer_id, ids.producer_epoch, True, False).error is (
        E.PRODUCER_FENCED
    )
    assert c.force_terminate("nope").error is E.TRANSACTIONAL_ID_NOT_FOUND


def test_closed_coordinator_refuses_requests(bench: Bench) -> None:
    c = bench.load()
    c.close()
    assert c.init_producer_id(TXN, TIMEOUT_MS).error is E.COORDINATOR_NOT_AVAILABLE
    assert c.list_transactions() == []
    assert c.availability() is E.COORDINATOR_NOT_AVAILABLE


def test_partition_for_is_zero() -> None:
    assert TransactionCoordinator.partition_for("anything") == 0


def test_full_tv2_transaction_cycle(bench: Bench) -> None:
    c = bench.load()
    ids = c.init_producer_id(TXN, TIMEOUT_MS)
    pid, epoch = ids.producer_id, ids.producer_epoch
    for round_ in range(3):
        assert c.add_partitions_to_txn(TXN, pid, epoch, [TP0], tv2=True) == {TP0: E.NONE}
        result = c.end_txn(TXN, pid, epoch, round_ % 2 == 0, tv2=True)
        assert result.error is E.NONE and result.producer_epoch == epoch + 1
        bench.settle()
        epoch = result.producer_epoch
    assert bench.view().state is S.COMPLETE_COMMIT
    assert [e for _tp, _pid, e in bench.handler.acked] == [1, 2, 3]
