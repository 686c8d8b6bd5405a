"""The transaction shard's log-backed state changes only by replay: after any sequence of
operations, a fresh coordinator loaded from the log has the live one's persisted fields.

What is in memory only stays out of the comparison, as in Kafka: the pending transition, the
last epoch (not persisted), a TV0/1 fence's epoch while its abort is not durable, and the
metadata of an id whose first record was never written.  Operations run on a manual clock over
a memory log, some with appends failing and some with marker deliveries blocked.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.assembly import txn_runtime
from coordinator.marker_channel import MarkerChannel
from coordinator.producer_ids import ProducerIdManager
from coordinator.txn_coordinator import TransactionCoordinator
from coordinator.txn_results import transit_to_log_value
from tests.unit.coordinator.txn_harness import RETRY_MS, TP0, TP1, Bench, FakeMarkerHandler
from txn.errors import KafkaStorageError
from txn.ids import NO_PRODUCER_EPOCH
from txn.metadata import TV_0, TV_2
from txn.state import TransactionState
from txn.txn_log import TransactionLogValue

IDS = ["t1", "t2"]
TIMEOUT_MS = 1_000
EXPIRATION_MS = 5_000


@dataclass(frozen=True)
class Init:
    tid: int
    with_epoch: bool  # send the current (id, epoch) as KIP-360 does


@dataclass(frozen=True)
class Add:
    tid: int
    second: bool
    tv2: bool


@dataclass(frozen=True)
class End:
    tid: int
    commit: bool
    tv2: bool
    stale: bool  # one epoch behind (a zombie, or a retry)


@dataclass(frozen=True)
class Advance:
    ms: int
    block: bool  # marker deliveries to TP1 fail from now on (until unblocked)


@dataclass(frozen=True)
class Failing:
    """``op`` with the next appends failing."""

    op: object


tids = st.integers(0, len(IDS) - 1)
operations = st.one_of(
    st.builds(Init, tids, st.booleans()),
    st.builds(Add, tids, st.booleans(), st.booleans()),
    st.builds(Add, tids, st.booleans(), st.booleans()),
    st.builds(End, tids, st.booleans(), st.booleans(), st.booleans()),
    st.builds(
        Advance, st.sampled_from([0, 50, 500, 2 * TIMEOUT_MS, 2 * EXPIRATION_MS]), st.booleans()
    ),
)
operations = st.one_of(operations, operations, st.builds(Failing, operations))


def _run(bench: Bench, op: object) -> None:
    """Clients use the (id, epoch) the coordinator holds (an id whose first InitProducerId
    failed has no epoch yet: nothing to send)."""
    c = bench.coordinator
    match op:
        case Init(tid, with_epoch):
            md = c._txns.get(IDS[tid])
            if with_epoch and md is not None and md.producer_epoch >= 0:
                c.init_producer_id(IDS[tid], TIMEOUT_MS, md.producer_id, md.producer_epoch)
            else:
                c.init_producer_id(IDS[tid], TIMEOUT_MS)
        case Add(tid, second, tv2):
            md = c._txns.get(IDS[tid])
            if md is not None and md.producer_epoch >= 0:
                tp = TP1 if second else TP0
                c.add_partitions_to_txn(IDS[tid], md.producer_id, md.producer_epoch, [tp], tv2=tv2)
        case End(tid, commit, tv2, stale):
            md = c._txns.get(IDS[tid])
            if md is not None and md.producer_epoch >= 0:
                epoch = md.producer_epoch - 1 if stale else md.producer_epoch
                c.end_txn(IDS[tid], md.producer_id, epoch, commit, tv2)
        case Advance(ms, block):
            if block:
                bench.handler.blocked ^= {TP1}
            bench.settle(ms)  # markers, completion retries, the timeout and expiry reapers
        case Failing(failing):
            bench.txn_log.fail_next(KafkaStorageError("disk gone"), times=3)
            _run(bench, failing)
            bench.txn_log.failures.clear()


def _persisted(c: TransactionCoordinator) -> dict[str, TransactionLogValue | None]:
    """Each id's log-backed fields: the record its state would be written as."""
    out: dict[str, TransactionLogValue | None] = {}
    for tid, md in c._txns.items():
        if md.producer_epoch == NO_PRODUCER_EPOCH and md.state is TransactionState.EMPTY:
            continue  # a new id whose first record was never written (in memory only)
        out[tid] = transit_to_log_value(replace(md.snapshot(), producer_epoch=md._producer_epoch))
    return out


def _reloaded(bench: Bench) -> TransactionCoordinator:
    """A fresh coordinator over the same logs (its own channel and producer ids)."""
    handler = FakeMarkerHandler(blocked={TP0, TP1})  # nothing completes during the check
    fresh = TransactionCoordinator(
        bench.clock,
        txn_runtime(bench.clock, bench.txn_log),
        ProducerIdManager(bench.pid_log, bench.clock),
        MarkerChannel(bench.clock, handler, retry_backoff_ms=RETRY_MS),
        bench.config,
        transaction_version_level=bench.tv_level,
        retry_backoff_ms=RETRY_MS,
    )
    fresh.load()
    return fresh


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([TV_0, TV_2]), st.lists(operations, min_size=10, max_size=60))
def test_persisted_state_equals_the_state_reloaded_from_the_log(
    tv_level: int, ops: list[object]
) -> None:
    bench = Bench({"transactional.id.expiration.ms": EXPIRATION_MS}, tv_level=tv_level)
    bench.load()
    for op in ops:
        _run(bench, op)
    live = bench.coordinator
    assert _persisted(_reloaded(bench)) == _persisted(live)
    # Replay, not the operations, made the log-backed state: nothing pending is in it.
    for md in live._txns.values():
        if md.pending_state is None and not md.has_failed_epoch_fence:
            assert md.producer_epoch == md._producer_epoch
