"""Acquisition: ShareFetch takes AVAILABLE records under a lock; a closed session returns them."""

from __future__ import annotations

from coordinator.partition import AbortedTxn
from coordinator.share.inflight import (
    AcquisitionLock,
    Run,
)
from coordinator.share.partition_core import SharePartitionCore
from coordinator.share.partition_model import (
    _FIRST_READ_BYTES,
    EVENT_ACQUIRED,
    EVENT_ARCHIVED,
    EVENT_REDELIVERED,
    AcquiredRange,
    AcquireResult,
    SharePartitionState,
    _append_range,
    _Change,
    _is_aborted,
    _join_spans,
    log,
)
from txn.batch import BatchFormatError, BatchHeader, iter_batches
from txn.errors import ErrorCode
from txn.share_state import RecordState, check_transition


class Acquisition(SharePartitionCore):
    def acquire(self, member_id: str, max_fetch_records: int, max_bytes: int) -> AcquireResult:
        """Acquire records for ``member_id``: AVAILABLE ones first, then new ones from the log.

        Reads the log from ``next_fetch_offset`` (at most ``max_bytes``, at least one batch).
        Stops once ``max_fetch_records`` are acquired, rounded up to the end of the log batch
        being taken; new records are further bounded by ``max_in_flight_records`` minus the
        records already in flight, also rounded up to a log-batch boundary.  Control batches
        and (read_committed) aborted transactional records are archived, never acquired.
        """
        if self._status is not SharePartitionState.ACTIVE:
            return AcquireResult(error=self._inactive_error())
        if max_fetch_records <= 0 or max_bytes <= 0:
            return AcquireResult()
        self._sync_log_start()
        cfg = self._config
        fetch_from = self.next_fetch_offset
        if fetch_from >= self._end and self.in_flight_count >= cfg.max_in_flight_records:
            return AcquireResult()
        # Read no more log than the records wanted need: clients ask for tens of MB per fetch
        # but a few hundred records, and reading the rest only to drop it dominated the cost.
        chunk = min(max_bytes, _FIRST_READ_BYTES)
        while True:
            data = self._data.fetch(fetch_from, chunk, read_committed=cfg.read_committed)
            if data.error is ErrorCode.OFFSET_OUT_OF_RANGE:
                return AcquireResult()  # nothing readable there (yet)
            if data.error is not ErrorCode.NONE:
                return AcquireResult(error=data.error)
            if not data.records:
                return AcquireResult()
            try:
                batches = iter_batches(data.records)
            except BatchFormatError as exc:
                log.error("share partition %s: unreadable log data: %s", self.key, exc)
                return AcquireResult(error=ErrorCode.CORRUPT_MESSAGE)
            next_offset = batches[-1][1].last_offset + 1
            readable = data.last_stable_offset if cfg.read_committed else data.high_watermark
            if (
                next_offset - fetch_from >= max_fetch_records
                or chunk >= max_bytes
                or next_offset >= readable
            ):
                break
            chunk = min(max_bytes, chunk * 4)
        aborted: tuple[AbortedTxn, ...] = ()
        if cfg.read_committed and batches:
            aborted = self._data.aborted_between(
                batches[0][1].base_offset, batches[-1][1].last_offset + 1
            )
        return self._acquire_from(
            member_id=member_id,
            max_fetch_records=max_fetch_records,
            fetch_from=fetch_from,
            raw=data.records,
            batches=batches,
            aborted=aborted,
        )

    def _acquire_from(
        self,
        *,
        member_id: str,
        max_fetch_records: int,
        fetch_from: int,
        raw: bytes,
        batches: list[tuple[int, BatchHeader]],
        aborted: tuple[AbortedTxn, ...],
    ) -> AcquireResult:
        cfg = self._config
        now = self._clock.now_ms()
        lock = AcquisitionLock(member_id, -1, -1, now + cfg.record_lock_duration_ms)
        acquired: list[AcquiredRange] = []
        spans: list[tuple[int, int]] = []
        count = 0
        redelivered = 0
        archived = 0
        touched_first = -1
        touched_last = -1
        for pos, header in batches:
            if count >= max_fetch_records:
                break
            lo = max(header.base_offset, fetch_from, self._start)
            hi = header.last_offset
            if lo > hi:
                continue
            control = header.is_control
            skip = control or (
                bool(aborted) and header.is_transactional and _is_aborted(header, aborted)
            )
            got = 0
            full = False
            if touched_first < 0:
                touched_first = lo
            touched_last = hi
            if lo < self._end:
                seg_hi = min(hi, self._end - 1)
                for run in self._runs.overlapping(lo, seg_hi):
                    if run.pending is not None or run.state not in (None, RecordState.AVAILABLE):
                        continue
                    a = max(run.first, lo)
                    z = min(run.last, seg_hi)
                    if skip:
                        if run.state is RecordState.AVAILABLE or not control:
                            archived += z - a + 1
                        self._archive_range(a, z)
                        continue
                    dc = 1 if run.state is None else run.delivery_count + 1
                    self._lock_range(a, z, member_id, dc, lock)
                    _append_range(acquired, a, z, dc)
                    got += z - a + 1
                    if dc > 1:
                        redelivered += z - a + 1
                lo = seg_hi + 1
            if lo <= hi:
                # Beyond the cache: new records.
                if skip:
                    self._runs.append(Run(lo, hi, RecordState.ARCHIVED, 0))
                    self._end = hi + 1
                    if not control:
                        archived += hi - lo + 1
                else:
                    room = min(
                        max_fetch_records - count - got,
                        cfg.max_in_flight_records - self.in_flight_count,
                    )
                    if room > 0:
                        self._runs.append(Run(lo, hi, RecordState.ACQUIRED, 1, member_id, lock))
                        lock.held += hi - lo + 1
                        self._end = hi + 1
                        _append_range(acquired, lo, hi, 1)
                        got += hi - lo + 1
                    else:
                        touched_last = lo - 1
                        full = True
            if got:
                spans.append((pos, pos + header.size))
                count += got
            if full:
                break
        if touched_first >= 0 and touched_last >= touched_first:
            self._runs.coalesce(touched_first, touched_last)
        if lock.held:
            lock.first_offset = acquired[0].first_offset
            lock.last_offset = acquired[-1].last_offset
            self._schedule(lock, cfg.record_lock_duration_ms)
        self._advance_start()
        self._emit(EVENT_ACQUIRED, count)
        self._emit(EVENT_REDELIVERED, redelivered)
        self._emit(EVENT_ARCHIVED, archived)
        return AcquireResult(_join_spans(raw, spans), acquired)

    def _lock_range(
        self, first: int, last: int, member_id: str, dc: int, lock: AcquisitionLock
    ) -> None:
        for run in self._runs.isolate(first, last):
            if run.state is not None:
                check_transition(run.state, RecordState.ACQUIRED)
            run.state = RecordState.ACQUIRED
            run.delivery_count = dc
            run.member_id = member_id
            run.lock = lock
        lock.held += last - first + 1

    def release_acquired_records(self, member_id: str) -> ErrorCode:
        """Share session closed or member left: its ACQUIRED records go back, their delivery
        count unchanged (Apache Kafka 4.4 counts the lost acquisition as a delivery).

        Records below the SPSO are archived.  TX_PENDING records are not touched (DESIGN §4.1).
        """
        if self._status is not SharePartitionState.ACTIVE:
            return self._inactive_error()
        self._sync_log_start()
        plan: list[_Change] = []
        for run in self._runs:
            if run.state is not RecordState.ACQUIRED or run.member_id != member_id:
                continue
            dc = run.delivery_count
            # Records whose acknowledgement is being written are left to that write.
            for piece_first, last in self._outside_transitions(run.first, run.last):
                first = piece_first
                if first < self._start:
                    below = min(last, self._start - 1)
                    plan.append(
                        _Change(first, below, RecordState.ARCHIVED, dc, event=EVENT_ARCHIVED)
                    )
                    first = below + 1
                if first <= last:  # at the delivery limit: archived, as a lock timeout does
                    plan.append(self._back_to_available(first, last, dc))
        return self._commit(plan, atomic=True)
