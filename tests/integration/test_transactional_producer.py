"""``TransactionalProducer`` against a real broker process, verified by stock confluent-kafka.

Idempotent produce, commit/abort/open transactions with exact read_committed counts, zombie
fencing, a broker killed mid-transaction, 2PC prepare in a child process killed with
SIGKILL and resumed here (KIP-939/KIP-1310), ``complete_transaction``, misuse errors, and
share acknowledgements in transactions (KIP-1289) with the sharetxn ShareConsumer.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from coordinator.launcher import LocalBroker
from producer.consumer.share_consumer import ShareConsumer
from producer.produce.accumulator import partition_for_key
from producer.produce.transactional_producer import (
    DifferentPreparedTransactionError,
    IllegalStateError,
    NoPreparedTransactionError,
    RecordMetadata,
    TransactionAbortedError,
    TransactionalProducer,
    TxnState,
)
from producer.protocol.types import AcknowledgeType, PreparedTxnState, Record, ShareGroupMetadata
from tests.share_setup import fast_lock_broker, share_topic
from tests.stock_reads import read_messages
from txn.errors import (
    ClosedError,
    InvalidRecordStateError,
    KafkaProtocolError,
    ProducerFencedError,
)

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def txn_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    with LocalBroker(data_dir=tmp_path_factory.mktemp("txnprod")) as b:
        yield b


def new_topic(bootstrap: str, partitions: int = 3) -> str:
    name = f"tp-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(30)
    return name


def consume(
    bootstrap: str, topic: str, isolation: str, expect: int, partitions: int = 3
) -> list[tuple[int, int, bytes | None, bytes]]:
    """(partition, offset, key, value) of every record visible at ``isolation``.

    Reads until at least ``expect`` records arrived and then 1.5 s more, so that extra
    (duplicate or uncommitted) records would be seen too.
    """
    msgs = read_messages(
        bootstrap, topic, partitions, isolation, expect, first_idle_s=3, timeout_s=60
    )
    return [(m.partition(), m.offset(), m.key(), m.value()) for m in msgs]


def values(records: list[tuple[int, int, bytes | None, bytes]]) -> list[bytes]:
    return [r[3] for r in records]


def txn_config(bootstrap: str, tid: str, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "transactional.id": tid, **extra}


def begun_producer(bootstrap: str, tid: str) -> TransactionalProducer:
    """A producer of ``tid`` after ``init_transactions``, its first transaction begun."""
    producer = TransactionalProducer(txn_config(bootstrap, tid))
    producer.init_transactions()
    producer.begin_transaction()
    return producer


# -- idempotent -----------------------------------------------------------------------------


def test_idempotent_2000_records_over_three_partitions_exactly_once(
    txn_broker: LocalBroker,
) -> None:
    bootstrap = txn_broker.bootstrap_servers
    topic = new_topic(bootstrap)
    with TransactionalProducer({"bootstrap.servers": bootstrap, "linger.ms": 2}) as producer:
        futures = [
            producer.send(topic, f"v{i}".encode(), key=f"k{i}".encode()) for i in range(2000)
        ]
        producer.flush(30)
        metas = [f.result(0) for f in futures]
    assert all(isinstance(m, RecordMetadata) and m.topic == topic for m in metas)
    # Keyed records land where Kafka's murmur2 partitioner puts them.
    assert all(m.partition == partition_for_key(f"k{i}".encode(), 3) for i, m in enumerate(metas))
    by_partition: dict[int, list[int]] = {}
    for m in metas:
        by_partition.setdefault(m.partition, []).append(m.offset)
    assert set(by_partition) == {0, 1, 2}
    for offsets in by_partition.values():
        assert offsets == list(range(len(offsets))), "offsets in send order, no gaps"
    seen = consume(bootstrap, topic, "read_uncommitted", 2000)
    counts = Counter(values(seen))
    assert len(counts) == 2000
    assert set(counts.values()) == {1}
    located = {(p, o): v for p, o, _k, v in seen}
    assert all(located[(m.partition, m.offset)] == f"v{i}".encode() for i, m in enumerate(metas))


def test_records_keep_the_timestamp_given_to_send(txn_broker: LocalBroker) -> None:
    """As Kafka's ProducerRecord timestamp: each record of a batch keeps its own CreateTime,
    one without takes the send time; a negative one is refused at once."""
    bootstrap = txn_broker.bootstrap_servers
    topic = new_topic(bootstrap, 1)
    given = [1_600_000_000_000, None, 1_500_000_000_000, 0]
    with TransactionalProducer({"bootstrap.servers": bootstrap, "linger.ms": 50}) as producer:
        before = int(time.time() * 1000)
        futures = [
            producer.send(topic, f"v{i}".encode(), timestamp_ms=ts) for i, ts in enumerate(given)
        ]
        producer.flush(30)
        metas = [f.result(0) for f in futures]
        with pytest.raises(ValueError, match="Invalid timestamp: -1"):
            producer.send(topic, b"x", timestamp_ms=-1)
    assert len({m.offset for m in metas}) == 4 and metas[-1].offset == 3
    messages = read_messages(
        bootstrap, topic, 1, "read_uncommitted", 4, first_idle_s=5, timeout_s=30
    )
    stamps = {m.value(): m.timestamp()[1] for m in messages}
    assert stamps[b"v0"] == metas[0].timestamp == given[0]
    assert stamps[b"v2"] == metas[2].timestamp == given[2]
    assert stamps[b"v3"] == metas[3].timestamp == 0
    assert before <= stamps[b"v1"] == metas[1].timestamp <= int(time.time() * 1000)


def test_keyed_partitions_match_librdkafka_murmur2(txn_broker: LocalBroker) -> None:
    bootstrap = txn_broker.bootstrap_servers
    ours, theirs = new_topic(bootstrap, 7), new_topic(bootstrap, 7)
    keys = [f"key-{i}".encode() for i in range(200)] + [b"", b"\x00 ", b"123456789"]
    with TransactionalProducer({"bootstrap.servers": bootstrap}) as producer:
        mine = [producer.send(ours, b"x", key=k) for k in keys]
        producer.flush(30)
    stock = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    placed: dict[bytes, int] = {}

    def delivered(err: Any, msg: Any) -> None:
        assert err is None
        placed[msg.key()] = msg.partition()

    for k in keys:
        stock.produce(theirs, value=b"x", key=k, on_delivery=delivered)
    assert stock.flush(30) == 0
    assert [f.result(0).partition for f in mine] == [placed[k] for k in keys]


# -- transactions ---------------------------------------------------------------------------


def test_commit_abort_and_open_transactions_have_exact_read_committed_counts(
    txn_broker: LocalBroker,
) -> None:
    bootstrap = txn_broker.bootstrap_servers
    topic = new_topic(bootstrap)
    producer = begun_producer(bootstrap, f"cao-{uuid.uuid4().hex[:6]}")
    try:
        committed = [producer.send(topic, f"c{i}") for i in range(300)]
        producer.commit_transaction()
        assert all(f.result(0).offset >= 0 for f in committed)

        producer.begin_transaction()
        aborted = [producer.send(topic, f"a{i}") for i in range(120)]
        producer.flush(30)  # written to the log, then aborted by the marker
        assert all(f.result(0).offset >= 0 for f in aborted)
        producer.abort_transaction()

        producer.begin_transaction()
        unsent = [producer.send(topic, f"u{i}") for i in range(5)]
        producer.abort_transaction()
        for f in unsent:
            error = f.exception(10)
            assert error is None or isinstance(error, TransactionAbortedError)

        producer.begin_transaction()
        for i in range(40):
            producer.send(topic, f"d{i}")
        producer.commit_transaction()
        assert producer.transaction_state is TxnState.READY

        committed_view = values(consume(bootstrap, topic, "read_committed", 340))
        assert Counter(v[:1] for v in committed_view) == {b"c": 300, b"d": 40}
        assert len(set(committed_view)) == 340
        everything = values(consume(bootstrap, topic, "read_uncommitted", 460))
        assert Counter(v[:1] for v in everything)[b"a"] == 120

        # Left open: written but never visible to read_committed (the LSO stays before it).
        producer.begin_transaction()
        for i in range(25):
            producer.send(topic, f"o{i}")
        producer.flush(30)
        assert Counter(v[:1] for v in values(consume(bootstrap, topic, "read_committed", 340))) == {
            b"c": 300,
            b"d": 40,
        }
        assert (
            Counter(v[:1] for v in values(consume(bootstrap, topic, "read_uncommitted", 485)))[b"o"]
            == 25
        )
    finally:
        producer.close()  # aborts the open transaction
    final = values(consume(bootstrap, topic, "read_committed", 340))
    assert Counter(v[:1] for v in final) == {b"c": 300, b"d": 40}


def test_threads_share_one_transaction(txn_broker: LocalBroker) -> None:
    bootstrap = txn_broker.bootstrap_servers
    topic = new_topic(bootstrap)
    producer = begun_producer(bootstrap, f"threads-{uuid.uuid4().hex[:6]}")
    try:

        def work(n: int) -> None:
            for i in range(500):
                producer.send(topic, f"w{n}-{i}", key=f"{i}")

        workers = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(60)
        producer.commit_transaction()
    finally:
        producer.close()
    visible = values(consume(bootstrap, topic, "read_committed", 2000))
    assert len(visible) == 2000
    assert len(set(visible)) == 2000


def test_context_managers_commit_on_success_and_abort_on_error(txn_broker: LocalBroker) -> None:
    bootstrap = txn_broker.bootstrap_servers
    topic = new_topic(bootstrap, 1)
    tid = f"ctx-{uuid.uuid4().hex[:6]}"
    with TransactionalProducer(txn_config(bootstrap, tid)) as producer:
        producer.init_transactions()
        with producer.transaction():
            producer.send(topic, b"kept-1")
        with pytest.raises(RuntimeError), producer.transaction():
            producer.send(topic, b"dropped")
            producer.flush(30)
            raise RuntimeError("boom")
        assert producer.transaction_state is TxnState.READY
        producer.begin_transaction()
        producer.send(topic, b"kept-2")  # committed by the producer's own __exit__
    assert sorted(values(consume(bootstrap, topic, "read_committed", 2, 1))) == [
        b"kept-1",
        b"kept-2",
    ]


def test_zombie_is_fenced_and_its_open_transaction_never_visible(txn_broker: LocalBroker) -> None:
    bootstrap = txn_broker.bootstrap_servers
    topic = new_topic(bootstrap)
    tid = f"zombie-{uuid.uuid4().hex[:6]}"
    zombie = begun_producer(bootstrap, tid)
    for i in range(50):
        zombie.send(topic, f"z{i}", partition=i % 2)
    zombie.flush(30)

    successor = TransactionalProducer(txn_config(bootstrap, tid))
    successor.init_transactions()  # fences the zombie and aborts its transaction
    assert successor.producer_id_and_epoch[1] > zombie.producer_id_and_epoch[1]

    # Its next transactional call fails with the fatal error, and every later one too.
    late = zombie.send(topic, b"late", partition=0)
    assert isinstance(late.exception(30), ProducerFencedError)
    assert zombie.transaction_state is TxnState.FATAL_ERROR
    with pytest.raises(ProducerFencedError):
        zombie.commit_transaction()
    with pytest.raises(ProducerFencedError):
        zombie.abort_transaction()
    with pytest.raises(ProducerFencedError):
        zombie.begin_transaction()
    zombie.close()

    successor.begin_transaction()
    for i in range(10):
        successor.send(topic, f"s{i}", partition=2)
    successor.commit_transaction()
    successor.close()
    visible = values(consume(bootstrap, topic, "read_committed", 10))
    assert sorted(visible) == sorted(f"s{i}".encode() for i in range(10))


def test_fenced_producer_commit_raises_producer_fenced(txn_broker: LocalBroker) -> None:
    bootstrap = txn_broker.bootstrap_servers
    topic = new_topic(bootstrap, 1)
    tid = f"fence-{uuid.uuid4().hex[:6]}"
    first = begun_producer(bootstrap, tid)
    first.send(topic, b"never")
    first.flush(30)
    with TransactionalProducer(txn_config(bootstrap, tid)) as second:
        second.init_transactions()
    with pytest.raises(ProducerFencedError) as info:
        first.commit_transaction()
    assert info.value.transactional_id == tid
    with pytest.raises(ProducerFencedError):
        first.send(topic, b"after")
    first.close()
    assert values(consume(bootstrap, topic, "read_committed", 0, 1)) == []


def test_broker_killed_mid_transaction_is_all_or_nothing(tmp_path: Path) -> None:
    broker = LocalBroker(data_dir=tmp_path / "data").start()
    try:
        bootstrap = broker.bootstrap_servers
        topic = new_topic(bootstrap)
        producer = TransactionalProducer(
            txn_config(bootstrap, "killed", **{"request.timeout.ms": 5000, "max.block.ms": 60000})
        )
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(100):
            producer.send(topic, f"before-{i}")
        producer.commit_transaction()

        producer.begin_transaction()
        first_half = [producer.send(topic, f"k{i}") for i in range(300)]
        producer.flush(30)
        broker.kill()
        second_half = [producer.send(topic, f"k{i}") for i in range(300, 600)]
        outcome: list[BaseException | None] = []

        def commit() -> None:
            try:
                producer.commit_transaction()
                outcome.append(None)
            except KafkaProtocolError as exc:
                outcome.append(exc)

        committer = threading.Thread(target=commit)
        committer.start()
        time.sleep(0.5)  # the commit is retrying against a dead broker
        broker.start()  # same data directory, same port
        committer.join(90)
        assert outcome, "commit did not return"
        assert all(f.done() for f in first_half + second_half)
        if outcome[0] is not None:
            # A typed error: the producer is abortable or fatal, and the transaction must
            # end up aborted (or committed if EndTxn made it), never partly visible.
            assert isinstance(outcome[0], KafkaProtocolError)
        producer.close(30)
        visible = values(consume(bootstrap, topic, "read_committed", 100))
        counts = Counter(v.split(b"-")[0] if v.startswith(b"before") else b"k" for v in visible)
        assert counts[b"before"] == 100
        assert counts[b"k"] in (0, 600), f"partial transaction visible: {counts[b'k']}"
        if outcome[0] is None:
            assert counts[b"k"] == 600
        assert len(set(visible)) == len(visible)
    finally:
        broker.stop()


# -- two-phase commit -----------------------------------------------------------------------

CHILD = """
import json, sys, time
from producer.produce.transactional_producer import TransactionalProducer
bootstrap, tid, topic, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
p = TransactionalProducer({
    "bootstrap.servers": bootstrap,
    "transactional.id": tid,
    "transaction.two.phase.commit.enable": True,
})
p.init_transactions()
p.begin_transaction()
for i in range(count):
    p.send(topic, f"{tid}-{i}")
