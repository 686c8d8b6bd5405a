"""The producer's record path: configuration, partition choice, the accumulator and sender.

``ProducerCore`` is what every producer of this package shares: ``send`` and
``send_many`` choose a partition and append to the accumulator, the background sender
(``producer/produce/sender.py``) produces the batches with idempotent sequences, ``flush``
waits for them.  ``TransactionalProducer`` adds transaction control on top.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from typing import Any

from producer.produce.accumulator import (
    RecordAccumulator,
    RecordMetadata,
    StickyPartitioner,
    partition_for_key,
    record_size,
)
from producer.produce.producer_config import HeadersArg, ProducerConfig
from producer.produce.sender import ProducerClient, Sender, SenderConfig
from producer.produce.txn_manager import IllegalStateError, Operation, TransactionManager
from producer.protocol.client import KafkaClient
from txn.errors import ClosedError, KafkaProtocolError, RequestTimedOutError
from txn.ids import TopicPartition

__all__ = ["ProducerCore"]

log = logging.getLogger("sharetxn.producer")


class ProducerCore:
    """Records in, batches out: the part of a producer below its transactions."""

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
        # Whether InitProducerId carries Enable2Pc (None: not decided yet; see
        # ``_wants_enable2pc``), and whether this producer took its transaction over by
        # stored ids (``resume`` without KeepPreparedTxn).
        self._enable2pc: bool | None = None
        self._resumed_by_stored_ids = False
        self._sender.start(f"sharetxn-producer-sender-{cfg.client_id}")

    # -- sending ---------------------------------------------------------------------------

    def send(
        self,
        topic: str,
        value: bytes | str | None,
        key: bytes | str | None = None,
        partition: int | None = None,
        headers: HeadersArg = None,
        timestamp_ms: int | None = None,
    ) -> Future[RecordMetadata]:
        """Queue one record; the future resolves with its offset once the leader wrote it.

        ``timestamp_ms``: the record's CreateTime (Kafka's ``ProducerRecord`` timestamp;
        None: now).  A topic with ``message.timestamp.type=LogAppendTime`` replaces it.

        Raises at once (not through the future) for misuse, bad arguments, or when the
        topic's metadata cannot be had within ``max.block.ms``; in a transaction that last
        case makes the transaction abortable, since the record is not part of it.
        """
        self._check_allowed(Operation.SEND)
        if timestamp_ms is not None and (
            isinstance(timestamp_ms, bool) or not isinstance(timestamp_ms, int) or timestamp_ms < 0
        ):
            # Kafka's ProducerRecord refuses it so.
            msg = (
                f"Invalid timestamp: {timestamp_ms}. "
                "Timestamp should always be non-negative or null."
            )
            raise ValueError(msg)
        key_bytes = _to_bytes(key, "key")
        value_bytes = _to_bytes(value, "value")
        record_headers = _headers(headers)
        chosen = self._choose_partition(topic, key_bytes, value_bytes, record_headers, partition)
        with self._lock:
            self._check_allowed(Operation.SEND)
            return self._acc.append(
                TopicPartition(topic, chosen),
                key_bytes,
                value_bytes,
                record_headers,
                int(time.time() * 1000),
                timestamp_ms,
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
            self._check_allowed(Operation.SEND)
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

    # -- helpers ----------------------------------------------------------------------------

    def _is_closed(self) -> bool:
        return self._closed

    def _ensure_open(self) -> None:
        if self._closed:
            msg = "the producer is closed"
            raise ClosedError(msg)

    def _check_allowed(self, operation: Operation) -> None:
        """Raise unless the producer is open and ``operation`` allowed in the current state."""
        self._ensure_open()
        self._txn.check(operation)

    def _deadline(self, timeout_s: float | None) -> float:
        seconds = self.config.max_block_ms / 1000 if timeout_s is None else timeout_s
        return time.monotonic() + seconds

    def _flush_until(self, deadline: float) -> None:
        self.flush(max(deadline - time.monotonic(), 0.0))

    def _shutdown(self, deadline: float) -> None:
        """Stop the sender (waiting until ``deadline``), fail what is left, close the client."""
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


def _to_bytes(value: object, what: str) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    msg = f"{what} must be bytes, str or None, got {type(value).__name__}"
    raise TypeError(msg)


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
