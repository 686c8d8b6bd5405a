"""The internal logs are compacted, and a cleaned log replays to the same coordinator state.

Write = replay: every coordinator rebuilds its state from its log, so the property to hold
is that replaying the log after a clean gives exactly what replaying it before gave -- for
the consumer-group coordinator (offsets, transactional offset commits committed, aborted and
still open, deleted groups), the transaction coordinator (transactional ids used again and
again, ids expired by tombstones) and the share-group coordinator (members joining and
leaving).  ``__share_group_state`` is pruned by its coordinator instead (snapshots, then the
log start offset), as Kafka's share coordinator does.
"""

from __future__ import annotations

import random

from coordinator.broker import BrokerCore
from coordinator.group.offset_commands import Committer
from coordinator.log.memory_log import MemoryStorage
from coordinator.share.manager import PartitionAcks, ShareFetchOutcome
from coordinator.share.share_partition import AckBatch
from txn.batch import build_batch
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import (
    SHARE_GROUP_STATE_TOPIC,
    TRANSACTION_STATE_TOPIC,
    TopicIdPartition,
    TopicPartition,
)
from txn.txn_log import read_records

T0 = 1_700_000_000_000
CONFIG = BrokerConfig(
    {
        "offsets.topic.segment.bytes": "2000",
        "transaction.state.log.segment.bytes": "2000",
        "share.coordinator.state.topic.segment.bytes": "2000",
        "share.coordinator.state.topic.num.partitions": "1",
        "share.coordinator.snapshot.update.records.per.snapshot": "5",
        "log.cleaner.min.cleanable.ratio": "0.01",
        "log.cleaner.delete.retention.ms": "60000",
        "log.cleaner.enable": "false",  # passes are run by hand
        "transactional.id.expiration.ms": "600000",
        "group.share.min.session.timeout.ms": "1000",
        "transaction.state.log.num.partitions": "1",
    }
)


def core_at(storage: MemoryStorage, now_ms: int) -> BrokerCore:
    return BrokerCore(storage, ManualClock(now_ms), CONFIG, random.Random(5))


def txn_round(core: BrokerCore, tid: str, round_: int, commit: bool, end: bool = True) -> None:
    clock = core.clock
    assert isinstance(clock, ManualClock)
    init = core.txn_coordinator.init_producer_id(tid, 60000)
    assert init.error is ErrorCode.NONE
    pid, epoch = init.producer_id, init.producer_epoch
    assert core.add_offsets_to_txn(tid, pid, epoch) is ErrorCode.NONE
    offsets = {TopicPartition("in", p): (round_ * 10 + p, -1, f"{tid}") for p in range(2)}
    results = core.txn_offset_commit(tid, pid, epoch, f"g-{tid}", -1, "", None, offsets)
    assert set(results.values()) == {ErrorCode.NONE}
    if end:
        assert core.txn_coordinator.end_txn(tid, pid, epoch, commit, tv2=False).error is (
            ErrorCode.NONE
        )
        clock.advance(10)  # the markers reach __consumer_offsets


def grow_history(core: BrokerCore, rounds: int) -> None:
    clock = core.clock
    assert isinstance(clock, ManualClock)
    core.create_topic("in", 2, 1)
    batch = build_batch([(None, b"v%d" % i) for i in range(20)], timestamp_ms=clock.now_ms())
    assert core.produce(TopicPartition("in", 0), batch, None).error is ErrorCode.NONE
    info = core.topics.get("in")
    assert info is not None
    tip = TopicIdPartition(info.topic_id, 0)
    core.share.groups.alter_group_configs("sg", {"share.auto.offset.reset": "earliest"})
    for round_ in range(rounds):
        for g in range(3):  # plain offset commits of the same groups, again and again
            offsets = {TopicPartition("in", p): (round_ + p, -1, None) for p in range(2)}
            assert set(
                core.groups.commit_offsets(Committer(f"g{g}", -1, "", None), offsets).values()
            ) == {ErrorCode.NONE}
        for t in range(3):  # the same transactional ids, committed and aborted
            txn_round(core, f"t{t}", round_, commit=(round_ + t) % 3 != 0)
        # A share member joins, acknowledges, leaves (member records and their tombstones).
        member = f"m{round_}"
        assert core.share.heartbeat("sg", member, 0, None, ["in"]).error is ErrorCode.NONE
        error, session = core.share.open_or_check_session("sg", member, 0, connection_id=round_)
        assert error is ErrorCode.NONE and session is not None
        session.add([tip])
        outcome = ShareFetchOutcome(ErrorCode.NONE)
        core.share.acquire("sg", member, session, 1, 1 << 20, outcome)
        if round_ < 20:
            acks = [PartitionAcks(tip, [AckBatch(round_, round_, [1])])]
            core.share.acknowledge("sg", member, acks)
        core.share.close_session("sg", member)
        assert core.share.heartbeat("sg", member, -1, None, ["in"]).error is ErrorCode.NONE
        clock.advance(100)
    # A group deleted (offset tombstones and a group tombstone), an offset deleted.
    assert core.groups.delete_groups(["g2"]) == {"g2": ErrorCode.NONE}
    # An id whose transaction stays open: cleaning stops at its first offset.
    txn_round(core, "open", 99, commit=True, end=False)


