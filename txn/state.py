"""The transaction coordinator's state machine (Kafka's ``TransactionState``).

The enum values are the ids persisted in ``__transaction_state`` (field TransactionStatus).
``VALID_PREVIOUS_STATES`` is the whole transition table: target state -> the states it may be
entered from.  ``check_transition`` is the single guard every transition goes through.
``end_txn_action`` and ``end_txn_epoch_rule`` are EndTxn's decisions per state (TV0/1 and TV2).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum, IntEnum
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


# --- EndTxn: what the coordinator does, per state (TransactionCoordinator.handleEndTransaction) ---


class EndTxnAction(Enum):
    PREPARE = "prepare"  # write PrepareCommit/PrepareAbort for the open transaction
    ABORT_EMPTY = "abort-empty"  # TV2: abort with nothing open (bumps the epoch, fences)
    DONE = "done"  # a retry of what already completed: answer NONE
    CONCURRENT = "concurrent"  # CONCURRENT_TRANSACTIONS: the other outcome is in progress
    INVALID = "invalid"  # INVALID_TXN_STATE


_A = EndTxnAction

# TV0/TV1: (state, commit) -> action; anything else is INVALID.
_END_TXN_TV0: Final[Mapping[tuple[TransactionState, bool], EndTxnAction]] = {
    (_S.ONGOING, True): _A.PREPARE,
    (_S.ONGOING, False): _A.PREPARE,
    (_S.COMPLETE_COMMIT, True): _A.DONE,
    (_S.COMPLETE_ABORT, False): _A.DONE,
    (_S.PREPARE_COMMIT, True): _A.CONCURRENT,
    (_S.PREPARE_ABORT, False): _A.CONCURRENT,
}

# TV2 (KIP-890): (state, commit, retry) -> action.  ``retry``: the request carries the epoch
# the client had before the bump this state already made (or the pre-overflow id).
_END_TXN_TV2: Final[Mapping[tuple[TransactionState, bool, bool], EndTxnAction]] = {
    **{(_S.ONGOING, c, r): _A.PREPARE for c in (True, False) for r in (True, False)},
    (_S.COMPLETE_COMMIT, True, True): _A.DONE,
    (_S.COMPLETE_COMMIT, True, False): _A.INVALID,
    (_S.COMPLETE_COMMIT, False, True): _A.INVALID,
    (_S.COMPLETE_COMMIT, False, False): _A.ABORT_EMPTY,
    (_S.COMPLETE_ABORT, True, True): _A.INVALID,
    (_S.COMPLETE_ABORT, True, False): _A.INVALID,
    (_S.COMPLETE_ABORT, False, True): _A.DONE,
    (_S.COMPLETE_ABORT, False, False): _A.ABORT_EMPTY,
    **{(_S.PREPARE_COMMIT, True, r): _A.CONCURRENT for r in (True, False)},
    **{(_S.PREPARE_COMMIT, False, r): _A.INVALID for r in (True, False)},
    **{(_S.PREPARE_ABORT, False, r): _A.CONCURRENT for r in (True, False)},
    **{(_S.PREPARE_ABORT, True, r): _A.INVALID for r in (True, False)},
    **{(_S.EMPTY, True, r): _A.INVALID for r in (True, False)},
    **{(_S.EMPTY, False, r): _A.ABORT_EMPTY for r in (True, False)},
}


class EpochRule(Enum):
    """Which producer epoch a TV2 EndTxn may carry in a state."""

    CURRENT = "current"  # exactly the current epoch
    RETRY = "retry"  # the epoch before the bump (a retry of the EndTxn that made it)
    CURRENT_OR_RETRY = "current-or-retry"


_TV2_EPOCH_RULE: Final[Mapping[TransactionState, EpochRule]] = {
    _S.ONGOING: EpochRule.CURRENT,
    _S.EMPTY: EpochRule.CURRENT,
    _S.PREPARE_COMMIT: EpochRule.RETRY,
    _S.PREPARE_ABORT: EpochRule.RETRY,
}


def end_txn_epoch_rule(state: TransactionState) -> EpochRule:
    """The TV2 epoch check of EndTxn in ``state``."""
    return _TV2_EPOCH_RULE.get(state, EpochRule.CURRENT_OR_RETRY)


def end_txn_action(
    state: TransactionState, commit: bool, *, tv2: bool, retry: bool = False
) -> EndTxnAction:
    """What EndTxn does in ``state``; raises IllegalTransitionError where no EndTxn may come."""
    if not tv2:
        return _END_TXN_TV0.get((state, commit), _A.INVALID)
    action = _END_TXN_TV2.get((state, commit, retry))
    if action is None:
        raise IllegalTransitionError(f"EndTxn in state {state.name}")
    return action
