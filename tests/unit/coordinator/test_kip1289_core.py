"""KIP-1289 through BrokerCore with a manual clock: pending acks, markers, fencing, recovery."""

from __future__ import annotations

import random

from coordinator.broker import BrokerCore
from coordinator.log.memory_log import MemoryStorage
from coordinator.share.manager import PartitionAcks, ShareFetchOutcome
from coordinator.share.share_partition import AckBatch, SharePartition
from txn.batch import build_batch
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicIdPartition, TopicPartition
from txn.share_state import RecordState

CONFIG = BrokerConfig(
    {
        "group.share.min.record.lock.duration.ms": "1000",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
    }
)
GROUP = "g"
TID = "copier"


class Harness:
    def __init__(
        self, storage: MemoryStorage | None = None, clock: ManualClock | None = None
    ) -> None:
        self.storage = storage or MemoryStorage()
        self.clock = clock or ManualClock()
        self.core = BrokerCore(self.storage, self.clock, CONFIG, random.Random(3))

    def restart(self) -> Harness:
        return Harness(self.storage, self.clock)

    @property
    def tip(self) -> TopicIdPartition:
        info = self.core.topics.get("in")
        assert info is not None
        return TopicIdPartition(info.topic_id, 0)

    def setup(self, records: int = 5, **group_configs: str) -> None:
        self.core.create_topic("in", 1, 1)
        batch = build_batch(
            [(None, f"v{i}".encode()) for i in range(records)], timestamp_ms=self.clock.now_ms()
        )
        assert self.core.produce(TopicPartition("in", 0), batch, None).error is ErrorCode.NONE
        self.core.share.groups.alter_group_configs(
            GROUP, {"share.auto.offset.reset": "earliest", **group_configs}
        )
        assert self.core.share.heartbeat(GROUP, "m1", 0, None, ["in"]).error is ErrorCode.NONE

    def acquire(self, member: str = "m1") -> int:
        error, session = self.core.share.open_or_check_session(
            GROUP, member, 0, connection_id=hash(member)
        )
        assert error is ErrorCode.NONE and session is not None
        session.add([self.tip])
        outcome = ShareFetchOutcome(ErrorCode.NONE)
        self.core.share.acquire(GROUP, member, session, 500, 1 << 20, outcome)
        return outcome.acquired_count

    def init(self, timeout_ms: int = 60000, enable_2pc: bool = False) -> tuple[int, int]:
        r = self.core.txn_coordinator.init_producer_id(TID, timeout_ms, enable_2pc=enable_2pc)
        assert r.error is ErrorCode.NONE
        return r.producer_id, r.producer_epoch

    def begin_share_txn(self, timeout_ms: int = 60000, enable_2pc: bool = False) -> tuple[int, int]:
        """InitProducerId, then the share-state partition added to the transaction."""
        pid, epoch = self.init(timeout_ms, enable_2pc)
        assert self.add_share_acks(pid, epoch) is ErrorCode.NONE
        return pid, epoch

    def add_share_acks(self, pid: int, epoch: int) -> ErrorCode:
        state_tp = self.core.share.state_partition_of(GROUP, self.tip.topic_id, 0)
        return self.core.txn_coordinator.add_partitions_to_txn(TID, pid, epoch, [state_tp])[
            state_tp
        ]

    def txn_ack(
        self, pid: int, epoch: int, first: int, last: int, ack: int = 1, member: str | None = "m1"
    ) -> ErrorCode:
        results = self.core.txn_share_acknowledge(
            GROUP,
            TID,
            pid,
            epoch,
            member,
            [PartitionAcks(self.tip, [AckBatch(first, last, [ack])])],
        )
        return results[self.tip]

    def end(self, pid: int, epoch: int, commit: bool) -> None:
        assert (
            self.core.txn_coordinator.end_txn(TID, pid, epoch, commit, tv2=False).error
            is ErrorCode.NONE
        )
        self.clock.advance(10)  # deliver the markers

    def partition(self) -> SharePartition:
        error, sp = self.core.share.share_partition(GROUP, self.tip)
        assert sp is not None, error
        return sp

    def states(self) -> list[RecordState | None]:
        sp = self.partition()
        out = []
        for offset in range(5):
            st = sp.record_state(offset)
            out.append(None if st is None else st[0])
        return out

    def txn_state(self) -> str:
        (d,) = self.core.txn_coordinator.describe_transactions([TID])
        return d.state


def holding(**group_configs: str) -> Harness:
    """A broker whose member m1 has acquired the five records of "in"."""
    h = Harness()
    h.setup(**group_configs)
    assert h.acquire() == 5
    return h


