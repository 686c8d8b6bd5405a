"""``TransactionalProducer``: Kafka's transactional producer, plus KIP-1289 and KIP-939/1310.

A blocking, thread-safe client with the Java producer's method names in snake case
(DESIGN section 5).  ``send`` appends to a per-partition batch and returns a
``concurrent.futures.Future`` of ``RecordMetadata``; a background sender thread
(``producer/sender.py``) produces batches with idempotent sequences.  Transaction control
(InitProducerId, AddShareAcksToTxn, EndTxn) and TxnShareAcknowledge run in the caller's
thread, retried within the caller's deadline (``timeout_s``, default ``max.block.ms``).

The client-side state machine (``producer/txn_manager.py``) decides what may be called
when: misuse raises ``IllegalStateError``; after an abortable error only
``abort_transaction`` is allowed; after a fatal error (e.g. ``ProducerFencedError``) every
call re-raises it and the producer must be closed.

Versions spoken: Produce v3-v10, InitProducerId up to v6 (v6 only when 2PC or
keep_prepared_txn is asked for), AddPartitionsToTxn v0-v3 and EndTxn v0-v4 (transaction
version 0/1: the epoch is not bumped by EndTxn), AddShareAcksToTxn v0, TxnShareAcknowledge v0.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from producer.accumulator import (
    RecordAccumulator,
    RecordMetadata,
    StickyPartitioner,
    partition_for_key,
    record_size,
)
from producer.client import KafkaClient
from producer.client_defaults import CONNECTION_DEFAULTS
from producer.security import PLAINTEXT, SECURITY_KEYS, ClientSecurity
from producer.sender import ProducerClient, Sender, SenderConfig, fenced_or_typed
from producer.txn_manager import (
    ABORTABLE_CODES,
    FATAL_CODES,
    DifferentPreparedTransactionError,
    IllegalStateError,
    NoPreparedTransactionError,
    Operation,
    PreparedTransactionMismatchError,
    TransactionAbortedError,
    TransactionManager,
    TxnState,
    UnsupportedOperationError,
)
from producer.types import (
    ConsumerGroupMetadata,
    PreparedTxnState,
    ShareAckBatch,
    ShareAcknowledgements,
    ShareGroupMetadata,
)
from txn.compression import Codec, UnsupportedCompressionError, codec_by_name
from txn.errors import (
    ClosedError,
    ErrorCode,
    KafkaProtocolError,
    NetworkError,
    RequestTimedOutError,
    RetriableError,
)
from txn.ids import (
    KEY_TYPE_GROUP,
    KEY_TYPE_TRANSACTION,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TopicPartition,
)

__all__ = [
    "DifferentPreparedTransactionError",
    "IllegalStateError",
    "NoPreparedTransactionError",
    "PreparedTransactionMismatchError",
    "ProducerConfig",
    "RecordMetadata",
    "TransactionAbortedError",
    "TransactionalProducer",
    "TxnState",
    "UnsupportedOperationError",
]

log = logging.getLogger("sharetxn.producer")

API_INIT_PRODUCER_ID = 22
API_ADD_OFFSETS_TO_TXN = 25
API_TXN_OFFSET_COMMIT = 28
API_END_TXN = 26
API_TXN_SHARE_ACKNOWLEDGE = 93
API_ADD_SHARE_ACKS_TO_TXN = 94

# Errors of coordinator requests after which the producer can only be closed (as Java's
# AddPartitionsToTxn/EndTxn handlers: a bad transaction state or id mapping is not abortable).
_COORDINATOR_FATAL = FATAL_CODES | {
    ErrorCode.INVALID_TXN_STATE,
    ErrorCode.INVALID_PRODUCER_ID_MAPPING,
}

# Kafka config name -> default (None: no default).
_DEFAULTS: dict[str, Any] = {
    **CONNECTION_DEFAULTS,
    "transactional.id": None,
    "transaction.timeout.ms": 60000,
    "transaction.two.phase.commit.enable": False,
    "linger.ms": 5,
    "batch.size": 16384,
    "acks": "all",
    "delivery.timeout.ms": 120000,
    "max.block.ms": 60000,
    "client.id": "sharetxn-producer",
    "enable.idempotence": True,
    "compression.type": "none",
}


@dataclass(frozen=True, slots=True)
class ProducerConfig:
    """The producer's Kafka configuration, parsed and checked."""

    bootstrap_servers: str
    transactional_id: str | None
    transaction_timeout_ms: int
    two_phase_commit: bool
    linger_ms: int
    batch_size: int
    acks: int
    request_timeout_ms: int
    delivery_timeout_ms: int
    max_block_ms: int
    client_id: str
    retry_backoff_ms: int
    enable_idempotence: bool
    compression: Codec = Codec.NONE
    security: ClientSecurity = PLAINTEXT

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> ProducerConfig:
        """Parse Kafka-named settings; unknown keys and bad values raise ValueError naming them."""
        for key in config:
            if key not in _DEFAULTS and key not in SECURITY_KEYS:
                known = ", ".join(sorted({*_DEFAULTS, *SECURITY_KEYS}))
                msg = f"unknown producer config {key!r} (known: {known})"
                raise ValueError(msg)
        values = {
            **_DEFAULTS,
            **{k: v for k, v in config.items() if v is not None and k not in SECURITY_KEYS},
        }
        bootstrap = values["bootstrap.servers"]
        if not bootstrap or not isinstance(bootstrap, str):
            msg = "bootstrap.servers is required (HOST:PORT[,HOST:PORT...])"
            raise ValueError(msg)
        tid = values["transactional.id"]
        if tid is not None and (not isinstance(tid, str) or not tid):
            msg = "transactional.id must be a non-empty string"
            raise ValueError(msg)
        idempotent = _bool(values, "enable.idempotence")
        acks = _acks(values["acks"])
        if tid is not None and not idempotent:
            msg = "transactional.id needs enable.idempotence=true"
            raise ValueError(msg)
        if idempotent and acks != -1:
            msg = "enable.idempotence (and transactions) need acks=all"
            raise ValueError(msg)
        parsed = cls(
            bootstrap_servers=bootstrap,
            transactional_id=tid,
            transaction_timeout_ms=_int(values, "transaction.timeout.ms", 1),
            two_phase_commit=_bool(values, "transaction.two.phase.commit.enable"),
            linger_ms=_int(values, "linger.ms", 0),
            batch_size=_int(values, "batch.size", 1),
            acks=acks,
            request_timeout_ms=_int(values, "request.timeout.ms", 1),
            delivery_timeout_ms=_int(values, "delivery.timeout.ms", 1),
            max_block_ms=_int(values, "max.block.ms", 0),
            client_id=str(values["client.id"]),
            retry_backoff_ms=_int(values, "retry.backoff.ms", 0),
            enable_idempotence=idempotent,
            compression=_codec(values["compression.type"]),
            security=ClientSecurity.from_config(config),
        )
        if parsed.delivery_timeout_ms < parsed.linger_ms + parsed.request_timeout_ms:
            msg = "delivery.timeout.ms must be at least linger.ms + request.timeout.ms"
            raise ValueError(msg)
        return parsed