state = p.prepare_transaction()
print(json.dumps({"state": str(state)}), flush=True)
time.sleep(600)
"""


def prepare_in_child(bootstrap: str, tid: str, topic: str, count: int) -> PreparedTxnState:
    """Run a producer that prepares a transaction, then SIGKILL it; returns its state."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, bootstrap, tid, topic, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line, child.stderr.read() if child.stderr else "child printed nothing"
        state = PreparedTxnState.parse(json.loads(line)["state"])
    finally:
        child.kill()  # SIGKILL: no close, no abort
        child.wait(30)
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()
    return state


@pytest.mark.parametrize("decision", ["commit", "abort"])
def test_prepare_in_killed_process_then_resume(txn_broker: LocalBroker, decision: str) -> None:
    bootstrap = txn_broker.bootstrap_servers
    topic = new_topic(bootstrap, 2)
    tid = f"2pc-{decision}-{uuid.uuid4().hex[:6]}"
    state = prepare_in_child(bootstrap, tid, topic, 200)
    assert state.transactional_id == tid
    assert values(consume(bootstrap, topic, "read_committed", 0, 2)) == []

    resumed = TransactionalProducer.resume(
        tid, state.producer_id, state.epoch, {"bootstrap.servers": bootstrap}
    )
    assert resumed.transaction_state is TxnState.PREPARED
    with pytest.raises(IllegalStateError):
        resumed.send(topic, b"not allowed after prepare")
    if decision == "commit":
        resumed.commit_transaction()
    else:
        resumed.abort_transaction()
    assert resumed.transaction_state is TxnState.READY
    # The id is usable afterwards (and its LSO moved past the transaction).
    resumed.begin_transaction()
    resumed.send(topic, b"after", partition=0)
    resumed.commit_transaction()
    resumed.close()

    expected = 201 if decision == "commit" else 1
    visible = values(consume(bootstrap, topic, "read_committed", expected, 2))
    counts = Counter(visible)
    assert set(counts.values()) == {1}, "every record exactly once"
    assert len(visible) == expected
    assert b"after" in counts

    # The transaction is finished: resuming it again says so.
    with pytest.raises(NoPreparedTransactionError) as info:
        TransactionalProducer.resume(
            tid, state.producer_id, state.epoch, {"bootstrap.servers": bootstrap}
        )
    assert info.value.reason == "no_ongoing_transaction"


