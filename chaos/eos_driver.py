"""The driver of ``sharetxn chaos real --workload recovery``: Spark's part, without Spark.

    python -m chaos.eos_driver '<json settings>'

What a Spark query with the ``ExactlyOnce`` sink does, in one process, through the same
modules: the checkpoint is a Spark checkpoint (``metadata`` with the query id,
``offsets/N`` the planned batch's end offsets, ``commits/N`` the decision) read through
``producer.spark.checkpoint.Checkpoint``; the sink's files (``intents/N.json``,
``committing/N``, ``resolved/N``) are written by ``producer.twophase.spark_checkpoint`` and
``producer.spark.resolve``.  One run:

1. **Start-up recovery**: ``producer.spark.resolve.recover`` -- the decision rule the
   ``kafka-share`` source runs at query start and ``sharetxn recover --apply`` runs: decided
   intents are committed, undecided ones and orphans (prepared, no intent) aborted.
2. **Plan**: like Spark's MicroBatchExecution, a batch whose ``offsets/N`` exists without
   ``commits/N`` is re-run with the same offsets; otherwise batch N+1 is planned from the
   input's end offsets (at most ``max_per_partition`` records of each input partition) and
   ``offsets/N+1`` is written before the batch runs.
3. **Batch** (``ExactlyOnce._run_batch``'s steps): commit what is decided; read the input
   range with a stock consumer; write the outputs in ``writers`` prepared transactions
   (``TransactionalProducer``: ``init_transactions`` fences an earlier attempt of the id,
   ``send_many``, ``prepare_transaction``; ids ``transactional_id(prefix, query, "w", N,
   w)``); check every prepared transaction is still open under its ids
   (DescribeTransactions); ``write_intent``; delete ``resolved/N`` (a re-run after an abort).
4. **Decide**: ``commits/N`` (Spark writes it when foreachBatch returned).
5. **Commit phase**: ``producer.spark.resolve.commit_decided`` (write-ahead
   ``committing/N``, resume each transaction by its stored ids, commit, ``resolved/N``).

Kill points: when the file ``trap`` in the run directory names a point (``prepared``: one
writer prepared, the others not; ``intent``: the intent written, no decision;
``decided``: ``commits/N`` written, nothing committed; ``committing``: the commit phase
wrote ``committing/N`` ahead and is about to commit), the driver writes ``trapped`` and
stops itself (SIGSTOP) there, and the harness kills it -9.  Files: ``stop`` (exit 0 before
the next batch), ``failure.json`` (the typed failure, exit code 3), ``recovery.jsonl``
(what each start-up recovery did).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as Ctp

from producer.admin import Admin
from producer.produce.prepared_txn import StoredTxnStatus, classify
from producer.produce.transactional_producer import TransactionalProducer
from producer.produce.txn_manager import PreparedTransactionAbortedError
from producer.spark.checkpoint import Checkpoint
from producer.spark.errors import ResolveError
from producer.spark.resolve import Connection, commit_decided, fenced_transaction, recover
from producer.spark.write_task import WriteTask
from producer.twophase.spark_checkpoint import (
    COMMITS_DIR,
    METADATA_FILE,
    RESOLVED_DIR,
    Intent,
    IntentTransaction,
    write_intent,
)
from txn.errors import ErrorCode
from txn.ids import TopicPartition

log = logging.getLogger("sharetxn.chaos.eos_driver")

EXIT_TYPED_FAILURE = 3  # a decided batch cannot be committed as decided (failure.json)
POINTS = ("prepared", "intent", "decided", "committing")
PREPARE_MODES = ("auto", "enable2pc", "timeout", "mixed")


@dataclasses.dataclass(frozen=True, slots=True)
class _HookedConnection(Connection):
    """The commit phase's connection, with a kill point before each transaction's commit.

    ``commit_decided`` asks for the producer config right before it resumes and commits a
    transaction, after writing ``committing/N`` ahead: that is the ``committing`` point.
    """

    hook: Callable[[], None] = dataclasses.field(default=lambda: None, compare=False)

    def producer_config(self) -> dict[str, Any]:
        self.hook()
        return Connection.producer_config(self)


class BatchFencedError(RuntimeError):
    """A prepared transaction of the batch is not open under its ids any more."""


@dataclass(frozen=True)
class DriverSettings:
    """What the harness tells the driver (JSON on the command line)."""

    bootstrap: str
    checkpoint: str
    run_dir: str
    input_topic: str
    output_topic: str
    prefix: str = "chaos-eos"
    writers: int = 3
    max_per_partition: int = 30
    prepare_mode: str = "auto"  # sharetxn.prepare.mode; "mixed": even writers 2PC, odd timeout
    transaction_timeout_ms: int = 60000
    max_block_ms: int = 60000
    incarnation: int = 1

    def to_argv(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    def path(self, name: str) -> Path:
        return Path(self.run_dir) / name

    def writer_config(self, writer: int) -> dict[str, Any]:
        mode = self.prepare_mode
        if mode == "mixed":
            mode = "enable2pc" if writer % 2 == 0 else "timeout"
        return {
            "sharetxn.prepare.mode": mode,
            "transaction.timeout.ms": self.transaction_timeout_ms,
            "max.block.ms": self.max_block_ms,
        }


def offsets_text(ends: dict[int, int]) -> bytes:
    """``offsets/N`` as Spark writes it: a version line, batch metadata, one source's offsets."""
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": int(time.time() * 1000), "conf": {}}
    body = {str(p): o for p, o in sorted(ends.items())}
    return f"v1\n{json.dumps(meta)}\n{json.dumps(body)}".encode()


