"""What a stored (transactional id, producer id, epoch) became, and the 2PC mode settings."""

from __future__ import annotations

import logging

import pytest

from producer.produce.prepared_txn import (
    StoredTxnStatus,
    classify,
    mismatch_error,
    warn_timeout_bounded,
)
from producer.produce.transactional_producer import ProducerConfig
from producer.produce.txn_manager import (
    DifferentPreparedTransactionError,
    NoPreparedTransactionError,
    PreparedTransactionAbortedError,
    PreparedTransactionCommittedError,
)
from producer.protocol.types import TransactionDescription
from txn.errors import ErrorCode

PID, EPOCH = 7, 3


def desc(state: str, pid: int = PID, epoch: int = EPOCH) -> TransactionDescription:
    return TransactionDescription("t", ErrorCode.NONE, state, pid, epoch, 5000, 1, ())


@pytest.mark.parametrize(
    ("state", "pid", "epoch", "status"),
    [
        ("Ongoing", PID, EPOCH, StoredTxnStatus.OPEN),
        ("PrepareCommit", PID, EPOCH, StoredTxnStatus.OPEN),
        ("CompleteCommit", PID, EPOCH, StoredTxnStatus.COMMITTED),
        ("PrepareAbort", PID, EPOCH, StoredTxnStatus.ABORTED),
        ("CompleteAbort", PID, EPOCH, StoredTxnStatus.ABORTED),
        # the coordinator's own abort (timeout, fencing) bumps the epoch first
        ("CompleteAbort", PID, EPOCH + 1, StoredTxnStatus.ABORTED),
        ("PrepareEpochFence", PID, EPOCH + 1, StoredTxnStatus.ABORTED),
        ("Ongoing", PID, EPOCH + 2, StoredTxnStatus.DIFFERENT),
        ("Ongoing", PID + 1, 0, StoredTxnStatus.DIFFERENT),
        # a later commit under a newer epoch says nothing about the stored one
        ("CompleteCommit", PID, EPOCH + 1, StoredTxnStatus.GONE),
        ("Empty", PID, EPOCH + 1, StoredTxnStatus.GONE),
        ("CompleteAbort", PID + 1, EPOCH + 1, StoredTxnStatus.GONE),
    ],
)
def test_classify(state: str, pid: int, epoch: int, status: StoredTxnStatus) -> None:
    assert classify(desc(state, pid, epoch), PID, EPOCH).status is status


def test_unknown_id_is_gone() -> None:
    view = classify(None, PID, EPOCH)
    assert view.status is StoredTxnStatus.GONE
    assert view.found == (-1, -1)


def test_mismatch_errors_are_typed_and_carry_the_ids() -> None:
    assert mismatch_error(classify(desc("Ongoing"), PID, EPOCH), "t", PID, EPOCH) is None
    committed = mismatch_error(classify(desc("CompleteCommit"), PID, EPOCH), "t", PID, EPOCH)
    assert isinstance(committed, PreparedTransactionCommittedError)
    aborted = mismatch_error(
        classify(desc("CompleteAbort", epoch=EPOCH + 1), PID, EPOCH), "t", PID, EPOCH
    )
    assert isinstance(aborted, PreparedTransactionAbortedError)
    assert isinstance(aborted, NoPreparedTransactionError)  # callers of KIP-939 still catch it
    assert (aborted.producer_id, aborted.epoch) == (PID, EPOCH)
    assert (aborted.found_producer_id, aborted.found_epoch) == (PID, EPOCH + 1)
    assert "5000 ms" in str(aborted) and "discarded" in str(aborted)
    other = mismatch_error(classify(desc("Ongoing", PID + 1, 0), PID, EPOCH), "t", PID, EPOCH)
    assert isinstance(other, DifferentPreparedTransactionError)
    gone = mismatch_error(classify(None, PID, EPOCH), "t", PID, EPOCH)
    assert type(gone) is NoPreparedTransactionError


def test_mode_settings() -> None:
    base = {"bootstrap.servers": "h:1", "transactional.id": "t"}
    default = ProducerConfig.parse(base)
    assert (default.prepare_mode, default.resume_mode) == ("auto", "auto")
    forced = ProducerConfig.parse(
        {**base, "sharetxn.prepare.mode": "timeout", "sharetxn.resume.mode": "stored-ids"}
    )
    assert (forced.prepare_mode, forced.resume_mode) == ("timeout", "stored-ids")
    with pytest.raises(ValueError, match=r"sharetxn\.resume\.mode must be one of"):
        ProducerConfig.parse({**base, "sharetxn.resume.mode": "flink"})


def test_timeout_bounded_prepares_are_a_warning_once_per_cluster(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A Spark write task opens a producer per partition and batch: one warning, not one each.
    cfg = ProducerConfig.parse({"bootstrap.servers": "once:9092", "transactional.id": "t"})
    other = ProducerConfig.parse({"bootstrap.servers": "other:9092", "transactional.id": "t"})
    caplog.set_level(logging.DEBUG, logger="sharetxn.producer")
    for config in (cfg, cfg, other):
        warn_timeout_bounded(config, "no InitProducerId v6")
    assert [r.levelno for r in caplog.records] == [logging.WARNING, logging.DEBUG, logging.WARNING]
