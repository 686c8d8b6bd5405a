"""Test bench for the transaction coordinator: manual clock, memory logs, scripted markers."""

from __future__ import annotations

from dataclasses import dataclass, field

from coordinator.assembly import txn_runtime
from coordinator.log.memory_log import MemoryLog
from coordinator.marker_channel import MarkerChannel, TxnMarker
from coordinator.producer_ids import ProducerIdManager
from coordinator.txn_coordinator import TransactionCoordinator
from coordinator.txn_results import TransactionView
from tests.unit.faulty_log import FaultyLog
from txn.batch import build_batch
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicPartition
from txn.metadata import TV_0, TV_2
from txn.state import TransactionState
from txn.txn_log import (
    TransactionLogValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    read_records,
)

S = TransactionState
TXN = "txn-1"
PID = 10
TP0 = TopicPartition("foo", 0)
TP1 = TopicPartition("foo", 1)
TP2 = TopicPartition("bar", 0)
TIMEOUT_MS = 60000
RETRY_MS = 100


@dataclass
class FakeMarkerHandler:
    """Records every marker; ``script[tp]`` lists the errors to return before NONE."""

    received: list[TxnMarker] = field(default_factory=list)
    script: dict[TopicPartition, list[ErrorCode]] = field(default_factory=dict)
    blocked: set[TopicPartition] = field(default_factory=set)
    acked: list[tuple[TopicPartition, int, int]] = field(default_factory=list)

    def write_txn_markers(self, marker: TxnMarker) -> dict[TopicPartition, ErrorCode]:
        self.received.append(marker)
        out: dict[TopicPartition, ErrorCode] = {}
        for tp in marker.partitions:
            if tp in self.blocked:
                out[tp] = ErrorCode.NOT_LEADER_OR_FOLLOWER
            elif self.script.get(tp):
                out[tp] = self.script[tp].pop(0)
            else:
                out[tp] = ErrorCode.NONE
            if out[tp] is ErrorCode.NONE:
                self.acked.append((tp, marker.producer_id, marker.producer_epoch))
        return out

    def partitions_marked(self) -> set[TopicPartition]:
        return {tp for tp, _pid, _epoch in self.acked}


class Bench:
    """One coordinator over logs that survive ``restart()``."""

    def __init__(
        self,
        config: dict[str, object] | None = None,
        tv_level: int = TV_2,
    ) -> None:
        self.clock = ManualClock(start_ms=1_000_000)
        self.config = BrokerConfig(config or {})
        self.tv_level = tv_level
        self.txn_log = FaultyLog(MemoryLog())
        self.pid_log = MemoryLog()
        self.handler = FakeMarkerHandler()
        self.coordinator = self._build()

    def _build(self) -> TransactionCoordinator:
        self.channel = MarkerChannel(self.clock, self.handler, retry_backoff_ms=RETRY_MS)
        self.producer_ids = ProducerIdManager(self.pid_log, self.clock)
        return TransactionCoordinator(
            self.clock,
            txn_runtime(self.clock, self.txn_log),
            self.producer_ids,
            self.channel,
            self.config,
            transaction_version_level=self.tv_level,
            retry_backoff_ms=RETRY_MS,
        )

    # --- setup --------------------------------------------------------------------------------

    def seed(
        self,
        state: TransactionState,
        *,
        tid: str = TXN,
        pid: int = PID,
        epoch: int = 1,
        partitions: tuple[TopicPartition, ...] | None = None,
        tv: int = TV_0,
        prev: int = -1,
        next_pid: int = -1,
        timeout_ms: int = TIMEOUT_MS,
        start: int | None = None,
        last_update: int | None = None,
        two_phase_commit: bool = False,
    ) -> None:
        """Write a record as if an earlier coordinator had (call before ``load``)."""
        now = self.clock.now_ms()
        if partitions is None:
            partitions = (
                ()
                if state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT)
                else (
                    TP0,
                    TP1,
                )
            )
        if start is None:
            start = -1 if state is S.EMPTY else now
        value = TransactionLogValue(
            producer_id=pid,
            producer_epoch=epoch,
            transaction_timeout_ms=timeout_ms,
            state=state,
            topic_partitions=frozenset(partitions),
            last_update_timestamp_ms=now if last_update is None else last_update,
            start_timestamp_ms=start,
            previous_producer_id=prev,
            next_producer_id=next_pid,
            client_transaction_version=tv,
            two_phase_commit=two_phase_commit,
        )
        batch = build_batch([(encode_key(tid), encode_value(value))], timestamp_ms=now)
        self.txn_log.inner.append(batch, now)

    def load(self) -> TransactionCoordinator:
        self.coordinator.load()
        return self.coordinator

    def restart(self) -> TransactionCoordinator:
        """A crash and restart: new channel, producer id manager and coordinator, same logs."""
        self.coordinator.close()
        self.channel.close()
        self.coordinator = self._build()
        self.coordinator.load()
        return self.coordinator

    # --- observation --------------------------------------------------------------------------

    def settle(self, ms: int = 0) -> None:
        """Run due timers (marker deliveries) and optionally move time."""
        self.clock.advance(ms)

    def view(self, tid: str = TXN) -> TransactionView:
        view = self.coordinator.transaction_view(tid)
        assert view is not None
        return view

    def records(self) -> list[tuple[str, TransactionLogValue | None]]:
        out: list[tuple[str, TransactionLogValue | None]] = []
        for _header, batch in self.txn_log.inner.batches(0):
            for key, value in read_records(batch):
                assert key is not None
                out.append((decode_key(key), decode_value(value)))
        return out

    def states_written(self, tid: str = TXN) -> list[TransactionState | None]:
        return [v.state if v else None for t, v in self.records() if t == tid]

    def record_count(self) -> int:
        return len(self.records())


__all__ = [
    "PID",
    "RETRY_MS",
    "TIMEOUT_MS",
    "TP0",
    "TP1",
    "TP2",
    "TV_0",
    "TV_2",
    "TXN",
    "Bench",
    "FakeMarkerHandler",
    "FaultyLog",
    "S",
]