def test_resume_of_a_fenced_prepared_transaction_reports_the_other_one(
    txn_broker: LocalBroker,
) -> None:
    bootstrap = txn_broker.bootstrap_servers
    topic = new_topic(bootstrap, 1)
    tid = f"2pc-other-{uuid.uuid4().hex[:6]}"
    stale = prepare_in_child(bootstrap, tid, topic, 5)
    current = prepare_in_child(bootstrap, tid, topic, 7)  # its init fenced and aborted `stale`
    assert (current.producer_id, current.epoch) != (stale.producer_id, stale.epoch)
    with pytest.raises(DifferentPreparedTransactionError) as info:
        TransactionalProducer.resume(
            tid, stale.producer_id, stale.epoch, {"bootstrap.servers": bootstrap}
        )
    assert (info.value.found_producer_id, info.value.found_epoch) == (
        current.producer_id,
        current.epoch,
    )
    assert info.value.reason == "different_transaction"
    # The ongoing one is untouched by the failed resume and can still be completed.
    with TransactionalProducer.resume(
        tid, current.producer_id, current.epoch, {"bootstrap.servers": bootstrap}
    ) as producer:
        producer.commit_transaction()
    visible = values(consume(bootstrap, topic, "read_committed", 7, 1))
    assert sorted(visible) == sorted(f"{tid}-{i}".encode() for i in range(7))


