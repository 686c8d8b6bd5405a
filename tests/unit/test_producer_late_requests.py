"""An unanswered EndTxn or TxnShareAcknowledge must not reach the *next* transaction.

Under transaction version 0/1 (what this client speaks) the producer epoch stays the same
across transactions.  A request that timed out may still be applied later -- the broker was
paused, the socket's bytes were already in its buffer -- so a late EndTxn(commit) would
commit the next transaction of the same epoch half-way, and a late TxnShareAcknowledge would
stage its acknowledgements in it (KAFKA-17754).  The producer re-sends the same EndTxn until a
definite answer, never begins the next transaction before that, and then bumps the epoch, so
a late copy is fenced.  Scripted client, no broker, no sleeps.
"""

from __future__ import annotations

from typing import Any

import pytest

from producer.produce.txn_manager import TxnState
from tests.unit.producer_fakes import (
    PID,
    FakeClient,
    add_partitions_answer,
    in_transaction,
    ns,
    raising,
    share_acks,
)
from txn.api_keys import ApiKey
from txn.errors import (
    ErrorCode,
    IllegalStateError,
    NetworkError,
    ProducerFencedError,
    RequestTimedOutError,
)

TXN_ACK, ADD_ACKS = ApiKey.TXN_SHARE_ACKNOWLEDGE, ApiKey.ADD_SHARE_ACKS_TO_TXN


def _ids(body: dict[str, Any]) -> tuple[int, int]:
    return int(body["producer_id"]), int(body["producer_epoch"])


def test_timed_out_end_txn_is_resent_unchanged_then_the_epoch_is_bumped() -> None:
    client = FakeClient()
    with in_transaction(client) as producer:
        client.script(26, raising(RequestTimedOutError("no answer")))
        client.script(26, lambda _n, _b: ns(error_code=ErrorCode.CONCURRENT_TRANSACTIONS))
        producer.commit_transaction()
        ends = client.sent(26)
        assert [(_ids(e), e["committed"]) for e in ends] == [((PID, 0), True)] * 3, (
            "the same EndTxn until a definite answer (CONCURRENT_TRANSACTIONS is retried)"
        )
        _init, bump = client.sent(22)
        assert _ids(bump) == (PID, 0), "KIP-360 bump of the current id and epoch"
        assert producer.producer_id_and_epoch == (PID, 1)
        assert producer.transaction_state is TxnState.READY

        producer.begin_transaction()
        producer.send_share_acks_to_transaction(*share_acks())
        assert {_ids(b) for b in client.sent(ADD_ACKS)[1:]} == {(PID, 1)}
        assert _ids(client.sent(TXN_ACK)[-1]) == (PID, 1), (
            "the next transaction runs at a new epoch: the late EndTxn of epoch 0 is fenced"
        )
        producer.commit_transaction()
        assert _ids(client.sent(26)[-1]) == (PID, 1)
        assert len(client.sent(22)) == 2, "an answered EndTxn needs no bump"


def test_concurrent_transactions_alone_is_a_definite_answer_and_needs_no_bump() -> None:
    client = FakeClient()
    with in_transaction(client) as producer:
        client.script(26, lambda _n, _b: ns(error_code=ErrorCode.CONCURRENT_TRANSACTIONS))
        producer.abort_transaction()
        assert [e["committed"] for e in client.sent(26)] == [False, False]
        assert len(client.sent(22)) == 1
        assert producer.producer_id_and_epoch == (PID, 0)


def test_end_txn_unanswered_until_the_deadline_blocks_the_next_transaction() -> None:
    client = FakeClient()
    with in_transaction(client) as producer:
        client.script(26, *[raising(NetworkError("broker paused"))] * 20)
        with pytest.raises(NetworkError):
            producer.commit_transaction()
        assert producer.transaction_state is TxnState.COMMITTING
        with pytest.raises(IllegalStateError):
            producer.begin_transaction()
        with pytest.raises(IllegalStateError):
            producer.abort_transaction()  # the commit may have happened: only commit again
        producer.commit_transaction()
        ends = client.sent(26)
        assert len(ends) == 21
        assert {(_ids(e), e["committed"]) for e in ends} == {((PID, 0), True)}
        assert producer.producer_id_and_epoch == (PID, 1)
        producer.begin_transaction()


def test_a_repeated_commit_after_the_bump_timed_out_does_not_resend_end_txn() -> None:
    client = FakeClient()
    with in_transaction(client) as producer:
        client.script(26, raising(RequestTimedOutError("no answer")))
        client.script(22, *[raising(NetworkError("broker paused"))] * 20)
        with pytest.raises(NetworkError):
            producer.commit_transaction()
        assert producer.transaction_state is TxnState.COMMITTING
        assert len(client.sent(26)) == 2
        producer.commit_transaction()
        assert len(client.sent(26)) == 2, "the EndTxn was answered: only the bump is repeated"
        assert producer.producer_id_and_epoch == (PID, 1)
        assert producer.transaction_state is TxnState.READY


def test_unanswered_txn_share_acknowledge_aborts_with_an_epoch_bump() -> None:
    client = FakeClient()
    with in_transaction(client, acks=False) as producer:
        client.script(TXN_ACK, *[raising(RequestTimedOutError("no answer"))] * 20)
        with pytest.raises(RequestTimedOutError):
            producer.send_share_acks_to_transaction(*share_acks())
        assert producer.transaction_state is TxnState.ABORTABLE_ERROR
        producer.abort_transaction()
        assert [e["committed"] for e in client.sent(26)] == [False]
        assert _ids(client.sent(22)[-1]) == (PID, 0)
        assert producer.producer_id_and_epoch == (PID, 1), (
            "a late TxnShareAcknowledge of epoch 0 cannot stage acks in the next transaction"
        )


def test_fenced_bump_after_an_unanswered_end_txn_is_fatal() -> None:
    client = FakeClient()
    with in_transaction(client) as producer:
        client.script(26, raising(NetworkError("lost")))
        client.script(22, lambda _n, _b: ns(error_code=ErrorCode.PRODUCER_FENCED))
        with pytest.raises(ProducerFencedError):
            producer.commit_transaction()
        assert producer.transaction_state is TxnState.FATAL_ERROR


def test_fenced_add_partitions_fails_the_records_at_once_in_the_sender_thread() -> None:
    # A zombie resumes and sends: AddPartitionsToTxn answers PRODUCER_FENCED.  The background
    # sender must fail the waiting record then, not leave flush waiting for its timeout.
    client = FakeClient()
    client.script(24, lambda _n, body: add_partitions_answer(body, ErrorCode.PRODUCER_FENCED))
    with in_transaction(client, acks=False) as producer:
        future = producer.send("t", b"v", partition=0)
        producer.flush(30)
        assert isinstance(future.exception(0), ProducerFencedError)
        assert producer.transaction_state is TxnState.FATAL_ERROR
