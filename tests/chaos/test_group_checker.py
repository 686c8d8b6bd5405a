"""The consumer-group invariants (C1-C3) on hand-built histories, and the group workload in
the simulation: its workers commit every input exactly once, and its mutations are caught."""

from __future__ import annotations

from typing import Any

import pytest

from chaos.group_checker import check_groups
from chaos.history import BROKER, FINAL, NEMESIS, History
from chaos.runner import Simulation

pytestmark = pytest.mark.chaos

IN = "in"
GOUT = "gout"


class GroupStory:
    """Input partition 0 holds i0..i3; transactions copy ranges of it to the group output."""

    def __init__(self) -> None:
        self.h = History(0)
        self.t = 0
        self.inputs = [[k, f"i{k}"] for k in range(4)]
        self.visible: list[list[Any]] = []
        self.batches: list[list[Any]] = []
        self.committed_offset = 4
        self.pending: list[str] = []
        self.quiescent = True
        self.h.event(self._tick(), NEMESIS, "setup", {"group_output_topic": GOUT})

    def _tick(self) -> int:
        self.t += 1
        return self.t

    def txn(
        self, tag: str, offsets: range, *, outcome: str = "commit", visible: bool = True
    ) -> None:
        values = [f"i{o}@0:{o}|{tag}" for o in offsets]
        op = self.h.invoke(
            self._tick(),
            tag.rsplit(".", 1)[0],
            "group-txn",
            {"tag": tag, "inputs": [[0, o, f"i{o}"] for o in offsets], "outputs": {"0": values}},
        )
        base = len(self.batches) * 10
        self.h.event(
            self._tick(),
            BROKER,
            "produced",
            {"tid": tag, "pid": 7, "epoch": 0, "topic": GOUT, "partition": 0, "offset": base},
        )
        self.batches.append([base, base + len(values) - 1, 7, 0, True, False])
        if visible:
            self.visible.extend([base + k, v] for k, v in enumerate(values))
        result = "fail" if outcome == "failed" else "ok"
        self.h.complete(self._tick(), op, result, {"outcome": outcome})  # type: ignore[arg-type]

    def check(self) -> set[str]:
        found: list[tuple[str, str]] = []
        self.h.event(self._tick(), FINAL, "input", {"topic": IN, "partitions": {"0": self.inputs}})
        self.h.event(
            self._tick(),
            FINAL,
            "group-output",
            {"committed": {"0": self.visible}, "batches": {"0": self.batches}, "lso": {}},
        )
        self.h.event(
            self._tick(),
            FINAL,
            "group-offsets",
            {"group": "cg", "offsets": {"0": self.committed_offset}, "pending": self.pending},
        )
        self.h.event(self._tick(), FINAL, "txns", {"txns": {}, "quiescent": self.quiescent})
        check_groups(self.h.entries, lambda inv, msg, _e: found.append((inv, msg)))
        return {inv for inv, _msg in found}


def test_exactly_once_history_is_valid() -> None:
    story = GroupStory()
    story.txn("c0.1.1", range(2))
    story.txn("c0.1.2", range(2, 4), outcome="abort", visible=False)
    story.txn("c1.1.1", range(2, 4))
    assert story.check() == set()


def test_c1_input_reprocessed_after_its_offset_was_committed() -> None:
    story = GroupStory()
    story.txn("c0.1.1", range(3))
    story.txn("c1.1.1", range(2, 4))  # a zombie, or an offset read while pending
    assert "C1" in story.check()


def test_c2_committed_offset_skips_an_aborted_input() -> None:
    story = GroupStory()
    story.txn("c0.1.1", range(2))
    story.txn("c0.1.2", range(2, 4), outcome="abort", visible=False)
    assert "C2" in story.check()  # offset 4 committed, inputs 2 and 3 never output


def test_c2_outputs_visible_without_their_offset() -> None:
    story = GroupStory()
    story.txn("c0.1.1", range(4))
    story.committed_offset = 2
    story.quiescent = False
    assert story.check() == {"C2"}


def test_c3_honesty_and_i13_after_the_drain() -> None:
    story = GroupStory()
    story.txn("c0.1.1", range(2), visible=False)  # reported committed, invisible
    story.txn("c0.1.2", range(2, 4), outcome="failed")  # reported failed, visible
    story.pending = ["0"]
    found = story.check()
    assert {"C3", "I13"} <= found


def test_i14_lost_group_output_write() -> None:
    story = GroupStory()
    story.txn("c0.1.1", range(4))
    story.batches.clear()
    assert "I14" in story.check()


def _group_seed(lowest: int) -> int:
    """The first seed from ``lowest`` whose profile runs consumer-group workers."""
    for seed in range(lowest, lowest + 50):
        if Simulation(seed, 10).profile.group_workers:
            return seed
    raise AssertionError("no seed with consumer-group workers")


@pytest.mark.parametrize("lowest", [1, 40])
def test_group_workers_commit_every_input_exactly_once(lowest: int) -> None:
    seed = _group_seed(lowest)
    result = Simulation(seed, 1200).run()
    assert result.ok, f"seed {seed}: " + "; ".join(v.describe() for v in result.violations)
    entries = result.history.entries
    finals = {e.f: e for e in entries if e.process == FINAL}
    offsets = finals["group-offsets"].value["offsets"]
    inputs = finals["input"].value["partitions"]
    for partition, records in inputs.items():
        assert int(offsets[partition]) == (records[-1][0] + 1 if records else 0), seed
    visible = sum(len(r) for r in finals["group-output"].value["committed"].values())
    assert visible == sum(len(r) for r in inputs.values()), seed
    txn_ops = {e.f for e in entries if e.type == "ok" and e.process.startswith("c")}
    assert {"txn-offsets", "add-offsets", "offset-fetch", "group-txn"} <= txn_ops, seed
