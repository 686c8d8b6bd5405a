"""Kafka error codes and the exception registry.

Every protocol error has Kafka's number (``ErrorCode``) and exactly one
exception class.  Classes fall into three categories, as in Kafka's clients::

    SharetxnError
    ├── KafkaProtocolError            (carries .code and the ids involved)
    │   ├── RetriableError            retry within the caller's deadline
    │   ├── AbortableError            the transaction must abort, the client lives on
    │   └── FatalError                the client must be closed (e.g. fenced)
    └── local errors (IllegalTransitionError, ClosedError, ...)

``error_for_code(code)`` maps a wire code to its class; ``raise_for_code``
raises it.  Codes with no hand-written class get a generated one named after
the code (``UNSTABLE_OFFSET_COMMIT`` -> ``UnstableOffsetCommitError``).
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, ClassVar


class ErrorCode(IntEnum):
    """Kafka's error codes, with Kafka's numbers."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128
    REBOOTSTRAP_REQUIRED = 129
    STREAMS_INVALID_TOPOLOGY = 130
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131
    STREAMS_TOPOLOGY_FENCED = 132
    SHARE_SESSION_LIMIT_REACHED = 133


class SharetxnError(Exception):
    """Root of every exception raised by sharetxn."""


class IllegalTransitionError(SharetxnError):
    """A state machine was asked for a transition its table does not allow."""


class IllegalStateError(SharetxnError):
    """A client method called in a state that does not allow it (Java's IllegalStateException).

    ``operation`` is the method, ``state`` the client-side transaction state, and
    ``transactional_id`` the producer's id (None for an idempotent-only producer).  All are
    optional so other clients (the share consumer) can raise the same class.
    """

    def __init__(
        self,
        message: str,
        *,
        operation: str | None = None,
        state: str | None = None,
        transactional_id: str | None = None,
    ) -> None:
        ids = [f"{k}={v}" for k, v in (("operation", operation), ("state", state)) if v]
        if transactional_id is not None:
            ids.append(f"transactional_id={transactional_id!r}")
        super().__init__(f"{message} ({', '.join(ids)})" if ids else message)
        self.operation = operation
        self.state = state
        self.transactional_id = transactional_id


class ClosedError(SharetxnError):
    """An operation was attempted on a closed client or component."""


class KafkaProtocolError(SharetxnError):
    """An error that has a Kafka error code."""

    code: ClassVar[ErrorCode] = ErrorCode.UNKNOWN_SERVER_ERROR
    retriable: ClassVar[bool] = False
    abortable: ClassVar[bool] = False
    fatal: ClassVar[bool] = False

    def __init__(self, message: str | None = None, **ids: Any) -> None:
        self.ids: dict[str, Any] = ids
        for key, value in ids.items():
            setattr(self, key, value)
        detail = ", ".join(f"{k}={v!r}" for k, v in ids.items())
        text = message or self.code.name
        if detail:
            text = f"{text} ({detail})"
        super().__init__(f"[{self.code.name} {int(self.code)}] {text}")
        self.message = message


class RetriableError(KafkaProtocolError):
    """Transient: the same request may succeed if retried."""

    retriable = True


class AbortableError(KafkaProtocolError):
    """The current transaction must be aborted; the client may continue."""

    abortable = True


class FatalError(KafkaProtocolError):
    """The client can no longer be used and must be closed."""

    fatal = True


class UnknownServerError(KafkaProtocolError):
    code = ErrorCode.UNKNOWN_SERVER_ERROR


class CorruptMessageError(RetriableError):
    code = ErrorCode.CORRUPT_MESSAGE


class UnknownTopicOrPartitionError(RetriableError):
    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class NotLeaderOrFollowerError(RetriableError):
    code = ErrorCode.NOT_LEADER_OR_FOLLOWER


class NetworkError(RetriableError):
    """The connection failed or was closed before a response arrived."""

    code = ErrorCode.NETWORK_EXCEPTION


class RequestTimedOutError(RetriableError):
    code = ErrorCode.REQUEST_TIMED_OUT


class CoordinatorLoadInProgressError(RetriableError):
    code = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


class CoordinatorNotAvailableError(RetriableError):
    code = ErrorCode.COORDINATOR_NOT_AVAILABLE


class NotCoordinatorError(RetriableError):
    code = ErrorCode.NOT_COORDINATOR


class ConcurrentTransactionsError(RetriableError):
    code = ErrorCode.CONCURRENT_TRANSACTIONS


class KafkaStorageError(RetriableError):
    code = ErrorCode.KAFKA_STORAGE_ERROR


class OffsetOutOfRangeError(KafkaProtocolError):
    code = ErrorCode.OFFSET_OUT_OF_RANGE


class MessageTooLargeError(KafkaProtocolError):
    code = ErrorCode.MESSAGE_TOO_LARGE


class InvalidRecordError(KafkaProtocolError):
    code = ErrorCode.INVALID_RECORD


class InvalidRequestError(KafkaProtocolError):
    code = ErrorCode.INVALID_REQUEST


class UnsupportedVersionError(FatalError):
    code = ErrorCode.UNSUPPORTED_VERSION


class Kip1289NotSupportedError(UnsupportedVersionError):
    """The cluster does not serve KIP-1289 (transactional share acknowledgements).

    Raised before anything is sent (KIP-1289 "clients fail fast"); ``api`` names the missing
    API (``TxnShareAcknowledge``, ``AddShareAcksToTxn``, ...) and ``broker`` the node asked.
    """


class TopicAlreadyExistsError(KafkaProtocolError):
    code = ErrorCode.TOPIC_ALREADY_EXISTS


class InvalidTopicError(KafkaProtocolError):
    code = ErrorCode.INVALID_TOPIC_EXCEPTION