def test_complete_transaction_commits_matching_and_aborts_stale_state(
    txn_broker: LocalBroker,
) -> None:
    bootstrap = txn_broker.bootstrap_servers
    config = {"bootstrap.servers": bootstrap, "transaction.two.phase.commit.enable": True}
    topic = new_topic(bootstrap, 1)

    # Matching: the producer that prepared completes with its own state.
    tid = f"complete-{uuid.uuid4().hex[:6]}"
    producer = TransactionalProducer({**config, "transactional.id": tid})
    producer.init_transactions()
    producer.begin_transaction()
    producer.send(topic, b"match-1")
    state = producer.prepare_transaction()
    assert producer.complete_transaction(state) is True
    assert producer.transaction_state is TxnState.READY
    # The same session's next prepared transaction has another state; the old one is stale.
    producer.begin_transaction()
    producer.send(topic, b"stale-1")
    second = producer.prepare_transaction()
    assert (second.producer_id, second.epoch) != (state.producer_id, state.epoch)
    assert producer.complete_transaction(state) is False
    producer.close()

    # Stale: the decision record holds a state whose transaction was fenced meanwhile; the
    # transaction prepared now is another one, so completing with the old state aborts it.
    stale = prepare_in_child(bootstrap, tid, topic, 3)
    current = prepare_in_child(bootstrap, tid, topic, 4)
    recovering = TransactionalProducer({**config, "transactional.id": tid})
    recovering.init_transactions(keep_prepared_txn=True)
    assert recovering.transaction_state is TxnState.PREPARED
    assert recovering.producer_id_and_epoch == (current.producer_id, current.epoch)
    assert recovering.complete_transaction(stale) is False
    assert recovering.transaction_state is TxnState.READY

    # Matching again, from a recovering producer.
    matched = prepare_in_child(bootstrap, tid, topic, 2)
    recovering.close()
    again = TransactionalProducer({**config, "transactional.id": tid})
    again.init_transactions(keep_prepared_txn=True)
    assert again.complete_transaction(matched) is True
    again.close()

    visible = sorted(values(consume(bootstrap, topic, "read_committed", 3, 1)))
    assert visible == sorted([b"match-1", f"{tid}-0".encode(), f"{tid}-1".encode()])


