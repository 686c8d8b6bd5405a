"""The recovery tool's vocabulary: exit codes, errors and one observed transaction.

A ``TxnSnapshot`` is what ``DescribeTransactions`` said about one transactional id at one
moment (``observed_at_ms``); every plan and every compare-and-set is made of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from txn.errors import SharetxnError
from txn.exit_codes import ExitCode
from txn.ids import SHARE_GROUP_STATE_TOPIC, TopicPartition
from txn.limits import INT32_MAX
from txn.state import TransactionState

UNKNOWN: Final = "Unknown"
"""The state reported for a transactional id the coordinator does not know."""

OPEN_STATES: Final = frozenset({"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"})
STATE_NAMES: Final = tuple(s.state_name for s in TransactionState)


class RecoveryError(SharetxnError):
    """Base of the recovery tool's own errors; ``exit_code`` is what the CLI returns."""

    exit_code: ExitCode = ExitCode.UNAVAILABLE


class UsageError(RecoveryError):
    """Bad arguments: the operator must fix the command line."""

    exit_code = ExitCode.USAGE


class NotFoundError(RecoveryError):
    """The cluster has no such transactional id, topic or partition."""

    exit_code = ExitCode.NOT_FOUND


class RefusedError(RecoveryError):
    """A safety rule refuses the whole command (no operator, no --i-understand, ...)."""

    exit_code = ExitCode.REFUSED


class CheckpointFormatError(RecoveryError):
    """A checkpoint file that does not follow the contract; the tool refuses to guess.

    Operator action: inspect the named file (a half-written intent is never produced by
    the atomic writer, so this means another tool or a bug wrote it).
    """

    exit_code = ExitCode.REFUSED

    def __init__(self, path: object, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = str(path)


@dataclass(frozen=True, slots=True)
class TxnSnapshot:
    """One transactional id as the coordinator described it at ``observed_at_ms``."""

    transactional_id: str
    state: str  # the coordinator's state name, or UNKNOWN
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_time_ms: int
    partitions: tuple[TopicPartition, ...]
    observed_at_ms: int

    @classmethod
    def unknown(cls, transactional_id: str, observed_at_ms: int) -> TxnSnapshot:
        return cls(transactional_id, UNKNOWN, -1, -1, -1, -1, (), observed_at_ms)

    @property
    def known(self) -> bool:
        return self.state != UNKNOWN

    @property
    def is_open(self) -> bool:
        """Ongoing or Prepare*: the transaction still holds the LSO and its share acks."""
        return self.state in OPEN_STATES

    @property
    def two_phase(self) -> bool:
        """A 2PC transaction: stored with timeout Int.MAX, never aborted by its timeout."""
        return self.timeout_ms == INT32_MAX

    @property
    def fingerprint(self) -> tuple[str, int, int, int]:
        """What a compare-and-set compares: (state, producer id, epoch, start time)."""
        return (self.state, self.producer_id, self.producer_epoch, self.start_time_ms)

    @property
    def data_partitions(self) -> tuple[TopicPartition, ...]:
        return tuple(tp for tp in self.partitions if tp.topic != SHARE_GROUP_STATE_TOPIC)

    @property
    def share_state_partitions(self) -> tuple[TopicPartition, ...]:
        return tuple(tp for tp in self.partitions if tp.topic == SHARE_GROUP_STATE_TOPIC)

    def age_ms(self, now_ms: int | None = None) -> int | None:
        """How long the current transaction has been open, or None if it is not open."""
        if not self.is_open or self.start_time_ms < 0:
            return None
        now = self.observed_at_ms if now_ms is None else now_ms
        return max(0, now - self.start_time_ms)

    def names(self, producer_id: int, producer_epoch: int) -> bool:
        """Whether this snapshot is of the transaction (producer id, epoch)."""
        return (self.producer_id, self.producer_epoch) == (producer_id, producer_epoch)

    def to_json(self) -> dict[str, Any]:
        return {
            "transactional_id": self.transactional_id,
            "state": self.state,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "timeout_ms": self.timeout_ms,
            "two_phase_commit": self.two_phase,
            "start_time_ms": self.start_time_ms,
            "age_ms": self.age_ms(),
            "partitions": [str(tp) for tp in self.partitions],
            "observed_at_ms": self.observed_at_ms,
        }

    def describe(self) -> str:
        """A short human form: ``Ongoing pid=7 epoch=2``."""
        if not self.known:
            return "unknown to the coordinator"
        return f"{self.state} pid={self.producer_id} epoch={self.producer_epoch}"
