"""One client process of ``sharetxn chaos real``: consume-transform-produce with the library.

    python -m chaos.real_worker '<json settings>'

The harness (``chaos.real``) starts one such process per client slot and kills (kill -9),
pauses (SIGSTOP) and replaces them.  Each process is an ordinary exactly-once application
built on our client library: a ``ShareConsumer`` in ``transactional`` acknowledgement mode and
two ``TransactionalProducer``s -- ``c<slot>`` for ordinary transactions and ``c<slot>-2pc``
(``transaction.two.phase.commit.enable``) for two-phase ones.  Per poll one transaction: the
outputs ``<input>@<partition>:<offset>|<tag>`` (the format ``chaos.checker`` parses), the
acknowledgements (ACCEPT; RELEASE for a few) through ``send_share_acks_to_transaction``, then
commit -- or, at random, abort; or prepare, write the decision to an intent file (the Spark
sink's pattern), and complete.  A new incarnation first recovers the 2PC id: a prepared
transaction that matches the intent is completed as decided, anything else open on the id is
aborted by fencing it.

Every operation goes to this process's own history file in the simulation's JSON-lines format
(``chaos.history``: invoke / ok / fail / info, ``t`` in ms of the harness's monotonic clock),
one line per write, so a kill -9 loses at most the operation in progress (the harness closes
it as ``info``).  The completion rules are the checker's: ``ok`` happened, ``fail`` certainly
did not (a transaction is ``fail`` only if no commit was ever sent for it), ``info`` unknown.

Files in the run directory: ``drain`` (no deliberate aborts, no pacing), ``stop`` (finish
the current transaction and exit), ``c<slot>.current`` (the slot's current incarnation: a
fenced process that is no longer current is a zombie and exits), ``c<slot>.intent`` (the 2PC
decision).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from chaos.history import dumps
from producer.consumer.share_consumer import ShareConsumer
from producer.produce.accumulator import RecordMetadata
from producer.produce.transactional_producer import TransactionalProducer, TxnState
from producer.protocol.types import AcknowledgeType, PreparedTxnState, Record, ShareAcknowledgements
from txn.errors import (
    AbortableError,
    FatalError,
    IllegalStateError,
    KafkaProtocolError,
    ProducerFencedError,
    SharetxnError,
)

log = logging.getLogger("sharetxn.chaos.real")

EXIT_ZOMBIE = 3  # fenced and replaced: a zombie that stops itself


@dataclass(frozen=True)
class WorkerSettings:
    """What the harness tells one client process (JSON on the command line)."""

    bootstrap: str
    slot: int
    incarnation: int
    group: str
    input_topic: str
    output_topic: str
    output_partitions: int
    run_dir: str
    t0_ns: int
    seed: int
    abort_p: float = 0.08
    twopc_p: float = 0.15
    decided_linger_p: float = 0.3
    release_p: float = 0.02
    pace_s: float = 0.0  # simulated work per record while faults run
    txn_timeout_ms: int = 5000
    request_timeout_ms: int = 3000
    max_block_ms: int = 12000
    max_poll_records: int = 12

    @property
    def process(self) -> str:
        return f"c{self.slot}.{self.incarnation}"

    @property
    def tid(self) -> str:
        return f"c{self.slot}"

    @property
    def tid_2pc(self) -> str:
        return f"c{self.slot}-2pc"

    def path(self, name: str) -> Path:
        return Path(self.run_dir) / name

    def to_argv(self) -> str:
        return json.dumps(self.__dict__, sort_keys=True)


class Recorder:
    """Appends history lines (``chaos.history`` keys) to one file; every line is one write."""

    def __init__(self, path: Path, t0_ns: int, process: str) -> None:
        self._file: IO[str] = path.open("a", buffering=1, encoding="utf-8")
        self._t0_ns = t0_ns
        self.process = process
        self._index = 0
        self._next_op = 0

    def now(self) -> int:
        return (time.monotonic_ns() - self._t0_ns) // 1_000_000

    def _write(self, type_: str, f: str, value: Any, op: int, t: int | None = None) -> None:
        line = {
            "i": self._index,
            "t": self.now() if t is None else t,
            "p": self.process,
            "type": type_,
            "f": f,
            "v": value,
            "op": op,
        }
        self._index += 1
        self._file.write(dumps(line) + "\n")

    def invoke(self, f: str, value: Any, t: int | None = None) -> int:
        op = self._next_op
        self._next_op += 1
        self._write("invoke", f, value, op, t)
        return op

    def complete(self, op: int, type_: str, f: str, value: Any) -> None:
        self._write(type_, f, value, op)

    def event(self, f: str, value: Any) -> None:
        self._write("event", f, value, -1)

    def close(self) -> None:
        self._file.close()


class Zombie(Exception):
    """This incarnation was fenced by a newer one of its slot."""


class _Txn:
    """One consume-transform-produce transaction in flight."""

    def __init__(self, tag: str, tid: str, pid: int, epoch: int, twopc: bool) -> None:
        self.tag = tag
        self.tid = tid
        self.pid = pid
        self.epoch = epoch
        self.twopc = twopc
        self.commit_sent = False  # a commit, or a prepare with its intent, went out
        self.settled = False  # the ``txn`` operation is completed in the history

    @property
    def ident(self) -> dict[str, Any]:
        return {"tag": self.tag, "tid": self.tid, "pid": self.pid, "epoch": self.epoch}


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


class Worker:
    """The client loop of one incarnation of one slot."""

    def __init__(self, settings: WorkerSettings) -> None:
        self.s = settings
        self.rec = Recorder(
            settings.path(f"{settings.process}.jsonl"), settings.t0_ns, settings.process
        )
        self.rng = random.Random(settings.seed * 1000 + settings.slot * 100 + settings.incarnation)
        self.consumer: ShareConsumer | None = None
        self.producer: TransactionalProducer | None = None
        self.producer_2pc: TransactionalProducer | None = None
        self.txn_no = 0
        self._rest = 0.0  # pacing still owed after the current transaction

    # -- the run directory ------------------------------------------------------------------------

    def stopping(self) -> bool:
        return self.s.path("stop").exists()

    def draining(self) -> bool:
        return self.s.path("drain").exists()

    def is_current(self) -> bool:
        try:
            return int(self.s.path(f"c{self.s.slot}.current").read_text()) == self.s.incarnation
        except (OSError, ValueError):
            return True

    def _read_intent(self) -> dict[str, Any] | None:
        try:
            value = json.loads(self.s.path(f"c{self.s.slot}.intent").read_text())
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def _write_intent(self, intent: dict[str, Any]) -> None:
        path = self.s.path(f"c{self.s.slot}.intent")
        tmp = path.with_suffix(f".tmp{self.s.incarnation}")
        tmp.write_text(json.dumps(intent), encoding="utf-8")
        os.replace(tmp, path)

    def _drop_intent(self, tag: str) -> None:
        intent = self._read_intent()
        if intent is not None and intent.get("tag") == tag:
            with contextlib.suppress(OSError):
                self.s.path(f"c{self.s.slot}.intent").unlink()

    # -- clients ----------------------------------------------------------------------------------

    def _producer_config(self, tid: str, twopc: bool) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.s.bootstrap,
            "transactional.id": tid,
            "transaction.timeout.ms": self.s.txn_timeout_ms,
            "transaction.two.phase.commit.enable": twopc,
            "request.timeout.ms": self.s.request_timeout_ms,
            "max.block.ms": self.s.max_block_ms,
            "delivery.timeout.ms": self.s.max_block_ms,
            "client.id": f"{self.s.process}-{tid}",
            "linger.ms": 2,
        }

    def _new_producer(self, tid: str, twopc: bool) -> TransactionalProducer:
        return TransactionalProducer(self._producer_config(tid, twopc))

    def _init(self, tid: str, twopc: bool, keep_prepared: bool = False) -> TransactionalProducer:
        if not self.is_current():
            raise Zombie  # a replaced incarnation must not fence its successor
        producer = self._new_producer(tid, twopc)
        op = self.rec.invoke("init", {"tid": tid, "2pc": twopc, "keep_prepared": keep_prepared})
        try:
            producer.init_transactions(keep_prepared_txn=keep_prepared)
        except BaseException as exc:
            self.rec.complete(op, "info", "init", {"error": _error(exc)})
            producer.close(0.5)
            raise
        pid, epoch = producer.producer_id_and_epoch
        self.rec.complete(
            op,
            "ok",
            "init",
            {"pid": pid, "epoch": epoch, "state": producer.transaction_state.value},
        )
        return producer

    def _close_producer(self, producer: TransactionalProducer | None) -> None:
        if producer is not None:
            with contextlib.suppress(Exception):
                producer.close(0.5)

    def _ensure_producer(self) -> TransactionalProducer:
        if self.producer is None:
            self.producer = self._init(self.s.tid, False)
        return self.producer

    def _ensure_consumer(self) -> ShareConsumer:
        if self.consumer is None:
            consumer = ShareConsumer(
                {
                    "bootstrap.servers": self.s.bootstrap,
                    "group.id": self.s.group,
                    "share.acknowledgement.mode": "transactional",
                    "max.poll.records": self.s.max_poll_records,
                    "request.timeout.ms": self.s.request_timeout_ms,
                    "fetch.max.wait.ms": 200,
                    "client.id": f"{self.s.process}-consumer",
                }
            )
            consumer.subscribe([self.s.input_topic])
            self.consumer = consumer
        return self.consumer

    def _drop_consumer(self) -> None:
        consumer, self.consumer = self.consumer, None
        if consumer is not None:
            with contextlib.suppress(Exception):
                consumer.close(1.0)

    # -- 2PC recovery -----------------------------------------------------------------------------

    def recover_2pc(self) -> TransactionalProducer:
        """Finish what an earlier incarnation left on the 2PC id; returns a READY producer.

        A prepared transaction that is the one of the intent file is completed as the intent
        decided; anything else open on the id (a transaction whose holder died before
        deciding) is aborted by fencing it (``init_transactions`` without keep).
        """
        intent = self._read_intent()
        if intent is None:
            return self._init(self.s.tid_2pc, True)
        producer = self._init(self.s.tid_2pc, True, keep_prepared=True)
        try:
            pid, epoch = producer.producer_id_and_epoch
            mine = (int(intent["pid"]), int(intent["epoch"])) == (pid, epoch)
            if producer.transaction_state is TxnState.PREPARED and mine:
                self._complete(producer, intent)
            elif producer.transaction_state is TxnState.PREPARED:
                op = self.rec.invoke("abort-orphan", {"tid": self.s.tid_2pc, "pid": pid})
                try:
                    producer.abort_transaction()
                except BaseException as exc:
                    self.rec.complete(op, "info", "abort-orphan", {"error": _error(exc)})
                    raise
                self.rec.complete(op, "ok", "abort-orphan", {})
            else:
                # Not ongoing: completed by an earlier attempt whose answer was lost.
                op = self.rec.invoke("complete", {**_intent_ident(intent), "recovery": True})
                self.rec.complete(op, "info", "complete", {"error": "not ongoing"})
            self._drop_intent(str(intent["tag"]))
        except BaseException:
            self._close_producer(producer)
            raise
        return producer

    def _complete(self, producer: TransactionalProducer, intent: dict[str, Any]) -> None:
        op = self.rec.invoke("complete", _intent_ident(intent))
        try:
            if intent["commit"]:
                state = PreparedTxnState(
                    str(intent["tid"]), int(intent["pid"]), int(intent["epoch"])
                )
                committed = producer.complete_transaction(state)
            else:
                producer.abort_transaction()
                committed = False
        except BaseException as exc:
            self.rec.complete(op, "info", "complete", {"error": _error(exc)})
            raise
        self.rec.complete(op, "ok", "complete", {"outcome": "commit" if committed else "abort"})

    def _ensure_producer_2pc(self) -> TransactionalProducer:
        if self.producer_2pc is None:
            self.producer_2pc = self.recover_2pc()
        return self.producer_2pc

    # -- the loop ---------------------------------------------------------------------------------

    def run(self) -> int:
        self.rec.event("start", {"pid": os.getpid(), "incarnation": self.s.incarnation})
        try:
            while not self.stopping():
                try:
                    self._ensure_producer_2pc()
                    self._ensure_producer()
                    self._ensure_consumer()
                    self.step()
                except Zombie:
                    self.rec.event("zombie-exit", {})
                    return EXIT_ZOMBIE
                except (KafkaProtocolError, SharetxnError, OSError) as exc:
                    log.info("%s: %s", self.s.process, _error(exc))
                    time.sleep(0.2)
            return 0
        finally:
            self._close_producer(self.producer)
            self._close_producer(self.producer_2pc)
            self._drop_consumer()
            self.rec.event("exit", {})
            self.rec.close()

    def _poll(self) -> list[Record]:
        consumer = self._ensure_consumer()
        started = self.rec.now()
        try:
            records = consumer.poll(0.5)
        except (KafkaProtocolError, SharetxnError) as exc:
            op = self.rec.invoke("fetch", {"member": consumer.member_id}, started)
            self.rec.complete(op, "info", "fetch", {"error": _error(exc)})
            if isinstance(exc, FatalError) or not isinstance(exc, KafkaProtocolError):
                self._drop_consumer()
            raise
        if records:
            op = self.rec.invoke("fetch", {"member": consumer.member_id}, started)
            got = [[r.partition, r.offset, _text(r.value), r.delivery_count] for r in records]
            self.rec.complete(op, "ok", "fetch", {"records": got})
        return records

    def step(self) -> None:
        records = self._poll()
        if not records:
            return
        consumer = self._ensure_consumer()
        # Acknowledge every record at once: the consumer is ready for the next poll whatever
        # happens to the transaction; acks that never reach it expire with their locks.
        acked: list[tuple[Record, AcknowledgeType]] = []
        for record in records:
            ack = AcknowledgeType.RELEASE if self.rng.random() < self.s.release_p else None
            ack = ack or AcknowledgeType.ACCEPT
            consumer.acknowledge(record, ack)
            acked.append((record, ack))
        acks = consumer.acknowledgements()
        metadata = consumer.group_metadata()
        twopc = self.rng.random() < self.s.twopc_p
        producer = self.producer_2pc if twopc else self.producer
        assert producer is not None
        pid, epoch = producer.producer_id_and_epoch
        self.txn_no += 1
        txn = _Txn(
            f"{self.s.process}.{self.txn_no}",
            self.s.tid_2pc if twopc else self.s.tid,
            pid,
            epoch,
            twopc,
        )
        outputs: dict[int, list[str]] = {}
        for record, ack in acked:
            if ack is AcknowledgeType.ACCEPT:
                value = _text(record.value)
                out = _output_partition(value, self.s.output_partitions)
                outputs.setdefault(out, []).append(
                    f"{value}@{record.partition}:{record.offset}|{txn.tag}"
                )
        txn_op = self.rec.invoke(
            "txn",
            {
                **txn.ident,
                "2pc": twopc,
                "member": metadata.member_id,
                "inputs": [
                    [r.partition, r.offset, _text(r.value), r.delivery_count, int(a)]
                    for r, a in acked
                ],
                "outputs": {str(p): vs for p, vs in sorted(outputs.items())},
            },
        )
        try:
            self._transaction(producer, txn, txn_op, outputs, acks, metadata, len(records))
        except BaseException as exc:
            self._after_failure(producer, txn, txn_op, exc)
        finally:
            rest, self._rest = self._rest, 0.0
            if rest and not self.draining():
                time.sleep(rest)

    def _transaction(
        self,
        producer: TransactionalProducer,
        txn: _Txn,
        txn_op: int,
        outputs: dict[int, list[str]],
        acks: ShareAcknowledgements,
        metadata: Any,
        count: int,
    ) -> None:
        producer.begin_transaction()
        sent: list[tuple[int, Future[RecordMetadata]]] = []
        for partition, values in sorted(outputs.items()):
            for value in values:
                op = self.rec.invoke(
                    "produce", {**txn.ident, "partition": partition, "values": [value]}
                )
                sent.append((op, producer.send(self.s.output_topic, value, partition=partition)))
        if self.s.pace_s and not self.draining():
            # The "work" of the transaction (at most a second of it inside the transaction,
            # the rest after it), so that the input lasts about as long as the faults.
            self._rest = self.s.pace_s * count
            inside = min(self._rest, 1.0)
            self._rest -= inside
            time.sleep(inside)
        try:
            producer.flush(self.s.max_block_ms / 1000)
        finally:
            unconfirmed = 0
            for op, future in sent:
                error = future.exception(0) if future.done() else None
                if future.done() and error is None:
                    self.rec.complete(op, "ok", "produce", {"offset": future.result().offset})
                else:
                    unconfirmed += 1
                    self.rec.complete(op, "info", "produce", {"error": str(error)})
        if unconfirmed:
            # Commit only what was confirmed in full: this transaction can only be aborted.
            raise IllegalStateError(f"{unconfirmed} output(s) not confirmed")
        ack_op = self.rec.invoke(
            "txn-ack",
            {
                **txn.ident,
                "member": metadata.member_id,
                "acks": [
                    [tp.topic, tp.partition, b.first_offset, b.last_offset, int(b.ack_type)]
                    for tp, batches in sorted(acks.batches.items())
                    for b in batches
                ],
            },
        )
        try:
            producer.send_share_acks_to_transaction(acks, metadata)
        except (AbortableError, FatalError) as exc:
            # A definite answer: the request was rolled back (or fenced) as a whole.
            self.rec.complete(ack_op, "fail", "txn-ack", {"error": _error(exc)})
            raise
        except BaseException as exc:
            self.rec.complete(ack_op, "info", "txn-ack", {"error": _error(exc)})
            raise
        self.rec.complete(ack_op, "ok", "txn-ack", {})
        if txn.twopc:
            self._prepare_and_complete(producer, txn, txn_op)
            return
        if not self.draining() and self.rng.random() < self.s.abort_p:
            producer.abort_transaction()
            self._settle(txn, txn_op, "ok", {"outcome": "abort"})
            return
        txn.commit_sent = True
        producer.commit_transaction()
        self._settle(txn, txn_op, "ok", {"outcome": "commit"})

    def _settle(self, txn: _Txn, txn_op: int, type_: str, value: dict[str, Any]) -> None:
        if not txn.settled:
            txn.settled = True
            self.rec.complete(txn_op, type_, "txn", value)

    def _prepare_and_complete(
        self, producer: TransactionalProducer, txn: _Txn, txn_op: int
    ) -> None:
        state = producer.prepare_transaction()
        if not self.is_current():
            raise Zombie
        commit = self.draining() or self.rng.random() >= self.s.abort_p
        intent = {
            "tag": txn.tag,
            "tid": state.transactional_id,
            "pid": state.producer_id,
            "epoch": state.epoch,
            "commit": commit,
        }
        self._write_intent(intent)
        # From here the transaction's fate is the intent's: whoever completes it follows it.
        txn.commit_sent = True
        self._settle(txn, txn_op, "ok", {"outcome": "prepared", "commit": commit})
        if not self.draining() and self.rng.random() < self.s.decided_linger_p:
            # The application's own work between deciding and completing (the Spark sink
            # writes its commit log there): a decided transaction an operator may find prepared.
            time.sleep(self.rng.uniform(1.0, 4.0))
        try:
            self._complete(producer, intent)
        except BaseException:
            self._close_producer(producer)
            self.producer_2pc = None  # the next step recovers it from the intent
            raise
        self._drop_intent(txn.tag)

    def _after_failure(
        self, producer: TransactionalProducer, txn: _Txn, txn_op: int, exc: BaseException
    ) -> None:
        """Record the transaction's fate after ``exc`` and leave usable clients behind."""
        fenced = isinstance(exc, ProducerFencedError)
        if fenced:
            self.rec.event("fenced", {**txn.ident, "error": _error(exc)})
        if txn.commit_sent:
            # A commit went out (or the prepared transaction's completion failed, which the
            # intent and its ``complete`` operations account for): the outcome is unknown.
            self._settle(txn, txn_op, "info", {"error": _error(exc)})
        else:
            aborted = False
            if producer.transaction_state in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR):
                with contextlib.suppress(KafkaProtocolError, SharetxnError):
                    producer.abort_transaction(self.s.max_block_ms / 1000)
                    aborted = True
            if aborted:
                self._settle(txn, txn_op, "ok", {"outcome": "abort", "error": _error(exc)})
            else:
                # No commit was ever sent: it ends aborted (fenced by the next init, or by
                # its timeout).
                self._settle(txn, txn_op, "fail", {"error": _error(exc)})
        if producer.transaction_state is not TxnState.READY:
            self._close_producer(producer)
            if producer is self.producer:
                self.producer = None
            if producer is self.producer_2pc:
                self.producer_2pc = None
        if isinstance(exc, Zombie) or (fenced and not self.is_current()):
            raise Zombie from exc
        if not isinstance(exc, KafkaProtocolError | SharetxnError | OSError):
            raise exc


def _intent_ident(intent: dict[str, Any]) -> dict[str, Any]:
    return {k: intent[k] for k in ("tag", "tid", "pid", "epoch", "commit")}


def _text(value: bytes | None) -> str:
    return (value or b"").decode("utf-8", "replace")


def _output_partition(value: str, partitions: int) -> int:
    digits = "".join(ch for ch in value if ch.isdigit())
    return int(digits or 0) % partitions


def main(argv: list[str] | None = None, run: Callable[[WorkerSettings], int] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 64
    settings = WorkerSettings(**json.loads(args[0]))
    logging.basicConfig(
        level=logging.WARNING, format=f"%(asctime)s {settings.process} %(name)s %(message)s"
    )
    return (run or (lambda s: Worker(s).run()))(settings)


if __name__ == "__main__":
    sys.exit(main())