def parse_offsets(data: bytes) -> dict[int, int]:
    lines = data.decode().splitlines()
    return {int(p): int(o) for p, o in json.loads(lines[2]).items()}


class Driver:
    def __init__(self, s: DriverSettings) -> None:
        self.s = s
        self.ckpt = Checkpoint.local(s.checkpoint)
        self.conn = Connection(s.bootstrap, {})
        self.committing = _HookedConnection(s.bootstrap, {}, self._committing)
        self.batch = -1
        self.admin = Admin({"bootstrap.servers": s.bootstrap, "client.id": "chaos-eos-driver"})
        self.by = f"chaos-eos-driver.{s.incarnation}"

    # -- the checkpoint ---------------------------------------------------------------------

    def query_id(self) -> str:
        path = Path(self.ckpt.path(METADATA_FILE))
        if not path.exists():
            body = json.dumps({"id": str(uuid.uuid4())}).encode()
            self.ckpt.fs.write_atomic(str(path), body)
        return self.ckpt.query_id()

    def ends_of(self, batch: int) -> dict[int, int]:
        if batch < 0:
            return {}
        data = self.ckpt.fs.read(self.ckpt.path("offsets", str(batch)))
        if data is None:
            return {}
        return parse_offsets(data)

    def trap(self, point: str, batch: int) -> None:
        """Stop here (SIGSTOP) if the harness set a trap for this point; it kills us -9."""
        try:
            wanted = self.s.path("trap").read_text().strip()
        except OSError:
            return
        if wanted != point:
            return
        partial = self.s.path("trapped.tmp")
        partial.write_text(f"{point} {batch} {os.getpid()}\n")
        partial.rename(self.s.path("trapped"))  # the harness never reads half of it
        log.info("trapped at %s of batch %d", point, batch)
        os.kill(os.getpid(), signal.SIGSTOP)

    def _committing(self) -> None:
        self.trap("committing", self.batch)

    # -- the run ----------------------------------------------------------------------------

    def run(self) -> int:
        query_id = self.query_id()
        report = recover(self.ckpt, self.conn, {self.s.prefix}, by=f"{self.by} recovery")
        log.info(
            "start-up recovery: %d committed, %d aborted, %d already done (batches %s)",
            report.committed,
            report.aborted,
            report.noop,
            list(report.batches),
        )
        line = {"incarnation": self.s.incarnation, **dataclasses.asdict(report)}
        with self.s.path("recovery.jsonl").open("a") as out:
            out.write(json.dumps(line) + "\n")
        partitions = self._input_partitions()
        while not self.s.path("stop").exists():
            last = self.ckpt.last_planned_batch()
            if last >= 0 and not self.ckpt.is_committed(last):
                batch, ends = last, self.ends_of(last)  # re-run with the planned offsets
                log.info("re-running batch %d", batch)
            else:
                batch = last + 1
                planned = self._plan(partitions, self.ends_of(last))
                if planned is None:
                    time.sleep(0.2)
                    continue
                ends = planned
                self.ckpt.fs.write_atomic(self.ckpt.path("offsets", str(batch)), offsets_text(ends))
            self.batch = batch
            self._run_batch(query_id, batch, self.ends_of(batch - 1), ends)
            self.ckpt.fs.write_atomic(self.ckpt.path(COMMITS_DIR, str(batch)), b"v1\n{}")
            self.trap("decided", batch)
            self._commit_phase(self.committing)
        self._commit_phase()
        return 0

    def _input_partitions(self) -> list[int]:
        return sorted(self.admin.list_topics()[self.s.input_topic])

    def _plan(self, partitions: list[int], starts: dict[int, int]) -> dict[int, int] | None:
        """The next batch's end offsets, or None when the input has nothing new."""
        ends: dict[int, int] = {}
        for p in partitions:
            latest = self.admin.list_offsets(TopicPartition(self.s.input_topic, p), -1)
            start = starts.get(p, 0)
            ends[p] = min(latest, start + self.s.max_per_partition)
        if all(ends[p] <= starts.get(p, 0) for p in partitions):
            return None
        return ends

    def _commit_phase(self, conn: Connection | None = None) -> None:
        """``commit_decided`` until it went through: a broker outage is waited out."""
        while True:
            try:
                commit_decided(self.ckpt, conn or self.conn, by=self.by)
                return
            except (ResolveError, PreparedTransactionAbortedError):
                raise
            except Exception as exc:  # retriable trouble (a broker restarting): again
                log.warning("commit phase failed, retrying: %s", exc)
                time.sleep(0.5)

    def _run_batch(
        self, query_id: str, batch: int, starts: dict[int, int], ends: dict[int, int]
    ) -> None:
        self._commit_phase()  # as the sink does first
        view = self.ckpt.view(unresolved_only=True)
        open_ = [b for b in view.intents if b < batch - 1 and b not in view.resolved]
        if open_:  # batch N reuses the ids of N-2 (the source's check)
            msg = f"batch(es) {open_} are not resolved before batch {batch}"
            raise ResolveError(msg)
        records = self._read(starts, ends)
        buckets: list[list[tuple[bytes, bytes]]] = [[] for _ in range(self.s.writers)]
        tag = f"d{self.s.incarnation}.b{batch}"
        for p, offset, value in records:
            out = f"{value}@{p}:{offset}|{tag}".encode()
            buckets[(p + offset) % self.s.writers].append((value.encode(), out))
        prepared: list[IntentTransaction] = []
        try:
            for w, bucket in enumerate(buckets):
                state = self._write(query_id, batch, w, bucket)
                if state is not None:
                    prepared.append(state)
                    if len(prepared) == 1:
                        self.trap("prepared", batch)
            if prepared:
                self._verify(prepared, batch)
                write_intent(
                    self.ckpt.location,
                    Intent(
                        batch=batch,
                        transactions=tuple(prepared),
                        query_id=query_id,
                        transactional_id_prefix=self.s.prefix,
                        written_at_ms=int(time.time() * 1000),
                    ),
                    self.ckpt.fs,
                )
                # a re-run after an abort: only now may the new intent stop looking resolved
                self.ckpt.fs.delete(self.ckpt.path(RESOLVED_DIR, str(batch)))
        except BaseException:
            self._abort_quietly(prepared)
            raise
        log.info(
            "batch %d prepared: %d records in %d transactions", batch, len(records), len(prepared)
        )
        self.trap("intent", batch)

    def _read(self, starts: dict[int, int], ends: dict[int, int]) -> list[tuple[int, int, str]]:
        """The input records of [starts, ends) per partition, with a stock consumer."""
        wanted = {p: (starts.get(p, 0), end) for p, end in ends.items() if end > starts.get(p, 0)}
        if not wanted:
            return []
        consumer = Consumer(
            {
                "bootstrap.servers": self.s.bootstrap,
                "group.id": "chaos-eos-driver",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "fetch.wait.max.ms": 50,
            }
        )
        out: list[tuple[int, int, str]] = []
        try:
            consumer.assign([Ctp(self.s.input_topic, p, s) for p, (s, _e) in wanted.items()])
            pos = {p: s for p, (s, _e) in wanted.items()}
            deadline = time.monotonic() + self.s.max_block_ms / 1000
            while any(pos[p] < wanted[p][1] for p in wanted):
                if time.monotonic() > deadline:
                    text = f"could not read the input range {wanted} in time"
                    raise TimeoutError(text)
                for m in consumer.consume(500, 0.2):
                    if m.error() is not None:
                        continue
                    p, offset = int(m.partition() or 0), int(m.offset() or 0)
                    if p in wanted and pos[p] <= offset < wanted[p][1]:
                        out.append((p, offset, (m.value() or b"").decode()))
                        pos[p] = offset + 1
        finally:
            consumer.close()
        return out

    def _write(
        self, query_id: str, batch: int, writer: int, records: list[tuple[bytes, bytes]]
    ) -> IntentTransaction | None:
        """One write task, the sink's own (``WriteTask.prepare``): a prepared transaction."""
        task = WriteTask(
            self.conn,
            self.s.writer_config(writer),
            self.s.prefix,
            query_id,
            batch,
            0,
            self.s.output_topic,
        )
        receipt = task.prepare(writer, iter([records]))
        if receipt is None:
            return None
        tid, pid, epoch, _sent = receipt
        return IntentTransaction(tid, pid, epoch, "w")

    def _verify(self, transactions: list[IntentTransaction], batch: int) -> None:
        """Every prepared transaction must still be open with its recorded ids (the sink's)."""
        fenced = fenced_transaction(self.admin, transactions)
        if fenced is not None:
            t, now = fenced
            msg = f"batch {batch}: prepared transaction {t.transactional_id} is now {now}"
            raise BatchFencedError(msg)

    def _abort_quietly(self, transactions: list[IntentTransaction]) -> None:
        for t in transactions:
            try:
                producer = TransactionalProducer.resume(
                    t.transactional_id,
                    t.producer_id,
                    t.epoch,
                    self.conn.producer_config(),
                    timeout_s=10,
                )
            except Exception as exc:
                log.info("not aborting %s: %s", t.transactional_id, exc)
                continue
            try:
                producer.abort_transaction(10)
            except Exception as exc:
                log.warning("aborting %s failed (recovery will): %s", t.transactional_id, exc)
            finally:
                producer.close()

    # -- the typed failure -------------------------------------------------------------------

    def diagnose(self) -> list[dict[str, Any]]:
        """The decided, unresolved transactions the coordinator shows aborted."""
        view = self.ckpt.view(unresolved_only=True)
        lost: list[dict[str, Any]] = []
        for intent in view.unresolved():
            if intent.batch not in view.commits:
                continue
            tids = [t.transactional_id for t in intent.transactions]
            descs = self.admin.describe_transactions(tids)
            deadline = time.monotonic() + 15
            while any(d.state.startswith("Prepare") for d in descs):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.2)  # the coordinator is completing one: classify the outcome
                descs = self.admin.describe_transactions(tids)
            for t, d in zip(intent.transactions, descs, strict=True):
                desc = None if d.error is ErrorCode.TRANSACTIONAL_ID_NOT_FOUND else d
                status = classify(desc, t.producer_id, t.epoch).status
                if status is StoredTxnStatus.ABORTED:
                    lost.append(
                        {
                            "batch": intent.batch,
                            "transactional_id": t.transactional_id,
                            "producer_id": t.producer_id,
                            "epoch": t.epoch,
                            "state": d.state,
                            "found_epoch": d.producer_epoch,
                            "timeout_ms": d.transaction_timeout_ms,
                        }
                    )
        return lost


def main(argv: list[str]) -> int:
    settings = DriverSettings(**json.loads(argv[0]))
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stdout,
        format=f"%(asctime)s d{settings.incarnation} %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("sharetxn.producer").setLevel(logging.WARNING)
    driver = Driver(settings)
    try:
        return driver.run()
    except (ResolveError, PreparedTransactionAbortedError) as exc:
        # Typed when the coordinator shows a decided transaction aborted (its timeout beat
        # the commit): the batch's outputs are gone and must not pass as committed.
        try:
            lost = driver.diagnose()
        except Exception as diag:
            log.warning("could not read the coordinator's view: %s", diag)
            lost = []
        if not lost:
            log.warning("recovery did not finish (retried by a restart): %s", exc)
            return 1
        body = {"kind": "decided-transaction-aborted", "error": str(exc), "transactions": lost}
        settings.path("failure.json").write_text(json.dumps(body, indent=2) + "\n")
        log.error("a decided batch's transaction was aborted by the coordinator: %s", exc)
        return EXIT_TYPED_FAILURE
    finally:
        driver.admin.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
