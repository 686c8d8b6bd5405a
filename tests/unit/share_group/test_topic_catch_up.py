"""A subscribing heartbeat catches the share groups up with topic changes, and re-plans no
group while no topic changed since every group was last brought up to date."""

from __future__ import annotations

from typing import Any

import pytest

from coordinator.share.group_coordinator import ShareGroupCoordinator
from tests.unit.share_group.group_bench import Bench
from txn.errors import KafkaStorageError

GROUPS = [f"g{i}" for i in range(5)]


def _joined() -> Bench:
    bench = Bench()
    bench.create_topic("t", 2)
    for group in GROUPS:
        bench.join("m", ["t"], group)
        bench.initialize_all(group)
    bench.coordinator.on_topics_changed()
    return bench


def _planned(monkeypatch: pytest.MonkeyPatch, coordinator: ShareGroupCoordinator) -> list[str]:
    """The group ids ``coordinator`` plans from now on."""
    seen: list[str] = []
    plan = coordinator._plan

    def spy(group_id: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(group_id)
        return plan(group_id, *args, **kwargs)

    monkeypatch.setattr(coordinator, "_plan", spy)
    return seen


def _epochs(bench: Bench) -> dict[str, int]:
    epochs = {}
    for group in GROUPS:
        view = bench.coordinator.group(group)
        assert view is not None
        epochs[group] = view.group_epoch
    return epochs


def test_no_group_is_planned_while_the_topics_are_unchanged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bench = _joined()
    planned = _planned(monkeypatch, bench.coordinator)
    before = _epochs(bench)
    bench.coordinator.catch_up_topics()
    assert planned == []
    assert _epochs(bench) == before


def test_a_topic_change_is_caught_up_for_every_group(monkeypatch: pytest.MonkeyPatch) -> None:
    bench = _joined()
    before = _epochs(bench)
    bench.topics.add_partitions("t", 3, bench.clock.now_ms())
    planned = _planned(monkeypatch, bench.coordinator)
    bench.coordinator.catch_up_topics()
    assert planned == GROUPS
    assert all(_epochs(bench)[g] == before[g] + 1 for g in GROUPS)
    topic = bench.topic_id("t")
    for group in GROUPS:
        assert bench.coordinator.partitions_to_initialize(group) == [(topic, 2)]
    planned.clear()
    bench.coordinator.catch_up_topics()  # settled again
    assert planned == []


def test_a_failed_append_is_retried_by_the_next_catch_up() -> None:
    bench = _joined()
    before = _epochs(bench)
    bench.topics.add_partitions("t", 3, bench.clock.now_ms())
    bench.log.fail_next(KafkaStorageError("disk"))
    bench.coordinator.catch_up_topics()  # the first group's append fails, the others go on
    after = _epochs(bench)
    assert after[GROUPS[0]] == before[GROUPS[0]]
    assert all(after[g] == before[g] + 1 for g in GROUPS[1:])
    bench.coordinator.catch_up_topics()  # no topic changed since, but a group is behind
    assert _epochs(bench)[GROUPS[0]] == before[GROUPS[0]] + 1


def test_a_restart_forgets_that_the_groups_were_up_to_date(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bench = _joined()
    bench.coordinator.load()  # replays the log: nothing is known to be up to date
    planned = _planned(monkeypatch, bench.coordinator)
    bench.coordinator.catch_up_topics()
    assert planned == GROUPS
