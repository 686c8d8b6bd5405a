"""``sharetxn txn`` and ``sharetxn recover`` against real broker processes, in-process CLI.

Prepared 2PC transactions come from a child process that is SIGKILLed (as a crashed
application would leave them) or from in-process producers that are closed after
``prepare_transaction`` (which leaves the prepared transaction to the coordinator).  A
stock confluent-kafka read_committed consumer verifies the outputs; the share-group
start offset (DescribeShareGroupOffsets) and redelivery verify the acknowledgements.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import producer.twophase.execute
from chaos.cli.main import main as sharetxn
from coordinator.launcher import LocalBroker
from producer.admin import Admin, TopicSpec
from producer.consumer.share_consumer import ShareConsumer
from producer.produce.transactional_producer import TransactionalProducer
from producer.protocol.types import PreparedTxnState, Record
from producer.twophase.audit import read_audit_log
from producer.twophase.execute import Executor
from producer.twophase.model import TxnSnapshot
from producer.twophase.plan import Step
from producer.twophase.scan import RateLimiter, Scanner
from producer.twophase.spark_checkpoint import (
    Intent,
    IntentTransaction,
    transactional_id,
    write_intent,
)
from tests.integration.test_kip1289_e2e import (
    BROKER_CONFIG,
    _free_port,
    markerless_broker,
    offsets,
    poll_n,
    prepare_share_group,
    prepared_by_killed_process,
    share_consumer,
    subscribed_setup,
)
from tests.interop.test_stock_clients import read_all
from txn.errors import ProducerFencedError, RequestTimedOutError
from txn.ids import TopicPartition

pytestmark = pytest.mark.integration

FAST = ["--scan-interval", "0.2"]


@pytest.fixture(scope="module")
def kbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    with LocalBroker(data_dir=tmp_path_factory.mktemp("recovery") / "d", config=BROKER_CONFIG) as b:
        yield b


@pytest.fixture
def audit(tmp_path: Path) -> Path:
    """The test's ``--audit-log`` (not written yet)."""
    return tmp_path / "audit.jsonl"


@pytest.fixture(autouse=True)
def _operator(monkeypatch: pytest.MonkeyPatch) -> None:
    """--apply needs an operator name (``--operator`` or ``$USER``)."""
    monkeypatch.setenv("USER", "recovery-test")