def test_commit_applies_pending_acks() -> None:
    h = holding()
    pid, epoch = h.begin_share_txn()
    assert h.txn_ack(pid, epoch, 0, 4) is ErrorCode.NONE
    assert set(h.states()) == {RecordState.TX_PENDING}
    h.end(pid, epoch, commit=True)
    assert h.txn_state() == "CompleteCommit"
    sp = h.partition()
    assert sp.start_offset == 5  # all ACKNOWLEDGED: the SPSO moved on
    assert h.acquire("m2") == 0


def test_abort_reverts_with_delivery_count_kept() -> None:
    h = holding()
    pid, epoch = h.begin_share_txn()
    h.txn_ack(pid, epoch, 0, 4)
    h.end(pid, epoch, commit=False)
    assert set(h.states()) == {RecordState.AVAILABLE}
    sp = h.partition()
    assert sp.record_state(0) == (RecordState.AVAILABLE, 1, "")
    assert h.acquire("m2") == 5
    assert sp.record_state(0)[1] == 2  # type: ignore[index]


def test_abort_at_the_delivery_limit_archives() -> None:
    h = holding(**{"share.delivery.count.limit": "2"})
    sp = h.partition()
    assert sp.acknowledge("m1", [AckBatch(0, 4, [2])]) is ErrorCode.NONE  # RELEASE: dc 1
    h.acquire()  # dc 2 = the limit
    pid, epoch = h.begin_share_txn()
    h.txn_ack(pid, epoch, 0, 4)
    h.end(pid, epoch, commit=False)
    assert sp.start_offset == 5  # ARCHIVED
    assert h.acquire("m2") == 0


def test_without_add_share_acks_is_invalid_txn_state_and_changes_nothing() -> None:
    h = holding()
    pid, epoch = h.init()
    assert h.txn_ack(pid, epoch, 0, 4) is ErrorCode.INVALID_TXN_STATE
    assert set(h.states()) == {RecordState.ACQUIRED}


def test_one_verify_and_map_step_per_request() -> None:
    """TxnShareAcknowledge and TxnOffsetCommit share BrokerCore.verify_in_transaction: the
    coordinator is asked once per request, and only the answer to another transactional id's
    producer id differs (INVALID_TXN_STATE, DESIGN §4.3; INVALID_PRODUCER_ID_MAPPING, Kafka)."""
    h = holding()
    pid, epoch = h.begin_share_txn()
    tc = h.core.txn_coordinator
    calls: list[list[TopicPartition]] = []
    verify = tc.verify_partitions

    def counted(
        tid: str, p: int, e: int, tps: list[TopicPartition]
    ) -> dict[TopicPartition, ErrorCode]:
        calls.append(list(tps))
        return verify(tid, p, e, tps)

    tc.verify_partitions = counted  # type: ignore[method-assign]
    acks = [
        PartitionAcks(h.tip, [AckBatch(0, 1, [1])]),
        PartitionAcks(h.tip, [AckBatch(2, 2, [1])]),
    ]
    results = h.core.txn_share_acknowledge(GROUP, TID, pid + 1, epoch, "m1", acks)
    assert results == {h.tip: ErrorCode.INVALID_TXN_STATE}
    assert len(calls) == 1
    offsets = h.core.consumer_offsets_partition
    assert h.core.verify_in_transaction(
        TID, pid + 1, epoch, [offsets], foreign_producer=ErrorCode.INVALID_PRODUCER_ID_MAPPING
    ) == {offsets: ErrorCode.INVALID_PRODUCER_ID_MAPPING}
    assert h.core.verify_in_transaction(
        TID, pid, epoch, [offsets], foreign_producer=ErrorCode.INVALID_PRODUCER_ID_MAPPING
    ) == {offsets: ErrorCode.INVALID_TXN_STATE}  # not in the transaction


def test_another_members_records_are_invalid_record_state() -> None:
    h = holding()
    pid, epoch = h.begin_share_txn()
    assert h.txn_ack(pid, epoch, 0, 4, member="intruder") is ErrorCode.INVALID_RECORD_STATE
    assert h.txn_ack(pid, epoch, 0, 9) is ErrorCode.INVALID_REQUEST  # beyond what was delivered
    assert set(h.states()) == {RecordState.ACQUIRED}


def test_stale_epoch_is_fenced() -> None:
    h = holding()
    pid, epoch = h.begin_share_txn()
    assert h.txn_ack(pid, epoch - 1 if epoch > 0 else 7, 0, 4) is ErrorCode.PRODUCER_FENCED
    assert set(h.states()) == {RecordState.ACQUIRED}


