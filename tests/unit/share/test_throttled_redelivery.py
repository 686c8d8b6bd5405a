"""Throttled redelivery (KAFKA-17541): the sequences Apache Kafka 4.4 answered in the
differential ``share/throttle_*`` scenarios, reproduced on one share partition."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from coordinator.share.acquisition import throttle_limit
from coordinator.share.share_partition import SharePartition, SharePartitionConfig
from tests.unit.share.fakes_sp import ACCEPT, REJECT, RELEASE, ack, ranges, rig
from txn.errors import ErrorCode

BIG = 1 << 20
Rule = Callable[[int], int]


def _rounds(sp: SharePartition, rule: Rule, n: int = 500) -> list[list[tuple[int, int, int]]]:
    """ShareFetch, acknowledge each record by ``rule``, until nothing is acquired."""
    out: list[list[tuple[int, int, int]]] = []
    while len(out) < 100:
        got = ranges(sp.acquire("m1", n, BIG))
        if not got:
            return out
        out.append(got)
        batches = [ack(o, o, rule(o)) for first, last, _ in got for o in range(first, last + 1)]
        assert sp.acknowledge("m1", batches) is ErrorCode.NONE
    raise AssertionError("no end")


def _release(_offset: int) -> int:
    return RELEASE


@pytest.mark.parametrize(("limit", "mark"), [(2, 2), (3, 2), (4, 2), (5, 3), (6, 3), (10, 5)])
def test_throttle_limit_is_half_the_delivery_limit_rounded_up_at_least_two(
    limit: int, mark: int
) -> None:
    assert throttle_limit(limit) == mark


def test_limit_2_redelivers_the_whole_batch() -> None:
    sp = rig(6, config=SharePartitionConfig(delivery_count_limit=2)).sp
    assert _rounds(sp, _release) == [[(0, 5, 1)], [(0, 5, 2)]]


def test_limit_3_last_attempts_come_alone() -> None:
    sp = rig(6, config=SharePartitionConfig(delivery_count_limit=3)).sp
    singles = [[(o, o, 3)] for o in range(6)]
    assert _rounds(sp, _release) == [[(0, 5, 1)], [(0, 5, 2)], *singles]


def test_limit_5_halves_the_batch_then_isolates_last_attempts() -> None:
    sp = rig(10, config=SharePartitionConfig(delivery_count_limit=5)).sp
    assert _rounds(sp, _release) == [
        [(0, 9, 1)],
        [(0, 9, 2)],
        [(0, 9, 3)],
        [(0, 4, 4)],  # 10 >> 1
        *[[(o, o, 5)] for o in range(5)],
        [(5, 9, 4)],
        *[[(o, o, 5)] for o in range(5, 10)],
    ]


def test_limit_6_halves_once_per_delivery_past_the_mark() -> None:
    sp = rig(12, config=SharePartitionConfig(delivery_count_limit=6)).sp
    got = _rounds(sp, _release)
    assert got[:6] == [
        [(0, 11, 1)],
        [(0, 11, 2)],
        [(0, 11, 3)],
        [(0, 5, 4)],  # 12 >> 1
        [(0, 2, 5)],  # 12 >> 2
        [(0, 0, 6)],
    ]
    assert len(got) == 21


def test_mixed_acknowledgements_isolate_only_the_last_attempt() -> None:
    sp = rig(12, config=SharePartitionConfig(delivery_count_limit=5)).sp
    released = [(o, o, 0) for o in range(1, 12, 3)]
    got = _rounds(sp, lambda o: (ACCEPT, RELEASE, REJECT)[o % 3])
    assert got == [
        [(0, 11, 1)],
        *[[(o, o, dc) for o, _, _ in released] for dc in (2, 3, 4)],
        *[[(o, o, 5)] for o, _, _ in released],
    ]


def test_a_throttled_batch_ends_the_fetch_and_takes_nothing_new() -> None:
    r = rig(5, 5, config=SharePartitionConfig(delivery_count_limit=5))  # 0-4, 5-9
    sp = r.sp
    for dc in (1, 2, 3):
        assert ranges(sp.acquire("m1", 1, BIG)) == [(0, 4, dc)]
        assert sp.acknowledge("m1", [ack(0, 4, RELEASE)]) is ErrorCode.NONE
    # 0-4 was delivered 3 times, the mark of limit 5: 5 >> 1 records, and not 5-9.
    assert ranges(sp.acquire("m1", 500, BIG)) == [(0, 1, 4)]
    assert ranges(sp.acquire("m1", 500, BIG)) == [(2, 3, 4)]
    assert ranges(sp.acquire("m1", 500, BIG)) == [(4, 4, 4)]
    assert ranges(sp.acquire("m1", 500, BIG)) == [(5, 9, 1)]


def test_a_throttled_batch_waits_for_a_fetch_that_acquired_nothing_before_it() -> None:
    r = rig(5, 5, config=SharePartitionConfig(delivery_count_limit=3))  # 0-4, 5-9
    sp = r.sp
    assert ranges(sp.acquire("m1", 1, BIG)) == [(0, 4, 1)]
    assert ranges(sp.acquire("m1", 1, BIG)) == [(5, 9, 1)]
    assert sp.acknowledge("m1", [ack(0, 4, RELEASE)]) is ErrorCode.NONE
    assert ranges(sp.acquire("m1", 1, BIG)) == [(0, 4, 2)]
    assert sp.acknowledge("m1", [ack(0, 9, RELEASE)]) is ErrorCode.NONE
    # 0-4 (delivered twice, limit 3: last attempts) come alone; 5-9 wait behind them.
    assert ranges(sp.acquire("m1", 500, BIG)) == [(0, 0, 3)]