def _int(values: Mapping[str, Any], key: str, minimum: int) -> int:
    raw = values[key]
    try:
        if isinstance(raw, bool):
            raise TypeError
        value = int(raw)
    except (TypeError, ValueError):
        msg = f"{key} must be an integer, got {raw!r}"
        raise ValueError(msg) from None
    if value < minimum:
        msg = f"{key} must be >= {minimum}, got {value}"
        raise ValueError(msg)
    return value


def _codec(raw: Any) -> Codec:
    try:
        return codec_by_name(str(raw))
    except UnsupportedCompressionError as exc:
        raise ValueError(str(exc)) from None


def _bool(values: Mapping[str, Any], key: str) -> bool:
    raw = values[key]
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    msg = f"{key} must be true or false, got {raw!r}"
    raise ValueError(msg)


def _acks(raw: Any) -> int:
    text = str(raw).lower()
    if text in ("all", "-1"):
        return -1
    if text == "1":
        return 1
    if text == "0":
        msg = "acks=0 is not supported by this client (use 1 or all)"
        raise ValueError(msg)
    msg = f"acks must be all, -1 or 1, got {raw!r}"
    raise ValueError(msg)


def _to_bytes(value: object, what: str) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    msg = f"{what} must be bytes, str or None, got {type(value).__name__}"
    raise TypeError(msg)


HeadersArg = Mapping[str, bytes | str | None] | Sequence[tuple[str, bytes | str | None]] | None


def _headers(headers: HeadersArg) -> list[tuple[str, bytes | None]]:
    if headers is None:
        return []
    items: Iterable[tuple[object, object]] = (
        headers.items() if isinstance(headers, Mapping) else headers
    )
    out: list[tuple[str, bytes | None]] = []
    for key, value in items:
        if not isinstance(key, str):
            msg = f"header keys must be str, got {type(key).__name__}"
            raise TypeError(msg)
        out.append((key, _to_bytes(value, f"header {key!r}")))
    return out


