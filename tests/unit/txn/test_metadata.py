"""TransactionMetadata epoch rules and two-phase transitions (reference §1.2, scenarios 33-37)."""

from __future__ import annotations

import pytest

from txn.errors import IllegalTransitionError, ProducerFencedError
from txn.ids import TopicPartition
from txn.metadata import TV_0, TV_2, TransactionMetadata
from txn.state import TransactionState

S = TransactionState
PID = 23423
NOW = 1_000_000
TP0 = TopicPartition("topic", 0)
TP1 = TopicPartition("topic", 1)


def metadata(
    state: TransactionState = S.EMPTY,
    epoch: int = 735,
    last: int = -1,
    partitions: tuple[TopicPartition, ...] = (),
    tv: int = TV_0,
    start: int = -1,
) -> TransactionMetadata:
    return TransactionMetadata(
        "txnlId",
        PID,
        producer_epoch=epoch,
        last_producer_epoch=last,
        txn_timeout_ms=30000,
        state=state,
        topic_partitions=partitions,
        txn_start_timestamp=start,
        txn_last_update_timestamp=NOW,
        client_transaction_version=tv,
    )


# --- scenario 33: increment -----------------------------------------------------------------


def test_initialize_epoch_from_no_epoch() -> None:
    md = metadata(epoch=-1)
    transit = md.prepare_increment_producer_epoch(30000, None, NOW + 1)
    md.complete_transition(transit)
    assert (md.producer_id, md.producer_epoch, md.last_producer_epoch) == (PID, 0, -1)
    assert md.state is S.EMPTY and md.pending_state is None


def test_bump_with_current_epoch_provided() -> None:
    md = metadata(epoch=735)
    md.complete_transition(md.prepare_increment_producer_epoch(30000, 735, NOW + 1))
    assert (md.producer_epoch, md.last_producer_epoch) == (736, 735)


def test_bump_with_last_epoch_is_a_retry() -> None:
    md = metadata(epoch=735, last=734)
    transit = md.prepare_increment_producer_epoch(30000, 734, NOW + 1)
    assert (transit.producer_epoch, transit.last_producer_epoch) == (735, 734)
    md.complete_transition(transit)
    assert md.producer_epoch == 735


def test_bump_with_fenced_epoch() -> None:
    md = metadata(epoch=735, last=734)
    with pytest.raises(ProducerFencedError):
        md.prepare_increment_producer_epoch(30000, 733, NOW + 1)
    assert md.pending_state is None


def test_bump_without_expected_epoch_forgets_last() -> None:
    md = metadata(epoch=735, last=734)
    md.complete_transition(md.prepare_increment_producer_epoch(10, None, NOW + 1))
    assert (md.producer_epoch, md.last_producer_epoch, md.txn_timeout_ms) == (736, -1, 10)


# --- scenario 34: exhaustion and fencing ----------------------------------------------------


def test_bump_not_allowed_when_exhausted() -> None:
    md = metadata(epoch=32766)
    assert md.is_producer_epoch_exhausted
    with pytest.raises(IllegalTransitionError):
        md.prepare_increment_producer_epoch(30000, None, NOW + 1)


def test_fence_after_epochs_exhausted() -> None:
    md = metadata(S.ONGOING, epoch=32766, partitions=(TP0,), start=NOW)
    fence = md.prepare_fence_producer_epoch()
    assert (fence.producer_epoch, fence.last_producer_epoch) == (32767, -1)
    assert md.pending_state is S.PREPARE_EPOCH_FENCE
    abort = md.prepare_abort_after_fence(fence, TV_0, NOW + 1)
    md.complete_transition(abort)
    assert (md.state, md.producer_id, md.producer_epoch) == (S.PREPARE_ABORT, PID, 32767)


def test_fence_at_short_max_does_not_overflow() -> None:
    md = metadata(S.ONGOING, epoch=32767, partitions=(TP0,), start=NOW)
    assert md.prepare_fence_producer_epoch().producer_epoch == 32767