def test_zombie_pending_acks_are_discarded_by_the_fencing_abort() -> None:
    h = holding()
    pid, epoch = h.begin_share_txn()
    h.txn_ack(pid, epoch, 0, 2)
    # a new instance: fences and aborts the open transaction, answering CONCURRENT_TRANSACTIONS
    first = h.core.txn_coordinator.init_producer_id(TID, 60000)
    assert first.error is ErrorCode.CONCURRENT_TRANSACTIONS
    h.clock.advance(10)
    pid2, epoch2 = h.init()
    assert (pid2, epoch2) != (pid, epoch)
    assert h.states()[:3] == [RecordState.AVAILABLE] * 3
    assert h.txn_ack(pid, epoch, 3, 4) is ErrorCode.PRODUCER_FENCED


def test_lock_expiry_does_not_release_tx_pending_records() -> None:
    h = holding(**{"share.record.lock.duration.ms": "1000"})
    pid, epoch = h.begin_share_txn()
    h.txn_ack(pid, epoch, 0, 2)
    h.clock.advance(5000)  # locks expire
    assert h.states() == [RecordState.TX_PENDING] * 3 + [RecordState.AVAILABLE] * 2
    assert h.acquire("m2") == 2


def test_timeout_abort_reverts_and_is_counted() -> None:
    h = Harness()
    seen: list[tuple[str, int]] = []
    h.core.share.on_txn_metric = lambda name, value: seen.append((name, value))
    h.setup()
    h.acquire()
    pid, epoch = h.begin_share_txn(timeout_ms=2000)
    h.txn_ack(pid, epoch, 0, 4)
    h.clock.advance(5000)
    assert h.txn_state() == "CompleteAbort"
    assert set(h.states()) == {RecordState.AVAILABLE}
    names = [n for n, _ in seen]
    assert "share-transaction-timeout-total" in names and "share-transaction-abort-total" in names
    assert sum(v for n, v in seen if n == "share-transaction-active") == 0


def test_pending_acks_survive_a_restart_and_complete_after_it() -> None:
    h = holding()
    pid, epoch = h.begin_share_txn(enable_2pc=True)
    h.txn_ack(pid, epoch, 0, 4)
    h2 = h.restart()
    # still exclusive to the open transaction after the restart
    assert set(h2.states()) == {RecordState.TX_PENDING}
    assert h2.acquire("m2") == 0
    r = h2.core.txn_coordinator.init_producer_id(
        TID, 60000, enable_2pc=True, keep_prepared_txn=True
    )
    assert (r.producer_id, r.producer_epoch) == (pid, epoch)
    h2.end(pid, epoch, commit=True)
    sp = h2.partition()
    assert sp.start_offset == 5
    h3 = h2.restart()  # the commit itself is durable
    sp3 = h3.partition()
    assert sp3.start_offset == 5


def test_markers_are_idempotent_and_old_epochs_do_not_touch_newer_transactions() -> None:
    h = holding()
    pid, epoch = h.begin_share_txn()
    h.txn_ack(pid, epoch, 0, 4)
    state_tp = h.core.share.state_partition_of(GROUP, h.tip.topic_id, 0)
    # an old epoch's ABORT arriving late must not discard the newer pending acks
    assert (
        h.core.share.complete_transaction(state_tp.partition, pid, epoch - 1, False, 0)
        is ErrorCode.NONE
    )
    assert set(h.states()) == {RecordState.TX_PENDING}
    h.end(pid, epoch, commit=True)
    # a duplicate COMMIT is harmless
    assert (
        h.core.share.complete_transaction(state_tp.partition, pid, epoch, True, 0) is ErrorCode.NONE
    )
    sp = h.partition()
    assert sp.start_offset == 5


def test_transactional_ack_of_records_past_the_spso_is_refused() -> None:
    """A member whose lock expired cannot stage acks for records someone else accepted."""
    h = Harness()
    h.setup(**{"share.record.lock.duration.ms": "1000"})
    h.acquire("m1")
    h.clock.advance(1500)  # m1's locks expire; the records go back
    assert h.acquire("m2") == 5
    sp = h.partition()
    assert sp.acknowledge("m2", [AckBatch(0, 4, [1])]) is ErrorCode.NONE
    pid, epoch = h.begin_share_txn()
    assert h.txn_ack(pid, epoch, 0, 4) is ErrorCode.INVALID_RECORD_STATE


def test_committed_acks_survive_pruning_and_a_restart() -> None:
    """A snapshot written while the transaction was open must not let pruning drop its acks."""
    h = holding()
    pid, epoch = h.begin_share_txn(enable_2pc=True)  # never timed out: the open transaction waits
    h.txn_ack(pid, epoch, 0, 4)
    h.clock.advance(300_001)  # the cold-partition job re-snapshots the key meanwhile
    h.end(pid, epoch, commit=True)
    h.core.share.persister.prune()
    h2 = h.restart()
    sp = h2.partition()
    assert sp.start_offset == 5
    assert h2.acquire("m2") == 0