def test_keep_prepared_txn_without_an_ongoing_transaction_is_ready(
    txn_broker: LocalBroker,
) -> None:
    config = {
        "bootstrap.servers": txn_broker.bootstrap_servers,
        "transactional.id": f"keep-{uuid.uuid4().hex[:6]}",
        "transaction.two.phase.commit.enable": True,
    }
    with TransactionalProducer(config) as producer:
        producer.init_transactions(keep_prepared_txn=True)
        assert producer.transaction_state is TxnState.READY
        with pytest.raises(IllegalStateError):
            producer.complete_transaction(PreparedTxnState("x", 1, 0))


# -- misuse ---------------------------------------------------------------------------------


def test_every_misuse_raises_the_documented_error(txn_broker: LocalBroker) -> None:
    bootstrap = txn_broker.bootstrap_servers
    topic = new_topic(bootstrap, 1)
    with pytest.raises(ValueError, match=r"linger\.msec"):
        TransactionalProducer({"bootstrap.servers": bootstrap, "linger.msec": 5})

    producer = TransactionalProducer(txn_config(bootstrap, f"misuse-{uuid.uuid4().hex[:6]}"))
    with pytest.raises(IllegalStateError, match="init_transactions"):
        producer.send(topic, b"before init")
    with pytest.raises(IllegalStateError):
        producer.begin_transaction()
    producer.init_transactions()
    with pytest.raises(IllegalStateError, match="already"):
        producer.init_transactions()
    with pytest.raises(IllegalStateError, match="outside a transaction"):
        producer.send(topic, b"outside")
    with pytest.raises(IllegalStateError, match="without an open transaction"):
        producer.commit_transaction()
    with pytest.raises(IllegalStateError, match="without an open transaction"):
        producer.abort_transaction()
    with pytest.raises(IllegalStateError, match="prepared"):
        producer.complete_transaction(PreparedTxnState("x", 1, 1))
    producer.begin_transaction()
    with pytest.raises(IllegalStateError, match="twice"):
        producer.begin_transaction()
    with pytest.raises(IllegalStateError, match=r"two\.phase\.commit"):
        producer.prepare_transaction()
    with pytest.raises(ValueError, match="needs a group id"):
        producer.send_offsets_to_transaction({}, "")
    with pytest.raises(ValueError, match="out of range"):
        producer.send(topic, b"x", partition=5)
    producer.abort_transaction()
    producer.close()
    with pytest.raises(ClosedError):
        producer.begin_transaction()

    idempotent = TransactionalProducer({"bootstrap.servers": bootstrap})
    with pytest.raises(IllegalStateError, match=r"transactional\.id"):
        idempotent.begin_transaction()
    with pytest.raises(IllegalStateError, match=r"transactional\.id"):
        idempotent.init_transactions()
    idempotent.close()
    with pytest.raises(ClosedError):
        idempotent.send(topic, b"after close")


