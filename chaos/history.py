"""The history of a simulation run: every client operation and every observation, in order.

Jepsen's model: an operation is *invoked* by a process and *completes* as

* ``ok``   -- it happened (the client saw success);
* ``fail`` -- it certainly did not happen (the client saw a definite error, and no earlier
  attempt of it may still take effect);
* ``info`` -- indeterminate: it may or may not have happened (no answer, or an error after
  an attempt whose answer was lost).

Besides operations, the history holds *events*: things the simulator observed on the broker
side (an acquisition, a pending acknowledgement staged, a marker applied, a coordinator state
change) and the faults it injected (crashes, pauses, partitions).  The checker
(``chaos.checker``) reads nothing but this history.

Each entry is a flat JSON object; ``to_jsonl`` writes one per line with sorted keys and no
spaces, so the same seed gives a byte-identical history.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

EntryType = Literal["invoke", "ok", "fail", "info", "event"]
COMPLETIONS: frozenset[str] = frozenset({"ok", "fail", "info"})

# The process that records broker-side observations and the simulator's own faults.
BROKER = "broker"
NEMESIS = "nemesis"
FINAL = "final"
# A read_committed consumer polling the output topic while the run goes on (an oracle reading
# the broker core directly, as the final reads do).
READER = "reader"


@dataclass(frozen=True, slots=True)
class Entry:
    """One line of the history."""

    index: int
    time: int  # virtual ms since the start of the run
    process: str
    type: EntryType
    f: str  # the operation or event name
    value: Any  # JSON-compatible
    op: int  # operation id: an invoke and its completion share it; -1 for events

    def to_json(self) -> dict[str, Any]:
        return {
            "i": self.index,
            "t": self.time,
            "p": self.process,
            "type": self.type,
            "f": self.f,
            "v": self.value,
            "op": self.op,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Entry:
        return cls(
            int(obj["i"]),
            int(obj["t"]),
            str(obj["p"]),
            obj["type"],
            str(obj["f"]),
            obj.get("v"),
            int(obj.get("op", -1)),
        )

    def describe(self) -> str:
        """A one-line human form: ``#12 t=340 w1 ok txn-ack {...}``."""
        value = json.dumps(self.value, sort_keys=True, separators=(",", ":"))
        if len(value) > 300:
            value = value[:297] + "..."
        return f"#{self.index} t={self.time} {self.process} {self.type} {self.f} {value}"


class History:
    """An append-only list of entries with operation ids."""

    def __init__(self, start_ms: int = 0) -> None:
        self.entries: list[Entry] = []
        self._start_ms = start_ms
        self._next_op = 0
        self._open: dict[int, Entry] = {}
        self.invocations = 0

    def _add(
        self, now_ms: int, process: str, type_: EntryType, f: str, value: Any, op: int
    ) -> Entry:
        entry = Entry(len(self.entries), now_ms - self._start_ms, process, type_, f, value, op)
        self.entries.append(entry)
        return entry

    def invoke(self, now_ms: int, process: str, f: str, value: Any) -> int:
        """Record an invocation; returns its operation id for ``complete``."""
        op = self._next_op
        self._next_op += 1
        self.invocations += 1
        self._open[op] = self._add(now_ms, process, "invoke", f, value, op)
        return op

    def complete(self, now_ms: int, op: int, type_: EntryType, value: Any) -> None:
        """Record the completion (ok / fail / info) of operation ``op`` (once)."""
        invoked = self._open.pop(op, None)
        if invoked is None:
            return
        self._add(now_ms, invoked.process, type_, invoked.f, value, op)

    def event(self, now_ms: int, process: str, f: str, value: Any) -> None:
        self._add(now_ms, process, "event", f, value, -1)

    def close_open(self, now_ms: int) -> None:
        """Operations still open at the end of the run complete as ``info`` (crashed clients)."""
        for op in sorted(self._open):
            self.complete(now_ms, op, "info", {"error": "unfinished"})

    # -- serialization ----------------------------------------------------------------------------

    def to_jsonl(self) -> str:
        return "".join(dumps(e.to_json()) + "\n" for e in self.entries)

    def write(self, path: Path) -> None:
        path.write_text(self.to_jsonl(), encoding="utf-8")

    @staticmethod
    def parse(text: str) -> list[Entry]:
        return [Entry.from_json(json.loads(line)) for line in text.splitlines() if line.strip()]

    @staticmethod
    def read(path: Path) -> list[Entry]:
        return History.parse(path.read_text(encoding="utf-8"))


def dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def pairs(entries: Iterable[Entry]) -> Iterator[tuple[Entry, Entry | None]]:
    """(invoke, completion or None) for every operation, in invocation order."""
    completions: dict[int, Entry] = {}
    invokes: list[Entry] = []
    for entry in entries:
        if entry.type == "invoke":
            invokes.append(entry)
        elif entry.type in COMPLETIONS:
            completions[entry.op] = entry
    for invoke in invokes:
        yield invoke, completions.get(invoke.op)


def parse_output(value: str) -> tuple[str, int, int, str] | None:
    """An output value ``i17@2:5|w1.3.7`` -> (input value, input partition, input offset, txn
    tag); None if it is not one."""
    try:
        head, tag = value.rsplit("|", 1)
        input_value, where = head.split("@", 1)
        partition, offset = where.split(":", 1)
        return input_value, int(partition), int(offset), tag
    except ValueError:
        return None
