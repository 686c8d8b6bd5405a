"""Kafka's state-batch merge rule (PersisterStateBatchCombiner), reference §4 and seed 000."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordinator.share.persister import PersisterStateBatch
from coordinator.share.state_combiner import coalesce, combine, covers, priority, prune
from txn.share_state import RecordState

AVAILABLE = int(RecordState.AVAILABLE)
ACQUIRED = int(RecordState.ACQUIRED)
ACKED = int(RecordState.ACKNOWLEDGED)
ARCHIVED = int(RecordState.ARCHIVED)


def b(first: int, last: int, state: int, count: int) -> PersisterStateBatch:
    return PersisterStateBatch(first, last, state, count)


# --- pruning ---------------------------------------------------------------------------------


def test_prune_keeps_everything_without_a_start_offset() -> None:
    batches = [b(0, 5, AVAILABLE, 1), b(10, 12, ACKED, 1)]
    assert prune(batches, -1) == batches


def test_prune_drops_and_cuts() -> None:
    batches = [b(0, 5, AVAILABLE, 1), b(6, 12, ACKED, 1), b(20, 30, ARCHIVED, 2)]
    assert prune(batches, 8) == [b(8, 12, ACKED, 1), b(20, 30, ARCHIVED, 2)]
    assert prune(batches, 13) == [b(20, 30, ARCHIVED, 2)]
    assert prune(batches, 31) == []


def test_current_batches_straddling_the_start_are_cut() -> None:
    assert combine([b(100, 130, AVAILABLE, 1)], [], 120) == [b(120, 130, AVAILABLE, 1)]


def test_new_batches_straddling_the_start_are_cut() -> None:
    assert combine([], [b(100, 130, AVAILABLE, 1)], 120) == [b(120, 130, AVAILABLE, 1)]


def test_both_empty() -> None:
    assert combine([], [], 120) == []
    assert combine([], []) == []


# --- equal delivery information: coalesced ---------------------------------------------------


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        (b(100, 110, AVAILABLE, 1), b(100, 110, AVAILABLE, 1)),  # identical
        (b(100, 105, AVAILABLE, 1), b(100, 110, AVAILABLE, 1)),  # same first, shorter
        (b(100, 115, AVAILABLE, 1), b(100, 115, AVAILABLE, 1)),  # same first, longer
        (b(105, 108, AVAILABLE, 1), b(100, 110, AVAILABLE, 1)),  # inside
        (b(105, 110, AVAILABLE, 1), b(100, 110, AVAILABLE, 1)),  # same last
        (b(105, 115, AVAILABLE, 1), b(100, 115, AVAILABLE, 1)),  # overlapping tail
        (b(111, 115, AVAILABLE, 1), b(100, 115, AVAILABLE, 1)),  # contiguous
        (b(90, 99, AVAILABLE, 1), b(90, 110, AVAILABLE, 1)),  # contiguous before
    ],
)
def test_same_state_merges_into_one(
    new: PersisterStateBatch, expected: PersisterStateBatch
) -> None:
    assert combine([b(100, 110, AVAILABLE, 1)], [new]) == [expected]


def test_same_state_with_a_gap_stays_apart() -> None:
    assert combine([b(100, 110, AVAILABLE, 1)], [b(112, 115, AVAILABLE, 1)]) == [
        b(100, 110, AVAILABLE, 1),
        b(112, 115, AVAILABLE, 1),
    ]


# --- different delivery information: higher (count, state) wins ------------------------------


@pytest.mark.parametrize(
    ("current", "new", "expected"),
    [
        # aligned, new higher / lower count
        (b(100, 110, 0, 1), b(100, 110, 0, 2), [b(100, 110, 0, 2)]),
        (b(100, 110, 0, 3), b(100, 110, 0, 1), [b(100, 110, 0, 3)]),
        # same first, new shorter
        (b(100, 110, 0, 1), b(100, 105, 0, 2), [b(100, 105, 0, 2), b(106, 110, 0, 1)]),
        (b(100, 110, 0, 3), b(100, 105, 0, 1), [b(100, 110, 0, 3)]),
        # same first, new longer
        (b(100, 110, 0, 1), b(100, 115, 0, 2), [b(100, 115, 0, 2)]),
        (b(100, 110, 0, 3), b(100, 115, 0, 1), [b(100, 110, 0, 3), b(111, 115, 0, 1)]),
        # new strictly inside (higher state at equal count, then lower)
        (
            b(100, 115, 0, 1),
            b(105, 110, 1, 1),
            [b(100, 104, 0, 1), b(105, 110, 1, 1), b(111, 115, 0, 1)],
        ),
        (b(100, 115, 1, 1), b(105, 110, 0, 1), [b(100, 115, 1, 1)]),
        # same last
        (b(100, 110, 0, 1), b(105, 110, 0, 2), [b(100, 104, 0, 1), b(105, 110, 0, 2)]),
        (b(100, 110, 0, 2), b(105, 110, 0, 1), [b(100, 110, 0, 2)]),
        # overlapping tail
        (b(100, 110, 0, 1), b(105, 115, 0, 2), [b(100, 104, 0, 1), b(105, 115, 0, 2)]),
        (b(100, 110, 0, 2), b(105, 115, 0, 1), [b(100, 110, 0, 2), b(111, 115, 0, 1)]),
    ],
)
def test_overlap_resolved_by_priority(
    current: PersisterStateBatch, new: PersisterStateBatch, expected: list[PersisterStateBatch]
) -> None:
    assert combine([current], [new]) == expected


def test_delivery_count_beats_delivery_state() -> None:
    # ACKNOWLEDGED dc1 loses to AVAILABLE dc2: the count is compared first.
    assert combine([b(0, 9, ACKED, 1)], [b(0, 9, AVAILABLE, 2)]) == [b(0, 9, AVAILABLE, 2)]
    assert priority(b(0, 0, ACKED, 1)) < priority(b(0, 0, AVAILABLE, 2))


def test_old_state_wins_when_higher() -> None:
    # The KIP-1289 hazard (DESIGN §4.6): an abort reverting to AVAILABLE with the same delivery
    # count cannot overwrite ACKNOWLEDGED through this merge.
    assert combine([b(5, 9, ACKED, 1)], [b(5, 9, AVAILABLE, 1)]) == [b(5, 9, ACKED, 1)]


def test_overlapping_new_batches_same_state() -> None:
    current = [b(100, 110, 0, 1), b(121, 130, 0, 1)]
    new = [b(111, 119, 2, 2), b(116, 123, 2, 2)]
    assert combine(current, new) == [b(100, 110, 0, 1), b(111, 123, 2, 2), b(124, 130, 0, 1)]


def test_overlapping_new_batches_different_priority() -> None:
    current = [b(100, 110, 0, 1)]
    new = [b(101, 105, 1, 2), b(101, 115, 2, 2), b(101, 120, 3, 2)]
    assert combine(current, new) == [b(100, 100, 0, 1), b(101, 120, 3, 2)]


def test_overlapping_new_batches_with_pruning() -> None:
    current = [b(100, 110, 0, 1), b(121, 130, 0, 1)]
    new = [b(111, 119, 2, 2), b(116, 123, 2, 2)]
    assert combine(current, new, 120) == [b(120, 123, 2, 2), b(124, 130, 0, 1)]


def test_several_higher_updates() -> None:
    current = [b(111, 120, 0, 1)]
    new = [b(111, 113, 0, 2), b(114, 114, 2, 1), b(115, 119, 0, 2)]
    assert combine(current, new) == [
        b(111, 113, 0, 2),
        b(114, 114, 2, 1),
        b(115, 119, 0, 2),
        b(120, 120, 0, 1),
    ]


def test_neighbours_made_equal_by_the_merge_are_coalesced() -> None:
    # 5-9 becomes ACKED dc1, equal to both neighbours: one range results.
    current = [b(0, 4, ACKED, 1), b(5, 9, AVAILABLE, 1), b(10, 14, ACKED, 1)]
    assert combine(current, [b(5, 9, ACKED, 1)]) == [b(0, 14, ACKED, 1)]


def test_unsorted_input_and_empty_ranges() -> None:
    assert combine([b(10, 12, 0, 1), b(0, 2, 0, 1)], [b(5, 4, 2, 9)]) == [
        b(0, 2, 0, 1),
        b(10, 12, 0, 1),
    ]


def test_coalesce_and_covers() -> None:
    batches = coalesce([b(3, 5, 0, 1), b(0, 2, 0, 1), b(7, 9, 2, 1)])
    assert batches == [b(0, 5, 0, 1), b(7, 9, 2, 1)]
    assert covers(batches, 4) == b(0, 5, 0, 1)
    assert covers(batches, 6) is None
    assert covers(batches, 9) == b(7, 9, 2, 1)
    assert covers(batches, 10) is None


# --- the worked example of KIP-932 (seed 000) ------------------------------------------------


def test_kip932_worked_example() -> None:
    """Each WriteShareGroupState of the KIP's table merged into the cumulative state."""
    start, state = 100, combine([], [], 100)  # initial: SPSO=100, no batches
    steps: list[tuple[int, list[PersisterStateBatch], int, list[PersisterStateBatch]]] = [
        # (request StartOffset, request batches, expected SPSO, expected state)
        (110, [], 110, []),  # fetch + acknowledge 100-109
        (-1, [b(110, 110, AVAILABLE, 1)], 110, [b(110, 110, AVAILABLE, 1)]),  # release 110
        (
            -1,
            [b(119, 119, ACKED, 1)],  # acknowledge 119
            110,
            [b(110, 110, AVAILABLE, 1), b(119, 119, ACKED, 1)],
        ),
        (
            -1,
            [b(111, 112, AVAILABLE, 1)],  # lock timeout 111-112
            110,
            [b(110, 112, AVAILABLE, 1), b(119, 119, ACKED, 1)],
        ),
        (
            -1,
            [b(113, 118, ACKED, 1)],  # acknowledge 113-118
            110,
            [b(110, 112, AVAILABLE, 1), b(113, 119, ACKED, 1)],
        ),
        (
            -1,
            [b(110, 110, ACKED, 2)],  # acknowledge 110 (second delivery)
            110,
            [b(110, 110, ACKED, 2), b(111, 112, AVAILABLE, 1), b(113, 119, ACKED, 1)],
        ),
        (120, [], 120, []),  # acknowledge 111-112: SPSO=120
    ]
    for request_start, request_batches, expected_start, expected_state in steps:
        start = start if request_start == -1 else request_start
        state = combine(state, request_batches, start)
        assert (start, state) == (expected_start, expected_state)


