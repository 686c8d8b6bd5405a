"""Consumer-group workers: consume-transform-produce with ``sendOffsetsToTransaction``.

Each worker (process ``c<slot>.<incarnation>``) is a KIP-848 consumer-group member of group
``cg`` subscribed to the input topic, and a transactional producer, as an exactly-once
application built on Kafka's consumer and producer is (KIP-98, KIP-447):

* a heartbeat task (ConsumerGroupHeartbeat: join at epoch 0 with the subscription, report the
  partitions it owns, take new partitions at once, give revoked ones up only between
  transactions, start over at epoch 0 when fenced or unknown);
* a main task: the position of each owned partition comes from OffsetFetch with
  ``require_stable`` (UNSTABLE_OFFSET_COMMIT while another transaction's offsets are pending:
  retry later; no committed offset: the log start, ``auto.offset.reset=earliest``); Fetch at
  read_committed; then one transaction per fetch -- AddPartitionsToTxn, Produce the outputs
  (value ``<input>@<partition>:<offset>|<txn tag>`` to the group output topic),
  AddOffsetsToTxn, TxnOffsetCommit (the next offsets, with the member id and the member epoch
  the records were fetched under), then commit or, at random, abort.  After anything but a
  confirmed commit the worker forgets its positions and asks OffsetFetch again.

The transactional id is per incarnation (``c<slot>.<incarnation>``), not per partition: a
replaced incarnation (a zombie) is *not* fenced by the producer epoch, only by the group --
its TxnOffsetCommit at an old member epoch is refused (STALE/FENCED_MEMBER_EPOCH,
UNKNOWN_MEMBER_ID), so its transaction must abort.  That is the KIP-447 model, and what the
checker's consumer-group invariants (C1-C3) judge.

History operations: ``group-join``, ``offset-fetch``, ``group-fetch``, ``add-offsets``,
``txn-offsets`` and the umbrella ``group-txn`` (ok with outcome commit/abort, fail = certainly
not committed, info = unknown), plus the ``add-partitions``/``produce``/``end-txn`` it shares
with the share-group workers.
"""

from __future__ import annotations

import random
from typing import Any

from chaos.sim_client import TIMEOUT, Proc, ProcessExit, Sleep
from chaos.sim_groups import (
    AddOffsets,
    Fetch,
    GroupAnswer,
    GroupHeartbeat,
    OffsetFetch,
    OffsetsAnswer,
    TxnOffsetCommit,
)
from chaos.workload import (
    ACCEPT,
    DONE,
    FENCED,
    Gen,
    Txn,
    Worker,
    WorkloadEnv,
    error_name,
)
from producer.protocol.records import decode_records
from txn.errors import ErrorCode

E = ErrorCode
GROUP_MEMBER_LOST = frozenset({E.UNKNOWN_MEMBER_ID, E.FENCED_MEMBER_EPOCH})
FETCH_MAX_BYTES = 4096

Partition = tuple[str, int]


