"""Share-group vocabulary: record states, acknowledgement types and their transitions.

The ids are Kafka's (persisted in ShareSnapshot/ShareUpdate ``DeliveryState``
and sent as ``AcknowledgeType`` on the wire).  ``TX_PENDING`` is this
project's KIP-1289 state (DESIGN §4.1): a record acknowledged inside an open
transaction.  It is never persisted as a delivery state (pending acks are
stored as a transactional batch), so its id only has to be distinct.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final

from txn.errors import IllegalTransitionError, InvalidRequestError


class RecordState(IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVING = 3  # KIP-1191 (dead-letter queues); unused here, reserved
    ARCHIVED = 4
    TX_PENDING = 64  # sharetxn/KIP-1289, in memory only

    @property
    def is_terminal(self) -> bool:
        return self in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


class AcknowledgeType(IntEnum):
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4  # restarts the acquisition lock; no state change, nothing persisted

    @classmethod
    def parse(cls, value: int) -> AcknowledgeType:
        """The type for a wire value; INVALID_REQUEST for an unknown id."""
        try:
            return cls(value)
        except ValueError as exc:
            raise InvalidRequestError(f"unknown acknowledge type {value}") from exc

    @property
    def target_state(self) -> RecordState:
        """The state a record moves to when this acknowledgement applies."""
        return _ACK_TARGET[self]


_ACK_TARGET: Final[dict[AcknowledgeType, RecordState]] = {
    AcknowledgeType.GAP: RecordState.ARCHIVED,
    AcknowledgeType.ACCEPT: RecordState.ACKNOWLEDGED,
    AcknowledgeType.RELEASE: RecordState.AVAILABLE,
    AcknowledgeType.REJECT: RecordState.ARCHIVED,
    AcknowledgeType.RENEW: RecordState.ACQUIRED,
}

# target -> legal current states.  Staying in the same state is illegal (Kafka's rule), the
# terminal states never change, and TX_PENDING resolves only through a transaction marker.
VALID_PREVIOUS_STATES: Final[dict[RecordState, frozenset[RecordState]]] = {
    # acquire: a fresh or released record
    RecordState.ACQUIRED: frozenset({RecordState.AVAILABLE}),
    # release / lock timeout / session close; a transaction abort reverts TX_PENDING
    RecordState.AVAILABLE: frozenset({RecordState.ACQUIRED, RecordState.TX_PENDING}),
    # ACCEPT; a transaction commit applies a pending ACCEPT
    RecordState.ACKNOWLEDGED: frozenset({RecordState.ACQUIRED, RecordState.TX_PENDING}),
    # REJECT/GAP, delivery limit, LSO movement; a commit applies a pending REJECT
    RecordState.ARCHIVED: frozenset(
        {RecordState.ACQUIRED, RecordState.AVAILABLE, RecordState.TX_PENDING}
    ),
    # TxnShareAcknowledge (KIP-1289)
    RecordState.TX_PENDING: frozenset({RecordState.ACQUIRED}),
    RecordState.ARCHIVING: frozenset(),
}


def is_legal_transition(current: RecordState, target: RecordState) -> bool:
    return current in VALID_PREVIOUS_STATES[target]


def check_transition(current: RecordState, target: RecordState) -> None:
    """The one guard: raise IllegalTransitionError for a transition the table forbids."""
    if not is_legal_transition(current, target):
        msg = f"illegal share record transition {current.name} -> {target.name}"
        raise IllegalTransitionError(msg)
