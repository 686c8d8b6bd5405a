"""The transaction state table against Kafka's TransactionState (reference §1.1)."""

from __future__ import annotations

import itertools

import pytest

from txn.errors import IllegalTransitionError
from txn.state import (
    VALID_PREVIOUS_STATES,
    TransactionState,
    check_transition,
    is_expirable,
    is_legal_transition,
)

S = TransactionState

# The specification, written out independently of the module's table.
EXPECTED_PREDECESSORS: dict[TransactionState, set[TransactionState]] = {
    S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_COMMIT: {S.ONGOING},
    S.PREPARE_ABORT: {
        S.ONGOING,
        S.PREPARE_EPOCH_FENCE,
        S.EMPTY,
        S.COMPLETE_COMMIT,
        S.COMPLETE_ABORT,
    },
    S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
    S.COMPLETE_ABORT: {S.PREPARE_ABORT},
    S.DEAD: {S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT},
    S.PREPARE_EPOCH_FENCE: {S.ONGOING},
}


@pytest.mark.parametrize(
    ("current", "target"),
    list(itertools.product(TransactionState, TransactionState)),
    ids=lambda s: s.state_name,
)
def test_every_transition_against_the_table(
    current: TransactionState, target: TransactionState
) -> None:
    legal = current in EXPECTED_PREDECESSORS[target]
    assert is_legal_transition(current, target) is legal
    if legal:
        check_transition(current, target)
    else:
        with pytest.raises(IllegalTransitionError):
            check_transition(current, target)


def test_table_covers_every_state() -> None:
    assert set(VALID_PREVIOUS_STATES) == set(TransactionState)


def test_persisted_ids_are_kafkas() -> None:
    assert [int(s) for s in S] == list(range(8))
    assert S.PREPARE_EPOCH_FENCE == 7 and S.DEAD == 6


@pytest.mark.parametrize("state", list(TransactionState), ids=lambda s: s.state_name)
def test_expirable_only_without_open_transaction(state: TransactionState) -> None:
    assert is_expirable(state) is (state in {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})


def test_state_names_round_trip() -> None:
    names = [s.state_name for s in S]
    assert names == [
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "PrepareAbort",
        "CompleteCommit",
        "CompleteAbort",
        "Dead",
        "PrepareEpochFence",
    ]
    assert all(S.from_name(n) is s for n, s in zip(names, S, strict=True))
    assert S.from_name("ongoing") is None
