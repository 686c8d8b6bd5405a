"""TransactionalProducer internals without a broker: partitioner, accumulator, state table,
config, the sender step by step (fake clock, fake client), and the KIP-1289 / KIP-939 flows
against a scripted client.  No sleeps: the sender is driven with ``run_once`` and a clock
the test advances; producer-level tests never queue records, so the sender thread idles.
"""

from __future__ import annotations

import contextlib
import datetime
from concurrent.futures import Future
from typing import Any, TypeVar

import pytest

from producer.produce.accumulator import (
    RecordAccumulator,
    RecordMetadata,
    StickyPartitioner,
    murmur2,
    partition_for_key,
)
from producer.produce.sender import Sender, SenderConfig
from producer.produce.transactional_producer import (
    IllegalStateError,
    ProducerConfig,
    TransactionalProducer,
)
from producer.produce.txn_manager import (
    ALLOWED,
    TRANSITIONS,
    Operation,
    TransactionManager,
    TxnState,
)
from producer.protocol.types import PreparedTxnState, ShareAcknowledgements, ShareGroupMetadata
from tests.unit.producer_fakes import (
    PID,
    TP0,
    TP1,
    TP2,
    FakeClient,
    FakeClock,
    add_partitions_answer,
    batches_of,
    fail_share_ack,
    in_transaction,
    ns,
    produce_answer,
    producer_with,
    raising,
    share_acks,
)
from txn.api_keys import ApiKey
from txn.batch import parse_header
from txn.errors import (
    ConcurrentTransactionsError,
    ErrorCode,
    InvalidRecordStateError,
    InvalidTxnStateError,
    Kip1289NotSupportedError,
    MessageTooLargeError,
    NetworkError,
    ProducerFencedError,
    RequestTimedOutError,
)
from txn.ids import TopicPartition

TXN_ACK, ADD_ACKS = ApiKey.TXN_SHARE_ACKNOWLEDGE, ApiKey.ADD_SHARE_ACKS_TO_TXN

Exc = TypeVar("Exc", bound=BaseException)


# -- partitioner ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "partition"),
    [(b"", 681), (b"a", 524), (b"ab", 434), (b"abc", 107), (b"123456789", 566), (b"\x00 ", 742)],
)
def test_murmur2_partition_matches_java(key: bytes, partition: int) -> None:
    # Partitions of 1000 computed by Kafka's Java DefaultPartitioner (kafka-python's vectors).
    assert partition_for_key(key, 1000) == partition


@pytest.mark.parametrize(
    ("key", "hashed"),
    [(b"", 275646681), (b"hello", 2132663229), (b"kafka", 3496464228), (b"a", 2731586172)],
)
def test_murmur2_hash_values(key: bytes, hashed: int) -> None:
    assert murmur2(key) & 0xFFFFFFFF == hashed
    assert -(2**31) <= murmur2(key) < 2**31


def test_sticky_partitioner_moves_on_after_batch_size_bytes() -> None:
    sticky = StickyPartitioner(100)
    first = sticky.partition("t", 3, 60)
    assert sticky.partition("t", 3, 60) == first  # 60 bytes so far: stay
    second = sticky.partition("t", 3, 60)  # 120 >= 100: next partition
    assert second == (first + 1) % 3
    assert sticky.partition("t", 3, 10) == second


# -- accumulator ----------------------------------------------------------------------------


def test_accumulator_waits_for_linger_then_drains_one_batch_per_partition() -> None:
    clock = FakeClock()
    acc = RecordAccumulator(batch_size=1000, linger_ms=5, clock=clock)
    acc.append(TP0, None, b"a", [], 1)
    acc.append(TP0, None, b"b", [], 1)
    acc.append(TP1, None, b"c", [], 1)
    ready, wait = acc.ready(clock())
    assert ready == []
    assert wait == pytest.approx(0.005)
    clock.advance(0.005)
    ready, _ = acc.ready(clock())
    assert sorted(ready) == [TP0, TP1]
    drained = acc.drain(ready)
    assert {b.tp: b.record_count for b in drained} == {TP0: 2, TP1: 1}
    # In flight: the partition is not ready again until the batch is done.
    acc.append(TP0, None, b"d", [], 1)
    clock.advance(1)
    assert acc.ready(clock())[0] == []
    acc.complete(next(b for b in drained if b.tp == TP0), 10)
    assert acc.ready(clock())[0] == [TP0]


