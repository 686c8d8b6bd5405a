"""What a transaction costs in fsyncs of ``__transaction_state``, and what a crash keeps.

AddPartitionsToTxn (Ongoing) and EndTxn (PrepareCommit) are answered once their record is
fsynced.  CompleteCommit is written after every marker was acknowledged, without an fsync of
its own: the next record of the log is fsynced and takes it along.  A crash that loses it
leaves the PrepareCommit, whose markers the next load sends again, as Kafka's coordinator does
after a failover.
"""

from __future__ import annotations

import pytest

from tests.unit.coordinator.txn_harness import TIMEOUT_MS, TP0, TP1, TP2, TXN, Bench, S
from txn.errors import ErrorCode as E


class DiskOf:
    """Counts the flushes of a bench's transaction log; ``crash`` forgets what none covered."""

    def __init__(self, bench: Bench, monkeypatch: pytest.MonkeyPatch) -> None:
        self.bench = bench
        self.flushes = 0
        self.durable_end = bench.txn_log.inner.log_end_offset
        inner_flush = bench.txn_log.flush

        def flush() -> None:
            inner_flush()
            self.flushes += 1
            self.durable_end = bench.txn_log.inner.log_end_offset

        monkeypatch.setattr(bench.txn_log, "flush", flush)

    def crash(self) -> None:
        """The unsynced tail of the log is lost; the coordinator restarts on what is left."""
        self.bench.txn_log.inner.truncate_to(self.durable_end)
        self.bench.restart()


def committed_once(monkeypatch: pytest.MonkeyPatch) -> tuple[Bench, DiskOf, int, int]:
    """One TV2 transaction on TP0 and TP1, committed and its markers delivered."""
    bench = Bench()
    c = bench.load()
    ids = c.init_producer_id(TXN, TIMEOUT_MS)
    disk = DiskOf(bench, monkeypatch)
    pid, epoch = ids.producer_id, ids.producer_epoch
    assert c.add_partitions_to_txn(TXN, pid, epoch, [TP0, TP1], tv2=True) == {
        TP0: E.NONE,
        TP1: E.NONE,
    }
    result = c.end_txn(TXN, pid, epoch, True, tv2=True)
    assert result.error is E.NONE
    bench.settle()
    return bench, disk, pid, result.producer_epoch


def test_a_transaction_fsyncs_the_state_log_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    bench, disk, pid, epoch = committed_once(monkeypatch)
    assert bench.states_written()[-3:] == [S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT]
    assert disk.flushes == 2  # Ongoing and PrepareCommit; CompleteCommit waits for the next
    assert bench.view().state is S.COMPLETE_COMMIT  # in force at once
    assert disk.durable_end == bench.txn_log.inner.log_end_offset - 1

    c = bench.coordinator
    assert c.add_partitions_to_txn(TXN, pid, epoch, [TP2], tv2=True) == {TP2: E.NONE}
    assert disk.flushes == 3
    assert disk.durable_end == bench.txn_log.inner.log_end_offset  # CompleteCommit too


def test_a_crash_that_loses_complete_commit_sends_the_markers_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bench, disk, pid, epoch = committed_once(monkeypatch)
    marked = len(bench.handler.acked)
    disk.crash()
    assert bench.view().state is S.PREPARE_COMMIT
    bench.settle()
    assert bench.view().state is S.COMPLETE_COMMIT
    again = bench.handler.acked[marked:]
    assert sorted(again) == [(TP0, pid, epoch), (TP1, pid, epoch)]  # the same markers
    c = bench.coordinator
    assert c.add_partitions_to_txn(TXN, pid, epoch, [TP2], tv2=True) == {TP2: E.NONE}


def test_the_next_fsynced_record_makes_complete_commit_durable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bench, disk, pid, epoch = committed_once(monkeypatch)
    c = bench.coordinator
    assert c.add_partitions_to_txn(TXN, pid, epoch, [TP2], tv2=True) == {TP2: E.NONE}
    marked = len(bench.handler.acked)
    disk.crash()
    view = bench.view()
    assert (view.state, set(view.topic_partitions)) == (S.ONGOING, {TP2})
    bench.settle()
    assert bench.handler.acked[marked:] == []  # nothing to complete again
    assert bench.states_written().count(S.COMPLETE_COMMIT) == 1