class GroupWorker(Worker):
    """One incarnation of a consumer-group consume-transform-produce worker."""

    def __init__(self, env: WorkloadEnv, proc: Proc, rng: random.Random, connection: int) -> None:
        super().__init__(env, proc, rng, connection)
        self.tid = proc.name
        self.owned: set[Partition] = set()
        self.revoked: set[Partition] = set()  # to give up once the transaction ends
        self.busy: set[Partition] = set()  # partitions of the fetch/transaction under way
        self.positions: dict[Partition, int] = {}

    # -- heartbeat task ---------------------------------------------------------------------------

    heartbeat_answer = GroupAnswer
    join_op = "group-join"

    def _heartbeat_request(self, full: bool) -> Any:
        cfg = self.env.config
        return GroupHeartbeat(
            cfg.consumer_group,
            self.member,
            self.member_epoch,
            (cfg.input_topic,) if full else None,
            tuple(sorted(self.owned)),
        )

    def _assigned(self, assignment: Any) -> None:
        self._reconcile({(str(t), int(p)) for t, p in assignment})

    def _heartbeat_failed(self, response: Any) -> None:
        if response.error in GROUP_MEMBER_LOST:
            if not self.env.is_current(self.proc):
                raise ProcessExit(f"zombie fenced by the group ({error_name(response)})")
            self._lose_partitions()

    def _heartbeat_wait(self) -> int:
        return self.heartbeat_ms if self.member_epoch > 0 and not self.revoked else 100

    def _reconcile(self, target: set[Partition]) -> None:
        """Take new partitions now; give revoked ones up unless a transaction uses them."""
        for tp in target - self.owned:
            self.owned.add(tp)
            self.positions.pop(tp, None)  # ask OffsetFetch: another member may have moved it
        self.revoked = self.owned - target
        self._release_revoked()

    def _release_revoked(self) -> None:
        for tp in sorted(self.revoked - self.busy):
            self.owned.discard(tp)
            self.positions.pop(tp, None)
            self.revoked.discard(tp)

    def _lose_partitions(self) -> None:
        """Fenced out of the group (onPartitionsLost): start over at epoch 0."""
        self.member_epoch = 0
        self.owned.clear()
        self.revoked.clear()
        self.positions.clear()

    # -- main task --------------------------------------------------------------------------------

    def main(self) -> Gen:
        env = self.env
        cfg = env.config
        while env.phase != DONE:
            if self.pid < 0:
                yield from self._init_or_pause()
                continue
            if self.member_epoch <= 0 or not self.owned:
                yield Sleep(100)
                continue
            missing = tuple(sorted(tp for tp in self.owned if tp not in self.positions))
            if missing:
                if not (yield from self._fetch_positions(missing)):
                    yield Sleep(self.rng.randint(cfg.poll_backoff_ms, 4 * cfg.poll_backoff_ms))
                continue
            candidates = sorted(self.owned - self.revoked)
            if not candidates:
                yield Sleep(50)
                continue
            tp = self.rng.choice(candidates)
            epoch = self.member_epoch
            self.busy = {tp}
            try:
                records = yield from self._fetch_records(tp)
                if records and self.member_epoch > 0 and tp in self.owned:
                    yield from self._transact_group(tp, records, epoch)
                elif not records:
                    yield Sleep(self.rng.randint(cfg.poll_backoff_ms, 4 * cfg.poll_backoff_ms))
            finally:
                self.busy = set()
                self._release_revoked()

    def _fetch_positions(self, partitions: tuple[Partition, ...]) -> Gen:
        env = self.env
        op = env.invoke(self.proc, "offset-fetch", {"partitions": [list(p) for p in partitions]})
        response = yield from self._call(OffsetFetch(env.config.consumer_group, partitions, True))
        if response is TIMEOUT or response.error is not E.NONE:
            env.done(op, "info" if response is TIMEOUT else "fail", {"error": error_name(response)})
            return False
        assert isinstance(response, OffsetsAnswer)
        got: dict[str, Any] = {}
        for (topic, partition), (error, offset) in sorted(response.partitions.items()):
            tp = (topic, partition)
            if error is E.NONE and tp in self.owned:
                self.positions[tp] = max(0, int(offset))  # none committed: earliest
                got[f"{topic}-{partition}"] = int(offset)
            else:
                got[f"{topic}-{partition}"] = error.name
        env.done(op, "ok", {"offsets": got})
        return all(tp in self.positions for tp in partitions if tp in self.owned)

    def _fetch_records(self, tp: Partition) -> Gen:
        env = self.env
        cfg = env.config
        position = self.positions[tp]
        op = env.invoke(self.proc, "group-fetch", {"partition": tp[1], "offset": position})
        response = yield from self._call(Fetch(tp[0], tp[1], position, FETCH_MAX_BYTES))
        if response is TIMEOUT or response.error is not E.NONE:
            env.done(op, "info" if response is TIMEOUT else "fail", {"error": error_name(response)})
            return []
        assert isinstance(response, OffsetsAnswer)
        error, data = response.partitions[tp]
        if error is not E.NONE:
            env.done(op, "fail", {"error": error.name})
            if error is E.OFFSET_OUT_OF_RANGE:
                self.positions.pop(tp, None)
            return []
        raw, _high_watermark = data
        records: list[tuple[int, str]] = []
        for record in decode_records(raw, check_crc=False):
            if record.offset >= position and record.value is not None:
                records.append((record.offset, record.value.decode()))
            if len(records) >= cfg.max_records:
                break
        env.done(op, "ok", {"records": [list(r) for r in records]})
        return records

    def _transact_group(self, tp: Partition, records: list[tuple[int, str]], epoch: int) -> Gen:
        env = self.env
        cfg = env.config
        self.txn_no += 1
        txn = Txn(f"{self.proc.name}.{self.txn_no}", self.tid, self.pid, self.epoch, False, [], {})
        for offset, value in records:
            txn.inputs.append((tp[1], offset, value, 0, ACCEPT))
            out = int(value[1:]) % cfg.output_partitions
            txn.outputs.setdefault(out, []).append(f"{value}@{tp[1]}:{offset}|{txn.tag}")
        next_offset = records[-1][0] + 1
        txn_op = env.invoke(
            self.proc,
            "group-txn",
            {
                "tag": txn.tag,
                "tid": txn.tid,
                "pid": txn.pid,
                "epoch": txn.epoch,
                "member": self.member,
                "member_epoch": epoch,
                "partition": tp[1],
                "inputs": [[tp[1], o, v] for o, v in records],
                "offset": next_offset,
                "outputs": {str(p): vs for p, vs in sorted(txn.outputs.items())},
            },
        )
        if (yield from self._send_outputs(txn, self.seqs, cfg.group_output_topic)):
            yield from self._send_offsets(txn, tp, next_offset, epoch)
        commit = txn.failed is None and (env.draining or self.rng.random() >= cfg.abort_p)
        committed = False
        if not commit and (txn.uncertain or txn.fenced):
            env.done(txn_op, "fail", {"error": txn.failed or "aborted", "by": "fence"})
            if txn.fenced:
                self._fenced("txn")
            else:
                self.pid = -1
        else:
            committed = yield from self._end(txn, txn_op, commit)
        if committed and self.positions.get(tp) == records[0][0]:
            self.positions[tp] = next_offset
        else:
            self.positions.pop(tp, None)  # ask OffsetFetch: the committed offset decides

    def _send_offsets(self, txn: Txn, tp: Partition, next_offset: int, epoch: int) -> Gen:
        """AddOffsetsToTxn then TxnOffsetCommit (``sendOffsetsToTransaction``)."""
        env = self.env
        cfg = env.config
        ident = {"tag": txn.tag, "tid": txn.tid, "pid": txn.pid, "epoch": txn.epoch}
        ok = yield from self._simple(
            "add-offsets",
            {**ident, "group": cfg.consumer_group},
            AddOffsets(txn.tid, txn.pid, txn.epoch, cfg.consumer_group),
            txn,
        )
        if not ok:
            return
        op = env.invoke(
            self.proc,
            "txn-offsets",
            {**ident, "member": self.member, "member_epoch": epoch, "offset": next_offset},
        )
        request = TxnOffsetCommit(
            cfg.consumer_group,
            txn.tid,
            txn.pid,
            txn.epoch,
            self.member,
            epoch,
            ((tp[0], tp[1], next_offset),),
        )
        response, uncertain = yield from self._rpc(
            request,
            attempts=3,
            retriable=frozenset({E.CONCURRENT_TRANSACTIONS, E.COORDINATOR_LOAD_IN_PROGRESS}),
        )
        if response is TIMEOUT or uncertain:
            env.done(op, "info", {"error": error_name(response)})
            txn.uncertain = True
            txn.failed = "txn-offsets unknown"
            return
        assert isinstance(response, OffsetsAnswer)
        error = response.partitions.get(tp, (E.UNKNOWN_SERVER_ERROR, None))[0]
        if error is E.NONE:
            env.done(op, "ok", {})
            return
        env.done(op, "fail", {"error": error.name})
        txn.failed = f"txn-offsets {error.name}"
        if error in FENCED:
            txn.fenced = True