def test_failed_fence_reuses_the_epoch() -> None:
    md = metadata(S.ONGOING, epoch=5, partitions=(TP0,), start=NOW)
    fence = md.prepare_fence_producer_epoch()
    md.prepare_abort_after_fence(fence, TV_0, NOW + 1)
    md.abort_pending()  # the append failed
    assert md.has_failed_epoch_fence
    assert md.producer_epoch == 6  # TV0: the fence took effect in memory
    assert md.snapshot().producer_epoch == 6
    assert md.prepare_fence_producer_epoch().producer_epoch == 6


@pytest.mark.parametrize("state", [S.COMPLETE_COMMIT, S.COMPLETE_ABORT, S.EMPTY])
def test_fence_not_allowed_without_ongoing_transaction(state: TransactionState) -> None:
    md = metadata(state, epoch=32766, start=NOW)
    with pytest.raises(IllegalTransitionError):
        md.prepare_fence_producer_epoch()


# --- scenario 35: TV2 epoch overflow --------------------------------------------------------


def test_epoch_bump_on_end_txn_overflow() -> None:
    md = metadata(S.ONGOING, epoch=32766, partitions=(TP0,), tv=TV_2, start=NOW)
    prepare = md.prepare_abort_or_commit(S.PREPARE_COMMIT, TV_2, 9893, NOW + 1, False)
    assert (prepare.producer_epoch, prepare.last_producer_epoch) == (32767, 32766)
    md.complete_transition(prepare)
    assert (md.producer_id, md.producer_epoch, md.next_producer_id) == (PID, 32767, 9893)

    complete = md.prepare_complete(NOW + 2)
    md.complete_transition(complete)
    assert (md.producer_id, md.producer_epoch, md.last_producer_epoch) == (9893, 0, 32766)
    assert (md.prev_producer_id, md.next_producer_id) == (PID, -1)
    assert md.state is S.COMPLETE_COMMIT and not md.topic_partitions


def test_tv0_end_keeps_the_epoch() -> None:
    md = metadata(S.ONGOING, epoch=7, partitions=(TP0,), start=NOW)
    md.complete_transition(md.prepare_abort_or_commit(S.PREPARE_COMMIT, TV_0, -1, NOW + 1, False))
    md.complete_transition(md.prepare_complete(NOW + 2))
    assert (md.producer_id, md.producer_epoch, md.state) == (PID, 7, S.COMPLETE_COMMIT)


# --- scenario 36: TV2 abort without a transaction -------------------------------------------


@pytest.mark.parametrize("state", [S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT])
def test_tv2_abort_from_idle_bumps_and_starts_now(state: TransactionState) -> None:
    md = metadata(state, epoch=735, start=-1 if state is S.EMPTY else NOW, tv=TV_2)
    t = NOW + 50
    transit = md.prepare_abort_or_commit(S.PREPARE_ABORT, TV_2, -1, t, True)
    md.complete_transition(transit)
    assert (md.state, md.producer_epoch, md.txn_start_timestamp) == (S.PREPARE_ABORT, 736, t)


def test_tv0_abort_from_empty_is_illegal_to_complete() -> None:
    md = metadata(S.EMPTY, epoch=735, start=-1)
    transit = md.prepare_abort_or_commit(S.PREPARE_ABORT, TV_0, -1, NOW + 1, True)
    with pytest.raises(IllegalTransitionError):
        md.complete_transition(transit)  # start time changed without TV2


# --- scenario 37: producer id rotation ------------------------------------------------------


def test_rotate_producer_id() -> None:
    md = metadata(S.EMPTY, epoch=32766)
    md.complete_transition(md.prepare_producer_id_rotation(9893, 30000, NOW + 1, True))
    assert (md.producer_id, md.producer_epoch) == (9893, 0)
    assert (md.prev_producer_id, md.last_producer_epoch) == (PID, 32766)


