"""``resume_and_end``: every answer of a resume and of the commit/abort gets one verdict."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from producer.produce.transactional_producer import TransactionalProducer
from producer.produce.txn_manager import (
    DifferentPreparedTransactionError,
    NoPreparedTransactionError,
    PreparedTransactionAbortedError,
    PreparedTransactionCommittedError,
)
from producer.twophase import resume as resume_module
from producer.twophase.resume import Ended, resume_and_end
from txn.errors import NetworkError, ProducerFencedError, SharetxnError

IDS = {
    "transactional_id": "t-1",
    "producer_id": 7,
    "epoch": 3,
    "found_producer_id": 7,
    "found_epoch": 4,
}


class FakeProducer:
    """What ``resume`` returns: ends the transaction as told, records the calls."""

    def __init__(self, fails: SharetxnError | None) -> None:
        self.fails = fails
        self.calls: list[str] = []

    def commit_transaction(self, timeout_s: float | None = None) -> None:
        self.calls.append("commit")
        if self.fails is not None:
            raise self.fails

    def abort_transaction(self, timeout_s: float | None = None) -> None:
        self.calls.append("abort")
        if self.fails is not None:
            raise self.fails

    def close(self, timeout_s: float | None = None) -> None:
        self.calls.append("close")


def _patch_resume(monkeypatch: pytest.MonkeyPatch, behaviour: Callable[[], FakeProducer]) -> None:
    def resume(
        cls: type[TransactionalProducer],
        tid: str,
        pid: int,
        epoch: int,
        config: Mapping[str, Any],
        *,
        timeout_s: float | None = None,
    ) -> FakeProducer:
        return behaviour()

    monkeypatch.setattr(
        resume_module.TransactionalProducer, "resume", classmethod(resume), raising=True
    )


def _raise(exc: Exception) -> Callable[[], FakeProducer]:
    def fail() -> FakeProducer:
        raise exc

    return fail


@pytest.mark.parametrize(
    ("error", "ended"),
    [
        (PreparedTransactionCommittedError(**IDS), Ended.COMMITTED),
        (PreparedTransactionAbortedError(**IDS), Ended.ABORTED),
        (NoPreparedTransactionError(**IDS), Ended.GONE),
        (DifferentPreparedTransactionError(**IDS), Ended.REPLACED),
        (ProducerFencedError("fenced"), Ended.SUPERSEDED),
    ],
)
def test_a_refused_resume_says_what_became_of_the_transaction(
    monkeypatch: pytest.MonkeyPatch, error: SharetxnError, ended: Ended
) -> None:
    _patch_resume(monkeypatch, _raise(error))
    result = resume_and_end("t-1", 7, 3, {}, commit=True)
    assert result.ended is ended
    assert result.error is error


def test_a_resume_that_fails_otherwise_raises_nothing_was_ended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _patch_resume(monkeypatch, _raise(NetworkError("no broker")))
    with pytest.raises(NetworkError):
        resume_and_end("t-1", 7, 3, {}, commit=True)


@pytest.mark.parametrize("commit", [True, False])
def test_a_resumed_transaction_is_ended_as_asked_and_the_producer_closed(
    monkeypatch: pytest.MonkeyPatch, commit: bool
) -> None:
    producer = FakeProducer(None)
    _patch_resume(monkeypatch, lambda: producer)
    result = resume_and_end("t-1", 7, 3, {}, commit=commit)
    assert result.ended is Ended.DONE and result.error is None
    assert producer.calls == ["commit" if commit else "abort", "close"]


@pytest.mark.parametrize(
    ("error", "ended"),
    [
        (PreparedTransactionAbortedError(**IDS), Ended.ABORTED),  # the timeout won the race
        (ProducerFencedError("fenced"), Ended.SUPERSEDED),
        (NetworkError("connection lost"), Ended.UNCONFIRMED),  # EndTxn may have been sent
    ],
)
def test_a_failed_commit_is_aborted_superseded_or_unconfirmed(
    monkeypatch: pytest.MonkeyPatch, error: SharetxnError, ended: Ended
) -> None:
    producer = FakeProducer(error)
    _patch_resume(monkeypatch, lambda: producer)
    result = resume_and_end("t-1", 7, 3, {}, commit=True)
    assert result.ended is ended
    assert result.error is error
    assert producer.calls == ["commit", "close"]


def test_the_detail_of_a_mismatch_is_the_coordinators_account() -> None:
    error = PreparedTransactionAbortedError(state="CompleteAbort", **IDS)
    result = resume_module.EndResult(Ended.ABORTED, error)
    assert result.detail == error.describe()
    assert "CompleteAbort" in result.detail