# -- KIP-1289: share acknowledgements in transactions ---------------------------------------


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    yield from fast_lock_broker(tmp_path_factory, "txnshare")


def share_input(bootstrap: str, records: int, partitions: int = 2) -> tuple[str, str]:
    """A new share group, and a new topic of ``records`` records that it reads from the start."""
    group = f"g-{uuid.uuid4().hex[:8]}"
    configs = {"share.heartbeat.interval.ms": "500", "share.record.lock.duration.ms": "30000"}
    topic = share_topic(bootstrap, partitions, group, configs, prefix="in")
    stock = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(records):
        stock.produce(topic, key=f"k{i}".encode(), value=f"r{i}".encode(), partition=i % partitions)
    assert stock.flush(30) == 0
    return group, topic


def share_consumer(bootstrap: str, group: str, topic: str) -> ShareConsumer:
    c = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "transactional",
        }
    )
    c.subscribe([topic])
    return c


def send_acks(producer: TransactionalProducer, consumer: ShareConsumer) -> None:
    """The consumer's acknowledgements, sent to the producer's transaction."""
    producer.send_share_acks_to_transaction(consumer.acknowledgements(), consumer.group_metadata())


def poll_and_accept(c: ShareConsumer, want: int, timeout_s: float = 30) -> list[Record]:
    """Poll until ``want`` records are acquired, recording an ACCEPT for each."""
    got: list[Record] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < want and time.monotonic() < deadline:
        for record in c.poll(0.5):
            c.acknowledge(record, AcknowledgeType.ACCEPT)
            got.append(record)
    return got