def test_rotate_without_recording_last_epoch() -> None:
    md = metadata(S.COMPLETE_ABORT, epoch=32766, start=NOW)
    md.complete_transition(md.prepare_producer_id_rotation(9893, 30000, NOW + 1, False))
    assert md.last_producer_epoch == -1


@pytest.mark.parametrize("state", [S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT])
def test_rotate_not_allowed_with_pending_transaction(state: TransactionState) -> None:
    md = metadata(state, epoch=32766, partitions=(TP0,), start=NOW)
    with pytest.raises(IllegalTransitionError):
        md.prepare_producer_id_rotation(9893, 30000, NOW + 1, True)


# --- two-phase discipline -------------------------------------------------------------------


def test_second_prepare_while_pending_is_refused() -> None:
    md = metadata()
    md.prepare_add_partitions([TP0], NOW + 1, TV_0)
    with pytest.raises(IllegalTransitionError):
        md.prepare_add_partitions([TP1], NOW + 2, TV_0)


def test_abort_pending_forgets_the_transition() -> None:
    md = metadata()
    md.prepare_add_partitions([TP0], NOW + 1, TV_0)
    md.abort_pending()
    assert md.pending_state is None and md.state is S.EMPTY and not md.topic_partitions


def test_complete_without_pending_is_refused() -> None:
    md = metadata()
    transit = md.snapshot()
    with pytest.raises(IllegalTransitionError):
        md.complete_transition(transit)


def test_complete_with_another_transit_is_refused() -> None:
    md = metadata(S.ONGOING, partitions=(TP0,), start=NOW)
    other = metadata(S.ONGOING, partitions=(TP0,), start=NOW)
    commit = other.prepare_abort_or_commit(S.PREPARE_COMMIT, TV_0, -1, NOW + 1, False)
    md.prepare_abort_or_commit(S.PREPARE_ABORT, TV_0, -1, NOW + 1, False)
    with pytest.raises(IllegalTransitionError):
        md.complete_transition(commit)


def test_add_partitions_only_grows_and_sets_start() -> None:
    md = metadata(S.COMPLETE_COMMIT, start=5)
    md.complete_transition(md.prepare_add_partitions([TP0], NOW + 1, TV_0))
    assert md.txn_start_timestamp == NOW + 1
    md.complete_transition(md.prepare_add_partitions([TP1], NOW + 2, TV_0))
    assert md.topic_partitions == {TP0, TP1} and md.txn_start_timestamp == NOW + 1


def test_dead_is_never_completed() -> None:
    md = metadata(S.COMPLETE_COMMIT, start=NOW)
    transit = md.prepare_dead()
    with pytest.raises(IllegalTransitionError):
        md.complete_transition(transit)


def test_prepare_sets_prev_producer_id_to_current() -> None:
    md = metadata(S.EMPTY, epoch=3)
    transit = md.prepare_increment_producer_epoch(30000, None, NOW + 1)
    assert transit.prev_producer_id == PID


def test_from_transit_forgets_last_epoch() -> None:
    md = metadata(S.EMPTY, epoch=3, last=2)
    loaded = TransactionMetadata.from_transit("txnlId", md.snapshot())
    assert loaded.producer_epoch == 3 and loaded.last_producer_epoch == -1
    assert loaded.pending_state is None


def test_commit_bump_past_short_max_is_refused() -> None:
    md = metadata(S.ONGOING, epoch=32767, partitions=(TP0,), tv=TV_2, start=NOW)
    with pytest.raises(IllegalTransitionError):
        md.prepare_abort_or_commit(S.PREPARE_COMMIT, TV_2, 9893, NOW + 1, False)
    assert md.pending_state is None
    abort = md.prepare_abort_or_commit(S.PREPARE_ABORT, TV_2, 9893, NOW + 1, False)
    assert abort.producer_epoch == 32767  # an abort at Short.MAX goes through unbumped