def cli(capsys: pytest.CaptureFixture[str], b: str, *argv: str) -> tuple[int, Any]:
    """Run ``sharetxn ARGV --bootstrap-server B --json``; (exit code, parsed JSON)."""
    code = sharetxn([*argv, "--bootstrap-server", b, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out or captured.err)  # errors are JSON on stderr


def two_phase_producer(b: str, tid: str) -> TransactionalProducer:
    """A 2PC transactional producer for ``tid`` with its first transaction begun."""
    p = TransactionalProducer(
        {
            "bootstrap.servers": b,
            "transactional.id": tid,
            "transaction.two.phase.commit.enable": True,
        }
    )
    p.init_transactions()
    p.begin_transaction()
    return p


def txn_ids(tid: str, producer_id: int, epoch: int) -> list[str]:
    """The ``--transactional-id --producer-id --epoch`` options naming one transaction."""
    return ["--transactional-id", tid, "--producer-id", str(producer_id), "--epoch", str(epoch)]


def find_hanging(capsys: pytest.CaptureFixture[str], b: str, *scope: str) -> tuple[int, Any]:
    """``txn find-hanging SCOPE`` flagging every open transaction by age (timeout 0)."""
    return cli(capsys, b, "txn", "find-hanging", *scope, "--max-transaction-timeout", "0", *FAST)


def prepare_in_process(
    b: str, tid: str, consumer: ShareConsumer, records: list[Record], topic_out: str
) -> PreparedTxnState:
    """Outputs + the acks of ``records`` in a prepared 2PC transaction, left to the coordinator."""
    p = two_phase_producer(b, tid)
    for r in records:
        p.send(topic_out, f"{tid}:{(r.value or b'').decode()}".encode(), key=r.key)
        consumer.acknowledge(r)
    p.send_share_acks_to_transaction(consumer.acknowledgements(), consumer.group_metadata())
    state = p.prepare_transaction()
    p.close()  # a prepared transaction is left for its coordinator
    return state


def redelivered(b: str, group: str, topic_in: str, want: int, timeout_s: float) -> list[int]:
    c = share_consumer(b, group, "explicit")
    c.subscribe([topic_in])
    got = poll_n(c, want, timeout_s=timeout_s)
    for r in got:
        c.acknowledge(r)
    if got:
        c.commit_sync()
    c.close()
    return sorted(r.offset for r in got)


def killed_prepared(b: str, tid_prefix: str, n: int) -> tuple[str, str, str, str, PreparedTxnState]:
    """(topic_in, topic_out, group, tid, state): N new records consumed, their outputs and acks
    left in a 2PC transaction by a process SIGKILLed after ``prepare_transaction``."""
    topic_in, topic_out, group = prepare_share_group(b, n)
    tid = f"{tid_prefix}-{uuid.uuid4().hex[:6]}"
    state = prepared_by_killed_process(b, group, topic_in, topic_out, tid, n)
    return topic_in, topic_out, group, tid, state


def force_terminate(tid: str, audit: Path) -> list[str]:
    """``sharetxn txn force-terminate`` of ``tid``, applied, logged to ``audit``."""
    applied = ["--audit-log", str(audit), "--apply", *FAST]
    return ["txn", "force-terminate", "--transactional-id", tid, *applied]


def state_of(b: str, tid: str) -> str:
    with Admin(b) as admin:
        return admin.describe_transactions([tid])[0].state


def events(path: Path) -> list[str]:
    return [e["event"] for e in read_audit_log(path)]


# -- a 2PC transaction prepared by a killed process ------------------------------------------


def test_killed_prepared_transaction_is_listed_described_and_committed(
    kbroker: LocalBroker, audit: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    b = kbroker.bootstrap_servers
    topic_in, topic_out, group, tid, state = killed_prepared(b, "rec-commit", 8)

    code, listing = cli(capsys, b, "txn", "list", "--prefix", tid, *FAST)
    assert code == 1
    (row,) = listing["transactions"]
    assert row["state"] == "Ongoing" and row["in_doubt"] and row["two_phase_commit"]
    assert (row["producer_id"], row["producer_epoch"]) == (state.producer_id, state.epoch)
    assert row["pending_acks"] == 8

    code, desc = cli(capsys, b, "txn", "describe", "--transactional-id", tid)
    assert code == 1
    (acks,) = desc["pending_acks"]
    assert (acks["group_id"], acks["topic"], acks["partition"], acks["pending_records"]) == (
        group,
        topic_in,
        0,
        8,
    )
    kinds = {p["kind"] for p in desc["participants"]}
    assert kinds == {"data partition", "share-state partition"}
    assert all(not p["flag"] for p in desc["participants"])

    code, hanging = find_hanging(capsys, b, "--all-topics")
    assert code == 1
    assert [(h["kind"], h["transactional_id"]) for h in hanging["hanging"]] == [
        ("prepared-2pc", tid)
    ]

    commit = ["txn", "commit", *txn_ids(tid, state.producer_id, state.epoch)]
    commit += ["--audit-log", str(audit), *FAST]
    code, plan = cli(capsys, b, *commit)  # no evidence: refused
    assert code == 3 and plan["plan"][0]["action"] == "refuse"
    code, plan = cli(capsys, b, *commit, "--prepared-state", str(state))  # dry run
    assert code == 1 and plan["mode"] == "dry-run"
    (step,) = plan["plan"]
    assert step["action"] == "commit" and step["evidence"]["kind"] == "prepared-txn-state"
    assert any("8 pending share acks" in e for e in step["effects"])
    # Nothing changed: no share state written yet (Kafka's start offset -1).
    assert state_of(b, tid) == "Ongoing" and offsets(b, group, topic_in) == -1
    assert not audit.exists()

    code, done = cli(capsys, b, *commit, "--prepared-state", str(state), "--apply")
    assert code == 2 and done["results"][0]["outcome"] == "applied"
    outputs = read_all(b, topic_out, 1, "read_committed", expect_at_least=8)
    assert sorted(outputs) == sorted(f"R{i}".encode() for i in range(8))
    assert offsets(b, group, topic_in) == 8  # the acks were applied
    assert redelivered(b, group, topic_in, 1, timeout_s=3) == []  # never redelivered

    code, again = cli(capsys, b, *commit, "--prepared-state", str(state), "--apply")
    assert code == 0 and again["results"][0]["outcome"] == "noop"
    log = read_audit_log(audit)
    assert [e["event"] for e in log] == ["begin", "end", "noop"]
    end = log[1]
    assert end["outcome"] == "applied" and end["before"]["state"] == "Ongoing"
    assert end["after"]["state"] != "Ongoing" and end["operator"] and end["tool_version"]

    code, hanging = find_hanging(capsys, b, "--all-topics")
    assert (code, hanging["hanging"]) == (0, [])


def test_killed_prepared_transaction_aborted_and_records_redelivered(
    kbroker: LocalBroker, audit: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    b = kbroker.bootstrap_servers
    topic_in, topic_out, group, tid, state = killed_prepared(b, "rec-abort", 6)
    ids = txn_ids(tid, state.producer_id, state.epoch)
    code, _ = cli(capsys, b, "txn", "abort", *ids, "--audit-log", str(audit), *FAST)
    assert code == 1 and state_of(b, tid) == "Ongoing"  # dry run
    code, done = cli(capsys, b, "txn", "abort", *ids, "--audit-log", str(audit), "--apply", *FAST)
    assert code == 2 and done["results"][0]["outcome"] == "applied"
    assert redelivered(b, group, topic_in, 6, timeout_s=15) == list(range(6))
    assert read_all(b, topic_out, 1, "read_committed") == []
    # committing it now contradicts what this tool did: refused
    code, refused = cli(
        capsys, b, "txn", "commit", *ids, "--prepared-state", str(state),
        "--audit-log", str(audit), "--apply", *FAST,
    )  # fmt: skip
    assert code == 3 and refused["results"][0]["outcome"] == "refused"
    assert events(audit) == ["begin", "end", "refused"]


# -- compare-and-set --------------------------------------------------------------------------


def test_stale_plan_is_raced_and_force_terminate(
    kbroker: LocalBroker,
    tmp_path: Path,
    audit: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    b = kbroker.bootstrap_servers
    topic_in, topic_out, group, c = subscribed_setup(b, 4)
    records = poll_n(c, 4)
    assert len(records) == 4
    tid = f"rec-race-{uuid.uuid4().hex[:6]}"
    state = prepare_in_process(b, tid, c, records, topic_out)
    ids = txn_ids(tid, state.producer_id, state.epoch)
    fired: list[bool] = []
    inner: list[int] = []

    def concurrent_operator(self: Executor, step: Step) -> None:
        # Between the plan and the action another operator force-terminates the id: the
        # epoch is bumped and the transaction aborted.
        if fired:
            return  # the other operator's own run passes through
        fired.append(True)
        code = sharetxn([*force_terminate(tid, tmp_path / "other.jsonl"), "--bootstrap-server", b])
        inner.append(code)
        capsys.readouterr()

    monkeypatch.setattr(Executor, "before_action", concurrent_operator)
    code, raced = cli(
        capsys,
        b,
        "txn",
        "commit",
        *ids,
        "--prepared-state",
        str(state),
        "--audit-log",
        str(audit),
        "--apply",
        *FAST,
    )
    monkeypatch.undo()
    monkeypatch.setenv("USER", "recovery-test")  # undo() dropped the autouse fixture's too
    assert inner == [2]  # force-terminate acted
    assert code == 4
    (result,) = raced["results"]
    assert result["outcome"] == "raced" and "stale plan" in result["detail"]
    (line,) = read_audit_log(audit)
    assert (line["event"], line["stage"]) == ("raced", "compare-and-set")
    assert line["before"]["producer_epoch"] > state.epoch
    # the force-terminate aborted it: the outputs never show, the inputs come back
    assert read_all(b, topic_out, 1, "read_committed") == []
    c.close()
    assert redelivered(b, group, topic_in, 4, timeout_s=15) == list(range(4))
    other = read_audit_log(tmp_path / "other.jsonl")
    assert [e["event"] for e in other] == ["begin", "end"]
    assert other[-1]["detail"].startswith("fenced and aborted")
    # nothing open any more: force-terminate is a no-op
    code, noop = cli(capsys, b, *force_terminate(tid, audit))
    assert code == 0 and noop["results"][0]["outcome"] == "noop"
    assert events(audit) == ["raced", "noop"]


def test_force_terminate_reads_back_a_commit_that_won_the_race(
    kbroker: LocalBroker,
    audit: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    b = kbroker.bootstrap_servers
    _topic_in, topic_out, _group = prepare_share_group(b, 0)
    tid = f"rec-won-{uuid.uuid4().hex[:6]}"
    client = TransactionalProducer({"bootstrap.servers": b, "transactional.id": tid})
    client.init_transactions()
    client.begin_transaction()
    client.send(topic_out, b"won")
    client.flush()
    real_starts = producer.twophase.execute.marker_starts

    def client_commits_meanwhile(admin: Admin, before: TxnSnapshot) -> dict[TopicPartition, int]:
        # The tool's compare-and-set saw the transaction Ongoing; the client's commit lands
        # before the fence, so the fence aborts nothing.
        starts = real_starts(admin, before)
        client.commit_transaction()
        return starts

    monkeypatch.setattr(producer.twophase.execute, "marker_starts", client_commits_meanwhile)
    code, out = cli(capsys, b, *force_terminate(tid, audit))
    client.close()
    (result,) = out["results"]
    assert (code, result["outcome"]) == (4, "raced")
    assert "committed by its client before the fence" in result["detail"]
    end = read_audit_log(audit)[-1]
    assert (end["event"], end["outcome"]) == ("end", "raced")
    assert read_all(b, topic_out, 1, "read_committed") == [b"won"]


# -- sharetxn recover -------------------------------------------------------------------------


def test_recover_spark_checkpoint_both_directions_and_orphans(
    kbroker: LocalBroker, tmp_path: Path, audit: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    b = kbroker.bootstrap_servers
    topic_in, topic_out, group = prepare_share_group(b, 9)
    qid = str(uuid.uuid4())
    prefix = f"q{uuid.uuid4().hex[:4]}"
    chk = tmp_path / "checkpoint"
    (chk / "commits").mkdir(parents=True)
    (chk / "metadata").write_text(json.dumps({"id": qid}) + "\n")
    c = share_consumer(b, group)
    c.subscribe([topic_in])
    records = sorted(poll_n(c, 9), key=lambda r: r.offset)
    assert len(records) == 9
    committed_tid = transactional_id(prefix, qid, "r", 1, 0)
    aborted_tid = transactional_id(prefix, qid, "r", 2, 0)
    orphan_tid = transactional_id(prefix, qid, "w", 3, 5)
    a = prepare_in_process(b, committed_tid, c, records[0:3], topic_out)
    r = prepare_in_process(b, aborted_tid, c, records[3:6], topic_out)
    prepare_in_process(b, orphan_tid, c, records[6:9], topic_out)  # the driver died: no intent
    c.close()
    for batch, st in ((1, a), (2, r)):
        write_intent(
            chk,
            Intent(
                batch,
                (IntentTransaction(st.transactional_id, st.producer_id, st.epoch, "r"),),
                query_id=qid,
            ),
        )
    (chk / "commits" / "1").write_text('v1\n{"nextBatchWatermarkMs":0}\n')  # batch 1 decided
    recover = [
        "recover",
        "--checkpoint",
        str(chk),
        "--transactional-id-prefix",
        prefix,
        "--audit-log",
        str(audit),
        *FAST,
    ]

    code, plan = cli(capsys, b, *recover)
    assert code == 1 and plan["mode"] == "dry-run" and plan["query_id"] == qid
    assert [(s["action"], s["transactional_id"], s["batch"]) for s in plan["plan"]] == [
        ("commit", committed_tid, 1),
        ("mark-resolved", "(batch 1)", 1),
        ("abort", aborted_tid, 2),
        ("mark-resolved", "(batch 2)", 2),
        ("abort", orphan_tid, None),
    ]
    assert plan["plan"][0]["evidence"]["kind"] == "spark-commit-log"
    assert {state_of(b, t) for t in (committed_tid, aborted_tid, orphan_tid)} == {"Ongoing"}
    assert not (chk / "resolved").exists() and not audit.exists()

    code, done = cli(capsys, b, *recover, "--apply")
    assert code == 2
    assert {x["outcome"] for x in done["results"]} == {"applied"}
    outputs = read_all(b, topic_out, 1, "read_committed", expect_at_least=3)
    assert sorted(outputs) == sorted(f"{committed_tid}:r{i}".encode() for i in range(3))
    assert offsets(b, group, topic_in) == 3  # batch 1's acks applied, the others reverted
    assert redelivered(b, group, topic_in, 6, timeout_s=15) == list(range(3, 9))
    assert sorted(p.name for p in (chk / "resolved").iterdir()) == ["1", "2"]
    assert json.loads((chk / "resolved" / "1").read_text())["outcome"] == "commit"
    assert events(audit) == ["begin", "end", "resolved", "begin", "end", "resolved", "begin", "end"]

    code, again = cli(capsys, b, *recover, "--apply")
    assert (code, again["results"]) == (0, [])
    assert events(audit)[-1] == "noop"


# -- find-hanging -----------------------------------------------------------------------------


def test_find_hanging_reports_a_hung_transaction_and_nothing_for_healthy_traffic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d"
    with LocalBroker(data_dir=data, config=BROKER_CONFIG) as broker:
        b = broker.bootstrap_servers
        _, topic_out, group, c = subscribed_setup(b, 6)
        records = sorted(poll_n(c, 6), key=lambda r: r.offset)
        assert len(records) == 6
        healthy = TransactionalProducer({"bootstrap.servers": b, "transactional.id": "healthy"})
        healthy.init_transactions()
        healthy.begin_transaction()
        healthy.send(topic_out, b"ok")
        c.acknowledge(records[0])
        healthy.send_share_acks_to_transaction(c.acknowledgements(), c.group_metadata())
        healthy.commit_transaction()
        healthy.begin_transaction()  # an open, live transaction is healthy too
        healthy.send(topic_out, b"in flight")
        c.acknowledge(records[1])
        healthy.send_share_acks_to_transaction(c.acknowledgements(), c.group_metadata())
        healthy.flush()
        code, found = find_hanging(capsys, b, "--all-topics")
        assert (code, found["hanging"]) == (0, [])
        healthy.commit_transaction()
        healthy.close()
        state = prepare_in_process(b, "lost", c, records[2:6], topic_out)
        c.close()
        # The coordinator loses its log (a disk replaced, an unclean recovery): the data
        # partition keeps its open transaction and the share coordinator its pending acks,
        # but no coordinator knows the producer any more.
        broker.stop()
        shutil.rmtree(data / "__transaction_state-0")
        broker.start()
        code, found = find_hanging(capsys, b, "--all-topics")
        assert code == 1
        got = {(h["kind"], h["producer_id"], h["coordinator_state"]) for h in found["hanging"]}
        assert got == {
            ("open-transaction", state.producer_id, "Unknown"),
            ("pending-share-acks", state.producer_id, "Unknown"),
        }
        acks = next(h for h in found["hanging"] if h["kind"] == "pending-share-acks")
        assert acks["pending_records"] == 4 and group in acks["where"]
        code, found = find_hanging(capsys, b, "--topic", topic_out)
        assert code == 1 and {h["kind"] for h in found["hanging"]} == {"open-transaction"}
        code, producers = cli(
            capsys, b, "txn", "describe-producers", "--topic", topic_out, "--partition", "0"
        )
        assert code == 1
        assert any(p["flag"].startswith("HANGING") for p in producers["producers"])
        code, error = cli(
            capsys, b, "txn", "describe-producers", "--topic", "nope", "--partition", "0"
        )
        assert code == 66 and "unknown topic" in error["error"]


# -- a durable commit decision ----------------------------------------------------------------


def test_prepare_commit_is_evidence_and_is_never_aborted(
    tmp_path: Path, audit: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A broker whose markers are lost keeps a transaction in PrepareCommit."""
    with markerless_broker(tmp_path / "d", _free_port()) as b:
        _, topic_out, _, c = subscribed_setup(b, 3)
        p = TransactionalProducer(
            {"bootstrap.servers": b, "transactional.id": "decided", "request.timeout.ms": 5000}
        )
        p.init_transactions()
        p.begin_transaction()
        for r in poll_n(c, 3):
            p.send(topic_out, b"x")
            c.acknowledge(r)
        p.send_share_acks_to_transaction(c.acknowledgements(), c.group_metadata())
        p.commit_transaction(timeout_s=10)  # PREPARE_COMMIT is durable, the markers are lost
        pid, epoch = p.producer_id_and_epoch
        assert state_of(b, "decided") == "PrepareCommit"
        ids = txn_ids("decided", pid, epoch)
        opts = ["--audit-log", str(audit), "--wait-timeout", "1", *FAST]
        code, refused = cli(capsys, b, "txn", "abort", *ids, *opts, "--apply")
        assert code == 3 and "durable commit decision" in refused["results"][0]["detail"]
        code, refused = cli(
            capsys, b, "txn", "force-terminate", "--transactional-id", "decided", *opts, "--apply"
        )
        assert code == 3
        # committing needs no --prepared-state: PrepareCommit is the evidence; the tool waits
        code, plan = cli(capsys, b, "txn", "commit", *ids, *opts)
        assert code == 1 and plan["plan"][0]["action"] == "wait"
        assert plan["plan"][0]["evidence"]["kind"] == "prepare-commit"
        code, waited = cli(capsys, b, "txn", "commit", *ids, *opts, "--apply")
        assert code == 1 and waited["results"][0]["outcome"] == "pending"  # markers lost
        assert state_of(b, "decided") == "PrepareCommit"
        assert events(audit) == ["refused", "refused", "begin", "end"]
        c.close()
        p.close(timeout_s=1)


# -- ageing warnings (FLINK-7784, KIP-994) -----------------------------------------------------


def prepared_2pc(b: str, tid: str, topic_out: str) -> PreparedTxnState:
    """A prepared 2PC transaction (one output record, no share acks) left to the coordinator."""
    p = two_phase_producer(b, tid)
    p.send(topic_out, b"prepared")
    state = p.prepare_transaction()
    p.close()
    return state


def prepared_2pc_in_new_topic(b: str, tid_prefix: str) -> tuple[str, str, PreparedTxnState]:
    """(transactional id, output topic, state) of a new :func:`prepared_2pc` transaction."""
    _, topic_out, _ = prepare_share_group(b, 0)
    tid = f"{tid_prefix}-{uuid.uuid4().hex[:6]}"
    return tid, topic_out, prepared_2pc(b, tid, topic_out)


def test_ageing_warnings_at_80_percent_and_for_old_prepared_2pc(
    kbroker: LocalBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    b = kbroker.bootstrap_servers
    _, topic_out, _ = prepare_share_group(b, 0)
    tag = uuid.uuid4().hex[:6]
    timed, prepared = f"age-timed-{tag}", f"age-2pc-{tag}"
    p = TransactionalProducer(
        {"bootstrap.servers": b, "transactional.id": timed, "transaction.timeout.ms": 12000}
    )
    p.init_transactions()
    p.begin_transaction()
    p.send(topic_out, b"slow")
    p.flush()
    started = time.monotonic()
    prepared_2pc(b, prepared, topic_out)

    def row(tid: str, *extra: str) -> dict[str, Any]:
        _, listing = cli(capsys, b, "txn", "list", "--prefix", tid, *extra, *FAST)
        (r,) = listing["transactions"]
        return dict(r)

    fresh = row(timed)
    assert not fresh["ageing"] and not fresh["two_phase_commit"]
    # a prepared 2PC transaction never times out: flagged after --prepared-warn-after
    assert not row(prepared)["ageing"]  # default 15m
    old = row(prepared, "--prepared-warn-after", "0")
    assert old["ageing"] and "prepared (2PC)" in old["warning"]
    code, desc = cli(
        capsys, b, "txn", "describe", "--transactional-id", prepared, "--prepared-warn-after", "0"
    )
    assert code == 1 and desc["transaction"]["ageing"]
    assert "ageing" in desc["transaction"]["warning"]
    # 80 % of the 12 s timeout is 9.6 s; the coordinator aborts it at 12 s
    time.sleep(max(0.0, 10.0 - (time.monotonic() - started)))
    aged = row(timed)
    assert aged["state"] == "Ongoing" and aged["ageing"]
    assert "of its transaction.timeout.ms" in aged["warning"]
    _, desc = cli(capsys, b, "txn", "describe", "--transactional-id", timed)
    assert desc["transaction"]["ageing"]
    assert sharetxn(["txn", "list", "--prefix", timed, "--bootstrap-server", b, *FAST]) == 1
    assert "ageing: at" in capsys.readouterr().out  # the table's note column (a yellow row)
    # On a slow machine the coordinator may have timed it out meanwhile: fenced, not open.
    with contextlib.suppress(ProducerFencedError):
        p.abort_transaction()
    p.close()


# -- find-hanging: scope guard, batching, rate limit -------------------------------------------


def test_find_hanging_needs_a_scope_and_batches_describe_producers(
    kbroker: LocalBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    b = kbroker.bootstrap_servers
    code, error = cli(capsys, b, "txn", "find-hanging", *FAST)
    assert code == 64 and "--topic" in error["error"] and "--all-topics" in error["error"]
    with pytest.raises(SystemExit) as exc:
        sharetxn(["txn", "find-hanging", "--topic", "t", "--all-topics", "--bootstrap-server", b])
    assert exc.value.code == 64
    capsys.readouterr()

    topic = f"wide-{uuid.uuid4().hex[:6]}"
    with Admin(b) as admin:
        admin.create_topics([TopicSpec(topic, 5)])
        scanner = Scanner(admin)
        tps = [TopicPartition(topic, i) for i in range(5)]
        clock = [0.0]
        slept: list[float] = []

        def sleep(seconds: float) -> None:
            slept.append(seconds)
            clock[0] += seconds

        limiter = RateLimiter(10, clock=lambda: clock[0], sleep=sleep)
        got = scanner.producers_batched(tps, limiter, batch_size=2)
        assert sorted(got) == tps and limiter.acquired == 3  # 2 + 2 + 1 partitions
        assert slept == pytest.approx([0.1, 0.1])  # 10 requests per second, evenly spaced
        assert all(got[tp] == admin.describe_producers(tp) for tp in tps)
    code, found = cli(
        capsys, b, "txn", "find-hanging", "--topic", topic, "--max-requests-per-second", "5", *FAST
    )
    assert (code, found["hanging"]) == (0, [])


# -- heuristic outcomes and forget ------------------------------------------------------------


def test_unconfirmed_commit_is_heuristic_listed_and_forgotten(
    kbroker: LocalBroker,
    audit: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    b = kbroker.bootstrap_servers
    tid, topic_out, state = prepared_2pc_in_new_topic(b, "heur")
    real_commit = TransactionalProducer.commit_transaction

    def commit_then_lose_the_response(
        self: TransactionalProducer, timeout_s: float | None = None
    ) -> None:
        real_commit(self, timeout_s)  # EndTxn reached the coordinator ...
        raise RequestTimedOutError("response lost")  # ... but the tool never learns it

    monkeypatch.setattr(TransactionalProducer, "commit_transaction", commit_then_lose_the_response)
    code, done = cli(
        capsys, b, "txn", "commit", *txn_ids(tid, state.producer_id, state.epoch),
        "--prepared-state", str(state), "--audit-log", str(audit), "--apply", *FAST,
    )  # fmt: skip
    monkeypatch.setattr(TransactionalProducer, "commit_transaction", real_commit)
    (result,) = done["results"]
    assert code == 69 and result["outcome"] == "heuristic" and "forget" in result["detail"]
    assert events(audit) == ["begin", "heuristic"]
    assert read_all(b, topic_out, 1, "read_committed", expect_at_least=1) == [b"prepared"]

    listing_args = ["txn", "list", "--prefix", tid, "--audit-log", str(audit), *FAST]
    code, listing = cli(capsys, b, *listing_args)
    assert code == 1 and [h["transactional_id"] for h in listing["heuristic"]] == [tid]
    assert listing["heuristic"][0]["step"]["action"] == "commit"

    forget = ["txn", "forget", "--transactional-id", tid, "--audit-log", str(audit)]
    code, refused = cli(capsys, b, *forget)
    assert code == 3 and "--i-understand" in refused["error"]
    assert events(audit) == ["begin", "heuristic"]
    code, forgot = cli(capsys, b, *forget, "--i-understand", "--operator", "alice")
    assert code == 2 and forgot["forgotten"] == 1
    assert read_audit_log(audit)[-1]["operator"] == "alice"
    code, listing = cli(capsys, b, *listing_args)
    assert (code, listing["heuristic"]) == (0, [])
    code, again = cli(capsys, b, *forget, "--i-understand")
    assert code == 0 and again["forgotten"] == 0


# -- privilege check: an operator name for acting ----------------------------------------------


def test_apply_needs_an_operator(
    kbroker: LocalBroker,
    tmp_path: Path,
    audit: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    b = kbroker.bootstrap_servers
    tid, _, state = prepared_2pc_in_new_topic(b, "op")
    abort = ["txn", "abort", *txn_ids(tid, state.producer_id, state.epoch)]
    abort += ["--audit-log", str(audit), *FAST]
    monkeypatch.delenv("USER")
    code, _ = cli(capsys, b, *abort)  # a dry run needs no operator
    assert code == 1
    code, refused = cli(capsys, b, *abort, "--apply")
    assert code == 3 and "--operator" in refused["error"]
    assert state_of(b, tid) == "Ongoing" and not audit.exists()
    code, error = cli(capsys, b, "recover", "--checkpoint", str(tmp_path), "--apply")
    assert code == 3 and "--operator" in error["error"]
    code, done = cli(capsys, b, *abort, "--apply", "--operator", "alice")
    assert code == 2 and done["results"][0]["outcome"] == "applied"
    assert {e["operator"] for e in read_audit_log(audit)} == {"alice"}
