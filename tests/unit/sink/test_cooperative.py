"""Connect's incremental cooperative assignor (KIP-415), on a manual clock."""

from __future__ import annotations

from producer.sink.cooperative import (
    CoopAssignment,
    CooperativeAssignor,
    CoopMetadata,
    Item,
    decode_coop_assignment,
    decode_coop_metadata,
    encode_coop_assignment,
    encode_coop_metadata,
)

C = -1  # the connector itself


def meta(url: str, allocation: set[Item] | None) -> CoopMetadata:
    return CoopMetadata(url, 7, allocation)


def apply(
    owned: dict[str, set[Item]], plan: dict[str, tuple[set[Item], set[Item]]]
) -> dict[str, set[Item]]:
    return {m: (owned.get(m, set()) - plan[m][1]) | plan[m][0] for m in plan}


def rounds(
    assignor: CooperativeAssignor,
    owned: dict[str, set[Item]],
    configured: dict[str, int],
    now: int,
) -> tuple[dict[str, set[Item]], list[dict[str, tuple[set[Item], set[Item]]]], int]:
    """Rebalance until nothing is revoked (the workers rejoin at once after a revocation)."""
    plans = []
    while True:
        members = {m: meta(f"http://{m}/", owned.get(m)) for m in owned}
        plan, delay = assignor.assign(members, configured, now)
        plans.append(plan)
        owned = apply(owned, plan)
        if not any(revoked for _, revoked in plan.values()):
            return owned, plans, delay


def test_wire_round_trip() -> None:
    a = CoopAssignment(0, "m1", "http://a/", 12, {("x", C), ("x", 0)}, {("y", 2)}, 5000)
    assert decode_coop_assignment(encode_coop_assignment(a, 2)) == a
    m = CoopMetadata("http://a/", 3, {("x", 1)})
    assert decode_coop_metadata(encode_coop_metadata(m, 1)) == m
    empty = CoopMetadata("http://a/", 3, None)
    assert decode_coop_metadata(encode_coop_metadata(empty, 2)) == empty


def test_first_assignment_is_spread_and_nothing_moves_after() -> None:
    assignor = CooperativeAssignor(max_delay_ms=1000)
    owned, plans, delay = rounds(assignor, {"a": set(), "b": set()}, {"x": 4}, now=0)
    assert delay == 0 and len(plans) == 1
    # connectors and tasks are balanced apart, as Connect counts them
    assert owned == {"a": {("x", C), ("x", 0), ("x", 2)}, "b": {("x", 1), ("x", 3)}}
    again, plans, _ = rounds(assignor, owned, {"x": 4}, now=10)
    assert again == owned
    assert all(not gained and not revoked for gained, revoked in plans[0].values())


def test_a_new_worker_takes_a_share_without_stopping_the_rest() -> None:
    assignor = CooperativeAssignor(max_delay_ms=1000)
    owned, _, _ = rounds(assignor, {"a": set(), "b": set()}, {"x": 6}, now=0)
    before = {m: set(items) for m, items in owned.items()}
    owned, plans, _ = rounds(assignor, {**owned, "c": set()}, {"x": 6}, now=10)
    assert len(plans) == 2  # revoke the excess, then assign it
    tasks = {m: sorted(t for _, t in items if t != C) for m, items in owned.items()}
    assert sorted(len(t) for t in tasks.values()) == [2, 2, 2]
    for m in ("a", "b"):  # what a worker keeps never stopped
        assert not (plans[0][m][0] | plans[1][m][0]) & before[m]
        assert owned[m] <= before[m]


def test_a_lost_worker_s_tasks_wait_for_the_delay() -> None:
    assignor = CooperativeAssignor(max_delay_ms=1000)
    owned, _, _ = rounds(assignor, {"a": set(), "b": set()}, {"x": 4}, now=0)
    lost = owned.pop("b")
    owned, plans, delay = rounds(assignor, owned, {"x": 4}, now=100)
    assert delay == 1000 and not plans[0]["a"][0]  # held for b
    owned, plans, delay = rounds(assignor, owned, {"x": 4}, now=600)
    assert delay == 500 and not plans[0]["a"][0]
    owned, plans, delay = rounds(assignor, owned, {"x": 4}, now=1100)
    assert delay == 0 and plans[0]["a"][0] == lost  # the delay is over: a takes them


def test_a_worker_back_within_the_delay_gets_its_tasks_again() -> None:
    assignor = CooperativeAssignor(max_delay_ms=1000)
    owned, _, _ = rounds(assignor, {"a": set(), "b": set()}, {"x": 4}, now=0)
    lost = owned.pop("b")
    owned, _, delay = rounds(assignor, owned, {"x": 4}, now=100)
    assert delay == 1000
    owned, plans, delay = rounds(assignor, {**owned, "b": set()}, {"x": 4}, now=300)
    assert delay == 0 and plans[0]["b"][0] == lost


def test_no_delay_reassigns_at_once_and_deleted_tasks_are_revoked() -> None:
    assignor = CooperativeAssignor(max_delay_ms=0)
    owned, _, _ = rounds(assignor, {"a": set(), "b": set()}, {"x": 4, "y": 1}, now=0)
    del owned["b"]
    owned, _, delay = rounds(assignor, owned, {"x": 4, "y": 1}, now=1)
    assert delay == 0 and len(owned["a"]) == 7
    members = {"a": meta("http://a/", owned["a"])}
    plan, _ = assignor.assign(members, {"x": 2}, 2)
    assert plan["a"][1] == {("x", 2), ("x", 3), ("y", C), ("y", 0)}