class InvalidPartitionsError(KafkaProtocolError):
    code = ErrorCode.INVALID_PARTITIONS


class InvalidReplicationFactorError(KafkaProtocolError):
    code = ErrorCode.INVALID_REPLICATION_FACTOR


class InvalidConfigError(KafkaProtocolError):
    code = ErrorCode.INVALID_CONFIG


class OutOfOrderSequenceNumberError(AbortableError):
    code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class DuplicateSequenceNumberError(KafkaProtocolError):
    code = ErrorCode.DUPLICATE_SEQUENCE_NUMBER


class UnknownProducerIdError(AbortableError):
    code = ErrorCode.UNKNOWN_PRODUCER_ID


class InvalidProducerEpochError(FatalError):
    code = ErrorCode.INVALID_PRODUCER_EPOCH


class InvalidTxnStateError(FatalError):
    code = ErrorCode.INVALID_TXN_STATE


class InvalidProducerIdMappingError(FatalError):
    code = ErrorCode.INVALID_PRODUCER_ID_MAPPING


class InvalidTransactionTimeoutError(FatalError):
    code = ErrorCode.INVALID_TRANSACTION_TIMEOUT


class TransactionCoordinatorFencedError(FatalError):
    code = ErrorCode.TRANSACTION_COORDINATOR_FENCED


class TransactionalIdAuthorizationFailedError(FatalError):
    code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


class TopicAuthorizationFailedError(KafkaProtocolError):
    code = ErrorCode.TOPIC_AUTHORIZATION_FAILED


class GroupAuthorizationFailedError(KafkaProtocolError):
    code = ErrorCode.GROUP_AUTHORIZATION_FAILED


class ClusterAuthorizationFailedError(KafkaProtocolError):
    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


class SaslAuthenticationFailedError(FatalError):
    """Wrong credentials (or a SASL exchange the broker refused); the broker closed the socket."""

    code = ErrorCode.SASL_AUTHENTICATION_FAILED


class UnsupportedSaslMechanismError(FatalError):
    code = ErrorCode.UNSUPPORTED_SASL_MECHANISM


class IllegalSaslStateError(FatalError):
    code = ErrorCode.ILLEGAL_SASL_STATE


class ProducerFencedError(FatalError):
    code = ErrorCode.PRODUCER_FENCED


class TransactionalIdNotFoundError(KafkaProtocolError):
    code = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND


class TransactionAbortableError(AbortableError):
    code = ErrorCode.TRANSACTION_ABORTABLE


class InvalidRecordStateError(AbortableError):
    code = ErrorCode.INVALID_RECORD_STATE


class FencedStateEpochError(KafkaProtocolError):
    code = ErrorCode.FENCED_STATE_EPOCH


class FencedLeaderEpochError(RetriableError):
    code = ErrorCode.FENCED_LEADER_EPOCH


class FencedMemberEpochError(KafkaProtocolError):
    code = ErrorCode.FENCED_MEMBER_EPOCH


class UnknownMemberIdError(KafkaProtocolError):
    code = ErrorCode.UNKNOWN_MEMBER_ID


class GroupIdNotFoundError(KafkaProtocolError):
    code = ErrorCode.GROUP_ID_NOT_FOUND


class NonEmptyGroupError(KafkaProtocolError):
    code = ErrorCode.NON_EMPTY_GROUP


class GroupMaxSizeReachedError(KafkaProtocolError):
    code = ErrorCode.GROUP_MAX_SIZE_REACHED


class ShareSessionNotFoundError(RetriableError):
    code = ErrorCode.SHARE_SESSION_NOT_FOUND


class InvalidShareSessionEpochError(RetriableError):
    code = ErrorCode.INVALID_SHARE_SESSION_EPOCH


class UnknownTopicIdError(RetriableError):
    code = ErrorCode.UNKNOWN_TOPIC_ID


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.lower().split("_")) + "Error"


def _build_registry() -> dict[ErrorCode, type[KafkaProtocolError]]:
    registry: dict[ErrorCode, type[KafkaProtocolError]] = {}
    pending: list[type[KafkaProtocolError]] = [KafkaProtocolError]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__dict__.get("code") is not None:
            registry[cls.code] = cls
    for code in ErrorCode:
        if code is ErrorCode.NONE or code in registry:
            continue
        base: type[KafkaProtocolError] = (
            RetriableError if code in _RETRIABLE_BY_DEFAULT else KafkaProtocolError
        )
        generated = type(_camel(code.name), (base,), {"code": code, "__module__": __name__})
        registry[code] = generated
    return registry


# Codes Kafka's clients treat as retriable that have no hand-written class.
_RETRIABLE_BY_DEFAULT = frozenset(
    {
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.NOT_CONTROLLER,
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.OFFSET_NOT_AVAILABLE,
        ErrorCode.UNSTABLE_OFFSET_COMMIT,
        ErrorCode.THROTTLING_QUOTA_EXCEEDED,
        ErrorCode.INCONSISTENT_TOPIC_ID,
        ErrorCode.SHARE_SESSION_LIMIT_REACHED,
    }
)

_REGISTRY: dict[ErrorCode, type[KafkaProtocolError]] = _build_registry()


def error_for_code(code: int) -> type[KafkaProtocolError]:
    """The exception class for a wire error code (unknown codes map to UnknownServerError)."""
    try:
        return _REGISTRY[ErrorCode(code)]
    except ValueError:
        return UnknownServerError


def raise_for_code(code: int, message: str | None = None, **ids: Any) -> None:
    """Raise the exception for ``code`` unless it is NONE."""
    if code == ErrorCode.NONE:
        return
    raise error_for_code(code)(message, **ids)