# --- properties ------------------------------------------------------------------------------

small_batch = st.builds(
    lambda first, length, state, count: b(first, first + length, state, count),
    st.integers(0, 40),
    st.integers(0, 8),
    st.sampled_from([AVAILABLE, ACQUIRED, ACKED, ARCHIVED]),
    st.integers(0, 4),
)
batch_lists = st.lists(small_batch, max_size=8)
start_offsets = st.one_of(st.just(-1), st.integers(0, 50))


def model(batches: list[PersisterStateBatch], start: int) -> dict[int, tuple[int, int]]:
    """Per offset: the winning (count, state) -- the rule stated plainly."""
    winners: dict[int, tuple[int, int]] = {}
    for batch in batches:
        for offset in range(batch.first_offset, batch.last_offset + 1):
            if start != -1 and offset < start:
                continue
            key = priority(batch)
            if offset not in winners or key > winners[offset]:
                winners[offset] = key
    return winners


def expand(batches: list[PersisterStateBatch]) -> dict[int, tuple[int, int]]:
    return {
        offset: priority(batch)
        for batch in batches
        for offset in range(batch.first_offset, batch.last_offset + 1)
    }


def is_canonical(batches: list[PersisterStateBatch]) -> bool:
    for left, right in itertools.pairwise(batches):
        if left.last_offset >= right.first_offset:
            return False
        if left.last_offset + 1 == right.first_offset and priority(left) == priority(right):
            return False
    return all(x.first_offset <= x.last_offset for x in batches)


@given(batch_lists, batch_lists, start_offsets)
def test_combine_matches_the_per_offset_rule(
    current: list[PersisterStateBatch], new: list[PersisterStateBatch], start: int
) -> None:
    result = combine(current, new, start)
    assert expand(result) == model(current + new, start)
    assert is_canonical(result)


@given(batch_lists, batch_lists, batch_lists, start_offsets)
def test_merging_in_steps_equals_merging_at_once(
    a: list[PersisterStateBatch],
    b_: list[PersisterStateBatch],
    c: list[PersisterStateBatch],
    start: int,
) -> None:
    assert combine(combine(a, b_, start), c, start) == combine(a, b_ + c, start)
    assert combine(a, b_, start) == combine(b_, a, start)


@given(batch_lists)
def test_combine_is_idempotent(batches: list[PersisterStateBatch]) -> None:
    once = coalesce(batches)
    assert coalesce(once) == once
    assert combine(once, once) == once
