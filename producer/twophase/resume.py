"""Resume a prepared transaction and end it: the one place that says what became of it.

Both ends of a prepared transaction go through ``resume_and_end``: the Spark sink's commit
phase (``producer.spark.resolve``) and the executor of ``sharetxn recover --apply`` and
``sharetxn txn commit|abort`` (``producer.twophase.execute``).  It resumes the transaction
with ``TransactionalProducer.resume`` (KeepPreparedTxn, or the stored ids checked with
DescribeTransactions), commits or aborts it, and turns every answer into one ``Ended``
verdict.  The callers decide what a verdict means for them (the executor, acting on a
compare-and-set plan, reports anything it did not do itself as a race; the sink, which
holds the batch's decision, counts a commit that an earlier phase finished as done), but
never which exception means what.

An error of the resume itself that is none of these (the cluster unreachable, KIP-939
unavailable) is raised: nothing was ended.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from producer.produce.transactional_producer import TransactionalProducer
from producer.produce.txn_manager import (
    NoPreparedTransactionError,
    PreparedTransactionAbortedError,
    PreparedTransactionCommittedError,
    PreparedTransactionMismatchError,
)
from txn.errors import (
    InvalidProducerEpochError,
    InvalidProducerIdMappingError,
    InvalidTxnStateError,
    ProducerFencedError,
    SharetxnError,
)

__all__ = ["SUPERSEDED", "EndResult", "Ended", "resume_and_end"]

#: The coordinator's answers that another producer epoch took the id over meanwhile.
SUPERSEDED: Final = (
    ProducerFencedError,
    InvalidProducerEpochError,
    InvalidProducerIdMappingError,
    InvalidTxnStateError,
)


class Ended(StrEnum):
    """What became of the prepared transaction ``resume_and_end`` was asked to end."""

    DONE = "done"  # resumed, and the coordinator accepted the commit or abort
    COMMITTED = "committed"  # committed already under these ids (an earlier completion)
    ABORTED = "aborted"  # the cluster aborted it: its timeout, a fencing producer, an abort
    GONE = "gone"  # no ongoing transaction under these ids; how it ended is not known
    REPLACED = "replaced"  # another transaction of the id is ongoing
    SUPERSEDED = "superseded"  # fenced while resuming or ending (see ``SUPERSEDED``)
    UNCONFIRMED = "unconfirmed"  # EndTxn may have reached the coordinator: outcome unknown


@dataclass(frozen=True, slots=True)
class EndResult:
    """A verdict and the error it came from (None for DONE)."""

    ended: Ended
    error: SharetxnError | None = None

    @property
    def detail(self) -> str:
        """The coordinator's account (a mismatch's ``describe()``), else the error's text."""
        if isinstance(self.error, PreparedTransactionMismatchError):
            return self.error.describe()
        return str(self.error) if self.error is not None else ""


def _verdict(exc: SharetxnError) -> Ended | None:
    """The verdict of an error raised by the resume or by the commit/abort (None: unknown)."""
    if isinstance(exc, PreparedTransactionCommittedError):
        return Ended.COMMITTED
    if isinstance(exc, PreparedTransactionAbortedError):
        return Ended.ABORTED
    if isinstance(exc, NoPreparedTransactionError):
        return Ended.GONE
    if isinstance(exc, PreparedTransactionMismatchError):
        return Ended.REPLACED
    if isinstance(exc, SUPERSEDED):
        return Ended.SUPERSEDED
    return None


def resume_and_end(
    transactional_id: str,
    producer_id: int,
    epoch: int,
    config: Mapping[str, Any],
    *,
    commit: bool,
    timeout_s: float | None = None,
    close_timeout_s: float | None = None,
) -> EndResult:
    """Resume (transactional id, producer id, epoch) and commit it (``commit``) or abort it.

    A resume that fails for another reason raises its error; a commit or abort that fails
    for another reason is UNCONFIRMED (the EndTxn may have been sent).
    """
    try:
        producer = TransactionalProducer.resume(
            transactional_id, producer_id, epoch, config, timeout_s=timeout_s
        )
    except SharetxnError as exc:
        ended = _verdict(exc)
        if ended is None:
            raise
        return EndResult(ended, exc)
    try:
        if commit:
            producer.commit_transaction(timeout_s)
        else:
            producer.abort_transaction(timeout_s)
    except SharetxnError as exc:
        return EndResult(_verdict(exc) or Ended.UNCONFIRMED, exc)
    finally:
        producer.close(timeout_s=close_timeout_s)
    return EndResult(Ended.DONE)
