"""The simulated broker process: a ``BrokerCore`` over the simulated disk, crashed and restarted.

Clients reach it only through ``SimNet`` with the small typed requests below (the sans-IO
counterparts of the Kafka RPCs the client library sends: ShareGroupHeartbeat, ShareFetch,
InitProducerId, AddPartitionsToTxn, AddShareAcksToTxn, Produce, TxnShareAcknowledge,
EndTxn).  ``handle`` runs one request against the current incarnation, through the
``BrokerCore`` method the server's handler calls (ShareFetch: ``BrokerCore.share_fetches``,
without a long poll), and returns its response, or None if the broker is down or crashed
while handling it.

A crash (``SimCrash`` from the disk, or one the simulator decides on between events)
abandons the incarnation: its timers die with its clock, its in-memory state is dropped,
the disk loses or tears what was not synced, and after a restart delay a new
``BrokerCore`` recovers by replaying the logs.

Broker-side observations go to ``observe(name, value)`` (the history): what each ShareFetch
acquired (whether or not its answer reaches the client), which acknowledgements became
pending in which transaction, every marker application, every produce accepted, every
producer epoch handed out, and every change of a transaction's coordinator state.  The
checker uses them for the invariants a client cannot see (pending exclusivity, delivery
counts, epoch fencing, legal transitions).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import coordinator.broker as broker_module
from chaos import sim_groups
from chaos.sim_disk import SimCrash, SimDisk
from chaos.sim_loop import IncarnationClock, SimLoop
from chaos.sim_net import NO_MARKER_FAULTS, FaultyMarkerChannel, MarkerFaults
from coordinator.broker import BrokerCore
from coordinator.marker_channel import MarkerHandler, TxnMarker
from coordinator.share.manager import PartitionAcks
from coordinator.share.sessions import FINAL_EPOCH
from coordinator.share.share_partition import AckBatch
from coordinator.share_fetch import ShareFetchRequest, ShareSessionKey
from txn.batch import ControlType
from txn.clock import Clock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    SHARE_GROUP_STATE_TOPIC,
    TRANSACTION_STATE_TOPIC,
    TopicIdPartition,
    TopicPartition,
)
from txn.state import TransactionState

# -- requests -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Heartbeat:
    group: str
    member: str
    epoch: int
    topics: tuple[str, ...] | None


@dataclass(frozen=True, slots=True)
class ShareFetch:
    group: str
    member: str
    session_epoch: int
    partitions: tuple[tuple[str, int], ...]
    max_records: int
    connection: int
    # partitions leaving the session (an incremental fetch; ``partitions`` are added)
    forgotten: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class ShareClose:
    """ShareAcknowledge at epoch -1 with no acknowledgements: close the share session."""

    group: str
    member: str
    connection: int


@dataclass(frozen=True, slots=True)
class ConnectionClosed:
    connection: int


@dataclass(frozen=True, slots=True)
class InitPid:
    tid: str | None
    timeout_ms: int
    pid: int = NO_PRODUCER_ID
    epoch: int = NO_PRODUCER_EPOCH
    enable_2pc: bool = False
    keep_prepared: bool = False


@dataclass(frozen=True, slots=True)
class AddPartitions:
    tid: str
    pid: int
    epoch: int
    partitions: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class AddShareAcks:
    tid: str
    pid: int
    epoch: int
    group: str
    partitions: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class Produce:
    topic: str
    partition: int
    records: bytes
    tid: str | None


@dataclass(frozen=True, slots=True)
class TxnShareAck:
    group: str
    tid: str
    pid: int
    epoch: int
    member: str | None
    # (topic, partition, first offset, last offset, acknowledge type)
    acks: tuple[tuple[str, int, int, int, int], ...]


@dataclass(frozen=True, slots=True)
class EndTxn:
    tid: str
    pid: int
    epoch: int
    commit: bool


Request = (
    Heartbeat
    | ShareFetch
    | ShareClose
    | ConnectionClosed
    | InitPid
    | AddPartitions
    | AddShareAcks
    | Produce
    | TxnShareAck
    | EndTxn
)

# Requests the network may deliver a second time, later (a stale retransmission the client does
# not know about).  Only Produce: its sequence number makes any copy harmless, provided the
# client bumps its epoch after a Produce that failed (as Kafka's Java client does, KIP-360; else
# the copy can land in the next transaction under the same epoch).  TCP never does this on its
# own; a client's own retries (after a lost answer) are modelled by drops and delays, and the
# client knows about those.  Coordinator requests are not on the list: under
# transaction version 0 the epoch stays across transactions, so a stale AddPartitionsToTxn or
# AddShareAcksToTxn landing after the transaction ended opens a phantom one (which never times
# out for a 2PC id), and a stale EndTxn(commit) landing in the *next* transaction commits it
# (KAFKA-17754).  ``tv0_hazards`` adds them to show that.
IDEMPOTENT: tuple[type, ...] = (Produce,)
TV0_HAZARDOUS: tuple[type, ...] = (Produce, AddPartitions, AddShareAcks, EndTxn)


def is_idempotent(request: object) -> bool:
    return isinstance(request, IDEMPOTENT)


def is_replayable_tv0(request: object) -> bool:
    return isinstance(request, TV0_HAZARDOUS)


# -- responses ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Answer:
    """A response with one error code and optional fields."""

    error: ErrorCode
    fields: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FetchAnswer:
    error: ErrorCode
    # (topic, partition) -> (error, records bytes, acquired ranges (first, last, dc))
    partitions: Mapping[tuple[str, int], tuple[ErrorCode, bytes, tuple[tuple[int, int, int], ...]]]


@dataclass(frozen=True, slots=True)
class PartitionAnswer:
    """Per (topic, partition) errors (TxnShareAcknowledge, AddPartitionsToTxn)."""

    errors: Mapping[tuple[str, int], ErrorCode]

    @property
    def error(self) -> ErrorCode:
        """The first error of any partition, else NONE."""
        for _name, error in sorted(self.errors.items()):
            if error is not ErrorCode.NONE:
                return error
        return ErrorCode.NONE


Observer = Callable[[str, Any], None]


def _server_error(request: object) -> object:
    if isinstance(request, sim_groups.GROUP_REQUESTS):
        return sim_groups.server_error(request)
    error = ErrorCode.UNKNOWN_SERVER_ERROR
    if isinstance(request, ShareFetch):
        return FetchAnswer(error, {})
    if isinstance(request, TxnShareAck):
        return PartitionAnswer({(t, p): error for t, p, *_rest in request.acks})
    if isinstance(request, AddPartitions):
        return PartitionAnswer(dict.fromkeys(request.partitions, error))
    return Answer(error)


@dataclass
class BrokerStats:
    starts: int = 0
    crashes: int = 0
    requests: int = 0
    requests_while_down: int = 0


class SimBroker:
    """The broker process of a simulation."""

    def __init__(
        self,
        loop: SimLoop,
        disk: SimDisk,
        config: BrokerConfig,
        rng: random.Random,
        observe: Observer,
        *,
        marker_faults: Callable[[], MarkerFaults] = lambda: NO_MARKER_FAULTS,
        marker_timeout_ms: int = 3000,
        group_configs: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self.loop = loop
        self.disk = disk
        self.config = config
        self.rng = rng
        self.observe = observe
        self.marker_faults = marker_faults
        self.marker_timeout_ms = marker_timeout_ms
        self.group_configs = dict(group_configs or {})
        self.core: BrokerCore | None = None
        self.clock: IncarnationClock | None = None
        self.incarnation = 0
        self.stats = BrokerStats()
        self.tids: set[str] = set()  # transactional ids to watch for state changes
        self._txn_states: dict[str, tuple[str, int, int]] = {}
        self._txn_log_seen = -1
        self.on_crash: Callable[[str], None] | None = None
        # An exception from the core other than a simulated crash (a robustness bug): the
        # request is answered UNKNOWN_SERVER_ERROR, as the Kafka-protocol server does.
        self.on_exception: Callable[[str, BaseException], None] | None = None

    # -- lifecycle --------------------------------------------------------------------------------

    @property
    def up(self) -> bool:
        return self.core is not None

    def start(self) -> bool:
        """Start a new incarnation over the disk (recovery by replay); False if it crashed."""
        assert self.core is None
        self.incarnation += 1
        self.stats.starts += 1
        clock = IncarnationClock(self.loop, self.guard)
        self.clock = clock
        rng = random.Random(self.rng.getrandbits(64))
        channel_rng = random.Random(self.rng.getrandbits(64))

        def channel_factory(c: Clock, handler: MarkerHandler) -> FaultyMarkerChannel:
            return FaultyMarkerChannel(
                c,
                handler,
                channel_rng,
                self.marker_faults,
                self._on_marker,
                request_timeout_ms=self.marker_timeout_ms,
                stale_gate=self._moved_on,
            )

        try:
            # BrokerCore builds its own MarkerChannel: hand it the faulty one instead.
            with mock.patch.object(broker_module, "MarkerChannel", channel_factory):
                core = BrokerCore(self.disk, clock, self.config, rng)
        except SimCrash as crash:
            self._crashed(f"during recovery: {crash}")
            return False
        self.core = core
        self._txn_log_seen = -1
        recovered = core.share.persister.open_transactions()
        self.observe(
            "broker-start",
            {
                "incarnation": self.incarnation,
                # (share-state partition, producer id) of every pending ack that survived
                "open": sorted(
                    {(index, pid) for pid, keys in recovered.items() for index, _key in keys}
                ),
            },
        )
        self._snapshot_txns()
        return True

    def crash(self, reason: str) -> None:
        """Kill the incarnation now (between events)."""
        if self.core is None:
            return
        self._crashed(reason)

    def _crashed(self, reason: str) -> None:
        if self.clock is not None:
            self.clock.kill()
        self.core = None
        self.clock = None
        self.stats.crashes += 1
        self.disk.crash()
        self.observe("broker-crash", {"incarnation": self.incarnation, "reason": reason})
        if self.on_crash is not None:
            self.on_crash(reason)

    def guard(self, work: Callable[[], None], where: str = "timer") -> None:
        """Run broker work (a timer or a request); a SimCrash inside crashes the broker."""
        try:
            work()
        except SimCrash as crash:
            self._crashed(str(crash))
            return
        except Exception as exc:
            if self.on_exception is not None:
                self.on_exception(where, exc)
        if self.core is not None:
            self._snapshot_txns()

    # -- setup (no faults) ------------------------------------------------------------------------

    def setup_topics(
        self,
        topics: Mapping[str, int],
        topic_configs: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        core = self.core
        assert core is not None
        for name, partitions in topics.items():
            overrides = dict((topic_configs or {}).get(name, {}))
            result = core.create_topic(name, partitions, 1, overrides)
            assert result.error is ErrorCode.NONE, result
        for group, configs in self.group_configs.items():
            error, message = core.share.groups.alter_group_configs(group, dict(configs))
            assert error is ErrorCode.NONE, message

    # -- observation ------------------------------------------------------------------------------

    def watch(self, tid: str) -> None:
        self.tids.add(tid)

    def _snapshot_txns(self) -> None:
        core = self.core
        if core is None:
            return
        # Every coordinator state change is a record in __transaction_state: look only then.
        marker = self.disk.batch_count(TRANSACTION_STATE_TOPIC, 0)
        if marker == self._txn_log_seen:
            return
        self._txn_log_seen = marker
        txns = core.txn_coordinator._txns  # noqa: SLF001 - read-only, and on every change
        states = self._txn_states
        for tid in sorted(self.tids):
            metadata = txns.get(tid)
            if metadata is None:
                continue
            now = (metadata.state.state_name, metadata.producer_id, metadata.producer_epoch)
            if states.get(tid) != now:
                states[tid] = now
                self.observe(
                    "txn-state",
                    {"tid": tid, "state": now[0], "pid": now[1], "epoch": now[2]},
                )

    def _moved_on(self, marker: TxnMarker) -> bool:
        """Whether a newer transaction of the marker's id, at a newer epoch, is open now."""
        core = self.core
        if core is None:
            return False
        metadata = core.txn_coordinator._txns.get(marker.transactional_id)  # noqa: SLF001
        if metadata is None or metadata.state is not TransactionState.ONGOING:
            return False
        if (
            metadata.producer_id == marker.producer_id
            and metadata.producer_epoch <= marker.producer_epoch
        ):
            return False
        return not metadata.topic_partitions.isdisjoint(marker.partitions)

    def _on_marker(
        self, marker: TxnMarker, response: Mapping[TopicPartition, ErrorCode], how: str
    ) -> None:
        self.observe(
            "marker",
            {
                "tid": marker.transactional_id,
                "pid": marker.producer_id,
                "epoch": marker.producer_epoch,
                "commit": marker.result is ControlType.COMMIT,
                "how": how,
                "partitions": sorted(
                    [tp.topic, tp.partition, response.get(tp, ErrorCode.REQUEST_TIMED_OUT).name]
                    for tp in marker.partitions
                ),
            },
        )

    # -- requests ---------------------------------------------------------------------------------

    def handle(self, request: object) -> object | None:
        """Serve one request; None when down or when the broker crashed serving it."""
        self.stats.requests += 1
        if self.core is None:
            self.stats.requests_while_down += 1
            return None
        incarnation = self.incarnation
        result: list[object] = []

        def work() -> None:
            core = self.core
            assert core is not None
            result.append(self._dispatch(core, request))

        self.guard(work, type(request).__name__)
        if self.incarnation != incarnation or self.core is None:
            return None
        if not result:
            return _server_error(request)
        return result[0]

    def _tip(self, core: BrokerCore, topic: str, partition: int) -> TopicIdPartition | None:
        info = core.topics.get(topic)
        if info is None:
            return None
        return TopicIdPartition(info.topic_id, partition)

    def _dispatch(self, core: BrokerCore, request: object) -> object:
        if isinstance(request, Heartbeat):
            return self._heartbeat(core, request)
        if isinstance(request, ShareFetch):
            return self._share_fetch(core, request)
        if isinstance(request, TxnShareAck):
            return self._txn_share_ack(core, request)
        if isinstance(request, Produce):
            return self._produce(core, request)
        if isinstance(request, InitPid):
            return self._init_pid(core, request)
        if isinstance(request, AddPartitions):
            tps = [TopicPartition(t, p) for t, p in request.partitions]
            errors = core.txn_coordinator.add_partitions_to_txn(
                request.tid, request.pid, request.epoch, tps
            )
            return PartitionAnswer({(tp.topic, tp.partition): e for tp, e in errors.items()})
        if isinstance(request, AddShareAcks):
            return self._add_share_acks(core, request)
        if isinstance(request, EndTxn):
            end = core.txn_coordinator.end_txn(
                request.tid, request.pid, request.epoch, request.commit, tv2=False
            )
            return Answer(end.error)
        if isinstance(request, ShareClose):
            key = ShareSessionKey(request.group, request.member, FINAL_EPOCH, request.connection)
            return Answer(core.share_fetches.acknowledge(key, ()).error)
        if isinstance(request, ConnectionClosed):
            core.share.on_connection_closed(request.connection)
            return Answer(ErrorCode.NONE)
        if isinstance(request, sim_groups.GROUP_REQUESTS):
            return sim_groups.dispatch(core, request, self.observe)
        raise TypeError(f"unknown request {request!r}")

    def _heartbeat(self, core: BrokerCore, req: Heartbeat) -> Answer:
        result = core.share.heartbeat(
            req.group, req.member, req.epoch, None, list(req.topics) if req.topics else None
        )
        assignment: list[tuple[str, int]] | None = None
        if result.assignment is not None:
            assignment = []
            for topic_id, parts in result.assignment:
                info = core.topics.by_id(topic_id)
                if info is not None:
                    assignment.extend((info.name, p) for p in parts)
            assignment.sort()
        return Answer(
            result.error,
            {
                "member_epoch": result.member_epoch,
                "assignment": assignment,
                "heartbeat_interval_ms": result.heartbeat_interval_ms,
            },
        )

    def _share_fetch(self, core: BrokerCore, req: ShareFetch) -> FetchAnswer:
        """ShareFetch through the server's path (``BrokerCore.share_fetches``), without a wait."""
        names: dict[TopicIdPartition, tuple[str, int]] = {}
        requested = self._tips(core, req.partitions, names)
        poll = core.share_fetches.fetch(
            ShareFetchRequest(
                ShareSessionKey(req.group, req.member, req.session_epoch, req.connection),
                requested=requested,
                forgotten=self._tips(core, req.forgotten, names),
                max_records=req.max_records,
                max_bytes=1 << 20,
                max_wait_ms=0,
            )
        )
        wake = poll.step()  # no long poll: max_wait 0 answers after one acquisition pass
        assert wake is None, wake
        out: dict[tuple[str, int], tuple[ErrorCode, bytes, tuple[tuple[int, int, int], ...]]] = {}
        for entry in poll.answered():
            # the session may hold partitions this request does not name (a late request)
            name = names.get(entry.tip) or self._name(core, entry.tip)
            if name is None:
                continue
            ranges: tuple[tuple[int, int, int], ...] = ()
            records = b""
            if entry.result is not None:
                ranges = tuple(
                    (r.first_offset, r.last_offset, r.delivery_count) for r in entry.result.acquired
                )
                records = entry.result.records
            out[name] = (entry.error, records, ranges)
            if ranges:
                self.observe(
                    "acquired",
                    {
                        "member": req.member,
                        "topic": name[0],
                        "partition": name[1],
                        "ranges": [list(r) for r in ranges],
                    },
                )
        return FetchAnswer(poll.outcome.error, out)

    @staticmethod
    def _name(core: BrokerCore, tip: TopicIdPartition) -> tuple[str, int] | None:
        info = core.topics.by_id(tip.topic_id)
        return None if info is None else (info.name, tip.partition)

    def _tips(
        self,
        core: BrokerCore,
        partitions: tuple[tuple[str, int], ...],
        names: dict[TopicIdPartition, tuple[str, int]],
    ) -> list[TopicIdPartition]:
        """The topic-id partitions of ``partitions`` (unknown topics left out), named in
        ``names``."""
        tips: list[TopicIdPartition] = []
        for topic, partition in partitions:
            tip = self._tip(core, topic, partition)
            if tip is not None:
                tips.append(tip)
                names[tip] = (topic, partition)
        return tips

    def _txn_share_ack(self, core: BrokerCore, req: TxnShareAck) -> PartitionAnswer:
        by_partition: dict[tuple[str, int], list[AckBatch]] = {}
        for topic, partition, first, last, ack in req.acks:
            by_partition.setdefault((topic, partition), []).append(AckBatch(first, last, [ack]))
        acks: list[PartitionAcks] = []
        names: dict[TopicIdPartition, tuple[str, int]] = {}
        errors: dict[tuple[str, int], ErrorCode] = {}
        for name, batches in sorted(by_partition.items()):
            tip = self._tip(core, *name)
            if tip is None:
                errors[name] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            names[tip] = name
            acks.append(PartitionAcks(tip, batches))
        results = core.txn_share_acknowledge(
            req.group, req.tid, req.pid, req.epoch, req.member, acks
        )
        for tip, error in results.items():
            name = names[tip]
            errors[name] = error
            if error is ErrorCode.NONE:
                self.observe(
                    "pending",
                    {
                        "tid": req.tid,
                        "pid": req.pid,
                        "epoch": req.epoch,
                        "member": req.member,
                        "topic": name[0],
                        "partition": name[1],
                        "state_partition": core.share.state_partition_of(
                            req.group, tip.topic_id, tip.partition
                        ).partition,
                        "batches": [
                            [b.first_offset, b.last_offset, b.ack_types[0]]
                            for b in by_partition[name]
                        ],
                        # what really became TX_PENDING for this transaction
                        "staged": self._staged(core, req, tip, by_partition[name]),
                    },
                )
        return PartitionAnswer(errors)

    @staticmethod
    def _staged(
        core: BrokerCore, req: TxnShareAck, tip: TopicIdPartition, batches: list[AckBatch]
    ) -> list[list[int]]:
        _error, sp = core.share.share_partition(req.group, tip)
        if sp is None:
            return []
        out: list[list[int]] = []
        for first, last, pending in sp.pending_acks():
            if (pending.producer_id, pending.producer_epoch) != (req.pid, req.epoch):
                continue
            for b in batches:
                a, z = max(first, b.first_offset), min(last, b.last_offset)
                if a <= z:
                    out.append([a, z])
        return sorted(out)

    def _produce(self, core: BrokerCore, req: Produce) -> Answer:
        tp = TopicPartition(req.topic, req.partition)
        partition = core.partition(req.topic, req.partition)
        end_before = partition.high_watermark if partition is not None else 0
        result = core.produce(tp, req.records, req.tid)
        if result.error is ErrorCode.NONE and req.tid is not None:
            from txn.batch import parse_header  # noqa: PLC0415

            header = parse_header(req.records)
            self.observe(
                "produced",
                {
                    "tid": req.tid,
                    "pid": header.producer_id,
                    "epoch": header.producer_epoch,
                    "topic": req.topic,
                    "partition": req.partition,
                    "offset": result.base_offset,
                    "seq": header.base_sequence,
                    # answered from the duplicate window: nothing was appended
                    "dup": result.base_offset < end_before,
                },
            )
        return Answer(result.error, {"offset": result.base_offset})

    def _init_pid(self, core: BrokerCore, req: InitPid) -> Answer:
        result = core.txn_coordinator.init_producer_id(
            req.tid,
            req.timeout_ms,
            req.pid,
            req.epoch,
            enable_2pc=req.enable_2pc,
            keep_prepared_txn=req.keep_prepared,
        )
        if result.error is ErrorCode.NONE and req.tid is not None:
            self.observe(
                "epoch",
                {
                    "tid": req.tid,
                    "pid": result.producer_id,
                    "epoch": result.producer_epoch,
                    "keep": req.keep_prepared,
                },
            )
        return Answer(result.error, {"pid": result.producer_id, "epoch": result.producer_epoch})

    def _add_share_acks(self, core: BrokerCore, req: AddShareAcks) -> Answer:
        topics: dict[str, list[int]] = {}
        for topic, partition in req.partitions:
            topics.setdefault(topic, []).append(partition)
        return Answer(core.add_share_acks_to_txn(req.tid, req.pid, req.epoch, req.group, topics))

    # -- inspection (the simulator's oracle, used with faults off) --------------------------------

    def topic_id(self, topic: str) -> uuid.UUID | None:
        core = self.core
        info = core.topics.get(topic) if core is not None else None
        return None if info is None else info.topic_id

    def state_topic(self) -> str:
        return SHARE_GROUP_STATE_TOPIC