def assert_nothing_delivered(bootstrap: str, group: str, topic: str) -> None:
    """A new member of the group gets no record within a few seconds."""
    fresh = share_consumer(bootstrap, group, topic)
    try:
        assert poll_and_accept(fresh, 1, timeout_s=4) == []
    finally:
        fresh.close()


@dataclass
class Pipeline:
    """A share consumer reading ``source`` and a transactional producer writing to ``sink``."""

    bootstrap: str
    group: str
    source: str
    sink: str
    tid: str
    consumer: ShareConsumer
    producer: TransactionalProducer

    def assert_inputs_acknowledged(self) -> None:
        """The consumer leaves; a new member of its group gets no record."""
        self.consumer.close()
        assert_nothing_delivered(self.bootstrap, self.group, self.source)

    def forward(self, want: int) -> list[Record]:
        """Begin a transaction with ``want`` accepted records copied to the sink and their
        acknowledgements; the records."""
        self.producer.begin_transaction()
        records = poll_and_accept(self.consumer, want)
        for r in records:
            self.producer.send(self.sink, r.value)
        send_acks(self.producer, self.consumer)
        return records


@contextmanager
def pipeline(
    broker: LocalBroker, records: int, partitions: int, tid_prefix: str, **config: Any
) -> Iterator[Pipeline]:
    """A new share group reading ``records`` records, and a producer after init_transactions;
    the source and the sink have ``partitions`` partitions each.  Both clients close on exit.
    """
    bootstrap = broker.bootstrap_servers
    group, source = share_input(bootstrap, records, partitions)
    sink = new_topic(bootstrap, partitions)
    tid = f"{tid_prefix}-{uuid.uuid4().hex[:6]}"
    consumer = share_consumer(bootstrap, group, source)
    producer = TransactionalProducer(txn_config(bootstrap, tid, **config))
    try:
        producer.init_transactions()
        yield Pipeline(bootstrap, group, source, sink, tid, consumer, producer)
    finally:
        consumer.close()
        producer.close()


def test_consume_transform_produce_commit_acknowledges_inputs(share_broker: LocalBroker) -> None:
    with pipeline(share_broker, 30, 2, "ctp") as p:
        bootstrap, sink, consumer, producer = p.bootstrap, p.sink, p.consumer, p.producer
        with producer.transaction():
            records = poll_and_accept(consumer, 30)
            assert len(records) == 30
            for r in records:
                producer.send(sink, (r.value or b"").upper(), key=r.key)
            send_acks(producer, consumer)
        outputs = values(consume(bootstrap, sink, "read_committed", 30, 2))
        assert sorted(outputs) == sorted(f"R{i}".encode() for i in range(30))
        # The inputs are acknowledged: not redelivered, even to a new member after the
        # first one left (its session close would have released anything still acquired).
        assert consumer.poll(2.0) == []
        p.assert_inputs_acknowledged()


