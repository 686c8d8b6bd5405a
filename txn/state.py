"""The transaction coordinator's state machine (Kafka's ``TransactionState``).

The enum values are the ids persisted in ``__transaction_state`` (field TransactionStatus).
``VALID_PREVIOUS_STATES`` is the whole transition table: target state -> the states it may be
entered from.  ``check_transition`` is the single guard every transition goes through.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum
from typing import Final

from txn.errors import IllegalTransitionError


class TransactionState(IntEnum):
    """A transactional id's state, with Kafka's persisted ids."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def state_name(self) -> str:
        """The name Kafka prints (DescribeTransactions, ListTransactions, kafka-transactions.sh)."""
        return _STATE_NAMES[self]

    @classmethod
    def from_name(cls, name: str) -> TransactionState | None:
        """The state called ``name`` ("PrepareCommit"), or None for an unknown name."""
        return _BY_NAME.get(name)


_STATE_NAMES: Final[Mapping[TransactionState, str]] = {
    TransactionState.EMPTY: "Empty",
    TransactionState.ONGOING: "Ongoing",
    TransactionState.PREPARE_COMMIT: "PrepareCommit",
    TransactionState.PREPARE_ABORT: "PrepareAbort",
    TransactionState.COMPLETE_COMMIT: "CompleteCommit",
    TransactionState.COMPLETE_ABORT: "CompleteAbort",
    TransactionState.DEAD: "Dead",
    TransactionState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_NAME: Final[Mapping[str, TransactionState]] = {v: k for k, v in _STATE_NAMES.items()}

_S = TransactionState

# target -> legal predecessors.
VALID_PREVIOUS_STATES: Final[Mapping[TransactionState, frozenset[TransactionState]]] = {
    # InitProducerId bumps the epoch (or rotates the producer id) of an idle id.
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    # AddPartitionsToTxn / AddOffsetsToTxn / AddShareAcksToTxn (or TV2 implicit add).
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    # EndTxn(commit).
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    # EndTxn(abort), timeout or InitProducerId fencing; TV2 may also abort with no transaction
    # open (Empty / Complete*), which still bumps the epoch.
    _S.PREPARE_ABORT: frozenset(
        {_S.ONGOING, _S.PREPARE_EPOCH_FENCE, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}
    ),
    # Every marker acknowledged.
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    # Transactional id expiry (pending-only: the tombstone removes the id).
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_ABORT, _S.COMPLETE_COMMIT}),
    # InitProducerId or the timeout reaper fencing an ongoing transaction (pending-only).
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}

_EXPIRABLE: Final[frozenset[TransactionState]] = frozenset(
    {_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}
)


def is_legal_transition(current: TransactionState, target: TransactionState) -> bool:
    """Whether the table allows ``current -> target``."""
    return current in VALID_PREVIOUS_STATES[target]


def check_transition(current: TransactionState, target: TransactionState) -> None:
    """Raise IllegalTransitionError unless the table allows ``current -> target``."""
    if not is_legal_transition(current, target):
        raise IllegalTransitionError(
            f"illegal transaction state transition {current.state_name} -> {target.state_name}"
        )


def is_expirable(state: TransactionState) -> bool:
    """Whether an idle transactional id in ``state`` may be expired (no transaction open)."""
    return state in _EXPIRABLE
