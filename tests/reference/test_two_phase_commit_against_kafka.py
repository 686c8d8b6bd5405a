"""Two-phase commit of our client on Apache Kafka 4.4 and on sharetxn (issue 17, item 3).

A child process prepares a transaction and is SIGKILLed; this process (a new one) finishes
it by the stored (transactional id, producer id, epoch), through the client library or
``sharetxn txn``; a stock confluent-kafka read_committed consumer checks the outputs by
value.  On Kafka: with KIP-939 enabled (``Enable2Pc``; KeepPreparedTxn is not implemented
by 4.4, so the resume goes by the stored ids), without it (a timeout-bounded transaction),
and the timeout case, which must give ``PreparedTransactionAbortedError``.  The same
scenarios run against sharetxn (KeepPreparedTxn).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chaos.cli.main import main as sharetxn
from coordinator.launcher import LocalBroker
from producer import Admin, TransactionalProducer
from producer.admin import TopicSpec
from producer.produce.txn_manager import (
    PreparedTransactionAbortedError,
    PreparedTransactionCommittedError,
)
from producer.protocol.types import PreparedTxnState
from tests.reference.kafka import ReferenceKafka
from tests.reference.test_client_against_kafka import _read_committed
from txn.errors import ErrorCode
from txn.limits import INT32_MAX

pytestmark = pytest.mark.reference


@pytest.fixture(autouse=True)
def _operator(monkeypatch: pytest.MonkeyPatch) -> None:
    """``sharetxn txn ... --apply`` needs an operator name (``$USER``)."""
    monkeypatch.setenv("USER", "two-phase-test")


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _topic(bootstrap: str) -> str:
    name = _name("twopc")
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        assert admin.create_topics([TopicSpec(name, 1, 1)])[name] == ErrorCode.NONE
    return name


def prepared_by_killed_client(
    bootstrap: str, topic: str, values: list[str], **config: Any
) -> tuple[PreparedTxnState, str]:
    """A child prepares VALUES in one transaction and is SIGKILLed; (state, its protocol)."""
    tid = _name("twopc")
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.reference.prepare_worker",
            bootstrap,
            tid,
            topic,
            json.dumps(config),
            *values,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
    finally:
        child.kill()  # SIGKILL: nothing of the client's shutdown runs
        _, err = child.communicate()
    assert line, f"the client exited before preparing:\n{err}"
    report = json.loads(line)
    return PreparedTxnState.parse(report["state"]), str(report["protocol"])


def _describe(bootstrap: str, tid: str) -> Any:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        [desc] = admin.describe_transactions([tid])
    return desc


def _wait_state(bootstrap: str, tid: str, state: str, timeout_s: float = 20) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        desc = _describe(bootstrap, tid)
        if desc.state == state or time.monotonic() > deadline:
            return desc
        time.sleep(0.2)


def _resume(bootstrap: str, state: PreparedTxnState) -> TransactionalProducer:
    return TransactionalProducer.resume(
        state.transactional_id,
        state.producer_id,
        state.epoch,
        {"bootstrap.servers": bootstrap},
        timeout_s=30,
    )


def _txn_cli(bootstrap: str, audit: Path, *argv: str) -> int:
    """``sharetxn txn ARGV --apply`` in-process; its exit code (2: acted)."""
    return sharetxn(
        [
            "txn",
            *argv,
            "--bootstrap-server",
            bootstrap,
            "--audit-log",
            str(audit),
            "--scan-interval",
            "0.2",
            "--apply",
            "--json",
        ]
    )


def _ids(state: PreparedTxnState) -> list[str]:
    return [
        "--transactional-id",
        state.transactional_id,
        "--producer-id",
        str(state.producer_id),
        "--epoch",
        str(state.epoch),
    ]


def test_enable2pc_prepared_and_killed_is_committed_by_a_new_process(
    kafka_2pc: ReferenceKafka,
) -> None:
    bootstrap = kafka_2pc.bootstrap_servers
    topic = _topic(bootstrap)
    values = ["c0", "c1", "c2"]
    state, protocol = prepared_by_killed_client(bootstrap, topic, values)
    assert protocol == "enable2pc"
    desc = _describe(bootstrap, state.transactional_id)
    assert (desc.state, desc.transaction_timeout_ms) == ("Ongoing", INT32_MAX)  # no timeout

    producer = _resume(bootstrap, state)
    try:
        assert producer.resumed_by_stored_ids  # Kafka 4.4 has no KeepPreparedTxn
        assert producer.complete_transaction(state, timeout_s=30)
    finally:
        producer.close()
    assert _read_committed(bootstrap, topic, 3) == [v.encode() for v in values]
    # the finished transaction stays visible under its ids: a second recovery knows
    with pytest.raises(PreparedTransactionCommittedError):
        _resume(bootstrap, state)


def test_killed_clients_completed_by_sharetxn_txn_on_kafka_without_2pc(
    reference_kafka: ReferenceKafka, tmp_path: Path
) -> None:
    """Stock Kafka 4.4 settings: no InitProducerId v6, so prepared = timeout-bounded."""
    bootstrap = reference_kafka.bootstrap_servers
    topic = _topic(bootstrap)
    aborted, protocol = prepared_by_killed_client(bootstrap, topic, ["a0", "a1"])
    committed, _ = prepared_by_killed_client(bootstrap, topic, ["c0", "c1"])
    assert protocol == "timeout"
    audit = tmp_path / "audit.jsonl"
    assert _txn_cli(bootstrap, audit, "abort", *_ids(aborted)) == 2
    assert _describe(bootstrap, aborted.transactional_id).state == "CompleteAbort"
    evidence = ["--prepared-state", str(committed)]
    assert _txn_cli(bootstrap, audit, "commit", *_ids(committed), *evidence) == 2
    assert _describe(bootstrap, committed.transactional_id).state == "CompleteCommit"
    assert _read_committed(bootstrap, topic, 2) == [b"c0", b"c1"]


@pytest.fixture
def sharetxn_fast_reaper(tmp_path: Path) -> Iterator[LocalBroker]:
    config = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"}
    with LocalBroker(data_dir=tmp_path / "data", config=config) as running:
        yield running


@pytest.mark.parametrize("cluster", ["kafka", "sharetxn"])
def test_timed_out_prepared_transaction_gives_typed_error(
    cluster: str, request: pytest.FixtureRequest
) -> None:
    fixture = "kafka_2pc" if cluster == "kafka" else "sharetxn_fast_reaper"
    bootstrap = request.getfixturevalue(fixture).bootstrap_servers
    topic = _topic(bootstrap)
    config = {"sharetxn.prepare.mode": "timeout", "transaction.timeout.ms": 2000}
    # a producer that outlives its prepared transaction's timeout: the commit fails typed
    tid = _name("late")
    late = TransactionalProducer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": tid,
            "transaction.two.phase.commit.enable": True,
            **config,
        }
    )
    try:
        late.init_transactions()
        assert late.two_phase_commit_protocol == "timeout"
        late.begin_transaction()
        late.send(topic, b"late", partition=0)
        late.prepare_transaction()
        assert _wait_state(bootstrap, tid, "CompleteAbort").state == "CompleteAbort"
        with pytest.raises(PreparedTransactionAbortedError) as raised:
            late.commit_transaction(timeout_s=30)
        assert raised.value.transactional_id == tid
        assert "2000 ms" in str(raised.value)
    finally:
        late.close()
    # a killed client's prepared transaction that timed out: the resume fails typed
    state, _ = prepared_by_killed_client(bootstrap, topic, ["gone"], **config)
    _wait_state(bootstrap, state.transactional_id, "CompleteAbort")
    with pytest.raises(PreparedTransactionAbortedError) as resumed:
        _resume(bootstrap, state)
    assert (resumed.value.producer_id, resumed.value.epoch) == (state.producer_id, state.epoch)
    # nothing of either transaction is readable; a later transaction is
    after = TransactionalProducer({"bootstrap.servers": bootstrap, "transactional.id": tid})
    try:
        after.init_transactions()
        with after.transaction():
            after.send(topic, b"after", partition=0)
    finally:
        after.close()
    assert _read_committed(bootstrap, topic, 1) == [b"after"]


def test_killed_clients_resumed_on_sharetxn(broker: LocalBroker) -> None:
    bootstrap = broker.bootstrap_servers
    topic = _topic(bootstrap)
    committed, protocol = prepared_by_killed_client(bootstrap, topic, ["c0", "c1"])
    aborted, _ = prepared_by_killed_client(bootstrap, topic, ["a0"])
    assert protocol == "enable2pc"
    for state, commit in ((aborted, False), (committed, True)):
        producer = _resume(bootstrap, state)
        try:
            assert not producer.resumed_by_stored_ids  # sharetxn keeps prepared (KIP-939)
            if commit:
                producer.commit_transaction(timeout_s=30)
            else:
                producer.abort_transaction(timeout_s=30)
        finally:
            producer.close()
    assert _read_committed(bootstrap, topic, 2) == [b"c0", b"c1"]
