"""SimpleAssignor properties: coverage, desired sharing, balance, stickiness (reference §5)."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.share.assignor import Assignment, SimpleAssignor
from txn.ids import TopicIdPartition

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)
T3 = uuid.UUID(int=3)
ASSIGNOR = SimpleAssignor()


def tps(topic: uuid.UUID, *partitions: int) -> set[TopicIdPartition]:
    return {TopicIdPartition(topic, p) for p in partitions}


def homogeneous(
    members: int, partitions: int, current: Mapping[str, Assignment] | None = None
) -> dict[str, Assignment]:
    subs = {f"m{i:02d}": [T1] for i in range(members)}
    return ASSIGNOR.assign(subs, {T1: range(partitions)}, current or {})


def holders(result: Mapping[str, Assignment]) -> Counter[TopicIdPartition]:
    return Counter(tp for assigned in result.values() for tp in assigned)


def spread(result: Mapping[str, Assignment]) -> int:
    counts = [len(a) for a in result.values()]
    return max(counts) - min(counts)


# --- examples ---------------------------------------------------------------------------------


def test_name_is_simple() -> None:
    assert ASSIGNOR.name == "simple"


def test_no_members_no_assignment() -> None:
    assert ASSIGNOR.assign({}, {T1: [0, 1]}, {}) == {}


def test_one_member_gets_everything() -> None:
    assert homogeneous(1, 4) == {"m00": frozenset(tps(T1, 0, 1, 2, 3))}


def test_three_members_share_one_partition() -> None:
    result = homogeneous(3, 1)
    assert all(a == frozenset(tps(T1, 0)) for a in result.values())


def test_five_members_two_partitions_desired_sharing_three() -> None:
    result = homogeneous(5, 2)
    assert holders(result) == {TopicIdPartition(T1, 0): 3, TopicIdPartition(T1, 1): 3}
    assert sorted(len(a) for a in result.values()) == [1, 1, 1, 1, 2]


def test_only_assignable_partitions_are_given_out() -> None:
    result = ASSIGNOR.assign({"a": [T1], "b": [T1]}, {T1: [0, 2]}, {})
    assert set().union(*result.values()) == tps(T1, 0, 2)


def test_unsubscribed_and_unassignable_partitions_are_revoked() -> None:
    current = {"a": frozenset(tps(T1, 0, 1) | tps(T2, 0)), "b": frozenset(tps(T1, 5))}
    result = ASSIGNOR.assign({"a": [T1], "b": [T1]}, {T1: [0, 1], T2: [0]}, current)
    assert result == {"a": frozenset(tps(T1, 0)), "b": frozenset(tps(T1, 1))} or result == {
        "a": frozenset(tps(T1, 1)),
        "b": frozenset(tps(T1, 0)),
    }
    assert result["a"] <= current["a"]  # a keeps one of its own


def test_heterogeneous_balances_each_topic_among_its_subscribers() -> None:
    subs = {"a": [T1], "b": [T2], "c": [T1, T2]}
    result = ASSIGNOR.assign(subs, {T1: range(4), T2: range(4)}, {})
    assert {tp.topic_id for tp in result["a"]} == {T1}
    assert {tp.topic_id for tp in result["b"]} == {T2}
    assert len(result["c"]) == 4  # half of each topic
    assert holders(result) == Counter({tp: 1 for tp in tps(T1, 0, 1, 2, 3) | tps(T2, 0, 1, 2, 3)})


def test_heterogeneous_tie_breaks_rotate_across_topics() -> None:
    # a and b split two 3-partition topics; the odd partition of each topic must not land on
    # the same member both times.
    subs = {"a": [T1, T2], "b": [T1, T2], "c": [T3]}
    result = ASSIGNOR.assign(subs, {T1: range(3), T2: range(3), T3: range(1)}, {})
    assert (len(result["a"]), len(result["b"]), len(result["c"])) == (3, 3, 1)


# --- properties -------------------------------------------------------------------------------

sizes = st.tuples(st.integers(1, 12), st.integers(1, 12))


@st.composite
def previous_assignments(draw: st.DrawFn) -> tuple[int, int, dict[str, Assignment]]:
    """A group size, partition count and an arbitrary (possibly nonsensical) old assignment."""
    members, partitions = draw(sizes)
    garbage = st.frozensets(
        st.builds(TopicIdPartition, st.sampled_from([T1, T2]), st.integers(0, partitions + 2)),
        max_size=6,
    )
    current = {f"m{i:02d}": draw(garbage) for i in range(members + 2)}
    return members, partitions, current


@settings(max_examples=300, deadline=None)
@given(previous_assignments())
def test_every_partition_gets_the_desired_sharing_and_counts_balance(
    case: tuple[int, int, dict[str, Assignment]],
) -> None:
    members, partitions, current = case
    result = homogeneous(members, partitions, current)
    sharing = -(-members // partitions)
    assert holders(result) == {TopicIdPartition(T1, p): sharing for p in range(partitions)}
    assert spread(result) <= 1
    if members <= partitions:
        assert sharing == 1  # each partition exactly once
    else:
        assert all(result.values())  # nobody idles while partitions exist


@settings(max_examples=200, deadline=None)
@given(previous_assignments())
def test_a_balanced_assignment_is_stable(case: tuple[int, int, dict[str, Assignment]]) -> None:
    members, partitions, current = case
    first = homogeneous(members, partitions, current)
    assert homogeneous(members, partitions, first) == first


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 10), st.integers(1, 20))
def test_a_join_only_takes_partitions_away_from_existing_members(
    members: int, partitions: int
) -> None:
    before = homogeneous(members, partitions)
    after = homogeneous(members + 1, partitions, before)
    newcomer = f"m{members:02d}"
    assert spread(after) <= 1
    if members + 1 <= partitions:
        for member_id, assigned in before.items():
            assert after[member_id] <= assigned
        # Every partition the newcomer got moved from exactly one member: nothing else moved.
        moved = sum(len(before[m] - after[m]) for m in before)
        assert moved == len(after[newcomer])


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 10), st.integers(1, 20), st.data())
def test_a_leave_keeps_what_the_others_had(
    members: int, partitions: int, data: st.DataObject
) -> None:
    before = homogeneous(members, partitions)
    leaver = data.draw(st.sampled_from(sorted(before)))
    rest = {m: a for m, a in before.items() if m != leaver}
    subs = {m: [T1] for m in rest}
    after = ASSIGNOR.assign(subs, {T1: range(partitions)}, rest)
    if members <= partitions:  # no sharing before, so nobody is over its new quota
        for member_id, assigned in rest.items():
            assert assigned <= after[member_id]
    assert spread(after) <= 1


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from([f"m{i}" for i in range(8)]),
        st.frozensets(st.sampled_from([T1, T2, T3]), min_size=1),
        min_size=1,
    ),
    st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 6)),
)
def test_heterogeneous_respects_subscriptions_and_covers_every_partition(
    subs: dict[str, frozenset[uuid.UUID]], counts: tuple[int, int, int]
) -> None:
    assignable = dict(zip((T1, T2, T3), (range(n) for n in counts), strict=True))
    result = ASSIGNOR.assign(subs, assignable, {})
    for member_id, assigned in result.items():
        assert {tp.topic_id for tp in assigned} <= subs[member_id]
    hold = holders(result)
    if len(set(subs.values())) == 1:
        # Homogeneous: one pool, the union of the subscribed topics' partitions.
        pool = [TopicIdPartition(t, p) for t in next(iter(subs.values())) for p in assignable[t]]
        sharing = -(-len(subs) // len(pool))
        assert hold == {tp: sharing for tp in pool}
        assert spread(result) <= 1
        return
    for topic_id, n in zip((T1, T2, T3), counts, strict=True):
        subscribers = sum(1 for s in subs.values() if topic_id in s)
        if not subscribers:
            continue
        sharing = -(-subscribers // n)
        assert all(hold[TopicIdPartition(topic_id, p)] == sharing for p in range(n))