def test_accumulator_splits_at_batch_size_and_full_batches_are_ready_at_once() -> None:
    clock = FakeClock()
    acc = RecordAccumulator(batch_size=250, linger_ms=1000, clock=clock)
    for _ in range(4):
        acc.append(TP0, None, b"x" * 60, [], 1)
    ready, _ = acc.ready(clock())
    assert ready == [TP0]  # the first batch overflowed, long before linger.ms
    first = acc.drain(ready)[0]
    assert first.record_count == 2  # 61-byte header + 2 x 81 bytes; a third would not fit
    acc.complete(first, 0)
    assert acc.ready(clock())[0] == []  # the second batch is not full: it waits for linger.ms
    clock.advance(1)
    assert acc.drain(acc.ready(clock())[0])[0].record_count == 2


def test_reenqueued_batch_goes_first_and_keeps_its_bytes() -> None:
    clock = FakeClock()
    acc = RecordAccumulator(batch_size=1000, linger_ms=0, clock=clock)
    f1 = acc.append(TP0, None, b"one", [], 1)
    (batch,) = acc.drain([TP0])
    batch.payload = b"encoded"
    acc.append(TP0, None, b"two", [], 1)
    acc.reenqueue(batch, clock() + 0.1)
    assert acc.ready(clock())[0] == []  # backoff
    clock.advance(0.1)
    (again,) = acc.drain(acc.ready(clock())[0])
    assert again is batch
    assert again.payload == b"encoded"
    acc.complete(again, 7)
    assert f1.result(0).offset == 7


def test_flush_makes_batches_ready_and_waits_for_them() -> None:
    clock = FakeClock()
    acc = RecordAccumulator(batch_size=1000, linger_ms=60_000, clock=clock)
    future = acc.append(TP0, b"k", b"v", [("h", b"1")], 5)
    pending = acc.begin_flush()
    assert acc.ready(clock())[0] == [TP0]
    (batch,) = acc.drain([TP0])
    acc.complete(batch, 3)
    assert acc.await_batches(pending, None) == 0
    acc.end_flush()
    assert future.result(0) == ("t", 0, 3, 5)
    assert not future.cancel(), "a sent record cannot be cancelled"


# -- the state table ------------------------------------------------------------------------


def manager_in(state: TxnState, *, two_pc: bool = False) -> TransactionManager:
    txn = TransactionManager("tid", two_phase_commit=two_pc)
    txn._state = state  # put the machine straight into the state under test
    if state in (TxnState.ABORTABLE_ERROR, TxnState.FATAL_ERROR):
        txn._last_error = (
            InvalidRecordStateError("bad")
            if state is TxnState.ABORTABLE_ERROR
            else ProducerFencedError("fenced")
        )
    return txn


@pytest.mark.parametrize("operation", list(Operation))
@pytest.mark.parametrize("state", list(TxnState))
def test_guard_allows_exactly_the_table(operation: Operation, state: TxnState) -> None:
    txn = manager_in(state, two_pc=True)
    if state is TxnState.FATAL_ERROR:
        with pytest.raises(ProducerFencedError):
            txn.check(operation)
    elif state is TxnState.ABORTABLE_ERROR and operation is not Operation.ABORT_TRANSACTION:
        with pytest.raises(InvalidRecordStateError):
            txn.check(operation)
    elif state in ALLOWED[operation]:
        txn.check(operation)
    else:
        with pytest.raises(IllegalStateError):
            txn.check(operation)


def test_guard_explains_common_misuse() -> None:
    with pytest.raises(IllegalStateError, match="outside a transaction"):
        manager_in(TxnState.READY).check(Operation.SEND)
    with pytest.raises(IllegalStateError, match="twice"):
        manager_in(TxnState.IN_TRANSACTION).check(Operation.BEGIN_TRANSACTION)
    with pytest.raises(IllegalStateError, match="without an open transaction"):
        manager_in(TxnState.READY).check(Operation.COMMIT_TRANSACTION)
    with pytest.raises(IllegalStateError, match=r"two\.phase\.commit\.enable"):
        manager_in(TxnState.IN_TRANSACTION).check(Operation.PREPARE_TRANSACTION)
    with pytest.raises(IllegalStateError, match="after prepare_transaction"):
        manager_in(TxnState.PREPARED).check(Operation.SEND)
    idempotent = TransactionManager(None)
    idempotent.check(Operation.SEND)
    with pytest.raises(IllegalStateError, match=r"transactional\.id") as info:
        idempotent.check(Operation.BEGIN_TRANSACTION)
    assert info.value.operation == "begin_transaction"


