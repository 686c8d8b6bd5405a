"""The invariant catalogue the checker judges histories by: names, the reference transaction
transition table, and how a violation is reported (``chaos.checker`` holds the checks)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from chaos.group_checker import NAMES as GROUP_NAMES
from chaos.history import Entry
from chaos.table_checker import NAMES as TABLE_NAMES

MAX_PER_INVARIANT = 20

NAMES: dict[str, str] = {
    "E0": "broker exception",
    "I1": "ack atomicity",
    "I2": "output atomicity (torn transaction)",
    "I3": "aborted read (G1a)",
    "I4": "exactly-once per input",
    "I5": "no lost input",
    "I6": "abort revert",
    "I7": "pending exclusivity",
    "I8": "delivery-count sanity",
    "I9": "epoch fencing",
    "I10": "legal coordinator transitions",
    "I11": "decision durability",
    "I13": "no hanging transaction (liveness)",
    "I14": "log sanity",
    "I15": "indeterminacy honesty",
    "I16": "recovery-tool soundness",
    **GROUP_NAMES,
    **TABLE_NAMES,
}


# The reference transition table (Kafka's TransactionState; Vanlightly's ValidPrevTxnStates plus
# the TV2 aborts of an idle id), kept here independently of the product's own table.
_PREVIOUS: dict[str, frozenset[str]] = {
    "Empty": frozenset({"Empty", "CompleteCommit", "CompleteAbort"}),
    "Ongoing": frozenset({"Ongoing", "Empty", "CompleteCommit", "CompleteAbort"}),
    "PrepareCommit": frozenset({"Ongoing"}),
    "PrepareAbort": frozenset(
        {"Ongoing", "PrepareEpochFence", "Empty", "CompleteCommit", "CompleteAbort"}
    ),
    "CompleteCommit": frozenset({"PrepareCommit"}),
    "CompleteAbort": frozenset({"PrepareAbort"}),
    "Dead": frozenset({"Empty", "CompleteAbort", "CompleteCommit"}),
    "PrepareEpochFence": frozenset({"Ongoing"}),
}
_NEXT: dict[str, set[str]] = defaultdict(set)
for _target, _previous in _PREVIOUS.items():
    for _prev in _previous:
        _NEXT[_prev].add(_target)
IDLE = frozenset({"Empty", "CompleteCommit", "CompleteAbort"})
TERMINAL_RECORD_STATES = frozenset({"ACKNOWLEDGED", "ARCHIVED"})
ACCEPT = 1


def legal_steps(source: str, target: str, max_steps: int = 2) -> bool:
    """Whether ``target`` is reachable from ``source`` in 1..max_steps table transitions."""
    frontier = {source}
    for _ in range(max_steps):
        frontier = {n for s in frontier for n in _NEXT.get(s, ())}
        if target in frontier:
            return True
    return source == target and target in _NEXT.get(source, set())


@dataclass(frozen=True, slots=True)
class Violation:
    invariant: str
    message: str
    entries: tuple[int, ...] = ()
    seed: int | None = None

    @property
    def name(self) -> str:
        return NAMES.get(self.invariant, self.invariant)

    def to_json(self) -> dict[str, Any]:
        return {
            "invariant": self.invariant,
            "name": self.name,
            "message": self.message,
            "entries": list(self.entries),
            "seed": self.seed,
        }

    def describe(self, entries: Sequence[Entry] | None = None) -> str:
        lines = [f"{self.invariant} {self.name}: {self.message}"]
        if entries is not None:
            for index in self.entries[:12]:
                if 0 <= index < len(entries):
                    lines.append("    " + entries[index].describe())
            if len(self.entries) > 12:
                lines.append(f"    ... and {len(self.entries) - 12} more entries")
        return "\n".join(lines)


class Report:
    """The violations of one history, at most ``MAX_PER_INVARIANT`` shown per invariant."""

    def __init__(self, seed: int | None) -> None:
        self.seed = seed
        self.violations: list[Violation] = []
        self.counts: dict[str, int] = defaultdict(int)

    def add(self, invariant: str, message: str, entries: Iterable[int] = ()) -> None:
        self.counts[invariant] += 1
        if self.counts[invariant] <= MAX_PER_INVARIANT:
            unique = tuple(sorted(set(entries)))
            self.violations.append(Violation(invariant, message, unique, self.seed))

    def finish(self) -> list[Violation]:
        for invariant, count in sorted(self.counts.items()):
            if count > MAX_PER_INVARIANT:
                self.violations.append(
                    Violation(
                        invariant,
                        f"{count - MAX_PER_INVARIANT} more violations of this invariant not shown",
                        (),
                        self.seed,
                    )
                )
        return self.violations
