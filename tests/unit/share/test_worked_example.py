"""KIP-932's worked example of state batches ("Fetch records 100-109 ... SPSO 120"), step by step.

Each step checks SPSO, SPEO, the record states, and the WriteShareGroupState
calls the share partition made, against the KIP's table.  Three consumers share
the partition; the log is cut into batches so that a consumer asking for N
records gets exactly the records the KIP gives it (acquisition rounds up to a
log batch).  Consumer 1 acquires 110-112 ten seconds before the others, so its
lock is the one that times out.

The writes follow Apache Kafka 4.4, not the KIP's table: Kafka persists nothing
when the partition starts (the position is recorded here as the reset offset,
which Kafka's view does not show), and every write carries the SPSO *before* it
with the changed batches, the SPSO moving once the write succeeded.  So where
the KIP writes ``StartOffset 110, []`` for "Acknowledge 100-109", Kafka and this
implementation write ``StartOffset 100, [100-109 ACKNOWLEDGED dc 1]`` (the KIP
itself writes that shape for "Acknowledge 110"), and where the KIP writes -1
("unchanged") the write carries the unchanged SPSO.  Both mean the same durable
state, which the test proves by replaying the KIP's writes and ours into two
persisters and comparing their normalized contents after every step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from coordinator.share.persister import PersisterStateBatch
from coordinator.share.share_partition import SharePartition
from tests.unit.share.fakes_sp import (
    ACCEPT,
    ACKNOWLEDGED,
    ACQUIRED,
    AVAILABLE,
    NOW,
    RELEASE,
    DataLog,
    FakePersister,
    WriteCall,
    ack,
    make_sp,
    ranges,
    sb,
    states,
)
from txn.clock import ManualClock
from txn.errors import ErrorCode
from txn.share_state import RecordState

BIG = 1 << 20
C1, C2, C3 = "consumer-1", "consumer-2", "consumer-3"

Batch = tuple[int, int, int, int]


def effective(persister: FakePersister) -> tuple[int, tuple[Batch, ...]]:
    """Durable state with the start offset moved past a terminal prefix (same meaning)."""
    start = persister.start_offset if persister.start_offset >= 0 else persister.reset_offset
    batches = [
        (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        for b in persister.persisted()
    ]
    terminal = {int(RecordState.ACKNOWLEDGED), int(RecordState.ARCHIVED)}
    for first, last, state, _dc in batches:
        if first == start and state in terminal:
            start = last + 1
    return start, tuple(b for b in batches if b[0] >= start)


@dataclass
class Example:
    log: DataLog
    sp: SharePartition
    ours: FakePersister
    kip: FakePersister
    clock: ManualClock
    seen_writes: int = 0
    expected: dict[int, tuple[RecordState, int, str]] = field(default_factory=dict)

    def step(
        self,
        *,
        spso: int,
        speo: int,
        records: dict[tuple[int, int], tuple[RecordState, int, str]],
        write: tuple[int, tuple[Batch, ...]] | None,
        kip_write: tuple[int, tuple[Batch, ...]] | None = None,
    ) -> None:
        """Check the cumulative state and the write(s) made since the previous step.

        ``records`` gives only the ranges whose state changed in this step; every record
        at or above the SPSO is checked against all that the steps so far have given.
        """
        sp = self.sp
        assert (sp.start_offset, sp.end_offset) == (spso, speo)
        for (first, last), state in records.items():
            self.expected.update(dict.fromkeys(range(first, last + 1), state))
        for offset in [o for o in self.expected if o < spso]:
            del self.expected[offset]
        offsets = sorted(self.expected)
        assert [sp.record_state(o) for o in offsets] == [self.expected[o] for o in offsets]
        new = self.ours.writes[self.seen_writes :]
        self.seen_writes = len(self.ours.writes)
        if write is None:
            assert new == []
        else:
            assert new == [WriteCall(0, 0, write[0], write[1])]
        kip = write if kip_write is None else kip_write
        if kip is not None:
            self.kip.merge(kip[0], kip[1])
        assert effective(self.ours) == effective(self.kip)

    def batch_bytes(self, offset: int) -> bytes:
        return self.log.partition.log.read(offset, 1)


def test_kip932_worked_example() -> None:
    log = DataLog()
    log.pad_to(100)  # "topic-partition with latest offset 100"
    ours = FakePersister()  # no state yet: share.auto.offset.reset=latest applies
    clock = ManualClock(NOW)
    sp = make_sp(log, ours, clock)
    ex = Example(log, sp, ours, FakePersister(), clock)

    # Starting state: SPSO=100, SPEO=100; {"StartOffset": 100, "StateBatches": []}.  Kafka
    # writes nothing; here the start offset stays -1 and 100 is the recorded reset offset.
    ex.step(spso=100, speo=100, records={}, write=(-1, ()), kip_write=(100, ()))
    assert ours.last_write.reset_offset == 100

    # Fetch records 100-109: acquired, delivery count 1.
    log.append_batches(5, 5)
    assert ranges(sp.acquire(C1, 10, BIG)) == [(100, 109, 1)]
    ex.step(spso=100, speo=110, records={(100, 109): (ACQUIRED, 1, C1)}, write=None)

    # Acknowledge 100-109: SPSO=110; {"StartOffset": 110, "StateBatches": []}
    assert sp.acknowledge(C1, [ack(100, 109, ACCEPT)]) is ErrorCode.NONE
    ex.step(
        spso=110,
        speo=110,
        records={},
        write=(100, (sb(100, 109, ACKNOWLEDGED, 1),)),
        kip_write=(110, ()),
    )
    assert ours.last_write.delivery_complete_count == 10
    assert sp.record_state(100) is None  # evicted

    # Fetch records 110-119: consumer 1 gets 110-112, consumer 2 113-118, consumer 3 119.
    log.append_batches(3, 6, 1)
    assert ranges(sp.acquire(C1, 3, BIG)) == [(110, 112, 1)]
    clock.advance(10_000)
    assert ranges(sp.acquire(C2, 6, BIG)) == [(113, 118, 1)]
    assert ranges(sp.acquire(C3, 1, BIG)) == [(119, 119, 1)]
    ex.step(
        spso=110,
        speo=120,
        records={
            (110, 112): (ACQUIRED, 1, C1),
            (113, 118): (ACQUIRED, 1, C2),
            (119, 119): (ACQUIRED, 1, C3),
        },
        write=None,
    )

    # Release 110 (consumer 1): {-1, [110-110 Available dc 1]}
    clock.advance(1_000)
    assert sp.acknowledge(C1, [ack(110, 110, RELEASE)]) is ErrorCode.NONE
    ex.step(
        spso=110,
        speo=120,
        records={(110, 110): (AVAILABLE, 1, "")},
        write=(110, (sb(110, 110, AVAILABLE, 1),)),
        kip_write=(-1, (sb(110, 110, AVAILABLE, 1),)),
    )
    assert sp.next_fetch_offset == 110

    # Acknowledge 119 (consumer 3): {-1, [119-119 Acknowledged dc 1]}
    assert sp.acknowledge(C3, [ack(119, 119, ACCEPT)]) is ErrorCode.NONE
    ex.step(
        spso=110,
        speo=120,
        records={(119, 119): (ACKNOWLEDGED, 1, "")},
        write=(110, (sb(119, 119, ACKNOWLEDGED, 1),)),
        kip_write=(-1, (sb(119, 119, ACKNOWLEDGED, 1),)),
    )

    # Fetch records 110, 120 (consumer 1): 110 with delivery count 2, 120 with 1.
    log.append(1)
    clock.advance(1_000)
    result = sp.acquire(C1, 2, BIG)
    assert ranges(result) == [(110, 110, 2), (120, 120, 1)]
    assert result.records == ex.batch_bytes(110) + ex.batch_bytes(120)
    ex.step(
        spso=110,
        speo=121,
        records={(110, 110): (ACQUIRED, 2, C1), (120, 120): (ACQUIRED, 1, C1)},
        write=None,
    )

    # Lock timeout elapsed 111, 112 (consumer 1's records): {-1, [111-112 Available dc 1]}
    clock.advance(18_000)  # 30 s after consumer 1's first acquisition
    ex.step(
        spso=110,
        speo=121,
        records={(111, 112): (AVAILABLE, 1, "")},
        write=(110, (sb(111, 112, AVAILABLE, 1),)),
        kip_write=(-1, (sb(111, 112, AVAILABLE, 1),)),
    )

    # Acknowledge 113-118 (consumer 2): {-1, [113-118 Acknowledged dc 1]}
    clock.advance(1_000)
    assert sp.acknowledge(C2, [ack(113, 118, ACCEPT)]) is ErrorCode.NONE
    ex.step(
        spso=110,
        speo=121,
        records={(113, 118): (ACKNOWLEDGED, 1, "")},
        write=(110, (sb(113, 118, ACKNOWLEDGED, 1),)),
        kip_write=(-1, (sb(113, 118, ACKNOWLEDGED, 1),)),
    )

    # Fetch records 111, 112 (consumer 3): delivery count 2.
    clock.advance(1_000)
    assert ranges(sp.acquire(C3, 2, BIG)) == [(111, 112, 2)]
    ex.step(
        spso=110,
        speo=121,
        records={(111, 112): (ACQUIRED, 2, C3)},
        write=None,
    )

    # Acknowledge 110 (consumer 1): SPSO=111.  The KIP writes {-1, [110-110 Acked dc 2]}, as
    # Kafka does (with the unchanged SPSO 110 for -1).
    clock.advance(1_000)
    assert sp.acknowledge(C1, [ack(110, 110, ACCEPT)]) is ErrorCode.NONE
    ex.step(
        spso=111,
        speo=121,
        records={},
        write=(110, (sb(110, 110, ACKNOWLEDGED, 2),)),
        kip_write=(-1, (sb(110, 110, ACKNOWLEDGED, 2),)),
    )
    assert ours.last_write.delivery_complete_count == 8  # 110, 113-118 and 119

    # Acknowledge 111, 112 (consumer 3): SPSO=120; {"StartOffset": 120, "StateBatches": []}
    clock.advance(1_000)
    assert sp.acknowledge(C3, [ack(111, 112, ACCEPT)]) is ErrorCode.NONE
    ex.step(
        spso=120,
        speo=121,
        records={},
        write=(111, (sb(111, 112, ACKNOWLEDGED, 2),)),
        kip_write=(120, ()),
    )
    assert sp.state_batches() == [PersisterStateBatch(120, 120, int(ACQUIRED), 1)]
    # Kafka's persisted view: start 111 (one write behind), 111-119 complete: lag 121-111-9 = 1.
    assert (ours.start_offset, ours.delivery_complete_count) == (111, 9)
    assert effective(ours) == (120, ())

    # The durable state alone is enough for a new leader: 120 was never acknowledged, so it
    # comes back (acquisitions are not persisted, hence delivery count 1 again).
    again = make_sp(log, ours, ManualClock(NOW))
    assert (again.start_offset, again.end_offset, again.next_fetch_offset) == (120, 120, 120)
    assert ranges(again.acquire(C2, 10, BIG)) == [(120, 120, 1)]


def test_worked_example_when_consumer_1_leaves_instead() -> None:
    """Consumer 1's session closes instead of its lock timing out: only its records return."""
    log = DataLog()
    log.pad_to(110)
    ours = FakePersister()
    clock = ManualClock(NOW)
    sp = make_sp(log, ours, clock)
    log.append_batches(3, 6, 1)
    sp.acquire(C1, 3, BIG)
    sp.acquire(C2, 6, BIG)
    sp.acquire(C3, 1, BIG)
    assert sp.release_acquired_records(C1) is ErrorCode.NONE
    assert ours.last_write.batches == (sb(110, 112, AVAILABLE, 1),)
    assert states(sp, 110, 119) == [(AVAILABLE, 1, "")] * 3 + [(ACQUIRED, 1, C2)] * 6 + [
        (ACQUIRED, 1, C3)
    ]
    assert ranges(sp.acquire(C3, 3, BIG)) == [(110, 112, 2)]