@pytest.mark.parametrize("source", list(TxnState))
@pytest.mark.parametrize("target", list(TxnState))
def test_transitions_follow_the_table(source: TxnState, target: TxnState) -> None:
    txn = manager_in(source)
    if target is TxnState.FATAL_ERROR or target in TRANSITIONS[source]:
        txn.transition(target)
        assert txn.state is target
    else:
        with pytest.raises(IllegalStateError, match="invalid transition"):
            txn.transition(target)


def test_abortable_error_only_dooms_an_open_transaction_and_never_undoes_fatal() -> None:
    txn = manager_in(TxnState.READY)
    txn.abortable_error(InvalidRecordStateError("late"))
    assert txn.state is TxnState.READY
    txn = manager_in(TxnState.FATAL_ERROR)
    txn.abortable_error(InvalidRecordStateError("late"))
    assert txn.state is TxnState.FATAL_ERROR


# -- config ---------------------------------------------------------------------------------


def test_config_defaults_and_errors() -> None:
    cfg = ProducerConfig.parse({"bootstrap.servers": "h:1"})
    assert (cfg.linger_ms, cfg.batch_size, cfg.acks, cfg.enable_idempotence) == (5, 16384, -1, True)
    assert (cfg.transaction_timeout_ms, cfg.two_phase_commit) == (60000, False)
    assert ProducerConfig.parse(
        {
            "bootstrap.servers": "h:1",
            "transaction.two.phase.commit.enable": "true",
            "linger.ms": "0",
        }
    ).two_phase_commit
    assert ProducerConfig.parse({"bootstrap.servers": "h:1", "compression.type": "lz4"}).compression
    with pytest.raises(ValueError, match=r"compression\.type must be one of"):
        ProducerConfig.parse({"bootstrap.servers": "h:1", "compression.type": "lzma"})
    with pytest.raises(ValueError, match=r"'max\.in\.flight'"):
        ProducerConfig.parse({"bootstrap.servers": "h:1", "max.in.flight": "5"})
    with pytest.raises(ValueError, match="acks=all"):
        ProducerConfig.parse({"bootstrap.servers": "h:1", "transactional.id": "x", "acks": "1"})
    with pytest.raises(ValueError, match=r"enable\.idempotence=true"):
        ProducerConfig.parse(
            {"bootstrap.servers": "h:1", "transactional.id": "x", "enable.idempotence": False}
        )
    with pytest.raises(ValueError, match=r"bootstrap\.servers"):
        ProducerConfig.parse({})
    with pytest.raises(ValueError, match=r"linger\.ms"):
        ProducerConfig.parse({"bootstrap.servers": "h:1", "linger.ms": "soon"})
    with pytest.raises(ValueError, match=r"delivery\.timeout\.ms"):
        ProducerConfig.parse({"bootstrap.servers": "h:1", "delivery.timeout.ms": 10})
    plain = ProducerConfig.parse(
        {"bootstrap.servers": "h:1", "enable.idempotence": "false", "acks": 1}
    )
    assert plain.acks == 1


# -- the sender, one pass at a time ---------------------------------------------------------


def make_sender(
    *, transactional: bool = False, linger_ms: int = 0, delivery_timeout_ms: int = 120000
) -> tuple[Sender, RecordAccumulator, TransactionManager, FakeClient, FakeClock]:
    clock = FakeClock()
    client = FakeClient()
    acc = RecordAccumulator(batch_size=16384, linger_ms=linger_ms, clock=clock)
    txn = TransactionManager("tid" if transactional else None)
    config = SenderConfig(
        transactional_id="tid" if transactional else None,
        idempotent=True,
        acks=-1,
        request_timeout_ms=30000,
        delivery_timeout_ms=delivery_timeout_ms,
        retry_backoff_ms=100,
        transaction_timeout_ms=60000,
        two_phase_commit=False,
    )
    sender = Sender(client, acc, txn, config, clock=clock)
    if transactional:
        txn.transition(TxnState.INITIALIZING)
        txn.set_producer_id_and_epoch(PID, 3)
        txn.transition(TxnState.READY)
        txn.transition(TxnState.IN_TRANSACTION)
    return sender, acc, txn, client, clock


