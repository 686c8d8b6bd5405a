"""KIP-1289 end to end: our clients, real broker processes, a stock read_committed verifier."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from confluent_kafka import Producer

from coordinator.launcher import LocalBroker
from producer.admin import Admin, TopicSpec
from producer.consumer.share_consumer import ShareConsumer
from producer.produce.transactional_producer import IllegalStateError, TransactionalProducer
from producer.protocol.types import PreparedTxnState
from tests.interop.test_stock_clients import read_all
from tests.kafka_wire import WireClient
from txn.api_keys import ApiKey
from txn.errors import ErrorCode, KafkaProtocolError, ProducerFencedError

pytestmark = pytest.mark.integration

BROKER_CONFIG = {
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.min.session.timeout.ms": "2000",
    "group.share.min.heartbeat.interval.ms": "500",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
}


def prepare_share_group(bootstrap: str, records: int, **group_configs: str) -> tuple[str, str, str]:
    suffix = uuid.uuid4().hex[:6]
    topic_in, topic_out, group = f"in-{suffix}", f"out-{suffix}", f"g-{suffix}"
    with Admin(bootstrap) as admin:
        admin.create_topics([TopicSpec(topic_in, 1), TopicSpec(topic_out, 1)])
        admin.alter_group_configs(group, {"share.auto.offset.reset": "earliest", **group_configs})
    stock = Producer({"bootstrap.servers": bootstrap})
    for i in range(records):
        stock.produce(topic_in, value=f"r{i}".encode(), key=str(i).encode())
    assert stock.flush(10) == 0
    return topic_in, topic_out, group


def share_consumer(bootstrap: str, group: str, mode: str = "transactional") -> ShareConsumer:
    return ShareConsumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": mode}
    )


def subscribed_setup(
    bootstrap: str, records: int, **group_configs: str
) -> tuple[str, str, str, ShareConsumer]:
    """``setup``, and a transactional share consumer of the group subscribed to the input."""
    topic_in, topic_out, group = prepare_share_group(bootstrap, records, **group_configs)
    c = share_consumer(bootstrap, group)
    c.subscribe([topic_in])
    return topic_in, topic_out, group, c


def producer(bootstrap: str, tid: str, **extra: Any) -> TransactionalProducer:
    p = TransactionalProducer({"bootstrap.servers": bootstrap, "transactional.id": tid, **extra})
    p.init_transactions()
    return p


def poll_n(consumer: ShareConsumer, n: int, timeout_s: float = 20) -> list[Any]:
    out: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < n and time.monotonic() < deadline:
        out.extend(consumer.poll(0.5))
    return out


def begin_and_poll(p: TransactionalProducer, c: ShareConsumer, n: int) -> list[Any]:
    """Begin a transaction of ``p``, then poll ``n`` records of ``c`` (fewer on timeout)."""
    p.begin_transaction()
    return poll_n(c, n)


def copy_in_txn(p: TransactionalProducer, c: ShareConsumer, topic_out: str, n: int) -> list[Any]:
    records = begin_and_poll(p, c, n)
    for r in records:
        p.send(topic_out, (r.value or b"").upper(), key=r.key)
        c.acknowledge(r)
    p.send_share_acks_to_transaction(c.acknowledgements(), c.group_metadata())
    return records


def offsets(admin_bootstrap: str, group: str, topic: str) -> int:
    with Admin(admin_bootstrap) as admin:
        (progress,) = admin.share_group_progress(group, [topic]).values()
        return progress


@pytest.fixture
def kbroker(tmp_path: Path) -> Any:
    with LocalBroker(data_dir=tmp_path / "d", config=BROKER_CONFIG) as b:
        yield b


def test_committed_copy_is_visible_and_inputs_never_return(kbroker: LocalBroker) -> None:
    b = kbroker.bootstrap_servers
    topic_in, topic_out, group, c = subscribed_setup(b, 20)
    p = producer(b, "ctp-commit")
    records = copy_in_txn(p, c, topic_out, 20)
    assert len(records) == 20
    p.commit_transaction()
    assert sorted(read_all(b, topic_out, 1, "read_committed", expect_at_least=20)) == sorted(
        f"R{i}".encode() for i in range(20)
    )
    assert offsets(b, group, topic_in) == 20
    other = share_consumer(b, group, "explicit")
    other.subscribe([topic_in])
    assert poll_n(other, 1, timeout_s=3) == []
    other.close()
    c.close()
    p.close()


def test_bulk_copy_send_many_and_acknowledge_delivered(kbroker: LocalBroker) -> None:
    """The bulk paths of a read task and a write task: whole polls in, no futures out."""
    b = kbroker.bootstrap_servers
    topic_in, topic_out, group, c = subscribed_setup(b, 30)
    p = producer(b, "ctp-bulk")
    records = begin_and_poll(p, c, 30)
    assert c.acknowledge_delivered() == len(records) == 30
    assert c.acknowledge_delivered() == 0  # nothing left of that poll
    sent = p.send_many(topic_out, ((r.key, (r.value or b"").upper()) for r in records))
    assert sent == 30
    p.send_share_acks_to_transaction(c.acknowledgements(), c.group_metadata())
    p.commit_transaction()
    assert sorted(read_all(b, topic_out, 1, "read_committed", expect_at_least=30)) == sorted(
        f"R{i}".encode() for i in range(30)
    )
    assert offsets(b, group, topic_in) == 30
    with pytest.raises(IllegalStateError):
        p.send_many(topic_out, [(None, b"outside a transaction")])
    c.close()
    p.close()


def test_aborted_copy_is_invisible_and_inputs_return_then_archive(kbroker: LocalBroker) -> None:
    b = kbroker.bootstrap_servers
    topic_in, topic_out, group, c = subscribed_setup(b, 5, **{"share.delivery.count.limit": "2"})
    p = producer(b, "ctp-abort")
    copy_in_txn(p, c, topic_out, 5)
    p.abort_transaction()
    again = copy_in_txn(p, c, topic_out, 5)
    assert sorted(r.offset for r in again) == [0, 1, 2, 3, 4]
    assert {r.delivery_count for r in again} == {2}
    p.abort_transaction()  # the second abort reaches the delivery limit of 2: ARCHIVED
    assert poll_n(c, 1, timeout_s=3) == []
    assert read_all(b, topic_out, 1, "read_committed") == []
    assert offsets(b, group, topic_in) == 5
    c.close()
    p.close()


def test_killed_producer_times_out_and_inputs_return(kbroker: LocalBroker) -> None:
    b = kbroker.bootstrap_servers
    topic_in, topic_out, group = prepare_share_group(b, 10)
    with worker_process("hang", b, group, topic_in, topic_out, "hang-tid", "10") as output:
        wait_ready(output)
    # its transaction (timeout 3 s) is aborted by the broker; the inputs come back
    c = share_consumer(b, group, "explicit")
    c.subscribe([topic_in])
    back = poll_n(c, 10, timeout_s=30)
    assert sorted(r.offset for r in back) == list(range(10))
    for r in back:
        c.acknowledge(r)
    c.commit_sync()
    c.close()
    assert read_all(b, topic_out, 1, "read_committed") == []


def test_zombie_is_fenced_and_its_pending_acks_discarded(kbroker: LocalBroker) -> None:
    b = kbroker.bootstrap_servers
    topic_in, topic_out, group, c = subscribed_setup(b, 6)
    zombie = producer(b, "same-tid")
    records = begin_and_poll(zombie, c, 6)
    for r in records[:3]:
        zombie.send(topic_out, b"zombie")
        c.acknowledge(r)
    zombie.send_share_acks_to_transaction(c.acknowledgements(), c.group_metadata())
    zombie.flush()
    winner = producer(b, "same-tid")  # fences the zombie and aborts its transaction
    for r in records[3:]:
        c.acknowledge(r)
    with pytest.raises(ProducerFencedError):
        zombie.send_share_acks_to_transaction(c.acknowledgements(), c.group_metadata())
    with pytest.raises(KafkaProtocolError):
        zombie.commit_transaction()
    winner.close()
    zombie.close()
    c.close()
    assert read_all(b, topic_out, 1, "read_committed") == []
    again = share_consumer(b, group, "explicit")
    again.subscribe([topic_in])
    back = poll_n(again, 6, timeout_s=20)
    assert sorted(r.offset for r in back) == list(range(6))  # the zombie's acks were discarded
    again.close()


def test_txn_share_acknowledge_checks_on_the_wire(kbroker: LocalBroker) -> None:
    b = kbroker.bootstrap_servers
    topic_in, _topic_out, group, c = subscribed_setup(b, 3)
    polled = poll_n(c, 3)
    assert len(polled) == 3
    with Admin(b) as admin:
        topic_id = admin.client.topic(topic_in).topic_id
    client = WireClient(b)
    try:
        init = client.request(22, 4, {"transactional_id": "wire-tid", "transaction_timeout": 60000})
        pid, epoch = int(init.producer_id), int(init.producer_epoch)

        def txn_ack(member: str) -> int:
            resp = client.request(
                ApiKey.TXN_SHARE_ACKNOWLEDGE,
                0,
                {
                    "group_id": group,
                    "transactional_id": "wire-tid",
                    "producer_id": pid,
                    "producer_epoch": epoch,
                    "member_id": member,
                    "topics": [
                        {
                            "topic_id": topic_id,
                            "partitions": [
                                {
                                    "partition": 0,
                                    "acknowledgement_batches": [
                                        {"first_offset": 0, "last_offset": 2, "acknowledge_type": 1}
                                    ],
                                }
                            ],
                        }
                    ],
                },
            )
            return int(resp.topics[0].partitions[0].error_code)

        # never added with AddShareAcksToTxn: INVALID_TXN_STATE
        assert txn_ack(c.member_id) == ErrorCode.INVALID_TXN_STATE
        added = client.request(
            ApiKey.ADD_SHARE_ACKS_TO_TXN,
            0,
            {
                "transactional_id": "wire-tid",
                "producer_id": pid,
                "producer_epoch": epoch,
                "group_id": group,
                "topics": [{"name": topic_in, "partitions": [0]}],
            },
        )
        assert int(added.error_code) == 0
        # records of another member: INVALID_RECORD_STATE
        assert txn_ack("someone-else") == ErrorCode.INVALID_RECORD_STATE
    finally:
        client.close()
    # nothing changed: the owner still holds the records and can put them in a transaction
    p = producer(b, "wire-owner")
    p.begin_transaction()
    for record in polled:
        c.acknowledge(record)
    p.send_share_acks_to_transaction(c.acknowledgements(), c.group_metadata())
    p.commit_transaction()
    assert offsets(b, group, topic_in) == 3
    p.close()
    c.close()


def test_lock_expiry_does_not_redeliver_tx_pending_records(kbroker: LocalBroker) -> None:
    b = kbroker.bootstrap_servers
    short_locks = {"share.record.lock.duration.ms": "1000"}
    topic_in, topic_out, group, c = subscribed_setup(b, 4, **short_locks)
    p = producer(b, "pending-locks")
    copy_in_txn(p, c, topic_out, 4)
    time.sleep(2.5)  # past the 1 s acquisition lock
    other = share_consumer(b, group, "explicit")
    other.subscribe([topic_in])
    assert poll_n(other, 1, timeout_s=3) == []
    p.commit_transaction()
    assert len(read_all(b, topic_out, 1, "read_committed", expect_at_least=4)) == 4
    other.close()
    c.close()
    p.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def worker_process(*args: str) -> Iterator[IO[str]]:
    """``python -m tests.integration.kip1289_worker ARGS``: its output, until SIGKILL."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.kip1289_worker", *args],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        yield child.stdout
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        if child.stdout is not None:
            child.stdout.close()


