"""How a coordinator reports a failed append to its internal log (one mapping for all of them).

Kafka's coordinators (``TransactionStateManager`` and the ``CoordinatorRuntime`` of the group
and share coordinators) answer a failed ``__transaction_state`` / ``__consumer_offsets`` /
``__share_group_state`` append with a coordinator error the client knows how to retry.
"""

from __future__ import annotations

from txn.errors import ErrorCode, KafkaProtocolError

_APPEND_ERRORS: dict[ErrorCode, ErrorCode] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


def append_error_code(exc: Exception) -> ErrorCode:
    """The coordinator error for an exception raised by a log append."""
    if isinstance(exc, KafkaProtocolError):
        raw = exc.code
    elif isinstance(exc, OSError):
        raw = ErrorCode.KAFKA_STORAGE_ERROR
    else:
        raw = ErrorCode.UNKNOWN_SERVER_ERROR
    return _APPEND_ERRORS.get(raw, raw)