def produce_failing_once(
    sender: Sender, acc: RecordAccumulator, client: FakeClient, code: int, value: bytes = b"v"
) -> Future[RecordMetadata]:
    """One record to ``TP0`` and one sender pass, with the first Produce answering ``code``."""
    client.script(0, produce_answer(code))
    future = acc.append(TP0, None, value, [], 1)
    sender.run_once()
    return future


def test_idempotent_sequences_start_at_zero_and_continue_per_partition() -> None:
    sender, acc, _txn, client, _clock = make_sender()
    f0 = [acc.append(TP0, None, f"a{i}".encode(), [], 1) for i in range(3)]
    f1 = [acc.append(TP1, None, b"b", [], 1) for _ in range(2)]
    sender.run_once()
    assert len(client.sent(22)) == 1  # the producer id is fetched lazily, once
    (produce,) = client.sent(0)
    assert produce["acks"] == -1
    headers = {tp: parse_header(raw) for tp, raw in batches_of(produce).items()}
    assert {tp: (h.producer_id, h.base_sequence, h.records_count) for tp, h in headers.items()} == {
        TP0: (PID, 0, 3),
        TP1: (PID, 0, 2),
    }
    assert [f.result(0).offset for f in f0] == [0, 1, 2]
    assert [f.result(0).offset for f in f1] == [0, 1]
    acc.append(TP0, None, b"more", [], 1)
    sender.run_once()
    assert parse_header(batches_of(client.sent(0)[1])[TP0]).base_sequence == 3