def test_aborted_transaction_redelivers_inputs_and_hides_outputs(share_broker: LocalBroker) -> None:
    with pipeline(share_broker, 12, 2, "abort") as p:
        bootstrap, sink, consumer, producer = p.bootstrap, p.sink, p.consumer, p.producer
        first = p.forward(12)
        producer.flush(30)
        producer.abort_transaction()
        again = poll_and_accept(consumer, 12)
        assert sorted((r.partition, r.offset) for r in again) == sorted(
            (r.partition, r.offset) for r in first
        )
        assert {r.delivery_count for r in again} == {2}
        assert values(consume(bootstrap, sink, "read_committed", 0, 2)) == []
        assert len(values(consume(bootstrap, sink, "read_uncommitted", 12, 2))) == 12
        # The redelivered records can be acknowledged in the next transaction.
        with producer.transaction():
            send_acks(producer, consumer)
        p.assert_inputs_acknowledged()


def test_acks_for_records_of_another_member_make_the_transaction_abortable(
    share_broker: LocalBroker,
) -> None:
    with pipeline(share_broker, 4, 1, "owner") as p:
        consumer, producer = p.consumer, p.producer
        producer.begin_transaction()
        assert len(poll_and_accept(consumer, 4)) == 4
        acks = consumer.acknowledgements()
        meta = consumer.group_metadata()
        impostor = ShareGroupMetadata(meta.group_id, "not-the-owner-member-x", meta.member_epoch)
        with pytest.raises(InvalidRecordStateError) as info:
            producer.send_share_acks_to_transaction(acks, impostor)
        assert info.value.group_id == p.group
        assert producer.transaction_state is TxnState.ABORTABLE_ERROR
        with pytest.raises(InvalidRecordStateError):
            producer.commit_transaction()
        producer.abort_transaction()
        # Nothing changed: the owner can still acknowledge them in a new transaction.
        with producer.transaction():
            producer.send_share_acks_to_transaction(acks, meta)
        p.assert_inputs_acknowledged()


def test_zombie_with_pending_acks_is_fenced_and_its_acks_discarded(
    share_broker: LocalBroker,
) -> None:
    with pipeline(share_broker, 6, 1, "zacks") as p:
        bootstrap, sink, consumer, zombie = p.bootstrap, p.sink, p.consumer, p.producer
        p.forward(6)
        zombie.flush(30)
        with TransactionalProducer(txn_config(bootstrap, p.tid)) as successor:
            successor.init_transactions()  # fences the zombie and aborts its transaction
        with pytest.raises(ProducerFencedError):
            zombie.commit_transaction()
        again = poll_and_accept(consumer, 6)
        assert {r.delivery_count for r in again} == {2}
        assert values(consume(bootstrap, sink, "read_committed", 0, 1)) == []


def test_prepared_share_acks_survive_the_consumer_and_commit_after_resume(
    share_broker: LocalBroker,
) -> None:
    two_phase = {"transaction.two.phase.commit.enable": True}
    with pipeline(share_broker, 8, 2, "2pc-acks", **two_phase) as p:
        bootstrap, sink, consumer, producer = p.bootstrap, p.sink, p.consumer, p.producer
        p.forward(8)
        state = producer.prepare_transaction()
        producer.close()  # a prepared transaction is left for its coordinator
        consumer.close()  # TX_PENDING records are not released by the session close
        other = share_consumer(p.bootstrap, p.group, p.source)
        try:
            assert poll_and_accept(other, 1, timeout_s=4) == []
            with TransactionalProducer.resume(
                p.tid, state.producer_id, state.epoch, {"bootstrap.servers": bootstrap}
            ) as resumed:
                resumed.commit_transaction()
            assert len(values(consume(bootstrap, sink, "read_committed", 8, 2))) == 8
            other.close()
            assert_nothing_delivered(p.bootstrap, p.group, p.source)
        finally:
            other.close()
