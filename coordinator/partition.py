"""One topic partition: appends with idempotence and transactions, LSO, fetch.

The partition is sans-IO: it owns a ``PartitionLog`` from the storage seam and
is driven by the broker core.  It keeps, rebuilt from the log on start:

* producer state (``ProducerStateManager``) for duplicate and order checks;
* the open transactions (producer id -> first offset), whose minimum is the
  last stable offset (LSO);
* the aborted-transaction index ``(producer id, first offset, marker offset)``
  that a read_committed fetch returns so the client can drop aborted records.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable
from dataclasses import dataclass

from coordinator.log.cleaner import dirty_ratio
from coordinator.log.recompress import recompress
from coordinator.log.segments import RetentionPolicy, retention_start_offset
from coordinator.log.storage import PartitionLog
from coordinator.log.timestamps import (
    TimestampPolicy,
    offset_of_max,
    record_at_or_after,
    stamp,
    validate_batch,
)
from coordinator.producer_state import (
    ProducerEntry,
    ProducerStateManager,
    delete_snapshots_below,
    load_snapshot,
    write_snapshot,
)
from txn.batch import (
    BatchFormatError,
    BatchHeader,
    ControlType,
    build_control_batch,
    control_coordinator_epoch,
    control_type_of,
    crc_ok,
    iter_batches,
    parse_header,
)
from txn.compression import DecompressedTooLargeError, decompressed_limit
from txn.errors import ErrorCode, KafkaProtocolError, SharetxnError
from txn.ids import TopicPartition
from txn.limits import LONG_MAX

log = logging.getLogger("sharetxn.partition")

TxnVerifier = Callable[[str, int, int, TopicPartition], ErrorCode]
"""(transactional id, producer id, epoch, partition) -> error of the KIP-890 verify-only check."""
TxnProducerCheck = Callable[[int], bool]
"""producer id -> whether it was issued to a transactional id (not an idempotent producer's)."""


@dataclass(frozen=True, slots=True)
class AppendResult:
    error: ErrorCode
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    # ProduceResponse record_errors: (index of the record in its batch, message)
    record_errors: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # offset of the ABORT marker


@dataclass(frozen=True, slots=True)
class FetchData:
    error: ErrorCode
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    records: bytes
    aborted: tuple[AbortedTxn, ...] | None


class Partition:
    """A partition's log plus the state derived from it."""

    def __init__(
        self,
        tp: TopicPartition,
        log_: PartitionLog,
        max_batch_bytes: int = 1048588,
        *,
        now_ms: int | None = None,
        producer_expiration_ms: int | None = None,
    ) -> None:
        self.tp = tp
        self.log = log_
        self.max_batch_bytes = max_batch_bytes
        # cleanup.policy contains compact: records without a key are refused (Kafka's
        # LogValidator.validateKey); kept current by the broker when configs change.
        self.compacted = False
        # message.timestamp.type and the timestamp bounds; kept current like ``compacted``
        self.timestamps = TimestampPolicy()
        self.producers = ProducerStateManager()
        self._aborted: list[AbortedTxn] = []
        self._aborted_last: list[int] = []
        self._snapshot_offset = -1  # the newest producer-state snapshot's offset
        self._replay(now_ms, producer_expiration_ms)
        self._active_base = self.log.active_segment_base

    # -- derived offsets ------------------------------------------------------------------------

    @property
    def high_watermark(self) -> int:
        return self.log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def last_stable_offset(self) -> int:
        open_txns = self.producers.open_transactions()
        return min(open_txns.values()) if open_txns else self.high_watermark

    def open_transactions(self) -> dict[int, int]:
        """producer id -> first offset of each open transaction on this partition."""
        return self.producers.open_transactions()

    # -- recovery -------------------------------------------------------------------------------

    def _replay(self, now_ms: int | None, expiration_ms: int | None) -> None:
        """Rebuild the state from the log: the producers from the newest snapshot and the
        batches from its offset on (every batch when there is none), the open and aborted
        transactions from every batch (Kafka: the snapshot and the transaction index)."""
        found = load_snapshot(self.log, str(self.tp))
        offset, entries = found if found is not None else (LONG_MAX, [])
        for header, raw in self.log.batches(0):
            if header.base_offset >= offset:
                self._load_producers(entries, now_ms, expiration_ms)
                offset = LONG_MAX
            self._apply(header, raw)
        if offset < LONG_MAX:
            self._load_producers(entries, now_ms, expiration_ms)
        if found is not None:
            self._snapshot_offset = found[0]
        self.take_snapshot()  # at the log end, as Kafka after loading

    def _load_producers(
        self, entries: list[ProducerEntry], now_ms: int | None, expiration_ms: int | None
    ) -> None:
        if now_ms is None or expiration_ms is None:
            self.producers.producers = {e.producer_id: e for e in entries}
        else:
            self.producers.load(entries, now_ms, expiration_ms)

    def take_snapshot(self, offset: int | None = None) -> None:
        """Write the producer state as of ``offset`` (the log end by default) unless a snapshot
        at or past it exists (Kafka's ``takeSnapshot``: on a roll, after loading, on stop)."""
        at = self.high_watermark if offset is None else offset
        if at <= max(self._snapshot_offset, self.log_start_offset):
            return
        if write_snapshot(self.log, at, self.producers.producers.values(), str(self.tp)):
            self._snapshot_offset = at

    def _after_append(self) -> None:
        """Called after an append, before its batch is applied: if the log rolled, snapshot
        the state as of the new segment's base (Kafka's roll)."""
        base = self.log.active_segment_base
        if base != self._active_base:
            self._active_base = base
            self.take_snapshot(base)

    def _apply(self, header: BatchHeader, raw: bytes | bytearray | memoryview) -> None:
        if header.is_control:
            if header.records_count == 0:
                return  # a marker the cleaner emptied: its transaction is gone (as in Kafka)
            ctype = control_type_of(raw, 0, header)
            coordinator_epoch = control_coordinator_epoch(raw, 0, header)
            first = self.producers.on_marker(header, coordinator_epoch)
            if ctype is ControlType.ABORT and first is not None:
                self._aborted.append(AbortedTxn(header.producer_id, first, header.base_offset))
                self._aborted_last.append(header.base_offset)
        elif header.has_producer_id:
            self.producers.on_data_batch(header)

    # -- produce --------------------------------------------------------------------------------

    def append(
        self,
        records: bytes,
        now_ms: int,
        *,
        transactional_id: str | None = None,
        verifier: TxnVerifier | None = None,
        txn_producer: TxnProducerCheck | None = None,
        defer_flush: bool = False,
    ) -> AppendResult:
        """Append a producer's record set (one or more whole batches).

        ``defer_flush``: the flush policy's fsync is left to the caller (the Produce path's
        group commit, ``coordinator.log.group_commit``) where the log can do that.

        A producer id is bound to what it was issued for: a transactional batch must name
        the transactional id whose current (producer id, epoch) it carries and whose ongoing
        transaction holds this partition (``verifier``, on every transactional batch, not only
        the first one as in Kafka); a non-transactional batch may not use a producer id with
        an open transaction here (Kafka's INVALID_TXN_STATE) nor one issued to a transactional
        id (``txn_producer``).
        """
        try:
            batches = iter_batches(records)
        except BatchFormatError as exc:
            return AppendResult(ErrorCode.CORRUPT_MESSAGE, error_message=str(exc))
        if not batches:
            return AppendResult(ErrorCode.CORRUPT_MESSAGE, error_message="empty record set")
        stamped: list[bytes] = []
        for pos, header in batches:
            if header.size > self.max_batch_bytes:
                return AppendResult(
                    ErrorCode.MESSAGE_TOO_LARGE,
                    error_message=f"batch of {header.size} bytes exceeds message.max.bytes",
                )
            if header.is_control:
                return AppendResult(
                    ErrorCode.INVALID_RECORD, error_message="clients may not write control batches"
                )
            if not crc_ok(records, pos, header):
                return AppendResult(ErrorCode.CORRUPT_MESSAGE, error_message="CRC32C mismatch")
            checked = self._validate(records[pos : pos + header.size], header, now_ms)
            if isinstance(checked, AppendResult):
                return checked
            stamped.append(checked)
        size = sum(len(raw) for raw in stamped)
        if size > self.log.config.segment_bytes:
            # Kafka's UnifiedLog.append: a record set must fit in one segment
            return AppendResult(
                ErrorCode.RECORD_LIST_TOO_LARGE,
                error_message=f"Message batch size is {size} bytes in append to partition "
                f"{self.tp}, which exceeds the maximum configured segment size of "
                f"{self.log.config.segment_bytes}.",
            )
        first_offset = append_time = -1
        for raw in stamped:
            result = self._append_one(
                raw,
                parse_header(raw),
                now_ms,
                transactional_id,
                verifier,
                txn_producer,
                defer_flush,
            )
            if result.error is not ErrorCode.NONE:
                return result
            if first_offset < 0:
                first_offset = result.base_offset
            append_time = result.log_append_time_ms
        return AppendResult(ErrorCode.NONE, first_offset, append_time, self.log_start_offset)

    def _validate(self, raw: bytes, header: BatchHeader, now_ms: int) -> bytes | AppendResult:
        """The batch as stored (Kafka's LogValidator: keys, timestamps, restamping), or the
        refusal of its records."""
        try:
            checked = validate_batch(
                raw,
                header,
                now_ms,
                self.timestamps,
                compacted_in=str(self.tp) if self.compacted else None,
                max_bytes=decompressed_limit(self.max_batch_bytes),
            )
        except BatchFormatError as exc:
            return AppendResult(ErrorCode.CORRUPT_MESSAGE, error_message=str(exc))
        if isinstance(checked, bytes):
            return self._recompress(checked)
        if checked.error is ErrorCode.MESSAGE_TOO_LARGE:
            return AppendResult(checked.error, error_message=checked.message)
        return AppendResult(
            checked.error,
            log_start_offset=self.log_start_offset,
            error_message=checked.message,
            record_errors=checked.record_errors,
        )

    def _recompress(self, raw: bytes) -> bytes | AppendResult:
        """The batch in the topic's ``compression.type`` (Kafka's LogValidator), which must
        still fit ``max.message.bytes`` (Kafka checks a recompressed batch's size again)."""
        config = self.log.config
        try:
            out = recompress(
                raw,
                parse_header(raw),
                config.compression,
                decompressed_limit(self.max_batch_bytes),
                config.compression_level,
            )
        except DecompressedTooLargeError as exc:
            return AppendResult(ErrorCode.MESSAGE_TOO_LARGE, error_message=str(exc))
        except (SharetxnError, BatchFormatError) as exc:
            return AppendResult(ErrorCode.CORRUPT_MESSAGE, error_message=str(exc))
        if out is not raw and len(out) > self.max_batch_bytes:
            return AppendResult(
                ErrorCode.MESSAGE_TOO_LARGE,
                error_message=f"Message batch size is {len(out)} bytes in append to partition "
                f"{self.tp} which exceeds the maximum configured size of "
                f"{self.max_batch_bytes}.",
            )
        return out

    def _append_one(
        self,
        raw: bytes,
        header: BatchHeader,
        now_ms: int,
        transactional_id: str | None,
        verifier: TxnVerifier | None,
        txn_producer: TxnProducerCheck | None = None,
        defer_flush: bool = False,
    ) -> AppendResult:
        if header.has_producer_id:
            check = self.producers.check(header)
            if check.error is not ErrorCode.NONE:
                # Kafka's producer state errors carry the partition's log start offset; a
                # transactional batch at a stale epoch is refused before the log, by the
                # transaction's verification (KIP-890), which answers -1.
                stale = check.error in (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED)
                return AppendResult(
                    check.error,
                    log_start_offset=-1
                    if header.is_transactional and stale
                    else self.log_start_offset,
                    error_message=f"{check.error.name} for producer {header.producer_id}",
                )
            if check.duplicate_of is not None:
                # A retried batch: answer with the offset and the (max) timestamp it got the
                # first time, as Kafka answers a duplicate.
                first = check.duplicate_of
                return AppendResult(
                    ErrorCode.NONE, first.first_offset, first.timestamp_ms, self.log_start_offset
                )
            refused = self._check_binding(header, transactional_id, verifier, txn_producer)
            if refused is not None:
                return refused
        elif header.is_transactional:
            return AppendResult(
                ErrorCode.INVALID_RECORD, error_message="transactional batch needs a producer id"
            )
        try:
            stored = (
                self.log.append_unflushed(raw, now_ms)
                if defer_flush
                else self.log.append(raw, now_ms)
            )
        except KafkaProtocolError as exc:
            return AppendResult(exc.code, error_message=str(exc))
        except OSError as exc:
            log.error("append to %s failed: %s", self.tp, exc)
            return AppendResult(ErrorCode.KAFKA_STORAGE_ERROR, error_message=str(exc))
        self._after_append()
        if header.has_producer_id:
            self.producers.on_data_batch(stored)
        # the Produce response's log_append_time: -1 unless the topic stamps appends
        append_time = now_ms if self.timestamps.log_append_time else -1
        return AppendResult(ErrorCode.NONE, stored.base_offset, append_time, self.log_start_offset)

    def _check_binding(
        self,
        header: BatchHeader,
        transactional_id: str | None,
        verifier: TxnVerifier | None,
        txn_producer: TxnProducerCheck | None,
    ) -> AppendResult | None:
        """The refusal of a batch whose producer id is not the sender's to use, or None."""
        entry = self.producers.get(header.producer_id)
        open_txn = entry is not None and entry.current_txn_first_offset is not None
        pid = header.producer_id
        # Kafka 4.4 answers these refusals without an error message.
        if not header.is_transactional:
            start = self.log_start_offset  # an append's refusal: Kafka answers it
            if open_txn:
                # Kafka's ProducerAppendInfo: "Expected transactional write from producer ..."
                return AppendResult(ErrorCode.INVALID_TXN_STATE, log_start_offset=start)
            if txn_producer is not None and txn_producer(pid):
                # sharetxn: on any partition
                return AppendResult(ErrorCode.INVALID_TXN_STATE, log_start_offset=start)
            return None
        if transactional_id is None:
            # Kafka answers the whole request so (KafkaApis.handleProduceRequest).
            return AppendResult(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if verifier is None:
            return None
        verdict = verifier(transactional_id, pid, header.producer_epoch, self.tp)
        if verdict is ErrorCode.NONE:
            return None
        return AppendResult(
            verdict,
            error_message=(
                f"producer id {pid} epoch {header.producer_epoch} is not the current producer "
                f"of transactional id {transactional_id!r} with {self.tp} in its transaction"
                if open_txn
                else "partition not in the ongoing transaction"
            ),
        )

    def write_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        result: ControlType,
        now_ms: int,
    ) -> ErrorCode:
        """Append a COMMIT/ABORT control batch ending ``producer_id``'s transaction here."""
        error = self.producers.check_marker(producer_id, producer_epoch, coordinator_epoch)
        if error is not ErrorCode.NONE:
            return error
        batch = build_control_batch(
            result,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
            timestamp_ms=now_ms,
        )
        if self.timestamps.log_append_time:
            batch = stamp(batch, parse_header(batch), now_ms, log_append_time=True)
        try:
            header = self.log.append(batch, now_ms)
        except OSError as exc:
            log.error("marker append to %s failed: %s", self.tp, exc)
            return ErrorCode.KAFKA_STORAGE_ERROR
        self._after_append()
        self._apply(header, batch)
        return ErrorCode.NONE

    # -- fetch ----------------------------------------------------------------------------------

    def fetch(self, offset: int, max_bytes: int, *, read_committed: bool) -> FetchData:
        hw = self.high_watermark
        lso = self.last_stable_offset
        start = self.log_start_offset
        if offset < start or offset > hw:
            return FetchData(ErrorCode.OFFSET_OUT_OF_RANGE, hw, lso, start, b"", None)
        upper = lso if read_committed else hw
        if offset >= upper:
            return FetchData(ErrorCode.NONE, hw, lso, start, b"", () if read_committed else None)
        raw = self.log.read(offset, max(max_bytes, 1))
        if read_committed:
            raw = _cut_at(raw, upper)
        aborted: tuple[AbortedTxn, ...] | None = None
        if read_committed:
            last = _last_offset(raw)
            aborted = self.aborted_between(offset, last + 1) if raw else ()
        return FetchData(ErrorCode.NONE, hw, lso, start, raw, aborted)

    def aborted_between(self, start: int, end: int) -> tuple[AbortedTxn, ...]:
        """Aborted transactions overlapping offsets [start, end)."""
        idx = bisect.bisect_left(self._aborted_last, start)
        return tuple(a for a in self._aborted[idx:] if a.first_offset < end)

    # -- offsets --------------------------------------------------------------------------------

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int]:
        """The first record at or after the log start whose timestamp is at least
        ``timestamp_ms``: (offset, timestamp), or (-1, -1).  Record by record inside the first
        batch whose max timestamp reaches it, transaction markers included (Kafka's time
        index lookup and ``searchForTimestamp``)."""
        start = self.log_start_offset
        for header, raw in self.log.batches(start):
            if header.last_offset < start or header.max_timestamp < timestamp_ms:
                continue
            found = record_at_or_after(raw, header, timestamp_ms, start)
            if found is not None:
                return found
        return -1, -1

    def max_timestamp(self) -> tuple[int, int]:
        """The first record carrying the partition's largest timestamp: (offset, timestamp),
        or (-1, -1).  Markers count: Kafka's segments track the largest timestamp of every
        batch appended, and a marker is stamped when it is written."""
        best: tuple[BatchHeader, bytes | bytearray | memoryview] | None = None
        for header, raw in self.log.batches(self.log_start_offset):
            if best is None or header.max_timestamp > best[0].max_timestamp:
                best = (header, raw)
        if best is None or best[0].max_timestamp < 0:
            return -1, -1
        offset = offset_of_max(best[1], best[0])
        return (-1, -1) if offset is None else (offset, best[0].max_timestamp)

    def delete_records(self, offset: int) -> tuple[ErrorCode, int]:
        """Advance the log start offset (DeleteRecords); -1 means the high watermark."""
        target = self.high_watermark if offset == -1 else offset
        if target < 0 or target > self.high_watermark:
            return ErrorCode.OFFSET_OUT_OF_RANGE, self.log_start_offset
        if target > self.log_start_offset:
            self._advance_start(target)
        return ErrorCode.NONE, self.log_start_offset

    def apply_retention(self, now_ms: int, policy: RetentionPolicy) -> int:
        """Delete the segments Kafka's retention rules allow; the bytes they held."""
        segments = self.log.segments()
        target = retention_start_offset(
            segments, self.log_start_offset, self.high_watermark, now_ms, policy
        )
        if target <= self.log_start_offset:
            return 0
        before = sum(seg.size_bytes for seg in segments)
        self._advance_start(target)
        return before - sum(seg.size_bytes for seg in self.log.segments())

    def transactions_for_cleaner(self) -> tuple[int, list[tuple[int, int, int]]]:
        """The LSO (the cleaner stops there: open transactions are never cleaned) and the
        aborted transactions, as (producer id, first offset, marker offset).

        Producer state and the open transactions do not change when the log is cleaned;
        aborted data goes, so its entries in the aborted index cover nothing any more.
        """
        return self.last_stable_offset, [
            (a.producer_id, a.first_offset, a.last_offset) for a in self._aborted
        ]

    def producers_for_cleaner(self) -> dict[int, tuple[int, int]]:
        """Each active producer's last data offset (-1: none) and epoch: the cleaner keeps
        that batch (emptied if need be) so its sequence and epoch survive (Kafka's
        ``lastRecordsOfActiveProducers``)."""
        return {
            pid: (entry.batches[-1].last_offset if entry.batches else -1, entry.epoch)
            for pid, entry in self.producers.producers.items()
        }

    def after_clean(self, end: int, kept_markers: frozenset[int]) -> None:
        """A clean of the offsets below ``end`` kept these markers: an aborted transaction
        whose ABORT marker the cleaner removed (with all its data) leaves the aborted index,
        or a read_committed client would skip the producer's later batches, waiting for a
        marker that is gone (Kafka rebuilds the cleaned segments' transaction index)."""
        kept = [a for a in self._aborted if a.last_offset >= end or a.last_offset in kept_markers]
        if len(kept) != len(self._aborted):
            self._aborted = kept
            self._aborted_last = [a.last_offset for a in kept]

    def dirty_ratio(self) -> float:
        """Bytes after the cleaner checkpoint over the bytes of the non-active segments."""
        segments = self.log.segments()[:-1]
        return dirty_ratio(segments, max(self.log.cleaned_offset, self.log_start_offset))

    def _advance_start(self, target: int) -> None:
        """Raise the log start offset durably and forget aborted transactions wholly below it."""
        self.log.advance_start_offset(target)
        delete_snapshots_below(self.log, self.log_start_offset)
        keep = bisect.bisect_left(self._aborted_last, target)
        del self._aborted[:keep]
        del self._aborted_last[:keep]


def _cut_at(raw: bytes, upper: int) -> bytes:
    """Keep only whole batches that start below ``upper``."""
    pos = 0
    while pos < len(raw):
        header = parse_header(raw, pos)
        if header.base_offset >= upper:
            break
        pos += header.size
    return raw[:pos]


def _last_offset(raw: bytes) -> int:
    last = -1
    pos = 0
    while pos < len(raw):
        header = parse_header(raw, pos)
        last = header.last_offset
        pos += header.size
    return last
