"""The workload: consume-transform-produce workers, a feeder, and the 2PC hand-over.

**Feeder** (process ``feeder``): an idempotent producer that writes unique input values
``i0, i1, ...`` to the input topic in small batches, retrying a batch with the same sequence
number until it is acknowledged (so a retry never duplicates an input).

**Workers** (processes ``w<slot>.<incarnation>``), each a share-group member *and* a
transactional producer (transactional id ``w<slot>``), like an application built on the client
library:

* a heartbeat task (ShareGroupHeartbeat: join at epoch 0, keep the assignment, rejoin when
  fenced or unknown);
* a main task: ShareFetch from the assigned partitions (share-session epochs), then one
  transaction per fetch -- AddPartitionsToTxn, Produce the output records (value
  ``<input>@<partition>:<offset>|<txn tag>``), AddShareAcksToTxn, TxnShareAcknowledge (ACCEPT for
  each processed input, RELEASE for a few skipped ones), then commit or, at random, abort.

Some transactions are **2PC** (KIP-939): the worker leases a transactional id from a small
pool (``2pc-<k>``), runs the transaction with ``Enable2Pc``, *prepares* it (everything sent)
and records an intent (the decision, like the Spark sink's intent file); another worker later
takes the intent over with ``InitProducerId(keepPreparedTxn)`` and completes it, then bumps the
epoch (as the client library does).  A 2PC id whose holder crashed before recording an intent
is *dirty*: the next worker that finds it aborts the orphan by fencing it
(``InitProducerId`` without keep), as the Spark source's recovery does.

The client rules that keep the application exactly-once (and that the checker therefore
expects): commit only when every output and every acknowledgement of the transaction was
confirmed; after any request of a transaction whose fate is unknown (a timeout), abort it by
bumping the epoch (InitProducerId) instead of EndTxn, and bump after a commit one of whose
attempts timed out, so a stale request can never land in a later transaction under the same
epoch (the transaction-version-0 hazard of KAFKA-17754).  After a Produce that failed, abort
with EndTxn and then bump the epoch, as Kafka's Java client does when a batch fails in a
transaction (KIP-360): the sequence numbers restart under the new epoch, so neither a stale copy
of the failed Produce nor a batch reusing its sequence can land in (or be answered as a
duplicate in) a later transaction.  A fenced incarnation that has been replaced (a zombie)
exits; one that was not replaced re-initializes.

Every client operation is recorded in the history (``chaos.history``): ``join``, ``fetch``,
``init``, ``add-partitions``, ``produce``, ``add-share-acks``, ``txn-ack``, ``end-txn``, the
umbrella ``txn`` (ok with outcome commit/abort/prepared, fail = certainly not committed, info =
unknown), ``complete`` (a 2PC hand-over), ``abort-orphan`` and ``feed``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from typing import Any

from chaos.history import History
from chaos.sim_broker import (
    AddPartitions,
    AddShareAcks,
    Answer,
    EndTxn,
    FetchAnswer,
    Heartbeat,
    InitPid,
    PartitionAnswer,
    Produce,
    ShareFetch,
    TxnShareAck,
)
from chaos.sim_client import TIMEOUT, Call, Effect, Proc, ProcessExit, Sleep
from chaos.sim_loop import SimLoop
from producer.protocol.records import decode_records
from txn.batch import build_batch
from txn.errors import ErrorCode
from txn.share_state import AcknowledgeType

E = ErrorCode
Gen = Generator[Effect, Any, Any]

SAFETY = "safety"
DRAIN = "drain"
DONE = "done"

RETRIABLE_COORDINATOR = frozenset(
    {
        E.CONCURRENT_TRANSACTIONS,
        E.COORDINATOR_LOAD_IN_PROGRESS,
        E.COORDINATOR_NOT_AVAILABLE,
        E.NOT_COORDINATOR,
    }
)
FENCED = frozenset({E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH})
SESSION_LOST = frozenset({E.SHARE_SESSION_NOT_FOUND, E.INVALID_SHARE_SESSION_EPOCH})
MEMBER_LOST = frozenset({E.UNKNOWN_MEMBER_ID, E.FENCED_MEMBER_EPOCH, E.GROUP_ID_NOT_FOUND})

ACCEPT = int(AcknowledgeType.ACCEPT)
RELEASE = int(AcknowledgeType.RELEASE)


@dataclass(frozen=True, slots=True)
class WorkloadConfig:
    workers: int = 3
    input_topic: str = "in"
    output_topic: str = "out"
    input_partitions: int = 3
    output_partitions: int = 2
    group: str = "g"
    inputs: int = 400  # values the feeder writes
    feed_batch_max: int = 4
    feed_interval_ms: int = 40
    txn_timeout_ms: int = 8000
    request_timeout_ms: int = 1500
    max_records: int = 6
    abort_p: float = 0.2
    release_p: float = 0.05
    twopc_p: float = 0.15
    twopc_ids: int = 3
    complete_p: float = 0.5  # chance per loop that a worker with nothing else to do completes
    poll_backoff_ms: int = 50
    # consumer-group workers (chaos.group_workload) beside the share-group ones
    group_workers: int = 0
    consumer_group: str = "cg"
    group_output_topic: str = "gout"


@dataclass
class Intent:
    """A prepared 2PC transaction waiting for its completion (the 'intent file')."""

    tag: str
    tid: str
    pid: int
    epoch: int
    commit: bool
    claimed_by: Proc | None = None


@dataclass
class Lease:
    """Who may use a 2PC transactional id now."""

    holder: Proc | None = None
    intent: Intent | None = None
    dirty: bool = False  # a holder vanished before recording an intent: abort the orphan


@dataclass
class Shared:
    """What the workers share outside the broker (an application's durable bookkeeping)."""

    intents: list[Intent] = field(default_factory=list)
    leases: dict[str, Lease] = field(default_factory=dict)

    def release_proc(self, proc: Proc) -> None:
        """``proc`` is gone (crashed or replaced): its leases become dirty, its claims free."""
        for lease in self.leases.values():
            if lease.holder is proc:
                lease.holder = None
                lease.dirty = lease.intent is None
        for intent in self.intents:
            if intent.claimed_by is proc:
                intent.claimed_by = None


class WorkloadEnv:
    """Everything the client logic needs from the simulation."""

    def __init__(
        self,
        loop: SimLoop,
        history: History,
        config: WorkloadConfig,
        is_current: Callable[[Proc], bool],
    ) -> None:
        self.loop = loop
        self.history = history
        self.config = config
        self.is_current = is_current
        self.phase = SAFETY
        self.shared = Shared(
            leases={f"2pc-{k}": Lease() for k in range(config.twopc_ids)},
        )
        self.fed = 0  # input values handed to the feeder
        self.feeder_done = False

    @property
    def draining(self) -> bool:
        return self.phase != SAFETY

    def invoke(self, proc: Proc, f: str, value: Any) -> int:
        return self.history.invoke(self.loop.now_ms(), proc.name, f, value)

    def done(self, op: int, type_: Any, value: Any) -> None:
        self.history.complete(self.loop.now_ms(), op, type_, value)


def error_name(response: Any) -> str:
    if response is TIMEOUT:
        return "timeout"
    error = getattr(response, "error", None)
    return error.name if isinstance(error, ErrorCode) else str(error)


def _ranges(offsets: Iterable[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """(offset, ack type) pairs -> (first, last, type) runs of consecutive offsets."""
    out: list[tuple[int, int, int]] = []
    for offset, ack in sorted(offsets):
        if out and out[-1][1] + 1 == offset and out[-1][2] == ack:
            out[-1] = (out[-1][0], offset, ack)
        else:
            out.append((offset, offset, ack))
    return out


# -- the feeder -----------------------------------------------------------------------------------


class IdempotentWriter:
    """A simulated idempotent producer: a producer id from InitProducerId, and each batch resent
    with the same sequence number until the broker answers."""

    def __init__(self, env: WorkloadEnv, proc: Proc, rng: random.Random) -> None:
        self.env = env
        self.proc = proc
        self.rng = rng
        self.pid = -1
        self.epoch = -1
        self.seqs: dict[int, int] = {}

    def _init_pid(self) -> Gen:
        """One InitProducerId attempt (then a pause if it failed); sequences start over."""
        cfg = self.env.config
        response = yield Call(InitPid(None, cfg.txn_timeout_ms), cfg.request_timeout_ms)
        if isinstance(response, Answer) and response.error is E.NONE:
            self.pid = int(response.fields["pid"])
            self.epoch = int(response.fields["epoch"])
            self.seqs.clear()
        else:
            yield Sleep(200)

    def _produce(
        self,
        topic: str,
        partition: int,
        records: list[tuple[bytes | None, bytes | None]],
        f: str,
        value: dict[str, Any],
    ) -> Gen:
        """Write ``records`` as one batch: the operation ``f`` (``value``) of the history."""
        env = self.env
        cfg = env.config
        seq = self.seqs.get(partition, 0)
        batch = build_batch(
            records,
            timestamp_ms=env.loop.now_ms(),
            producer_id=self.pid,
            producer_epoch=self.epoch,
            base_sequence=seq,
        )
        op = env.invoke(self.proc, f, value)
        request = Produce(topic, partition, batch, None)
        while True:
            response = yield Call(request, cfg.request_timeout_ms)
            if isinstance(response, Answer) and response.error is E.NONE:
                self.seqs[partition] = seq + len(records)
                env.done(op, "ok", {"offset": response.fields["offset"]})
                return
            if isinstance(response, Answer) and response.error is not E.NONE:
                # Not retriable with this sequence (should not happen): the values may or may
                # not be in the log; start over with a fresh producer id.
                env.done(op, "info", {"error": error_name(response)})
                self.pid = -1
                return
            yield Sleep(100)  # timeout: resend the very same batch


class Feeder(IdempotentWriter):
    """Writes the unique input values with an idempotent producer."""

    def run(self) -> Gen:
        env = self.env
        cfg = env.config
        while env.fed < cfg.inputs:
            if self.pid < 0:
                yield from self._init_pid()
                continue
            count = min(self.rng.randint(1, cfg.feed_batch_max), cfg.inputs - env.fed)
            values = [f"i{env.fed + k}" for k in range(count)]
            env.fed += count
            partition = self.rng.randrange(cfg.input_partitions)
            yield from self._produce(
                cfg.input_topic,
                partition,
                [(None, v.encode()) for v in values],
                "feed",
                {"partition": partition, "values": values},
            )
            yield Sleep(self.rng.randint(1, 2 * cfg.feed_interval_ms))
        env.feeder_done = True


# -- the workers ----------------------------------------------------------------------------------


@dataclass
class Txn:
    tag: str
    tid: str
    pid: int
    epoch: int
    twopc: bool
    # (partition, offset, value, delivery count, ack type)
    inputs: list[tuple[int, int, str, int, int]]
    outputs: dict[int, list[str]]  # output partition -> values
    uncertain: bool = False  # some request's fate is unknown
    produce_failed: bool = False  # the epoch is bumped after the abort (see the module doc)
    fenced: bool = False
    failed: str | None = None


class Worker:
    """One incarnation of a consume-transform-produce worker."""

    def __init__(self, env: WorkloadEnv, proc: Proc, rng: random.Random, connection: int) -> None:
        self.env = env
        self.proc = proc
        self.rng = rng
        self.connection = connection
        self.member = f"{proc.slot}-{proc.incarnation}-{rng.getrandbits(32):08x}"
        self.member_epoch = 0
        self.assignment: list[tuple[str, int]] = []
        self.session_epoch = 0
        # the partitions of the open share session, as the last answered ShareFetch left them
        self.session_parts: tuple[tuple[str, int], ...] = ()
        self.tid = proc.slot
        self.pid = -1
        self.epoch = -1
        self.seqs: dict[tuple[str, int], int] = {}
        self.txn_no = 0
        self.heartbeat_ms = 1000

    # -- helpers ----------------------------------------------------------------------------------

    def _call(self, request: Any) -> Gen:
        response = yield Call(request, self.env.config.request_timeout_ms)
        return response

    def _rpc(
        self, request: Any, attempts: int, retriable: frozenset[ErrorCode] = RETRIABLE_COORDINATOR
    ) -> Gen:
        """Send with retries: (last response or TIMEOUT, whether an earlier attempt was lost)."""
        uncertain = False
        response: Any = TIMEOUT
        for attempt in range(attempts):
            if attempt:
                yield Sleep(self.rng.randint(20, 120))
            response = yield Call(request, self.env.config.request_timeout_ms)
            if response is TIMEOUT:
                uncertain = True
                continue
            if response.error in retriable:
                continue
            return response, uncertain
        return response, uncertain

    def _fenced(self, where: str) -> None:
        """Fenced by a newer epoch: a replaced incarnation (zombie) exits, else re-init."""
        if not self.env.is_current(self.proc):
            raise ProcessExit(f"zombie fenced at {where}")
        self.pid = -1

    # -- heartbeat task ---------------------------------------------------------------------------

    heartbeat_answer: type[Any] = Answer  # what a successful heartbeat answers
    join_op = "join"  # the history's name of a heartbeat that joins

    def heartbeat(self) -> Gen:
        env = self.env
        full = True  # a full request (subscription included) makes the broker send the assignment
        while env.phase != DONE:
            joining = self.member_epoch == 0
            request = self._heartbeat_request(joining or full)
            op = env.invoke(self.proc, self.join_op, {"member": self.member}) if joining else -1
            response = yield from self._call(request)
            # As Kafka's membership manager: after a lost answer or an error the next heartbeat
            # is a full request, so an assignment sent in a lost response is sent again.
            full = response is TIMEOUT or response.error is not E.NONE
            if response is TIMEOUT:
                if op >= 0:
                    env.done(op, "info", {"error": "timeout"})
            elif response.error is E.NONE:
                assert isinstance(response, self.heartbeat_answer)
                self.member_epoch = int(response.fields["member_epoch"])
                interval = int(response.fields.get("heartbeat_interval_ms") or 0)
                if interval > 0:
                    self.heartbeat_ms = interval
                assignment = response.fields.get("assignment")
                if assignment is not None:
                    self._assigned(assignment)
                if op >= 0:
                    env.done(op, "ok", {"epoch": self.member_epoch, "assignment": assignment})
            else:
                if op >= 0:
                    env.done(op, "fail", {"error": error_name(response)})
                self._heartbeat_failed(response)
            yield Sleep(self._heartbeat_wait())

    def _heartbeat_request(self, full: bool) -> Any:
        cfg = self.env.config
        return Heartbeat(
            cfg.group, self.member, self.member_epoch, (cfg.input_topic,) if full else None
        )

    def _assigned(self, assignment: Any) -> None:
        self.assignment = [(str(t), int(p)) for t, p in assignment]

    def _heartbeat_failed(self, response: Any) -> None:
        if response.error in MEMBER_LOST:
            self.member_epoch = 0
            self.assignment = []

    def _heartbeat_wait(self) -> int:
        return self.heartbeat_ms if self.member_epoch > 0 else 200

    # -- main task --------------------------------------------------------------------------------

    def main(self) -> Gen:
        env = self.env
        shared = env.shared
        cfg = env.config
        while env.phase != DONE:
            if self.pid < 0:
                yield from self._init_or_pause()
                continue
            current = env.is_current(self.proc)  # a zombie leaves the bookkeeping alone
            dirty = [tid for tid, lease in sorted(shared.leases.items()) if lease.dirty]
            if current and dirty and lease_free(shared, dirty[0]):
                yield from self._abort_orphan(dirty[0])
                continue
            open_intents = [i for i in shared.intents if i.claimed_by is None]
            if current and open_intents and (env.draining or self.rng.random() < cfg.complete_p):
                yield from self._complete(self.rng.choice(open_intents))
                continue
            if not self.assignment or self.member_epoch <= 0:
                yield Sleep(100)
                continue
            records = yield from self._fetch()
            if not records:
                yield Sleep(self.rng.randint(cfg.poll_backoff_ms, 4 * cfg.poll_backoff_ms))
                continue
            twopc_tid = None
            if not env.draining and self.rng.random() < cfg.twopc_p:
                twopc_tid = self._take_lease()
            yield from self._transact(records, twopc_tid)

    def _init_or_pause(self) -> Gen:
        """One attempt to get a producer id, then a pause if it failed."""
        if not (yield from self._init()):
            yield Sleep(self.rng.randint(50, 300))

    def _init(self) -> Gen:
        env = self.env
        op = env.invoke(self.proc, "init", {"tid": self.tid})
        response, uncertain = yield from self._rpc(
            InitPid(self.tid, env.config.txn_timeout_ms), attempts=8
        )
        if isinstance(response, Answer) and response.error is E.NONE:
            self.pid = int(response.fields["pid"])
            self.epoch = int(response.fields["epoch"])
            self.seqs.clear()
            env.done(op, "ok", {"pid": self.pid, "epoch": self.epoch})
            return True
        env.done(
            op,
            "info" if uncertain or response is TIMEOUT else "fail",
            {"error": error_name(response)},
        )
        return False

    def _fetch(self) -> Gen:
        env = self.env
        cfg = env.config
        epoch = self.session_epoch
        parts = tuple(sorted(self.assignment))
        # As Kafka's share session handler: an incremental ShareFetch names the partitions it
        # drops from the session (a new session starts from what the request names).
        kept = set(parts)
        forgotten = () if epoch == 0 else tuple(p for p in self.session_parts if p not in kept)
        op = env.invoke(
            self.proc, "fetch", {"member": self.member, "epoch": epoch, "partitions": parts}
        )
        response = yield from self._call(
            ShareFetch(
                cfg.group, self.member, epoch, parts, cfg.max_records, self.connection, forgotten
            )
        )
        if response is TIMEOUT:
            self.session_epoch = 0  # the broker may or may not have moved the epoch on
            env.done(op, "info", {"error": "timeout"})
            return []
        assert isinstance(response, FetchAnswer)
        if response.error is not E.NONE:
            if response.error in SESSION_LOST:
                self.session_epoch = 0
            env.done(op, "fail", {"error": response.error.name})
            return []
        self.session_epoch = epoch + 1
        self.session_parts = parts
        records: list[tuple[str, int, int, str, int]] = []
        for (topic, partition), (_error, raw, ranges) in sorted(response.partitions.items()):
            if not ranges:
                continue
            dcs: dict[int, int] = {}
            for first, last, dc in ranges:
                for offset in range(first, last + 1):
                    dcs[offset] = dc
            for record in decode_records(raw, check_crc=False):
                count = dcs.get(record.offset)
                if count is not None and record.value is not None:
                    records.append((topic, partition, record.offset, record.value.decode(), count))
        env.done(op, "ok", {"records": [list(r) for r in records]})
        return records

    def _take_lease(self) -> str | None:
        if not self.env.is_current(self.proc):
            return None  # a replaced incarnation (zombie) is no longer trusted with ids
        for tid, lease in sorted(self.env.shared.leases.items()):
            if lease.holder is None and lease.intent is None and not lease.dirty:
                lease.holder = self.proc
                return tid
        return None

    def _drop_lease(self, tid: str, *, dirty: bool) -> None:
        """Give the 2PC id back; ``dirty``: a transaction of ours may be left open on it.

        A zombie may have lost the lease already (its replacement released it, and a cleaner
        may have fenced the id since) while one of its requests, landing late, opened a new
        transaction there: then the id is marked dirty anyway, if nobody else holds it.
        """
        lease = self.env.shared.leases[tid]
        if lease.holder is self.proc:
            lease.holder = None
            lease.dirty = dirty
        elif dirty and lease.holder is None and lease.intent is None:
            lease.dirty = True

    def _transact(
        self, records: list[tuple[str, int, int, str, int]], twopc_tid: str | None
    ) -> Gen:
        env = self.env
        cfg = env.config
        tid, pid, epoch = self.tid, self.pid, self.epoch
        if twopc_tid is not None:
            op = env.invoke(self.proc, "init", {"tid": twopc_tid, "2pc": True})
            response, uncertain = yield from self._rpc(
                InitPid(twopc_tid, cfg.txn_timeout_ms, enable_2pc=True), attempts=6
            )
            if not (isinstance(response, Answer) and response.error is E.NONE):
                env.done(
                    op,
                    "info" if uncertain or response is TIMEOUT else "fail",
                    {"error": error_name(response)},
                )
                self._drop_lease(twopc_tid, dirty=True)
                return
            env.done(op, "ok", dict(response.fields))
            tid, pid, epoch = twopc_tid, int(response.fields["pid"]), int(response.fields["epoch"])
            seqs: dict[tuple[str, int], int] = {}
        else:
            seqs = self.seqs
        self.txn_no += 1
        txn = Txn(f"{self.proc.name}.{self.txn_no}", tid, pid, epoch, twopc_tid is not None, [], {})
        for topic, partition, offset, value, dc in records:
            assert topic == cfg.input_topic
            ack = RELEASE if self.rng.random() < cfg.release_p else ACCEPT
            txn.inputs.append((partition, offset, value, dc, ack))
            if ack == ACCEPT:
                out = int(value[1:]) % cfg.output_partitions
                txn.outputs.setdefault(out, []).append(f"{value}@{partition}:{offset}|{txn.tag}")
        txn_op = env.invoke(
            self.proc,
            "txn",
            {
                "tag": txn.tag,
                "tid": tid,
                "pid": pid,
                "epoch": epoch,
                "2pc": txn.twopc,
                "member": self.member,
                "inputs": [list(i) for i in txn.inputs],
                "outputs": {str(p): vs for p, vs in sorted(txn.outputs.items())},
            },
        )
        yield from self._send_all(txn, seqs)
        if txn.failed is None and txn.twopc:
            yield from self._prepare(txn, txn_op)
            return
        commit = txn.failed is None and (env.draining or self.rng.random() >= cfg.abort_p)
        if not commit and (txn.uncertain or txn.fenced):
            # Abort by bumping the epoch: no stale request of this transaction can land later.
            env.done(txn_op, "fail", {"error": txn.failed or "aborted", "by": "fence"})
            if txn.twopc:
                self._drop_lease(tid, dirty=True)
            elif txn.fenced:
                self._fenced("txn")
            else:
                self.pid = -1
            return
        yield from self._end(txn, txn_op, commit)

    def _send_all(self, txn: Txn, seqs: dict[tuple[str, int], int]) -> Gen:
        env = self.env
        cfg = env.config
        if not (yield from self._send_outputs(txn, seqs, cfg.output_topic)):
            return
        ident = {"tag": txn.tag, "tid": txn.tid, "pid": txn.pid, "epoch": txn.epoch}
        in_parts = tuple(sorted({(cfg.input_topic, i[0]) for i in txn.inputs}))
        ok = yield from self._simple(
            "add-share-acks",
            {**ident, "partitions": [list(p) for p in in_parts]},
            AddShareAcks(txn.tid, txn.pid, txn.epoch, cfg.group, in_parts),
            txn,
        )
        if not ok:
            return
        acks: list[tuple[str, int, int, int, int]] = []
        for partition in sorted({i[0] for i in txn.inputs}):
            pairs = [(i[1], i[4]) for i in txn.inputs if i[0] == partition]
            acks.extend(
                (cfg.input_topic, partition, first, last, ack)
                for first, last, ack in _ranges(pairs)
            )
        op = env.invoke(
            self.proc,
            "txn-ack",
            {**ident, "member": self.member, "acks": [list(a) for a in acks]},
        )
        response, uncertain = yield from self._rpc(
            TxnShareAck(cfg.group, txn.tid, txn.pid, txn.epoch, self.member, tuple(acks)),
            attempts=3,
            retriable=frozenset({E.CONCURRENT_TRANSACTIONS, E.COORDINATOR_LOAD_IN_PROGRESS}),
        )
        if response is TIMEOUT or uncertain:
            # A lost attempt may have staged the acks: the transaction must not commit.
            errors = response.errors if isinstance(response, PartitionAnswer) else {}
            env.done(op, "info", {"errors": _names(errors)})
            txn.uncertain = True
            txn.failed = "txn-ack unknown"
            return
        assert isinstance(response, PartitionAnswer)
        errors = dict(response.errors)
        if all(e is E.NONE for e in errors.values()):
            env.done(op, "ok", {"errors": _names(errors)})
            return
        if any(e is E.NONE for e in errors.values()):
            env.done(op, "ok", {"errors": _names(errors), "partial": True})
        else:
            env.done(op, "fail", {"errors": _names(errors)})
        txn.failed = "txn-ack " + ",".join(sorted({e.name for e in errors.values() if e}))
        if any(e in FENCED for e in errors.values()):
            txn.fenced = True

    def _send_outputs(self, txn: Txn, seqs: dict[tuple[str, int], int], topic: str) -> Gen:
        """AddPartitionsToTxn and Produce of the transaction's outputs: True when all succeeded."""
        env = self.env
        ident = {"tag": txn.tag, "tid": txn.tid, "pid": txn.pid, "epoch": txn.epoch}
        out_parts = tuple((topic, p) for p in sorted(txn.outputs))
        if out_parts:
            ok = yield from self._simple(
                "add-partitions",
                {**ident, "partitions": [list(p) for p in out_parts]},
                AddPartitions(txn.tid, txn.pid, txn.epoch, out_parts),
                txn,
            )
            if not ok:
                return False
        for partition, values in sorted(txn.outputs.items()):
            key = (topic, partition)
            seq = seqs.get(key, 0)
            batch = build_batch(
                [(None, v.encode()) for v in values],
                timestamp_ms=env.loop.now_ms(),
                producer_id=txn.pid,
                producer_epoch=txn.epoch,
                base_sequence=seq,
                transactional=True,
            )
            op = env.invoke(
                self.proc,
                "produce",
                {**ident, "partition": partition, "seq": seq, "values": values},
            )
            response, uncertain = yield from self._rpc(
                Produce(topic, partition, batch, txn.tid), attempts=3
            )
            if isinstance(response, Answer) and response.error is E.NONE:
                seqs[key] = seq + len(values)
                env.done(op, "ok", {"offset": response.fields["offset"]})
                if uncertain:
                    txn.uncertain = True
                continue
            txn.produce_failed = True
            self._failed(txn, op, response, uncertain)
            return False
        return True

    def _simple(self, f: str, value: dict[str, Any], request: Any, txn: Txn) -> Gen:
        op = self.env.invoke(self.proc, f, value)
        response, uncertain = yield from self._rpc(request, attempts=5)
        if response is not TIMEOUT and response.error is E.NONE:
            self.env.done(op, "ok", {})
            txn.uncertain = txn.uncertain or uncertain
            return True
        self._failed(txn, op, response, uncertain)
        return False

    def _failed(self, txn: Txn, op: int, response: Any, uncertain: bool) -> None:
        error = error_name(response)
        if isinstance(response, PartitionAnswer):
            bad = [e for e in response.errors.values() if e is not E.NONE]
            error = bad[0].name if bad else error
            if any(e in FENCED for e in bad):
                txn.fenced = True
        elif response is not TIMEOUT and response.error in FENCED:
            txn.fenced = True
        if response is TIMEOUT or uncertain:
            txn.uncertain = True
            self.env.done(op, "info", {"error": error})
        else:
            self.env.done(op, "fail", {"error": error})
        txn.failed = f"{error}"

    def _end(self, txn: Txn, txn_op: int, commit: bool) -> Gen:
        """EndTxn; returns whether the transaction is known to be committed."""
        env = self.env
        op = env.invoke(
            self.proc,
            "end-txn",
            {"tag": txn.tag, "tid": txn.tid, "pid": txn.pid, "epoch": txn.epoch, "commit": commit},
        )
        response, uncertain = yield from self._rpc(
            EndTxn(txn.tid, txn.pid, txn.epoch, commit), attempts=8
        )
        outcome = "commit" if commit else "abort"
        ok = isinstance(response, Answer) and response.error is E.NONE
        if ok:
            env.done(op, "ok", {})
            env.done(txn_op, "ok", {"outcome": outcome})
        elif response is TIMEOUT or uncertain:
            env.done(op, "info", {"error": error_name(response)})
            if commit:
                env.done(txn_op, "info", {"error": error_name(response)})
            else:
                # No commit was ever sent: whatever happens, it does not commit.
                env.done(txn_op, "fail", {"error": error_name(response), "by": "fence"})
        else:
            env.done(op, "fail", {"error": error_name(response)})
            # A definite error on the only attempt: this EndTxn did nothing, and a transaction
            # no commit reached is aborted (by the epoch bump below or its timeout).
            env.done(txn_op, "fail", {"error": error_name(response)})
        if txn.twopc:
            self._drop_lease(txn.tid, dirty=not ok or uncertain)
            return ok and commit
        if not ok and isinstance(response, Answer) and response.error in FENCED:
            self._fenced("end-txn")
        elif not ok or uncertain or txn.uncertain or txn.produce_failed:
            self.pid = -1  # bump the epoch before the next transaction
        return ok and commit

    # -- 2PC --------------------------------------------------------------------------------------

    def _prepare(self, txn: Txn, txn_op: int) -> Gen:
        env = self.env
        lease = env.shared.leases[txn.tid]
        commit = self.rng.random() >= env.config.abort_p
        if lease.holder is not self.proc or not env.is_current(self.proc):
            # Replaced while we worked: the id was (or will be) fenced; nothing was prepared.
            env.done(txn_op, "fail", {"error": "lease lost"})
            self._drop_lease(txn.tid, dirty=True)
            return
        if txn.uncertain:
            # Never prepare with a request of unknown fate: fence it away instead.
            env.done(txn_op, "fail", {"error": "uncertain", "by": "fence"})
            self._drop_lease(txn.tid, dirty=True)
            return
        intent = Intent(txn.tag, txn.tid, txn.pid, txn.epoch, commit)
        lease.intent = intent
        lease.holder = None
        env.shared.intents.append(intent)
        env.done(txn_op, "ok", {"outcome": "prepared", "commit": commit})
        yield Sleep(0)

    def _complete(self, intent: Intent) -> Gen:
        env = self.env
        cfg = env.config
        intent.claimed_by = self.proc
        value = {
            "tag": intent.tag,
            "tid": intent.tid,
            "pid": intent.pid,
            "epoch": intent.epoch,
            "commit": intent.commit,
        }
        op = env.invoke(self.proc, "complete", value)
        response, _uncertain = yield from self._rpc(
            InitPid(intent.tid, cfg.txn_timeout_ms, enable_2pc=True, keep_prepared=True),
            attempts=4,
        )
        if not (isinstance(response, Answer) and response.error is E.NONE):
            env.done(op, "info", {"error": error_name(response), "stage": "keep"})
            intent.claimed_by = None
            return
        pid, epoch = int(response.fields["pid"]), int(response.fields["epoch"])
        if (pid, epoch) != (intent.pid, intent.epoch):
            # No longer ongoing: an earlier completer finished it (and this call bumped the epoch).
            env.done(op, "info", {"error": "not ongoing", "pid": pid, "epoch": epoch})
            self._finish_intent(intent)
            return
        response, _uncertain = yield from self._rpc(
            EndTxn(intent.tid, pid, epoch, intent.commit), attempts=8
        )
        if isinstance(response, Answer) and response.error is E.NONE:
            env.done(op, "ok", {"outcome": "commit" if intent.commit else "abort"})
        else:
            env.done(op, "info", {"error": error_name(response), "stage": "end"})
            intent.claimed_by = None
            return
        # The client library bumps the epoch after a completed prepared transaction.
        bump, _ = yield from self._rpc(
            InitPid(intent.tid, cfg.txn_timeout_ms, enable_2pc=True), attempts=6
        )
        if not (isinstance(bump, Answer) and bump.error is E.NONE):
            intent.claimed_by = None
            return  # a later completer will find it not ongoing and finish the bookkeeping
        self._finish_intent(intent)

    def _finish_intent(self, intent: Intent) -> None:
        shared = self.env.shared
        if intent in shared.intents:
            shared.intents.remove(intent)
        lease = shared.leases[intent.tid]
        if lease.intent is intent:
            lease.intent = None
            lease.holder = None
            lease.dirty = False

    def _abort_orphan(self, tid: str) -> Gen:
        """Fence a 2PC id whose holder vanished before preparing (recovery)."""
        env = self.env
        lease = env.shared.leases[tid]
        lease.holder = self.proc
        op = env.invoke(self.proc, "abort-orphan", {"tid": tid})
        response, uncertain = yield from self._rpc(
            InitPid(tid, env.config.txn_timeout_ms, enable_2pc=True), attempts=8
        )
        if isinstance(response, Answer) and response.error is E.NONE:
            env.done(op, "ok", dict(response.fields))
            if lease.holder is self.proc:
                lease.holder = None
                lease.dirty = False
        else:
            env.done(op, "info" if uncertain else "fail", {"error": error_name(response)})
            if lease.holder is self.proc:
                lease.holder = None


def lease_free(shared: Shared, tid: str) -> bool:
    lease = shared.leases[tid]
    return lease.holder is None and lease.intent is None


def _names(errors: Any) -> dict[str, str]:
    return {f"{t}-{p}": e.name for (t, p), e in sorted(errors.items())}