def wait_ready(output: IO[str]) -> None:
    line = output.readline()
    while line and "ready" not in line:  # listener lines come first
        line = output.readline()
    assert "ready" in line


@contextlib.contextmanager
def markerless_broker(data: Path, port: int) -> Iterator[str]:
    """A broker process on ``port`` that loses its transaction markers (kip1289_worker's
    ``nomarkers``): its bootstrap, until it is killed with SIGKILL."""
    with worker_process("nomarkers", str(data), str(port)) as output:
        wait_ready(output)
        yield f"127.0.0.1:{port}"


def prepared_by_killed_process(
    b: str, group: str, topic_in: str, topic_out: str, tid: str, n: int
) -> PreparedTxnState:
    """A child consumes N records, prepares a 2PC transaction with their acks, is SIGKILLed."""
    with worker_process("prepare", b, group, topic_in, topic_out, tid, str(n)) as output:
        return PreparedTxnState.parse(output.readline())


def test_broker_killed_after_prepare_commit_completes_on_restart(tmp_path: Path) -> None:
    data = tmp_path / "d"
    port = _free_port()
    with markerless_broker(data, port) as b:
        topic_in, topic_out, group, c = subscribed_setup(b, 5)
        p = producer(b, "prepared-then-killed", **{"request.timeout.ms": 5000})
        copy_in_txn(p, c, topic_out, 5)
        # EndTxn answers once PREPARE_COMMIT is durable; the markers are then lost
        p.commit_transaction(timeout_s=10)
        assert read_all(b, topic_out, 1, "read_committed") == []  # the LSO is held
        assert offsets(b, group, topic_in) == -1  # nothing written outside the transaction
    with LocalBroker(data_dir=data, port=port, config=BROKER_CONFIG) as broker:
        b = broker.bootstrap_servers
        assert len(read_all(b, topic_out, 1, "read_committed", expect_at_least=5)) == 5
        assert offsets(b, group, topic_in) == 5
        with Admin(b) as admin:
            assert (
                admin.describe_transactions(["prepared-then-killed"])[0].state == "CompleteCommit"
            )
    c.close()
    p.close()


@pytest.mark.parametrize("commit", [True, False])
def test_two_phase_commit_resumed_in_another_process(kbroker: LocalBroker, commit: bool) -> None:
    b = kbroker.bootstrap_servers
    topic_in, topic_out, group = prepare_share_group(b, 8)
    state = prepared_by_killed_process(b, group, topic_in, topic_out, "twopc", 8)
    time.sleep(4)  # longer than transaction.timeout.ms: a 2PC transaction is never timed out
    resumed = TransactionalProducer.resume(
        state.transactional_id, state.producer_id, state.epoch, {"bootstrap.servers": b}
    )
    if commit:
        resumed.commit_transaction()
    else:
        resumed.abort_transaction()
    resumed.close()
    outputs = read_all(b, topic_out, 1, "read_committed", expect_at_least=8 if commit else 0)
    c = share_consumer(b, group, "explicit")
    c.subscribe([topic_in])
    back = poll_n(c, 8, timeout_s=10 if not commit else 3)
    c.close()
    if commit:
        assert sorted(outputs) == sorted(f"R{i}".encode() for i in range(8))
        assert back == []
    else:
        assert outputs == []
        assert sorted(r.offset for r in back) == list(range(8))
    assert json.loads(str(state))["transactional_id"] == "twopc"