def state_of(core: BrokerCore) -> dict[str, str]:
    groups = core.groups
    txns = core.txn_coordinator
    share = core.share.groups
    return {
        "offsets": repr(sorted(groups.offsets.committed.items())),
        "pending": repr(sorted(groups.offsets.pending.items())),
        "groups": repr(sorted(map(repr, groups.list_groups()))),
        "describe": repr(groups.describe([*sorted(groups.offsets.committed), "g2"])),
        "txns": repr(sorted((tid, vars(m)) for tid, m in txns._txns.items())),
        "share-groups": repr(sorted(share._shard.groups.items())),
        "share-partitions": repr(sorted(share._shard.partition_states.items())),
    }


def sizes(storage: MemoryStorage) -> dict[str, int]:
    out = {}
    for topic, partition in storage.list_logs():
        if topic.startswith("__"):
            log = storage.open_log(topic, partition)
            out[f"{topic}-{partition}"] = sum(s.size_bytes for s in log.segments())
    return out


def clean_until_done(storage: MemoryStorage, now_ms: int) -> tuple[int, int]:
    """Passes a delete.retention.ms apart, each by a broker started then (advancing a
    broker's clock would time its open transaction out): KIP-534 removes a tombstone or
    marker on a pass after the one that set its delete horizon, and a marker gets one only
    on a pass after the one that removed its transaction's records.  The time of the last
    pass, and the passes that changed a log."""
    runs = 0
    for n in range(4):
        core = core_at(storage, now_ms + n * 60_001)
        core.run_cleaner()
        runs += core.cleaner_runs
        core.close()
    return now_ms + 3 * 60_001, runs


def test_a_cleaned_internal_log_replays_to_the_same_state() -> None:
    storage = MemoryStorage()
    live = core_at(storage, T0)
    grow_history(live, 30)
    live.close()
    later = T0 + 3_600_000  # past delete.retention.ms: tombstones and markers may go too
    before_core = core_at(storage, later)
    before = state_of(before_core)
    assert "'t1'" in before["txns"] and "'g2'" not in before["offsets"]
    grown = sizes(storage)
    before_core.close()
    done, runs = clean_until_done(storage, later)
    assert runs >= 3
    after_core = core_at(storage, done)
    assert state_of(after_core) == before
    cleaned = sizes(storage)
    for name in ("__consumer_offsets-0", "__consumer_offsets-1", f"{TRANSACTION_STATE_TOPIC}-0"):
        assert cleaned[name] < grown[name] / 3, (name, grown[name], cleaned[name])
    # A second pass finds nothing to do, and the state still replays the same.
    assert after_core.run_cleaner() == 0
    after_core.close()
    assert state_of(core_at(storage, done)) == before


def test_expired_transactional_ids_and_deleted_groups_leave_no_trace() -> None:
    storage = MemoryStorage()
    core = core_at(storage, T0)
    grow_history(core, 10)
    clock = core.clock
    assert isinstance(clock, ManualClock)
    clock.advance(700_000)  # every idle transactional id expires: tombstones
    expired = sorted(core.txn_coordinator.remove_expired_transactional_ids())
    assert expired == ["open", "t0", "t1", "t2"]
    for round_ in range(10):  # later writes roll the tombstones out of the active segment
        txn_round(core, "u", round_, commit=True)
    core.close()
    later = T0 + 7_200_000
    first = core_at(storage, later)
    state = state_of(first)
    first.close()
    done, _runs = clean_until_done(storage, later)
    again = core_at(storage, done)
    assert state_of(again) == state
    # The tombstones themselves are gone once older than delete.retention.ms.
    keys = set()
    log = storage.open_log(TRANSACTION_STATE_TOPIC, 0)
    for _h, raw in log.batches(log.log_start_offset):
        for key, value in read_records(raw):
            keys.add((bytes(key or b""), value is None))
    assert not any(tombstone for _k, tombstone in keys)
    again.close()


def test_share_group_state_is_pruned_not_compacted() -> None:
    storage = MemoryStorage()
    core = core_at(storage, T0)
    grow_history(core, 30)
    assert core.share.persister.prune()  # snapshots made the early records redundant
    core.close()
    log = storage.open_log(SHARE_GROUP_STATE_TOPIC, 0)
    assert log.log_start_offset > 0