def test_retriable_error_resends_the_same_bytes_after_backoff() -> None:
    sender, acc, _txn, client, clock = make_sender()
    future = produce_failing_once(sender, acc, client, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert not future.done()
    sender.run_once()
    assert len(client.sent(0)) == 1, "no resend before retry.backoff.ms"
    clock.advance(0.1)
    sender.run_once()
    first, second = client.sent(0)
    assert batches_of(first) == batches_of(second)
    assert future.result(0).offset == 0


def test_duplicate_after_a_lost_response_resolves_with_the_original_offset() -> None:
    sender, acc, _txn, client, clock = make_sender()
    client.script(
        0,
        raising(NetworkError("connection reset")),
        produce_answer(ErrorCode.DUPLICATE_SEQUENCE_NUMBER, base_offset=41),
    )
    future = acc.append(TP0, None, b"v", [], 1)
    sender.run_once()
    clock.advance(0.1)
    sender.run_once()
    assert future.result(0).offset == 41
    first, second = client.sent(0)
    assert batches_of(first) == batches_of(second)


def test_out_of_order_sequence_gets_a_new_producer_id_before_sending_more() -> None:
    sender, acc, txn, client, _clock = make_sender()
    failed = produce_failing_once(sender, acc, client, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
    assert failed.exception(0).code is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # type: ignore[union-attr]
    assert txn.needs_epoch_bump
    acc.append(TP0, None, b"w", [], 1)
    sender.run_once()
    assert len(client.sent(22)) == 2
    assert parse_header(batches_of(client.sent(0)[1])[TP0]).base_sequence == 0


def test_a_batch_that_certainly_failed_gives_its_sequences_back() -> None:
    sender, acc, txn, client, _clock = make_sender()
    failed = produce_failing_once(sender, acc, client, ErrorCode.MESSAGE_TOO_LARGE, b"big")
    assert isinstance(failed.exception(0), MessageTooLargeError)
    assert not txn.needs_epoch_bump
    acc.append(TP0, None, b"ok", [], 1)
    sender.run_once()
    assert parse_header(batches_of(client.sent(0)[1])[TP0]).base_sequence == 0


def test_message_too_large_splits_a_batch_of_several_records_keeping_order() -> None:
    sender, acc, txn, client, _clock = make_sender()
    client.script(0, produce_answer(ErrorCode.MESSAGE_TOO_LARGE))  # only the whole batch
    futures = [acc.append(TP0, None, f"r{i}".encode(), [], 1) for i in range(5)]
    flushed = acc.begin_flush()
    for _ in range(6):
        sender.run_once()
    acc.end_flush()
    assert acc.await_batches(flushed, None) == 0, "the split batch is done with its parts"
    assert [f.result(0).offset for f in futures] == [0, 1, 2, 3, 4]
    whole, *parts = [parse_header(batches_of(b)[TP0]) for b in client.sent(0)]
    assert (whole.base_sequence, whole.records_count) == (0, 5)
    # halves (the batch was within batch.size), sequences taken again from 0
    assert [(h.base_sequence, h.records_count) for h in parts] == [(0, 3), (3, 2)]
    assert not txn.has_error and not txn.needs_epoch_bump


def test_record_list_too_large_fails_the_batch_unsplit_as_kafka() -> None:
    sender, acc, _txn, client, _clock = make_sender()
    client.script(0, produce_answer(ErrorCode.RECORD_LIST_TOO_LARGE))
    futures = [acc.append(TP0, None, f"r{i}".encode(), [], 1) for i in range(3)]
    sender.run_once()
    sender.run_once()
    assert len(client.sent(0)) == 1
    assert all(f.exception(0).code is ErrorCode.RECORD_LIST_TOO_LARGE for f in futures)  # type: ignore[union-attr]


def test_delivery_timeout_fails_a_batch_that_keeps_failing() -> None:
    sender, acc, txn, client, clock = make_sender(delivery_timeout_ms=1000)
    client.script(0, *[raising(NetworkError("down"))] * 20)
    future = acc.append(TP0, None, b"v", [], 1)
    for _ in range(12):
        sender.run_once()
        clock.advance(0.1)
    assert isinstance(future.exception(0), RequestTimedOutError)
    assert txn.needs_epoch_bump, "it may have been written: its sequence numbers are lost"


def test_transaction_adds_all_new_partitions_in_one_request_before_producing() -> None:
    sender, acc, txn, client, _clock = make_sender(transactional=True)
    for tp in (TP0, TP1, TP2):
        acc.append(tp, None, b"v", [], 1)
    sender.run_once()
    (add,) = client.sent(24)
    assert add["v3_and_below_topics"] == [{"name": "t", "partitions": [0, 1, 2]}]
    assert (add["v3_and_below_producer_id"], add["v3_and_below_producer_epoch"]) == (PID, 3)
    (produce,) = client.sent(0)
    assert produce["transactional_id"] == "tid"
    assert all(parse_header(raw).is_transactional for raw in batches_of(produce).values())
    acc.append(TP0, None, b"again", [], 1)
    sender.run_once()
    assert len(client.sent(24)) == 1, "a partition is added once per transaction"
    assert txn.transaction_started


def test_concurrent_transactions_on_add_is_retried() -> None:
    sender, acc, _txn, client, clock = make_sender(transactional=True)
    client.script(
        24, lambda _n, body: add_partitions_answer(body, ErrorCode.CONCURRENT_TRANSACTIONS)
    )
    future = acc.append(TP0, None, b"v", [], 1)
    sender.run_once()
    assert client.sent(0) == []
    clock.advance(0.02)
    sender.run_once()
    assert len(client.sent(24)) == 2
    assert future.result(0).offset == 0


def test_fenced_on_add_partitions_is_fatal_and_fails_the_records() -> None:
    sender, acc, txn, client, _clock = make_sender(transactional=True)
    client.script(24, lambda _n, body: add_partitions_answer(body, ErrorCode.PRODUCER_FENCED))
    future = acc.append(TP0, None, b"v", [], 1)
    sender.run_once()
    sender.run_once()
    assert txn.state is TxnState.FATAL_ERROR
    assert isinstance(future.exception(0), ProducerFencedError)
    assert future.exception(0).transactional_id == "tid"  # type: ignore[union-attr]
    with pytest.raises(ProducerFencedError):
        txn.check(Operation.COMMIT_TRANSACTION)


def test_stale_epoch_on_produce_means_fenced() -> None:
    sender, acc, txn, client, _clock = make_sender(transactional=True)
    future = produce_failing_once(sender, acc, client, ErrorCode.INVALID_PRODUCER_EPOCH)
    assert isinstance(future.exception(0), ProducerFencedError)
    assert txn.state is TxnState.FATAL_ERROR


def test_abortable_produce_error_fails_the_rest_of_the_transaction() -> None:
    sender, acc, txn, client, _clock = make_sender(transactional=True)
    doomed = produce_failing_once(sender, acc, client, ErrorCode.INVALID_TXN_STATE)
    assert isinstance(doomed.exception(0), InvalidTxnStateError)
    assert txn.state is TxnState.ABORTABLE_ERROR
    later = acc.append(TP1, None, b"w", [], 1)
    sender.run_once()
    assert isinstance(later.exception(0), InvalidTxnStateError)
    assert len(client.sent(0)) == 1


# -- the producer against a scripted client -------------------------------------------------


def test_share_acks_fail_fast_without_kip1289_and_leave_the_transaction_intact() -> None:
    client = FakeClient()
    client.without_kip1289 = True
    with in_transaction(client, acks=False) as producer:
        acks, metadata = share_acks()
        with pytest.raises(Kip1289NotSupportedError):
            producer.send_share_acks_to_transaction(acks, metadata)
        assert client.sent(ADD_ACKS) == []
        assert client.sent(TXN_ACK) == []
        producer.commit_transaction()  # still usable: nothing was sent


def test_share_acks_add_to_txn_then_acknowledge_per_leader() -> None:
    client = FakeClient()
    client.leaders = {
        TopicPartition("a", 0): 1,
        TopicPartition("a", 1): 2,
        TopicPartition("b", 0): 1,
    }
    with in_transaction(client) as producer:
        (add,) = client.sent(ADD_ACKS)
        assert add == {
            "transactional_id": "tid",
            "producer_id": PID,
            "producer_epoch": 0,
            "group_id": "g",
            "topics": [{"name": "a", "partitions": [0, 1]}, {"name": "b", "partitions": [0]}],
        }
        by_node = {node: body for node, key, body in client.requests if key == TXN_ACK}
        assert set(by_node) == {1, 2}
        node1 = by_node[1]
        assert (node1["group_id"], node1["member_id"], node1["producer_id"]) == ("g", "m-1", PID)
        topics = {t["topic_id"]: t["partitions"] for t in node1["topics"]}
        assert topics[client.topic_ids["a"]] == [
            {
                "partition": 0,
                "acknowledgement_batches": [
                    {"first_offset": 0, "last_offset": 4, "acknowledge_type": 1},
                    {"first_offset": 5, "last_offset": 5, "acknowledge_type": 3},
                ],
            }
        ]
        assert topics[client.topic_ids["b"]][0]["partition"] == 0
        assert by_node[2]["topics"][0]["partitions"][0]["acknowledgement_batches"] == [
            {"first_offset": 10, "last_offset": 12, "acknowledge_type": 2}
        ]
        # AddShareAcksToTxn precedes every TxnShareAcknowledge.
        order = [key for _n, key, _b in client.requests if key in (TXN_ACK, ADD_ACKS)]
        assert order == [ADD_ACKS, *[TXN_ACK] * 2]
        producer.commit_transaction()
        (end,) = client.sent(26)
        assert end["committed"] is True, "share acks alone start the transaction"


def share_acks_refused(
    producer: TransactionalProducer,
    client: FakeClient,
    failed: tuple[str, int],
    code: int,
    error: type[Exc],
) -> pytest.ExceptionInfo[Exc]:
    """Stage share acks whose TxnShareAcknowledge answers ``code`` for ``failed``; it raises."""
    fail_share_ack(client, *failed, code)
    with pytest.raises(error) as info:
        producer.send_share_acks_to_transaction(*share_acks())
    return info


def test_invalid_record_state_makes_the_transaction_abortable() -> None:
    client = FakeClient()
    with in_transaction(client, acks=False) as producer:
        info = share_acks_refused(
            producer, client, ("a", 1), ErrorCode.INVALID_RECORD_STATE, InvalidRecordStateError
        )
        assert (info.value.topic, info.value.partition) == ("a", 1)
        assert (info.value.group_id, info.value.member_id) == ("g", "m-1")
        assert producer.transaction_state is TxnState.ABORTABLE_ERROR
        with pytest.raises(InvalidRecordStateError):
            producer.commit_transaction()
        with pytest.raises(InvalidRecordStateError):
            producer.send("t", b"v")
        producer.abort_transaction()
        assert [e["committed"] for e in client.sent(26)] == [False]
        assert producer.transaction_state is TxnState.READY


@pytest.mark.parametrize(
    ("failed", "code", "error", "state"),
    [
        (("a", 0), ErrorCode.INVALID_TXN_STATE, InvalidTxnStateError, TxnState.ABORTABLE_ERROR),
        (("b", 0), ErrorCode.PRODUCER_FENCED, ProducerFencedError, TxnState.FATAL_ERROR),
    ],
    ids=["invalid-txn-state-is-abortable-not-fatal", "fenced-is-fatal"],
)
def test_share_ack_error_is_abortable_or_fatal(
    failed: tuple[str, int], code: int, error: type[Exception], state: TxnState
) -> None:
    client = FakeClient()
    with in_transaction(client, acks=False) as producer:
        share_acks_refused(producer, client, failed, code, error)
        assert producer.transaction_state is state
        fatal = state is TxnState.FATAL_ERROR
        with pytest.raises(ProducerFencedError) if fatal else contextlib.nullcontext():
            producer.abort_transaction()


def test_stale_epoch_on_add_share_acks_is_fenced() -> None:
    client = FakeClient()
    with in_transaction(client, acks=False) as producer:
        client.script(
            ADD_ACKS,
            lambda _n, _b: ns(error_code=ErrorCode.INVALID_PRODUCER_EPOCH),
        )
        with pytest.raises(ProducerFencedError):
            producer.send_share_acks_to_transaction(*share_acks())
        assert producer.transaction_state is TxnState.FATAL_ERROR
        assert client.sent(TXN_ACK) == [], "no acknowledgement without the coordinator's add"


def test_retriable_share_ack_errors_resend_only_the_failed_partitions() -> None:
    client = FakeClient()
    client.script(
        ADD_ACKS,
        lambda _n, _b: ns(error_code=ErrorCode.CONCURRENT_TRANSACTIONS),
    )
    fail_share_ack(client, "a", 1, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    with in_transaction(client) as producer:
        assert len(client.sent(ADD_ACKS)) == 2
        first, second = client.sent(TXN_ACK)
        assert len([p for t in first["topics"] for p in t["partitions"]]) == 3
        assert [
            (t["topic_id"], [p["partition"] for p in t["partitions"]]) for t in second["topics"]
        ] == [(client.topic_ids["a"], [1])]
        assert producer.transaction_state is TxnState.IN_TRANSACTION


def test_add_share_acks_timeout_leaves_the_transaction_usable() -> None:
    client = FakeClient()
    with in_transaction(client, acks=False) as producer:
        client.script(
            ADD_ACKS,
            *[lambda _n, _b: ns(error_code=ErrorCode.CONCURRENT_TRANSACTIONS)] * 20,
        )
        with pytest.raises(ConcurrentTransactionsError):
            producer.send_share_acks_to_transaction(*share_acks())
        assert producer.transaction_state is TxnState.IN_TRANSACTION
        assert client.sent(TXN_ACK) == []


def test_share_ack_argument_checks() -> None:
    client = FakeClient()
    with contextlib.closing(producer_with(client)) as producer:
        acks, metadata = share_acks()
        with pytest.raises(ValueError, match="group"):
            producer.send_share_acks_to_transaction(acks, ShareGroupMetadata("other", "m", 1))
        producer.init_transactions()
        with pytest.raises(IllegalStateError, match="outside a transaction"):
            producer.send_share_acks_to_transaction(acks, metadata)
        producer.begin_transaction()
        producer.send_share_acks_to_transaction(ShareAcknowledgements("g", "m"), metadata)
        assert client.sent(ADD_ACKS) == []
        producer.commit_transaction()
        assert client.sent(26) == [], "an empty transaction ends locally"
        with pytest.raises(IllegalStateError, match="outside a transaction"):
            producer.send_offsets_to_transaction({TopicPartition("t", 0): 1}, "g")
        producer.begin_transaction()
        producer.send_offsets_to_transaction({}, "g")
        assert client.sent(25) == [], "no offsets: nothing to add"
        producer.abort_transaction()


def test_prepare_then_complete_with_matching_and_stale_states() -> None:
    client = FakeClient()
    with in_transaction(client, **{"transaction.two.phase.commit.enable": True}) as producer:
        assert client.sent(22)[0]["enable2_pc"] is True
        state = producer.prepare_transaction()
        assert state == PreparedTxnState("tid", PID, 0)
        assert producer.transaction_state is TxnState.PREPARED
        with pytest.raises(IllegalStateError):
            producer.send_share_acks_to_transaction(*share_acks())
        assert producer.complete_transaction(PreparedTxnState("tid", PID, 0)) is True
        assert [e["committed"] for e in client.sent(26)] == [True]

        assert producer.producer_id_and_epoch == (PID, 1), "a new epoch after a prepared txn"
        producer.begin_transaction()
        producer.send_share_acks_to_transaction(*share_acks())
        second = producer.prepare_transaction()
        assert second == PreparedTxnState("tid", PID, 1)
        assert producer.complete_transaction(state) is False, "the first state is stale now"
        assert [e["committed"] for e in client.sent(26)] == [True, False]


def test_keep_prepared_txn_enters_prepared_and_bumps_the_epoch_after_completion() -> None:
    client = FakeClient()
    client.script(
        22,
        lambda _n, _b: ns(
            error_code=0,
            producer_id=PID,
            producer_epoch=5,
            ongoing_txn_producer_id=PID,
            ongoing_txn_producer_epoch=5,
        ),
    )
    producer = producer_with(client, **{"transaction.two.phase.commit.enable": True})
    with contextlib.closing(producer):
        producer.init_transactions(keep_prepared_txn=True)
        init = client.sent(22)[0]
        assert (init["keep_prepared_txn"], init["enable2_pc"]) == (True, True)
        assert producer.transaction_state is TxnState.PREPARED
        assert producer.complete_transaction(PreparedTxnState("tid", PID, 5)) is True
        bump = client.sent(22)[1]
        assert (bump["producer_id"], bump["producer_epoch"]) == (PID, 5)
        assert producer.producer_id_and_epoch == (PID, 6)


def test_transaction_context_manager_aborts_on_error() -> None:
    client = FakeClient()
    with contextlib.closing(producer_with(client)) as producer:
        producer.init_transactions()
        with pytest.raises(KeyError), producer.transaction():
            producer.send_share_acks_to_transaction(*share_acks())
            raise KeyError("boom")
        assert [e["committed"] for e in client.sent(26)] == [False]
        with producer.transaction():
            producer.send_share_acks_to_transaction(*share_acks())
        assert [e["committed"] for e in client.sent(26)] == [False, True]


def test_send_from_a_delivery_callback_during_commit_is_refused_not_deadlocked() -> None:
    client = FakeClient()
    refused: list[BaseException] = []

    def on_done(_future: Any) -> None:
        try:
            producer.send("t", b"from-callback", partition=1)
        except IllegalStateError as exc:
            refused.append(exc)

    with in_transaction(client, acks=False, **{"linger.ms": 60000}) as producer:
        future = producer.send("t", b"v", partition=0)
        future.add_done_callback(on_done)
        producer.commit_transaction(timeout_s=30)  # flush forces the lingering batch out
        assert future.result(0).offset == 0
        assert len(refused) == 1, "the callback ran in COMMITTING and was refused"
        assert [e["committed"] for e in client.sent(26)] == [True]
        assert client.sent(24)[0]["v3_and_below_topics"] == [{"name": "t", "partitions": [0]}]


def test_idempotent_producer_end_to_end_with_keys_and_headers() -> None:
    client = FakeClient()
    producer = TransactionalProducer({"bootstrap.servers": "fake:9092"}, client=client)
    with contextlib.closing(producer):
        futures = [
            producer.send("t", f"v{i}", key=f"k{i}", headers={"n": str(i)}) for i in range(10)
        ]
        producer.flush(30)
        metas = [f.result(0) for f in futures]
        assert [m.partition for m in metas] == [
            partition_for_key(f"k{i}".encode(), 3) for i in range(10)
        ]
        init = client.sent(22)[0]
        assert init["transactional_id"] is None
        for body in client.sent(0):
            assert body["transactional_id"] is None
            for raw in batches_of(body).values():
                header = parse_header(raw)
                assert header.producer_id == PID and not header.is_transactional
    with pytest.raises(Exception, match="closed"):
        producer.send("t", b"late")


def test_record_metadata_carries_the_log_append_time_when_the_broker_answers_one() -> None:
    """As Kafka's client: a LogAppendTime topic's append time replaces the CreateTime."""
    sender, acc, _txn, client, _clock = make_sender()
    appended = datetime.datetime(2026, 11, 29, 6, 0, 0, 123000, tzinfo=datetime.UTC)

    def answer(_node: int | None, body: dict[str, Any]) -> Any:
        return ns(
            responses=[
                ns(
                    name=TP0.topic,
                    partition_responses=[
                        ns(
                            index=TP0.partition,
                            error_code=0,
                            base_offset=7,
                            log_append_time=appended,
                        )
                    ],
                )
            ]
        )

    client.script(0, answer)
    logged = acc.append(TP0, None, b"v", [], 1)
    sender.run_once()
    assert logged.result(0).timestamp == 1_795_932_000_123
    created = acc.append(TP0, None, b"w", [], 1)
    sender.run_once()  # the fake's default answer has no log_append_time: CreateTime stays
    sent = parse_header(batches_of(client.sent(0)[-1])[TP0])
    assert created.result(0).timestamp == sent.base_timestamp != 1_795_932_000_123
