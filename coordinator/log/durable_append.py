"""A coordinator's write to its internal log: append, make durable, or report as Kafka does.

Every coordinator (transactions, share state, share groups, consumer groups) writes its
records the same way: the batch is appended and fsynced before the state changes (prepare ->
append -> apply).  ``append_durably`` is that step, written once: a failed flush truncates the
batch away again, so that a replay never sees a record the live state never applied, and a
failure is answered with the coordinator error Kafka's ``CoordinatorRuntime`` /
``TransactionStateManager`` use, so the client knows how to retry.
"""

from __future__ import annotations

import logging

from coordinator.log.storage import PartitionLog
from txn.errors import ErrorCode, KafkaProtocolError

log = logging.getLogger("sharetxn.coordinator_log")

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


def append_durably(
    target: PartitionLog, batch: bytes, now_ms: int, *, name: str, flush: bool = True
) -> int | ErrorCode:
    """Append ``batch`` to a coordinator log and fsync it; its base offset, or the error.

    ``flush`` False appends only (the caller makes the log durable later, off the request
    path, and applies in log order).  After a failed flush the batch is truncated away, so
    the log holds nothing the caller did not apply; ``name`` says which log in warnings.
    """
    try:
        header = target.append(batch, now_ms)
    except Exception as exc:
        error = append_error_code(exc)
        log.warning("%s append failed (%r): %s", name, exc, error.name)
        return error
    if not flush:
        return header.base_offset
    try:
        target.flush()  # durable before anyone acts on it
    except Exception as exc:
        error = append_error_code(exc)
        log.warning("%s flush failed (%r): %s", name, exc, error.name)
        try:
            target.truncate_to(header.base_offset)
        except Exception:
            log.exception("could not remove the unflushed batch from %s", name)
        return error
    return header.base_offset