class TransactionalProducer:
    """A Kafka producer with transactions, share acknowledgements in transactions and 2PC.

    Without ``transactional.id`` it is an idempotent (``enable.idempotence=true``, the
    default) or plain producer and only ``send``/``flush``/``close`` apply.  ``client`` lets a
    caller share a ``KafkaClient`` (the producer then does not close it); tests pass a fake.
    """

    def __init__(self, config: Mapping[str, Any], *, client: ProducerClient | None = None) -> None:
        self.config = ProducerConfig.parse(config)
        cfg = self.config
        self._owns_client = client is None
        self._client: ProducerClient = client or KafkaClient(
            cfg.bootstrap_servers,
            client_id=cfg.client_id,
            request_timeout_ms=cfg.request_timeout_ms,
            retry_backoff_ms=cfg.retry_backoff_ms,
            security=cfg.security,
        )
        self._txn = TransactionManager(cfg.transactional_id, two_phase_commit=cfg.two_phase_commit)
        self._acc = RecordAccumulator(cfg.batch_size, cfg.linger_ms)
        self._partitioner = StickyPartitioner(cfg.batch_size)
        self._sender = Sender(
            self._client,
            self._acc,
            self._txn,
            SenderConfig(
                transactional_id=cfg.transactional_id,
                idempotent=cfg.enable_idempotence,
                acks=cfg.acks,
                request_timeout_ms=cfg.request_timeout_ms,
                delivery_timeout_ms=cfg.delivery_timeout_ms,
                retry_backoff_ms=cfg.retry_backoff_ms,
                transaction_timeout_ms=cfg.transaction_timeout_ms,
                two_phase_commit=cfg.two_phase_commit,
                compression=int(cfg.compression),
            ),
        )
        # Serialises transaction control and the state check + append of ``send``.
        self._lock = threading.RLock()
        self._closed = False
        self._sender.start(f"sharetxn-producer-sender-{cfg.client_id}")

    # -- introspection ----------------------------------------------------------------------

    @property
    def transactional_id(self) -> str | None:
        return self.config.transactional_id

    @property
    def transaction_state(self) -> TxnState:
        """The client-side transaction state (UNINITIALIZED ... FATAL_ERROR)."""
        return self._txn.state

    @property
    def producer_id_and_epoch(self) -> tuple[int, int]:
        return self._txn.producer_id_and_epoch

    # -- sending ----------------------------------------------------------------------------

    def send(
        self,
        topic: str,
        value: bytes | str | None,
        key: bytes | str | None = None,
        partition: int | None = None,
        headers: HeadersArg = None,
    ) -> Future[RecordMetadata]:
        """Queue one record; the future resolves with its offset once the leader wrote it.

        Raises at once (not through the future) for misuse, bad arguments, or when the
        topic's metadata cannot be had within ``max.block.ms``; in a transaction that last
        case makes the transaction abortable, since the record is not part of it.
        """
        self._ensure_open()
        self._txn.check(Operation.SEND)
        key_bytes = _to_bytes(key, "key")
        value_bytes = _to_bytes(value, "value")
        record_headers = _headers(headers)
        chosen = self._choose_partition(topic, key_bytes, value_bytes, record_headers, partition)
        with self._lock:
            self._ensure_open()
            self._txn.check(Operation.SEND)
            return self._acc.append(
                TopicPartition(topic, chosen),
                key_bytes,
                value_bytes,
                record_headers,
                int(time.time() * 1000),
            )

    def send_many(self, topic: str, records: Iterable[tuple[bytes | None, bytes | None]]) -> int:
        """Queue ``(key, value)`` records of a transaction without a future each; returns
        how many.

        For bulk writes inside a transaction: a record that cannot be written makes the
        transaction abortable, so ``prepare_transaction``/``commit_transaction`` raise and
        nothing of it becomes visible.  Partitions are chosen as by ``send``.
        """
        self._ensure_open()
        if self.config.transactional_id is None:
            msg = "send_many needs a transactional producer (its errors surface at commit)"
            raise IllegalStateError(msg)
        now_ms = int(time.time() * 1000)
        count = 0
        append, choose = self._acc.append_untracked, self._choose_partition
        partitions: dict[int, TopicPartition] = {}
        with self._lock:  # one state check for the whole call: prepare waits for it
            self._ensure_open()
            self._txn.check(Operation.SEND)
            for key, value in records:
                chosen = choose(topic, key, value, [], None)
                tp = partitions.get(chosen)
                if tp is None:
                    tp = partitions[chosen] = TopicPartition(topic, chosen)
                append(tp, key, value, [], now_ms)
                count += 1
        return count

    def _choose_partition(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, bytes | None]],
        partition: int | None,
    ) -> int:
        # A known topic needs no retry machinery per record (the hot path of a batch).
        known = getattr(self._client, "topics", None)
        meta = known.get(topic) if isinstance(known, dict) else None
        if meta is None:
            try:
                meta = self._client.call(
                    lambda: self._client.topic(topic, auto_create=True),
                    timeout_ms=self.config.max_block_ms,
                )
            except KafkaProtocolError as exc:
                self._txn.abortable_error(exc)
                raise
        count = len(meta.partitions)
        if partition is not None:
            if not 0 <= partition < count:
                msg = f"partition {partition} is out of range: topic {topic!r} has {count}"
                raise ValueError(msg)
            return partition
        if key is not None:
            return partition_for_key(key, count)
        size = record_size(key, value, headers)
        return self._partitioner.partition(topic, count, size)

    def flush(self, timeout_s: float | None = None) -> None:
        """Wait until every record sent so far is written or failed (its future is done).

        Raises ``RequestTimedOutError`` (retriable) if records are still pending at the timeout.
        """
        deadline = None if timeout_s is None else self._acc.clock() + timeout_s
        batches = self._acc.begin_flush()
        try:
            pending = self._acc.await_batches(batches, deadline)
        finally:
            self._acc.end_flush()
        if pending:
            msg = f"flush did not finish within {timeout_s}s"
            raise RequestTimedOutError(msg, pending_batches=pending, **self._txn.describe())

    # -- transactions -----------------------------------------------------------------------

    def init_transactions(
        self, keep_prepared_txn: bool = False, timeout_s: float | None = None
    ) -> None:
        """InitProducerId for ``transactional.id``: fences older producers of the id.

        Without ``keep_prepared_txn`` an open transaction of the id is aborted (after the
        coordinator fenced its producer).  With it (KIP-939) an ongoing transaction is kept
        and this producer enters PREPARED with that transaction's (producer id, epoch), so
        ``commit_transaction``, ``abort_transaction`` or ``complete_transaction`` can finish
        it; with none ongoing the producer is READY.  A timeout leaves the producer
        UNINITIALIZED, so the call can be repeated.
        """
        self._initialize(keep_prepared_txn, self._deadline(timeout_s))

    def _initialize(self, keep_prepared_txn: bool, deadline: float) -> tuple[int, int] | None:
        """Run init; returns the (producer id, epoch) of a kept ongoing transaction, if any."""
        with self._lock:
            self._ensure_open()
            self._txn.check(Operation.INIT_TRANSACTIONS)
            self._txn.transition(TxnState.INITIALIZING)
            try:
                resp = self._init_producer_id(keep_prepared_txn, deadline)
            except RetriableError:
                self._txn.transition(TxnState.UNINITIALIZED)
                raise
            except KafkaProtocolError as exc:
                self._txn.fatal_error(exc)
                raise
            ongoing_pid = int(getattr(resp, "ongoing_txn_producer_id", NO_PRODUCER_ID))
            ongoing_epoch = int(getattr(resp, "ongoing_txn_producer_epoch", NO_PRODUCER_EPOCH))
            if keep_prepared_txn and ongoing_pid != NO_PRODUCER_ID:
                self._txn.set_producer_id_and_epoch(ongoing_pid, ongoing_epoch)
                self._txn.mark_started_elsewhere()
                self._txn.request_epoch_bump()  # its sequence numbers are not known here
                self._txn.transition(TxnState.PREPARED)
                return ongoing_pid, ongoing_epoch
            self._txn.set_producer_id_and_epoch(int(resp.producer_id), int(resp.producer_epoch))
            self._txn.transition(TxnState.READY)
            return None

    def _init_producer_id(
        self, keep_prepared_txn: bool, deadline: float, current: tuple[int, int] | None = None
    ) -> Any:
        cfg = self.config
        pid, epoch = current if current is not None else (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        body = {
            "transactional_id": cfg.transactional_id,
            "transaction_timeout": cfg.transaction_timeout_ms,
            "producer_id": pid,
            "producer_epoch": epoch,
            "enable2_pc": cfg.two_phase_commit,
            "keep_prepared_txn": keep_prepared_txn,
        }
        if cfg.two_phase_commit or keep_prepared_txn:
            min_version = 6
        elif current is not None:
            min_version = 3  # KIP-360: bump the epoch of a known producer id
        else:
            min_version = 0
        return self._coordinator_request(
            API_INIT_PRODUCER_ID, body, deadline, min_version=min_version
        )

    def begin_transaction(self) -> None:
        """Start a transaction (local only; the coordinator learns of it with the first add)."""
        with self._lock:
            self._ensure_open()
            self._txn.check(Operation.BEGIN_TRANSACTION)
            self._txn.clear_transaction()
            self._txn.transition(TxnState.IN_TRANSACTION)

    def send_share_acks_to_transaction(
        self,
        acks: ShareAcknowledgements,
        group_metadata: ShareGroupMetadata,
        timeout_s: float | None = None,
    ) -> None:
        """Make share acknowledgements part of the open transaction (KIP-1289).

        AddShareAcksToTxn (the coordinator adds each pair's ``__share_group_state``
        partition), then TxnShareAcknowledge to the leader of each data partition, grouped
        by leader, with the member id of ``group_metadata``; the records become TX_PENDING
        until the transaction ends.  INVALID_RECORD_STATE / INVALID_TXN_STATE (or an unknown
        outcome at the deadline) make the transaction abortable; PRODUCER_FENCED is fatal.
        A retriable failure of AddShareAcksToTxn at the deadline changes nothing, so the
        call may be repeated.
        """
        if acks.group_id != group_metadata.group_id:
            msg = (
                f"acknowledgements of group {acks.group_id!r} cannot be sent with the metadata "
                f"of group {group_metadata.group_id!r}"
            )
            raise ValueError(msg)
        batches = {tp: bs for tp, bs in acks.batches.items() if bs}
        for tp, bs in batches.items():
            for b in bs:
                if b.first_offset > b.last_offset or b.first_offset < 0:
                    msg = f"bad acknowledgement range {b.first_offset}..{b.last_offset} on {tp}"
                    raise ValueError(msg)
        deadline = self._deadline(timeout_s)
        with self._lock:
            self._ensure_open()
            self._txn.check(Operation.SEND_SHARE_ACKS)
            # KIP-1289 "clients fail fast": nothing is sent and the transaction is unchanged.
            self._client.require_kip1289(API_ADD_SHARE_ACKS_TO_TXN)
            self._client.require_kip1289(API_TXN_SHARE_ACKNOWLEDGE)
            if not batches:
                return
            tid = self.config.transactional_id
            pid, epoch = self._txn.producer_id_and_epoch
            topics: dict[str, list[int]] = {}
            for tp in sorted(batches):
                topics.setdefault(tp.topic, []).append(tp.partition)
            body = {
                "transactional_id": tid,
                "producer_id": pid,
                "producer_epoch": epoch,
                "group_id": group_metadata.group_id,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
            }
            try:
                self._coordinator_request(
                    API_ADD_SHARE_ACKS_TO_TXN, body, deadline, group_id=group_metadata.group_id
                )
            except RetriableError:
                raise
            except KafkaProtocolError as exc:
                self._on_coordinator_error(exc, _COORDINATOR_FATAL)
                raise
            self._txn.share_acks_added()
            try:
                self._txn_share_acknowledge(batches, group_metadata, deadline)
            except KafkaProtocolError as exc:
                # A retriable error here means the outcome is unknown: abort to be safe.
                self._on_coordinator_error(exc, FATAL_CODES)
                raise

    def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, int],
        group_metadata: ConsumerGroupMetadata | str,
        timeout_s: float | None = None,
    ) -> None:
        """Commit consumer-group offsets with the open transaction (KIP-98, KIP-447).

        AddOffsetsToTxn (the coordinator adds the group's ``__consumer_offsets`` partition),
        then TxnOffsetCommit to the group coordinator: the offsets become the group's
        committed offsets when the transaction commits and are discarded when it aborts.
        ``offsets`` are the next offsets to read, as Kafka's clients commit them.  A stale
        generation or member (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID)
        makes the transaction abortable; PRODUCER_FENCED is fatal.
        """
        meta = (
            ConsumerGroupMetadata(group_metadata)
            if isinstance(group_metadata, str)
            else group_metadata
        )
        if not meta.group_id:
            msg = "send_offsets_to_transaction needs a group id"
            raise ValueError(msg)
        for tp, offset in offsets.items():
            if offset < 0:
                msg = f"bad offset {offset} for {tp}"
                raise ValueError(msg)
        deadline = self._deadline(timeout_s)
        with self._lock:
            self._ensure_open()
            self._txn.check(Operation.SEND_OFFSETS)
            if not offsets:
                return
            tid = self.config.transactional_id
            pid, epoch = self._txn.producer_id_and_epoch
            body = {
                "transactional_id": tid,
                "producer_id": pid,
                "producer_epoch": epoch,
                "group_id": meta.group_id,
            }
            try:
                self._coordinator_request(
                    API_ADD_OFFSETS_TO_TXN, body, deadline, group_id=meta.group_id
                )
            except RetriableError:
                raise
            except KafkaProtocolError as exc:
                self._on_coordinator_error(exc, _COORDINATOR_FATAL)
                raise
            self._txn.share_acks_added()  # the coordinator now has a partition of this txn
            try:
                self._txn_offset_commit(dict(offsets), meta, tid, pid, epoch, deadline)
            except KafkaProtocolError as exc:
                self._on_coordinator_error(exc, FATAL_CODES)
                raise

    def _txn_offset_commit(
        self,
        offsets: dict[TopicPartition, int],
        meta: ConsumerGroupMetadata,
        tid: str | None,
        pid: int,
        epoch: int,
        deadline: float,
    ) -> None:
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp in sorted(offsets):
            topics.setdefault(tp.topic, []).append(
                {
                    "partition_index": tp.partition,
                    "committed_offset": offsets[tp],
                    "committed_leader_epoch": -1,
                    "committed_metadata": "",
                }
            )
        body = {
            "transactional_id": tid,
            "group_id": meta.group_id,
            "producer_id": pid,
            "producer_epoch": epoch,
            "generation_id": meta.generation_id,
            "member_id": meta.member_id,
            "group_instance_id": meta.group_instance_id,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        }

        def attempt() -> None:
            node = self._client.coordinator_for(KEY_TYPE_GROUP, meta.group_id)
            resp = self._client.send(node, API_TXN_OFFSET_COMMIT, body)
            for t in resp.topics:
                for p in t.partitions:
                    code = int(p.error_code)
                    if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
                        self._client.forget_coordinator(KEY_TYPE_GROUP, meta.group_id)
                    if code != ErrorCode.NONE:
                        raise fenced_or_typed(
                            code,
                            None,
                            transactional_id=tid,
                            group_id=meta.group_id,
                            topic=t.name,
                            partition=int(p.partition_index),
                        )

        self._client.call(attempt, timeout_ms=_remaining_ms(deadline))

    def _txn_share_acknowledge(
        self,
        batches: dict[TopicPartition, tuple[ShareAckBatch, ...]],
        group_metadata: ShareGroupMetadata,
        deadline: float,
    ) -> None:
        remaining = dict(batches)
        tid = self.config.transactional_id
        pid, epoch = self._txn.producer_id_and_epoch
        ids = {
            "transactional_id": tid,
            "producer_id": pid,
            "producer_epoch": epoch,
            "group_id": group_metadata.group_id,
            "member_id": group_metadata.member_id,
        }

        def attempt() -> None:
            by_leader: dict[int, list[TopicPartition]] = {}
            for tp in sorted(remaining):
                by_leader.setdefault(self._client.leader_for(tp), []).append(tp)
            retriable: KafkaProtocolError | None = None
            for leader, tps in by_leader.items():
                names: dict[Any, str] = {}
                per_topic: dict[Any, list[dict[str, Any]]] = {}
                for tp in tps:
                    topic_id = self._client.topic(tp.topic).topic_id
                    names[topic_id] = tp.topic
                    per_topic.setdefault(topic_id, []).append(
                        {
                            "partition": tp.partition,
                            "acknowledgement_batches": [
                                {
                                    "first_offset": b.first_offset,
                                    "last_offset": b.last_offset,
                                    "acknowledge_type": int(b.ack_type),
                                }
                                for b in remaining[tp]
                            ],
                        }
                    )
                body = {
                    "group_id": group_metadata.group_id,
                    "transactional_id": tid,
                    "producer_id": pid,
                    "producer_epoch": epoch,
                    "member_id": group_metadata.member_id,
                    "topics": [
                        {"topic_id": topic_id, "partitions": parts}
                        for topic_id, parts in per_topic.items()
                    ],
                }
                try:
                    resp = self._client.send(leader, API_TXN_SHARE_ACKNOWLEDGE, body)
                except (NetworkError, RequestTimedOutError):
                    # Unanswered: it may still stage these acks later, possibly in the next
                    # transaction of this epoch; the transaction ends with an epoch bump.
                    self._txn.request_epoch_bump()
                    raise
                worst: KafkaProtocolError | None = None
                for topic in resp.topics:
                    name = names.get(topic.topic_id)
                    for part in topic.partitions:
                        if name is None:
                            continue
                        tp = TopicPartition(name, int(part.partition))
                        code = int(part.error_code)
                        if code == ErrorCode.NONE:
                            remaining.pop(tp, None)
                            continue
                        exc = fenced_or_typed(
                            code, part.error_message, topic=tp.topic, partition=tp.partition, **ids
                        )
                        if isinstance(exc, RetriableError) and code not in ABORTABLE_CODES:
                            retriable = exc
                        elif worst is None or (
                            code in FATAL_CODES and worst.code not in FATAL_CODES
                        ):
                            worst = exc
                if worst is not None:
                    raise worst
            if remaining:
                if retriable is None:
                    missing = ", ".join(str(tp) for tp in sorted(remaining))
                    retriable = NetworkError(f"no TxnShareAcknowledge result for {missing}", **ids)
                with contextlib.suppress(KafkaProtocolError, OSError):
                    self._client.refresh_metadata(sorted({tp.topic for tp in remaining}))
                raise retriable

        self._client.call(attempt, timeout_ms=_remaining_ms(deadline))

    def prepare_transaction(self, timeout_s: float | None = None) -> PreparedTxnState:
        """Phase one of 2PC (KIP-939): flush, then allow only commit/abort/complete.

        Needs ``transaction.two.phase.commit.enable=true`` (the coordinator then never
        times the transaction out).  Store ``str(state)`` with your own decision.  Once the
        transaction is completed the producer moves to a new epoch, so a later prepared
        transaction of this producer has a different state.
        """
        deadline = self._deadline(timeout_s)
        with self._lock:
            self._ensure_open()
            self._txn.check(Operation.PREPARE_TRANSACTION)
        while True:
            # Flush without the lock (a delivery callback may call send); then, under the
            # lock that send takes too, make sure nothing was added meanwhile.
            self._flush_until(deadline)
            with self._lock:
                self._ensure_open()
                self._txn.check(Operation.PREPARE_TRANSACTION)
                if self._acc.has_incomplete():
                    continue
                self._txn.transition(TxnState.PREPARED)
                # Under transaction version 0/1 EndTxn keeps the epoch, so two transactions of
                # one session would share (pid, epoch); a new epoch after this one completes
                # makes every PreparedTxnState name exactly one transaction.
                self._txn.request_epoch_bump()
                pid, epoch = self._txn.producer_id_and_epoch
                tid = self.config.transactional_id
                assert tid is not None
                return PreparedTxnState(tid, pid, epoch)

    def commit_transaction(self, timeout_s: float | None = None) -> None:
        """Flush and commit.  On a retriable timeout the producer stays COMMITTING: call again.

        A record that failed (or the transaction being fenced) raises its error instead: the
        transaction must then be aborted (or, after a fatal error, the producer closed).
        """
        deadline = self._deadline(timeout_s)
        with self._lock:
            self._ensure_open()
            self._txn.check(Operation.COMMIT_TRANSACTION)
            if self._txn.state is not TxnState.COMMITTING:
                self._txn.transition(TxnState.COMMITTING)
        # COMMITTING refuses new sends; flush without the lock (callbacks may call send).
        self._flush_until(deadline)
        with self._lock:
            self._ensure_open()
            self._txn.raise_if_error()
            if self._txn.state is not TxnState.COMMITTING:
                return  # a concurrent commit_transaction finished it
            try:
                self._end_transaction(commit=True, deadline=deadline)
            except RetriableError:
                raise
            except KafkaProtocolError as exc:
                self._on_coordinator_error(exc, _COORDINATOR_FATAL)
                raise
            self._txn.clear_transaction()
            self._txn.transition(TxnState.READY)

    def abort_transaction(self, timeout_s: float | None = None) -> None:
        """Abort: unsent records fail with TransactionAbortedError, sent ones are discarded
        by the abort marker, share acks revert.  On a retriable timeout the producer stays
        ABORTING: call again.
        """
        self._ensure_open()
        self._abort(self._deadline(timeout_s))

    def _abort(self, deadline: float) -> None:
        with self._lock:
            self._txn.check(Operation.ABORT_TRANSACTION)
            cause = self._txn.last_error
            if self._txn.state is not TxnState.ABORTING:
                self._txn.transition(TxnState.ABORTING)
            aborted = TransactionAbortedError(
                "record not sent: its transaction was aborted",
                transactional_id=self.config.transactional_id,
                cause=str(cause) if cause is not None else "",
            )
            for batch in self._acc.take_undrained():
                self._acc.fail(batch, aborted)
        self._flush_until(deadline)  # the batch in flight, if any
        with self._lock:
            if self._txn.state is not TxnState.ABORTING:
                self._txn.raise_if_error()
                return  # a concurrent abort_transaction finished it
            try:
                self._end_transaction(commit=False, deadline=deadline)
            except RetriableError:
                raise
            except KafkaProtocolError as exc:
                self._txn.fatal_error(exc)
                raise
            self._txn.clear_transaction()
            self._txn.transition(TxnState.READY)

    def complete_transaction(self, state: PreparedTxnState, timeout_s: float | None = None) -> bool:
        """KIP-939: commit the prepared transaction if ``state`` is it, else abort it.

        Returns True if it committed.  Needs the producer in PREPARED (after
        ``prepare_transaction``, ``init_transactions(keep_prepared_txn=True)`` or ``resume``).
        """
        with self._lock:
            self._ensure_open()
            self._txn.check(Operation.COMPLETE_TRANSACTION)
            matches = (
                state.transactional_id == self.config.transactional_id
                and (state.producer_id, state.epoch) == self._txn.producer_id_and_epoch
            )
        if matches:
            self.commit_transaction(timeout_s)
        else:
            log.info(
                "aborting prepared transaction of %r: %s is not the prepared %s",
                self.config.transactional_id,
                state,
                self._txn.producer_id_and_epoch,
            )
            self.abort_transaction(timeout_s)
        return matches

    @classmethod
    def resume(
        cls,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        config: Mapping[str, Any],
        *,
        timeout_s: float | None = None,
    ) -> TransactionalProducer:
        """KIP-1310: take over the prepared transaction (``producer_id``, ``epoch``) of an id.

        InitProducerId with keep_prepared_txn and 2PC enabled; the returned producer is
        PREPARED, so ``commit_transaction``/``abort_transaction`` finish the transaction.
        Raises ``NoPreparedTransactionError`` if the id has no ongoing transaction any more
        (it was completed meanwhile) and ``DifferentPreparedTransactionError`` if the
        ongoing one is another transaction (the prepared one was fenced meanwhile).
        """
        settings = dict(config)
        configured = settings.get("transactional.id")
        if configured is not None and configured != transactional_id:
            msg = f"config transactional.id {configured!r} differs from {transactional_id!r}"
            raise ValueError(msg)
        settings["transactional.id"] = transactional_id
        settings["transaction.two.phase.commit.enable"] = True
        producer = cls(settings)
        try:
            found = producer._initialize(True, producer._deadline(timeout_s))
            if found is None:
                raise NoPreparedTransactionError(
                    transactional_id=transactional_id,
                    producer_id=producer_id,
                    epoch=epoch,
                    found_producer_id=producer._txn.producer_id_and_epoch[0],
                    found_epoch=producer._txn.producer_id_and_epoch[1],
                )
            if found != (producer_id, epoch):
                raise DifferentPreparedTransactionError(
                    transactional_id=transactional_id,
                    producer_id=producer_id,
                    epoch=epoch,
                    found_producer_id=found[0],
                    found_epoch=found[1],
                )
        except BaseException:
            producer.close()
            raise
        return producer

    # -- closing ----------------------------------------------------------------------------

    def close(self, timeout_s: float | None = None) -> None:
        """Send what is queued, then stop.  An open (not prepared) transaction is aborted,
        best effort, as the Java client does; a prepared one is left for its coordinator.
        """
        with self._lock:
            if self._closed:
                return
        deadline = self._deadline(timeout_s)
        if self._txn.is_transactional and self._txn.state in (
            TxnState.IN_TRANSACTION,
            TxnState.ABORTABLE_ERROR,
        ):
            try:
                self._abort(deadline)
            except Exception as exc:
                log.warning("abort on close of %r failed: %s", self.transactional_id, exc)
        with self._lock:
            if self._is_closed():  # a concurrent close won
                return
            self._closed = True
        self._acc.close()
        if not self._sender.join(max(deadline - time.monotonic(), 0.0)):
            self._sender.force_close()
        self._acc.fail_incomplete(ClosedError("the producer was closed before the record was sent"))
        if self._owns_client:
            if self._sender.join(0):
                self._client.close()
            else:
                # The sender is inside a request; closing would wait for the socket's lock.
                threading.Thread(target=self._client.close, daemon=True).start()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Commit an open transaction on success, abort it on error, then close."""
        try:
            self._finish_on_exit(exc)
        finally:
            self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Self]:
        """``with producer.transaction():`` begins, then commits on success or aborts on error.

        A transaction prepared inside the block is left prepared for its coordinator.
        """
        self.begin_transaction()
        try:
            yield self
        except BaseException as exc:
            self._finish_on_exit(exc)
            raise
        self._finish_on_exit(None)

    def _finish_on_exit(self, exc: BaseException | None) -> None:
        if not self._txn.is_transactional or self._closed:
            return
        state = self._txn.state
        if exc is None:
            if state is TxnState.IN_TRANSACTION:
                self.commit_transaction()
            return
        if state in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR):
            try:
                self.abort_transaction()
            except Exception as abort_exc:
                log.warning("abort after %r failed: %s", exc, abort_exc)

    # -- helpers ----------------------------------------------------------------------------

    def _is_closed(self) -> bool:
        return self._closed

    def _ensure_open(self) -> None:
        if self._closed:
            msg = "the producer is closed"
            raise ClosedError(msg)

    def _deadline(self, timeout_s: float | None) -> float:
        seconds = self.config.max_block_ms / 1000 if timeout_s is None else timeout_s
        return time.monotonic() + seconds

    def _flush_until(self, deadline: float) -> None:
        self.flush(max(deadline - time.monotonic(), 0.0))

    def _end_transaction(self, *, commit: bool, deadline: float) -> None:
        """EndTxn if the coordinator knows the transaction, then a new epoch if one is due.

        The epoch is bumped (InitProducerId with the current id and epoch, KIP-360) when a
        batch's fate was unknown, or when the transaction was taken over from another
        process (keep_prepared_txn / resume): either way the broker's sequence numbers for
        this epoch are unknown here, and a new epoch restarts them at 0.  It is bumped too
        when an EndTxn or TxnShareAcknowledge of this transaction went unanswered: that copy
        may still reach the broker later, and under transaction version 0/1 the epoch stays
        across transactions, so it would commit, abort or stage acknowledgements in the *next*
        transaction (KAFKA-17754).  The EndTxn itself is re-sent unchanged until it gets a
        definite answer (CONCURRENT_TRANSACTIONS is retried); the next transaction can only
        begin after that answer and the bump.
        """
        if self._txn.transaction_started:
            self._end_txn(commit=commit, deadline=deadline)
            # The EndTxn has its definite answer: a call repeated after the bump below timed
            # out must not send it again (the epoch may have moved on meanwhile).
            self._txn.clear_transaction()
        if self._txn.needs_epoch_bump:
            resp = self._init_producer_id(False, deadline, current=self._txn.producer_id_and_epoch)
            self._txn.set_producer_id_and_epoch(int(resp.producer_id), int(resp.producer_epoch))

    def _end_txn(self, *, commit: bool, deadline: float) -> None:
        pid, epoch = self._txn.producer_id_and_epoch
        body = {
            "transactional_id": self.config.transactional_id,
            "producer_id": pid,
            "producer_epoch": epoch,
            "committed": commit,
        }
        self._coordinator_request(API_END_TXN, body, deadline)

    def _coordinator_request(
        self,
        api_key: int,
        body: Mapping[str, Any],
        deadline: float,
        *,
        min_version: int = 0,
        **extra_ids: Any,
    ) -> Any:
        """One request to the transaction coordinator, retried until ``deadline``."""
        tid = self.config.transactional_id
        assert tid is not None
        ids = {**self._txn.describe(), **extra_ids}

        def attempt() -> Any:
            node = self._client.coordinator_for(KEY_TYPE_TRANSACTION, tid)
            try:
                resp = self._client.send(node, api_key, body, min_version=min_version)
            except (NetworkError, RequestTimedOutError):
                if api_key == API_END_TXN:
                    self._txn.request_epoch_bump()  # this copy may still land (see above)
                raise
            code = int(resp.error_code)
            if code != ErrorCode.NONE:
                if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
                    self._client.forget_coordinator(KEY_TYPE_TRANSACTION, tid)
                raise fenced_or_typed(code, None, api_key=api_key, **ids)
            return resp

        return self._client.call(attempt, timeout_ms=_remaining_ms(deadline))

    def _on_coordinator_error(
        self, exc: KafkaProtocolError, fatal_codes: frozenset[ErrorCode]
    ) -> None:
        if exc.code in fatal_codes:
            self._txn.fatal_error(exc)
        else:
            self._txn.abortable_error(exc)


def _remaining_ms(deadline: float) -> int:
    return max(int((deadline - time.monotonic()) * 1000), 1)
